"""gemm(): the edge catalogue on every runnable kernel, argument errors, fuzzing."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import microkernel as mk
from microkernel import validate
from microkernel.gemm import blocking_for
from microkernel.registry import BUILTIN as BUILTIN_TILES
from microkernel.tile import pack_a, pack_b, reference_ukernel


def _catalogue_params():
    out = []
    for name in mk.kernels():
        k = mk.get_kernel(name)
        for case in validate.catalogue_for(k):
            out.append(pytest.param(name, case, id=f"{name}-{case.label}"))
    return out


@pytest.mark.parametrize("name,case", _catalogue_params())
def test_edge_catalogue(name, case):
    r = validate.run_case(mk.get_kernel(name), case)
    assert r.guard_ok, r.detail
    assert r.ok, f"{case}: err/bound={r.err_ratio} {r.detail}"


def test_catalogue_covers_every_remainder(kernel):
    cases = validate.catalogue_for(kernel)
    ms = {c.m % kernel.mr for c in cases if c.m}
    ns = {c.n % kernel.nr for c in cases if c.n}
    assert ms == set(range(kernel.mr)) and ns == set(range(kernel.nr))
    ks = {c.k for c in cases}
    kc = blocking_for(kernel).kc
    assert {0, 1, kc - 1, kc, kc + 1} <= ks


def test_checker_catches_wrong_results_and_guard_writes():
    rng = np.random.default_rng(1)
    case = validate.Case("x", 5, 6, 7, beta=0.5)
    A, B, C, C0, base, mask = validate.make_operands(case, rng)
    ref, bound = validate.reference(A, B, C0, 1.0, 0.5)
    C[...] = ref.astype(np.float32)
    assert validate.check(C, ref, bound, base, mask)[0]
    C[2, 3] += 1e-3
    assert not validate.check(C, ref, bound, base, mask)[0]
    C[...] = ref.astype(np.float32)
    base[0, 0] = 1.0  # a write outside the view
    ok, _, guard_ok, _ = validate.check(C, ref, bound, base, mask)
    assert not ok and not guard_ok


def test_ukernel_matches_numpy_reference_loop(kernel):
    """The C micro-kernel and tile.reference_ukernel (the same loop in numpy) agree."""
    rng = np.random.default_rng(2)
    kc = 13
    a = rng.uniform(-1, 1, (kernel.mr, kc)).astype(np.float32)
    b = rng.uniform(-1, 1, (kc, kernel.nr)).astype(np.float32)
    ap, bp = pack_a(a, kernel.mr)[0], pack_b(b, kernel.nr)[0]
    c0 = rng.uniform(-1, 1, (kernel.mr, kernel.nr)).astype(np.float32)
    got = kernel.ukernel(kc, 1.5, ap, bp, 0.5, c0.copy())
    want = reference_ukernel(kernel.spec, kc, 1.5, ap, bp, 0.5, c0.copy())
    exact = 1.5 * (a.astype(np.float64) @ b) + 0.5 * c0
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    np.testing.assert_allclose(got, exact, rtol=0, atol=1e-5)


def test_returns_given_c_and_allocates_otherwise():
    A = np.ones((3, 4), np.float32)
    B = np.ones((4, 5), np.float32)
    C = np.zeros((3, 5), np.float32)
    assert mk.gemm(A, B, C) is C
    out = mk.gemm(A, B)
    assert out.shape == (3, 5) and out.dtype == np.float32
    np.testing.assert_array_equal(out, np.full((3, 5), 4.0, np.float32))


@pytest.mark.parametrize("args,kwargs,exc,match", [
    ((np.ones((2, 2)), np.ones((2, 2), np.float32)), {}, TypeError, "A has dtype float64"),
    (([[1.0]], np.ones((1, 1), np.float32)), {}, TypeError, "numpy.ndarray"),
    ((np.ones(3, np.float32), np.ones((3, 1), np.float32)), {}, ValueError, "2-D"),
    ((np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)), {}, ValueError, "shape mismatch"),
    ((np.ones((2, 3), np.float32), np.ones((3, 4), np.float32), np.ones((2, 5), np.float32)), {},
     ValueError, "C is"),
    ((np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)), {"beta": 1.0}, ValueError,
     "needs an input C"),
    ((np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)), {"alpha": "2"}, TypeError,
     "alpha must be a real number"),
    ((np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)), {"threads": 0}, ValueError,
     "threads"),
    ((np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)), {"threads": True}, ValueError,
     "threads must be a positive integer, got True"),
    ((np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)), {"threads": 100000}, ValueError,
     "threads must be between 1 and"),
    ((np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)), {"threads": 2**31}, ValueError,
     "threads must be between 1 and"),
    ((np.ma.array(np.ones((2, 3), np.float32)), np.ones((3, 4), np.float32)), {}, TypeError,
     "A is a masked array"),
    ((np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)), {"blocking": {"foo": 1}},
     ValueError, "blocking has no 'foo'; valid keys: kc, mc, nc, chunks, parts"),
    ((np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)), {"blocking": {"kc": 2**63}},
     ValueError, "blocking kc must be below 2"),
    ((np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)), {"kernel": "scalar_4x4\n"},
     mk.TileError, "bad tile name"),
    ((np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)), {"kernel": "avx9_8x16"},
     mk.TileError, "unknown ISA 'avx9'.*microkernel list"),
    ((np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)), {"kernel": "bogus"},
     mk.TileError, "bad tile name"),
    ((np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)), {"kernel": "avx512_8x23_u4"},
     mk.TileError, "NR=23 .*Nearest built-in kernels: avx512_8x32_u4"),
])
def test_bad_arguments_raise_clear_errors(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        mk.gemm(*args, **kwargs)


def test_readonly_and_overlapping_c_are_refused():
    A = np.ones((4, 4), np.float32)
    B = np.ones((4, 4), np.float32)
    C = np.zeros((4, 4), np.float32)
    C.flags.writeable = False
    with pytest.raises(ValueError, match="not writeable"):
        mk.gemm(A, B, C)
    with pytest.raises(ValueError, match="overlaps A"):
        mk.gemm(A, B, A)
    big = np.ones((4, 8), np.float32)
    with pytest.raises(ValueError, match="overlaps B"):
        mk.gemm(A, big[:, :4], big[:, 2:6])


def test_c_whose_elements_overlap_is_refused():
    """A C made with as_strided whose elements share memory would be written twice per
    element (a wrong answer): refused. overlaps_itself agrees with a brute-force check
    on every small 2-D layout, interleaved ones that do not overlap included."""
    import itertools
    from numpy.lib.stride_tricks import as_strided
    from microkernel.gemm import overlaps_itself
    A, B = np.ones((37, 5), np.float32), np.ones((5, 41), np.float32)
    for strides in ((4, 4), (0, 4), (164, 0)):
        C = as_strided(np.zeros(37 * 41, np.float32), (37, 41), strides, writeable=True)
        with pytest.raises(ValueError, match="C's elements overlap"):
            mk.gemm(A, B, C)
    buf = np.zeros(1024, np.float32)[500:]
    for s0, s1, m, n in itertools.product((0, 4, 8, 12, 40, 44, -4, -44), (4, 8, 16, 44, -8),
                                          (1, 2, 3, 5), (1, 2, 4, 7)):
        x = as_strided(buf, (m, n), (s0, s1))
        addr = sorted(i * s0 + j * s1 for i in range(m) for j in range(n))
        assert overlaps_itself(x) == any(q - p < 4 for p, q in zip(addr, addr[1:])), (s0, s1, m, n)
    # distinct but interleaved elements (column stride twice the row stride): computed
    C = as_strided(np.zeros(80, np.float32), (2, 40), (4, 8), writeable=True)
    A2 = np.ones((2, 3), np.float32)
    mk.gemm(A2, np.ones((3, 40), np.float32), C)
    assert (C == 3).all()


def test_kernels_refuses_unknown_types():
    assert mk.kernels("f32") and set(mk.kernels(None)) >= set(mk.kernels("f32"))
    for bad in ("nosuch", "F32", 5):
        with pytest.raises(ValueError, match="unknown input types"):
            mk.kernels(bad)


def test_forcing_an_unavailable_isa_names_it(monkeypatch):
    missing = [isa for isa in ("avx512", "avx2", "neon", "sve") if not mk.probe().supports(isa)]
    monkeypatch.setenv("MICROKERNEL_ISA", missing[0])
    with pytest.raises(mk.IsaUnavailableError, match=missing[0]):
        mk.kernels()
    monkeypatch.setenv("MICROKERNEL_ISA", "mmx")
    with pytest.raises(ValueError, match="not an ISA"):
        mk.kernels()


def test_forcing_scalar_narrows_dispatch(monkeypatch):
    monkeypatch.setenv("MICROKERNEL_ISA", "scalar")
    assert mk.kernels() == ["scalar_4x4"]
    assert mk.get_kernel().name == "scalar_4x4"


def _view(draw, rows, cols):
    """A float32 (rows, cols) view with random layout: order, steps, signs, offset."""
    step_r = draw(st.integers(1, 3))
    step_c = draw(st.integers(1, 3))
    order = draw(st.sampled_from("CF"))
    off = draw(st.integers(0, 2))
    base = np.zeros((rows * step_r + off, cols * step_c + off), np.float32, order=order)
    v = base[off:off + rows * step_r:step_r, off:off + cols * step_c:step_c]
    if draw(st.booleans()):
        v = v[::-1]
    if draw(st.booleans()):
        v = v[:, ::-1]
    return v


@st.composite
def problems(draw):
    m, n, k = (draw(st.integers(0, 40)) for _ in range(3))
    A = _view(draw, m, k)
    B = _view(draw, k, n)
    C = _view(draw, m, n)
    alpha = draw(st.sampled_from([0.0, 1.0, -1.0, 0.5, 2.75]))
    beta = draw(st.sampled_from([0.0, 1.0, -1.0, 0.25]))
    return A, B, C, alpha, beta, draw(st.integers(1, 2))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(), st.sampled_from(mk.kernels()), st.integers(0, 2**32 - 1))
def test_fuzz_shapes_strides_alpha_beta(prob, name, seed):
    A, B, C, alpha, beta, threads = prob
    rng = np.random.default_rng(seed)
    A[...] = rng.uniform(-1, 1, A.shape)
    B[...] = rng.uniform(-1, 1, B.shape)
    C[...] = np.nan if beta == 0 else rng.uniform(-1, 1, C.shape)
    C0 = C.copy()
    mk.gemm(A, B, C, alpha=alpha, beta=beta, kernel=name, threads=threads)
    ref, bound = validate.reference(A, B, C0, alpha, beta)
    ok, ratio, _, detail = validate.check(C, ref, bound)
    assert ok, (A.shape, B.shape, alpha, beta, ratio, detail)


def test_committed_builtin_sources_match_the_generator():
    from microkernel import build, codegen
    for spec in BUILTIN_TILES:
        path = build.c_src_dir() / "ukernels" / f"{spec.file_stem}.c"
        assert path.exists(), f"missing {path}: run python -m microkernel.codegen"
        assert path.read_text() == codegen.generate(spec), f"{path} is stale"
    inc = build.c_src_dir() / "ukernels" / "mk_kernels.inc"
    assert inc.read_text() == codegen.kernel_list(BUILTIN_TILES), \
        f"{inc} is stale: run python -m microkernel.codegen"
