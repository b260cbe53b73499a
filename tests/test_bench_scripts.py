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

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "kernel_ab.py"


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


def _fake_timing(monkeypatch, main, gemm_costs, numpy_costs=(1.0,), gemm_cost_of=None):
    """The script's clock advances by the next of gemm_costs per gemm() call and of
    numpy_costs per numpy.matmul call (both cycled; a cost may be a function of m), or by
    gemm_cost_of(kw) per gemm() call where given (kw: the call's keyword arguments);
    returns the log of calls ('g' / 'n')."""
    clock, log = _Clock(), []
    real_gemm, real_matmul = mk.gemm, np.matmul
    g_costs, n_costs = iter(list(gemm_costs) * 1000), iter(list(numpy_costs) * 1000)

    def cost(c, A):
        return c(A.shape[0]) if callable(c) else c

    def gemm(A, *a, **kw):
        clock.now += gemm_cost_of(kw) if gemm_cost_of else cost(next(g_costs), A)
        log.append("g")
        return real_gemm(A, *a, **kw)

    def matmul(A, *a, **kw):
        clock.now += cost(next(n_costs), A)
        log.append("n")
        return real_matmul(A, *a, **kw)

    fake_np = types.SimpleNamespace(**{n: getattr(np, n) for n in dir(np) if not n.startswith("__")})
    fake_np.matmul = matmul
    monkeypatch.setitem(main.__globals__, "time", clock)
    monkeypatch.setitem(main.__globals__, "np", fake_np)
    monkeypatch.setattr(mk, "gemm", gemm)
    return log


def test_kernel_ab_statistics_on_a_fake_clock(monkeypatch, capsys, tmp_path):
    """gemm() takes 2 s and numpy 1 s on the script's clock, each sample repeats the
    call to last at least 4.5 s (gemm 3 times, numpy 5 times): every ratio (numpy time /
    ours) is 0.5, the GFLOP/s follow from the flops, and the order rotates each round."""
    main = _main()
    log = _fake_timing(monkeypatch, main, [2.0])
    out = tmp_path / "ab.json"
    _run(monkeypatch, main, "--kernels", "scalar_4x4", "--sizes", "20", "--rounds", "5",
         "--min-seconds", "4.5", "--json", str(out))
    (row,) = json.loads(out.read_text())["rows"]
    assert (row["inner"], row["numpy_inner"]) == (3, 5)
    assert row["pair_ratios"] == [0.5] * 5 and row["seconds"] == [2.0] * 5
    assert row["numpy_seconds"] == [1.0] * 5
    assert row["ratio"] == row["ratio_q1"] == row["ratio_q3"] == 0.5
    assert row["gflops"] == pytest.approx(2 * 20**3 / 2.0 / 1e9)
    assert row["numpy_gflops"] == pytest.approx(2 * 20**3 / 1.0 / 1e9)
    text = capsys.readouterr().out
    assert "ratio 0.500 (q1 0.500 q3 0.500)" in text
    assert "scalar_4x4 0.500 (min 0.500, max 0.500);  0.500 over 1" in text
    # sizing: n n g g; then rounds of 1 + 5 numpy calls and 1 + 3 gemm calls, in turn
    assert "".join(log[:4]) == "nngg"
    assert "".join(log[4:]) == ("nnnnnn" "gggg" "gggg" "nnnnnn") * 2 + "nnnnnn" "gggg"


def test_kernel_ab_pairs_samples_by_round(monkeypatch, tmp_path):
    """gemm() samples of 3, 2, 3, 2 s against numpy's 1.5, 1, 1.5, 1 s in the same
    rounds: every per-round ratio is 0.5 (a ratio to numpy's median would not be)."""
    main = _main()
    # per contender: 2 sizing calls, then 2 per round (--min-seconds 0: one timed call)
    _fake_timing(monkeypatch, main, [2.0, 2.0, 3.0, 3.0], [1.0, 1.0, 1.5, 1.5])
    out = tmp_path / "ab.json"
    _run(monkeypatch, main, "--kernels", "scalar_4x4", "--sizes", "20", "--rounds", "4",
         "--min-seconds", "0", "--json", str(out))
    (row,) = json.loads(out.read_text())["rows"]
    assert row["seconds"] == [3.0, 2.0, 3.0, 2.0]
    assert row["numpy_seconds"] == [1.5, 1.0, 1.5, 1.0]
    assert row["pair_ratios"] == [0.5] * 4 and row["ratio"] == 0.5


def test_kernel_ab_quartiles_on_a_fake_clock(monkeypatch, tmp_path):
    """gemm() samples of 3, 2, 3, 2 s against numpy's 1 s: ratios 1/3, 1/2, 1/3, 1/2."""
    main = _main()
    _fake_timing(monkeypatch, main, [2.0, 2.0, 3.0, 3.0])
    out = tmp_path / "ab.json"
    _run(monkeypatch, main, "--kernels", "scalar_4x4", "--sizes", "20", "--rounds", "4",
         "--min-seconds", "0", "--json", str(out))
    (row,) = json.loads(out.read_text())["rows"]
    assert row["seconds"] == [3.0, 2.0, 3.0, 2.0]
    assert row["ratio"] == pytest.approx(5 / 12)
    assert (row["ratio_q1"], row["ratio_q3"]) == (pytest.approx(1 / 3), pytest.approx(1 / 2))


def test_kernel_ab_summary_over_tiled_shapes(monkeypatch, capsys):
    """n = 8 (min(m, n) < 16) at ratio 0.25 and n = 20 at 0.5: the median over all shapes
    is 0.375, over min(m, n) >= 16 it is 0.5 (one shape)."""
    main = _main()
    _fake_timing(monkeypatch, main, [lambda m: 4.0 if m == 8 else 2.0])
    _run(monkeypatch, main, "--kernels", "scalar_4x4", "--sizes", "8,20", "--rounds", "3",
         "--min-seconds", "0")
    assert "scalar_4x4 0.375 (min 0.250, max 0.500);  0.500 over 1" in capsys.readouterr().out


def test_kernel_ab_sets_each_contender_against_the_first(monkeypatch, capsys, tmp_path):
    """The model's blocking takes 2 s a call, the kc=16 contender 1.6 s: round by round the
    second is 1.25x the speed of the first, reported as "vs first 1.250 (faster in 3/3)"
    and in the JSON; the first contender has no such field."""
    main = _main()
    _fake_timing(monkeypatch, main, [], gemm_cost_of=lambda kw: 1.6 if kw["blocking"].kc == 16 else 2.0)
    out = tmp_path / "ab.json"
    _run(monkeypatch, main, "--kernels", "scalar_4x4;scalar_4x4:kc=16", "--sizes", "20",
         "--rounds", "3", "--min-seconds", "0", "--json", str(out))
    first, second = json.loads(out.read_text())["rows"]
    assert "vs_first" not in first
    assert second["vs_first"] == [pytest.approx(1.25)] * 3
    text = capsys.readouterr().out
    assert "vs first 1.250 (faster in 3/3)" in text
    assert "scalar_4x4:kc=16 1.250 (min 1.250, max 1.250)" in text


def test_kernel_ab_stops_on_a_wrong_result(monkeypatch, tmp_path):
    real = mk.gemm

    def wrong(A, B, C=None, **kw):
        out = real(A, B, C, **kw)
        out[0, 0] += 1.0
        return out

    monkeypatch.setattr(mk, "gemm", wrong)
    keep = tmp_path / "keep.json"
    keep.write_text("{}")
    with pytest.raises(SystemExit, match="scalar_4x4 on 20x20x20: wrong result"):
        _run(monkeypatch, _main(), "--kernels", "scalar_4x4", "--sizes", "20", "--rounds", "1",
             "--json", str(keep))
    assert keep.read_text() == "{}"   # an earlier result file survives a failed run


@pytest.mark.parametrize("argv", [
    ["--kernels", "scalar_4x4:kc=0"], ["--kernels", "scalar_4x4:kc=8x"],
    ["--kernels", "avx9_4x4"], ["--kernels", "scalar_4x4;scalar_4x4:mc=4,mc=8"],
    ["--kernels", "scalar_4x4,scalar_4x4"], ["--kernels", "scalar_4x4", "--sizes", ""],
    ["--kernels", "scalar_4x4", "--sizes", "16,x"], ["--kernels", "scalar_4x4", "--rounds", "0"],
    ["--kernels", "scalar_4x4", "--threads", "0"],
    ["--kernels", "scalar_4x4", "--workload", "nope"],
    ["--kernels", "scalar_4x4", "--min-seconds", "nan"],
    ["--kernels", "scalar_4x4", "--min-seconds", "-1"],
    ["--kernels", "scalar_4x4", "--json", "/nonexistent-dir/ab.json"]])
def test_kernel_ab_bad_argument_is_a_usage_error(monkeypatch, capsys, argv):
    calls = []
    monkeypatch.setattr(mk, "gemm", lambda *a, **k: calls.append(1))
    with pytest.raises(SystemExit) as exc:
        _run(monkeypatch, _main(), *argv)
    assert exc.value.code == 2 and calls == []
    assert "error:" in capsys.readouterr().err


def test_driver_variants_follow_the_driver(tmp_path):
    """bench/driver_variants.py patches c_src/driver.c by text: every variant must still
    find its anchors (it exits otherwise) and compile, with the tile macros a kernel
    module defines, so that bench/gemm_vs_openblas.sh keeps working when the driver
    changes."""
    import platform
    import subprocess
    from microkernel import build
    variants = runpy.run_path(str(ROOT / "bench" / "driver_variants.py"))
    assert variants["main"]([str(tmp_path)]) == 0
    names = sorted(p.name for p in tmp_path.glob("drv_*.c"))
    assert names == ["drv_cur.c", "drv_pc.c", "drv_pfb.c", "drv_prof.c", "drv_ua.c", "drv_wsh.c"]
    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("the variants' rdtsc and AVX2 kernel are x86")
    uk = ROOT / "c_src" / "ukernels" / "f32_gemm_4x24_u8_avx2.c"
    for name in names:
        src = "ua_4x24.c" if name == "drv_ua.c" else str(uk)
        defs = ["-DPFLVL=2", "-DPCDIST=1", "-DPCLVL=2", "-DMK_C_ALIGN=32", "-DMK_MR=4",
                "-DMK_NR=24", "-DMK_UKERNEL=mk_ukernel_avx2_4x24_u8"]
        unit = tmp_path / f"unit_{name}"
        unit.write_text(f'#include "{src}"\n#include "{name}"\n')
        res = subprocess.run([*build.compiler(), "-fsyntax-only", "-std=gnu11", "-Wall",
                              "-Werror", "-mavx2", "-mfma", "-fopenmp", *defs,
                              f"-I{tmp_path}", f"-I{ROOT / 'c_src'}", str(unit)],
                             capture_output=True, text=True)
        assert res.returncode == 0, (name, res.stderr[-2000:])
