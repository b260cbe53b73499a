"""What the timing engine times: GEMM calls, the micro-kernel in L1, the FMA peak.

Builds :class:`microkernel.timing.Contender` lists for the engine and reads the
figures back out of its rounds; every comparison is paired by round
(:mod:`microkernel.stats`). Used by ``microkernel bench``, ``compare`` and ``sweep``
and by the pytest-benchmark suite.

* :func:`gemm_contenders`: ``gemm()`` with each kernel (and blocking) and the peer
  libraries (:mod:`microkernel.peers`) on each problem, on one operand set per problem
  shared by all contenders, every result checked once against the float64 reference
  of :mod:`microkernel.validate` before any timing.
* :func:`l1_contenders`: the FMA peak loop of an ISA and each kernel's micro-kernel
  on packed panels hot in L1 (``mk_time_ukernel``: kc x (MR + NR) floats), so that
  "% of peak" is a ratio of two figures taken in the same rounds, with one statistic.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from . import peers as peers_mod
from . import stats
from .timing import Contender, Rounds

__all__ = ["GemmEntry", "gemm_contenders", "l1_contenders", "PEAK", "l1_figures",
           "WrongResult", "TILED_MIN", "tiled", "numpy_blas_info"]

#: the peak loop's contender name in an L1 race
PEAK = "fma_peak"
#: problems with min(m, n) below this take the driver's GEMV path, not the register tile
TILED_MIN = 16


class WrongResult(ValueError):
    """A contender's result fell outside the float64 reference's bound."""


def tiled(problems) -> list:
    """The problems that exercise the register tile: min(m, n) >= TILED_MIN (n = 1 and
    m = 1 take the driver's GEMV path, the same code for every tile)."""
    return [p for p in problems if min(p.m, p.n) >= TILED_MIN]


def numpy_blas_info() -> str:
    """Which BLAS numpy uses here, e.g. 'numpy (openblas 0.3.31 Haswell)'."""
    return peers_mod.describe("numpy")


@dataclasses.dataclass(frozen=True)
class GemmEntry:
    """One of our contenders: a display label, a loaded Kernel and its blocking
    (None: the analytical model's)."""
    label: str
    kernel: object
    blocking: object = None


def gemm_contenders(entries, problems, *, threads: int = 1, peers=("numpy",),
                    seed: int = 0, check: bool = True) -> list[Contender]:
    """Contenders for ``gemm()`` with each entry (:class:`GemmEntry`, or a loaded
    Kernel) and each peer on each problem (one operand set per problem, C shared).

    With ``check``, every contender's C is computed once per problem (C poisoned with
    NaN first) and compared against the float64 reference with the bound of
    :func:`microkernel.validate.reference`; a result out of bound raises
    :class:`WrongResult` naming the contender and the shape, before any timing.
    """
    from . import validate
    from .gemm import gemm
    rng = np.random.default_rng(seed)
    entries = [e if isinstance(e, GemmEntry) else GemmEntry(e.label, e) for e in entries]
    out = []
    for p in problems:
        A, B = p.operands(rng)
        C = np.empty((p.m, p.n), np.float32)
        calls = []
        for e in entries:
            fn = (lambda A=A, B=B, C=C, k=e.kernel, blk=e.blocking:
                  gemm(A, B, C, kernel=k, threads=threads, blocking=blk))
            calls.append(Contender(e.label, fn, p.flops, p.label))
        for name in peers:
            calls.append(Contender(name, peers_mod.call(name, A, B, C), p.flops, p.label,
                                   reference=True))
        if check:
            ref, bound = validate.reference(A, B, C, 1.0, 0.0)
            with peers_mod.limit_threads(threads, [c.name for c in calls if c.reference]):
                for c in calls:
                    C.fill(np.nan)
                    c.fn()
                    ok, _, _, detail = validate.check(C, ref, bound)
                    if not ok:
                        raise WrongResult(f"{c.name} on {p.label}: wrong result ({detail})")
        out += calls
    return out


def l1_contenders(kernels, peak_kernel, *, kc: int = 256, reps: int = 1000,
                  peak_iters: int = 200_000) -> list[Contender]:
    """The FMA peak loop of ``peak_kernel``'s ISA (contender :data:`PEAK`) and the
    micro-kernel of each kernel in L1 (``reps`` calls on one packed kc-deep panel pair
    per sample), all of shape ``"L1"``. GFLOP/s come from the engine's clock around
    each call; the panels' setup inside ``mk_time_ukernel`` is (MR + NR) x kc floats,
    well under 1% of ``reps`` calls."""
    flops = peak_kernel.ffi.new("double *")
    peak_kernel.lib.mk_fma_peak(1000, flops)
    per_iter = flops[0] / 1000
    out = [Contender(PEAK, lambda: peak_kernel.lib.mk_fma_peak(peak_iters, flops),
                     per_iter * peak_iters, "L1")]
    for k in kernels:
        def ukernel(k=k):
            if k.lib.mk_time_ukernel(kc, reps) < 0:
                raise MemoryError("mk_time_ukernel could not allocate its panels")
        out.append(Contender(k.label, ukernel, 2.0 * k.mr * k.nr * kc * reps, "L1"))
    return out


def l1_figures(rounds: Rounds, names) -> dict[str, dict]:
    """Per kernel in an L1 race: GFLOP/s (median) and % of the peak measured in the
    same rounds, each with its bootstrap interval; and the peak's own GFLOP/s."""
    peak_c = rounds.contender("L1", PEAK)
    peak_t = rounds.matrix(PEAK)[0]
    peak_g = peak_c.flops / peak_t / 1e9
    out = {PEAK: _gflops_interval(peak_g)}
    for name in names:
        c = rounds.contender("L1", name)
        g = c.flops / rounds.matrix(name)[0] / 1e9
        iv = stats.bootstrap((g / peak_g)[None, :])
        out[name] = {**_gflops_interval(g), "pct_peak": 100 * iv.point,
                     "pct_peak_lo": 100 * iv.lo, "pct_peak_hi": 100 * iv.hi}
    return out


def _gflops_interval(g: np.ndarray) -> dict:
    iv = stats.bootstrap(g[None, :])   # geometric mean of one shape = the median
    return {"gflops": iv.point, "gflops_lo": iv.lo, "gflops_hi": iv.hi,
            "rounds": [float(x) for x in g]}
