"""cffi builder for the CPU probe (API / out-of-line mode): module ``microkernel._probe``.

Used by setup.py (``cffi_modules=["microkernel/_probe_build.py:ffibuilder"]``) and,
from a source tree that was never built, by :mod:`microkernel.probe` at run time.

The probe is compiled with baseline flags only (:data:`CFLAGS`), whatever the
environment says: it must run on every CPU of its architecture before anything knows
what that CPU supports. setuptools puts the environment's ``CFLAGS`` (say
``-march=native``, or ``-mavx2``) on the compiler's command line *before* a module's
``extra_compile_args``, so these come last and win: the last ``-march`` counts, and
``-mno-sse3`` switches off every vector extension above SSE2 together with those that
depend on it (SSSE3, SSE4, AVX, AVX2, FMA, F16C, AVX-512: GCC's ISA dependencies),
the rest explicitly (tests/test_probe_flags.py builds it with a hostile ``CFLAGS`` and
checks the object and a run under ``qemu-x86_64 -cpu Nehalem``).
"""
from __future__ import annotations

import pathlib
import platform
import re

import cffi

MODULE_NAME = "microkernel._probe"
C_SRC = pathlib.Path(__file__).resolve().parent.parent / "c_src"

_MACHINE = platform.machine().lower()
if _MACHINE in ("x86_64", "amd64"):
    BASELINE: tuple[str, ...] = (
        "-march=x86-64", "-mtune=generic", "-mno-sse3", "-mno-avx", "-mno-popcnt",
        "-mno-bmi", "-mno-bmi2", "-mno-lzcnt", "-mno-movbe", "-mno-xsave", "-mno-aes",
        "-mno-pclmul", "-mno-sha", "-mno-adx", "-mno-rdrnd", "-mno-rdseed", "-mno-f16c",
        "-mno-fma")
elif _MACHINE in ("aarch64", "arm64"):
    BASELINE = ("-march=armv8-a",)
else:
    BASELINE = ()
#: every flag of the probe's compile: optimisation plus the architecture's baseline
CFLAGS: tuple[str, ...] = ("-O2",) + BASELINE

#: a preprocessor line of probe.h that cffi's cdef takes: an integer constant
_CDEF_DEFINE = re.compile(r"#\s*define\s+\w+\s+\d+\s*$")


def cdef_text(header: str) -> str:
    """The declarations cffi sees, read from the text of c_src/probe.h: the header
    less its preprocessor lines (include guard, ``#include <stdint.h>``: cffi knows
    the fixed-width types) but for the integer ``#define`` constants; cffi's own
    parser drops the comments."""
    return "\n".join(line for line in header.splitlines()
                     if not line.lstrip().startswith("#") or _CDEF_DEFINE.match(line.strip()))


def source_text() -> str:
    """The C source handed to cffi: c_src/probe.h followed by c_src/probe.c.

    Inlining both (probe.c skips its ``#include "probe.h"`` when the header is
    already in) keeps the build independent of the working directory and lets a
    content-addressed cache hash everything that goes into the binary.

    Raises FileNotFoundError when c_src/ is not next to the package.
    """
    return (C_SRC / "probe.h").read_text() + "\n" + (C_SRC / "probe.c").read_text()


#: The C declarations cffi sees: those of c_src/probe.h, read from it (one statement
#: of the struct layout and the entry points, so the two cannot drift apart).
CDEF = cdef_text((C_SRC / "probe.h").read_text())


def make_ffibuilder(module_name: str = MODULE_NAME) -> cffi.FFI:
    """A fresh cffi.FFI for the probe, named ``module_name``."""
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    ffi.set_source(module_name, source_text(), extra_compile_args=list(CFLAGS))
    return ffi


ffibuilder = make_ffibuilder()

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
