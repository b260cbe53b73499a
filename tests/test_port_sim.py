"""``microkernel port NAME --mma P --validate`` under numba's CUDA simulator: the planned
tensor-core kernel runs through mma_gemm against the float64 reference (it used to
exit 0 without running anything). Small plans (one warp per block) and two cases keep
this to seconds; ``port avx512_8x16 --mma f16 --validate`` itself runs 12 cases of
its 128-thread block in about half a minute here."""
# first: sets NUMBA_ENABLE_CUDASIM; skips the module without numba-cuda or a device
from _cudasim import SIM  # noqa: F401

import json  # noqa: E402

import pytest  # noqa: E402

from microkernel.cli import main  # noqa: E402
from microkernel.gpu import mma_port, port as gp  # noqa: E402

CASES = (("17x33x5", 17, 33, 5, 1.0, 0.0, None),
         ("beta=0 NaN C", 19, 21, 7, -1.5, 0.0, "nan_c"))


@pytest.fixture
def two_cases(monkeypatch):
    """The validation's default cases cut to two (validate_mma reads them at call time)."""
    monkeypatch.setattr(gp, "SIM_CASES", CASES)
    monkeypatch.setattr(gp, "VALIDATION_CASES", CASES)


@pytest.mark.parametrize("precision", ["f16", "tf32"])
def test_port_mma_validate_runs_the_planned_kernel(precision, two_cases, capsys):
    argv = ["port", "scalar_4x4", "--mma", precision, "--threads", "32", "--validate",
            "--no-compile"]
    assert main(argv + ["--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["plan"]["tile"]["threads"] == 32
    assert [r["label"] for r in rep["validation"]] == [c[0] for c in CASES]
    assert all(r["ok"] and not r["oob"] and not r["nan"] for r in rep["validation"])
    assert rep["validation"][0]["max_bound"] > 0
    assert main(argv) == 0
    out = capsys.readouterr()
    assert "validation (float64 reference)" in out.out and "FAIL" not in out.out
    assert "in numba's CUDA simulator: case 2/2" in out.err        # progress on stderr


def test_port_mma_validate_reports_a_wrong_kernel(two_cases, monkeypatch, capsys):
    """A kernel off by a factor fails the check: exit 1, FAIL in the table."""
    import importlib
    mg = importlib.import_module("microkernel.gpu.mma_gemm")  # not the function of that name
    right = mg.mma_gemm
    monkeypatch.setattr(mg, "mma_gemm", lambda A, B, C, *, alpha, beta, tile:
                        right(A, B, C, alpha=alpha * 1.001, beta=beta, tile=tile))
    assert main(["port", "scalar_4x4", "--mma", "f16", "--threads", "32", "--validate",
                 "--no-compile"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_validate_mma_checks_the_guard_and_bf16():
    pytest.importorskip("ml_dtypes")
    tile = mma_port.plan_mma("scalar_4x4", "bf16", warps=1).tile
    rows = mma_port.validate_mma(tile, CASES[:1] + (("K=0", 9, 11, 0, 1.0, 0.5, None),))
    assert [r["ok"] for r in rows] == [True, True]
