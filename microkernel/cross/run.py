"""Running the harness under qemu-aarch64 and checking what comes back.

Per emulated CPU (:class:`~microkernel.cross.configs.CpuConfig`), every kernel that must
run there gets the edge catalogue of :func:`microkernel.validate.catalogue` at its
run-time MR and NR (its types, its K group) plus the cubes M = N = K in :data:`CUBES`
(:func:`~microkernel.cross.configs.cases_for`); results are checked against the typed
reference of :func:`microkernel.validate.reference` (float64 from the rounded inputs
with the element-wise bound of the types; exact int64 arithmetic wrapped to int32 for
integers: bit-exact) and the guard elements (:func:`microkernel.validate.check`). A
kernel whose ISA or feature the CPU lacks must come back refused (never executed, C
untouched), and ``MICROKERNEL_ISA=<isa>`` must be a clear error (exit 2) for every ISA
of the selection the CPU lacks. The probe's ISAs, its choice, the VL the SVE code
observes and the streaming VL the SME code observes are checked against the
configuration; an SME kernel's ``same_*`` cases must give bit-identical C at every
streaming length (:attr:`CrossReport.identity`).

Emulated timings are not performance numbers: nothing here reports one.
"""
from __future__ import annotations

import concurrent.futures
import difflib
import dataclasses
import hashlib
import os
import pathlib
import subprocess

import numpy as np

from . import wire
from .configs import (CUBES, DEFAULT_VLS, NEON_CPU, REFUSAL_CPUS, CpuConfig, case_seed,
                      cases_for, cpu_configs, vector_bits_for)
from .harness import DEFAULT_KERNELS, build_harness, check_specs
from .tools import Tools, find_tools, qemu_cpus

__all__ = ["DEFAULT_VLS", "NEON_CPU", "CUBES", "REFUSAL_CPUS", "CpuConfig", "KernelRun",
           "RunReport", "CrossReport", "cpu_configs", "cases_for", "run_config",
           "cross_validate", "identity", "SMOPA_DEFECT"]


@dataclasses.dataclass
class KernelRun:
    """One kernel on one CPU: cases executed (and how many passed), cases refused
    (expected where its ISA or feature is missing), its run-time MR and NR, failures,
    and the SHA-256 of C per ``same_*`` case (the identity check across lengths)."""
    kernel: str
    isa: str
    types: str = "f32"
    nr: int | None = None
    mr: int | None = None
    cases: int = 0
    passed: int = 0
    refused: int = 0
    #: cases executed but not checkable: the emulator's instruction is wrong (qemu 7.2's
    #: 32-bit SMOPA, see SMOPA_DEFECT); never counted as passed
    unproven: int = 0
    failures: list = dataclasses.field(default_factory=list)
    digests: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class RunReport:
    """One emulated CPU's run: what the probe said and chose, the VLs the SVE and SME
    code observed, each kernel's :class:`KernelRun`, the messages of the forced
    uncleared ISAs, and errors of the run itself."""
    label: str
    cpu: str
    requested_vl_bits: int | None
    requested_svl_bits: int | None = None
    observed_vl_bits: int | None = None
    observed_svl_bits: int | None = None
    probe_vl_bits: int | None = None
    probe_svl_bits: int | None = None
    probe_isas: list = dataclasses.field(default_factory=list)
    probe_features: dict = dataclasses.field(default_factory=dict)
    chosen_isa: str | None = None
    expected_isa: str | None = None
    forced_errors: dict = dataclasses.field(default_factory=dict)
    kernels: dict = dataclasses.field(default_factory=dict)
    errors: list = dataclasses.field(default_factory=list)
    #: what the emulator itself gets wrong (its known-answer checks), with what it leaves
    #: unproven
    emulator_defects: list = dataclasses.field(default_factory=list)

    @property
    def unproven(self) -> int:
        return sum(k.unproven for k in self.kernels.values())

    @property
    def forced_sve_error(self) -> str | None:
        """The message of ``MICROKERNEL_ISA=sve`` on a CPU without SVE (None elsewhere)."""
        return self.forced_errors.get("sve")

    @property
    def ok(self) -> bool:
        """No error, no failure, and nothing left unproven."""
        return (not self.errors and not self.unproven
                and all(not k.failures for k in self.kernels.values()))

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["ok"] = self.ok
        d["forced_sve_error"] = self.forced_sve_error
        for k in d["kernels"].values():
            k.pop("digests", None)
        return d


@dataclasses.dataclass
class CrossReport:
    """Every run of one ``cross_validate``: the harness binary, the tools' versions, and
    per SME kernel whether its ``same_*`` cases gave identical C at every streaming
    length it ran at (``identity``: kernel -> dict(lengths, cases, identical, differ))."""
    harness: str
    cc: str
    qemu: str
    quick: bool
    runs: list
    identity: dict = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return (bool(self.runs) and all(r.ok for r in self.runs)
                and all(v["identical"] is not False for v in self.identity.values()))

    @property
    def emulator_defects(self) -> list[str]:
        return list(dict.fromkeys(d for r in self.runs for d in r.emulator_defects))

    def to_dict(self) -> dict:
        return {"ok": self.ok, "harness": self.harness, "cc": self.cc, "qemu": self.qemu,
                "quick": self.quick, "error_bound": "c*(K+2)*u*(|alpha||A||B|+|beta||C0|), "
                "u = the accumulation's unit roundoff (2**-24 fp32, 2**-11 fp16), "
                "c=validate.C_BOUND, on the rounded inputs; integers exact",
                "note": "qemu emulation: correctness only, no timings",
                "identity": self.identity, "emulator_defects": self.emulator_defects,
                "runs": [r.to_dict() for r in self.runs]}


#: the emulator defect the harness's known answer detects (c_src/harness.c,
#: mk_harness_smopa32_ok)
SMOPA_DEFECT = ("this qemu computes the 32-bit integer outer products (SMOPA, UMOPA, USMOPA) "
                "wrong: qemu's fix \"target/arm: Fix 32-bit SMOPA\" (March 2024, qemu gitlab "
                "issue 2083) is not in it, so integer SME tiles cannot be proven here")


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
    cases (:func:`cases_for`; vector_bits: the SME streaming VL for sme tiles, the SVE
    VL otherwise). Problems are recorded in the report, never raised (except TileError
    from :func:`microkernel.cross.harness.check_specs`)."""
    from ..blocking import FALLBACK
    specs = check_specs(specs)
    rep = RunReport(config.label, config.cpu, config.vector_bits, config.sme_bits,
                    expected_isa=config.expect_isa)
    qemu = [tools.qemu, "-cpu", config.cpu, str(harness)]
    # build the cases first: which kernels this CPU must run, which it must refuse
    prepared, blobs = [], []
    blocking = (FALLBACK.kc, FALLBACK.mc, FALLBACK.nc)
    for spec in specs:
        rep.kernels[spec.name] = KernelRun(spec.name, spec.isa, spec.types)
        refuse = not config.runs(spec)
        bits = vector_bits_for(spec, config)
        if refuse:      # a few cases that must come back refused
            cases = [c for c in cases_for(spec, 128, quick=True) if c.label in ("one", "cube7")]
        elif cases_fn is not None:
            cases = list(cases_fn(spec, bits))
        else:
            cases = cases_for(spec, bits, quick=quick)
        for i, case in enumerate(cases):
            cs = case_seed(seed, case.label) if case.label.startswith("same_") else seed + i
            p, blob = wire.prepare(spec.name, case, cs, refuse, blocking, spec.types)
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
    info = wire.parse_info(head)
    unprovable = set()
    if info.get("smopa32_ok") is False:
        unprovable = {s.name for s in specs if s.isa == "sme" and s.gemm_types.integer}
        rep.emulator_defects.append(SMOPA_DEFECT + (f": {', '.join(sorted(unprovable))} "
                                                    f"unproven" if unprovable else ""))
    results = list(wire.read_results(res.stdout, pos, [p.c_flat.dtype for p in prepared]))
    for p, (status, got) in zip(prepared, results):
        if p.kernel in unprovable and not p.expect_refused:
            rep.kernels[p.kernel].unproven += 1
            continue
        _check_case(rep.kernels[p.kernel], p, status, got)
    if len(results) < len(prepared):
        p = prepared[len(results)]
        rep.errors.append(f"truncated results at {p.kernel}/{p.case.label}")
    # forcing an ISA this CPU lacks must be a clear error, never SIGILL
    for isa in dict.fromkeys(s.isa for s in specs):
        if isa in config.isas:
            continue
        r2 = subprocess.run([*qemu, "--info"], capture_output=True, timeout=60,
                            env=_env(isa))
        msg = r2.stderr.decode(errors="replace").strip()
        rep.forced_errors[isa] = msg
        if r2.returncode != 2 or f"MICROKERNEL_ISA={isa}" not in msg or "cannot run" not in msg:
            rep.errors.append(f"MICROKERNEL_ISA={isa} on {config.cpu}: expected a clear error "
                              f"(exit 2), got exit {r2.returncode}: {msg[-300:]}")
    for spec in specs:
        kr = rep.kernels[spec.name]
        if config.runs(spec) and kr.cases == 0 and not kr.unproven:
            rep.errors.append(f"{kr.kernel} executed zero cases on {config.label}")
        if not config.runs(spec) and kr.refused == 0:
            rep.errors.append(f"{kr.kernel}: no case was refused on {config.label}")
    return rep


def _length_errors(cpu, unit, isa, want, observed, probed, cleared) -> list[str]:
    """What is wrong with one vector length (SVE's VL, SME's streaming SVL) of a run:
    the length the code observed and the probe reported against the one requested,
    or an ISA the configuration does not have but the probe cleared."""
    if want is None:
        return ([f"{cpu} has no {isa} but the probe cleared it"]
                if cleared or observed is not None else [])
    errs = []
    if observed != want:
        errs.append(f"{isa} code observed {unit} {observed} bits, requested {want}")
    if probed != want:
        errs.append(f"probe reported {unit} {probed} bits, requested {want}")
    return errs


def _check_info(rep: RunReport, info: dict, config: CpuConfig, specs) -> None:
    probe = info.get("probe")
    if probe is None:
        rep.errors.append("harness printed no probe line")
        return
    rep.probe_isas = info.get("isas", [])
    rep.probe_features = info.get("features", {})
    rep.chosen_isa = info.get("chosen")
    rep.observed_vl_bits = info.get("observed")
    rep.observed_svl_bits = info.get("observed_svl")
    rep.probe_vl_bits = int(probe.get("sve_bits", 0)) or None
    rep.probe_svl_bits = int(probe.get("sme_bits", 0)) or None
    if probe.get("arch") != "aarch64":
        rep.errors.append(f"probe arch {probe.get('arch')!r}, expected aarch64")
    if rep.chosen_isa != config.expect_isa:
        rep.errors.append(f"probe chose {rep.chosen_isa!r}, expected {config.expect_isa!r}")
    if tuple(rep.probe_isas) != config.isas:
        rep.errors.append(f"probe cleared {','.join(rep.probe_isas)}, expected "
                          f"{','.join(config.isas)}")
    for feat in sorted({s.feature for s in specs if s.feature}):
        if rep.probe_features.get(feat, False) != (feat in config.features):
            rep.errors.append(f"probe feature {feat}={int(rep.probe_features.get(feat, 0))}, "
                              f"expected {int(feat in config.features)}")
    for unit, isa, want, observed, probed in (
            ("VL", "SVE", config.vector_bits, rep.observed_vl_bits, rep.probe_vl_bits),
            ("SVL", "SME", config.sme_bits, rep.observed_svl_bits, rep.probe_svl_bits)):
        rep.errors += _length_errors(config.cpu, unit, isa, want, observed, probed,
                                     isa.lower() in rep.probe_isas)
    for spec in specs:
        kinfo = info["kernels"].get(spec.name)
        kr = rep.kernels[spec.name]
        if kinfo is None:
            rep.errors.append(f"{spec.name} is missing from the harness")
            continue
        if (kinfo.get("runnable") == "1") != config.runs(spec):
            rep.errors.append(f"{spec.name}: the harness says runnable={kinfo.get('runnable')}"
                              f" on {config.label}, expected {int(config.runs(spec))}")
        if kinfo.get("types", "f32") != spec.types:
            rep.errors.append(f"{spec.name}: the harness has types {kinfo.get('types')}")
        if kinfo.get("runnable") == "1":
            kr.nr, kr.mr = int(kinfo["nr"]), int(kinfo["mr"])
            bits = vector_bits_for(spec, config)
            if not spec.is_vla or bits:
                want = (spec.mr_at(bits), spec.nr_at(bits))
                if (kr.mr, kr.nr) != want:
                    rep.errors.append(f"{spec.name}: run-time MR x NR {kr.mr} x {kr.nr}, "
                                      f"expected {want[0]} x {want[1]}")


def _check_case(kr: KernelRun, p: wire.Prepared, status: int, got: np.ndarray) -> None:
    from ..validate import check, reference
    label = p.case.label
    floats = p.c_sent.dtype.kind == "f"
    if p.expect_refused:
        if status == wire.ST_REFUSED and np.array_equal(got, p.c_sent, equal_nan=floats):
            kr.refused += 1
        else:
            kr.failures.append({"case": label, "detail": f"expected refusal, got status {status}"})
        return
    kr.cases += 1
    if status != wire.ST_OK:
        what = {wire.ST_REFUSED: "refused (ISA not cleared)",
                wire.ST_UNKNOWN: "unknown kernel",
                wire.ST_OUTSIDE: "wrote outside the A/B/C buffers (harness red zone)",
                wire.ST_TYPES: "the harness's types or element sizes differ"}.get(
            status, f"driver status {status}")
        kr.failures.append({"case": label, "detail": what})
        return
    if got.size != p.c_flat.size:
        kr.failures.append({"case": label, "detail": "C buffer size changed"})
        return
    p.c_flat[...] = got
    if label.startswith("same_"):
        kr.digests[label] = hashlib.sha256(np.ascontiguousarray(p.C).tobytes()).hexdigest()
    C_ref, bound = reference(p.A, p.B, p.C0, p.case.alpha, p.case.beta, p.types)
    ok, ratio, guard_ok, detail = check(p.C, C_ref, bound, p.base_c, p.mask_c)
    if ok:
        kr.passed += 1
    else:
        kr.failures.append({"case": label, "m": p.case.m, "n": p.case.n, "k": p.case.k,
                            "err_ratio": float(ratio), "guard_ok": bool(guard_ok),
                            "detail": detail})


def identity(runs) -> dict:
    """Per kernel with ``same_*`` cases: whether C was bit-identical for each of them
    at every length it ran at (dict(lengths=[label...], cases, identical, differ);
    identical is None with fewer than two lengths)."""
    out: dict = {}
    for r in runs:
        for name, k in r.kernels.items():
            if k.digests:
                out.setdefault(name, {})[r.label] = k.digests
    res = {}
    for name, per_run in out.items():
        labels = sorted(set().union(*(d.keys() for d in per_run.values())))
        differ = [lab for lab in labels
                  if len({d.get(lab) for d in per_run.values()}) != 1]
        # None: fewer than two lengths ran, nothing to compare
        res[name] = {"lengths": list(per_run), "cases": len(labels),
                     "identical": (not differ) if len(per_run) >= 2 else None,
                     "differ": differ}
    return res


def cross_validate(specs=DEFAULT_KERNELS, vls=DEFAULT_VLS, neon_cpu: str | None = NEON_CPU,
                   *, refusal: bool = True, quick: bool = False, jobs: int | None = None,
                   seed: int = 0, timeout: float = 600.0, tools: Tools | None = None,
                   cases_fn=None, progress=None) -> CrossReport:
    """Build the harness and run it on every CPU config (:func:`cpu_configs`: the VLs,
    the NEON-only CPU, with ``refusal`` the CPUs that refuse the typed ISAs), in
    parallel, ``jobs`` qemu processes at a time. ``cases_fn`` as for :func:`run_config`;
    ``progress(text)``, if given, hears of the build and of each finished run.
    Raises TileError, ValueError (a bad VL, a ``neon_cpu`` qemu does not know, a
    ``timeout`` or ``jobs`` below 1), CrossToolsMissing or CrossError, all before any
    emulated run."""
    say = progress or (lambda text: None)
    specs = check_specs(specs)
    configs = cpu_configs(vls, neon_cpu, refusal)
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    if jobs is not None and jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    tools = tools or find_tools()
    known = qemu_cpus(tools.qemu)
    if neon_cpu and known and neon_cpu.split(",")[0] not in known:
        near = difflib.get_close_matches(neon_cpu.split(",")[0], sorted(known), n=4, cutoff=0.5)
        raise ValueError(f"NEON-only CPU (--neon-cpu) {neon_cpu!r}: {os.path.basename(tools.qemu)} knows no "
                         f"such -cpu" + (f"; nearest: {', '.join(near)}" if near else "")
                         + f" ({os.path.basename(tools.qemu)} -cpu help lists them)")
    say(f"building the aarch64 harness ({len(specs)} tiles)")
    harness = build_harness(specs, tools)
    jobs = jobs or min(len(configs), os.cpu_count() or 1)
    say(f"running the catalogue under qemu on {len(configs)} CPU configs, {jobs} at a time")
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = {pool.submit(run_config, harness, tools, c, specs, quick=quick, seed=seed,
                               timeout=timeout, cases_fn=cases_fn): c for c in configs}
        for done, f in enumerate(concurrent.futures.as_completed(futures), 1):
            say(f"{futures[f].label} done ({done} of {len(configs)})")
        runs = [f.result() for f in futures]
    return CrossReport(str(harness), tools.cc_version, tools.qemu_version, quick, runs,
                       identity(runs))
