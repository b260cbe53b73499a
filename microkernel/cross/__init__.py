"""``microkernel cross``: prove the aarch64 kernels on an x86 machine.

The probe (c_src/probe.c), the one driver (c_src/driver.c) and the aarch64
micro-kernels (generated from their TileSpecs by :mod:`microkernel.codegen.arm`)
are cross-compiled with ``aarch64-linux-gnu-gcc -static`` into the small C harness
``c_src/harness.c``, each kernel object with only its own ISA's flags
(``-march=armv8-a`` for NEON, ``-march=armv8.2-a+sve`` for SVE, never
``-msve-vector-bits``), the driver, probe and harness with baseline flags. The
harness's kernel list is the project's X-macro list (``codegen.kernel_list``) of the
selection; the binary is cached by a content hash (sources, flags, compiler
identity) under ``build.cache_dir()/cross``.

It then runs under ``qemu-aarch64`` on several emulated CPUs:

* ``-cpu max,sve-default-vector-length=B`` for B = 16, 32, 64, 128, 256 BYTES
  (SVE at 128..2048 bits): the probe must clear SVE, the VL the SVE code itself
  observes (``svcntw() * 32``, read inside SVE code) must be the requested one
  (a run that silently used another VL fails), the SVE kernel's run-time NR must be
  nv * VL/32, and every kernel runs the edge catalogue;
* a NEON-only CPU (``-cpu cortex-a72``): the probe must pick NEON quietly, no SVE
  instruction may execute (the SVE kernel's cases must come back *refused*, C
  untouched), and ``MICROKERNEL_ISA=sve`` must be a clear error (exit 2).

The cases are :func:`microkernel.validate.catalogue` for the kernel's MR x NR at
that vector length (every M and N remainder, K around the unroll and KC, BLAS
special cases with NaN, transposed/strided/negative/unaligned layouts, tiny
blockings, two threads) plus the cubes M = N = K in {1, 7, 37, 129} (non-multiples
of every VL). Results are checked in Python against the float64 reference and
element-wise bound of :func:`microkernel.validate.reference` (c (K+2) u
(|alpha||A||B| + |beta||C0|), u = 2**-24), and the guard elements around each C
must be untouched; the harness also surrounds every buffer with red zones and
reports a write outside them per case. The driver object is built with -fopenmp
(libgomp linked statically), so the two-thread cases run an OpenMP team under qemu.

Typed tiles (issue 22: neondot, neoni8mm, neonbf16, neonfp16, svei8mm, svebf16, sme)
take the same path with one driver object per panel layout and buffers of their element
types on the wire; integers are compared exactly, fp16/bf16 within the bound of their
types on the rounded inputs. SVE and SME run at the same length on qemu's ``max`` CPU
(``sme_fa64=off``), and further CPUs lack each extension (cortex-a76, a64fx,
``max,sme=off``): there the tiles must come back refused and forcing their ISA must be a
clear error. :mod:`.configs` holds the CPUs and the cases.

Modules: :mod:`.tools` (finding the cross compiler, objdump and qemu; the apt
packages), :mod:`.harness` (sources, glue, kernel list, cached build), :mod:`.wire`
(the binary case format shared with c_src/harness.c), :mod:`.run` (qemu runs and
their checks). The command line is :mod:`microkernel.commands.cross`.

Emulated timings are not performance numbers: nothing here reports one.
"""
from __future__ import annotations

from ..tile import TileError
from .harness import (AARCH64_ISAS, BASE_CFLAGS, DEFAULT_KERNELS, build_harness,
                      check_specs, harness_sources)
from .configs import REFUSAL_CPUS, identity_cases, vector_bits_for
from .run import (CUBES, DEFAULT_VLS, NEON_CPU, CpuConfig, CrossReport, KernelRun,
                  RunReport, cases_for, cpu_configs, cross_validate, identity, run_config)
from .tools import (APT_PACKAGES, ASM_APT_PACKAGES, AsmTools, CrossError, CrossToolsMissing,
                    Tools, find_asm_tools, find_tools)
from .wire import ST_OK, ST_OUTSIDE, ST_REFUSED, ST_TYPES, ST_UNKNOWN

__all__ = [
    "CrossToolsMissing", "CrossError", "Tools", "AsmTools", "CpuConfig", "KernelRun",
    "RunReport", "CrossReport", "APT_PACKAGES", "ASM_APT_PACKAGES", "DEFAULT_VLS",
    "NEON_CPU", "CUBES", "DEFAULT_KERNELS", "AARCH64_ISAS", "BASE_CFLAGS", "find_tools",
    "find_asm_tools", "build_harness", "harness_sources", "check_specs", "cpu_configs",
    "run_config", "cross_validate", "cases_for", "TileError", "REFUSAL_CPUS",
    "identity_cases", "vector_bits_for", "identity",
    "ST_OK", "ST_REFUSED", "ST_UNKNOWN", "ST_OUTSIDE", "ST_TYPES",
]
