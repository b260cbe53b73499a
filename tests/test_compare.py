"""``microkernel compare``: contenders parsed (blocking, source), each timed through
gemm() with its own blocking in the same interleaved rounds, every sample in the JSON;
a wrong result or a bad argument stops it before any timing."""
import json
import sys

import pytest

from microkernel.cli import main


def test_compare_times_each_contender_with_its_blocking(monkeypatch, tmp_path, capsys):
    gemm_mod = sys.modules["microkernel.gemm"]
    seen = []
    real = gemm_mod.gemm

    def spy(A, B, C=None, **kw):
        seen.append((kw["kernel"].name, kw["blocking"]))
        return real(A, B, C, **kw)
    monkeypatch.setattr(gemm_mod, "gemm", spy)
    out = tmp_path / "c.json"
    assert main(["compare", "--kernels", "scalar_4x4;scalar_4x4:kc=16,mc=8", "--sizes", "24,40",
                 "--rounds", "3", "--min-time", "0.001", "--peers", "numpy",
                 "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["rounds"] == 3 and d["threads"] == 1
    assert [s["shape"] for s in d["shapes"]] == ["24x24x24", "40x40x40"]
    assert list(d["shapes"][0]["contenders"]) == ["scalar_4x4", "scalar_4x4:kc=16,mc=8", "numpy"]
    # no override: gemm()'s own blocking per call (None); overrides: a dict that gemm()
    # applies to that blocking
    assert {None if b is None else tuple(sorted(b.items())) for _, b in seen} == \
        {None, (("kc", 16), ("mc", 8))}
    # every sample: 2 shapes x 3 contenders, one per round
    assert len(d["samples"]) == 6 and all(len(s["seconds"]) == 3 for s in d["samples"])
    v = d["workload"]["scalar_4x4:kc=16,mc=8"]["vs_first"]
    assert v["lo"] <= v["point"] <= v["hi"] and v["rounds"] == 3
    assert d["verdict"]["leader"] in ("scalar_4x4", "scalar_4x4:kc=16,mc=8")
    text = " ".join(capsys.readouterr().out.split())
    assert "per shape" in text and ("winner:" in text or "tie:" in text)


def test_compare_stops_on_a_wrong_result(monkeypatch, capsys):
    gemm_mod = sys.modules["microkernel.gemm"]
    real = gemm_mod.gemm

    def wrong(A, B, C=None, **kw):
        out = real(A, B, C, **kw)
        if kw["blocking"] is not None and kw["blocking"]["kc"] == 16:
            C[0, 0] += 1.0          # one element off
        return out
    monkeypatch.setattr(gemm_mod, "gemm", wrong)
    monkeypatch.setattr("microkernel.timing.Rounds.round",
                        lambda *a, **k: pytest.fail("timed a wrong kernel"))
    assert main(["compare", "--kernels", "scalar_4x4;scalar_4x4:kc=16", "--sizes", "24"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "not timed: scalar_4x4:kc=16 on 24x24x24: wrong result" in out


@pytest.mark.parametrize("argv,message", [
    (["--kernels", "bogus_4x4"], "--kernels 'bogus_4x4'"),
    (["--kernels", "scalar_4x4,scalar_4x4"], "given twice"),
    (["--kernels", "scalar_4x4:kc=0"], "kc must be a positive integer"),
    (["--kernels", "scalar_4x4:mc=4,kc=8,scalar_4x4"], "separate contenders with ';'"),
    (["--kernels", "scalar_4x4", "--sizes", "0"], "--sizes: values must be positive integers, got 0"),
    (["--kernels", "scalar_4x4", "--sizes", "512,x"], "--sizes: expected comma-separated positive"),
    (["--kernels", "scalar_4x4", "--peers", "mkl"], "--peers: 'mkl'"),
    (["--kernels", "scalar_4x4", "--sizes", "", "--workload", "deepbench", "--scale", "64",
      "--json", "/no/such/dir/c.json"], "--json /no/such/dir/c.json: directory"),
    (["--kernels", "scalar_4x4", "--json", "-"], "--json -: give a file name"),
])
def test_compare_bad_arguments(argv, message, capsys, monkeypatch):
    monkeypatch.setattr("microkernel.timing.Rounds.round",
                        lambda *a, **k: pytest.fail("timing started"))
    try:
        status = main(["compare", *argv])
    except SystemExit as exc:    # rejected by the parser's argument types
        status = exc.code
    assert status == 2
    assert message in " ".join(capsys.readouterr().err.split())


def test_compare_without_shapes_is_an_error(capsys):
    assert main(["compare", "--kernels", "scalar_4x4", "--sizes", ""]) == 2
    assert "no shapes to time" in capsys.readouterr().err


@pytest.mark.parametrize("env,threads,pause,names,expect", [
    (None, 2, 0.0, ["numpy"], "2^28"),              # OpenBLAS's default spin
    ("40", 4, 0.0, ["numpy", "torch"], "2^30"),     # clamped to 30, as OpenBLAS does
    ("x", 2, 0.0, ["numpy"], "2^28"),               # not a number: OpenBLAS's default
    ("4", 2, 0.0, ["numpy"], None),                 # workers sleep at once
    (None, 1, 0.0, ["numpy"], None),                # one thread: no workers
    (None, 2, 0.3, ["numpy"], None),                # the pause outlasts the spin
    (None, 2, 0.0, ["torch"], None),                # numpy not timed
])
def test_openblas_spin_note(monkeypatch, env, threads, pause, names, expect):
    from microkernel import peers
    monkeypatch.setattr(peers, "describe", lambda n: "numpy (openblas 0.3.31 Haswell)")
    if env is None:
        monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", env)
    note = peers.openblas_spin_note(names, threads, pause)
    if expect is None:
        assert note is None
    else:
        assert expect in note and "OPENBLAS_THREAD_TIMEOUT=4" in note


@pytest.mark.parametrize("env,threads,pause,names,expect", [
    ({}, 16, 0.0, ["numpy", "torch"], "300,000"),                # libgomp's default spin
    ({"GOMP_SPINCOUNT": "300000"}, 4, 0.0, ["torch"], "300,000"),  # the user's long spin
    ({"GOMP_SPINCOUNT": "20000"}, 4, 0.0, ["torch"], None),      # the user's short spin
    ({"GOMP_SPINCOUNT": "x"}, 4, 0.0, ["torch"], "300,000"),     # not a number
    ({"OMP_WAIT_POLICY": "PASSIVE"}, 4, 0.0, ["torch"], None),   # workers sleep at once
    ({}, 1, 0.0, ["torch"], None),                               # one thread: no workers
    ({}, 4, 0.3, ["torch"], None),                               # the pause outlasts it
    ({}, 4, 0.0, ["numpy"], None),                               # torch not timed
])
def test_torch_spin_note(monkeypatch, env, threads, pause, names, expect):
    from microkernel import peers, threads as threads_mod
    for var in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    # as prepare_runtime records it: the user's setting, or ours (GOMP_SPINCOUNT=20000)
    monkeypatch.setitem(threads_mod._RUNTIME, "user", bool(env))
    if not env:
        monkeypatch.setenv("GOMP_SPINCOUNT", str(threads_mod.SPIN_COUNT))
    note = peers.torch_spin_note(names, threads, pause)
    if expect is None:
        assert note is None
    else:
        assert expect in note and "GOMP_SPINCOUNT=20000" in note


def test_openblas_spin_note_only_for_openblas(monkeypatch):
    from microkernel import peers
    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    monkeypatch.setattr(peers, "describe", lambda n: "numpy (mkl 2025.1 SkylakeX)")
    assert peers.openblas_spin_note(["numpy"], 2, 0.0) is None


def test_compare_names_the_shapes_a_scale_merges(monkeypatch, capsys):
    """DeepBench at --scale 8 has shapes that coincide: compare times each once and
    says which (before any timing)."""
    from microkernel import bench
    def stop(*a, **k):
        raise bench.WrongResult("stopped here by the test")
    monkeypatch.setattr(bench, "gemm_contenders", stop)
    assert main(["compare", "--kernels", "scalar_4x4", "--workload", "deepbench",
                 "--scale", "8", "--rounds", "2"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "--scale 8 makes some deepbench shapes the same" in out
    assert "384x187x128 (2 shapes)" in out
