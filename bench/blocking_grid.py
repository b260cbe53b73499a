"""Time gemm() over a grid of (KC, MC) around the analytical model's choice, next to
numpy, single thread both sides, interleaved; prints GFLOP/s and the ratio, medians.

    python bench/blocking_grid.py --kernel avx2_6x16 --n 1024,2048 [--kc ...] [--mc ...]
"""
import argparse
import json
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

import microkernel as mk
from microkernel.blocking import Blocking
from microkernel.gemm import blocking_for


def median_gflops(fn, flops, repeats=5):
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return flops / statistics.median(times) / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", default=None)
    ap.add_argument("--n", default="1024,2048")
    ap.add_argument("--kc", default="128,192,256,384,512")
    ap.add_argument("--mc", default="48,96,144,192,288,384,576,1152")
    ap.add_argument("--json")
    args = ap.parse_args()
    k = mk.get_kernel(args.kernel)
    model = blocking_for(k)
    print(f"{k.name}: model KC={model.kc} MC={model.mc} NC={model.nc}")
    rows = []
    with threadpool_limits(limits=1, user_api="blas"):
        for n in (int(x) for x in args.n.split(",")):
            rng = np.random.default_rng(0)
            A = rng.standard_normal((n, n), dtype=np.float32)
            B = rng.standard_normal((n, n), dtype=np.float32)
            C = np.empty((n, n), np.float32)
            flops = 2 * n ** 3
            grid = [(model.kc, model.mc)] + [(int(kc), int(mc)) for kc in args.kc.split(",")
                                             for mc in args.mc.split(",")]
            for kc, mc in grid:
                mc = max(k.mr, mc // k.mr * k.mr)
                blk = Blocking(kc, mc, model.nc)
                ours = median_gflops(lambda: mk.gemm(A, B, C, kernel=k, blocking=blk), flops)
                ref = median_gflops(lambda: np.matmul(A, B, out=C), flops, 3)
                rows.append({"n": n, "kc": kc, "mc": mc, "ours": ours, "numpy": ref,
                             "ratio": ours / ref, "model": (kc, mc) == (model.kc, model.mc)})
                print(f"n={n} KC={kc:4d} MC={mc:5d} ours {ours:6.1f} numpy {ref:6.1f} "
                      f"ratio {ours / ref:.2f}{'  (model)' if rows[-1]['model'] else ''}", flush=True)
    best = sorted(rows, key=lambda r: -r["ratio"])[:8]
    print("best:", json.dumps(best, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"kernel": k.name, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
