"""pytest-benchmark: tiles side by side with numpy, one group per problem shape.

    pytest bench/ --benchmark-only [--benchmark-autosave] [--benchmark-compare]
    MICROKERNEL_BENCH_TILES=avx2_6x16,avx2_4x24 pytest bench/ --benchmark-only

GFLOP/s and % of the FMA peak (measured once per session) go to ``extra_info``;
the tile name is in the test id. Single thread on both sides (threadpoolctl).
Nothing here asserts a speed.
"""
import os

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import microkernel as mk
from microkernel import bench
from microkernel.workloads import deepbench, square

TILES = [t for t in os.environ.get("MICROKERNEL_BENCH_TILES", "").split(",") if t] or mk.kernels()
PROBLEMS = square((256, 512, 1024)) + [p for p in deepbench() if min(p.m, p.n) >= 16][:6]


@pytest.fixture(scope="session")
def peak():
    return bench.measure_peak(mk.get_kernel(TILES[0]))


@pytest.fixture(scope="session", autouse=True)
def one_thread():
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _operands(p):
    A, B = p.operands(np.random.default_rng(0))
    return A, B, np.empty((p.m, p.n), np.float32)


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.label)
@pytest.mark.parametrize("tile", TILES + ["numpy"])
def test_gemm(benchmark, tile, problem, peak):
    benchmark.group = f"gemm {problem.label}"
    A, B, C = _operands(problem)
    if tile == "numpy":
        benchmark(np.matmul, A, B, out=C)
    else:
        k = mk.get_kernel(tile)
        benchmark(mk.gemm, A, B, C, kernel=k, threads=1)
    secs = benchmark.stats.stats.median
    benchmark.extra_info["gflops"] = problem.flops / secs / 1e9
    benchmark.extra_info["pct_peak"] = 100 * problem.flops / secs / 1e9 / peak
    benchmark.extra_info["peak_gflops"] = peak


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
