"""Running the harness under qemu-aarch64 and checking what comes back.

Each :class:`CpuConfig` is one emulated CPU: ``-cpu max,sve-default-vector-length=B``
(B in BYTES, for SVE at 128..2048 bits) or a NEON-only CPU (``cortex-a72``). Per
configuration, every kernel gets the edge catalogue of
:func:`microkernel.validate.catalogue` at that vector length plus the cubes
M = N = K in :data:`CUBES`; results are checked against the float64 reference and
element-wise bound of :func:`microkernel.validate.reference` and the guard elements
(:func:`microkernel.validate.check`). On a CPU without SVE, the SVE kernels' cases
must come back refused (never executed, C untouched) and ``MICROKERNEL_ISA=sve``
must be a clear error (exit 2). The probe's choice and the vector length the SVE
code itself observes are checked against the configuration.

Emulated timings are not performance numbers: nothing here reports one.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import pathlib
import subprocess

import numpy as np

from . import wire
from .harness import DEFAULT_KERNELS, build_harness, check_specs
from .tools import Tools, find_tools

__all__ = ["DEFAULT_VLS", "NEON_CPU", "CUBES", "CpuConfig", "KernelRun", "RunReport",
           "CrossReport", "cpu_configs", "cases_for", "run_config", "cross_validate"]

#: SVE vector lengths (bits) run by default; qemu takes them in BYTES
DEFAULT_VLS = (128, 256, 512, 1024, 2048)
#: the NEON-only CPU (SVE instructions SIGILL there)
NEON_CPU = "cortex-a72"
#: M = N = K cube shapes, non-multiples of every MR, NR and VL
CUBES = (1, 7, 37, 129)


@dataclasses.dataclass(frozen=True)
class CpuConfig:
    """One emulated CPU: ``label`` ('sve-512' or 'neon-only'), qemu's -cpu value,
    the SVE VL it requests (None: no SVE) and the ISA the probe must choose."""
    label: str
    cpu: str
    vector_bits: int | None
    expect_isa: str


def cpu_configs(vls=DEFAULT_VLS, neon_cpu: str | None = NEON_CPU) -> list[CpuConfig]:
    """One config per SVE vector length in ``vls`` (bits) and, unless ``neon_cpu`` is
    None, the NEON-only CPU. Raises ValueError for a VL that is not a multiple of 128
    in 128..2048."""
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
    """One emulated CPU's run: what the probe said and chose, the VL the SVE code
    observed, each kernel's :class:`KernelRun`, and errors of the run itself."""
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
    """Every run of one ``cross_validate``: the harness binary, the tools' versions."""
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


def cases_for(spec, vector_bits: int | None, *, quick: bool = False):
    """The catalogue for ``spec`` at ``vector_bits`` (SVE) plus the cubes, with the
    blocking the harness uses (model fallback: the emulated CPU's caches are unknown,
    qemu-user shows the host's sysfs)."""
    from ..blocking import FALLBACK
    from ..validate import Case, catalogue
    nr = spec.nr_at(vector_bits if spec.is_vla else None)
    cases = list(catalogue(spec.mr, nr, spec.k_unroll, FALLBACK.kc, quick=quick))
    for s in CUBES:
        alpha, beta = {1: (1.0, 0.0), 7: (1.5, -0.5), 37: (-0.75, 0.5), 129: (1.25, 1.0)}[s]
        cases.append(Case(f"cube{s}", s, s, s, alpha=alpha, beta=beta,
                          c_layout="f" if s == 37 else "c"))
    return cases


def _env(forced: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("MICROKERNEL_ISA", "QEMU_CPU", "QEMU_LD_PREFIX")}
    if forced:
        env["MICROKERNEL_ISA"] = forced
    return env


def run_config(harness: pathlib.Path, tools: Tools, config: CpuConfig, specs, *,
               quick: bool = False, seed: int = 0, timeout: float = 600.0,
               cases_fn=None) -> RunReport:
    """Run every kernel's cases on one emulated CPU; check them; return the report.

    ``cases_fn(spec, vector_bits) -> list[validate.Case]`` replaces the default
    cases (:func:`cases_for`). Problems are recorded in the report, never raised
    (except TileError from :func:`microkernel.cross.harness.check_specs`)."""
    from ..blocking import FALLBACK
    specs = check_specs(specs)
    rep = RunReport(config.label, config.cpu, config.vector_bits, expected_isa=config.expect_isa)
    qemu = [tools.qemu, "-cpu", config.cpu, str(harness)]
    # build the cases first: which kernels this CPU must run, which it must refuse
    prepared, blobs = [], []
    blocking = (FALLBACK.kc, FALLBACK.mc, FALLBACK.nc)
    for spec in specs:
        rep.kernels[spec.name] = KernelRun(spec.name, spec.isa)
        refuse = spec.isa == "sve" and config.vector_bits is None
        if refuse:      # a NEON-only CPU: a few SVE cases that must come back refused
            cases = [c for c in cases_for(spec, 128, quick=True) if c.label in ("one", "cube7")]
        elif cases_fn is not None:
            cases = list(cases_fn(spec, config.vector_bits))
        else:
            cases = cases_for(spec, config.vector_bits, quick=quick)
        for i, case in enumerate(cases):
            p, blob = wire.prepare(spec.name, case, seed + i, refuse, blocking)
            prepared.append(p)
            blobs.append(blob)
    try:
        res = subprocess.run(qemu, input=wire.encode(blobs), capture_output=True,
                             timeout=timeout, env=_env())
    except subprocess.TimeoutExpired:
        rep.errors.append(f"harness timed out after {timeout:.0f} s under qemu")
        return rep
    head, pos = wire.split_output(res.stdout)
    _check_info(rep, wire.parse_info(head), config, specs)
    if res.returncode != 0 or pos is None:
        rep.errors.append(f"harness exit {res.returncode} under `{' '.join(qemu[:3])}`: "
                          f"{res.stderr.decode(errors='replace').strip()[-600:]}")
        return rep
    results = list(wire.read_results(res.stdout, pos, len(prepared)))
    for p, (status, got) in zip(prepared, results):
        _check_case(rep.kernels[p.kernel], p, status, got)
    if len(results) < len(prepared):
        p = prepared[len(results)]
        rep.errors.append(f"truncated results at {p.kernel}/{p.case.label}")
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
        if kinfo.get("runnable") == "1":
            kr.nr = int(kinfo["nr"])
            bits = config.vector_bits if spec.is_vla else None
            want = spec.nr_at(bits) if (bits or not spec.is_vla) else None
            if want is not None and kr.nr != want:
                rep.errors.append(f"{spec.name}: run-time NR {kr.nr}, expected {want}")


def _check_case(kr: KernelRun, p: wire.Prepared, status: int, got: np.ndarray) -> None:
    from ..validate import check, reference
    label = p.case.label
    if p.expect_refused:
        if status == wire.ST_REFUSED and np.array_equal(got, p.c_sent, equal_nan=True):
            kr.refused += 1
        else:
            kr.failures.append({"case": label, "detail": f"expected refusal, got status {status}"})
        return
    kr.cases += 1
    if status != wire.ST_OK:
        what = {wire.ST_REFUSED: "refused (ISA not cleared)",
                wire.ST_UNKNOWN: "unknown kernel",
                wire.ST_OUTSIDE: "wrote outside the A/B/C buffers (harness red zone)"}.get(
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
    Raises TileError, ValueError (a bad VL), CrossToolsMissing or CrossError."""
    specs = check_specs(specs)
    tools = tools or find_tools()
    harness = build_harness(specs, tools)
    configs = cpu_configs(vls, neon_cpu)
    jobs = max(1, jobs or min(len(configs), os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        runs = list(pool.map(lambda c: run_config(harness, tools, c, specs, quick=quick,
                                                  seed=seed, timeout=timeout,
                                                  cases_fn=cases_fn), configs))
    return CrossReport(str(harness), tools.cc_version, tools.qemu_version, quick, runs)
