#!/usr/bin/env python3
"""The GPU planner against measurement, with C written (beta = 0) and read (beta = 1).

Usage (on the device machine, from the repository root)::

    python3 bench/gpu_plan_scan.py [--shape MxNxK ...] [--rounds 5] [--json PATH]

For each shape and each beta, every tile of :data:`microkernel.gpu.launch.AUTO_TILES`
at the splits of :data:`SPLITS` (and at the planner's best split for that tile) is
built as the runner ``gemm()`` would use (``launch.runner``: the plan's CUDA graph),
checked once against the float64 reference (``|C - (A B + beta C0)|`` within the bound
of :func:`microkernel.gpu.port.validate`), and timed beside cuBLAS (``torch.mm``) in
interleaved rounds, the order shuffled each round (GPU time of back-to-back calls,
``gpu_simt.Timer``). Prints and writes, per shape and beta, each option's predicted and
measured microseconds (median, min, max over the rounds), the planner's choice and the
measured best: the data to check and refit ``launch.TILE_RATE`` and the planner's
tie-break. Nothing is asserted.

First, each AUTO tile's general kernel (the one that reads C when beta != 0) is compiled
in its float4 variants and numba's resource report printed: registers and local memory
per thread (local memory > 0: a spill).
"""
from __future__ import annotations

import random
import statistics

import gpu_simt  # noqa: F401  (sets CUPY_TF32=0 and the numba environment first)
from gpu_simt import (Timer, checked_runner, cublas_call, interleaved, problem, race_args,
                      save_json)

#: shape -> the splits timed for every AUTO tile (each tile's planned split is added).
SPLITS = {(1024, 1024, 1024): (1, 2, 4), (512, 512, 4096): (1, 4, 8, 16),
          (35, 700, 2048): (1, 8, 16), (128, 1500, 1280): (1, 2, 4, 8),
          (3072, 1500, 1024): (1, 2), (2048, 2048, 2048): (1, 2),
          (768, 768, 768): (1, 2, 4), (512, 512, 512): (1, 2, 4),
          (256, 256, 256): (1, 2), (1536, 1536, 1536): (1, 2),
          (5124, 700, 2048): (1, 2), (176, 1500, 1408): (1, 2, 4, 8),
          (4224, 1500, 176): (1,), (3072, 1500, 128): (1,), (4096, 4096, 4096): (1,)}


def scan_shape(m: int, n: int, k: int, beta: float, splits, timer, rounds: int,
               seed: int) -> dict:
    from microkernel.gpu import launch
    lim = launch.device_limits()
    A, B, C0, ref, bound = problem(m, n, k, m * 7 + n * 3 + k)
    reads_c = beta != 0
    auto = launch.plan_launch(m, n, k, limits=lim, reads_c=reads_c)
    options, fns = {}, {}
    for t in launch.AUTO_TILES:
        own = launch.plan_launch(m, n, k, tile=t, limits=lim, reads_c=reads_c).split
        for s in sorted(set(splits) | {own}):
            try:
                p = launch.plan_launch(m, n, k, tile=t, split=s, limits=lim, reads_c=reads_c)
            except ValueError:
                continue
            key = f"{t.name}/s{p.split}"
            if key in options:
                continue
            fns[key], err = checked_runner(
                launch.runner(m, n, k, t, s, "vec", False, reads_c, lim), A, B, C0, ref,
                bound, beta)
            options[key] = {"tile": t.name, "split": p.split, "reduce": p.reduce,
                            "blocks": p.blocks, "predicted_us": round(p.predicted_s * 1e6, 2),
                            "err_over_bound": round(err, 4),
                            "planner": t == auto.tile and p.split == auto.split}
    fns["cuBLAS"] = cublas_call(A, B, C0, beta)
    times = interleaved(timer, fns, rounds, seed)
    for key, ts in times.items():
        row = options.setdefault(key, {})
        row.update(median_us=round(statistics.median(ts) * 1e6, 2),
                   min_us=round(min(ts) * 1e6, 2), max_us=round(max(ts) * 1e6, 2))
    ours = {k2: v for k2, v in options.items() if k2 != "cuBLAS"}
    best = min(ours, key=lambda k2: ours[k2]["median_us"])
    pick = next(k2 for k2, v in ours.items() if v["planner"])
    res = {"shape": f"{m}x{n}x{k}", "beta": beta, "planner": pick,
           "planner_us": ours[pick]["median_us"], "best": best,
           "best_us": ours[best]["median_us"], "cublas_us": options["cuBLAS"]["median_us"],
           "planner_over_best": round(ours[pick]["median_us"] / ours[best]["median_us"], 3),
           "max_err_over_bound": max(v["err_over_bound"] for v in ours.values()),
           "options": options}
    launch.clear_plans()
    return res


def resources() -> dict:
    """tile name -> variant -> numba's resource report of the general kernel."""
    from microkernel.gpu import kernel as gk, launch
    from microkernel.gpu.simt_variants import has_exact
    out = {}
    for t in launch.AUTO_TILES:
        kern = gk.kernel_for(t)
        for v in ("vec", "exact") if has_exact(t) else ("vec",):
            r = kern.resources(v, False)
            out.setdefault(t.name, {})[v] = r
            print(f"RESOURCES {t.name} [{v}]: {r}", flush=True)
    return out


def main(argv=None) -> int:
    args = race_args(__doc__, argv, rounds=5, extra=lambda ap: ap.add_argument(
        "--shape", action="append", default=[]))
    shapes = ([tuple(int(v) for v in s.split("x")) for s in args.shape] or list(SPLITS))
    timer = Timer()
    rng = random.Random(11)
    out = {"rounds": args.rounds, "resources": resources(), "results": []}
    for m, n, k in shapes:
        for beta in (0.0, 1.0):
            res = scan_shape(m, n, k, beta, SPLITS.get((m, n, k), (1, 2)), timer,
                             args.rounds, rng.randrange(1 << 30))
            print(f"PLAN {res['shape']} beta={beta:g}: planner {res['planner']} "
                  f"{res['planner_us']} us, best {res['best']} {res['best_us']} us "
                  f"({res['planner_over_best']}x), cuBLAS {res['cublas_us']} us, "
                  f"max err/bound {res['max_err_over_bound']}", flush=True)
            out["results"].append(res)
            save_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
