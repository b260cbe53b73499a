#!/usr/bin/env python3
"""The GPU planner's constants, before and after a refit, raced on the H200.

Usage (on the device machine, from the repository root)::

    python3 bench/gpu_plan_ab.py [--rounds 9] [--json PATH]

For each shape and beta of :data:`SHAPES` (the planner's pick changed with the refit
of 2026-12-04, and none of them was in the scans the constants were fit to), the plan
under the constants before (:data:`BEFORE`, patched into ``launch`` for the moment of
planning) and under the current ones are built as ``gemm()`` would run them
(``launch.runner``), checked once against the float64 reference, and timed beside
cuBLAS (``torch.mm`` / ``addmm_``) in interleaved rounds, the order shuffled each
round (GPU time of back-to-back calls, ``gpu_simt.Timer``). Prints the medians and
the paired ratio before / after (> 1: the refit's pick is faster) with its 95%
interval. Nothing is asserted.
"""
from __future__ import annotations

import dataclasses
import random
import statistics

import gpu_simt  # noqa: F401  (sets CUPY_TF32=0 and the numba environment first)
from gpu_simt import (Timer, checked_runner, cublas_call, interleaved, problem, race_args,
                      save_json)

#: (m, n, k, beta): where the refit changed the pick, outside the fitted scans.
SHAPES = [(256, 4096, 4096, 0.0), (512, 4096, 4096, 1.0), (896, 896, 896, 0.0),
          (1024, 4096, 4096, 1.0), (1280, 1280, 1280, 1.0), (2048, 2048, 512, 1.0),
          (2560, 2560, 2560, 0.0), (3072, 3072, 3072, 0.0), (4096, 11008, 1024, 1.0),
          (8192, 8192, 256, 1.0)]
#: The planner's constants before the refit.
BEFORE = {"SM_EFFICIENCY": 0.75, "ROUND_OVERHEAD_S": 1.5e-6, "C_LOAD_BATCH_S": 0.0,
          "TILE_RATE": {(8, 16, 128, 256): 1.06, (8, 8, 128, 128): 1.0,
                        (8, 8, 64, 128): 0.91, (8, 8, 64, 64): 0.74, (8, 4, 64, 64): 0.8}}


def plan_before(launch, m, n, k, reads_c, lim):
    saved = {name: getattr(launch, name) for name in BEFORE}
    try:
        for name, v in BEFORE.items():
            setattr(launch, name, v)
        return launch.plan_launch(m, n, k, limits=lim, reads_c=reads_c)
    finally:
        for name, v in saved.items():
            setattr(launch, name, v)


def main(argv=None) -> int:
    args = race_args(__doc__, argv)
    import numpy as np
    from microkernel import stats
    from microkernel.gpu import launch
    timer = Timer()
    rng = random.Random(3)
    lim = launch.device_limits()
    out = {"before": {k: (v if k != "TILE_RATE" else {str(t): r for t, r in v.items()})
                      for k, v in BEFORE.items()}, "rounds": args.rounds, "shapes": []}
    for m, n, k, beta in SHAPES:
        reads_c = beta != 0
        plans = {"before": plan_before(launch, m, n, k, reads_c, lim),
                 "after": launch.plan_launch(m, n, k, limits=lim, reads_c=reads_c)}
        A, B, C0, ref, bound = problem(m, n, k, m + 3 * n + 7 * k)
        res = {"shape": f"{m}x{n}x{k}", "beta": beta, "plans": {}, "checks": {}}
        fns = {}
        for nm, p in plans.items():
            r = launch.runner(m, n, k, p.tile, p.split, "vec", False, reads_c, lim)
            res["plans"][nm] = r.plan.summary()
            fns[nm], err = checked_runner(r, A, B, C0, ref, bound, beta)
            res["checks"][nm] = round(err, 4)
        fns["cuBLAS"] = cublas_call(A, B, C0, beta)
        times = interleaved(timer, fns, args.rounds, rng.randrange(1 << 30))
        arr = {nm: np.array(v)[None] for nm, v in times.items()}
        res["median_us"] = {nm: round(statistics.median(v) * 1e6, 2) for nm, v in times.items()}
        res["before_over_after"] = dataclasses.asdict(stats.bootstrap(
            stats.paired_ratios(arr["before"], arr["after"])))
        iv = res["before_over_after"]
        print(f"AB {m}x{n}x{k} beta={beta:g}: {res['median_us']} before/after "
              f"{iv['point']:.3f} [{iv['lo']:.3f}, {iv['hi']:.3f}] checks {res['checks']}\n"
              f"   before: {res['plans']['before']}\n   after:  {res['plans']['after']}",
              flush=True)
        out["shapes"].append(res)
        launch.clear_plans()
    save_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
