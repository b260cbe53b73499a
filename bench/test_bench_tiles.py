"""pytest-benchmark: tiles side by side with numpy, one group per problem shape and
thread count.

    pytest bench/ --benchmark-only [--benchmark-autosave] [--benchmark-compare]
    MICROKERNEL_BENCH_TILES=avx2_6x16,avx2_4x24 pytest bench/ --benchmark-only

Problems: square n in {256, 512, 1024, 2048} and the DeepBench shapes shipped in the
package, with 1 thread and then 2 on both sides (numpy's BLAS limited by
threadpoolctl). In each group numpy runs first; each tile's ``extra_info`` has its
GFLOP/s, % of the FMA peak (measured once per session) and ``ratio_vs_numpy`` (numpy's
median time / ours). Nothing here asserts a speed.
"""
import os
import time

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import microkernel as mk
from microkernel import bench
from microkernel.workloads import deepbench, square

TILES = [t for t in os.environ.get("MICROKERNEL_BENCH_TILES", "").split(",") if t] or mk.kernels()
PROBLEMS = square((256, 512, 1024, 2048)) + deepbench()
THREADS = (1, 2)
# numpy first in each (problem, threads) group, so the tiles can quote the ratio
CASES = [(p, t, tile) for t in THREADS for p in PROBLEMS for tile in ["numpy"] + TILES]
_NUMPY_MEDIAN: dict = {}


@pytest.fixture(scope="session")
def peak():
    return bench.measure_peak(mk.get_kernel(TILES[0]))


def _operands(p):
    A, B = p.operands(np.random.default_rng(0))
    return A, B, np.empty((p.m, p.n), np.float32)


@pytest.mark.parametrize("problem,threads,tile", CASES,
                         ids=[f"{p.label}-{t}T-{tile}" for p, t, tile in CASES])
def test_gemm(benchmark, problem, threads, tile, peak):
    benchmark.group = f"gemm {problem.label}, {threads} thread(s)"
    A, B, C = _operands(problem)
    if threads > 1:
        # the previous test's worker threads (OpenBLAS's spin for about 0.1 s after a
        # call, libgomp's too) would otherwise steal the cores from this one's
        time.sleep(0.3)
    with threadpool_limits(limits=threads, user_api="blas"):
        if tile == "numpy":
            benchmark(np.matmul, A, B, out=C)
        else:
            k = mk.get_kernel(tile)
            benchmark(mk.gemm, A, B, C, kernel=k, threads=threads)
    secs = benchmark.stats.stats.median
    gflops = problem.flops / secs / 1e9
    benchmark.extra_info["gflops"] = gflops
    benchmark.extra_info["pct_peak"] = 100 * gflops / (peak * threads)
    benchmark.extra_info["peak_gflops"] = peak
    if tile == "numpy":
        _NUMPY_MEDIAN[(problem, threads)] = secs
    elif (problem, threads) in _NUMPY_MEDIAN:
        benchmark.extra_info["ratio_vs_numpy"] = _NUMPY_MEDIAN[(problem, threads)] / secs


@pytest.mark.parametrize("tile", TILES)
def test_ukernel_l1(benchmark, tile, peak):
    """The micro-kernel alone on L1-resident packed panels (K = 256)."""
    benchmark.group = "micro-kernel in L1, K=256"
    k = mk.get_kernel(tile)
    reps = 2000
    benchmark(k.lib.mk_time_ukernel, 256, reps)
    secs = benchmark.stats.stats.median
    g = 2.0 * k.mr * k.nr * 256 * reps / secs / 1e9
    benchmark.extra_info["gflops"] = g
    benchmark.extra_info["pct_peak"] = 100 * g / peak
