"""The main loop of the warp-tiled kernel with asynchronous copies (``copy="async"``
and ``copy="async16"``), and the FMAs of the latter's k-contiguous A.

Emitted into :func:`microkernel.gpu.simt.kernel_source` in place of the register-staged
loop. With S = ``tile.stages`` shared-memory stages, S - 1 k blocks are in flight
(the multistage pipeline of CUTLASS's sm80 GEMMs, ``cp.async`` + ``wait_group``;
PTX ISA 9.7.9.25.3, "Data Movement and Conversion Instructions: cp.async"):

* prologue: k blocks 0 .. S-2 are issued into stages 0 .. S-2, one commit group each;
* step kt: wait until block kt's group is complete (``cp.async.wait_group S-2``), a
  barrier (every thread's copies of block kt are visible, and every thread is done with
  block kt-1, whose stage is the one refilled next), issue block kt+S-1 into that stage
  and commit, then the FMAs of block kt from its stage.

With ``copy="async"`` A goes into its transposed, skewed layout
(:class:`microkernel.gpu.tiles.SharedLayout`) by 4-byte copies, one per element (a
16-byte copy cannot transpose). With ``copy="async16"`` A stays k-contiguous (rows
interleaved by 4, ``SharedLayout.a_rows``) and goes in by 16-byte copies, as B does;
:func:`compute_rowa` then reads a thread's A values 4 k at a time (one float4 per row
for 4 k steps, the register cost of 3 more floats per row of the thread tile) instead
of one transposed float4 of 4 rows per k step. The scalar variant copies both by 4
bytes. A copy outside A, B
or the split's k range reads nothing and writes zeros (src-size 0), as the register
loop's guards zero-fill. The copies are issued only for k blocks < nk: with
alpha == 0 or K == 0 neither A nor B is read.
"""
from __future__ import annotations

import contextlib

__all__ = ["main_loop", "compute_rowa"]


def main_loop(s, u, t, lay, compute, npass_a: int, npass_b: int, total_a: int,
              total_b: int, vec: bool, exact: bool = False) -> None:
    """Emit the prologue and the k loop into the source builder ``s`` (``u`` makes
    uint32 constants). ``compute()`` emits the FMAs of the stage at offsets ``oa``,
    ``ob``; the staging coordinates (``ar/aq/va/sva/sa``, ``br/bc/vb/svb/sb`` per pass)
    are in scope. Sets nothing the epilogue reads.

    For ``copy="async16"`` with float4 access (``vec``) every copy is a 16-byte one to
    and from addresses formed once per thread (:func:`~microkernel.gpu.async_copy.
    smem_u32`, ``gmem_u64``) and advanced by byte offsets; ``exact`` (the tile divides
    the problem, so every copy of a k block below ``nk`` is inside A, B and the split)
    drops their guards."""
    S, NT, BK = t.stages, t.threads, t.bk
    rowa = bool(lay.a_rows)              # A k-contiguous: its 4 k are adjacent
    raw = rowa and vec
    for p in range(npass_a):            # flat index of the pass's first element, k0 = 0
        s(f"ha{p} = uint32((row0 + ar{p}) * K + aq{p})")
        if raw:
            s(f"xa{p} = smem_u32(As, sa{p})")
            s(f"ya{p} = gmem_u64(A, ha{p})")
    for p in range(npass_b):
        s(f"hb{p} = uint32(br{p} * N + col0 + bc{p})")
        if raw:
            s(f"xb{p} = smem_u32(Bs, sb{p})")
            s(f"yb{p} = gmem_u64(B, hb{p})")
    if raw and not exact:                # where a copy outside A or B points (reads 0 B)
        s(f"g0a = gmem_u64(A, {u(0)})")
        s(f"g0b = gmem_u64(B, {u(0)})")

    def copy_at(x: str, y: str, off_bytes: str, ok: str, g0: str):
        if exact:
            s(f"cp_async16_at({x} + {off_bytes}, {y}, {u(16)})")
        else:
            s(f"cp_async16_at({x} + {off_bytes}, cuda.selp({ok}, {y}, {g0}), "
              f"cuda.selp({ok}, {u(16)}, {u(0)}))")

    def guarded(x: str, p: int, n: int, total: int):
        """The last pass, which not every thread has, under its guard."""
        if total % NT and p == n - 1:
            s(f"if sv{x}{p}:")
            return s.block()
        return contextlib.nullcontext()

    def copy4(dst: str, src: str, ok: str, idx: str):
        s(f"cp_async4({dst}, {src}, cuda.selp({ok}, uint32({idx}), {u(0)}), "
          f"cuda.selp({ok}, {u(4)}, {u(0)}))")

    def issue(st: str):
        """Copies of the k block at k0 into stage ``st`` (an expression)."""
        sa_off, sb_off = f"{st} * {u(lay.a_stage)}", f"{st} * {u(lay.b_stage)}"
        s("k0N = uint32(k0 * N)")
        if raw:
            for p in range(npass_a):
                with guarded("a", p, npass_a, total_a):
                    copy_at(f"xa{p}", f"ya{p} + uint64(k0) * {u(4)}", f"{st} * {u(4 * lay.a_stage)}",
                            f"va{p} & (k0 + aq{p} < ke)", "g0a")
            for p in range(npass_b):
                with guarded("b", p, npass_b, total_b):
                    copy_at(f"xb{p}", f"yb{p} + uint64(k0N) * {u(4)}", f"{st} * {u(4 * lay.b_stage)}",
                            f"vb{p} & (k0 + br{p} < ke)", "g0b")
            return
        for p in range(npass_a):
            with guarded("a", p, npass_a, total_a):
                for c in range(4):
                    ok = f"va{p} & (k0 + aq{p} + {u(c)} < ke)"
                    copy4(f"As, {sa_off} + sa{p} + {u(c if rowa else c * lay.a_row)}", "A", ok,
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
            issue(u(st))
        s("cp_commit()")
        s(f"k0 += {u(BK)}")
    s(f"kn = {u(S - 1)}                          # the block the next copies are of")
    s(f"cs = {u(0)}                          # the stage of block kt")
    s(f"ns = {u(S - 1)}                          # the stage block kt+S-1 goes into")
    s("for kt in range(nk):")
    with s.block():
        s(f"cp_wait{S - 2}()                      # block kt's copies (this thread's)")
        s("cuda.syncthreads()                 # ... everyone's; block kt-1 done")
        s("if kn < nk:")
        with s.block():
            issue("ns")
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


def compute_rowa(s, u, t, lay, b_frag, fma_loops) -> None:
    """Emit the FMAs of the stage at offsets ``oa``, ``ob`` for a k-contiguous A
    (``SharedLayout.a_rows``): per 4 k, the thread's TM rows of A as one float4 each
    into ``r4`` (row ``am + (i // 4)*SM + i % 4`` lies in quarter ``i % 4`` at row
    ``am/4 + (i // 4)*(SM/4)``, :meth:`SharedLayout.a_index`), then
    for each of those k its TN values of B and the TM x TN FMAs, by the kernel's own
    emitters ``b_frag(k)`` and ``fma_loops(a)`` (:func:`microkernel.gpu.simt.
    kernel_source`). ``r4``, ``rb`` and ``acc`` are the kernel's local arrays; the loops
    are constant-trip (NVVM unrolls them and keeps the arrays in registers)."""
    sm = t.lm * t.gm                              # stride between a lane's row groups
    c1 = lay.a_quarter                            # i % 4: a quarter of the stage
    c2 = (sm // 4) * lay.a_row                    # i // 4: the next group of rows
    s(f"pa = uint32(oa + (am // {u(4)}) * {u(lay.a_row)})")
    s("pb = uint32(ob + bn)")
    for kq in range(t.bk // 4):
        s(f"for i in range({u(t.tm)}):")
        with s.block():
            s(f"q = pa + ((i % {u(4)}) * {u(c1)} + (i // {u(4)}) * {u(c2)} + {u(4 * kq)})")
            for c in range(4):
                s(f"r4[i, {c}] = As[q + {u(c)}]")
        for kk in range(4):
            b_frag(4 * kq + kk)
            fma_loops(f"r4[i, {kk}]")
