"""The warp-tiled kernel's epilogue: the thread tile's accumulators into C.

:func:`emit_epilogue` writes the source lines that :mod:`microkernel.gpu.simt` emits
after the k loop, through the generator's ``_Src`` emitter ``s`` and its
unsigned-constant namer ``u``. The target X is C (``alpha*acc + beta*C``), or the
split's rows of the workspace W (raw partial sums) in a split-K launch. With
``beta == 0`` C is only stored (BLAS: C is not read, NaN in C does not propagate).

With ``beta != 0`` and float4 stores (the loops form), a tile listed in
:data:`C_LOADS_IN_FLIGHT` loads C before it stores, a chunk of rows at a time: a load
after a store to the same array waits for that store (neither NVVM nor ptxas moves it
above the store's guard), so loading and storing one float4 group at a time (the
other tiles) waits a memory latency per group, 32 of them for the 8 x 16 thread tile.
"""
from __future__ import annotations

from .tiles import GpuTile

__all__ = ["C_LOADS_IN_FLIGHT", "emit_epilogue", "rows_per_chunk"]

#: Float4 loads of C a thread issues together when beta != 0, by (tm, tn, bm, bn): C
#: is loaded for as many rows of the thread tile as this allows, then stored. Other
#: tiles load and store one float4 group at a time. Raced on the H200 against that
#: per-group form (bench/gpu_epilogue_ab.py, 9 interleaved rounds, unsplit at 2048^3
#: and 3072x1500x1024, beta = 0 / 1; bench/results/h200/epilogue_ab.json), time per
#: call of the per-group form over the chunked one: 8x8 in 64x128 blocks with 8 loads
#: 1.011-1.055 (beta = 1: 1.048 / 1.055), in 64x64 blocks 1.018-1.144; 8x4 in 64x64
#: blocks with 4 loads 1.000-1.020. Left per group: 8x8 in 128x128 blocks (its 128
#: registers cap), 0.937-0.973 chunked with 4 or 8 loads at either beta; 8x16 in
#: 128x256 blocks, 8 loads 1.019 / 1.046 at beta = 1 but 0.987 / 0.997 at beta = 0.
C_LOADS_IN_FLIGHT = {(8, 8, 64, 128): 8, (8, 8, 64, 64): 8, (8, 4, 64, 64): 4}


def rows_per_chunk(t: GpuTile) -> int:
    """Rows of the thread tile whose C is loaded together when beta != 0: the largest
    divisor of TM with at most ``C_LOADS_IN_FLIGHT[tile]`` float4 groups; 0 for a tile
    not listed there (one float4 group at a time) or one whose row alone has more."""
    most = C_LOADS_IN_FLIGHT.get((t.tm, t.tn, t.bm, t.bn), 0)
    return max([d for d in range(1, t.tm + 1) if t.tm % d == 0
                and d * (t.tn // 4) <= most] or [0])


def emit_epilogue(s, u, t: GpuTile, *, vec_out: bool, loops: bool, partials: bool,
                  rows, cols) -> None:
    """Emit the epilogue of :func:`microkernel.gpu.simt.kernel_source` for tile ``t``:
    ``vec_out`` float4 stores, ``loops`` the accumulators as ``acc[i, j]`` (else
    scalars ``acc{i}_{j}``), ``partials`` the partials kernel (always into W), ``rows``
    and ``cols`` the thread tile's offsets in the warp tile (``simt._offsets``)."""
    if partials:                             # raw partial sums into W[z*M + r, :]
        s("X = W")
        s("rbase = z * M")
        s("al = F1")
        s("be = F0")
    else:
        s("X = C")
        s(f"rbase = {u(0)} * M")
        s("al = alpha")
        s("be = beta")
        s("if split:                               # raw partial sums into W[z*M + r, :]")
        with s.block():
            s("X = W")
            s("rbase = z * M")
            s("al = F1")
            s("be = F0")
    uTM, uTN, uGM, uGN = u(t.tm), u(t.tn), u(t.gm), u(t.gn)
    uSM, uSN = u(t.lm * t.gm), u(t.ln * t.gn)       # stride between a lane's groups
    col = f"(j // {uGN}) * {uSN} + j % {uGN}"

    def put4(v):
        """Four accumulators v into X (C, or the split's rows of W) at (r, c..c+3)."""
        s("e = uint32((rbase + r) * N + c)")
        s("if be == 0:                 # C is not read")
        with s.block():
            s("st4(X, e, " + ", ".join(f"al * {x}" for x in v) + ")")
        s("else:")
        with s.block():
            s("o0, o1, o2, o3 = ld4(X, e)")
            s("st4(X, e, " + ", ".join(f"al * {x} + be * o{d}" for d, x in enumerate(v)) + ")")

    def put1(x):
        """One accumulator x into X at (r, c)."""
        s("if be == 0:")
        with s.block():
            s(f"X[rbase + r, c] = al * {x}")
        s("else:")
        with s.block():
            s(f"X[rbase + r, c] = al * {x} + be * X[rbase + r, c]")

    def at_col(cexpr: str, put, v):
        """The store ``put(v)`` at C's column ``c = col0 + bn + cexpr`` when inside C."""
        s(f"c = col0 + bn + {cexpr}")
        s("if c < N:")
        with s.block():
            put(v)

    def tile_rows(first: str, count: int, body):
        """``body()`` at rows i = first + h (h < count) of the thread tile that are
        inside C, at each of their float4 groups j inside C (e: the index in X)."""
        s(f"for h in range({u(count)}):")
        with s.block():
            s(f"i = {first} + h")
            s(f"r = row0 + am + (i // {uGM}) * {uSM} + i % {uGM}")
            s("if r < M:")
            with s.block():
                s(f"for g in range({u(t.tn // 4)}):")
                with s.block():
                    s(f"j = g * {u(4)}")
                    s(f"c = col0 + bn + {col}")
                    s("if c < N:")
                    with s.block():
                        s("e = uint32((rbase + r) * N + c)")
                        body()

    rc = 0 if partials else rows_per_chunk(t)          # partials: C is not read
    def each_row(body):
        """``body()`` at each row i of the thread tile inside C (r: its row of C)."""
        s(f"for i in range({uTM}):")
        with s.block():
            s(f"r = row0 + am + (i // {uGM}) * {uSM} + i % {uGM}")
            s("if r < M:")
            with s.block():
                body()

    def groups_of_row():
        s(f"for g in range({u(t.tn // 4)}):")
        with s.block():
            s(f"j = g * {u(4)}")
            at_col(col, put4, [f"acc[i, j + {u(d)}]" if d else "acc[i, j]" for d in range(4)])

    def elements_of_row():
        s(f"for j in range({uTN}):")
        with s.block():
            at_col(col, put1, "acc[i, j]")

    if loops and vec_out and not rc:         # one float4 group at a time
        each_row(groups_of_row)
    elif loops and vec_out:
        acc4 = [f"acc[i, j + {u(d)}]" if d else "acc[i, j]" for d in range(4)]
        s("if be == 0:                 # C is not read")
        with s.block():
            tile_rows(u(0), t.tm, lambda: s("st4(X, e, " + ", ".join(
                f"al * {x}" for x in acc4) + ")"))
        s("else:                       # C of rc rows loaded, then stored")
        with s.block():
            def load():
                s("o0, o1, o2, o3 = ld4(X, e)")
                for d in range(4):
                    s(f"cx[h, j + {u(d)}] = o{d}")
            s(f"cx = cuda.local.array(({rc}, {t.tn}), float32)")
            s(f"for i0 in range({u(0)}, {uTM}, {u(rc)}):")
            with s.block():
                tile_rows("i0", rc, load)
                tile_rows("i0", rc, lambda: s("st4(X, e, " + ", ".join(
                    f"al * {x} + be * cx[h, j + {u(d)}]" for d, x in enumerate(acc4)) + ")"))
    elif loops:
        each_row(elements_of_row)
    else:
        for i in range(t.tm):
            s(f"r = row0 + am + {u(rows[i])}")
            s("if r < M:")
            with s.block():
                if vec_out:
                    for j0 in range(0, t.tn, 4):
                        at_col(u(cols[j0]), put4, [f"acc{i}_{j0 + d}" for d in range(4)])
                else:
                    for j in range(t.tn):
                        at_col(u(cols[j]), put1, f"acc{i}_{j}")
