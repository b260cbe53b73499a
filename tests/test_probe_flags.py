"""The CPU probe is built with baseline flags whatever the environment says: an
install with CFLAGS=-march=native (or -mavx2) must not put AVX instructions into the
probe, which then has to run on any x86-64 CPU (issue 19, item 5).

The probe is compiled the way setuptools compiles it at install time (cffi's
``compile``, which honours the environment's CFLAGS and appends the module's
``extra_compile_args``), with a hostile CFLAGS; its object must hold no VEX/EVEX
instruction (any AVX-encoded one, on xmm registers too) and no AVX-only register,
and it must load and run under ``qemu-x86_64 -cpu Nehalem`` (SSE4.2, no AVX). The
negative control: the same source built with only -O2 after that CFLAGS does hold
VEX instructions, so the check can fail.
"""
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from microkernel import _probe_build as pb

IS_X86 = platform.machine().lower() in ("x86_64", "amd64")
OBJDUMP = shutil.which("objdump")
QEMU = shutil.which("qemu-x86_64")
HOSTILE = "-O3 -march=native -mavx2 -mfma"
pytestmark = pytest.mark.skipif(not (IS_X86 and OBJDUMP), reason="x86-64 with binutils only")
#: a VEX/EVEX-encoded instruction (AVX and later: every 'v' mnemonic but verr/verw, which
#: SIGILL on a pre-AVX CPU even on xmm registers) or an AVX-only register
AVX = re.compile(r"\t(?!verr|verw)v[a-z0-9]+\s|%(?:[yz]mm\d+|xmm(?:1[6-9]|2\d|3[01])|k[0-7])\b")

BUILD = textwrap.dedent("""
    import cffi
    from microkernel import _probe_build as pb
    ffi = cffi.FFI()
    ffi.cdef(pb.CDEF)
    ffi.set_source({name!r}, pb.source_text(), extra_compile_args=list({flags!r}))
    print(ffi.compile(tmpdir={tmp!r}))
""")


def _build(tmp: pathlib.Path, name: str, flags) -> pathlib.Path:
    env = {**os.environ, "CFLAGS": HOSTILE}
    res = subprocess.run([sys.executable, "-c", BUILD.format(name=name, flags=flags,
                                                             tmp=str(tmp))],
                         capture_output=True, text=True, env=env, cwd=tmp)
    assert res.returncode == 0, res.stdout + res.stderr
    return pathlib.Path(res.stdout.strip().splitlines()[-1])


def _asm(path: pathlib.Path) -> str:
    res = subprocess.run([OBJDUMP, "-d", "--no-show-raw-insn", str(path)], capture_output=True,
                         text=True)
    assert res.returncode == 0 and "mk_probe" in res.stdout, res.stderr
    return res.stdout


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("probe_flags")
    (tmp / "good").mkdir()
    (tmp / "bad").mkdir()
    return (_build(tmp / "good", "_probe_good", pb.CFLAGS),
            _build(tmp / "bad", "_probe_bad", ("-O2",)))


def test_the_probe_object_has_no_avx_register_under_a_hostile_cflags(builds):
    good, _ = builds
    text = _asm(good)
    m = AVX.search(text)
    assert m is None, text[max(0, m.start() - 200):m.end() + 50]


def test_negative_control_without_the_baseline_flags_avx_leaks_in(builds):
    _, bad = builds     # -mavx2 in CFLAGS enables AVX2 whatever this CPU is
    assert AVX.search(_asm(bad)), "the control build has no ymm register: the check is blind"


@pytest.mark.skipif(QEMU is None, reason="qemu-x86_64 not installed (apt-get install qemu-user)")
def test_the_probe_built_under_a_hostile_cflags_runs_on_nehalem(builds):
    good, _ = builds
    script = textwrap.dedent(f"""
        import importlib.machinery, importlib.util
        loader = importlib.machinery.ExtensionFileLoader("_probe_good", {str(good)!r})
        spec = importlib.util.spec_from_file_location("_probe_good", {str(good)!r}, loader=loader)
        mod = importlib.util.module_from_spec(spec); loader.exec_module(mod)
        f = mod.ffi.new("mk_cpu_features *")
        assert mod.lib.mk_probe(f) == 0
        print("avx", f.avx, "usable_avx2", f.usable_avx2, "vendor", mod.ffi.string(f.vendor).decode())
    """)
    res = subprocess.run([QEMU, "-cpu", "Nehalem", sys.executable, "-c", script],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "avx 0 usable_avx2 0" in res.stdout, res.stdout
