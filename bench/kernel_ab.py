"""Round-robin A/B of several kernels' gemm() and numpy.matmul in one process: each round
times every contender once per shape, in turn, so that a slow spell of a shared machine
hits all of them; the ratio of each kernel to numpy is taken per round (adjacent
samples) and the median of the rounds is reported, with its first and third quartiles.

Use it to choose a default tile for gemm() on a machine (`microkernel sweep` ranks tiles
one after the other, which a machine whose clock moves within the hour cannot rank).

    python bench/kernel_ab.py --kernels avx512_8x16,avx512_6x32 --sizes 512,1024,2048 \
        --rounds 15 [--workload deepbench] [--threads 1] [--json out.json]

A contender may carry a blocking override after a colon, as in `microkernel bench
--blocking`: `--kernels "avx512_8x32_u4;avx512_8x32_u4:kc=256,mc=192"` (separate
contenders with ';' when any has a blocking; the model's value fills what is left out).

Output: per shape and kernel, the median GFLOP/s (2*m*n*k flops / seconds) and the
median per-round ratio numpy time / our time (> 1: gemm() is faster).
"""
import argparse
import json
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

import microkernel as mk
from microkernel import workloads
from microkernel.bench import numpy_blas_info
from microkernel.cli import _blocking_arg
from microkernel.gemm import blocking_for


def quartiles(xs):
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return q[0], statistics.median(xs), q[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", required=True,
                    help="tile names, comma-separated (or ';'-separated, each NAME[:kc=N,mc=N,nc=N])")
    ap.add_argument("--sizes", default="512,1024,2048", help="square n, comma-separated ('' for none)")
    ap.add_argument("--workload", default=None, help="also a shipped workload (deepbench)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--min-seconds", type=float, default=0.03,
                    help="each sample repeats the call to last at least this long (s)")
    ap.add_argument("--json")
    args = ap.parse_args()
    sep = ";" if ";" in args.kernels or ":" in args.kernels else ","
    contenders = []  # (label, kernel, blocking override or None)
    for item in args.kernels.split(sep):
        name, _, blk = item.strip().partition(":")
        try:
            kern = mk.get_kernel(name)
            override = _blocking_arg(blk) if blk else None
            if override:
                blocking_for(kern).replace(**override)  # values < 1 fail here, not mid-run
            contenders.append((item.strip(), kern, override))
        except (argparse.ArgumentTypeError, ValueError, mk.TileError,
                mk.IsaUnavailableError) as exc:
            ap.error(f"--kernels {item.strip()!r}: {exc}")
    problems = workloads.square([int(n) for n in args.sizes.split(",") if n])
    if args.workload:
        problems += workloads.load(args.workload)
    rng = np.random.default_rng(0)
    pause = 0.3 if args.threads > 1 else 0.0   # let spinning BLAS/OpenMP workers sleep
    print(f"numpy: {numpy_blas_info()}; {args.threads} thread(s); {args.rounds} rounds")
    rows = []
    with threadpool_limits(limits=args.threads, user_api="blas"):
        for p in problems:
            A, B = p.operands(rng)
            C = np.empty((p.m, p.n), np.float32)
            calls = {"numpy": lambda: np.matmul(A, B, out=C)}
            for label, k, blk in contenders:
                calls[label] = (lambda k=k, blk=blk: mk.gemm(A, B, C, kernel=k, threads=args.threads,
                                                              blocking=blk))
            inner = {}
            for name, f in calls.items():
                f()
                t0 = time.perf_counter()
                f()
                inner[name] = max(1, int(args.min_seconds / max(time.perf_counter() - t0, 1e-7)))
            times = {name: [] for name in calls}
            for _ in range(args.rounds):
                for name, f in calls.items():
                    time.sleep(pause)
                    f()
                    t0 = time.perf_counter()
                    for _ in range(inner[name]):
                        f()
                    times[name].append((time.perf_counter() - t0) / inner[name])
            for label, _, _ in contenders:
                ratios = [tn / tk for tn, tk in zip(times["numpy"], times[label])]
                q1, med, q3 = quartiles(ratios)
                row = {"shape": p.label, "kernel": label,
                       "gflops": p.flops / statistics.median(times[label]) / 1e9,
                       "numpy_gflops": p.flops / statistics.median(times["numpy"]) / 1e9,
                       "ratio": med, "ratio_q1": q1, "ratio_q3": q3}
                rows.append(row)
                print(f"{p.label:>16} {label:>16} {row['gflops']:7.1f} GFLOP/s  numpy "
                      f"{row['numpy_gflops']:7.1f}  ratio {med:.3f} (q1 {q1:.3f} q3 {q3:.3f})",
                      flush=True)
    print("median over shapes of the per-shape median ratio:")
    for label, _, _ in contenders:
        r = [row["ratio"] for row in rows if row["kernel"] == label]
        print(f"  {label:>16} {statistics.median(r):.3f}  (min {min(r):.3f}, max {max(r):.3f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"numpy": numpy_blas_info(), "threads": args.threads,
                       "rounds": args.rounds, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
