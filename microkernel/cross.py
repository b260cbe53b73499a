"""``microkernel cross``: prove the aarch64 kernels on an x86 machine.

The probe (c_src/probe.c), the one driver (c_src/driver.c) and the aarch64
micro-kernels (generated from their TileSpecs by :mod:`microkernel.codegen.arm`)
are cross-compiled with ``aarch64-linux-gnu-gcc -static`` into the small C harness
``c_src/harness.c``, each kernel object with only its own ISA's flags
(``-march=armv8-a`` for NEON, ``-march=armv8.2-a+sve`` for SVE, never
``-msve-vector-bits``), the driver, probe and harness with baseline flags. The
binary is cached by a content hash (sources, flags, compiler identity) under
``build.cache_dir()/cross``.

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

Emulated timings are not performance numbers: nothing here reports one.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from . import build, codegen
from . import registry
from .tile import TileError, TileSpec

__all__ = [
    "CrossToolsMissing", "CrossError", "Tools", "CpuConfig", "KernelRun", "RunReport",
    "CrossReport", "APT_PACKAGES", "DEFAULT_VLS", "NEON_CPU", "CUBES", "find_tools",
    "build_harness", "harness_sources", "cpu_configs", "run_config", "cross_validate",
    "add_cross_arguments", "run_cross", "cases_for",
]

#: Debian/Ubuntu packages that provide the tools
APT_PACKAGES = ("gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross", "qemu-user")
DEFAULT_CC = "aarch64-linux-gnu-gcc"
DEFAULT_QEMU = "qemu-aarch64"
#: SVE vector lengths (bits) run by default; qemu takes them in BYTES
DEFAULT_VLS = (128, 256, 512, 1024, 2048)
#: the NEON-only CPU (SVE instructions SIGILL there)
NEON_CPU = "cortex-a72"
#: M = N = K cube shapes, non-multiples of every MR, NR and VL
CUBES = (1, 7, 37, 129)
#: harness statuses (c_src/harness.c)
ST_OK, ST_REFUSED, ST_UNKNOWN, ST_OUTSIDE = 0, -100, -101, -102
#: the aarch64 kernels checked by default: the built-in NEON and SVE tiles
DEFAULT_KERNELS = tuple(s.name for s in registry.builtin(arch="aarch64") if s.isa != "scalar")
AARCH64_ISAS = ("scalar", "neon", "sve")
#: baseline flags of every object; the kernel objects add their ISA's cflags
BASE_CFLAGS = ("-O2", "-std=gnu11", "-Wall", "-fno-math-errno")


class CrossToolsMissing(RuntimeError):
    """The aarch64 cross compiler, its C library or qemu-aarch64 is missing."""


class CrossError(RuntimeError):
    """Building or running the harness failed (the message holds the details)."""


def _missing(what: str) -> CrossToolsMissing:
    return CrossToolsMissing(
        f"{what}. Install the cross tools (Debian/Ubuntu): "
        f"apt-get install {' '.join(APT_PACKAGES)}")


# -- tools ----------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Tools:
    cc: str
    qemu: str
    cc_version: str
    qemu_version: str


def find_tools(cc: str | None = None, qemu: str | None = None) -> Tools:
    """Locate the cross compiler (with its static C library) and qemu-aarch64.

    ``$MICROKERNEL_CROSS_CC`` / ``$MICROKERNEL_QEMU`` override the defaults
    (``aarch64-linux-gnu-gcc``, ``qemu-aarch64``). Raises
    :class:`CrossToolsMissing` naming the apt packages.
    """
    cc = cc or os.environ.get("MICROKERNEL_CROSS_CC") or DEFAULT_CC
    qemu = qemu or os.environ.get("MICROKERNEL_QEMU") or DEFAULT_QEMU
    cc_path, qemu_path = shutil.which(cc), shutil.which(qemu)
    if cc_path is None:
        raise _missing(f"aarch64 cross compiler {cc!r} not found on PATH")
    if qemu_path is None:
        raise _missing(f"{qemu!r} (qemu user-mode emulator) not found on PATH")
    libc = subprocess.run([cc_path, "-print-file-name=libc.a"], capture_output=True, text=True)
    libc_path = libc.stdout.strip()
    if libc.returncode != 0 or not os.path.isabs(libc_path) or not os.path.exists(libc_path):
        raise _missing(f"{cc} has no static aarch64 C library (libc.a)")
    ccv = subprocess.run([cc_path, "--version"], capture_output=True, text=True).stdout
    qv = subprocess.run([qemu_path, "--version"], capture_output=True, text=True).stdout
    return Tools(cc_path, qemu_path, (ccv.splitlines() or [""])[0].strip(),
                 (qv.splitlines() or [""])[0].strip())


# -- building the harness -------------------------------------------------------------

GLUE = """\
/* Harness glue for {name}: compiled with {flags} only. Generated by
 * microkernel.cross; the micro-kernel below comes from microkernel.codegen. */
#include <stddef.h>
#include <stdint.h>
#include "mk_ukernel.h"

{source}
{desc}"""


def _glue(spec: TileSpec) -> str:
    return GLUE.format(name=spec.name, flags=" ".join(spec.info.cflags) or "baseline flags",
                       source=codegen.generate(spec),
                       desc=codegen.desc_function(spec, f"mk_harness_desc_{spec.name}"))


def harness_sources(specs) -> tuple[dict[str, str], list[tuple[str, tuple[str, ...]]]]:
    """(files, objects): the generated files (name -> text) and the compile list
    [(source file, extra flags)] for a harness holding ``specs``."""
    files = {"mk_harness_kernels.h": "".join(
        f'MK_HARNESS_KERNEL({s.name}, "{s.isa}")\n' for s in specs)}
    objects: list[tuple[str, tuple[str, ...]]] = [
        ("harness.c", ()), ("probe.c", ()), ("driver.c", ("-fopenmp",)),
        ("harness.c", ("-DMK_HARNESS_SVE_UNIT",) + TileSpec("sve", 1, 1).info.cflags),
    ]
    for s in specs:
        fname = f"glue_{s.name}.c"
        files[fname] = _glue(s)
        objects.append((fname, s.info.cflags))
    return files, objects


def _check_specs(specs) -> list[TileSpec]:
    out = []
    for s in specs:
        s = TileSpec.from_name(s) if isinstance(s, str) else s
        if s.isa not in AARCH64_ISAS:
            raise TileError(f"{s.name}: microkernel cross runs aarch64 kernels "
                            f"({', '.join(AARCH64_ISAS)}), not {s.isa}")
        if s not in out:
            out.append(s)
    if not out:
        raise TileError("no kernels to cross-validate")
    return out


def build_harness(specs=DEFAULT_KERNELS, tools: Tools | None = None) -> pathlib.Path:
    """Cross-compile (cached by content hash) the static harness for ``specs``;
    returns the binary's path. Raises CrossToolsMissing or CrossError."""
    specs = _check_specs(specs)
    tools = tools or find_tools()
    src_dir = build.c_src_dir()
    files, objects = harness_sources(specs)
    fixed = ["harness.c", "probe.c", "probe.h", "driver.c", "mk_ukernel.h"]
    h = hashlib.sha256()
    for part in [tools.cc, tools.cc_version, "\0".join(BASE_CFLAGS), repr(objects)]:
        h.update(part.encode() + b"\0")
    for name in fixed:
        h.update(name.encode() + b"\0" + (src_dir / name).read_bytes() + b"\0")
    for name, text in sorted(files.items()):
        h.update(name.encode() + b"\0" + text.encode() + b"\0")
    digest = h.hexdigest()[:20]
    out_dir = build.cache_dir() / "cross"
    out_dir.mkdir(parents=True, exist_ok=True)
    dest = out_dir / f"harness-{digest}"
    if dest.exists():
        return dest
    import filelock
    with filelock.FileLock(str(dest) + ".lock"):
        if dest.exists():
            return dest
        with tempfile.TemporaryDirectory(dir=out_dir, prefix=".build-") as tmp:
            tmpd = pathlib.Path(tmp)
            for name, text in files.items():
                (tmpd / name).write_text(text)
            objs = []
            for i, (name, flags) in enumerate(objects):
                src = tmpd / name if name in files else src_dir / name
                obj = tmpd / f"{i:02d}_{pathlib.Path(name).stem}.o"
                _run_cc([tools.cc, *BASE_CFLAGS, *flags, f"-I{src_dir}", f"-I{tmpd}",
                         "-c", str(src), "-o", str(obj)])
                objs.append(str(obj))
            exe = tmpd / "harness"
            _run_cc([tools.cc, "-static", "-fopenmp", *objs, "-o", str(exe)])
            os.replace(exe, dest)
    return dest


def _run_cc(cmd: list[str]) -> None:
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        import shlex
        raise CrossError(f"cross compile failed (exit {res.returncode}):\n$ {shlex.join(cmd)}\n"
                         f"{res.stderr.strip()}")


# -- cases and the wire format (c_src/harness.c) --------------------------------------

HDR = np.dtype([
    ("kernel", "S32"), ("m", "<i8"), ("n", "<i8"), ("k", "<i8"),
    ("rs_a", "<i8"), ("cs_a", "<i8"), ("off_a", "<i8"), ("len_a", "<i8"), ("align_a", "<i8"),
    ("rs_b", "<i8"), ("cs_b", "<i8"), ("off_b", "<i8"), ("len_b", "<i8"), ("align_b", "<i8"),
    ("rs_c", "<i8"), ("cs_c", "<i8"), ("off_c", "<i8"), ("len_c", "<i8"), ("align_c", "<i8"),
    ("kc", "<i8"), ("mc", "<i8"), ("nc", "<i8"), ("threads", "<i8"),
    ("alpha", "<f4"), ("beta", "<f4"),
])
assert HDR.itemsize == 216


def _span(x: np.ndarray):
    """(flat copy of the memory a 2-D float32 view spans, offset of x[0, 0], rs, cs,
    alignment in bytes past 64 of the span's start)."""
    if x.size == 0:
        return np.zeros(0, np.float32), 0, max(x.shape[1], 1), 1, 0
    sr, sc = (s // 4 for s in x.strides)
    r, c = x.shape
    flip = x[::-1 if sr < 0 else 1, ::-1 if sc < 0 else 1]
    span = (r - 1) * abs(sr) + (c - 1) * abs(sc) + 1
    flat = np.lib.stride_tricks.as_strided(flip, shape=(span,), strides=(4,)).copy()
    off = (r - 1) * abs(sr) * (sr < 0) + (c - 1) * abs(sc) * (sc < 0)
    return flat, off, sr, sc, (flip.ctypes.data % 64) // 4 * 4


def _base_flat(base: np.ndarray) -> np.ndarray:
    """A writeable 1-D view of a contiguous (C or Fortran order) buffer's memory."""
    assert base.flags.c_contiguous or base.flags.f_contiguous
    return np.lib.stride_tricks.as_strided(base, shape=(base.size,), strides=(4,))


def cases_for(spec: TileSpec, vector_bits: int | None, *, quick: bool = False):
    """The catalogue for ``spec`` at ``vector_bits`` (SVE) plus the cubes, with the
    blocking the harness uses (model fallback: the emulated CPU's caches are unknown,
    qemu-user shows the host's sysfs)."""
    from .blocking import FALLBACK
    from .validate import Case, catalogue
    nr = spec.nr_at(vector_bits if spec.is_vla else None)
    cases = list(catalogue(spec.mr, nr, spec.k_unroll, FALLBACK.kc, quick=quick))
    for s in CUBES:
        alpha, beta = {1: (1.0, 0.0), 7: (1.5, -0.5), 37: (-0.75, 0.5), 129: (1.25, 1.0)}[s]
        cases.append(Case(f"cube{s}", s, s, s, alpha=alpha, beta=beta,
                          c_layout="f" if s == 37 else "c"))
    return cases


@dataclasses.dataclass
class _Prepared:
    kernel: str
    case: object
    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    C0: np.ndarray
    base_c: np.ndarray
    mask_c: np.ndarray
    c_flat: np.ndarray
    c_sent: np.ndarray
    expect_refused: bool


def _prepare(kernel: str, case, seed: int, expect_refused: bool):
    """(_Prepared, header bytes + buffers) for one case."""
    from .blocking import FALLBACK
    from .validate import make_operands
    rng = np.random.default_rng(seed)
    A, B, C, C0, base_c, mask_c = make_operands(case, rng)
    fa, oa, rsa, csa, ala = _span(A)
    fb, ob, rsb, csb, alb = _span(B)
    c_flat = _base_flat(base_c)
    sc = C.strides
    oc = (C.ctypes.data - base_c.ctypes.data) // 4 if C.size else 0
    rsc, csc = (sc[0] // 4, sc[1] // 4) if C.size else (max(C.shape[1], 1), 1)
    alc = (base_c.ctypes.data % 64) // 4 * 4
    kc, mc, nc = case.blocking or (FALLBACK.kc, FALLBACK.mc, FALLBACK.nc)
    h = np.zeros((), HDR)
    h["kernel"] = kernel.encode()
    for key, val in dict(m=case.m, n=case.n, k=case.k,
                         rs_a=rsa, cs_a=csa, off_a=oa, len_a=fa.size, align_a=ala,
                         rs_b=rsb, cs_b=csb, off_b=ob, len_b=fb.size, align_b=alb,
                         rs_c=rsc, cs_c=csc, off_c=oc, len_c=c_flat.size, align_c=alc,
                         kc=kc, mc=mc, nc=nc, threads=case.threads,
                         alpha=case.alpha, beta=case.beta).items():
        h[key] = val
    blob = b"".join([h.tobytes(), fa.astype("<f4").tobytes(), fb.astype("<f4").tobytes(),
                     np.ascontiguousarray(c_flat).astype("<f4").tobytes()])
    prep = _Prepared(kernel, case, A, B, C, C0, base_c, mask_c, c_flat, c_flat.copy(),
                     expect_refused)
    return prep, blob


# -- running ----------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class CpuConfig:
    """One emulated CPU: ``label`` ('sve-512' or 'neon-only'), qemu's -cpu value,
    the SVE VL it requests (None: no SVE) and the ISA the probe must choose."""
    label: str
    cpu: str
    vector_bits: int | None
    expect_isa: str


def cpu_configs(vls=DEFAULT_VLS, neon_cpu: str | None = NEON_CPU) -> list[CpuConfig]:
    out = []
    for bits in vls:
        if bits % 128 or not 128 <= bits <= 2048:
            raise ValueError(f"SVE vector length {bits} bits: must be a multiple of 128 "
                             f"in 128..2048")
        out.append(CpuConfig(f"sve-{bits}", f"max,sve-default-vector-length={bits // 8}",
                             bits, "sve"))
    if neon_cpu:
        out.append(CpuConfig("neon-only", neon_cpu, None, "neon"))
    return out


@dataclasses.dataclass
class KernelRun:
    """One kernel on one CPU: cases executed (and how many passed), cases refused
    (expected for SVE on a NEON-only CPU), its run-time NR, and failures."""
    kernel: str
    isa: str
    nr: int | None = None
    cases: int = 0
    passed: int = 0
    refused: int = 0
    failures: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class RunReport:
    label: str
    cpu: str
    requested_vl_bits: int | None
    observed_vl_bits: int | None = None
    probe_vl_bits: int | None = None
    probe_isas: list = dataclasses.field(default_factory=list)
    chosen_isa: str | None = None
    expected_isa: str | None = None
    forced_sve_error: str | None = None
    kernels: dict = dataclasses.field(default_factory=dict)
    errors: list = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors and all(not k.failures for k in self.kernels.values())

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["ok"] = self.ok
        return d


@dataclasses.dataclass
class CrossReport:
    harness: str
    cc: str
    qemu: str
    quick: bool
    runs: list

    @property
    def ok(self) -> bool:
        return bool(self.runs) and all(r.ok for r in self.runs)

    def to_dict(self) -> dict:
        return {"ok": self.ok, "harness": self.harness, "cc": self.cc, "qemu": self.qemu,
                "quick": self.quick, "error_bound": "c*(K+2)*u*(|alpha||A||B|+|beta||C0|), "
                "u=2**-24, c=validate.C_BOUND",
                "note": "qemu emulation: correctness only, no timings",
                "runs": [r.to_dict() for r in self.runs]}


def _env(forced: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("MICROKERNEL_ISA", "QEMU_CPU", "QEMU_LD_PREFIX")}
    if forced:
        env["MICROKERNEL_ISA"] = forced
    return env


def _parse_info(text: str) -> dict:
    info = {"kernels": {}}
    for line in text.splitlines():
        key, _, rest = line.partition(" ")
        if key == "probe":
            info["probe"] = dict(kv.split("=", 1) for kv in rest.split())
        elif key == "isas":
            info["isas"] = [s for s in rest.split(",") if s]
        elif key == "chosen":
            info["chosen"] = rest.strip()
        elif key == "observed_vl_bits":
            info["observed"] = None if rest.strip() == "none" else int(rest)
        elif key == "kernel":
            name, *kvs = rest.split()
            info["kernels"][name] = {k: v for k, v in (kv.split("=", 1) for kv in kvs)}
    return info


def run_config(harness: pathlib.Path, tools: Tools, config: CpuConfig, specs, *,
               quick: bool = False, seed: int = 0, timeout: float = 600.0,
               cases_fn=None) -> RunReport:
    """Run every kernel's cases on one emulated CPU; check them; return the report.

    ``cases_fn(spec, vector_bits) -> list[validate.Case]`` replaces the default
    cases (:func:`cases_for`)."""
    specs = _check_specs(specs)
    rep = RunReport(config.label, config.cpu, config.vector_bits, expected_isa=config.expect_isa)
    qemu = [tools.qemu, "-cpu", config.cpu, str(harness)]
    # build the cases first: which kernels this CPU must run, which it must refuse
    prepared, blobs = [], []
    for spec in specs:
        kr = KernelRun(spec.name, spec.isa)
        rep.kernels[spec.name] = kr
        refuse = spec.isa == "sve" and config.vector_bits is None
        if refuse:      # a NEON-only CPU: a few SVE cases that must come back refused
            cases = [c for c in cases_for(spec, 128, quick=True) if c.label in ("one", "cube7")]
        elif cases_fn is not None:
            cases = list(cases_fn(spec, config.vector_bits))
        else:
            cases = cases_for(spec, config.vector_bits, quick=quick)
        for i, case in enumerate(cases):
            p, blob = _prepare(spec.name, case, seed + i, refuse)
            prepared.append(p)
            blobs.append(blob)
    stdin = b"MKCASES1" + np.int64(len(prepared)).astype("<i8").tobytes() + b"".join(blobs)
    try:
        res = subprocess.run(qemu, input=stdin, capture_output=True, timeout=timeout,
                             env=_env())
    except subprocess.TimeoutExpired:
        rep.errors.append(f"harness timed out after {timeout:.0f} s under qemu")
        return rep
    out = res.stdout
    marker = out.find(b"results ")
    head = out if marker < 0 else out[:marker]
    info = _parse_info(head.decode(errors="replace"))
    _check_info(rep, info, config, specs)
    if res.returncode != 0 or marker < 0:
        rep.errors.append(f"harness exit {res.returncode} under `{' '.join(qemu[:3])}`: "
                          f"{res.stderr.decode(errors='replace').strip()[-600:]}")
        return rep
    pos = out.index(b"\n", marker) + 1
    for p in prepared:
        kr = rep.kernels[p.kernel]
        if pos + 16 > len(out):
            rep.errors.append(f"truncated results at {p.kernel}/{p.case.label}")
            break
        status, n = np.frombuffer(out, "<i8", 2, pos)
        pos += 16
        got = np.frombuffer(out, "<f4", int(n), pos)
        pos += 4 * int(n)
        _check_case(kr, p, int(status), got)
    # MICROKERNEL_ISA=sve on a CPU without SVE must be a clear error, not SIGILL
    if config.vector_bits is None:
        r2 = subprocess.run([*qemu, "--info"], capture_output=True, timeout=60,
                            env=_env("sve"))
        msg = r2.stderr.decode(errors="replace").strip()
        rep.forced_sve_error = msg
        if r2.returncode != 2 or "MICROKERNEL_ISA=sve" not in msg:
            rep.errors.append(f"MICROKERNEL_ISA=sve on {config.cpu}: expected a clear error "
                              f"(exit 2), got exit {r2.returncode}: {msg[-300:]}")
    for kr in rep.kernels.values():
        should_run = not (kr.isa == "sve" and config.vector_bits is None)
        if should_run and kr.cases == 0:
            rep.errors.append(f"{kr.kernel} executed zero cases on {config.label}")
        if not should_run and kr.refused == 0:
            rep.errors.append(f"{kr.kernel}: no case was refused on {config.label}")
    return rep


def _check_info(rep: RunReport, info: dict, config: CpuConfig, specs) -> None:
    probe = info.get("probe")
    if probe is None:
        rep.errors.append("harness printed no probe line")
        return
    rep.probe_isas = info.get("isas", [])
    rep.chosen_isa = info.get("chosen")
    rep.observed_vl_bits = info.get("observed")
    rep.probe_vl_bits = int(probe.get("sve_bits", 0)) or None
    if probe.get("arch") != "aarch64":
        rep.errors.append(f"probe arch {probe.get('arch')!r}, expected aarch64")
    if rep.chosen_isa != config.expect_isa:
        rep.errors.append(f"probe chose {rep.chosen_isa!r}, expected {config.expect_isa!r}")
    if config.vector_bits is not None:
        if rep.observed_vl_bits != config.vector_bits:
            rep.errors.append(f"SVE code observed VL {rep.observed_vl_bits} bits, "
                              f"requested {config.vector_bits}")
        if rep.probe_vl_bits != config.vector_bits:
            rep.errors.append(f"probe reported VL {rep.probe_vl_bits} bits, "
                              f"requested {config.vector_bits}")
    else:
        if "sve" in rep.probe_isas or rep.observed_vl_bits is not None:
            rep.errors.append(f"{config.cpu} has no SVE but the probe cleared it")
    for spec in specs:
        kinfo = info["kernels"].get(spec.name)
        kr = rep.kernels[spec.name]
        if kinfo is None:
            rep.errors.append(f"{spec.name} is missing from the harness")
            continue
        runnable = kinfo.get("runnable") == "1"
        if runnable:
            kr.nr = int(kinfo["nr"])
            bits = config.vector_bits if spec.is_vla else None
            want = spec.nr_at(bits) if (bits or not spec.is_vla) else None
            if want is not None and kr.nr != want:
                rep.errors.append(f"{spec.name}: run-time NR {kr.nr}, expected {want}")


def _check_case(kr: KernelRun, p: _Prepared, status: int, got: np.ndarray) -> None:
    from .validate import check, reference
    label = p.case.label
    if p.expect_refused:
        if status == ST_REFUSED and np.array_equal(got, p.c_sent, equal_nan=True):
            kr.refused += 1
        else:
            kr.failures.append({"case": label, "detail": f"expected refusal, got status {status}"})
        return
    kr.cases += 1
    if status != ST_OK:
        what = {ST_REFUSED: "refused (ISA not cleared)", ST_UNKNOWN: "unknown kernel",
                ST_OUTSIDE: "wrote outside the A/B/C buffers (harness red zone)"}.get(
            status, f"driver status {status}")
        kr.failures.append({"case": label, "detail": what})
        return
    if got.size != p.c_flat.size:
        kr.failures.append({"case": label, "detail": "C buffer size changed"})
        return
    p.c_flat[...] = got
    C_ref, bound = reference(p.A, p.B, p.C0, p.case.alpha, p.case.beta)
    ok, ratio, guard_ok, detail = check(p.C, C_ref, bound, p.base_c, p.mask_c)
    if ok:
        kr.passed += 1
    else:
        kr.failures.append({"case": label, "m": p.case.m, "n": p.case.n, "k": p.case.k,
                            "err_ratio": float(ratio), "guard_ok": bool(guard_ok),
                            "detail": detail})


def cross_validate(specs=DEFAULT_KERNELS, vls=DEFAULT_VLS, neon_cpu: str | None = NEON_CPU,
                   *, quick: bool = False, jobs: int | None = None, seed: int = 0,
                   timeout: float = 600.0, tools: Tools | None = None,
                   cases_fn=None) -> CrossReport:
    """Build the harness and run it on every CPU config (in parallel, ``jobs``
    qemu processes at a time). ``cases_fn`` as for :func:`run_config`.
    Raises CrossToolsMissing / CrossError."""
    specs = _check_specs(specs)
    tools = tools or find_tools()
    harness = build_harness(specs, tools)
    configs = cpu_configs(vls, neon_cpu)
    jobs = max(1, jobs or min(len(configs), os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        runs = list(pool.map(lambda c: run_config(harness, tools, c, specs, quick=quick,
                                                  seed=seed, timeout=timeout,
                                                  cases_fn=cases_fn), configs))
    return CrossReport(str(harness), tools.cc_version, tools.qemu_version, quick, runs)


# -- CLI --------------------------------------------------------------------------------

def _int_list(text: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    for v in vals:
        if v % 128 or not 128 <= v <= 2048:
            raise argparse.ArgumentTypeError(
                f"SVE vector length {v}: bits, a multiple of 128 in 128..2048")
    return vals


def add_cross_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Options of ``microkernel cross``."""
    parser.add_argument("--vl", type=_int_list, default=DEFAULT_VLS, metavar="BITS,...",
                        help="SVE vector lengths in bits (default: "
                             f"{','.join(map(str, DEFAULT_VLS))}; qemu gets them in bytes)")
    parser.add_argument("--neon-cpu", default=NEON_CPU, metavar="CPU",
                        help=f"qemu -cpu of the NEON-only run (default {NEON_CPU}; "
                             f"'none' skips it)")
    parser.add_argument("--kernels", default=",".join(DEFAULT_KERNELS), metavar="NAME,...",
                        help="aarch64 tiles to check, built-in or any legal name such as "
                             "sve_4x3v or neon_4x16 (default: %(default)s)")
    parser.add_argument("--quick", action="store_true",
                        help="reduced catalogue: one case per M/N remainder, no 'medium'")
    parser.add_argument("--jobs", type=int, default=None,
                        help="qemu processes at a time (default: CPUs, at most one per config)")
    parser.add_argument("--seed", type=int, default=0, help="operand seed")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds per emulated run (default 600)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def _cell(k: KernelRun | None) -> str:
    if k is None:
        return "-"
    if k.cases == 0 and k.refused:
        return f"refused {k.refused}" if not k.failures else "[red]FAIL[/]"
    cell = f"{k.passed}/{k.cases}"
    return cell if not k.failures else f"[red]{cell}[/]"


def _print_table(rep: CrossReport) -> None:
    """One column per emulated CPU: the VL asked for and the VL the SVE code saw,
    the probe's choice, then cases passed/executed per kernel."""
    from rich.console import Console
    from rich.table import Table
    console = Console()
    t = Table(title="microkernel cross: aarch64 kernels under qemu (correctness only)")
    t.add_column("")
    for r in rep.runs:
        t.add_column(r.label, justify="right")
    t.add_row("requested VL", *[str(r.requested_vl_bits or "-") for r in rep.runs])
    t.add_row("observed VL", *[str(r.observed_vl_bits or "none") for r in rep.runs])
    t.add_row("probe chose", *[r.chosen_isa or "?" for r in rep.runs])
    names = list(dict.fromkeys(k for r in rep.runs for k in r.kernels))
    for name in names:
        t.add_row(name, *[_cell(r.kernels.get(name)) for r in rep.runs])
    for name in names:
        if any(r.kernels[name].isa == "sve" for r in rep.runs if name in r.kernels):
            t.add_row(f"{name} NR", *[str(r.kernels[name].nr or "-") if name in r.kernels
                                       else "-" for r in rep.runs])
    t.add_row("status", *["[green]ok[/]" if r.ok else "[red]FAIL[/]" for r in rep.runs])
    console.print(t)
    console.print("VL in bits, observed = svcntw()*32 inside SVE code; "
                  "cells: cases passed/executed (edge catalogue + cubes M=N=K in "
                  f"{{{', '.join(map(str, CUBES))}}}); refused: never executed, the probe "
                  "did not clear the ISA", highlight=False)
    console.print("qemu -cpu: " + "; ".join(f"{r.label}={r.cpu}" for r in rep.runs),
                  highlight=False)
    for r in rep.runs:
        for e in r.errors:
            console.print(f"[red]{r.label}: {e}[/]", highlight=False)
        for k in r.kernels.values():
            for f in k.failures[:10]:
                console.print(f"[red]{r.label} {k.kernel} {f['case']}: {f.get('detail', '')}[/]",
                              highlight=False)
            if len(k.failures) > 10:
                console.print(f"[red]{r.label} {k.kernel}: {len(k.failures) - 10} more failures[/]")
    for r in rep.runs:
        if r.forced_sve_error:
            console.print(f"{r.label}: MICROKERNEL_ISA=sve -> {r.forced_sve_error}",
                          highlight=False)
    console.print("[green]PASS[/]" if rep.ok else "[red]FAIL[/]")


def run_cross(args: argparse.Namespace) -> int:
    """``microkernel cross``: 0 when every run passes, 1 on a failure, 2 when the
    tools are missing or the harness does not build."""
    neon_cpu = None if str(args.neon_cpu).lower() in ("", "none", "off") else args.neon_cpu
    try:
        specs = _check_specs([s.strip() for s in args.kernels.split(",") if s.strip()])
        rep = cross_validate(specs, args.vl, neon_cpu, quick=args.quick, jobs=args.jobs,
                             seed=args.seed, timeout=args.timeout)
    except (CrossToolsMissing, CrossError, TileError, ValueError) as exc:
        if getattr(args, "json", False):
            print(json.dumps({"ok": False, "error": str(exc)}))
        else:
            print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rep.to_dict(), indent=2))
    else:
        _print_table(rep)
    return 0 if rep.ok else 1


def main(argv=None) -> int:
    parser = add_cross_arguments(argparse.ArgumentParser(
        prog="microkernel cross", description=__doc__.split("\n\n")[0]))
    return run_cross(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
