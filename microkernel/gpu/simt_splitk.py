"""The warp-tiled kernel's split-K reduction (:mod:`microkernel.gpu.simt` emits it at the
end of every kernel it generates): source lines, written through the generator's
``_Src`` emitter ``s`` and its unsigned-constant namer ``u``."""
from __future__ import annotations

from .tiles import GpuTile

__all__ = ["last_block_reduces"]


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
