"""The `microkernel` command line, end to end (in-process)."""
import json

import numpy as np
import pytest

import microkernel as mk
from microkernel.cli import main
from microkernel.gemm import blocking_for
from microkernel.blocking import TEAM_CHUNKS, TEAM_PARTS


def test_probe_json(capsys):
    assert main(["probe", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["isas"][0] == "scalar" and d["best_isa"] in d["isas"]
    assert d["blocking"]["kc"] > 0 and d["blocking"]["why"]
    # what gemm() takes: the model's NC for several threads, the one-thread NC for one
    kern = mk.get_kernel(None)
    assert d["default_kernel"] == kern.name
    assert d["blocking"]["nc"] == blocking_for(kern).nc
    assert d["blocking"]["nc_one_thread"] == blocking_for(kern, 1).nc <= d["blocking"]["nc"]


def test_list_and_validate(capsys):
    assert main(["list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in rows} >= {"avx512_8x16", "avx2_6x16", "scalar_4x4"}
    assert main(["list", "--names", "--json", "--isa", "scalar"]) == 0     # JSON, not lines
    names = json.loads(capsys.readouterr().out)
    assert "scalar_4x4" in names and all(n.startswith("scalar_") for n in names)
    assert main(["validate", "--kernel", "scalar_4x4", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep[0]["kernel"] == "scalar_4x4" and rep[0]["cases"] > 40 and rep[0]["failed"] == 0


def test_validate_defaults_to_every_runnable_type(capsys):
    """Without --kernel, validate checks the built-in kernels of every input type this
    machine runs (the scalar bf16 and s8s8 tiles run everywhere); --dtype narrows it."""
    assert main(["validate", "--quick", "--dtype", "s8s8", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    names = [r["kernel"] for r in rep]
    assert "scalar_s8s8_4x4" in names and all("s8s8" in n for n in names)
    assert all(r["failed"] == 0 for r in rep)
    assert main(["validate", "--quick", "--json"]) == 0
    names = {r["kernel"] for r in json.loads(capsys.readouterr().out)}
    assert {"scalar_4x4", "scalar_bf16_4x4", "scalar_f16_4x4", "scalar_u8u8_4x4"} <= names
    assert main(["validate", "--kernel", "scalar_4x4", "--dtype", "f32"]) == 2
    assert "without --kernel" in capsys.readouterr().err


def test_unrunnable_isa_is_exit_2_with_message(capsys, monkeypatch):
    missing = [i for i in ("avx512", "avx2", "neon", "sve") if not mk.probe().supports(i)]
    assert main(["validate", "--kernel", f"{missing[0]}_8x16" if missing[0] != "sve"
                 else "sve_8x2v"]) == 2
    assert missing[0] in capsys.readouterr().err


def _small_workload(monkeypatch):
    """The sweep's workload cut to three small shapes (and one GEMV shape, not ranked)."""
    from microkernel import workloads
    small = [workloads.Problem(48, 40, 64), workloads.Problem(37, 72, 50),
             workloads.Problem(64, 64, 33), workloads.Problem(90, 1, 64)]
    monkeypatch.setattr(workloads, "load", lambda name, scale=1: list(small))
    return small


def test_sweep_small(tmp_path, capsys, monkeypatch):
    _small_workload(monkeypatch)
    isa = mk.probe().best_isa
    lanes = mk.tile.ISAS[isa].lanes
    out, png = tmp_path / "s.json", tmp_path / "s.png"
    rc = main(["sweep", "--isa", isa, "--mr", "2,4", "--nr", str(2 * lanes), "--rounds", "6",
               "--budget", "20", "--json", str(out), "--plot", str(png)])
    assert rc == 0
    res = json.loads(out.read_text())
    names = {r["name"] for r in res["rows"]}
    assert names == {f"{isa}_2x{2 * lanes}", f"{isa}_4x{2 * lanes}"}
    assert res["leader"] in names and set(res["ties"]) <= names
    assert all(r["valid"] and r["cases"] > 0 and r["l1"]["pct_peak"] > 0 for r in res["rows"])
    assert res["ranked_problems"] == ["48x40x64", "37x72x50", "64x64x33"]
    assert res["gemv_problems"] == ["90x1x64"]
    # every sample is in the JSON: each tile and peer (numpy, and torch / blis where
    # installed), each ranked shape, each round
    samples = res["samples"]["workload"]
    assert "numpy" in res["peers"]
    assert {(s["shape"], s["contender"]) for s in samples} == {
        (p, c) for p in res["ranked_problems"] for c in names | set(res["peers"])}
    assert all(len(s["seconds"]) == res["race"]["rounds"] for s in samples)
    assert png.stat().st_size > 1000
    text = " ".join(capsys.readouterr().out.split())
    assert "ranking over the workload" in text and "per shape" in text
    assert ("winner: " in text) != ("tie: " in text)


def test_sweep_ranks_gemms_default_tile(monkeypatch, tmp_path):
    """Unrestricted, the sweep races gemm()'s default tile (k-unrolled, not one of the
    enumerated shapes) beside the candidates; restricted by --mr, it does not."""
    from microkernel import sweep as sw
    from microkernel.dispatch import default_tile
    from microkernel.tile import TileSpec
    _small_workload(monkeypatch)
    isa = mk.probe().best_isa
    small = TileSpec(isa, 2, mk.tile.ISAS[isa].lanes)
    monkeypatch.setattr(sw, "candidates", lambda *a, **k: [small])
    out = tmp_path / "s.json"
    assert main(["sweep", "--isa", isa, "--rounds", "4", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    default = default_tile(isa).name
    assert res["default"] == default
    assert {r["name"] for r in res["rows"]} == {small.name, default}
    assert [r["is_default"] for r in res["rows"] if r["name"] == default] == [True]
    assert main(["sweep", "--isa", isa, "--mr", "2", "--rounds", "4", "--json", str(out)]) == 0
    assert [r["name"] for r in json.loads(out.read_text())["rows"]] == [small.name]


def _result(ties, leader="avx2_4x24_u8", default="avx2_4x24_u8"):
    """A sweep result as sweep() returns it (for the rendering tests)."""
    def iv(p):
        return {"point": p, "lo": p - 0.005, "hi": min(p + 0.005, 1.0), "level": 0.95, "rounds": 8}
    speeds = {"avx2_4x24_u8": 1.0, "avx2_6x16": 0.99, "avx2_8x8": 0.80}
    if leader != "avx2_4x24_u8":
        speeds = {leader: 1.0, "avx2_4x24_u8": 0.985, "avx2_8x8": 0.80}
    rows, comps = [], {}
    for name, sp in speeds.items():
        status = "leader" if name == leader else ("tied" if name in ties else "behind")
        rows.append({"name": name, "mr": 4, "nr": 24, "k_unroll": 1, "registers": "16/16",
                     "compile_s": 1.0, "valid": True, "cases": 80, "failures": [], "error": "",
                     "spills": 0, "predicted_cycles_per_k": None, "mcpu": None,
                     "l1": {"gflops": 90, "gflops_lo": 89, "gflops_hi": 91, "pct_peak": 90,
                            "pct_peak_lo": 89, "pct_peak_hi": 91},
                     "status": status, "vs_leader": iv(sp), "vs_numpy": iv(1.05 * sp),
                     "workload_gflops": 80 * sp, "dropped_after": 6 if status == "behind" else None,
                     "is_default": name == default})
        comps[name] = {"status": status, **iv(sp)}
    return {"isa": "avx2", "workload": "deepbench", "scale": 1, "threads": 1,
            "problems": ["5124x700x2048", "3072x1x1024"], "ranked_problems": ["5124x700x2048"],
            "gemv_problems": ["3072x1x1024"], "peers": {"numpy": "numpy (openblas)"},
            "peak": {"gflops": 100.0, "gflops_lo": 99.0, "gflops_hi": 101.0},
            "peak_gflops": 100.0, "rows": rows,
            "verdict": {"leader": leader, "ties": [leader] + list(ties),
                        "behind": [n for n in speeds if n != leader and n not in ties],
                        "separated": not ties, "margin": 0.03, "level": 0.95, "vs_leader": comps},
            "leader": leader, "ties": [leader] + list(ties),
            "winner": None if ties else leader, "default": default,
            "shapes": [{"shape": "5124x700x2048", "flops": 1, "best": leader,
                        "tiles": [{"name": n, "gflops": 80 * s, "vs_best": iv(s)}
                                  for n, s in speeds.items()],
                        "peers": {"numpy": 75.0}}],
            "race": {"rounds": 8, "stopped": "equivalent", "seconds": 40.0, "budget": 120.0,
                     "margin": 0.03, "level": 0.95, "min_rounds": 6, "max_rounds": 40,
                     "dropped": {"avx2_8x8": 6}, "min_time": 0.02}}


def test_sweep_output_names_the_tie_and_a_next_step_that_runs(monkeypatch, capsys):
    import shlex
    import sys
    from microkernel import sweep as sw
    monkeypatch.setattr(sw, "sweep", lambda *a, **k: _result(["avx2_6x16"]))
    assert main(["sweep"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "tie: avx2_4x24_u8, avx2_6x16" in out
    assert "gemm()'s default avx2_4x24_u8: the leader" in out
    cmd = f"{shlex.quote(sys.executable)} -m microkernel compare --kernels avx2_4x24_u8,avx2_6x16 --workload deepbench"
    assert cmd in out
    assert "behind@6" in out and "3072x1x1024" not in out.split("per shape")[1]


def test_sweep_output_when_another_tile_leads(monkeypatch, capsys):
    from microkernel import sweep as sw
    monkeypatch.setattr(sw, "sweep", lambda *a, **k: _result([], leader="avx2_6x16"))
    assert main(["sweep"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "winner: avx2_6x16" in out
    assert "gemm()'s default avx2_4x24_u8: behind, -1.5% [-2.0, -1.0] against the leader" in out
    res = _result([], leader="avx2_6x16")
    res["rows"][1].update(valid=False, status="invalid", vs_leader=None)
    monkeypatch.setattr(sw, "sweep", lambda *a, **k: res)
    assert main(["sweep"]) == 0
    assert "gemm()'s default avx2_4x24_u8 failed here" in " ".join(capsys.readouterr().out.split())


def test_sweep_plain_progress_lines_when_not_a_terminal(monkeypatch, capsys):
    from microkernel import sweep as sw

    def fake(*a, progress=None, **k):
        progress("avx2_4x16: compile")
        progress("workload race: round 3")
        return _result([])
    monkeypatch.setattr(sw, "sweep", fake)
    assert main(["sweep"]) == 0
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert lines[0].endswith("avx2_4x16: compile") and lines[0].startswith("[")
    assert " s] workload race: round 3" in lines[1]


@pytest.mark.parametrize("argv,message", [
    # checked by the sweep command after parsing (main returns 2)
    ("--isa bogus", "known ISAs: scalar, avx2, avx512, neon, sve"),
    ("--json /nonexistent-dir/s.json", "--json /nonexistent-dir/s.json: directory"),
    ("--plot /nonexistent-dir/s.png", "--plot /nonexistent-dir/s.png: directory"),
    ("--budget 0", "--budget: expected a finite number > 0, got '0'"),
    ("--budget -1", "--budget: expected a finite number > 0, got '-1'"),
    ("--rounds 1", "--rounds must be >= 2"),
    ("--peers numpy,mkl", "--peers: unknown mkl"),
    # rejected by the parser's argument types (SystemExit(2))
    ("--mr 0", "--mr: values must be positive integers, got 0"),
    ("--nr -8", "--nr: values must be positive integers, got -8"),
    ("--mr x", "--mr: expected comma-separated positive integers"),
    ("--threads 0", "--threads: must be a positive integer, got 0"),
    ("--scale 0", "--scale: must be a positive integer"),
    ("--margin 60%", "--margin: must be in [0, 0.5)"),
])
def test_sweep_argument_errors_before_any_work(argv, message, capsys, monkeypatch):
    """A bad sweep argument exits with status 2 and a message naming it, before any
    build or timing."""
    from microkernel import build
    from microkernel import sweep as sw
    monkeypatch.setattr(sw, "sweep", lambda *a, **k: pytest.fail("the sweep started"))
    before = build.BUILD_COUNT[0]
    try:
        status = main(["sweep", *argv.split()])
    except SystemExit as exc:
        status = exc.code
    assert status == 2
    assert message in capsys.readouterr().err
    assert build.BUILD_COUNT[0] == before


def test_sweep_plot_without_matplotlib_says_how_to_install(monkeypatch, capsys, tmp_path):
    import importlib.util
    from microkernel import sweep as sw
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    monkeypatch.setattr(sw, "sweep", lambda *a, **k: pytest.fail("the sweep started"))
    assert main(["sweep", "--plot", str(tmp_path / "s.png")]) == 2
    assert "-m pip install matplotlib" in capsys.readouterr().err


def test_sweep_warns_about_more_threads_than_cpus(monkeypatch, capsys):
    from microkernel import sweep as sw
    from microkernel.threads import max_threads
    monkeypatch.setattr(sw, "sweep", lambda *a, **k: _result([]))
    top = max_threads()           # 8 per CPU at least: more than the CPUs, still allowed
    assert main(["sweep", "--threads", str(top)]) == 0
    assert f"warning: --threads {top} is more than the" in capsys.readouterr().err
    assert main(["sweep", "--threads", str(top + 1)]) == 2
    assert f"--threads must be between 1 and {top}" in capsys.readouterr().err


@pytest.mark.skipif(mk.probe().arch != "x86_64", reason="needs an x86-64 machine")
def test_sweep_for_an_isa_this_cpu_cannot_run_is_predicted(tmp_path, capsys, monkeypatch):
    # a CPU with AVX-512 is narrowed to AVX2 (MICROKERNEL_ISA), so that avx512 is an ISA
    # this process cannot run on every x86-64 machine
    monkeypatch.setenv("MICROKERNEL_ISA", "avx2")
    out = tmp_path / "p.json"
    assert main(["sweep", "--isa", "avx512", "--mr", "6,8", "--nr", "16,32",
                 "--json", str(out)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "PREDICTED, not measured" in text and "this machine cannot run avx512" in text
    res = json.loads(out.read_text())
    assert res["predicted"] and {r["name"] for r in res["rows"]} == {
        "avx512_6x16", "avx512_8x16", "avx512_6x32", "avx512_8x32"}
    assert all(r["spills"] is not None for r in res["rows"])
    assert "l1" not in res["rows"][0] and "vs_numpy" not in res["rows"][0]


def test_bench_runs_and_saves(tmp_path):
    out = tmp_path / "b.json"
    assert main(["bench", "--kernel", "scalar_4x4", "--sizes", "64", "--rounds", "4",
                 "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["peak"]["gflops"] > 0 and d["l1"][0]["gflops"] > 0
    assert d["l1"][0]["pct_peak_lo"] <= d["l1"][0]["pct_peak"] <= d["l1"][0]["pct_peak_hi"]
    r = d["gemm"][0]["peers"]["numpy"]["ratio"]
    assert r["lo"] <= r["point"] <= r["hi"] and r["rounds"] == 4
    assert all(len(s["seconds"]) == 4 for s in d["samples"]["1"])
    # one thread: % of peak paired with the peak loop timed beside the shape, per round
    pk = d["gemm"][0]["pct_peak"]
    assert pk["lo"] <= pk["point"] <= pk["hi"] and pk["rounds"] == 4
    peak_s = next(s for s in d["samples"]["1"] if s["contender"] == "fma_peak")
    ours_s = next(s for s in d["samples"]["1"] if s["contender"] == "scalar_4x4")
    per_round = [100 * (ours_s["flops"] / t) / (peak_s["flops"] / tp)
                 for t, tp in zip(ours_s["seconds"], peak_s["seconds"])]
    assert pk["point"] == pytest.approx(float(np.median(per_round)))


def test_bench_blocking_override(tmp_path, capsys, monkeypatch):
    import sys
    gemm_mod = sys.modules["microkernel.gemm"]     # the package's `gemm` is the function
    seen = []
    real = gemm_mod.gemm

    def spy(A, B, C=None, **kw):
        seen.append(kw.get("blocking"))
        return real(A, B, C, **kw)
    monkeypatch.setattr(gemm_mod, "gemm", spy)
    out = tmp_path / "b.json"
    # the first --kernel is the one gemm() runs; the L1 table has them all
    assert main(["bench", "--kernel", "scalar_4x4", "--kernel", mk.kernels()[0], "--sizes", "40",
                 "--rounds", "2", "--blocking", "kc=16,nc=12", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert len(d["l1"]) == 2 and d["gemm"][0]["kernel"] == "scalar_4x4"
    model = blocking_for(mk.get_kernel("scalar_4x4"))
    assert d["gemm_blocking"] == {"1": {"kc": 16, "mc": model.mc, "nc": 12, "chunks": TEAM_CHUNKS,
                                        "parts": TEAM_PARTS, "overridden": ["kc", "nc"]}}
    # the overrides go to gemm(), which applies them to its own model blocking per call
    assert seen and all(b == {"kc": 16, "nc": 12} for b in seen)
    assert "KC=16" in capsys.readouterr().out
    assert main(["bench", "--kernel", "scalar_4x4", "--sizes", "8", "--blocking", "mc=0"]) == 2
    assert "mc must be a positive integer" in capsys.readouterr().err
    for bad in ("kc", "kc=x", "xc=4", "kc=4;mc=8", "", ",", "kc=4,kc=8", "kc=-4", "kc=--5"):
        with pytest.raises(SystemExit):
            main(["bench", "--blocking", bad])


def test_bench_bad_values_name_the_argument(capsys, tmp_path):
    for argv, message in ((["--rounds", "0"], "--rounds: must be a positive integer"),
                          (["--sizes", "0"], "--sizes: values must be positive integers"),
                          (["--kc", "0"], "--kc: must be a positive integer")):
        with pytest.raises(SystemExit):
            main(["bench", *argv])
        assert message in capsys.readouterr().err
    assert main(["bench", "--json", str(tmp_path / "no" / "b.json")]) == 2
    assert "directory" in capsys.readouterr().err


def test_gemm_contenders_bind_their_own_operands():
    """Each shape's contenders compute that shape's product (a closure over the loop's
    last operands would time the last shape for every shape)."""
    from microkernel import bench, workloads
    k = mk.get_kernel("scalar_4x4")
    problems = [workloads.Problem(10, 12, 7), workloads.Problem(21, 5, 9)]
    cs = bench.gemm_contenders([k], problems)
    for c in cs:
        p = next(p for p in problems if p.label == c.shape)
        C = c.fn()
        assert C.shape == (p.m, p.n)


def test_python_dash_m_runs_the_cli():
    import subprocess
    import sys
    res = subprocess.run([sys.executable, "-m", "microkernel", "--help"], capture_output=True,
                         text=True)
    assert res.returncode == 0 and "compare" in res.stdout


def test_json_results_get_an_ordinary_files_mode(tmp_path):
    """write_json goes through a temporary file, but the result is readable as any file
    the user writes (umask applied), not mkstemp's 0600."""
    import os
    from microkernel.commands.common import write_json
    old = os.umask(0o022)
    try:
        write_json(tmp_path / "r.json", {"a": 1})
    finally:
        os.umask(old)
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == 0o644
    assert json.loads((tmp_path / "r.json").read_text()) == {"a": 1}


@pytest.mark.parametrize("argv,message", [
    # each refused before anything is built, allocated or timed
    ("bench --sizes 1000000000", "--sizes: the operands of 1000000000x1000000000x1000000000"),
    ("compare --kernels scalar_4x4 --sizes 200000", "GiB, more than the"),
    ("compare --kernels scalar_4x4 --sizes 64 --scale 4", "--scale 4 divides the DeepBench"),
    ("bench --kc 1000000000", "--kc must be at most 65536"),
    ("bench --threads 100000", "--threads must be between 1 and"),
    ("compare --kernels scalar_4x4 --threads 100000", "--threads must be between 1 and"),
    ("compare --kernels scalar_4x4: --sizes 16", "nothing after ':'"),
    ("compare --kernels scalar_4x4@ --sizes 16", "no file after '@'"),
    ("bench --kernel scalar_4x4@ --sizes 16", "no file after '@'"),
    ("validate --kernel scalar_4x4_u100000", "k_unroll must be at most 64"),
    ("bench --sizes 16 --json /proc/b.json", "--json /proc/b.json: cannot write in '/proc'"),
])
def test_bad_input_is_refused_before_any_work(argv, message, capsys, monkeypatch):
    from microkernel import build
    monkeypatch.setattr("microkernel.timing.Rounds.round",
                        lambda *a, **k: pytest.fail("timed despite bad input"))
    before = build.BUILD_COUNT[0]
    assert main(argv.split()) == 2
    assert message in " ".join(capsys.readouterr().err.split())
    assert build.BUILD_COUNT[0] == before


def test_mixed_input_types_name_where_the_run_s_type_came_from(capsys):
    assert main(["compare", "--kernels", "scalar_4x4;scalar_bf16_4x4", "--sizes", "16"]) == 2
    assert ("not the float32 @ float32 of scalar_4x4 (without --dtype, the first kernel's "
            "inputs are the run's)") in " ".join(capsys.readouterr().err.split())


def test_a_bad_thread_count_in_the_environment_is_refused_before_timing(capsys, monkeypatch):
    monkeypatch.setenv("MICROKERNEL_NUM_THREADS", "0")
    monkeypatch.setattr("microkernel.timing.Rounds.round",
                        lambda *a, **k: pytest.fail("timed despite bad input"))
    assert main(["bench", "--kernel", "scalar_4x4", "--sizes", "16"]) == 2
    assert "MICROKERNEL_NUM_THREADS must be between 1 and" in capsys.readouterr().err


def test_template_does_not_overwrite_a_file_unless_forced(tmp_path, capsys):
    mine = tmp_path / "mine.c"
    mine.write_text("/* my kernel */")
    assert main(["template", "scalar_4x4", "-o", str(mine)]) == 2
    assert "the file exists" in capsys.readouterr().err and mine.read_text() == "/* my kernel */"
    assert main(["template", "scalar_4x4", "-o", str(mine), "--force"]) == 0
    assert "mk_ukernel_scalar_4x4" in mine.read_text()


def test_second_hunt_refusals(tmp_path, capsys, monkeypatch):
    """Values the C driver would ignore, a cache path that is a file, a template that a
    bad MICROKERNEL_ISA stops before it writes, cross options that would prove nothing."""
    from microkernel import threads
    for var, bad in (("MICROKERNEL_THREADING", "Team"), ("MICROKERNEL_POOL", "off"),
                     ("MICROKERNEL_TEAM_GRID", "SQUARE")):
        monkeypatch.setenv(var, bad)
        with pytest.raises(ValueError, match=f"{var}='{bad}' is not one of"):
            threads.check_driver_env()
        monkeypatch.delenv(var)
    threads.check_driver_env()
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("MICROKERNEL_CACHE_DIR", str(tmp_path / "file"))
    from microkernel import build
    with pytest.raises(OSError, match="not a directory"):
        build.cache_dir()
    monkeypatch.delenv("MICROKERNEL_CACHE_DIR")
    monkeypatch.setenv("MICROKERNEL_ISA", "junk")
    out = tmp_path / "t.c"
    assert main(["template", "scalar_4x4", "-o", str(out)]) == 2 and not out.exists()
    monkeypatch.delenv("MICROKERNEL_ISA")
    capsys.readouterr()
    for argv, message in ((["--kernels", "neon_4x16", "--seed", "-1"], "--seed: expected an integer >= 0"),):
        with pytest.raises(SystemExit):
            main(["cross", *argv])
        assert message in capsys.readouterr().err


def test_cross_refuses_sme_at_no_power_of_two(capsys):
    assert main(["cross", "--kernels", "sme_1x4v", "--vl", "384", "--quick"]) == 2
    assert "SME runs at powers of two only" in capsys.readouterr().err


def test_a_dependency_missing_is_a_message_not_a_traceback(tmp_path):
    """From a source tree without the package's dependencies (rich here), `--help` of a
    command says it is unavailable and why, and running one exits 2 with the missing
    module named: before, --help showed an empty parser and a run a traceback."""
    import subprocess
    import sys
    import pathlib
    blocker = tmp_path / "rich"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError(\"No module named 'rich'\")\n")
    root = pathlib.Path(__file__).resolve().parents[1]
    env = {"PYTHONPATH": f"{tmp_path}:{root}", "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-m", "microkernel", "bench", "--help"],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0 and "unavailable here (No module named 'rich')" in r.stdout
    r = subprocess.run([sys.executable, "-m", "microkernel", "bench"],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "No module named 'rich'" in r.stderr and "pip install -e ." in r.stderr


@pytest.mark.parametrize("argv", [["probe"], ["validate", "--quick"], ["bench"]])
def test_numpy_missing_is_a_message_not_a_traceback(argv):
    """Without numpy the package still imports (its gemm() says what is missing) and
    every command exits 2 naming numpy: before, `import microkernel` itself raised."""
    import subprocess
    import sys
    code = ("import sys; sys.modules['numpy'] = None\n"
            "import microkernel as mk\n"
            "assert mk.MISSING_DEPENDENCY == 'numpy'\n"
            "try:\n    mk.gemm(1, 2)\nexcept ModuleNotFoundError as e:\n"
            "    assert 'needs numpy' in str(e)\n"
            "else:\n    raise SystemExit('gemm() ran without numpy')\n"
            "from microkernel.cli import main\n"
            f"sys.exit(main({argv!r}))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "numpy" in r.stderr
