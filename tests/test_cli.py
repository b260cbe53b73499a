"""The `microkernel` command line, end to end (in-process)."""
import json

import pytest

import microkernel as mk
from microkernel.cli import main
from microkernel.gemm import blocking_for


def test_probe_json(capsys):
    assert main(["probe", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["isas"][0] == "scalar" and d["best_isa"] in d["isas"]
    assert d["blocking"]["kc"] > 0 and d["blocking"]["why"]


def test_list_and_validate(capsys):
    assert main(["list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in rows} >= {"avx512_8x16", "avx2_6x16", "scalar_4x4"}
    assert main(["validate", "--kernel", "scalar_4x4", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep[0]["kernel"] == "scalar_4x4" and rep[0]["cases"] > 40 and rep[0]["failed"] == 0


def test_unrunnable_isa_is_exit_2_with_message(capsys, monkeypatch):
    missing = [i for i in ("avx512", "avx2", "neon", "sve") if not mk.probe().supports(i)]
    assert main(["validate", "--kernel", f"{missing[0]}_8x16" if missing[0] != "sve"
                 else "sve_8x2v"]) == 2
    assert missing[0] in capsys.readouterr().err


def test_sweep_small(tmp_path, capsys):
    isa = mk.probe().best_isa
    lanes = mk.tile.ISAS[isa].lanes
    out = tmp_path / "s.json"
    png = tmp_path / "s.png"
    rc = main(["sweep", "--isa", isa, "--mr", "2,4", "--nr", str(2 * lanes), "--workload", "square",
               "--repeats", "1", "--json", str(out), "--plot", str(png)])
    assert rc == 0
    res = json.loads(out.read_text())
    assert [r["name"] for r in res["rows"]] and res["winner"] in {r["name"] for r in res["rows"]}
    assert all(r["valid"] and r["cases"] > 0 for r in res["rows"])
    assert png.stat().st_size > 1000
    assert "winner" in capsys.readouterr().out


def test_bench_runs_and_saves(tmp_path):
    out = tmp_path / "b.json"
    assert main(["bench", "--kernel", "scalar_4x4", "--sizes", "64", "--repeats", "4",
                 "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["peak_gflops"] > 0 and d["l1"][0]["gflops"] > 0 and d["gemm"][0]["ratio"] > 0
    # one numpy/ours ratio per pair of alternating samples, for the q1-q3 column
    assert len(d["gemm"][0]["pair_ratios"]) == 4


def test_bench_blocking_override(tmp_path, capsys, monkeypatch):
    from microkernel import bench
    seen = []
    real = bench.time_gemm_vs_numpy

    def spy(*args, **kw):  # the real timing, recording the blocking it was given
        seen.append(kw.get("blocking"))
        return real(*args, **kw)
    monkeypatch.setattr(bench, "time_gemm_vs_numpy", spy)
    out = tmp_path / "b.json"
    # the first --kernel is the one gemm() runs; the L1 table has them all
    assert main(["bench", "--kernel", "scalar_4x4", "--kernel", mk.kernels()[0], "--sizes", "40",
                 "--repeats", "2", "--blocking", "kc=16,nc=12", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert len(d["l1"]) == 2 and d["gemm"][0]["kernel"] == "scalar_4x4"
    model = blocking_for(mk.get_kernel("scalar_4x4"))
    assert d["gemm_blocking"] == {"kc": 16, "mc": model.mc, "nc": 12, "overridden": ["kc", "nc"]}
    assert [(b.kc, b.mc, b.nc) for b in seen] == [(16, model.mc, 12)]
    assert "KC=16" in capsys.readouterr().out
    assert main(["bench", "--kernel", "scalar_4x4", "--sizes", "8", "--blocking", "mc=0"]) == 2
    assert "mc must be a positive integer" in capsys.readouterr().err
    for bad in ("kc", "kc=x", "xc=4", "kc=4;mc=8", "", ",", "kc=4,kc=8", "kc=-4", "kc=--5"):
        with pytest.raises(SystemExit):
            main(["bench", "--blocking", bad])


def test_bad_usage_exits_nonzero():
    with pytest.raises(SystemExit):
        main(["sweep", "--mr", "x"])


def test_sweep_ranks_gemms_default_tile(monkeypatch, tmp_path):
    """Unrestricted, the sweep times gemm()'s default tile (k-unrolled, not one of the
    enumerated shapes) beside the candidates; restricted by --mr, it does not."""
    from microkernel import sweep as sw
    from microkernel.dispatch import default_tile
    from microkernel.tile import TileSpec
    isa = mk.probe().best_isa
    lanes = mk.tile.ISAS[isa].lanes
    from microkernel import bench
    # one small candidate keeps the test short; the default joins it
    monkeypatch.setattr(sw, "candidates", lambda *a, **k: [TileSpec(isa, 2, lanes)])
    timed, real = [], bench.time_gemm_vs_numpy

    def spy(kernel, problems, **kw):   # numpy must be timed beside every tile
        t = real(kernel, problems, **kw)
        timed.append((kernel.name, [len(x.pair_ratios) for x in t]))
        return t
    monkeypatch.setattr(bench, "time_gemm_vs_numpy", spy)
    out = tmp_path / "s.json"
    assert main(["sweep", "--isa", isa, "--workload", "square", "--repeats", "2",
                 "--json", str(out)]) == 0
    assert sorted(name for name, _ in timed) == sorted([TileSpec(isa, 2, lanes).name, default_tile(isa).name])
    assert all(n == 2 for _, pairs in timed for n in pairs)
    res = json.loads(out.read_text())
    default = default_tile(isa).name
    assert res["default"] == default
    small = TileSpec(isa, 2, lanes).name
    assert {r["name"] for r in res["rows"]} == {small, default}
    assert all(r["valid"] and r["workload_gflops"] for r in res["rows"])
    assert main(["sweep", "--isa", isa, "--mr", "2", "--workload", "square", "--repeats", "1",
                 "--json", str(out)]) == 0
    assert [r["name"] for r in json.loads(out.read_text())["rows"]] == [small]


def test_sweep_ranks_by_the_ratio_to_numpy_beside_each_tile(monkeypatch, tmp_path):
    """A tile timed in a slow spell (both sides 1.5x slower) at 1.2x numpy outranks one
    with more GFLOP/s at 1.0x numpy: the ratio, not the absolute speed, decides."""
    from microkernel import bench
    from microkernel import sweep as sw
    from microkernel.dispatch import default_tile
    from microkernel.tile import TileSpec
    isa = mk.probe().best_isa
    lanes = mk.tile.ISAS[isa].lanes or 1   # SVE: NR in vectors
    small = TileSpec(isa, 2, lanes)
    monkeypatch.setattr(sw, "candidates", lambda *a, **k: [small])

    def fake(kernel, problems, threads=1, **kw):   # small: 1.0 s vs numpy 1.2 s
        slow = 1.5 if kernel.name == small.name else 1.0
        ours, theirs = (1.0, 1.2) if kernel.name == small.name else (1.0, 1.0)
        return [bench.GemmTiming(p.label, p.flops, ours * slow, theirs * slow, threads, (theirs / ours,))
                for p in problems]
    monkeypatch.setattr(bench, "time_gemm_vs_numpy", fake)
    out = tmp_path / "s.json"
    assert main(["sweep", "--isa", isa, "--workload", "square", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert [r["name"] for r in res["rows"]] == [small.name, default_tile(isa).name]
    assert res["winner"] == small.name
    assert res["rows"][0]["workload_gflops"] < res["rows"][1]["workload_gflops"]


def test_sweep_says_where_the_default_ranked(monkeypatch, capsys):
    """When another tile wins, the output gives the default's rank and ratio to numpy
    beside the winner's and the kernel_ab.py command that compares the two round by round."""
    from microkernel import sweep as sw

    def row(name, gflops):
        return {"name": name, "mr": 4, "nr": 16, "registers": "14/16", "compile_s": 1.0,
                "valid": True, "cases": 10, "failures": [], "l1_gflops": 90.0, "pct_peak": 90.0,
                "workload_gflops": gflops, "numpy_gflops": 80.0, "ratio_numpy": gflops / 80,
                "median_ratio": 1.0, "spills": 0, "predicted_cycles_per_k": None,
                "measured_cycles_per_k": None, "error": ""}
    res = {"isa": "avx2", "workload": "deepbench", "scale": 1, "threads": 2, "problems": ["p"],
           "peak_gflops": 100.0, "numpy_blas": "openblas", "numpy_gflops": 80.0,
           "rows": [row("avx2_4x16", 88.0), row("avx2_4x24_u8", 84.0)],
           "winner": "avx2_4x16", "default": "avx2_4x24_u8"}
    monkeypatch.setattr(sw, "sweep", lambda *a, **k: res)
    assert main(["sweep"]) == 0
    out = " ".join(capsys.readouterr().out.split())   # undo rich's line wrapping
    assert "gemm()'s default avx2_4x24_u8: rank 2, 1.05x numpy against the winner's 1.10x" in out
    assert ("python bench/kernel_ab.py --kernels 'avx2_4x16;avx2_4x24_u8' --sizes '' "
            "--workload deepbench --threads 2") in out and "--scale" not in out
    res["scale"] = 4        # kernel_ab.py would time the full-size shapes: said so
    assert main(["sweep"]) == 0
    assert "kernel_ab.py has no --scale" in " ".join(capsys.readouterr().out.split())
    res["rows"][1].update(valid=False, workload_gflops=None, ratio_numpy=None)
    assert main(["sweep"]) == 0   # the default failed validation: no rank, no command
    out = " ".join(capsys.readouterr().out.split())
    assert "gemm()'s default avx2_4x24_u8 failed here" in out and "kernel_ab.py" not in out
    res["rows"] = [row("avx2_4x24_u8", 88.0), row("avx2_4x16", 84.0)]
    res["winner"] = "avx2_4x24_u8"   # the default won: nothing more to say
    assert main(["sweep"]) == 0
    assert "gemm()'s default" not in capsys.readouterr().out
