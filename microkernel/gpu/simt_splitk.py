"""The warp-tiled kernel's split-K reductions: two ways to form C from the partial sums.

* :func:`last_block_reduces`: source lines that :mod:`microkernel.gpu.simt` emits at
  the end of the general kernel (through the generator's ``_Src`` emitter ``s`` and
  its unsigned-constant namer ``u``): the tile's last block adds the partials, one
  launch.
* :func:`reduce_source` / :func:`build_reduce`: a kernel of its own, launched after
  the *partials* kernel (``simt.kernel_source(..., partials=True)``); two launches.

Both add ``W_0 + W_1 + ... + W_{S-1}`` in that order and then apply alpha and beta,
so they give bit-identical C. :func:`microkernel.gpu.launch.plan_launch` picks one
per shape (:data:`REDUCTIONS`).
"""
from __future__ import annotations

from .tiles import GpuTile

__all__ = ["REDUCTIONS", "REDUCE_THREADS", "REDUCE_SIGNATURE", "reduce_grid",
           "reduce_source", "build_reduce", "last_block_reduces"]

#: How a split-K launch forms C: "last block" (the general kernel, one launch) or
#: "kernel" (the partials kernel, then the reduction kernel: two launches).
REDUCTIONS = ("last block", "kernel")

#: Threads per block of the reduction kernel.
REDUCE_THREADS = 256

#: Launch signature of the reduction kernel: W ((S*M) x N), C (M x N), alpha, beta.
REDUCE_SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32, float32)"


def reduce_grid(m: int, n: int, vec: bool) -> int:
    """Blocks of the reduction kernel for an m x n C (one float4, or one element, a
    thread; ``vec`` needs N % 4 == 0 and 16-byte aligned W and C)."""
    per = 4 if vec else 1
    return max(1, -(-(m * n // per) // REDUCE_THREADS))


def reduce_source(vec: bool) -> tuple[str, str]:
    """(name, Python source) of the split-K reduction kernel ``(W, C, alpha, beta)``:
    ``C = alpha*(W_0 + W_1 + ... + W_{S-1}) + beta*C`` in that order, W_z the rows
    z*M .. z*M+M-1 of W ((S*M) x N float32, C-contiguous; C (M x N) float32,
    C-contiguous), one float4 (``vec``) or one element a thread; beta == 0 does not
    read C. The order is the last-block reduction's, so the two give bit-identical C."""
    g = 4 if vec else 1
    name = "splitk_reduce" + ("" if vec else "_scalar")
    L = [f"def {name}(W, C, alpha, beta):",
         "    M = uint32(C.shape[0])",
         "    N = uint32(C.shape[1])",
         "    S = uint32(W.shape[0]) // M",
         "    MN = M * N",
         f"    e = (uint32(cuda.blockIdx.x) * uint32({REDUCE_THREADS}) + "
         f"uint32(cuda.threadIdx.x)) * uint32({g})",
         "    if e < MN:"]
    if vec:
        L += ["        y0, y1, y2, y3 = ldg4(W, e)",
              "        z = uint32(1)",
              "        while z < S:",
              "            f0, f1, f2, f3 = ldg4(W, z * MN + e)",
              "            y0 += f0", "            y1 += f1", "            y2 += f2",
              "            y3 += f3",
              "            z += uint32(1)",
              "        if beta == 0:",
              "            st4(C, e, alpha * y0, alpha * y1, alpha * y2, alpha * y3)",
              "        else:",
              "            o0, o1, o2, o3 = ld4(C, e)",
              "            st4(C, e, alpha * y0 + beta * o0, alpha * y1 + beta * o1, "
              "alpha * y2 + beta * o2, alpha * y3 + beta * o3)"]
    else:
        L += ["        r = e // N",
              "        c = e % N",
              "        y = W[r, c]",
              "        z = uint32(1)",
              "        while z < S:",
              "            y += W[z * M + r, c]",
              "            z += uint32(1)",
              "        if beta == 0:",
              "            C[r, c] = alpha * y",
              "        else:",
              "            C[r, c] = alpha * y + beta * C[r, c]"]
    return name, "\n".join(L) + "\n"


_REDUCERS: dict = {}


def build_reduce(vec: bool, sim: bool, cuda):
    """The numba dispatcher of :func:`reduce_source` (cached per ``vec`` and ``sim``)."""
    key = (vec, sim)
    if key not in _REDUCERS:
        from .simt import _compile_source, _namespace
        name, src = reduce_source(vec)
        fn = _compile_source(src, name, _namespace(src, sim, cuda))
        fn.__microkernel_source__ = src
        _REDUCERS[key] = cuda.jit(fn)
    return _REDUCERS[key]


def last_block_reduces(s, u, t: GpuTile, vec: bool) -> None:
    """The split-K epilogue's second half: after writing its raw partials into W, a
    block counts itself in (``T[tile] += 1``, an atomic add after a
    ``threadfence``); the tile's last block (the S-th to arrive) forms
    ``C = alpha*(W_0 + W_1 + ... + W_{S-1}) + beta*C`` over the tile in that fixed
    order and resets the count for the next call (CUDA programming guide, "Memory
    Fence Functions": the threadFenceReduction pattern). One launch instead of a
    kernel and a reduction kernel; bit-identical run to run. The vec variant adds
    float4s, four partials' loads in flight per step."""
    BM, BN, NT = t.bm, t.bn, t.threads
    g = 4 if vec else 1                         # elements per thread and step
    per_row = BN // g
    s("if split:                               # the tile's last block adds W_0..W_{S-1}")
    with s.block():
        s("cuda.threadfence()                  # this block's partials before its count")
        s("cuda.syncthreads()")
        s(f"if tid == {u(0)}:")
        with s.block():
            s("tix = uint32(cuda.blockIdx.y) * uint32(cuda.gridDim.x) + uint32(cuda.blockIdx.x)")
            s(f"last[0] = cuda.atomic.add(T, tix, {u(1)})")
        s("cuda.syncthreads()")
        s("nz = uint32(cuda.gridDim.z)")
        s(f"if last[0] == nz - {u(1)}:")
        with s.block():
            s("cuda.threadfence()")
            s(f"for q in range(tid, {u(BM * per_row)}, {u(NT)}):")
            with s.block():
                s(f"rr = row0 + q // {u(per_row)}")
                s(f"cc = col0 + (q % {u(per_row)}) * {u(g)}")
                s("if rr < M and cc < N:")
                with s.block():
                    lanes = range(g)
                    if vec:
                        s("e = uint32(rr * N + cc)")
                        s("MN = uint32(M * N)")
                        s("y0, y1, y2, y3 = ld4(W, e)")
                    else:
                        s("y0 = W[rr, cc]")

                    def load(name, z):
                        if vec:
                            s(f"{name}0, {name}1, {name}2, {name}3 = "
                              f"ld4(W, uint32(({z}) * MN + e))")
                        else:
                            s(f"{name}0 = W[({z}) * M + rr, cc]")

                    s(f"zz = {u(1)}")
                    s(f"while zz + {u(3)} < nz:            # four partials' loads in flight")
                    with s.block():
                        for h, w in enumerate("fghi"):
                            load(w, f"zz + {u(h)}" if h else "zz")
                        for w in "fghi":                # in split order: W_z, W_z+1, ...
                            for d in lanes:
                                s(f"y{d} += {w}{d}")
                        s(f"zz += {u(4)}")
                    s("while zz < nz:")
                    with s.block():
                        load("f", "zz")
                        for d in lanes:
                            s(f"y{d} += f{d}")
                        s(f"zz += {u(1)}")
                    s("if beta == 0:                   # C is not read")
                    with s.block():
                        if vec:
                            s("st4(C, e, " + ", ".join(f"alpha * y{d}" for d in lanes) + ")")
                        else:
                            s("C[rr, cc] = alpha * y0")
                    s("else:")
                    with s.block():
                        if vec:
                            s("o0, o1, o2, o3 = ld4(C, e)")
                            s("st4(C, e, " + ", ".join(f"alpha * y{d} + beta * o{d}"
                                                       for d in lanes) + ")")
                        else:
                            s("C[rr, cc] = alpha * y0 + beta * C[rr, cc]")
            s(f"if tid == {u(0)}:")
            with s.block():
                s(f"T[tix] = {u(0)}                # zero again, as the next call expects")
