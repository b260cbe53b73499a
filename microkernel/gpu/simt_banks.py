"""The warp-tiled SIMT kernel's shared-memory accesses, priced by the bank model.

From the same index formulas as the generated source (:class:`SharedLayout`,
:meth:`GpuTile.thread_rows`), for every warp of the block: the transposing A
stores, the float4 B stores and the A and B fragment loads. The model: CUDA C
Programming Guide, "Shared Memory" (compute capability 5.x and later): 32 banks of
4 bytes; lanes reading the same word share it; a 64- or 128-bit access is served
128 bytes per wavefront.
"""
from __future__ import annotations

from . import banks
from .tiles import WARP_SIZE, GpuTile

__all__ = ["bank_report", "wavefronts"]


def wavefronts(word_addrs: list[int], width: int) -> tuple[int, int]:
    """(wavefronts, ideal) of one warp-wide shared access of ``width`` 4-byte words per
    lane (1, 2 or 4) at the given word addresses, lanes in order (a shorter list: the
    last lanes inactive), by the project's one bank model (:mod:`microkernel.gpu.banks`:
    phases of 32, 16 or 8 lanes, distinct words per bank per phase)."""
    kind = {1: "ld32", 2: "ld64", 4: "ld128"}[width]
    addrs = [4 * a for a in word_addrs][:32]
    addrs += [None] * (32 - len(addrs))
    costs = [banks._phase_cost(ph, 4 * width) for ph in banks.phases(kind, addrs) if ph]
    return sum(c[0] for c in costs), sum(c[1] for c in costs)


def bank_report(tile: GpuTile) -> dict:
    """Shared-memory wavefronts of every warp-wide access pattern of the warp-tiled
    kernel, against the ideal (distinct 128-byte lines), for every warp of the block:
    ``{"a_store": (worst, ideal), "b_store": ..., "a_frag": ..., "b_frag": ...,
    "conflict_free": bool}``. Computed from the same index formulas as the
    generated source (:class:`SharedLayout`, :meth:`GpuTile.thread_rows`)."""
    t = tile
    lay = t.shared_layout
    NT, BK, QPR, BN4 = t.threads, t.bk, t.bk // 4, t.bn // 4
    A4, B4 = t.bm * BK // 4, BK * t.bn // 4
    out = {}

    def worst(patterns):
        w = i = 0
        for addrs, width in patterns:
            if addrs:
                a, b = wavefronts(addrs, width)
                w, i = max(w, a), max(i, b)
        return w, i

    pats = []
    rowa = bool(lay.a_rows)              # k-contiguous A: one 16-byte store per float4
    for p in range(-(-A4 // NT)):
        for w0 in range(0, NT, WARP_SIZE):
            for c in range(1 if rowa else 4):
                addrs = []
                for lane in range(WARP_SIZE):
                    f = w0 + lane + p * NT
                    if f < A4:
                        r, q = divmod(f, QPR)
                        addrs.append(lay.a_index(4 * q + c, r))
                pats.append((addrs, 4 if rowa else 1))
    out["a_store"] = worst(pats)
    pats = []
    for p in range(-(-B4 // NT)):
        for w0 in range(0, NT, WARP_SIZE):
            addrs = []
            for lane in range(WARP_SIZE):
                f = w0 + lane + p * NT
                if f < B4:
                    k, c4 = divmod(f, BN4)
                    addrs.append(lay.b_index(k, 4 * c4))
            pats.append((addrs, 4))
    out["b_store"] = worst(pats)
    pa, pb = [], []
    for w0 in range(0, NT, WARP_SIZE):
        lanes = range(w0, w0 + WARP_SIZE)
        if rowa:                         # a float4 of 4 k per row of the thread tile
            for kq in range(QPR):
                for i in range(t.tm):
                    pa.append(([lay.a_index(4 * kq, t.thread_rows(tid)[i]) for tid in lanes], 4))
        for k in range(BK):
            for i in range(0, t.tm, t.gm):
                if rowa:                 # (read 4 k at a time above)
                    break
                width = min(t.gm, 4) if t.gm in (1, 2, 4) else 1
                for i0 in range(i, i + t.gm, width):
                    pa.append(([lay.a_index(k, t.thread_rows(tid)[i0]) for tid in lanes], width))
            for j in range(0, t.tn, t.gn):
                width = min(t.gn, 4) if t.gn in (1, 2, 4) else 1
                for j0 in range(j, j + t.gn, width):
                    pb.append(([lay.b_index(k, t.thread_cols(tid)[j0]) for tid in lanes], width))
    out["a_frag"] = worst(pa)
    out["b_frag"] = worst(pb)
    out["conflict_free"] = all(out[k][0] <= out[k][1] for k in
                               ("a_store", "b_store", "a_frag", "b_frag"))
    return out
