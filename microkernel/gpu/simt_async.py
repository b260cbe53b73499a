"""The main loop of the warp-tiled kernel with asynchronous copies (``copy="async"``).

Emitted into :func:`microkernel.gpu.simt.kernel_source` in place of the register-staged
loop. With S = ``tile.stages`` shared-memory stages, S - 1 k blocks are in flight
(the multistage pipeline of CUTLASS's sm80 GEMMs, ``cp.async`` + ``wait_group``;
PTX ISA 9.7.9.25.3, "Data Movement and Conversion Instructions: cp.async"):

* prologue: k blocks 0 .. S-2 are issued into stages 0 .. S-2, one commit group each;
* step kt: wait until block kt's group is complete (``cp.async.wait_group S-2``), a
  barrier (every thread's copies of block kt are visible, and every thread is done with
  block kt-1, whose stage is the one refilled next), issue block kt+S-1 into that stage
  and commit, then the FMAs of block kt from its stage.

A goes into its transposed, skewed layout (:class:`microkernel.gpu.tiles.SharedLayout`)
by 4-byte copies, one per element (a 16-byte copy cannot transpose); B by 16-byte
copies in the float4 variant, 4-byte ones in the scalar variant. A copy outside A, B
or the split's k range reads nothing and writes zeros (src-size 0), as the register
loop's guards zero-fill. The copies are issued only for k blocks < nk: with
alpha == 0 or K == 0 neither A nor B is read.
"""
from __future__ import annotations

import contextlib

__all__ = ["main_loop"]


def main_loop(s, u, t, lay, compute, npass_a: int, npass_b: int, total_a: int,
              total_b: int, vec: bool) -> None:
    """Emit the prologue and the k loop into the source builder ``s`` (``u`` makes
    uint32 constants). ``compute()`` emits the FMAs of the stage at offsets ``oa``,
    ``ob``; the staging coordinates (``ar/aq/va/sva/sa``, ``br/bc/vb/svb/sb`` per pass)
    are in scope. Sets nothing the epilogue reads."""
    S, NT, BK = t.stages, t.threads, t.bk
    for p in range(npass_a):            # flat index of the pass's first element, k0 = 0
        s(f"ha{p} = uint32((row0 + ar{p}) * K + aq{p})")
    for p in range(npass_b):
        s(f"hb{p} = uint32(br{p} * N + col0 + bc{p})")

    def guarded(x: str, p: int, n: int, total: int):
        """The last pass, which not every thread has, under its guard."""
        if total % NT and p == n - 1:
            s(f"if sv{x}{p}:")
            return s.block()
        return contextlib.nullcontext()

    def copy4(dst: str, src: str, ok: str, idx: str):
        s(f"cp_async4({dst}, {src}, cuda.selp({ok}, uint32({idx}), {u(0)}), "
          f"cuda.selp({ok}, {u(4)}, {u(0)}))")

    def issue(sa_off: str, sb_off: str):
        """Copies of the k block at k0 into the stage at sa_off (A), sb_off (B)."""
        s("k0N = uint32(k0 * N)")
        for p in range(npass_a):
            with guarded("a", p, npass_a, total_a):
                for c in range(4):
                    ok = f"va{p} & (k0 + aq{p} + {u(c)} < ke)"
                    copy4(f"As, {sa_off} + sa{p} + {u(c * lay.a_row)}", "A", ok,
                          f"ha{p} + k0 + {u(c)}")
        for p in range(npass_b):
            with guarded("b", p, npass_b, total_b):
                if vec:
                    ok = f"vb{p} & (k0 + br{p} < ke)"
                    s(f"cp_async16(Bs, {sb_off} + sb{p}, B, cuda.selp({ok}, uint32(hb{p} + k0N), "
                      f"{u(0)}), cuda.selp({ok}, {u(16)}, {u(0)}))")
                else:
                    for c in range(4):
                        ok = f"vb{p} & (k0 + br{p} < ke) & (col0 + bc{p} + {u(c)} < N)"
                        copy4(f"Bs, {sb_off} + sb{p} + {u(c)}", "B", ok,
                              f"hb{p} + k0N + {u(c)}")

    for st in range(S - 1):             # prologue: blocks 0 .. S-2
        s(f"if {u(st)} < nk:")
        with s.block():
            issue(u(st * lay.a_stage), u(st * lay.b_stage))
        s("cp_commit()")
        s(f"k0 += {u(BK)}")
    s(f"cs = {u(0)}                          # the stage of block kt")
    s(f"ns = {u(S - 1)}                          # the stage block kt+S-1 goes into")
    s(f"kn = {u(S - 1)}")
    s("for kt in range(nk):")
    with s.block():
        s(f"cp_wait{S - 2}()                      # block kt's copies (this thread's)")
        s("cuda.syncthreads()                 # ... everyone's; block kt-1 done")
        s("if kn < nk:")
        with s.block():
            issue(f"ns * {u(lay.a_stage)}", f"ns * {u(lay.b_stage)}")
        s("cp_commit()")
        s(f"k0 += {u(BK)}")
        s(f"kn += {u(1)}")
        s(f"oa = cs * {u(lay.a_stage)}")
        s(f"ob = cs * {u(lay.b_stage)}")
        compute()
        for x in ("cs", "ns"):
            s(f"{x} += {u(1)}")
            s(f"if {x} == {u(S)}:")
            with s.block():
                s(f"{x} = {u(0)}")
    s("cp_wait0()                             # nothing in flight past the loop")
