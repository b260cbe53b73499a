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
from .threads import threads_for
from .timing import Contender, Rounds

__all__ = ["GemmEntry", "gemm_contenders", "l1_contenders", "PEAK", "l1_figures",
           "typed_operands", "kernel_peaks", "peak_name", "peak_contender", "paired_pct_peak",
           "WrongResult", "TILED_MIN", "tiled", "numpy_blas_info", "gflops_interval"]

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
    """One of our contenders: a display label, a loaded Kernel and its blocking (None:
    the analytical model's of each call; a dict: overrides of it; a Blocking: that one)."""
    label: str
    kernel: object
    blocking: object = None


def typed_operands(A, B, types: str, rng):
    """(A, B) of input ``types`` (microkernel.dtypes) from a problem's float32 operands,
    in the same layout (a transposed view stays one): floats rounded to bf16 / fp16;
    integers drawn afresh, uniform over the whole range of the type."""
    from .dtypes import get
    t = get(types)

    def conv(X, dtype):
        if dtype.kind == "f" or dtype == get("bf16").dtype("a"):
            return X.astype(dtype)
        info = np.iinfo(dtype)
        v = rng.integers(info.min, int(info.max) + 1, X.shape).astype(dtype)
        return np.asfortranarray(v) if X.flags.f_contiguous and not X.flags.c_contiguous else v
    return conv(A, t.dtype("a")), conv(B, t.dtype("b"))


def _typed_contenders(entries, problems, *, threads, peers, seed, check, types, progress):
    """gemm_contenders on typed inputs: our kernels (each checked with the bound of its
    own types: an f16h tile's fp16 accumulation), and each peer on what it offers for
    these inputs (:func:`microkernel.peers.typed_call`, checked with the bound of its
    arithmetic)."""
    from . import validate
    from .dtypes import get
    from .gemm import gemm
    t = get(types)
    rng = np.random.default_rng(seed)
    out = []
    for p in problems:
        A, B = typed_operands(*p.operands(rng), types, rng)
        C = np.empty((p.m, p.n), t.dtype("out"))
        tc = threads_for(p.m, p.n, p.k, most=threads)
        calls = [Contender(e.label, (lambda A=A, B=B, C=C, k=e.kernel, blk=e.blocking:
                                     gemm(A, B, C, kernel=k, threads=tc, blocking=blk)),
                           p.flops, p.label) for e in entries]
        tp = {name: peers_mod.typed_call(name, A, B, types) for name in peers}
        calls += [Contender(name, tp[name].fn, p.flops, p.label, reference=True)
                  for name in peers]
        if check:
            zero = np.zeros((p.m, p.n), np.float32)
            refs = {}

            def ref(kind, A=A, B=B, zero=zero, refs=refs):
                if kind not in refs:
                    refs[kind] = validate.reference(A, B, zero, 1, 0, kind)
                return refs[kind]
            with peers_mod.limit_threads(threads, list(peers)):
                for e, c in zip(entries, calls):
                    C.fill(np.iinfo(np.int32).min if t.integer else np.nan)
                    c.fn()
                    r, bound = ref(e.kernel.spec.types)
                    ok, _, _, detail = validate.check(C, r, bound)
                    if not ok:
                        raise WrongResult(f"{c.name} on {p.label} ({types}): wrong result ({detail})")
                for name in peers:
                    tp[name].fn()
                    r, bound = ref(tp[name].check_types)
                    bound = bound + tp[name].result_rounding * np.abs(r)
                    ok, _, _, detail = validate.check(tp[name].result(), r, bound)
                    if not ok:
                        raise WrongResult(f"{name} ({tp[name].what}) on {p.label}: wrong "
                                          f"result ({detail})")
            _checked(progress, p, problems)
        out += calls
    return out


def _checked(progress, p, problems) -> None:
    """Tell ``progress`` (a callable taking a line, or None) that problem p was checked."""
    if progress is not None:
        i = next(i for i, q in enumerate(problems) if q is p)
        progress(f"checked {i + 1} of {len(problems)} shapes against float64 ({p.label})")


def gemm_contenders(entries, problems, *, threads: int = 1, peers=("numpy",),
                    seed: int = 0, check: bool = True, types: str = "f32",
                    progress=None) -> list[Contender]:
    """Contenders for ``gemm()`` with each entry (:class:`GemmEntry`, or a loaded
    Kernel) and each peer on each problem (one operand set per problem, C shared).

    With ``check``, every contender's C is computed once per problem (C poisoned with
    NaN first) and compared against the float64 reference with the bound of
    :func:`microkernel.validate.reference`; a result out of bound raises
    :class:`WrongResult` naming the contender and the shape, before any timing;
    ``progress`` (a callable taking a line of text), when given, hears of each shape
    checked.

    Our calls run :func:`microkernel.threads.threads_for` (m, n, k, most=``threads``)
    threads: ``threads`` at most, fewer for a small problem, as gemm()'s default count
    and numpy's BLAS under a limit of ``threads`` choose; the peers get ``threads`` as
    their limit (:func:`microkernel.peers.limit_threads`).

    ``types`` (microkernel.dtypes, default fp32): the operands of that type
    (:func:`typed_operands`) and the peers on them (:mod:`microkernel.peers`: numpy on
    the float32 upcast, torch on the native dtype where it has a GEMM for it).
    """
    from . import validate
    from .gemm import gemm
    entries = [e if isinstance(e, GemmEntry) else GemmEntry(e.label, e) for e in entries]
    if types != "f32":
        return _typed_contenders(entries, problems, threads=threads, peers=peers, seed=seed,
                                 check=check, types=types, progress=progress)
    rng = np.random.default_rng(seed)
    out = []
    for p in problems:
        A, B = p.operands(rng)
        C = np.empty((p.m, p.n), np.float32)
        tc = threads_for(p.m, p.n, p.k, most=threads)
        calls = []
        for e in entries:
            fn = (lambda A=A, B=B, C=C, k=e.kernel, blk=e.blocking, tc=tc:
                  gemm(A, B, C, kernel=k, threads=tc, blocking=blk))
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
            _checked(progress, p, problems)
        out += calls
    return out


def peak_name(kernel) -> str:
    """The L1 race's name of the peak loop a kernel's module holds:
    ``fma_peak:<isa>/<types>`` (the instruction its tiles of those types are made of)."""
    return f"{PEAK}:{kernel.spec.isa}/{kernel.spec.types}"


def _peak_key(kernel):
    from .codegen import generate_peak
    return generate_peak(kernel.spec.isa, kernel.spec.types)


def kernel_peaks(kernels) -> dict[str, str]:
    """{kernel label: the name of its own peak contender} (:func:`peak_name` of the
    first kernel with the same peak loop), for :func:`l1_contenders` ``own_peaks``.
    Scalar tiles get :data:`PEAK`, the best vector ISA's fp32 FMA peak: the compiler
    vectorises their plain C, and the scalar multiply-add loop is latency-bound (see
    :mod:`microkernel.analysis.measured`), so a scalar tile read 116-289% of it."""
    first: dict = {}
    out = {}
    for k in kernels:
        out[k.label] = (PEAK if k.spec.isa == "scalar" else
                        first.setdefault(_peak_key(k), peak_name(k)))
    return out


def l1_contenders(kernels, peak_kernel, *, kc: int = 256, reps: int = 1000,
                  peak_iters: int = 200_000, own_peaks: bool = False) -> list[Contender]:
    """The FMA peak loop of ``peak_kernel``'s ISA (contender :data:`PEAK`) and the
    micro-kernel of each kernel in L1 (``reps`` calls on one packed kc-deep panel pair
    per sample), all of shape ``"L1"``. GFLOP/s come from the engine's clock around
    each call; the panels' setup inside ``mk_time_ukernel`` is (MR + NR) x kc floats,
    well under 1% of ``reps`` calls.

    ``own_peaks``: also each kernel's own peak loop, once per distinct loop
    (:func:`kernel_peaks` names them): vdpbf16ps for avx512bf16 tiles, tdpbf16ps for
    amx bf16 ones, the fp32 FMA for the widening tiles, so that
    :func:`l1_figures` can give every kernel's % of its own instruction's peak. The
    AMX peak's iterations are scaled down (one iteration is 4 tile products, 64+
    cycles, against 16 FMAs)."""
    out = [peak_contender(PEAK, peak_kernel, peak_iters)]
    if own_peaks:
        names = kernel_peaks(kernels)
        seen = {PEAK}
        for k in kernels:
            if names[k.label] not in seen:
                seen.add(names[k.label])
                out.append(peak_contender(names[k.label], k, peak_iters))
    for k in kernels:
        def ukernel(k=k):
            if k.lib.mk_time_ukernel(kc, reps) < 0:
                raise MemoryError("mk_time_ukernel could not allocate its panels")
        out.append(Contender(k.label, ukernel, 2.0 * k.mr * k.nr * kc * reps, "L1"))
    return out


def peak_contender(name, kernel, peak_iters: int = 200_000, shape: str = "L1") -> Contender:
    """Contender ``name`` on ``shape``: ``kernel``'s module's peak loop (``mk_fma_peak``:
    independent chains of its instruction, no memory operands), ``peak_iters``
    iterations per call (an AMX iteration is 4 tile products: 1/16 as many); its
    ``flops`` is what the loop reports per call."""
    flops = kernel.ffi.new("double *")
    iters = max(1000, peak_iters // 16) if kernel.spec.isa == "amx" else peak_iters
    kernel.lib.mk_fma_peak(1000 if kernel.spec.isa != "amx" else 100, flops)
    per_iter = flops[0] / (1000 if kernel.spec.isa != "amx" else 100)
    return Contender(name, lambda: kernel.lib.mk_fma_peak(iters, flops), per_iter * iters, shape)


def paired_pct_peak(rounds: Rounds, shape: str, name: str, peak: str) -> stats.Interval:
    """% of the peak of contender ``name`` on ``shape``, paired by round with the peak
    loop ``peak`` timed on the same shape (so in the same seconds of the same round):
    per round 100 x (flops / t) / (peak flops / t_peak), the median over rounds with
    its bootstrap interval (:func:`microkernel.stats.bootstrap`). On a host whose
    speed moves between rounds (a shared core, a throttled clock) this is the figure
    that holds; a peak taken in another phase is not. Raises ValueError when no round
    timed both."""
    i = rounds.shapes.index(shape)
    ours, ref = rounds.matrix(name)[i:i + 1], rounds.matrix(peak)[i:i + 1]
    scale = 100 * rounds.contender(shape, name).flops / rounds.contender(shape, peak).flops
    return stats.bootstrap(scale * stats.paired_ratios(ref, ours))


def l1_figures(rounds: Rounds, names, peaks: dict | None = None) -> dict[str, dict]:
    """Per kernel in an L1 race: GFLOP/s (median) and % of the peak measured in the
    same rounds, each with its bootstrap interval; and the peak's own GFLOP/s.
    ``peaks`` ({kernel: peak contender name}, :func:`kernel_peaks`): each kernel against
    its own peak (default :data:`PEAK` for all); every peak gets its own entry, and
    each kernel's entry says which (``peak``)."""
    peaks = peaks or {}
    out = {}
    peak_g = {}
    for pname in {PEAK, *peaks.values()}:
        c = rounds.contender("L1", pname)
        peak_g[pname] = c.flops / rounds.matrix(pname)[0] / 1e9
        out[pname] = gflops_interval(peak_g[pname])
    for name in names:
        c = rounds.contender("L1", name)
        g = c.flops / rounds.matrix(name)[0] / 1e9
        pname = peaks.get(name, PEAK)
        iv = stats.bootstrap((g / peak_g[pname])[None, :])
        out[name] = {**gflops_interval(g), "pct_peak": 100 * iv.point,
                     "pct_peak_lo": 100 * iv.lo, "pct_peak_hi": 100 * iv.hi, "peak": pname}
    return out


def gflops_interval(g: np.ndarray) -> dict:
    """GFLOP/s of one contender's rounds ``g`` (R,): the median and its 95% bootstrap
    interval over rounds (``gflops``, ``gflops_lo``, ``gflops_hi``) and the rounds."""
    iv = stats.bootstrap(g[None, :])   # geometric mean of one shape = the median
    return {"gflops": iv.point, "gflops_lo": iv.lo, "gflops_hi": iv.hi,
            "rounds": [float(x) for x in g]}
