"""Which variant of the warp-tiled kernel a launch runs (:mod:`microkernel.gpu.simt`).

Three variants share one generator: "vec" (float4 global accesses, guarded), "scalar"
(element accesses, any shape or alignment) and "exact" (float4 without guards, for
problems the tile divides). This module holds the choice between them and the
measurements behind it; :mod:`microkernel.gpu.simt` re-exports every name.
"""
from __future__ import annotations

from .tiles import GpuTile

__all__ = ["VARIANTS", "EXACT_SLOWER", "variant_for", "has_exact"]

#: The variants of the warp-tiled kernel: float4 loads, element loads, and float4
#: loads without guards for problems the tile divides (:func:`variant_for`).
VARIANTS = ("vec", "scalar", "exact")


#: Tiles, by (tm, tn, bm, bn), whose exact variant ran slower than their vec variant on
#: the H200 (same tile, split and buffers, 7 interleaved rounds, 2026-12-01;
#: bench/results/h200/simt_exact.md): 8x16 in 128x256 blocks 3.4-6.0% slower at
#: 2048^3, 3072x1536x1024 and 4096^3 (1.6% faster at 1024^3) (ptxas 13.0 then issues its global loads about
#: 345 FFMAs before their shared stores, against 520-550 in the vec variant); 8x8 in
#: 64x128 0.986-1.024 of the vec time, a tie. The other three took 0.913-0.999 of the
#: vec time. These two launch the vec variant everywhere (keyed without BK: a BK 16
#: tile of the same shape, unmeasured, also stays on vec).
EXACT_SLOWER = frozenset({(8, 16, 128, 256), (8, 8, 64, 128)})


def variant_for(tile: GpuTile, m: int, n: int, k: int, vec: bool) -> str:
    """The variant a launch of ``tile`` on an m x n x k problem runs: "exact" when
    float4 loads are allowed (``vec``), the tile has the exact variant
    (:func:`has_exact`), divides the problem (m % bm == n % bn == k % bk == 0) and
    is not in :data:`EXACT_SLOWER` (register-staged tiles only: that list was
    measured on them); else "vec" or "scalar"."""
    if not vec:
        return "scalar"
    divides = m % tile.bm == 0 and n % tile.bn == 0 and k % tile.bk == 0
    faster = tile.copy != "regs" or (tile.tm, tile.tn, tile.bm, tile.bn) not in EXACT_SLOWER
    return "exact" if divides and faster and has_exact(tile) else "vec"


def has_exact(tile: GpuTile) -> bool:
    """Whether the tile has an exact variant: register staging in two stages (the
    exact loop double-buffers), or ``copy="async16"`` (its copies without guards,
    :func:`microkernel.gpu.simt_async.main_loop`); not ``copy="async"``."""
    return tile.warp_tiled and ((tile.copy == "regs" and tile.stages == 2)
                                or tile.copy == "async16")
