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

#: The C declarations cffi sees: mirrors c_src/probe.h.
CDEF = """
#define MK_ARCH_OTHER   0
#define MK_ARCH_X86_64  1
#define MK_ARCH_AARCH64 2

typedef struct { uint32_t eax, ebx, ecx, edx; } mk_cpuid_regs;

typedef struct {
    mk_cpuid_regs leaf0, leaf1, leaf7_0, leaf7_1, ext0;
    mk_cpuid_regs brand[3];
} mk_x86_regs;

typedef struct {
    int arch;
    char vendor[16];
    char model_name[64];
    int family, model, stepping;
    int sse2, osxsave, avx, fma, f16c, hypervisor;
    int avx2, avx512f, avx512dq, avx512bw, avx512vl, avx512_vnni;
    int avx512_bf16, avx512_fp16, amx_tile;
    uint64_t xcr0;
    int os_ymm, os_zmm, os_amx;
    int amx_bf16, amx_int8;
    int amx_permitted;
    uint64_t hwcap, hwcap2, midr;
    int neon, sve, sve2;
    int sve_vector_bits;
    int asimdhp, asimddp, asimdfhm, i8mm, bf16, svei8mm, svebf16;
    int sme, sme_i8i32, sme_f16f32, sme_b16f32, sme_f32f32;
    int sme_vector_bits;
    int usable_avx2, usable_avx512, usable_neon, usable_sve;
    int usable_avx512bf16, usable_avx512fp16, usable_avx512vnni, usable_amx;
    int usable_neondot, usable_neoni8mm, usable_neonbf16, usable_neonfp16;
    int usable_svei8mm, usable_svebf16, usable_sme;
} mk_cpu_features;

int mk_probe_decode_x86(const mk_x86_regs *regs, uint64_t xcr0, mk_cpu_features *out);
int mk_probe_decode_x86_amx(const mk_x86_regs *regs, uint64_t xcr0, int amx_permitted,
                            mk_cpu_features *out);
int mk_probe_decode_arm(uint64_t hwcap, uint64_t hwcap2, uint32_t sve_vl_bytes,
                        uint64_t midr, mk_cpu_features *out);
int mk_probe_decode_arm2(uint64_t hwcap, uint64_t hwcap2, uint32_t sve_vl_bytes,
                         uint32_t sme_vl_bytes, uint64_t midr, mk_cpu_features *out);
int mk_probe_read_x86(mk_x86_regs *regs, uint64_t *xcr0);
int mk_probe_request_amx(void);
int mk_probe(mk_cpu_features *out);
"""


def source_text() -> str:
    """The C source handed to cffi: c_src/probe.h followed by c_src/probe.c.

    Inlining both (probe.c skips its ``#include "probe.h"`` when the header is
    already in) keeps the build independent of the working directory and lets a
    content-addressed cache hash everything that goes into the binary.

    Raises FileNotFoundError when c_src/ is not next to the package.
    """
    return (C_SRC / "probe.h").read_text() + "\n" + (C_SRC / "probe.c").read_text()


def make_ffibuilder(module_name: str = MODULE_NAME) -> cffi.FFI:
    """A fresh cffi.FFI for the probe, named ``module_name``."""
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    ffi.set_source(module_name, source_text(), extra_compile_args=list(CFLAGS))
    return ffi


ffibuilder = make_ffibuilder()

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
