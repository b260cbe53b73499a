"""Does a padded leading dimension or a smaller MC help gemm() at n = 1024 and 2048?
Interleaves, round by round: numpy.matmul, gemm() as given, gemm() into a C whose row
stride is n + 16 floats (then A and B too), and gemm() with MC = 96 (and KC = 192).
Rows a multiple of 4 KiB apart put the MR rows of a C tile in the same L1 sets as part
of the B micro-panel; a smaller MC shrinks the packed A block that must stay in L2.
Also prints the transparent-huge-page setting and AnonHugePages (numpy madvises its
large arrays).

    K=avx512_8x32_u4 python bench/ldc_mc_ab.py [rounds]

Output: per variant, the median GFLOP/s (2*n^3 flops / s) and the median per-round
ratio numpy time / our time with its first and third quartiles.
"""
import os
import statistics
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

import microkernel as mk


def anon_huge() -> str:
    with open("/proc/meminfo") as f:
        return next((line.strip() for line in f if line.startswith("AnonHugePages")), "?")


def padded(X, pad=16):
    """X's values in a view whose row stride is (n + pad) floats."""
    Y = np.empty((X.shape[0], X.shape[1] + pad), np.float32)[:, :X.shape[1]]
    Y[...] = X
    return Y


def main():
    for f in ("/sys/kernel/mm/transparent_hugepage/enabled",
              "/sys/kernel/mm/transparent_hugepage/defrag"):
        try:
            with open(f) as fh:
                print(f, fh.read().strip())
        except OSError as exc:
            print(f, exc)
    print("before", anon_huge())
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    if rounds < 2:
        raise SystemExit("ldc_mc_ab.py: rounds must be >= 2 (quartiles of the per-round ratios)")
    k = mk.get_kernel(os.environ.get("K"))
    print("kernel", k.name)
    with threadpool_limits(limits=1, user_api="blas"):
        for n in (1024, 2048):
            rng = np.random.default_rng(0)
            A = rng.standard_normal((n, n), dtype=np.float32)
            B = rng.standard_normal((n, n), dtype=np.float32)
            C = np.empty((n, n), np.float32)
            Ap, Bp, Cp = padded(A), padded(B), padded(C)
            calls = {
                "numpy": lambda: np.matmul(A, B, out=C),
                "ours": lambda: mk.gemm(A, B, C, kernel=k),
                "ours ldc+16": lambda: mk.gemm(A, B, Cp, kernel=k),
                "ours all ld+16": lambda: mk.gemm(Ap, Bp, Cp, kernel=k),
                "ours mc=96": lambda: mk.gemm(A, B, C, kernel=k, blocking={"mc": 96}),
                "ours mc=96 ld+16": lambda: mk.gemm(Ap, Bp, Cp, kernel=k, blocking={"mc": 96}),
                "ours kc=192,mc=96 ld+16": lambda: mk.gemm(Ap, Bp, Cp, kernel=k,
                                                           blocking={"kc": 192, "mc": 96}),
            }
            print(f"n={n} after allocation", anon_huge())
            inner = max(1, int(0.03 / (2 * n**3 / 120e9)))
            times = {c: [] for c in calls}
            for f in calls.values():
                f()
            for _ in range(rounds):
                for c, f in calls.items():
                    t0 = time.perf_counter()
                    for _ in range(inner):
                        f()
                    times[c].append((time.perf_counter() - t0) / inner)
            for c in calls:
                r = [a / b for a, b in zip(times["numpy"], times[c])]
                q = statistics.quantiles(r, n=4)
                print(f"n={n} {c:>24} {2 * n**3 / statistics.median(times[c]) / 1e9:7.1f} "
                      f"GFLOP/s  vs numpy {statistics.median(r):.3f} ({q[0]:.3f}-{q[2]:.3f})",
                      flush=True)


if __name__ == "__main__":
    main()
