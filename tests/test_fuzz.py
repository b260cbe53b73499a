"""Property-based fuzzing of ``microkernel.gemm`` (issue 7, item 3).

Every runnable kernel (``microkernel.kernels()`` plus user tiles of odd shapes and
k-unrolls for each usable ISA), shapes 0..300 (small most of the time, every
remainder mod MR / NR reachable), every stride sign, zero strides (broadcast
inputs), views inside larger buffers, unaligned (4 bytes past a 64-byte boundary)
and misaligned (1-3 bytes: gemm copies them) data, alpha/beta in {0, 1, -1, random},
1 or 2 threads, small blockings that run every loop of the driver, and non-finite
values where BLAS semantics say what must happen:

* beta == 0 with NaN/Inf in C: they must not survive;
* alpha == 0 with NaN/Inf in A and B: A and B must not be read;
* NaN/Inf in A, B (alpha != 0) or C (beta != 0): they propagate exactly as in the
  float64 reference (NaN where it is NaN, the same infinity where it is infinite).

Storage of A and B outside their views holds NaN (a wrong element read makes the
result NaN); storage of C outside its view holds a guard value that must survive;
A and B must be unchanged. Results are checked with ``microkernel.validate``'s
reference and bound.

Reproducible in CI: ``derandomize=True`` and no example database; > 10,000 examples
in total (counted and asserted per test). A falsifying example is printed by
hypothesis as ``Problem(...)``: paste it into :data:`REGRESSIONS` (it then runs on
every test run, and as an ``@example`` of the main fuzz test).
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

import microkernel as mk
from microkernel import validate
from microkernel.tile import TileSpec


def _kernel_names() -> list[str]:
    names = list(mk.kernels())
    usable = set(mk.probe().isas)
    if "avx2" in usable:       # user tiles: odd MR, NR of 2 and 3 vectors, k-unroll 4 and 3
        names += ["avx2_5x16_u4", "avx2_3x24_u3"]
    if "avx512" in usable:
        names += ["avx512_5x32_u4", "avx512_7x16_u3"]
    names += ["scalar_3x5_u4", "scalar_2x7_u2"]
    return names


KERNELS = _kernel_names()
SPECS = {n: TileSpec.from_name(n) for n in KERNELS}
SPECIALS = ("none", "nan_c_beta0", "bad_ab_alpha0", "bad_a", "bad_b", "bad_c")
GUARD = validate.GUARD


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where a (rows, cols) view lives: storage order, element steps, flips, pad
    elements around it, the data's byte offset past a 64-byte boundary (4: unaligned
    vectors; 1..3: misaligned elements), and zero strides (inputs only)."""
    order: str = "C"
    step_r: int = 1
    step_c: int = 1
    neg_r: bool = False
    neg_c: bool = False
    pad: int = 0
    byte_off: int = 0
    bcast_r: bool = False
    bcast_c: bool = False


@dataclasses.dataclass(frozen=True)
class Problem:
    kernel: str
    m: int
    n: int
    k: int
    alpha: float = 1.0
    beta: float = 0.0
    la: Layout = Layout()
    lb: Layout = Layout()
    lc: Layout = Layout()
    special: str = "none"
    threads: int = 1
    blocking: tuple | None = None     # (kc, mc, nc)
    seed: int = 0


# -- materialising a Problem -----------------------------------------------------------

def _storage(shape, order: str, byte_off: int) -> np.ndarray:
    """A float32 array of ``shape`` whose data starts byte_off bytes past 64-byte
    alignment (any byte_off: numpy allows misaligned arrays)."""
    nbytes = int(np.prod(shape)) * 4
    raw = np.empty(nbytes + 128, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64 + byte_off
    r, c = shape
    strides = (4 * c, 4) if order == "C" else (4, 4 * r)
    return np.ndarray(shape, dtype=np.float32, buffer=raw, offset=start, strides=strides)


def make_view(rows: int, cols: int, lay: Layout, values: np.ndarray, gap):
    """(view, storage, mask): a (rows, cols) view holding ``values`` inside storage
    filled with ``gap``; mask marks the storage elements the view covers."""
    sr = 0 if lay.bcast_r else lay.step_r
    sc = 0 if lay.bcast_c else lay.step_c
    span_r = 0 if rows == 0 else (rows - 1) * sr + 1
    span_c = 0 if cols == 0 else (cols - 1) * sc + 1
    base = _storage((span_r + 2 * lay.pad, span_c + 2 * lay.pad), lay.order, lay.byte_off)
    base[...] = gap
    p = lay.pad
    v = base[p:p + span_r:max(sr, 1), p:p + span_c:max(sc, 1)]
    mask = np.zeros(base.shape, dtype=bool)
    mask[p:p + span_r:max(sr, 1), p:p + span_c:max(sc, 1)] = True
    if lay.neg_r:
        v = v[::-1]
    if lay.neg_c:
        v = v[:, ::-1]
    if lay.bcast_r or lay.bcast_c:
        v[...] = values[:v.shape[0], :v.shape[1]]
        v = np.lib.stride_tricks.as_strided(
            v, shape=(rows, cols),
            strides=(0 if lay.bcast_r else v.strides[0], 0 if lay.bcast_c else v.strides[1]),
            writeable=False)
    else:
        v[...] = values
    return v, base, mask


def _sprinkle(rng, x: np.ndarray, frac: float):
    """Put NaN, +Inf and -Inf at a few random places of x (in place)."""
    if x.size == 0:
        return
    hits = rng.random(x.shape) < frac
    hits.flat[rng.integers(x.size)] = True
    x[hits] = rng.choice(np.array([np.nan, np.inf, -np.inf], np.float32), hits.sum())


def materialize(p: Problem):
    rng = np.random.default_rng(p.seed)
    a = rng.uniform(-1, 1, (p.m, p.k)).astype(np.float32)
    b = rng.uniform(-1, 1, (p.k, p.n)).astype(np.float32)
    c0 = rng.uniform(-1, 1, (p.m, p.n)).astype(np.float32)
    if p.la.bcast_r and p.m:
        a[1:] = a[:1]
    if p.la.bcast_c and p.k:
        a[:, 1:] = a[:, :1]
    if p.lb.bcast_r and p.k:
        b[1:] = b[:1]
    if p.lb.bcast_c and p.n:
        b[:, 1:] = b[:, :1]
    if p.special == "nan_c_beta0":
        _sprinkle(rng, c0, 0.5)
    elif p.special == "bad_ab_alpha0":
        _sprinkle(rng, a, 0.5)
        _sprinkle(rng, b, 0.5)
    elif p.special == "bad_a" and not (p.la.bcast_r or p.la.bcast_c):
        _sprinkle(rng, a, 0.02)
    elif p.special == "bad_b" and not (p.lb.bcast_r or p.lb.bcast_c):
        _sprinkle(rng, b, 0.02)
    elif p.special == "bad_c":
        _sprinkle(rng, c0, 0.05)
    A, baseA, _ = make_view(p.m, p.k, p.la, a, np.nan)
    B, baseB, _ = make_view(p.k, p.n, p.lb, b, np.nan)
    C, baseC, maskC = make_view(p.m, p.n, p.lc, c0, GUARD)
    return A, B, C, c0, baseA, baseB, baseC, maskC


def exact_reference(A, B, C0, alpha: float, beta: float):
    """validate.reference, but summing products explicitly (no BLAS), so NaN/Inf in
    A or B propagate exactly as IEEE arithmetic says, whatever BLAS shortcuts."""
    A64, B64, C64 = (np.asarray(x, dtype=np.float64) for x in (A, B, C0))
    m, k = A64.shape
    n = B64.shape[1]
    ref = np.zeros((m, n))
    bound = np.zeros((m, n))
    with np.errstate(invalid="ignore", over="ignore"):
        if alpha != 0 and k > 0:
            ref += alpha * (A64[:, :, None] * B64[None, :, :]).sum(axis=1)
            bound += abs(alpha) * (np.abs(A64)[:, :, None] * np.abs(B64)[None, :, :]).sum(axis=1)
        if beta != 0:
            ref += beta * C64
            bound += abs(beta) * np.abs(C64)
    bound *= validate.C_BOUND * (k + 2) * validate.U
    return ref, bound


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.uint32).copy()


def run_problem(p: Problem) -> None:
    A, B, C, c0, baseA, baseB, baseC, maskC = materialize(p)
    a_before, b_before = _bits(baseA), _bits(baseB)
    C0 = np.array(C, dtype=np.float32)
    blocking = None if p.blocking is None else dict(zip(("kc", "mc", "nc"), p.blocking))
    kern = mk.get_kernel(SPECS[p.kernel] if p.kernel in SPECS else p.kernel)
    out = mk.gemm(A, B, C, alpha=p.alpha, beta=p.beta, kernel=kern, threads=p.threads,
                  blocking=blocking)
    assert out is C
    assert np.array_equal(_bits(baseA), a_before), f"{p}: A was written"
    assert np.array_equal(_bits(baseB), b_before), f"{p}: B was written"
    if p.special in ("bad_a", "bad_b", "bad_c"):
        ref, bound = exact_reference(A, B, C0, p.alpha, p.beta)
    else:
        ref, bound = validate.reference(A, B, C0, p.alpha, p.beta)
    finite = np.isfinite(ref)
    got = np.asarray(C, dtype=np.float64)
    if not finite.all():
        assert np.array_equal(np.isnan(got), np.isnan(ref)), f"{p}: NaN pattern differs"
        inf = np.isinf(ref)
        assert np.array_equal(got[inf], ref[inf]), f"{p}: infinities differ"
    ok, ratio, guard_ok, detail = validate.check(
        np.where(finite, got, 0.0), np.where(finite, ref, 0.0),
        np.where(finite, bound, 0.0), baseC, maskC)
    assert guard_ok, f"{p}: {detail}"
    assert ok, f"{p}: err/bound={ratio:.3g} {detail}"


# -- strategies ----------------------------------------------------------------------------

#: size classes, repeated to weight them; hypothesis shrinks towards the first
SIZE_CLASSES = ("tile",) * 6 + ("small",) * 3 + ("medium",) * 2 + ("large",)


@st.composite
def dims(draw, tile: int, classes=SIZE_CLASSES):
    cls = draw(st.sampled_from(classes))
    hi = {"tile": 2 * tile + 1, "small": 64, "medium": 160, "large": 300}[cls]
    return draw(st.integers(0, hi))


@st.composite
def layouts(draw, input_: bool):
    bcast = input_ and draw(st.integers(0, 19)) == 0
    return Layout(
        order=draw(st.sampled_from("CF")),
        step_r=draw(st.sampled_from((1, 1, 2, 3))),
        step_c=draw(st.sampled_from((1, 1, 2, 3))),
        neg_r=draw(st.booleans()),
        neg_c=draw(st.booleans()),
        pad=draw(st.sampled_from((0, 1, 3))),
        byte_off=draw(st.sampled_from((0, 0, 4, 8, 60, 1, 2, 3))),
        bcast_r=bcast and draw(st.booleans()),
        bcast_c=bcast and draw(st.booleans()),
    )


SCALARS = st.one_of(
    st.sampled_from((0.0, 1.0, -1.0, 0.5, 2.0)),
    st.floats(-4.0, 4.0, allow_nan=False, allow_subnormal=False).filter(
        lambda x: x == 0.0 or abs(x) >= 1e-3),
)


@st.composite
def problems(draw, specials=SPECIALS, classes=SIZE_CLASSES, blockings=True):
    name = draw(st.sampled_from(KERNELS))
    spec = SPECS[name]
    special = draw(st.sampled_from(specials))
    if special in ("bad_a", "bad_b", "bad_c"):     # explicit reference: keep it small
        classes = tuple(c for c in classes if c in ("tile", "small"))
    m = draw(dims(spec.mr, classes))
    n = draw(dims(spec.nr, classes))
    k = draw(dims(spec.k_unroll + 1, classes))
    alpha = draw(SCALARS)
    beta = draw(SCALARS)
    if special == "nan_c_beta0":
        beta = 0.0
    elif special == "bad_ab_alpha0":
        alpha = 0.0
    elif special in ("bad_a", "bad_b") and alpha == 0.0:
        alpha = 1.0
    elif special == "bad_c" and beta == 0.0:
        beta = -1.0
    blocking = None
    if blockings and draw(st.integers(0, 3)) == 0:
        blocking = (draw(st.integers(1, 2 * spec.k_unroll + 3)),
                    draw(st.integers(1, 3 * spec.mr)),
                    draw(st.integers(1, 3 * spec.nr)))
    return Problem(
        kernel=name, m=m, n=n, k=k, alpha=alpha, beta=beta,
        la=draw(layouts(True)), lb=draw(layouts(True)), lc=draw(layouts(False)),
        special=special, threads=draw(st.sampled_from((1, 1, 2))), blocking=blocking,
        seed=draw(st.integers(0, 2**32 - 1)))


# -- regressions: minimal falsifying examples, pasted here, run every time -------------------

_ZOO = KERNELS[0]
REGRESSIONS: list[Problem] = [
    # hand-picked edges (no failure found so far; keep them as fixed points)
    Problem(_ZOO, 1, 1, 0, alpha=1.0, beta=0.0, special="nan_c_beta0"),
    Problem(_ZOO, 7, 17, 3, alpha=0.0, beta=0.5, special="bad_ab_alpha0"),
    Problem(_ZOO, 7, 17, 3, alpha=0.0, beta=0.0, special="nan_c_beta0"),
    Problem(_ZOO, 13, 33, 9, alpha=-1.0, beta=0.0, lc=Layout(order="F", neg_r=True),
            special="nan_c_beta0", blocking=(1, 1, 1)),
    Problem(_ZOO, 5, 3, 300, alpha=1.5, beta=1.0, la=Layout(byte_off=1), lb=Layout(byte_off=2),
            lc=Layout(byte_off=3, pad=1), threads=2),
    Problem(_ZOO, 9, 9, 9, la=Layout(bcast_r=True), lb=Layout(bcast_c=True, neg_r=True)),
    Problem(_ZOO, 6, 16, 20, alpha=1.0, beta=1.0, special="bad_a"),
    Problem(_ZOO, 11, 19, 20, alpha=-2.0, beta=0.25, special="bad_c", lc=Layout(step_r=3)),
]


@pytest.mark.parametrize("problem", REGRESSIONS, ids=lambda p: f"{p.kernel}-{p.m}x{p.n}x{p.k}-{p.special}")
def test_regression(problem):
    run_problem(problem)


def _naive_gemm(A, B, C, *, alpha=1.0, beta=0.0, **_):
    """A GEMM without BLAS semantics: reads C when beta == 0, A and B when alpha == 0."""
    with np.errstate(invalid="ignore", over="ignore"):
        C[...] = alpha * (A.astype(np.float64) @ B) + beta * C
    return C


@pytest.mark.parametrize("problem", [
    Problem(_ZOO, 3, 4, 5, alpha=1.0, beta=0.0, special="nan_c_beta0"),
    Problem(_ZOO, 3, 4, 5, alpha=0.0, beta=1.0, special="bad_ab_alpha0"),
], ids=["nan_c_survives", "inf_ab_read"])
def test_checker_rejects_broken_semantics(monkeypatch, problem):
    """Negative control: the checks above catch a GEMM that breaks the semantics."""
    monkeypatch.setattr(mk, "gemm", _naive_gemm)
    with pytest.raises(AssertionError):
        run_problem(problem)


# -- the fuzz tests ----------------------------------------------------------------------------

COMMON = dict(deadline=None, derandomize=True, database=None, print_blob=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])

#: examples per test; the sum is the issue's "at least 10,000 cases"
BUDGET = {"mixed": 6000, "nonfinite": 2500, "remainders": 1500, "large": 1000}


def _drive(label: str, inner) -> None:
    count = [0]
    t0 = time.perf_counter()
    inner(count)
    secs = time.perf_counter() - t0
    print(f"fuzz {label}: {count[0]} examples in {secs:.1f}s")
    assert count[0] >= BUDGET[label], count


def test_budget_is_at_least_ten_thousand():
    assert sum(BUDGET.values()) >= 10_000


@pytest.mark.slow
def test_fuzz_mixed():
    def inner(count):
        @settings(max_examples=BUDGET["mixed"], **COMMON)
        @given(problems())
        def run(p):
            count[0] += 1
            run_problem(p)
        for p in REGRESSIONS:
            run = example(p)(run)
        run()
    _drive("mixed", inner)


@pytest.mark.slow
def test_fuzz_nonfinite():
    def inner(count):
        @settings(max_examples=BUDGET["nonfinite"], **COMMON)
        @given(problems(specials=SPECIALS[1:]))
        def run(p):
            count[0] += 1
            run_problem(p)
        run()
    _drive("nonfinite", inner)


@pytest.mark.slow
def test_fuzz_remainders():
    """Every (M mod MR, N mod NR, K mod unroll) within two tiles, all layouts."""
    def inner(count):
        @settings(max_examples=BUDGET["remainders"], **COMMON)
        @given(problems(classes=("tile",)))
        def run(p):
            count[0] += 1
            run_problem(p)
        run()
    _drive("remainders", inner)


@pytest.mark.slow
def test_fuzz_large():
    """Shapes anywhere in 0..300."""
    def inner(count):
        @settings(max_examples=BUDGET["large"], **COMMON)
        @given(problems(specials=("none", "nan_c_beta0"), classes=("large",), blockings=False))
        def run(p):
            count[0] += 1
            run_problem(p)
        run()
    _drive("large", inner)
