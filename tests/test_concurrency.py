"""Concurrent use (issue 7, item 4).

* 8 processes and, separately, 8 threads (of a fresh interpreter) compile and run
  the same new tile at once from an empty cache (``MICROKERNEL_CACHE_DIR`` in a
  temporary directory): exactly one build (``build.BUILD_COUNT`` summed over the
  processes / in the threads' process, and one shared object in the cache), one
  module per process, no leftover temporary files, the cached bytes match their
  ``.sha256`` sidecar, every result right.
* A truncated, corrupted, emptied or unverifiable cache entry is detected and
  rebuilt by the next process, whose results are right; the process after that
  uses the rebuilt entry without building.
* ``gemm()`` from several Python threads at once (the C driver runs without the GIL;
  each calling thread has its own packing workspace) returns right results. Speed is
  never asserted.

Each test uses its own tile (an unusual k-unroll) so that no other test, and no
earlier import in this process, has loaded it.
"""
from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import microkernel as mk
from microkernel import validate
from microkernel.tile import TileSpec

NPROC = NTHREADS = 8
HAS_AVX2 = "avx2" in mk.probe().isas


def _tile(unroll: int) -> str:
    """A tile nobody else uses: 7 x 8, with a k-unroll of its own per test."""
    return f"avx2_7x8_u{unroll}" if HAS_AVX2 else f"scalar_7x3_u{unroll}"


def _entries(cache: pathlib.Path, name: str) -> list[pathlib.Path]:
    return sorted(p for p in cache.iterdir()
                  if p.name.startswith(f"_mk_{name}_") and p.name.endswith(".so"))


def _assert_clean_entry(cache: pathlib.Path, name: str) -> pathlib.Path:
    so = _entries(cache, name)
    assert len(so) == 1, so
    side = so[0].with_name(so[0].name + ".sha256")
    assert side.read_text().strip() == hashlib.sha256(so[0].read_bytes()).hexdigest()
    leftovers = [p.name for p in cache.iterdir() if p.name.startswith(".build-")]
    assert leftovers == [], leftovers
    return so[0]


def _check_gemms(kern, rng, shapes=((37, 29, 23), (7, 8, 4), (1, 1, 1), (64, 65, 130)),
                 threads=1) -> list[str]:
    """Run a few gemms with ``kern``; return descriptions of the wrong ones."""
    bad = []
    for (m, n, k) in shapes:
        for alpha, beta in ((1.0, 0.0), (-1.5, 0.5)):
            A = rng.uniform(-1, 1, (m, k)).astype(np.float32)
            B = rng.uniform(-1, 1, (n, k)).astype(np.float32).T
            C = rng.uniform(-1, 1, (m, n)).astype(np.float32)
            if beta == 0.0:
                C[...] = np.nan
            C0 = C.copy()
            out = mk.gemm(A, B, C, alpha=alpha, beta=beta, kernel=kern, threads=threads)
            ref, bound = validate.reference(A, B, C0, alpha, beta)
            ok, ratio, _, detail = validate.check(out, ref, bound)
            if not ok or out is not C:
                bad.append(f"{kern.name} {m}x{n}x{k} alpha={alpha} beta={beta}: {ratio} {detail}")
    return bad


# -- 8 processes --------------------------------------------------------------------------

WORKER = textwrap.dedent("""
    import json, os, pathlib, sys, time
    import numpy as np
    import microkernel as mk
    from microkernel import build
    sys.path.insert(0, {tests_dir!r})
    from test_concurrency import _check_gemms
    ready, go, name = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
    mk.probe()                       # may build the probe (source tree): not counted
    before = build.BUILD_COUNT[0]
    ready.touch()
    while not go.exists():
        time.sleep(0.0005)
    kern = mk.get_kernel(name)       # all 8 at once: compile (one of us) or load
    bad = _check_gemms(kern, np.random.default_rng(os.getpid()), threads=1 + os.getpid() % 2)
    print("RESULT " + json.dumps({{"builds": build.BUILD_COUNT[0] - before, "bad": bad,
                                  "file": kern.module.__file__}}))
""")


def _in_threads(n: int, fn, timeout: float | None = None) -> dict:
    """Run fn(i) for i < n, each in its own thread, released together by a barrier;
    returns {i: fn's result, or the exception it raised} (threads still running after
    ``timeout`` seconds are missing from it)."""
    barrier = threading.Barrier(n)
    out: dict[int, object] = {}

    def work(i):
        try:
            barrier.wait()
            out[i] = fn(i)
        except BaseException as exc:
            out[i] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    return out


def _worker_script(tmp: pathlib.Path) -> pathlib.Path:
    path = tmp / "worker.py"
    path.write_text(WORKER.format(tests_dir=str(pathlib.Path(__file__).parent)))
    return path


def _env(cache: pathlib.Path) -> dict:
    env = {**os.environ, "MICROKERNEL_CACHE_DIR": str(cache)}
    env.pop("MICROKERNEL_ISA", None)
    return env


def _results(procs) -> list[dict]:
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr[-3000:]
        line = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")][-1]
        out.append(json.loads(line[len("RESULT "):]))
    return out


def test_eight_processes_one_build(tmp_path):
    name = _tile(5)
    cache = tmp_path / "cache"
    cache.mkdir()
    script = _worker_script(tmp_path)
    go = tmp_path / "go"
    readies = [tmp_path / f"ready{i}" for i in range(NPROC)]
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(go), name],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=_env(cache)) for r in readies]
    try:
        deadline = time.monotonic() + 240
        while not all(r.exists() for r in readies):
            assert time.monotonic() < deadline, "workers did not start"
            assert all(p.poll() is None for p in procs), "a worker died before the start"
            time.sleep(0.01)
        assert _entries(cache, name) == []          # the cache has no such entry yet
        go.touch()                                  # all 8 at once
        res = _results(procs)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert sum(r["builds"] for r in res) == 1, res
    assert [r["bad"] for r in res] == [[]] * NPROC
    so = _assert_clean_entry(cache, name)
    assert {r["file"] for r in res} == {str(so)}


# -- 8 threads ------------------------------------------------------------------------------

THREADS = textwrap.dedent("""
    import json, sys
    import numpy as np
    import microkernel as mk
    from microkernel import build
    sys.path.insert(0, {tests_dir!r})
    from test_concurrency import _check_gemms, _in_threads
    name, nthreads = sys.argv[1], int(sys.argv[2])
    mk.probe()                       # may build the probe (source tree): not counted
    before = build.BUILD_COUNT[0]
    modules, bad = {{}}, []
    def work(i):
        kern = mk.get_kernel(name)   # all at once: compile (one of us) or load
        modules[i] = kern.module.__name__
        return _check_gemms(kern, np.random.default_rng(i), threads=1 + i % 2)
    for i, res in _in_threads(nthreads, work).items():
        bad.extend([f"thread {{i}}: {{type(res).__name__}}: {{res}}"]
                   if isinstance(res, BaseException) else res)
    print("RESULT " + json.dumps({{"builds": build.BUILD_COUNT[0] - before,
                                  "modules": sorted(set(modules.values())), "bad": bad}}))
""")


@pytest.mark.parametrize("unroll", [6, 8, 9, 11])
def test_eight_threads_one_build(tmp_path, unroll):
    """8 threads of a fresh interpreter (as an application starts them) ask for the
    same new tile at once. Fresh, because the first use of process-wide state is
    part of what races: on Python < 3.12 ``sysconfig.get_config_var`` can return None
    to one thread while another initialises it, and build.py hashes EXT_SUFFIX into
    the module name (two names, two builds, two modules for one tile; seen here in
    about 1 run in 6 before the fix, hence several rounds)."""
    name = _tile(unroll)
    cache = tmp_path / "cache"
    cache.mkdir()
    script = tmp_path / "threads.py"
    script.write_text(THREADS.format(tests_dir=str(pathlib.Path(__file__).parent)))
    p = subprocess.Popen([sys.executable, str(script), name, str(NTHREADS)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=_env(cache))
    r = _results([p])[0]
    assert r["bad"] == [], r
    assert len(r["modules"]) == 1, f"one tile, several modules in one process: {r}"
    assert r["builds"] == 1, r
    _assert_clean_entry(cache, name)


def test_two_modules_of_one_tile_in_one_process(monkeypatch, tmp_path):
    """What the race above produced: the same tile name served by two different
    modules in one process (here: the glue changed between two loads, as when a
    user edits c_src/ in a long session and loads the tile again). gemm must use
    each Kernel's own module (cffi objects of one module are refused by another)."""
    from microkernel import kernel as kmod
    monkeypatch.setenv("MICROKERNEL_CACHE_DIR", str(tmp_path))
    spec = TileSpec.from_name(_tile(10))
    first = mk.get_kernel(spec)
    monkeypatch.setattr(kmod, "GLUE", kmod.GLUE + "\n/* an edited variant */\n")
    second = kmod.load.__wrapped__(spec)        # bypass load()'s cache, clear nothing
    assert second.module is not first.module and second.name == first.name
    rng = np.random.default_rng(3)
    for kern in (first, second, first, second):
        assert _check_gemms(kern, rng, shapes=((9, 10, 11),)) == []


# -- a damaged cache entry is rebuilt ----------------------------------------------------------

ONE = textwrap.dedent("""
    import json, sys
    import numpy as np
    import microkernel as mk
    from microkernel import build
    sys.path.insert(0, {tests_dir!r})
    from test_concurrency import _check_gemms
    mk.probe()
    before = build.BUILD_COUNT[0]
    kern = mk.get_kernel(sys.argv[1])
    bad = _check_gemms(kern, np.random.default_rng(1))
    print("RESULT " + json.dumps({{"builds": build.BUILD_COUNT[0] - before, "bad": bad,
                                  "file": kern.module.__file__}}))
""")


def _one(tmp: pathlib.Path, cache: pathlib.Path, name: str) -> dict:
    script = tmp / "one.py"
    if not script.exists():
        script.write_text(ONE.format(tests_dir=str(pathlib.Path(__file__).parent)))
    p = subprocess.Popen([sys.executable, str(script), name], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=_env(cache))
    return _results([p])[0]


def _damage(so: pathlib.Path, how: str) -> None:
    data = so.read_bytes()
    side = so.with_name(so.name + ".sha256")
    if how == "truncated":
        so.write_bytes(data[: len(data) // 2])
    elif how == "corrupted":        # same size, some bytes of the code flipped
        mid = len(data) // 2
        so.write_bytes(data[:mid] + bytes(b ^ 0xFF for b in data[mid:mid + 64]) + data[mid + 64:])
    elif how == "empty":
        so.write_bytes(b"")
    elif how == "no_sidecar":
        side.unlink()
    elif how == "bad_sidecar":
        side.write_text("0" * 64 + "\n")
    else:
        raise ValueError(how)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A cache holding one freshly built entry (built in a subprocess)."""
    tmp = tmp_path_factory.mktemp("pristine")
    cache = tmp / "cache"
    cache.mkdir()
    name = _tile(7)
    r = _one(tmp, cache, name)
    assert r["builds"] == 1 and r["bad"] == []
    _assert_clean_entry(cache, name)
    return cache, name


@pytest.mark.parametrize("how", ["truncated", "corrupted", "empty", "no_sidecar", "bad_sidecar"])
def test_damaged_cache_entry_is_rebuilt(tmp_path, pristine, how):
    src_cache, name = pristine
    cache = tmp_path / "cache"
    shutil.copytree(src_cache, cache)
    so = _entries(cache, name)[0]
    good = so.read_bytes()
    _damage(so, how)
    r = _one(tmp_path, cache, name)
    assert r["builds"] == 1, f"{how} entry was not rebuilt: {r}"
    assert r["bad"] == []
    rebuilt = _assert_clean_entry(cache, name)
    assert rebuilt == so and r["file"] == str(so)
    assert len(rebuilt.read_bytes()) == len(good)
    again = _one(tmp_path, cache, name)           # the rebuilt entry is trusted
    assert again["builds"] == 0 and again["bad"] == []


# -- gemm() from several Python threads at once ------------------------------------------------

def test_gemm_from_many_threads_is_right():
    names = mk.kernels()
    kernels = [mk.get_kernel(n) for n in names]

    def work(i):
        rng = np.random.default_rng(100 + i)
        kern = kernels[i % len(kernels)]
        bad = []
        for rep in range(6):
            shapes = [(int(rng.integers(0, 90)), int(rng.integers(0, 90)),
                       int(rng.integers(0, 300))) for _ in range(3)] + [(160, 150, 200)]
            bad += _check_gemms(kern, rng, shapes=shapes, threads=1 + (i + rep) % 2)
        return bad

    out = _in_threads(NTHREADS, work, timeout=600)
    assert len(out) == NTHREADS
    errors = [v for v in out.values() if isinstance(v, BaseException)]
    assert not errors, errors
    assert all(v == [] for v in out.values()), out


def test_shared_inputs_distinct_outputs_across_threads():
    """Many threads read the same A and B (read-only sharing) and each writes its own
    C with the same kernel: every C equals the single-threaded answer bit for bit."""
    kern = mk.get_kernel(mk.kernels()[0])
    rng = np.random.default_rng(5)
    A = rng.uniform(-1, 1, (203, 171)).astype(np.float32)
    B = rng.uniform(-1, 1, (171, 157)).astype(np.float32)
    want = mk.gemm(A, B, kernel=kern)

    def work(i):
        Cs = [mk.gemm(A, B, kernel=kern) for _ in range(5)]
        return all(np.array_equal(C, want) for C in Cs)

    got = _in_threads(NTHREADS, work, timeout=300)
    assert got == {i: True for i in range(NTHREADS)}, got
