"""pytest-benchmark: tiles side by side with numpy, one group per problem shape and
thread count.

    pytest bench/ --benchmark-only [--benchmark-autosave] [--benchmark-compare]
    MICROKERNEL_BENCH_TILES=avx2_6x16,avx2_4x24 pytest bench/ --benchmark-only

Problems: square n in {256, 512, 1024, 2048} and the DeepBench shapes shipped in the
package, with 1 thread and then 2 on both sides (numpy's BLAS limited by
threadpoolctl). pytest-benchmark times each call for its own tables and --compare;
the figures in each test's ``extra_info`` come from the project's timing engine
(:mod:`microkernel.timing`): for each (shape, threads) group, every tile and numpy in
the same interleaved rounds, the first time the group is met. ``extra_info`` has
GFLOP/s (median of the rounds), ``ratio_vs_numpy`` (numpy's time / ours, paired by
round, with its 95% interval) and % of the FMA peak (peak and L1 timed in the same
rounds, also with intervals). Nothing here asserts a speed.
"""
import os

import numpy as np
import pytest

import microkernel as mk
from microkernel import bench, peers, stats
from microkernel.timing import Rounds
from microkernel.workloads import deepbench, square

TILES = [t for t in os.environ.get("MICROKERNEL_BENCH_TILES", "").split(",") if t] or mk.kernels()
PROBLEMS = square((256, 512, 1024, 2048)) + deepbench()
THREADS = (1, 2)
ROUNDS = 5
CASES = [(p, t, tile) for t in THREADS for p in PROBLEMS for tile in ["numpy"] + TILES]
_GROUPS: dict = {}


@pytest.fixture(scope="session")
def l1_figures():
    """Peak and every tile's micro-kernel in L1, interleaved: bench.l1_figures."""
    ks = [mk.get_kernel(t) for t in TILES]
    r = Rounds(bench.l1_contenders(ks, mk.get_kernel()))
    for _ in range(ROUNDS):
        r.round()
    return bench.l1_figures(r, [k.label for k in ks])


def _group(problem, threads):
    """The engine's rounds for one (problem, threads) group, timed once."""
    key = (problem, threads)
    if key not in _GROUPS:
        ks = [mk.get_kernel(t) for t in TILES]
        with peers.limit_threads(threads, ["numpy"]):
            r = Rounds(bench.gemm_contenders(ks, [problem], threads=threads, peers=["numpy"]),
                       pause=0.3 if threads > 1 else 0.0)
            for _ in range(ROUNDS):
                r.round()
        _GROUPS[key] = r
    return _GROUPS[key]


@pytest.mark.parametrize("problem,threads,tile", CASES,
                         ids=[f"{p.label}-{t}T-{tile}" for p, t, tile in CASES])
def test_gemm(benchmark, problem, threads, tile, l1_figures):
    benchmark.group = f"gemm {problem.label}, {threads} thread(s)"
    A, B = problem.operands(np.random.default_rng(0))
    C = np.empty((problem.m, problem.n), np.float32)
    r = _group(problem, threads)
    with peers.limit_threads(threads, ["numpy"]):
        if tile == "numpy":
            benchmark(np.matmul, A, B, out=C)
        else:
            k = mk.get_kernel(tile)
            benchmark(mk.gemm, A, B, C, kernel=k, threads=threads)
    g = r.gflops(problem.label, tile)
    peak = l1_figures[bench.PEAK]["gflops"]
    benchmark.extra_info["gflops"] = g
    benchmark.extra_info["pct_peak"] = 100 * g / (peak * threads)
    benchmark.extra_info["peak_gflops"] = peak
    benchmark.extra_info["engine_rounds"] = ROUNDS
    if tile != "numpy":
        iv = stats.bootstrap(stats.paired_ratios(r.matrix("numpy"), r.matrix(tile)))
        benchmark.extra_info["ratio_vs_numpy"] = iv.point
        benchmark.extra_info["ratio_vs_numpy_interval"] = [iv.lo, iv.hi]


@pytest.mark.parametrize("tile", TILES)
def test_ukernel_l1(benchmark, tile, l1_figures):
    """The micro-kernel alone on L1-resident packed panels (K = 256)."""
    benchmark.group = "micro-kernel in L1, K=256"
    k = mk.get_kernel(tile)
    benchmark(k.lib.mk_time_ukernel, 256, 1000)
    f = l1_figures[k.label]
    benchmark.extra_info.update({x: f[x] for x in ("gflops", "gflops_lo", "gflops_hi",
                                                   "pct_peak", "pct_peak_lo", "pct_peak_hi")})
