#!/usr/bin/env python3
"""Split-K's two reductions under the CUDA graph, back to back (H200 machine).

Usage (on the device machine, from the repository root)::

    python3 bench/gpu_reduce_graph.py [--shape MxNxK ...] [--rounds 9] [--json PATH]

A split plan forms C either in the tile's last block (one launch) or in a reduction
kernel of its own (two launches): :data:`microkernel.gpu.launch.TWO_LAUNCH_MIN_S`
picks the second only from 30 us of predicted kernel time, set when each launch cost
the host 5.5-7 us. Since then a runner launches its plan as one CUDA graph. For each
shape (default 1024^3, 512x512x4096, 35x700x2048: split plans below 30 us) this
builds the runner both ways (the constant at its value, then at 0), checks both Cs
against the float64 reference, and times them in interleaved rounds (order shuffled
each round) beside cuBLAS (``torch.mm``):

* ``gpu``: GPU microseconds per call of back-to-back calls queued behind a spin kernel
  (the host's cost hidden);
* ``wall``: microseconds per call of 200 calls from one synchronize to the next (what a
  loop of calls sees: the host's cost and the GPU's, whichever is longer).

Prints medians and the paired ratio last block / kernel (> 1: the two launches are
faster) with its 95% interval; nothing is asserted.
"""
from __future__ import annotations

import dataclasses
import json
import random
import statistics

import gpu_simt  # noqa: F401  (sets CUPY_TF32=0 and the numba environment first)
from gpu_simt import (Timer, back_to_back_us, interleaved, race_args,
                      reference_and_bound, save_json)


def main(argv=None) -> int:
    args = race_args(__doc__, argv, extra=lambda ap: ap.add_argument(
        "--shape", action="append", default=[]))
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shape] or [
        (1024, 1024, 1024), (512, 512, 4096), (35, 700, 2048)]
    import numpy as np
    import torch
    from microkernel import stats
    from microkernel.gpu import launch
    timer = Timer()
    rng = random.Random(7)
    out = {"two_launch_min_s": launch.TWO_LAUNCH_MIN_S, "rounds": args.rounds, "shapes": []}
    default = launch.TWO_LAUNCH_MIN_S
    for m, n, k in shapes:
        g = torch.Generator(device="cuda").manual_seed(m * 7 + n * 3 + k)
        A = torch.rand(m, k, device="cuda", generator=g) - 0.5
        B = torch.rand(k, n, device="cuda", generator=g) - 0.5
        C0 = torch.rand(m, n, device="cuda", generator=g)
        ref, bound = reference_and_bound(A, B)
        runners = {}
        for name, limit in (("last block", default), ("kernel", 0.0)):
            launch.TWO_LAUNCH_MIN_S = limit
            launch.clear_plans()
            runners[name] = launch.runner(m, n, k, None, None, "vec", False, True,
                                          launch.device_limits())
        launch.TWO_LAUNCH_MIN_S = default
        launch.clear_plans()
        res = {"shape": f"{m}x{n}x{k}",
               "plans": {nm: r.plan.summary() for nm, r in runners.items()},
               "paths": {nm: r.path for nm, r in runners.items()}, "checks": {}}
        Cs = {nm: C0.clone() for nm in runners}
        for nm, r in runners.items():
            C = Cs[nm]
            r.run_fast(A.data_ptr(), B.data_ptr(), C.data_ptr(), 1.0, 1.0)
            torch.cuda.synchronize()
            err = ((C.double() - (ref + C0.double())).abs() / (bound + 1e-30)).max().item()
            res["checks"][nm] = {"max_err_over_bound": err, "reduce": r.plan.reduce}
        Cm = torch.empty(m, n, device="cuda")
        fns = {nm: (lambda r=r, C=Cs[nm]: r.run_fast(A.data_ptr(), B.data_ptr(),
                                                     C.data_ptr(), 1.0, 1.0))
               for nm, r in runners.items()}
        fns["cuBLAS"] = lambda: torch.mm(A, B, out=Cm)
        gpu = {nm: [] for nm in fns}
        wall = {nm: [] for nm in fns}
        for _ in range(args.rounds):
            for nm, t in interleaved(timer, fns, 1, rng.randrange(1 << 30)).items():
                gpu[nm].append(t[0])
            names = list(fns)
            rng.shuffle(names)
            for nm in names:
                wall[nm].append(back_to_back_us(fns[nm]) * 1e-6)
        for label, times in (("gpu", gpu), ("wall", wall)):
            arr = {nm: np.array(v) for nm, v in times.items()}
            res[label] = {nm: {"median_us": round(statistics.median(v) * 1e6, 2),
                               "min_us": round(min(v) * 1e6, 2),
                               "max_us": round(max(v) * 1e6, 2)} for nm, v in times.items()}
            # last block's time / the reduction kernel's (> 1: two launches faster)
            res[label + "_last_block_over_kernel"] = dataclasses.asdict(stats.bootstrap(
                stats.paired_ratios(arr["last block"], arr["kernel"])))
        print("REDUCE", json.dumps(res), flush=True)
        out["shapes"].append(res)
    save_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
