"""bench/kernel_ab.py: contenders parsed, each timed through gemm() with its own blocking,
round by round, and a bad contender is a usage error before any timing."""
import json
import pathlib
import runpy
import sys

import pytest

import microkernel as mk

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "bench" / "kernel_ab.py"


def _run(monkeypatch, *argv):
    main = runpy.run_path(str(SCRIPT))["main"]
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), *argv])
    return main()


def test_kernel_ab_times_each_contender_with_its_blocking(monkeypatch, tmp_path):
    seen = []
    real = mk.gemm

    def spy(A, B, C=None, **kw):
        seen.append((kw["kernel"].name, kw.get("blocking")))
        return real(A, B, C, **kw)

    monkeypatch.setattr(mk, "gemm", spy)
    out = tmp_path / "ab.json"
    _run(monkeypatch, "--kernels", "scalar_4x4;scalar_4x4:kc=16,mc=8", "--sizes", "24,40",
         "--rounds", "3", "--min-seconds", "0", "--json", str(out))
    data = json.loads(out.read_text())
    assert data["rounds"] == 3 and data["threads"] == 1
    assert [(r["shape"], r["kernel"]) for r in data["rows"]] == [
        ("24x24x24", "scalar_4x4"), ("24x24x24", "scalar_4x4:kc=16,mc=8"),
        ("40x40x40", "scalar_4x4"), ("40x40x40", "scalar_4x4:kc=16,mc=8")]
    assert {b and tuple(sorted(b.items())) for _, b in seen} == {None, (("kc", 16), ("mc", 8))}
    # per shape and contender: 2 calls to size the sample, then per round one untimed
    # call and one timed (--min-seconds 0: one call per sample)
    assert seen.count(("scalar_4x4", None)) == 2 * (2 + 3 * 2)


@pytest.mark.parametrize("bad", ["scalar_4x4:kc=0", "scalar_4x4:kc=8x", "avx9_4x4",
                                 "scalar_4x4;scalar_4x4:mc=4,mc=8"])
def test_kernel_ab_bad_contender_is_a_usage_error(monkeypatch, capsys, bad):
    calls = []
    monkeypatch.setattr(mk, "gemm", lambda *a, **k: calls.append(1))
    with pytest.raises(SystemExit) as exc:
        _run(monkeypatch, "--kernels", bad, "--sizes", "24", "--rounds", "1")
    assert exc.value.code == 2 and calls == []
    assert "--kernels" in capsys.readouterr().err
