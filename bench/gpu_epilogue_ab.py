#!/usr/bin/env python3
"""The warp-tiled kernel's epilogue, old against chunked, raced on the H200.

Usage (on the device machine, from the repository root)::

    python3 bench/gpu_epilogue_ab.py [--rounds 9] [--json PATH]

Until 2026-12-04 the epilogue loaded and stored C one float4 group at a time (``old``:
``simt_epilogue``'s per-group form, the same source as simt.py at f44ecfb, for every
tile). The chunked form (``chunkN``: with beta != 0 a chunk of rows loads its C, at
most N float4 loads in flight, then stores; beta == 0 stores in a branch of its own)
is set here for every AUTO tile. For each configuration every AUTO tile's kernel is
compiled afresh (the kernel and runner caches cleared) and run unsplit on 2048^3 (the
exact variant where the tile has it) and 3072x1500x1024 (the guarded vec variant),
with beta = 0 and 1:
checked once against the float64 reference, then timed (GPU time of back-to-back
calls, ``gpu_simt.Timer``) in interleaved rounds, all configurations of one tile,
shape and beta in the same rounds, the order shuffled each round. Prints medians and
the paired ratio against ``old`` with its 95% interval; numba's resource report
(registers, local memory) per kernel. Nothing is asserted.
"""
from __future__ import annotations

import dataclasses
import random
import statistics

import gpu_simt  # noqa: F401  (sets CUPY_TF32=0 and the numba environment first)
from gpu_simt import Timer, checked_runner, interleaved, problem, race_args, save_json

SHAPES = [(2048, 2048, 2048), (3072, 1500, 1024)]
CONFIGS = ["old", "chunk8", "chunk4"]


def configure(name: str) -> None:
    """Every AUTO tile in the per-group form ("old") or chunked ("chunkN"); the kernel
    and runner caches cleared, so that the next runners compile afresh."""
    from microkernel.gpu import kernel, launch, simt_epilogue
    simt_epilogue.C_LOADS_IN_FLIGHT.clear()
    if name != "old":
        simt_epilogue.C_LOADS_IN_FLIGHT.update(
            {(t.tm, t.tn, t.bm, t.bn): int(name[len("chunk"):]) for t in launch.AUTO_TILES})
    kernel._CACHE.clear()
    launch.clear_plans()


def main(argv=None) -> int:
    args = race_args(__doc__, argv)
    import numpy as np
    from microkernel import stats
    from microkernel.gpu import kernel, launch
    timer = Timer()
    rng = random.Random(5)
    lim = launch.device_limits()
    data = {}
    for m, n, k in SHAPES:
        data[(m, n, k)] = problem(m, n, k, m + n + k)
    runners, checks, resources = {}, {}, {}
    for cfg in CONFIGS:
        configure(cfg)
        for (m, n, k), (A, B, C0, ref, bound) in data.items():
            for t in launch.AUTO_TILES:
                for beta in (0.0, 1.0):
                    r = launch.runner(m, n, k, t, 1, "vec", False, beta != 0, lim)
                    fn, err = checked_runner(r, A, B, C0, ref, bound, beta)
                    key = (f"{m}x{n}x{k}", t.name, beta)
                    runners.setdefault(key, {})[cfg] = fn
                    checks[f"{key} {cfg}"] = round(err, 4)
                    rk = f"{t.name} [{r.variant}] {cfg}"
                    if rk not in resources:
                        resources[rk] = kernel.kernel_for(t).resources(r.variant, False)
                        print("RESOURCES", rk, resources[rk], flush=True)
    out = {"rounds": args.rounds, "resources": resources, "checks": checks, "races": []}
    print("max err/bound", max(checks.values()), flush=True)
    for (shape, tile, beta), fns in runners.items():
        times = interleaved(timer, fns, args.rounds, rng.randrange(1 << 30))
        arr = {c: np.array(v) for c, v in times.items()}
        row = {"shape": shape, "tile": tile, "beta": beta,
               "median_us": {c: round(statistics.median(v) * 1e6, 2) for c, v in times.items()},
               # old's time / this one's, per round (> 1: faster than old)
               "speedup_over_old": {c: dataclasses.asdict(stats.bootstrap(
                   stats.paired_ratios(arr["old"][None], arr[c][None])))
                   for c in times if c != "old"}}
        print("RACE", shape, tile[4:], f"beta={beta:g}", row["median_us"],
              {c: (round(v["point"], 3), round(v["lo"], 3), round(v["hi"], 3))
               for c, v in row["speedup_over_old"].items()}, flush=True)
        out["races"].append(row)
    save_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
