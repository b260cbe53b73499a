"""Typed GEMMs (microkernel.dtypes): bf16, fp16 and int8 inputs through gemm(), the
typed tiles' edge catalogue, names, and errors. References are numpy float64 / int64
on the inputs as stored, never the code under test."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import microkernel as mk
from microkernel import dtypes, registry, validate
from microkernel.gemm_typed import default_kernel, kernel_for
from microkernel.tile import TileError, TileSpec

BF16 = ml_dtypes.bfloat16
USABLE = set(mk.probe().isas)
TYPED = [s for s in registry.BUILTIN if s.types != "f32"]
RUNNABLE = [s for s in TYPED if s.isa in USABLE]


def test_types_of_each_supported_pair_and_an_error_naming_them():
    assert dtypes.types_of(BF16, BF16).name == "bf16"
    assert dtypes.types_of(np.float16, np.float16).name == "f16"
    assert dtypes.types_of(np.int8, np.int8).name == "s8s8"
    assert dtypes.types_of(np.uint8, np.int8).name == "u8s8"
    assert dtypes.types_of(np.uint8, np.uint8).name == "u8u8"
    with pytest.raises(TypeError, match="int8 @ int8"):
        dtypes.types_of(np.int8, np.uint8)
    assert dtypes.get("s8s8").acc == "int32" and dtypes.get("bf16").out == "float32"


@pytest.mark.parametrize("name,isa,types", [
    ("avx2_bf16_4x24_u8", "avx2", "bf16"), ("scalar_u8s8_4x4", "scalar", "u8s8"),
    ("avx512_s8s8_8x32", "avx512", "s8s8"), ("avx2_4x24", "avx2", "f32")])
def test_typed_names_round_trip(name, isa, types):
    s = TileSpec.from_name(name)
    assert (s.isa, s.types, s.name) == (isa, types, name)
    assert s.file_stem == name


@pytest.mark.parametrize("name,match", [
    ("avx2_f32_4x24", "bad tile name"),          # f32 is never written
    ("neon_s8s8_8x12", "take the input types f32"),
    ("avx2_f16h_4x24", "take the input types"),
])
def test_bad_typed_names(name, match):
    with pytest.raises(TileError, match=match):
        TileSpec.from_name(name)


@pytest.mark.parametrize("spec", RUNNABLE, ids=[s.name for s in RUNNABLE])
def test_edge_catalogue_on_every_runnable_typed_tile(spec):
    results = validate.run_catalogue(mk.get_kernel(spec))
    bad = [(r.case.label, r.detail) for r in results if not r.ok]
    assert not bad, bad[:5]
    assert len(results) > 50


def test_every_type_has_a_kernel_here_and_gemm_says_which():
    for t in ("bf16", "f16", "s8s8", "u8s8", "u8u8"):
        k = default_kernel(t)
        assert k.spec.types == t and k.spec.isa in USABLE


@pytest.mark.parametrize("at,bt,ct", [(BF16, BF16, np.float32), (np.float16, np.float16, np.float32),
                                      (np.int8, np.int8, np.int32), (np.uint8, np.int8, np.int32),
                                      (np.uint8, np.uint8, np.int32)])
def test_gemm_on_typed_inputs(at, bt, ct):
    rng = np.random.default_rng(1)
    m, n, k = 45, 61, 333
    if np.dtype(at).kind in "iu":
        A = rng.integers(np.iinfo(at).min, int(np.iinfo(at).max) + 1, (m, k)).astype(at)
        B = rng.integers(np.iinfo(bt).min, int(np.iinfo(bt).max) + 1, (k, n)).astype(bt)
    else:
        A = rng.standard_normal((m, k)).astype(at)
        B = rng.standard_normal((k, n)).astype(bt)
    C = mk.gemm(A, B)
    assert C.dtype == ct and C.shape == (m, n)
    want = A.astype(np.float64) @ B.astype(np.float64)
    if ct == np.int32:
        assert np.array_equal(C.astype(np.int64), (A.astype(np.int64) @ B.astype(np.int64)))
        C2 = np.full((m, n), 5, np.int32)
        mk.gemm(A.T.copy().T, B[::-1][::-1], C2, alpha=-3, beta=2)
        assert np.array_equal(C2.astype(np.int64), -3 * want.astype(np.int64) + 10)
    else:
        bound = 2 * (k + 2) * 2.0 ** -24 * (np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64)))
        assert (np.abs(C - want) <= bound).all()
    assert kernel_for(A, B).spec.gemm_types.out == np.dtype(ct).name


def test_fp16_specials_are_widened_exactly():
    """Subnormals, the largest normal, zero, inf and NaN pass the packing's
    fp16 -> fp32 conversion exactly (one k step: C = A @ B is a single product)."""
    vals = np.array([2 ** -24, 3 * 2 ** -20, 65504, -0.0, 1.5, -np.inf, np.nan, 2 ** -14],
                    np.float16)
    A = vals.reshape(-1, 1)
    B = np.ones((1, 3), np.float16)
    C = mk.gemm(A, B)
    want = vals.astype(np.float64)[:, None] * np.ones((1, 3))
    assert np.array_equal(C, want, equal_nan=True)


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(alpha=1.5), ValueError, "integer alpha and beta"),
    (dict(C=np.zeros((4, 5), np.float32)), TypeError, "C has dtype float32"),
    (dict(kernel="avx2_bf16_4x24_u8" if "avx2" in USABLE else "scalar_bf16_4x4"), TypeError,
     "takes bfloat16 @ bfloat16"),
    (dict(beta=2), ValueError, "needs an input C"),
])
def test_typed_argument_errors(kwargs, exc, match):
    A = np.ones((4, 3), np.int8)
    B = np.ones((3, 5), np.int8)
    with pytest.raises(exc, match=match):
        mk.gemm(A, B, **kwargs)


def test_float32_inputs_with_a_typed_kernel_is_an_error():
    with pytest.raises(TypeError, match="use an fp32 tile"):
        mk.gemm(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32),
                kernel="scalar_s8s8_4x4")


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["bf16", "f16", "s8s8", "u8s8", "u8u8"]), st.integers(0, 37),
       st.integers(0, 37), st.integers(0, 70), st.booleans(), st.integers(-2, 2),
       st.sampled_from([0, 1, -1]))
def test_typed_fuzz(types, m, n, k, transposed, alpha, beta):
    t = dtypes.get(types)
    rng = np.random.default_rng(m * 10007 + n * 101 + k)
    A = validate._values(rng, (k, m) if transposed else (m, k), t.dtype("a"))
    A = A.T if transposed else A
    B = validate._values(rng, (k, n), t.dtype("b"))
    C0 = (rng.integers(-50, 50, (m, n)) if t.integer else rng.standard_normal((m, n))
          ).astype(t.dtype("out"))
    C = C0.copy()
    a = alpha if t.integer else alpha / 2
    mk.gemm(A, B, C, alpha=a, beta=beta)
    ref, bound = validate.reference(A, B, C0, a, beta, types)
    ok, ratio, _, detail = validate.check(C, ref, bound)
    assert ok, detail


def test_typed_entry_points_route_float32_and_memmaps(tmp_path):
    """gemm_typed on float32 says to call gemm(); a memmap of bf16 goes the typed way."""
    import ml_dtypes
    import microkernel as mk
    from microkernel.gemm_typed import gemm_typed
    A = np.ones((4, 4), np.float32)
    with pytest.raises(TypeError, match="call microkernel.gemm"):
        gemm_typed(A, A)
    mm = np.memmap(tmp_path / "a.bin", dtype=ml_dtypes.bfloat16, mode="w+", shape=(4, 4))
    mm[:] = 1
    assert (mk.gemm(mm, np.ones((4, 4), ml_dtypes.bfloat16)) == 4).all()
