"""Measurements: the FMA peak, the micro-kernel in L1, and gemm() against numpy.

Every number is taken in the same process and run, medians over repeats, and
reported as GFLOP/s, % of the FMA peak measured here, and the ratio to
``numpy.matmul`` timed side by side (interleaved, same thread count on both sides
via threadpoolctl). The machines are shared and noisy: compare ratios, not lone
absolute times.
"""
from __future__ import annotations

import dataclasses
import statistics
import time

import numpy as np

__all__ = ["measure_peak", "time_l1", "GemmTiming", "time_gemm_vs_numpy",
           "numpy_blas_info", "median_ratio"]


def measure_peak(kernel, repeats: int = 5, seconds: float = 0.05) -> float:
    """FMA peak of one core for ``kernel``'s ISA in GFLOP/s: the best of ``repeats``
    runs of independent FMA chains (generated mk_fma_peak). The best, not the median:
    the peak is a capability, and on a shared machine any run can only be slowed."""
    iters = 1_000_000
    while True:  # size the loop to about `seconds`
        flops = kernel.ffi.new("double *")
        secs = kernel.lib.mk_fma_peak(iters, flops)
        if secs >= seconds * 0.5 or iters > 1 << 34:
            break
        iters = int(iters * max(2.0, seconds / max(secs, 1e-6)))
    return max(kernel.fma_peak(iters) for _ in range(repeats))


def time_l1(kernel, kc: int = 256, repeats: int = 15, seconds: float = 0.03) -> float:
    """Micro-kernel GFLOP/s with packed panels hot in L1 (median of ``repeats``);
    kc * (MR + NR) * 4 bytes must fit L1 for the name to be true."""
    flops_per_call = 2.0 * kernel.mr * kernel.nr * kc
    reps = 1000
    secs = kernel.lib.mk_time_ukernel(kc, reps)
    reps = max(100, int(reps * seconds / max(secs, 1e-7)))
    return statistics.median(
        flops_per_call * reps / kernel.lib.mk_time_ukernel(kc, reps) / 1e9
        for _ in range(repeats))


def numpy_blas_info() -> str:
    """Which BLAS numpy uses here (threadpoolctl), e.g. 'openblas 0.3.31 Haswell'."""
    try:
        from threadpoolctl import threadpool_info
        for pool in threadpool_info():
            if pool.get("user_api") == "blas":
                return (f"{pool.get('internal_api')} {pool.get('version')} "
                        f"{pool.get('architecture', '')}").strip()
    except Exception:  # pragma: no cover - informational only
        pass
    return "unknown"


@dataclasses.dataclass
class GemmTiming:
    label: str
    flops: int
    ours_s: float            # median seconds
    numpy_s: float
    threads: int
    #: numpy's time / ours for each pair of adjacent samples: their spread says whether a
    #: ratio differs from 1 in this run
    pair_ratios: tuple[float, ...] = ()

    @property
    def ours_gflops(self) -> float:
        return self.flops / self.ours_s / 1e9

    @property
    def numpy_gflops(self) -> float:
        return self.flops / self.numpy_s / 1e9

    @property
    def ratio(self) -> float:
        """ours / numpy in GFLOP/s (> 1: we are faster)."""
        return self.numpy_s / self.ours_s

    @property
    def ratio_quartiles(self) -> tuple[float, float] | None:
        """First and third quartiles of the paired sample ratios (None below 4 pairs)."""
        if len(self.pair_ratios) < 4:
            return None
        q = statistics.quantiles(self.pair_ratios, n=4)
        return q[0], q[2]


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def time_gemm_vs_numpy(kernel, problems, *, threads: int = 1, repeats: int = 5,
                       min_seconds: float = 0.02, seed: int = 0,
                       blocking=None) -> list[GemmTiming]:
    """Time ``gemm(A, B, C, kernel=kernel, threads=threads)`` and ``numpy.matmul(A, B,
    out=C)`` on each problem, one after the other in the same run, with numpy's BLAS
    limited to ``threads``.

    Each timed sample repeats the call enough times to last ``min_seconds``; the two
    sides' samples alternate (ours, numpy, ours, ...), so that a slow spell of a
    shared machine hits both, and the median of ``repeats`` samples per side is kept.
    With several threads a pause separates the samples: OpenBLAS's and libgomp's
    worker threads spin after a call and would steal the cores from the other side.
    numpy is timed again for every kernel, so that each of a sweep's tiles gets its own
    side-by-side samples. (With numpy timed once, beside the first tile, a sweep on the
    lent Sapphire Rapids host reported 1.69x numpy on DeepBench for the tile that
    ``microkernel bench`` had measured at 0.94-1.16 on the tiled DeepBench shapes a
    minute before.)
    ``blocking`` overrides the model's KC/MC/NC for our side.
    """
    from threadpoolctl import threadpool_limits

    from .gemm import gemm
    rng = np.random.default_rng(seed)
    out = []
    # OpenBLAS workers spin for up to about 0.1 s after a call (THREAD_TIMEOUT 2**28
    # cycles by default): let them sleep before timing the other side.
    pause = 0.3 if threads > 1 else 0.0
    with threadpool_limits(limits=threads, user_api="blas"):
        for p in problems:
            A, B = p.operands(rng)
            C = np.empty((p.m, p.n), dtype=np.float32)
            ours = lambda: gemm(A, B, C, kernel=kernel, threads=threads, blocking=blocking)  # noqa: E731
            ref = lambda: np.matmul(A, B, out=C)  # noqa: E731
            ref()
            time.sleep(pause)
            ours()
            t_one = _median_time(ours, 3)
            inner = max(1, int(min_seconds / max(t_one, 1e-7)))

            def sample(f):
                f()  # untimed: after a pause the caches and the worker threads are cold
                t0 = time.perf_counter()
                for _ in range(inner):
                    f()
                return (time.perf_counter() - t0) / inner

            o_times, n_times = [], []
            for _ in range(repeats):
                time.sleep(pause)
                o_times.append(sample(ours))
                time.sleep(pause)
                n_times.append(sample(ref))
            pairs = tuple(nt / ot for ot, nt in zip(o_times, n_times))
            out.append(GemmTiming(p.label, p.flops, statistics.median(o_times),
                                  statistics.median(n_times), threads, pairs))
    return out


def median_ratio(timings) -> float:
    return statistics.median(t.ratio for t in timings) if timings else float("nan")
