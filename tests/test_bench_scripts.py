"""bench/kernel_ab.py: contenders parsed, each timed through gemm() with its own blocking,
round by round; the statistics it prints and saves; a bad argument is a usage error
before any timing."""
import json
import pathlib
import runpy
import sys
import types

import numpy as np
import pytest

import microkernel as mk
from microkernel.gemm import blocking_for

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "bench" / "kernel_ab.py"


def _main():
    return runpy.run_path(str(SCRIPT))["main"]


def _run(monkeypatch, main, *argv):
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), *argv])
    return main()


def test_kernel_ab_times_each_contender_with_its_blocking(monkeypatch, tmp_path):
    seen = []
    real = mk.gemm

    def spy(A, B, C=None, **kw):
        seen.append((kw["kernel"].name, kw["blocking"]))
        return real(A, B, C, **kw)

    monkeypatch.setattr(mk, "gemm", spy)
    out = tmp_path / "ab.json"
    _run(monkeypatch, _main(), "--kernels", "scalar_4x4;scalar_4x4:kc=16,mc=8", "--sizes",
         "24,40", "--rounds", "3", "--min-seconds", "0", "--json", str(out))
    data = json.loads(out.read_text())
    assert data["rounds"] == 3 and data["threads"] == 1
    assert [(r["shape"], r["kernel"]) for r in data["rows"]] == [
        ("24x24x24", "scalar_4x4"), ("24x24x24", "scalar_4x4:kc=16,mc=8"),
        ("40x40x40", "scalar_4x4"), ("40x40x40", "scalar_4x4:kc=16,mc=8")]
    model = blocking_for(mk.get_kernel("scalar_4x4"))
    assert {(b.kc, b.mc, b.nc) for _, b in seen} == {
        (model.kc, model.mc, model.nc), (16, 8, model.nc)}
    assert (data["rows"][1]["kc"], data["rows"][1]["mc"]) == (16, 8)
    # per shape and contender: 2 calls to check and size the sample, then per round one
    # untimed call and one timed (--min-seconds 0: one call per sample)
    assert sum(b.kc == model.kc for _, b in seen) == 2 * (2 + 3 * 2)


class _Clock:
    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now

    def sleep(self, seconds):
        pass


def _fake_timing(monkeypatch, main, gemm_costs, numpy_cost=1.0):
    """The script's clock advances by the next of gemm_costs (cycled) per gemm() call
    and by numpy_cost per numpy.matmul call; returns the log of calls ('g' / 'n')."""
    clock, log = _Clock(), []
    real_gemm, real_matmul = mk.gemm, np.matmul
    costs = iter(gemm_costs * 1000)

    def gemm(*a, **kw):
        clock.now += next(costs)
        log.append("g")
        return real_gemm(*a, **kw)

    def matmul(*a, **kw):
        clock.now += numpy_cost
        log.append("n")
        return real_matmul(*a, **kw)

    fake_np = types.SimpleNamespace(**{n: getattr(np, n) for n in dir(np) if not n.startswith("__")})
    fake_np.matmul = matmul
    monkeypatch.setitem(main.__globals__, "time", clock)
    monkeypatch.setitem(main.__globals__, "np", fake_np)
    monkeypatch.setattr(mk, "gemm", gemm)
    return log


def test_kernel_ab_statistics_on_a_fake_clock(monkeypatch, capsys, tmp_path):
    """gemm() takes 2 s and numpy 1 s on the script's clock, each sample repeats the
    call to last 4.5 s (gemm twice, numpy 4 times): every ratio (numpy time / ours) is
    0.5, the GFLOP/s follow from the flops, and the order rotates each round."""
    main = _main()
    log = _fake_timing(monkeypatch, main, [2.0])
    out = tmp_path / "ab.json"
    _run(monkeypatch, main, "--kernels", "scalar_4x4", "--sizes", "20", "--rounds", "5",
         "--min-seconds", "4.5", "--json", str(out))
    (row,) = json.loads(out.read_text())["rows"]
    assert (row["inner"], row["numpy_inner"]) == (2, 4)
    assert row["pair_ratios"] == [0.5] * 5 and row["seconds"] == [2.0] * 5
    assert row["numpy_seconds"] == [1.0] * 5
    assert row["ratio"] == row["ratio_q1"] == row["ratio_q3"] == 0.5
    assert row["gflops"] == pytest.approx(2 * 20**3 / 2.0 / 1e9)
    assert row["numpy_gflops"] == pytest.approx(2 * 20**3 / 1.0 / 1e9)
    text = capsys.readouterr().out
    assert "ratio 0.500 (q1 0.500 q3 0.500)" in text
    assert "scalar_4x4 0.500 (min 0.500, max 0.500);  0.500 over 1" in text
    # sizing: n n g g; then rounds of 1 + 4 numpy calls and 1 + 2 gemm calls, in turn
    assert "".join(log[:4]) == "nngg"
    assert "".join(log[4:]) == ("nnnnn" "ggg" "ggg" "nnnnn") * 2 + "nnnnn" "ggg"


def test_kernel_ab_quartiles_on_a_fake_clock(monkeypatch, tmp_path):
    """gemm() samples of 3, 2, 3, 2 s against numpy's 1 s: ratios 1/3, 1/2, 1/3, 1/2."""
    main = _main()
    _fake_timing(monkeypatch, main, [2.0, 2.0, 3.0, 3.0])  # 2 sizing calls, then 2 per round
    out = tmp_path / "ab.json"
    _run(monkeypatch, main, "--kernels", "scalar_4x4", "--sizes", "20", "--rounds", "4",
         "--min-seconds", "0", "--json", str(out))
    (row,) = json.loads(out.read_text())["rows"]
    assert row["seconds"] == [3.0, 2.0, 3.0, 2.0]
    assert row["ratio"] == pytest.approx(5 / 12)
    assert (row["ratio_q1"], row["ratio_q3"]) == (pytest.approx(1 / 3), pytest.approx(1 / 2))


@pytest.mark.parametrize("argv", [
    ["--kernels", "scalar_4x4:kc=0"], ["--kernels", "scalar_4x4:kc=8x"],
    ["--kernels", "avx9_4x4"], ["--kernels", "scalar_4x4;scalar_4x4:mc=4,mc=8"],
    ["--kernels", "scalar_4x4,scalar_4x4"], ["--kernels", "scalar_4x4", "--sizes", ""],
    ["--kernels", "scalar_4x4", "--sizes", "16,x"], ["--kernels", "scalar_4x4", "--rounds", "0"],
    ["--kernels", "scalar_4x4", "--threads", "0"],
    ["--kernels", "scalar_4x4", "--workload", "nope"]])
def test_kernel_ab_bad_argument_is_a_usage_error(monkeypatch, capsys, argv):
    calls = []
    monkeypatch.setattr(mk, "gemm", lambda *a, **k: calls.append(1))
    with pytest.raises(SystemExit) as exc:
        _run(monkeypatch, _main(), *argv)
    assert exc.value.code == 2 and calls == []
    assert "error:" in capsys.readouterr().err
