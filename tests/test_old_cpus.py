"""The x86 fallback path on older CPUs (issue 7, item 2).

1. A static x86-64 program -- ``c_src/sanitize_main.c`` built without sanitizers: the
   probe (probe.c) and the driver (driver.c) with baseline flags, the avx2 and scalar
   kernels each with its own ISA's flags, and the AVX-512 kernel linked in but only
   called when the probe clears AVX-512 -- runs the edge catalogue, a remainder
   sweep and a random corpus under ``qemu-x86_64``:
     * ``-cpu Haswell`` (AVX2+FMA, no AVX-512): the probe must choose avx2; QEMU's
       TCG has no AVX-512 at all, so one AVX-512 instruction would kill the program
       with SIGILL (the negative control shows that it does);
     * ``-cpu Skylake-Server``: an AVX-512 CPU model that TCG cannot emulate
       (QEMU drops the bits it cannot run), so again avx2;
     * ``-cpu Nehalem`` and ``-cpu qemu64`` (no AVX): scalar.
   The same is checked through Python: ``microkernel`` itself (probe, dispatch,
   cffi kernel modules, gemm) under ``qemu-x86_64 -cpu Haswell/Nehalem python``.
2. ``objdump -d`` of the objects that must run on CPUs without AVX-512: the avx2 and
   scalar kernel modules (``microkernel.kernel.compile_only``), the probe module
   (``microkernel/_probe*.so``) and the baseline harness object (probe + driver):
   no zmm register (nor any EVEX-only register: xmm/ymm16-31, opmasks); the
   scalar, probe and baseline ones no ymm either. The AVX-512 module is the positive
   control (it must contain zmm).

Injected-CPUID probe tests (AVX-512 bits with ZMM state off, ...) live in
tests/test_probe.py.
"""
from __future__ import annotations

import importlib.util
import pathlib
import platform
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from microkernel import build, kernel
from microkernel import registry
from microkernel.tile import TileSpec

IS_X86 = platform.machine().lower() in ("x86_64", "amd64")
QEMU = shutil.which("qemu-x86_64")
OBJDUMP = shutil.which("objdump")

pytestmark = pytest.mark.skipif(not IS_X86, reason="x86-64 only")
needs_qemu = pytest.mark.skipif(
    QEMU is None, reason="qemu-x86_64 not found: install the qemu-user package "
                         "(Debian/Ubuntu: apt-get install qemu-user)")
needs_objdump = pytest.mark.skipif(
    OBJDUMP is None, reason="objdump not found: install binutils")

#: the registry's x86 built-ins and two of its stress tiles (k-unroll remainders)
KERNELS = tuple(s.name for s in registry.builtin(arch="x86_64", types="f32")) + tuple(
    s.name for s in registry.STRESS if s.name in ("avx2_3x24_u3", "scalar_3x5_u4"))
FUZZ = 300
#: qemu CPU model -> the ISA the probe must choose
CPUS = {"Haswell": "avx2", "Skylake-Server": "avx2", "Nehalem": "scalar", "qemu64": "scalar"}


def _sibling(name: str):
    """tests/<name>.py as a module (its harness builder is shared, not duplicated)."""
    path = pathlib.Path(__file__).with_name(f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_mk_{name}_helpers", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


san = _sibling("test_sanitizers")


@pytest.fixture(scope="module")
def specs():
    return [TileSpec.from_name(n) for n in KERNELS]


@pytest.fixture(scope="module")
def harness(tmp_path_factory, specs):
    """(executable, case file, directory) of the static, uninstrumented harness."""
    tmp = tmp_path_factory.mktemp("oldcpu")
    try:
        exe = san.build_harness(tmp, specs, flags=["-O2"], static=True)
    except AssertionError as exc:
        if "-static" not in str(exc):
            raise
        # no static libc (libc6-dev without libc.a): qemu-user runs a dynamic x86-64
        # program with the host's loader as well
        exe = san.build_harness(tmp / "dyn", specs, flags=["-O2"], static=False)
    cases = tmp / "catalogue.txt"
    cases.write_text("\n".join(san.catalogue_lines(specs)) + "\n")
    return exe, cases, tmp


def _qemu(cpu: str, *args, timeout=600):
    return subprocess.run([QEMU, "-cpu", cpu, *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.slow
@needs_qemu
@pytest.mark.parametrize("cpu", list(CPUS))
def test_probe_choice_and_gemm_under_qemu(harness, specs, cpu):
    exe, cases, _ = harness
    res = _qemu(cpu, exe, "--cases", cases, "--fuzz", FUZZ, "--seed", 7)
    out = res.stdout
    assert res.returncode == 0, (res.returncode, out[-4000:], res.stderr[-2000:])
    want = CPUS[cpu]
    assert f"\nchosen {want}\n" in out, out[:600]
    assert "usable_avx512=0" in out
    assert "skip avx512_8x16: the probe did not clear avx512" in out
    counts = san.parse_counts(out)
    ran = {s.name for s in specs if s.isa in ("scalar", want)}
    assert set(counts) == ran, out
    for name, c in counts.items():
        assert c["failures"] == 0 and c["catalogue"] > 0 and c["fuzz"] == FUZZ, (name, c)
    assert "FAIL" not in out
    total = re.search(r"^total cases=(\d+) failures=0$", out, re.M)
    assert total and int(total.group(1)) == sum(c["cases"] for c in counts.values())
    print(f"qemu -cpu {cpu}: chose {want}; cases per kernel: "
          + ", ".join(f"{k}={v['cases']}" for k, v in counts.items()))


@needs_qemu
@pytest.mark.parametrize("cpu,kernel_name", [("Haswell", "avx512_8x16"),
                                             ("Nehalem", "avx2_6x16")])
def test_qemu_traps_an_isa_the_cpu_lacks(harness, cpu, kernel_name):
    """Negative control: forced past the probe, the kernel dies with SIGILL, so the
    passing runs above prove that no such instruction executed."""
    exe, _, _ = harness
    res = _qemu(cpu, exe, "--ignore-probe", "--only", kernel_name, "--no-sweep",
                "--fuzz", 5, timeout=120)
    assert res.returncode in (-4, 128 + 4), (res.returncode, res.stdout[-2000:], res.stderr[-2000:])


PY_SCRIPT = textwrap.dedent("""
    import json, numpy as np, microkernel as mk
    from microkernel import validate
    out = {"isas": list(mk.probe().isas), "kernels": mk.kernels(), "bad": []}
    rng = np.random.default_rng(0)
    for name in [None] + mk.kernels():
        for (m, n, k, alpha, beta) in [(37, 29, 23, 1.5, 0.5), (6, 16, 4, 1.0, 0.0),
                                       (1, 1, 1, -1.0, 1.0), (50, 3, 0, 2.0, -0.5)]:
            A = rng.uniform(-1, 1, (m, k)).astype(np.float32)
            B = rng.uniform(-1, 1, (k, n)).astype(np.float32)[::-1]
            C = rng.uniform(-1, 1, (n, m)).astype(np.float32).T
            C0 = C.copy()
            mk.gemm(A, B, C, alpha=alpha, beta=beta, kernel=name)
            ref, bound = validate.reference(A, B, C0, alpha, beta)
            if not validate.check(C, ref, bound)[0]:
                out["bad"].append([name, m, n, k])
    out["refused"] = []
    for name in ("avx512_8x16", "avx2_6x16"):
        try:
            mk.get_kernel(name)
        except mk.IsaUnavailableError:
            out["refused"].append(name)
    print("RESULT " + json.dumps(out))
""")


@needs_qemu
@pytest.mark.parametrize("cpu,isas", [("Haswell", ["scalar", "avx2"]), ("Nehalem", ["scalar"])])
def test_python_package_under_qemu(cpu, isas):
    """microkernel itself (probe module, dispatch, cffi kernel modules) on the
    emulated CPU. Kernel modules are compiled natively first (same cache)."""
    import json
    for spec in registry.builtin(arch="x86_64"):
        if spec.isa in ("avx2", "scalar"):
            kernel.compile_only(spec)
    res = _qemu(cpu, sys.executable, "-c", PY_SCRIPT, timeout=600)
    assert res.returncode == 0, (res.stdout[-3000:], res.stderr[-3000:])
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    got = json.loads(line[len("RESULT "):])
    assert got["isas"] == isas
    assert list(dict.fromkeys(n.split("_")[0] for n in got["kernels"])) == isas[::-1]
    assert got["bad"] == []
    assert "avx512_8x16" in got["refused"]
    assert ("avx2_6x16" in got["refused"]) == ("avx2" not in isas)


# -- (2) no AVX-512 (or AVX) registers in the objects that must run without it ------------

ZMM = re.compile(r"%zmm\d+")
EVEX_ONLY = re.compile(r"%[xy]mm(1[6-9]|2\d|3[01])\b|%k[0-7]\b")
YMM = re.compile(r"%ymm\d+")


def _disasm(path) -> str:
    res = subprocess.run([OBJDUMP, "-d", "--no-show-raw-insn", str(path)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert len(res.stdout) > 1000, f"objdump -d {path} printed almost nothing"
    return res.stdout


def _probe_module_path() -> pathlib.Path:
    pkg = pathlib.Path(kernel.__file__).resolve().parent
    found = sorted(pkg.glob("_probe*.so"))
    if found:
        return found[0]
    from microkernel import _probe_build as pb     # a source tree never built
    return build.build_module("probe", pb.CDEF, pb.source_text(), cflags=pb.CFLAGS)[1]


def _first(regex, text):
    m = regex.search(text)
    if not m:
        return None
    start = text.rfind("\n", 0, m.start())
    return text[start + 1:text.find("\n", m.end())]


@needs_objdump
@pytest.mark.parametrize("what", ["avx2_6x16", "avx2_3x24_u3", "scalar_4x4", "scalar_3x5_u4",
                                  "probe", "harness_baseline"])
def test_no_avx512_registers_outside_avx512_objects(what, harness):
    if what == "probe":
        path = _probe_module_path()
    elif what == "harness_baseline":
        path = harness[0].with_name("sanitize_main.o")   # probe.c + driver.c, baseline
    else:
        path = kernel.compile_only(TileSpec.from_name(what))
    text = _disasm(path)
    assert not ZMM.search(text), f"{path}: {_first(ZMM, text)}"
    assert not EVEX_ONLY.search(text), f"{path}: {_first(EVEX_ONLY, text)}"
    if not what.startswith("avx2"):
        assert not YMM.search(text), f"{path}: {_first(YMM, text)}"
    else:
        assert YMM.search(text), f"{path}: an avx2 kernel without ymm registers?"


@needs_objdump
def test_positive_control_avx512_module_has_zmm():
    text = _disasm(kernel.compile_only(TileSpec.from_name("avx512_8x16")))
    assert ZMM.search(text)
