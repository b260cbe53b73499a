"""Shape-adaptive launch: the tile and split-K for (m, n, k), cached and launched fast.

**The planner** (:func:`plan_launch`). An H200 has 132 SMs; a 35 x 700 C in
128 x 128 block tiles is 6 blocks, and 126 SMs idle. For each candidate tile
(:data:`AUTO_TILES`, or the one asked for) and each split-K factor S = 1 ..
:data:`MAX_SPLIT`, the planner predicts the time from the occupancy and waves
model (:mod:`microkernel.gpu.occupancy`) and keeps the fastest:

* the grid is ``ceil(n/bn) x ceil(m/bm) x S`` blocks, each doing bm*bn*kslice
  FMAs with ``kslice = roundup(ceil(k/S), bk)``; ``blocks_per_sm`` comes from the
  occupancy of the tile's estimated registers and shared memory;
* the busiest SM runs ``ceil(blocks/132)`` blocks in rounds of ``blocks_per_sm``
  (:func:`~microkernel.gpu.occupancy.busiest_sm_rounds`); a round of r blocks of
  w warps each takes ``r*bm*bn*kslice / (F * min(1, r*w/SATURATION_WARPS))`` +
  :data:`ROUND_OVERHEAD_S` seconds, with F = 128 FMA/clock x
  :data:`CLOCK_HZ` x :data:`SM_EFFICIENCY` x :func:`tile_rate` per SM: fewer
  resident warps than :data:`SATURATION_WARPS` hide less latency;
* the kernel takes at least the time to read A and B and write C once from DRAM
  (:data:`DRAM_BYTES_PER_S`);
* split-K adds writing and re-reading S partial sums of C and the reduction's
  tail (:data:`REDUCE_LAUNCH_S`); kslice is at least :data:`MIN_KSLICE` and
  the workspace at most :data:`WORKSPACE_LIMIT` bytes; an unsplit kernel that
  reads C (beta != 0) waits :data:`C_LOAD_BATCH_S` per round for each batch of C
  loads in its epilogue (:func:`c_load_batches`).

Options within :data:`TIE` of the fastest are equivalent; among them one whose
grid has a block for every SM wins, then the smallest split, then the earliest
candidate (the largest tile). The constants are a model of the H200, not
measurements: ``bench/gpu_plan_scan.py`` times every tile x split beside the pick,
``bench/gpu_plan_fit.py`` fits the constants to those scans (:func:`choose`).

**The split-K reduction** is deterministic: block z of the split grid writes its
partial sums to its own slice of a workspace, and the slices are added in the order
0, 1, ..., S-1 (bit-identical run to run), either by the last of a tile's S blocks
to finish (an atomic count per tile: one launch) or by a reduction kernel launched
after the partials kernel (two launches; :mod:`microkernel.gpu.simt_splitk`). The
second took 2.3-13 us less GPU time on the H200, and the runner launches both kernels
as one CUDA graph, so a plan reduces by kernel when its predicted time is at least
:data:`TWO_LAUNCH_MIN_S` (0: every split plan; ``LaunchPlan.reduce``).

**Launch overhead.** :func:`runner` caches, per (shape, tile, split, variant), the
plan, the compiled kernel's driver handle, the workspace and the kernel parameters,
packed once in numba's ABI (``cuLaunchKernel``'s array of pointers to the values;
CUDA Driver API, "Execution Control"); a call writes the data pointers, alpha and
beta. The plan's launches are one CUDA graph
(:class:`~microkernel.gpu.launchers.GraphLauncher`; "Graph Management"), its nodes
updated only when those values change: 2.4-3.1 us of host time on the H200 against
5.4-10.9 us launched one by one (``bench/results/h200/race_partials.md``, docs/gpu-simt.md).
Without graphs: ``cuLaunchKernel`` per kernel, else ``cuda.core.launch``, and in the
simulator numba's dispatcher; :attr:`Runner.path` says which.
"""
from __future__ import annotations

import collections
import ctypes
import dataclasses
import threading

import numpy as np

from .launchers import (CoreLauncher, DriverLauncher, GraphLauncher, arr_params,
                        reduce_core, reduce_driver, split_buffers, vec_params)
from .occupancy import SM90, SmLimits, busiest_sm_rounds, occupancy
from .tiles import DEFAULT_TILE, GpuTile

__all__ = ["LaunchPlan", "plan_launch", "AUTO_TILES", "runner", "Runner", "clear_plans",
           "MAX_SPLIT", "MIN_KSLICE", "CLOCK_HZ", "SM_EFFICIENCY",
           "SATURATION_WARPS", "ROUND_OVERHEAD_S", "REDUCE_LAUNCH_S", "TWO_LAUNCH_MIN_S",
           "DRAM_BYTES_PER_S", "WORKSPACE_LIMIT", "TIE", "TILE_RATE", "tile_rate", "split_buffers",
           "C_LOAD_BATCH_S", "c_load_batches", "choose"]

#: SM clock of the model (H200 boost clock, nvidia-smi ``clocks.max.sm``: 1980 MHz).
CLOCK_HZ = 1.98e9
#: fp32 FMA lanes per SM (sm_90: 4 sub-partitions x 32).
FMA_PER_CLOCK = 128
#: Fraction of the FMA peak an SM sustains on the kernel's main loop.
SM_EFFICIENCY = 0.70
#: Resident warps per SM from which the main loop runs at that rate (one warp per
#: sub-partition: every issue slot must be an FMA). h200/simt_tiles.md: 1024^3 in
#: 64x128 blocks took 65.7 us unsplit, 61.6 us split 2; 6 fit it and TILE_RATE's scans.
SATURATION_WARPS = 6
#: Relative rate of the main loop per (tm, tn, bm, bn). With SM_EFFICIENCY,
#: ROUND_OVERHEAD_S and C_LOAD_BATCH_S fit (2026-12-04, docs/gpu-simt.md) by
#: bench/gpu_plan_fit.py to the H200 scans h200/plan_scan_*.json (every AUTO tile at
#: 1-6 splits on 15 shapes, beta 0 and 1) for the planner's pick: its measured time
#: over the fastest measured, geometric mean 1.018 -> 1.002, worst 1.228 -> 1.020.
#: Before: 0.75, 1.5 us, none, 1.06 / 1.0 / 0.91 / 0.74 / 0.8 (h200/simt_tiles.md).
TILE_RATE = {(8, 16, 128, 256): 1.05, (8, 8, 128, 128): 1.0, (8, 8, 64, 128): 0.95,
             (8, 8, 64, 64): 0.85, (8, 4, 64, 64): 0.8}
#: Per round of blocks on an SM: the prologue's global-load latency and the epilogue.
ROUND_OVERHEAD_S = 1.0e-6
#: Per round of an unsplit kernel that reads C (beta != 0), per batch of C loads a
#: thread waits for in its epilogue (:func:`c_load_batches`): beta = 1 cost the 8x16
#: tile 16.5 us at 2048^3 (32 batches, one round), 8x8 in 64x128 blocks 5.3 us at
#: 3072x1500x1024 (2 batches, 3 rounds).
C_LOAD_BATCH_S = 0.75e-6
#: The split-K tail: the pass over the S partials (the tile's last block, or the reduction
#: kernel) after the k slices.
REDUCE_LAUNCH_S = 2.0e-6
#: Predicted kernel time from which a split-K plan reduces in a kernel of its own (two
#: launches, one CUDA graph) rather than in the tile's last block: 0, every split plan.
#: Back-to-back calls of 35x700x2048 split 12 took 12.85 us against 17.27 in the last
#: block, cuBLAS 14.58 (bench/gpu_reduce_graph.py, bench/results/h200/reduce_graph.json).
#: It was 30 us while each cuLaunchKernel cost 5.5-7 us of host time (docs/gpu-simt.md).
TWO_LAUNCH_MIN_S = 0.0
#: DRAM bandwidth the model assumes (H200: 4.8 TB/s peak).
DRAM_BYTES_PER_S = 3.0e12
#: Largest split-K factor, smallest k per split, largest workspace (bytes).
MAX_SPLIT = 32
MIN_KSLICE = 128
WORKSPACE_LIMIT = 64 << 20
#: Predicted times within this fraction of the best count as equal.
TIE = 0.02

#: The candidate tiles, largest first: the 8x16 thread tile in 128x256 blocks (8 warps
#: of 64x64 warp tiles); the 8x8 thread tile (32x64 warp tiles) in 128x128, 64x128 and
#: 64x64 blocks capped for 2, 3 and 6 blocks per SM (128, 168, 168 registers, no spill
#: under ptxas 13.0; a cap of 128 spills the two smaller ones); the 8x4 thread tile
#: (32x32) in 64x64 blocks capped for 4 (117 registers), the fastest on skinny shapes
#: (35x700x2048: 18.3 us against 23.3 for 64x128). All but 128x128 walk the grid in
#: groups of 8 block rows (``group_m``, gpu/raster.py): 1.7-6% faster on the H200, the
#: 128x128 tile 3-11% slower grouped (bench/results/h200/simt_grouped.md).
AUTO_TILES = (
    GpuTile(8, 16, 128, 256, 8, wm=64, wn=64, group_m=8),
    DEFAULT_TILE,
    GpuTile(8, 8, 64, 128, 8, min_blocks=3, wm=32, wn=64, group_m=8),
    GpuTile(8, 8, 64, 64, 8, min_blocks=6, wm=32, wn=64, group_m=8),
    GpuTile(8, 4, 64, 64, 8, min_blocks=4, wm=32, wn=32, group_m=8),
)


@dataclasses.dataclass(frozen=True)
class LaunchPlan:
    """What :func:`plan_launch` chose for one (m, n, k): the tile, the split-K factor
    ``split`` (S, the grid's z), ``kslice`` (k per split), the grid (x: blocks along
    N, y: along M, z: splits), ``blocks`` in all, ``blocks_per_sm`` (occupancy
    model), ``waves`` = blocks / (blocks_per_sm x SMs), the busiest SM's ``rounds``,
    the predicted time in seconds, the best option of every candidate tile
    (``considered``: name, split, predicted seconds), and how a split launch forms C
    (``reduce``: "last block" or "kernel", :data:`TWO_LAUNCH_MIN_S`; "" unsplit)."""
    m: int
    n: int
    k: int
    tile: GpuTile
    split: int
    kslice: int
    grid: tuple
    blocks: int
    blocks_per_sm: int
    waves: float
    rounds: tuple
    predicted_s: float
    sm_count: int
    considered: tuple = ()
    forced: str = ""
    reduce: str = ""

    @property
    def workspace_bytes(self) -> int:
        return 4 * self.split * self.m * self.n if self.split > 1 else 0

    def as_dict(self) -> dict:
        return {"m": self.m, "n": self.n, "k": self.k, "tile": self.tile.name,
                "split": self.split, "kslice": self.kslice, "grid": list(self.grid),
                "blocks": self.blocks, "blocks_per_sm": self.blocks_per_sm,
                "waves": round(self.waves, 4), "rounds": list(self.rounds),
                "predicted_us": round(self.predicted_s * 1e6, 2),
                "sm_count": self.sm_count, "workspace_bytes": self.workspace_bytes,
                "considered": [dict(c) for c in self.considered], "forced": self.forced,
                "reduce": self.reduce}

    def summary(self) -> str:
        s = (f"{self.m}x{self.n}x{self.k}: {self.tile.name}, split-K {self.split} "
             f"(kslice {self.kslice}), grid {self.grid[0]}x{self.grid[1]}x{self.grid[2]} = "
             f"{self.blocks} blocks, {self.blocks_per_sm}/SM -> {self.waves:.2f} waves on "
             f"{self.sm_count} SMs, predicted {self.predicted_s * 1e6:.1f} us"
             + (f", reduced by {'the last block' if self.reduce == 'last block' else 'a kernel'}"
                if self.reduce else ""))
        return s + (f" ({self.forced})" if self.forced else "")


def _blocks_per_sm(tile: GpuTile, limits: SmLimits) -> int:
    """Blocks per SM of ``tile``'s kernel: at its register cap when it has one
    (ptxas 13.0 uses up to the cap: 128 of 128, 159 and 163 of 168 for
    :data:`AUTO_TILES`), else at the port's register estimate."""
    from .port import estimate_regs
    from .tiles import max_registers
    regs = max_registers(tile) or estimate_regs(tile)
    return occupancy(regs, tile.threads, tile.smem_bytes, limits).blocks_per_sm


def c_load_batches(tile: GpuTile) -> int:
    """Batches of C loads a thread of ``tile`` waits for in the epilogue when beta != 0
    (:mod:`microkernel.gpu.simt_epilogue`): TM / rows per chunk, or one per float4
    group (TM x TN / 4)."""
    from .simt_epilogue import rows_per_chunk
    rc = rows_per_chunk(tile)
    return tile.tm // rc if rc else max(1, tile.tm * tile.tn // 4)


def tile_rate(tile: GpuTile) -> float:
    """Relative main-loop rate of a tile (:data:`TILE_RATE` by (tm, tn, bm, bn), 1.0 if
    unlisted)."""
    return TILE_RATE.get((tile.tm, tile.tn, tile.bm, tile.bn), 1.0)


def _evaluate(t: GpuTile, s: int, m: int, n: int, k: int, bps: int, limits: SmLimits,
              reads_c: bool) -> tuple:
    """(predicted seconds, split actually used, kslice, grid, rounds) of tile t split s."""
    per = -(-k // s)                                  # ceil(k / s)
    kslice = max(t.bk, -(-per // t.bk) * t.bk)         # rounded up to bk
    s_eff = -(-k // kslice) if k else 1
    gx, gy = t.grid(m, n)
    blocks = gx * gy * s_eff
    rounds = busiest_sm_rounds(blocks, bps, limits)
    rate = FMA_PER_CLOCK * CLOCK_HZ * SM_EFFICIENCY * tile_rate(t)
    wpb = -(-t.threads // 32)
    work = t.bm * t.bn * kslice
    t_comp = sum(r * work / (rate * min(1.0, r * wpb / SATURATION_WARPS)) + ROUND_OVERHEAD_S
                 for r in rounds)
    c_bytes = 4 * m * n * (2 if reads_c else 1)
    t_mem = (4 * (m * k + k * n) + c_bytes) / DRAM_BYTES_PER_S
    t_red = 0.0
    if s_eff > 1:
        t_red = (8 * s_eff * m * n + c_bytes) / DRAM_BYTES_PER_S + REDUCE_LAUNCH_S
    elif reads_c:
        t_comp += len(rounds) * c_load_batches(t) * C_LOAD_BATCH_S
    return max(t_comp, t_mem) + t_red, s_eff, kslice, (gx, gy, s_eff), tuple(rounds)


def choose(options, sm_count: int):
    """The planner's pick among ``options`` (tuples of predicted seconds, split,
    candidate index, tile, kslice, grid, ...): of those within :data:`TIE` of the
    fastest, one whose grid has a block for each of ``sm_count`` SMs, then the
    smallest split, then the earliest candidate."""
    fastest = min(o[0] for o in options)
    return min((o for o in options if o[0] <= fastest * (1 + TIE)),
               key=lambda o: (o[5][0] * o[5][1] * o[5][2] < sm_count, o[1], o[2]))


def plan_launch(m: int, n: int, k: int, *, tile: GpuTile | None = None,
                split: int | None = None, limits: SmLimits = SM90,
                alpha_zero: bool = False, reads_c: bool = False,
                candidates=None) -> LaunchPlan:
    """Choose the tile and split-K factor for an (m, n, k) fp32 GEMM (see the module
    docstring).

    Parameters
    ----------
    m, n, k : int
        Problem size (C is m x n, k the inner dimension), >= 0.
    tile : GpuTile, optional
        Fix the tile (then only the split is chosen); default: the best of
        ``candidates`` (default :data:`AUTO_TILES`).
    split : int, optional
        Fix the split-K factor (>= 1; more than ceil(k/bk) is reduced to that).
    limits : SmLimits
        The GPU (``sm_count`` must be set): :data:`~microkernel.gpu.occupancy.SM90`
        (132 SMs) by default; :func:`microkernel.gpu.front.gemm` passes the current
        device's SM count.
    alpha_zero : bool
        alpha == 0 (or k == 0): nothing to accumulate, so no split.
    reads_c : bool
        beta != 0 (C is read: more memory traffic).

    Raises
    ------
    ValueError
        Negative dimensions, a split < 1, a split > 1 for a tile without a warp
        tile (the original kernel has no split-K), ``limits`` without an SM count.
    TypeError
        A ``tile`` that is not a GpuTile, a non-integer split.
    """
    for nm, v in (("m", m), ("n", n), ("k", k)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
            raise ValueError(f"{nm} must be an integer >= 0, got {v!r}")
    if split is not None and (not isinstance(split, (int, np.integer))
                              or isinstance(split, bool)):
        raise TypeError(f"split must be an integer, got {type(split).__name__}")
    if split is not None and split < 1:
        raise ValueError(f"split must be >= 1, got {split}")
    if not limits.sm_count:
        raise ValueError(f"limits {limits.name} has no sm_count")
    if tile is not None and not isinstance(tile, GpuTile):
        raise TypeError(f"tile must be a GpuTile, got {type(tile).__name__}")
    cands = (tile,) if tile is not None else tuple(candidates or AUTO_TILES)
    forced = []
    if tile is not None:
        forced.append("tile given")
    if split is not None:
        forced.append(f"split {split} given")
        if split > 1 and tile is not None and not tile.warp_tiled:
            raise ValueError(f"{tile.name} has no warp tile: the original kernel has no "
                             f"split-K (split must be 1)")
    no_split = alpha_zero or k == 0
    best, considered = [], []
    for ci, t in enumerate(cands):
        bps = _blocks_per_sm(t, limits)
        if bps < 1:
            continue
        if no_split or not t.warp_tiled:
            splits = [1]
        elif split is not None:
            splits = [min(split, max(1, -(-k // t.bk)))]
        else:
            top = min(MAX_SPLIT, max(1, k // MIN_KSLICE))
            splits = list(range(1, top + 1))
        opts, seen = [], set()
        for s in splits:
            sec, s_eff, kslice, grid, rounds = _evaluate(t, s, m, n, k, bps, limits, reads_c)
            if s_eff in seen or (s_eff > 1 and 4 * s_eff * m * n > WORKSPACE_LIMIT):
                continue
            seen.add(s_eff)
            opts.append((sec, s_eff, ci, t, kslice, grid, rounds, bps))
        if not opts:
            continue
        tbest = min(opts, key=lambda o: o[0])
        considered.append({"tile": t.name, "split": tbest[1],
                           "predicted_us": round(tbest[0] * 1e6, 2)})
        best += opts
    if not best:
        if split is not None and split > 1 and 4 * split * m * n > WORKSPACE_LIMIT:
            raise ValueError(
                f"split {split} for {m}x{n}x{k} needs {4 * split * m * n / 2**20:.0f} MiB "
                f"of fp32 partial sums, more than the {WORKSPACE_LIMIT / 2**20:.0f} MiB "
                f"workspace limit (launch.WORKSPACE_LIMIT): use a smaller split")
        raise ValueError(f"no candidate tile can launch for {m}x{n}x{k}")
    sec, s_eff, _, t, kslice, grid, rounds, bps = choose(best, limits.sm_count)
    blocks = grid[0] * grid[1] * grid[2]
    if no_split:
        forced.append("alpha == 0 or k == 0: no split")
    reduce = "" if s_eff == 1 else "kernel" if sec >= TWO_LAUNCH_MIN_S else "last block"
    return LaunchPlan(m, n, k, t, s_eff, kslice, grid, blocks, bps,
                      blocks / (bps * limits.sm_count), rounds, sec, limits.sm_count,
                      tuple(considered), "; ".join(forced), reduce)


# -- launching: microkernel.gpu.launchers ------------------------------------------------

class Runner:
    """A cached launch of one :class:`LaunchPlan`: the kernel variant, the direct
    launch handles (or the dispatcher), and the split-K workspace.

    ``path`` is ``"cuGraphLaunch"`` (the plan's one or two launches as a CUDA graph,
    its parameters updated only when a call's pointers, alpha or beta differ from
    the last call's), ``"cuLaunchKernel"`` (parameters packed once), ``"cuda.core"``
    (parameters packed per call) or ``"numba dispatcher"``; ``direct`` is True for
    the first three (:meth:`run_fast` on raw pointers), and ``fast_error`` says why a
    faster path could not be set up.

    The workspace and the tile counts belong to the runner: calls of one runner
    (one shape) are queued on one stream, so they never overlap."""

    #: Slots of the warp-tiled kernel's parameters (:data:`microkernel.gpu.simt.SIGNATURE`:
    #: A, B, C, W as 9 fields each, data the 5th; T as 7; alpha, beta, kslice).
    _A, _B, _C, _W, _T, _ALPHA, _BETA, _KSLICE, _NPARAMS = 4, 13, 22, 31, 36, 43, 44, 45, 46
    #: ... and of the split-K reduction kernel's (W, C as 9 fields each; alpha, beta).
    _R_C, _R_ALPHA, _R_BETA = 13, 18, 19

    def __init__(self, plan: LaunchPlan, kern, variant: str):
        if (plan.reduce == "kernel" and not kern.simulated
                and kern.resources(variant, partials=True)["local_bytes"]):
            plan = dataclasses.replace(     # no spilling kernel: one launch instead
                plan, reduce="last block", forced="; ".join(
                    [f for f in (plan.forced, f"the {variant} partials kernel spills")
                     if f]))
        self.plan, self.kern, self.variant = plan, kern, variant
        self.W = self.T = None
        self.fast = self.drv = self.rdrv = self.rfast = self.graph = None
        self._gkey = None
        self.fast_error = None
        self.path = "numba dispatcher"
        self._lock = threading.Lock()
        if not kern.simulated and kern.tile.warp_tiled:
            errors = []
            try:
                self._setup_driver()
                self.path = "cuLaunchKernel"
                try:
                    self.graph = GraphLauncher([d for d in (self.drv, self.rdrv) if d])
                    self.path = "cuGraphLaunch"
                except Exception as e:  # noqa: BLE001 - launch kernel by kernel
                    errors.append(f"cuGraphLaunch: {type(e).__name__}: {e}")
            except Exception as e:  # noqa: BLE001 - fall back to cuda.core's launch
                self.drv = None
                errors.append(f"cuLaunchKernel: {type(e).__name__}: {e}")
                try:
                    self.fast = CoreLauncher(kern.dispatcher_for(variant, plan.reduce),
                                             kern.signature)
                    self.cfg = self.fast.config(plan.grid, kern.tile.threads)
                    self.workspace()
                    if plan.reduce == "kernel":
                        self.rfast, self.rcfg = reduce_core(
                            kern.reducer(variant), plan.m, plan.n, variant != "scalar")
                    self.path = "cuda.core"
                except Exception as e2:  # noqa: BLE001 - fall back to numba's launch
                    self.fast = None
                    errors.append(f"cuda.core: {type(e2).__name__}: {e2}")
            self.fast_error = "; ".join(errors) or None
        self.direct = self.drv is not None or self.fast is not None

    def _setup_driver(self) -> None:
        p, kern = self.plan, self.kern
        d = DriverLauncher(kern.dispatcher_for(self.variant, p.reduce), kern.signature,
                           p.grid, kern.tile.threads, self._NPARAMS)
        W, _ = self.workspace()                       # and its wparams / tparams
        m, n, k = p.m, p.n, p.k
        vals = (arr_params(0, m, k) + arr_params(0, k, n) + arr_params(0, m, n)
                + (self.wparams if W is not None else arr_params(0, m, n)) + self.tparams)
        for i, v in enumerate(vals):
            d.set_int(i, v)
        d.set_int(self._KSLICE, p.kslice)             # uint32 in the low 4 bytes
        if p.reduce == "kernel":
            self.rdrv = reduce_driver(kern.reducer(self.variant), m, n,
                                      self.variant != "scalar", self.wparams)
        self.drv = d

    def workspace(self):
        """(W, T): the split-K workspace ((split*m) x n; when not split, None) and the
        tile counts (uint32 zeros, one per block tile; one when not split), allocated
        once per runner."""
        if self.T is None:
            p = self.plan
            self.W, self.T = split_buffers(p.tile, p.m, p.n, p.split)
            if not self.kern.simulated:
                if self.W is not None:
                    self.wparams = arr_params(self.W.device_ctypes_pointer.value,
                                               p.split * p.m, p.n)
                self.tparams = vec_params(self.T.device_ctypes_pointer.value,
                                           self.T.shape[0])
        return self.W, self.T

    def run_fast(self, pa: int, pb: int, pc: int, alpha: float, beta: float) -> None:
        """Launch on raw device pointers of C-contiguous A, B, C (``direct`` only)."""
        d = self.drv
        if d is not None:
            with self._lock:                          # the slots, then the launch
                g = self.graph
                key = (pa, pb, pc, alpha, beta)
                if g is not None and key == self._gkey:
                    g()                               # the graph holds these values
                    return
                s = d.slots
                s[self._A] = pa
                s[self._B] = pb
                s[self._C] = pc
                if self.W is None:
                    s[self._W] = pc                   # unsplit: W is C (not read)
                d.set_f32(self._ALPHA, alpha)
                d.set_f32(self._BETA, beta)
                r = self.rdrv
                if r is not None:                     # the reduction kernel's C, alpha, beta
                    r.slots[self._R_C] = pc
                    r.set_f32(self._R_ALPHA, alpha)
                    r.set_f32(self._R_BETA, beta)
                if g is not None:
                    self._gkey = None
                    g.update()
                    self._gkey = key
                    g()
                else:
                    d()
                    if r is not None:
                        r()
            return
        p = self.plan
        m, n, k = p.m, p.n, p.k
        if self.T is None:
            self.workspace()
        cp = arr_params(pc, m, n)
        self.fast(self.cfg, arr_params(pa, m, k) + arr_params(pb, k, n) + cp
                  + (self.wparams if p.split > 1 else cp) + self.tparams
                  + (ctypes.c_float(alpha), ctypes.c_float(beta), ctypes.c_uint32(p.kslice)))
        if self.rfast is not None:
            self.rfast(self.rcfg, self.wparams + cp
                       + (ctypes.c_float(alpha), ctypes.c_float(beta)))

    def run(self, A, B, C, alpha: float, beta: float) -> None:
        """Launch on device arrays through numba's dispatcher."""
        p = self.plan
        W, T = self.workspace()
        self.kern.launch(A, B, C, alpha, beta, W=W, T=T, split=p.split, kslice=p.kslice,
                         variant=self.variant, reduce=p.reduce or "last block")


_RUNNERS: collections.OrderedDict = collections.OrderedDict()
_RLOCK = threading.Lock()
#: Runners kept (least recently used dropped first, with their workspace).
MAX_RUNNERS = 64


def clear_plans() -> None:
    """Forget every cached launch plan and workspace."""
    with _RLOCK:
        _RUNNERS.clear()


def runner(m: int, n: int, k: int, tile, split, variant: str, alpha_zero: bool,
           reads_c: bool, limits: SmLimits = SM90) -> Runner:
    """The cached :class:`Runner` for this call's key (plans and builds on a miss).
    ``tile`` is None (shape-adaptive) or a GpuTile; ``variant`` "vec" (the operands
    allow float4 accesses: the runner takes the guard-free "exact" variant when the
    planned tile divides the problem, :func:`microkernel.gpu.simt.variant_for`) or
    "scalar"."""
    key = (m, n, k, tile, split, variant, alpha_zero, reads_c, limits.sm_count)
    with _RLOCK:
        r = _RUNNERS.get(key)
        if r is not None:
            _RUNNERS.move_to_end(key)
            return r
    from .kernel import kernel_for
    plan = plan_launch(m, n, k, tile=tile, split=split, limits=limits,
                       alpha_zero=alpha_zero, reads_c=reads_c)
    if variant == "vec":                # exact where the tile has it and divides the problem
        from .simt import variant_for
        variant = variant_for(plan.tile, m, n, k, True)
    r = Runner(plan, kernel_for(plan.tile), variant)
    with _RLOCK:
        _RUNNERS[key] = r
        while len(_RUNNERS) > MAX_RUNNERS:
            _RUNNERS.popitem(last=False)
    return r


def cached_runners() -> int:
    """How many runners (plans) are cached."""
    return len(_RUNNERS)


def device_limits() -> SmLimits:
    """The current device's SmLimits (its SM count), or SM90 in the simulator or
    when the device cannot be asked."""
    global _DEVICE_LIMITS
    if _DEVICE_LIMITS is None:
        lim = SM90
        try:
            from .kernel import _import_cuda, simulator_active
            if not simulator_active():
                dev = _import_cuda().get_current_device()
                cc = dev.compute_capability
                lim = dataclasses.replace(SM90, name=f"sm_{cc[0]}{cc[1]}",
                                          sm_count=int(dev.MULTIPROCESSOR_COUNT))
        except Exception:  # noqa: BLE001
            lim = SM90
        _DEVICE_LIMITS = lim
    return _DEVICE_LIMITS


_DEVICE_LIMITS = None
