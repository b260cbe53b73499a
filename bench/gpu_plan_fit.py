#!/usr/bin/env python3
"""Fit the GPU planner's constants to the H200 scans (no GPU needed).

Usage (from the repository root)::

    python3 bench/gpu_plan_fit.py [--search] [--held-out bench/results/h200/plan_ab.json]

Reads ``bench/gpu_plan_scan.py``'s two H200 scans of 2026-12-04: every AUTO tile at
1-6 splits per shape, beta = 0 and 1, measured on the GPU kernels of f44ecfb
(``plan_scan_f44ecfb.json``) and with every tile's epilogue chunked
(``plan_scan_chunked.json``). Each option's time is taken from the scan whose kernel
is the one ``gemm()`` runs now: unsplit options of tiles that keep the per-group
epilogue (:func:`microkernel.gpu.simt_epilogue.rows_per_chunk` 0: their source is
f44ecfb's) from the first, every other option from the second (the partials kernels
are the same in both).

For a set of constants, each shape and beta gets the planner's pick among its measured
options (``launch._evaluate`` and ``launch.choose``, the rule of ``plan_launch``); the
regret is the pick's measured time over the fastest measured. Prints, for the constants
before the refit (``gpu_plan_ab.BEFORE``) and the current ones, the geometric mean and
the worst regret and the rms of log(measured / predicted), and lists the picks more
than 1.5% off. ``--search`` redoes the fit: a coordinate search from the constants
before, over the grids of :data:`GRID`, of 10 x log(mean regret) + log(worst regret)
+ 0.3 x rms. ``--held-out`` adds ``bench/gpu_plan_ab.py``'s results (two options per
shape: the picks before and after) to the evaluation.
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import pathlib
import re
import statistics
import sys

import _gpu_common  # noqa: F401  (the bare microkernel package: no cffi needed)
from gpu_plan_ab import BEFORE

RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "h200"
#: The grids of the coordinate search (module constants of microkernel.gpu.launch).
GRID = {"SM_EFFICIENCY": [0.6, 0.65, 0.7, 0.75, 0.8],
        "SATURATION_WARPS": [4, 6, 8, 10, 12, 16],
        "ROUND_OVERHEAD_S": [0.5e-6, 1e-6, 1.5e-6, 2e-6, 3e-6],
        "REDUCE_LAUNCH_S": [1e-6, 2e-6, 3e-6, 4e-6],
        "DRAM_BYTES_PER_S": [2e12, 2.5e12, 3e12, 3.5e12],
        "C_LOAD_BATCH_S": [0.0, 0.25e-6, 0.5e-6, 0.75e-6, 1e-6]}
#: The grid of each tile's TILE_RATE (the 128x128 tile stays at 1.0).
RATES = [0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.15, 1.2]


def measured_options(held_out=None) -> dict:
    """(m, n, k, beta) -> [(tile, split, measured us)] for the kernels of now."""
    from microkernel.gpu import launch
    from microkernel.gpu.simt_epilogue import rows_per_chunk
    per_group = {t.name for t in launch.AUTO_TILES if not rows_per_chunk(t)}
    old = {(r["shape"], r["beta"]): r["options"] for r in
           json.loads((RESULTS / "plan_scan_f44ecfb.json").read_text())["results"]}
    out = {}
    for r in json.loads((RESULTS / "plan_scan_chunked.json").read_text())["results"]:
        key = tuple(int(v) for v in r["shape"].split("x")) + (r["beta"],)
        for name, v in r["options"].items():
            if name == "cuBLAS":
                continue
            tile, split = name.rsplit("/s", 1)
            us = v["median_us"]
            if split == "1" and tile in per_group:      # f44ecfb's kernel, if it was timed
                us = old.get((r["shape"], r["beta"]), {}).get(name, {}).get("median_us")
            if us is not None:
                out.setdefault(key, []).append((tile, int(split), us))
    for r in (json.loads(pathlib.Path(held_out).read_text())["shapes"] if held_out else ()):
        key = tuple(int(v) for v in r["shape"].split("x")) + (r["beta"],)
        for nm in ("before", "after"):
            summary = r["plans"][nm]
            tile = summary.split(": ")[1].split(",")[0]
            split = int(re.search(r"split-K (\d+)", summary).group(1))
            out.setdefault(key, []).append((tile, split, r["median_us"][nm]))
    return out


def evaluate(consts: dict, options: dict, show: bool = False) -> tuple:
    """(geometric-mean regret, worst regret, rms log error) under ``consts``."""
    from microkernel.gpu import launch
    saved = {k: copy.deepcopy(getattr(launch, k)) for k in consts}
    tiles = {t.name: (i, t) for i, t in enumerate(launch.AUTO_TILES)}
    regrets, errs = [], []
    try:
        for k, v in consts.items():
            setattr(launch, k, copy.deepcopy(v))
        for (m, n, k, beta), opts in sorted(options.items()):
            rows = []
            for name, split, us in opts:
                ci, t = tiles[name]
                bps = launch._blocks_per_sm(t, launch.SM90)
                sec, s_eff, kslice, grid, rounds = launch._evaluate(
                    t, split, m, n, k, bps, launch.SM90, beta != 0)
                rows.append((sec, s_eff, ci, t, kslice, grid, rounds, bps, us))
                errs.append(math.log(us / (sec * 1e6)))
            pick = launch.choose(rows, launch.SM90.sm_count)
            best = min(r[-1] for r in rows)
            regrets.append(pick[-1] / best)
            if show and pick[-1] / best > 1.015:
                print(f"   {m}x{n}x{k} beta={beta:g}: picks {pick[3].name} split {pick[1]} "
                      f"{pick[-1]} us, fastest measured {best} us")
    finally:
        for k, v in saved.items():
            setattr(launch, k, v)
    return (math.exp(statistics.mean(math.log(r) for r in regrets)), max(regrets),
            statistics.mean(e * e for e in errs) ** 0.5)


def search(start: dict, options: dict) -> dict:
    from microkernel.gpu import launch

    def cost(c):
        g, worst, rms = evaluate(c, options)
        return 10 * math.log(g) + math.log(worst) + 0.3 * rms
    best, val = copy.deepcopy(start), cost(start)
    for _ in range(4):
        for k, grid in GRID.items():
            for v in grid:
                c = copy.deepcopy(best)
                c[k] = v
                if cost(c) < val - 1e-9:
                    best, val = c, cost(c)
        for t in launch.AUTO_TILES:
            key = (t.tm, t.tn, t.bm, t.bn)
            if key == (8, 8, 128, 128):
                continue
            for v in RATES:
                c = copy.deepcopy(best)
                c["TILE_RATE"][key] = v
                if cost(c) < val - 1e-9:
                    best, val = c, cost(c)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--search", action="store_true")
    ap.add_argument("--held-out", default=None)
    args = ap.parse_args(argv)
    from microkernel.gpu import launch
    options = measured_options(args.held_out)
    names = list(BEFORE) + [k for k in GRID if k not in BEFORE]
    current = {k: copy.deepcopy(getattr(launch, k)) for k in names}
    before = {**current, **copy.deepcopy(BEFORE)}
    print(f"{len(options)} shape-beta pairs, {sum(map(len, options.values()))} options")
    for label, consts in (("before", before), ("current", current)):
        g, worst, rms = evaluate(consts, options, show=True)
        print(f"{label}: regret geometric mean {g:.4f}, worst {worst:.3f}, "
              f"rms log(measured/predicted) {rms:.3f}")
    if args.search:
        fit = search(before, options)
        print("search from before:", {k: v for k, v in fit.items()})
        g, worst, rms = evaluate(fit, options, show=True)
        print(f"fit: regret geometric mean {g:.4f}, worst {worst:.3f}, rms {rms:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
