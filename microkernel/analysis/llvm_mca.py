"""The llvm-mca driver: predicted cycles per iteration of a K loop, and the bottleneck.

The loop body (:class:`~microkernel.analysis.counts.LoopInfo`) is turned into an
assembler file llvm-mca reads (the back edge to a label; x86 in LLVM's Intel syntax,
``DWORD BCST [m]`` -> ``DWORD PTR [m]{1toN}``; A64 as objdump prints it, comments and
``<sym+off>`` dropped) and simulated for ``-iterations`` with the scheduling model of
``-mcpu`` (llvm-mca's documentation: "llvm-mca - LLVM Machine Code Analyzer"):

* x86-64: ``-mtriple=x86_64-unknown-linux-gnu``; default ``-mcpu`` sapphirerapids
  for avx512 (else icelake-server, skylake-avx512), znver3 on AMD family 0x19 else
  haswell for avx2/scalar;
* aarch64: ``-mtriple=aarch64-linux-gnu`` (``-mattr=+sve`` for SVE code); default
  ``-mcpu`` neoverse-v2 for neon and sve, else the first this llvm-mca knows of
  :data:`A64_MCPUS` (``llvm-mca -mtriple=aarch64 -mcpu=help`` lists them).

**Model self-check** (:func:`mca_fma_rate`, :func:`checked_mcpu`): a model must run a
block of independent FMA chains (12 on x86, 24 on aarch64: more than latency x units
on every modelled core) at the core's FMA units per cycle (2 for these ISAs), else it
mispredicts every FMA-bound kernel. A default model that fails is replaced by the
first of its fallbacks that passes, and the note says so: LLVM <= 15's znver3 charges
a ymm FMA to both FP pipes (llvm/llvm-project#59325; znver2 is used); LLVM 14 has no
neoverse-v2, models neoverse-v1/n1/n2 with Cortex-A57's pipeline (one 128-bit FMLA
per cycle) and schedules no SVE on them, so neon falls back to ampere1 (Ampere's
server core, two 128-bit FMLA per cycle in both forms; LLVM 14's apple-m1 runs the
by-element form at three, the vector form at two) and sve to a64fx (the one SVE
model of LLVM 14): predictions for *those* cores, as the note says.

Errors: :func:`mca` raises RuntimeError when llvm-mca rejects the input (message:
the command, llvm-mca's stderr and the input); every function returns None where
llvm-mca is not installed (``$MICROKERNEL_LLVM_MCA``, ``llvm-mca``, ``llvm-mca-N``).
"""
from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import difflib
import subprocess

from ..tile import ISAS
from .disasm import host_arch, parse
from .loops import LoopInfo, count, inner_loop

__all__ = ["McaInfo", "mca", "default_mcpu", "checked_mcpu", "check_mcpu", "mca_fma_rate",
           "TRIPLES", "A64_MCPUS"]

#: llvm-mca -mtriple per architecture
TRIPLES = {"x86_64": "x86_64-unknown-linux-gnu", "aarch64": "aarch64-linux-gnu"}
#: -mcpu preference per aarch64 ISA: the first this llvm-mca knows is the default, the
#: rest are the fallbacks when its model fails the FMA self-check
A64_MCPUS = {"neon": ("neoverse-v2", "neoverse-v1", "neoverse-n2", "neoverse-n1",
                      "ampere1", "apple-m4", "apple-m1"),
             "sve": ("neoverse-v2", "neoverse-v1", "neoverse-n2", "a64fx")}
# the Arm typed ISAs: the NEON ones take neon's models (LLVM 14 schedules sdot, smmla,
# bfmmla, fmla .8h and fmlal on neoverse-n1/n2/v1, cortex-a710/x2, ampere1, apple-m1);
# the SVE ones sve's (LLVM 14 schedules SVE bfmmla on neoverse-n2/v1 and a64fx, SVE smmla
# on none); SME has no scheduling model in LLVM 14 (the report says so)
A64_MCPUS.update({isa: A64_MCPUS["neon"] for isa in ("neondot", "neoni8mm", "neonbf16",
                                                       "neonfp16")})
A64_MCPUS.update({isa: A64_MCPUS["sve"] for isa in ("svei8mm", "svebf16")})
A64_MCPUS["sme"] = ("apple-m4", "neoverse-v2", "apple-m1")
#: -mattr an aarch64 loop needs for its typed instructions (llvm-mca rejects them otherwise)
_A64_MATTR = ((re.compile(r"^(s|u)dot$"), "+dotprod"),
              (re.compile(r"^(usdot|sudot|smmla|ummla|usmmla)$"), "+i8mm"),
              (re.compile(r"^(bfmmla|bfdot|bfmlal[bt])$"), "+bf16"),
              (re.compile(r"^fmlal2?$"), "+fullfp16,+fp16fml"),
              (re.compile(r"^(b?fmopa|[su]mopa|usmopa|sumopa|zero|smstart|smstop)$"), "+sme"))
#: x86 models to fall back to when the default one fails the FMA self-check (same core
#: family, FMA pipes modelled right): LLVM <= 15's znver3 model charges a ymm/xmm FMA
#: to both FP0 and FP1 (1 FMA/cycle instead of 2; llvm/llvm-project#59325)
_MCPU_FALLBACKS = {"znver3": ("znver2",), "sapphirerapids": ("icelake-server", "skylake-avx512"),
                   "icelake-server": ("skylake-avx512",)}


@dataclasses.dataclass(frozen=True)
class McaInfo:
    """llvm-mca's view of one loop iteration (``cycles_per_iteration`` is the simulated
    steady state, Total Cycles / Iterations; ``block_rthroughput`` the static resource
    bound). ``per_k`` values divide by the k steps per iteration."""
    mcpu: str
    iterations: int
    cycles_per_iteration: float
    block_rthroughput: float
    ipc: float
    k_unroll: int
    fma_bound: float                      # FMAs per iteration / FMA units
    bottleneck: str
    resource_bound_by: str                # the most loaded resource group(s)
    caveat: str                           # a known model artefact that applies, or ""
    resource_pressure: dict               # resource -> cycles per iteration
    bottleneck_analysis: str              # llvm-mca's own summary lines
    dispatch_stalls: dict                 # stall kind -> % of cycles
    version: str
    triple: str = TRIPLES["x86_64"]

    @property
    def cycles_per_k(self) -> float:
        return self.cycles_per_iteration / self.k_unroll

    @property
    def rthroughput_per_k(self) -> float:
        return self.block_rthroughput / self.k_unroll

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["cycles_per_k"] = self.cycles_per_k
        d["rthroughput_per_k"] = self.rthroughput_per_k
        d["fma_bound_per_k"] = self.fma_bound / self.k_unroll
        return d


def _llvm_mca() -> str | None:
    exe = os.environ.get("MICROKERNEL_LLVM_MCA") or shutil.which("llvm-mca")
    if exe:
        return exe
    for v in range(25, 9, -1):
        exe = shutil.which(f"llvm-mca-{v}")
        if exe:
            return exe
    return None


@functools.lru_cache(maxsize=None)
def _mca_cpus(exe: str, triple: str = TRIPLES["x86_64"]) -> frozenset:
    """CPUs this llvm-mca knows for ``triple`` (``-mcpu=help``)."""
    res = subprocess.run([exe, f"-mtriple={triple}", "-mcpu=help"], capture_output=True,
                         text=True, check=False)
    return frozenset(re.findall(r"^\s+([a-z0-9][\w.-]*)\s+- Select", res.stdout + res.stderr,
                                re.MULTILINE))


def check_mcpu(mcpu: str | None, arch: str = "x86_64") -> None:
    """Refuse an ``-mcpu`` that the installed llvm-mca does not know for ``arch``
    (``llvm-mca -mtriple=.. -mcpu=help``), before any work: ValueError naming the nearest
    CPUs it knows. Nothing to check without ``mcpu`` or without llvm-mca."""
    exe = _llvm_mca()
    if not mcpu or exe is None:
        return
    known = _mca_cpus(exe, TRIPLES.get(arch, TRIPLES["x86_64"]))
    if known and mcpu not in known:
        near = difflib.get_close_matches(mcpu, sorted(known), n=4, cutoff=0.5)
        raise ValueError(f"--mcpu {mcpu!r}: llvm-mca {_mca_version(exe)} knows no such "
                         f"{arch} CPU" + (f"; nearest: {', '.join(near)}" if near else "")
                         + f" (llvm-mca -mtriple={TRIPLES.get(arch, TRIPLES['x86_64'])} "
                         "-mcpu=help lists them)")


@functools.lru_cache(maxsize=None)
def _mca_version(exe: str) -> str:
    ver = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False)
    vm = re.search(r"LLVM version ([\w.]+)", ver.stdout)
    return vm.group(1) if vm else "?"


def _arch(isa: str) -> str:
    arch = ISAS[isa].arch
    return host_arch() if arch == "any" else arch


def default_mcpu(isa: str, cpu_info=None) -> str:
    """llvm-mca ``-mcpu`` for an ISA: avx512 -> sapphirerapids (else icelake-server,
    skylake-avx512, whichever this llvm-mca knows); avx2 and scalar -> znver3 when the
    probe reports AMD family 0x19 (Zen 3/4), else haswell; neon and sve -> the first
    of :data:`A64_MCPUS` this llvm-mca knows (neoverse-v2 first)."""
    exe = _llvm_mca()
    if isa in A64_MCPUS or _arch(isa) == "aarch64":
        prefs = A64_MCPUS.get(isa, A64_MCPUS["neon"])
        known = _mca_cpus(exe, TRIPLES["aarch64"]) if exe else frozenset()
        return next((c for c in prefs if not known or c in known), prefs[0])
    known = _mca_cpus(exe) if exe else frozenset()
    if isa == "avx512" or "-mavx512f" in ISAS[isa].cflags:   # and the typed AVX-512 / AMX ISAs
        for c in ("sapphirerapids", "icelake-server", "skylake-avx512"):
            if not known or c in known:
                return c
        return "skylake-avx512"
    if cpu_info is None:
        try:
            from ..probe import probe
            cpu_info = probe()
        except Exception:               # noqa: BLE001 - the mcpu is a best guess
            cpu_info = None
    if cpu_info is not None and getattr(cpu_info, "vendor", "") == "AuthenticAMD" \
            and cpu_info.features.get("family") == 0x19 and (not known or "znver3" in known):
        return "znver3"
    return "haswell"


def _check_blocks(isa: str) -> list[tuple[str, int, list[str]]]:
    """[(source, chains, extra llvm-mca args)] of the FMA self-check for ``isa``: x86
    one block of 12 chains (the FMA peak loop); neon the vector and the by-element
    form (the NEON generator's FMAs are by element, its peak loop's vector), 24 chains
    each; sve the predicated form, 24 chains."""
    a64 = [f"-mtriple={TRIPLES['aarch64']}"]
    if isa == "sve":
        return [("".join(f"fmla z{i}.s, p0/m, z30.s, z31.s\n" for i in range(24)), 24,
                 a64 + ["-mattr=+sve"])]
    if isa == "neon":
        return [("".join(f"fmla v{i}.4s, v30.4s, v31.4s\n" for i in range(24)), 24, a64),
                ("".join(f"fmla v{i}.4s, v30.4s, v31.s[1]\n" for i in range(24)), 24, a64)]
    reg = {"avx512": "zmm", "avx2": "ymm"}.get(isa, "xmm")
    return [(".intel_syntax noprefix\n" + "".join(
        f"vfmadd231ps {reg}{i}, {reg}12, {reg}13\n" for i in range(12)), 12,
        [f"-mtriple={TRIPLES['x86_64']}"])]


@functools.lru_cache(maxsize=None)
def mca_fma_rate(mcpu: str, isa: str = "avx2") -> float | None:
    """FMAs per cycle llvm-mca's ``mcpu`` model gives a block of independent FMA
    chains of ``isa``'s vector width (12 chains on x86, the FMA peak loop; 24 on
    aarch64; for neon the slower of the vector and the by-element form); None without
    llvm-mca, or when the model rejects the block (an unknown CPU; LLVM 14's
    neoverse-v1 has no SVE scheduling information).
    A model that cannot reproduce the core's FMA units (2 per cycle on Zen 2/3/4, on
    Intel server cores and on the Neoverse cores) mispredicts every FMA-bound kernel."""
    exe = _llvm_mca()
    if exe is None:
        return None
    rates = []
    for src, chains, args in _check_blocks(isa):
        res = subprocess.run([exe, f"-mcpu={mcpu}", *args, "-iterations=200"], input=src,
                             capture_output=True, text=True, check=False)
        p = _parse_mca(res.stdout) if res.returncode == 0 else None
        if not p or not p["total_cycles"]:
            return None
        rates.append(chains * p["iterations"] / p["total_cycles"])
    return min(rates)


def checked_mcpu(isa: str, mcpu: str | None = None, fma_units: int = 2) -> tuple[str, str]:
    """(mcpu, note): ``mcpu`` or :func:`default_mcpu`, checked with :func:`mca_fma_rate`.

    An explicit ``mcpu`` is kept (the note warns if its model fails the check); a
    default one that fails is replaced by the first fallback that passes (x86: of the
    same family, znver3 -> znver2 on LLVM 14; aarch64: the rest of
    :data:`A64_MCPUS`), and the note says so. Without llvm-mca: (default, "")."""
    a64 = _arch(isa) == "aarch64"
    isa_v = isa if isa in ("avx512", "avx2", "neon", "sve") else (
        "neon" if a64 else "avx512" if "-mavx512f" in ISAS[isa].cflags else "avx2")
    chosen = mcpu or default_mcpu(isa)
    exe = _llvm_mca()
    if exe is None:
        return chosen, ""
    rate = mca_fma_rate(chosen, isa_v)
    if rate is not None and rate >= 0.95 * fma_units:
        return chosen, ""
    if rate is None and not a64:
        return chosen, ""              # x86: an unknown CPU fails in mca() with its message
    bad = (f"llvm-mca's {chosen} model cannot schedule {isa} FMAs" if rate is None else
           f"llvm-mca's {chosen} model runs {rate:.2f} FMAs/cycle on independent chains, "
           f"not {fma_units}")
    if mcpu:
        return chosen, bad + " (kept: --mcpu given)"
    if a64:
        prefs = A64_MCPUS.get(isa, A64_MCPUS["neon"])
        alts = prefs[prefs.index(chosen) + 1:] if chosen in prefs else ()
        known = _mca_cpus(exe, TRIPLES["aarch64"])
    else:
        alts, known = _MCPU_FALLBACKS.get(chosen, ()), _mca_cpus(exe)
    for alt in alts:
        if alt in known:
            r = mca_fma_rate(alt, isa_v)
            if r is not None and r >= 0.95 * fma_units:
                why = ("llvm/llvm-project#59325" if not a64 else
                       f"the first of {', '.join(prefs)} whose model in llvm-mca "
                       f"{_mca_version(exe)} runs {fma_units} {isa} FMAs/cycle: a "
                       f"prediction for that core")
                return alt, bad + f"; using {alt} ({why})"
    return chosen, bad


def _mca_source(loop_asm: str | LoopInfo, arch: str = "x86_64") -> str:
    """objdump listing of a loop -> llvm-mca input (x86: LLVM Intel syntax; A64 as is),
    the branch back to the loop's first instruction to ``.Lmk_loop``, others to
    ``.Lmk_exit``."""
    if isinstance(loop_asm, LoopInfo):
        ins, arch = loop_asm.instructions, loop_asm.arch
    else:
        ins = parse(loop_asm, arch)
    if not ins:
        raise ValueError("no instructions in the loop listing")
    lines = [".intel_syntax noprefix"] if arch == "x86_64" else []
    lines.append(".Lmk_loop:")
    first = ins[0].address
    for i in ins:
        mn, ops = i.mnemonic, i.operands
        if i.branch_target is not None:
            label = ".Lmk_loop" if i.branch_target == first else ".Lmk_exit"
            if arch == "aarch64":      # the target is the last operand (cbz x0, <t>)
                ops = re.sub(r"[0-9a-f]+(?:\s+<[^>]*>)?\s*$", label, ops.strip())
            else:
                ops = label
        elif arch == "aarch64":
            ops = re.sub(r"\s*<[^>]*>", "", ops)
        else:
            regs = i.vector_registers()
            bits = {"x": 128, "y": 256, "z": 512}.get(regs[0][0], 128) if regs else 128

            def bcst(m):
                elem = 32 if m.group(1).upper() == "DWORD" else 64
                return f"{m.group(1)} PTR [{m.group(2)}]{{1to{bits // elem}}}"
            ops = re.sub(r"\b(DWORD|QWORD)\s+BCST\s+\[([^\]]*)\]", bcst, ops)
            ops = re.sub(r"\s*<[^>]*>", "", ops)
        lines.append(f"    {mn} {ops}".rstrip())
    lines.append(".Lmk_exit:")
    return "\n".join(lines) + "\n"


_RES_NAMES = [
    # (regex on the llvm-mca resource name, group)
    (r"^(SKX|SKL|HW|BW|ICX|ICL|SPR|ADL)Port(0|5)$", "FMA/vector ALU port {p}"),
    (r"^(HW|BW|SKL)Port1$", "FMA/vector ALU port 1"),
    (r"^(SKX|ICX|ICL|SPR|ADL)Port1$", "ALU port 1"),
    (r"^\w+Port(2|3)$", "load port {p}"),
    (r"^\w+Port4$", "store-data port 4"),
    (r"^\w+Port7$", "store-address port 7"),
    (r"^\w+Port6$", "branch/ALU port 6"),
    # LLVM's Zen models put FMAs on different pipe pairs (Zn2: FPU0/FPU3, Zn3: FPP0/FPP1)
    (r"^Zn\dFP[PU](\d)$", "FP pipe {p}"),
    (r"^Zn\dFPP45$", "FP load/store pipes 4-5"),
    (r"^Zn\dLoad$", "load units"),
    (r"^Zn\dLSU$", "load/store units"),
    (r"^Zn\dAGU\d$", "address generation"),
    (r"^Zn\dALU\d$", "integer ALUs"),
    (r"^Zn\dBRU\d$", "branch unit"),
    # aarch64: Cortex-A57 (LLVM 14's neoverse-*), Cyclone (apple-*), A64FX, Neoverse
    (r"^A57Unit([WX])$", "FP/ASIMD pipe {p}"),
    (r"^A57UnitL$", "load pipe"),
    (r"^A57UnitS$", "store pipe"),
    (r"^A57Unit[IM]$", "integer pipes"),
    (r"^A57UnitB$", "branch pipe"),
    (r"^CyUnitV[CDM]?$", "vector units"),
    (r"^CyUnitLS$", "load/store units"),
    (r"^CyUnitI[DMS]?$", "integer units"),
    (r"^CyUnitBR?$", "branch units"),
    (r"^A64FXIPFL([AB])$", "FP pipe FL{p}"),
    (r"^A64FXIPEAG([AB])$", "load/address pipe EAG{p}"),
    (r"^A64FXIPEX([AB])$", "integer pipe EX{p}"),
    (r"^A64FXIPPR$", "predicate pipe"),
    (r"^A64FXIPBR$", "branch pipe"),
    (r"^Ampere1Unit([XY])$", "FP/ASIMD pipe {p}"),
    (r"^Ampere1UnitZ$", "FP/ASIMD store/convert pipe Z"),
    (r"^Ampere1UnitL$", "load pipes"),
    (r"^Ampere1UnitS$", "store pipes"),
    (r"^Ampere1Unit[AB]$", "integer pipes"),
    (r"^Ampere1UnitBS$", "branch pipe"),
    (r"^(?:N1|N2|N3|V1|V2)UnitV(\d*)$", "FP/vector pipe V{p}"),
    (r"^(?:N1|N2|N3|V1|V2)UnitL(\d*)$", "load pipe L{p}"),
    (r"^(?:N1|N2|N3|V1|V2)UnitD$", "store data pipe"),
]


def _describe_resource(name: str) -> str:
    base = name.split(".")[0] if "." in name else name
    for pat, label in _RES_NAMES:
        m = re.match(pat, base)
        if m:
            p = m.groups()[-1] if m.groups() else ""
            return f"{label.format(p=p)} ({base})"
    return base


def _parse_mca(out: str) -> dict:
    def num(pattern, cast=float, default=None):
        m = re.search(pattern, out, re.MULTILINE)
        return cast(m.group(1)) if m else default

    res_names = dict(re.findall(r"^\[(\d+(?:\.\d+)?)\]\s+-\s+(\S+)\s*$", out, re.MULTILINE))
    pressure: dict[str, float] = {}
    m = re.search(r"Resource pressure per iteration:\n(.*)\n(.*)\n", out)
    if m:
        heads = re.findall(r"\[(\d+(?:\.\d+)?)\]", m.group(1))
        vals = m.group(2).split()
        for h, v in zip(heads, vals):
            name = res_names.get(h, h)
            # sub-units ([12.0], [12.1]) share a name: keep them apart
            key = f"{name}.{h.split('.')[1]}" if "." in h else name
            pressure[key] = 0.0 if v == "-" else float(v)
    ba = ""
    m = re.search(r"(Cycles with backend pressure increase.*?)(?:\n\s*\n|\Z)", out, re.S)
    if m:
        ba = m.group(1).strip()
    elif "No resource or data dependency bottlenecks discovered" in out:
        ba = "No resource or data dependency bottlenecks discovered."
    stalls = {}
    for kind, pct in re.findall(r"^(\w+)\s+- [^:]*:\s+\d+\s+\((\d+\.\d+)%\)", out, re.MULTILINE):
        stalls[kind] = float(pct)
    return dict(
        iterations=num(r"^Iterations:\s+(\d+)", int),
        total_cycles=num(r"^Total Cycles:\s+(\d+)", int),
        rthroughput=num(r"^Block RThroughput:\s+([\d.]+)"),
        ipc=num(r"^IPC:\s+([\d.]+)"),
        pressure=pressure, analysis=ba, stalls=stalls)


def _top_resources(pressure: dict) -> tuple[float, str]:
    top = max(pressure.values(), default=0.0)
    tops = [k for k, v in pressure.items() if top > 0 and v >= top * 0.98]
    return top, ", ".join(dict.fromkeys(_describe_resource(t) for t in tops))


def _bottleneck(cycles: float, fma_bound: float, rthroughput: float,
                pressure: dict, stalls: dict, analysis: str) -> str:
    if fma_bound > 0 and cycles < fma_bound * 0.95:
        return (f"FMA throughput (below the FMA bound of {fma_bound:g} cycles/iteration: "
                f"the model issues more FMAs per cycle than the ISA's FMA units)")
    if fma_bound > 0 and cycles <= fma_bound * 1.05:
        return "FMA throughput"
    top, groups = _top_resources(pressure)
    if top > 0 and cycles <= top * 1.10:
        return f"resource pressure: {groups} ({top:g} cycles/iteration)"
    why = []
    if stalls.get("RCU", 0) >= 10:
        why.append(f"reorder buffer full {stalls['RCU']:.0f}% of cycles")
    if stalls.get("SCHEDQ", 0) >= 10:
        why.append(f"scheduler full {stalls['SCHEDQ']:.0f}%")
    if stalls.get("LQ", 0) >= 10:
        why.append(f"load queue full {stalls['LQ']:.0f}%")
    m = re.search(r"Data Dependencies:\s+\[\s*([\d.]+)%", analysis)
    if m and float(m.group(1)) >= 10:
        why.append(f"data dependencies {float(m.group(1)):.0f}%")
    return (f"latency/dependency chain ({cycles:.1f} cycles/iteration, resource bound "
            f"{max(rthroughput, top):g}" + (f"; {'; '.join(why)}" if why else "") + ")")


def _caveat(bottleneck: str, rotated_fmas: int) -> str:
    if not rotated_fmas or not bottleneck.startswith("latency"):
        return ""
    return (f"the loop has {rotated_fmas} 132-form FMA(s) with a memory operand (the "
            f"compiler rotates an accumulator through a dead B register); LLVM 14's x86 "
            f"models charge the folded load's latency to the accumulator operand of that "
            f"form (one-FMA chain on sapphirerapids: 231 form 4 cycles, 132 form 12), although "
            f"the load does not depend on the accumulator: the resource bound is likely "
            f"the better estimate")


def mca(loop_asm: str | LoopInfo, mcpu: str, *, k_unroll: int | None = None,
        fma_units: int = 2, iterations: int = 500, arch: str = "x86_64") -> McaInfo | None:
    """Run llvm-mca on the loop body; None when llvm-mca is not installed.

    ``loop_asm`` is a :class:`LoopInfo` (its own architecture is used) or an
    objdump-style listing of ``arch`` (``LoopInfo.asm``; a listing with a loop is cut
    to its inner loop, a straight-line block is simulated as is). Bottleneck: "FMA
    throughput" when the predicted cycles are within 5% of FMAs / ``fma_units``; else
    the most loaded resource (port or pipe group) when the cycles match its pressure;
    else a latency or dependency chain (with llvm-mca's dispatch-stall evidence).
    Raises RuntimeError when llvm-mca rejects the input.
    """
    exe = _llvm_mca()
    if exe is None:
        return None
    if isinstance(loop_asm, LoopInfo):
        info = loop_asm
    else:
        try:
            info = inner_loop(loop_asm, arch=arch)
        except ValueError:                 # a straight-line block: simulate it as is
            info = count(parse(loop_asm, arch), 1, False)
    ku = k_unroll or info.k_unroll
    src = _mca_source(info)
    triple = TRIPLES.get(info.arch, TRIPLES["x86_64"])
    sve = info.arch == "aarch64" and (info.scalable or any(
        r.startswith("z") for r in info.vector_registers))
    attrs = ["+sve"] if sve else []
    if info.arch == "aarch64":
        mns = {i.base_mnemonic for i in info.instructions}
        attrs += [a for rx, a in _A64_MATTR if any(rx.match(m) for m in mns)]
        if any(".8h" in i.operands and i.base_mnemonic == "fmla" for i in info.instructions):
            attrs.append("+fullfp16")
    cmd = [exe, f"-mcpu={mcpu}", f"-mtriple={triple}",
           *([f"-mattr={','.join(dict.fromkeys(attrs))}"] if attrs else []),
           f"-iterations={iterations}", "-bottleneck-analysis", "-dispatch-stats",
           "-resource-pressure", "-timeline=false", "-instruction-info=false"]
    res = subprocess.run(cmd, input=src, capture_output=True, text=True, check=False)
    if res.returncode != 0 or "Total Cycles" not in res.stdout:
        why = ""
        if "unsupported instruction" in res.stderr:
            why = (f"llvm-mca {_mca_version(exe)}'s {mcpu} model has no scheduling "
                   f"information for an instruction of this loop (LLVM 14: SVE SMMLA/UMMLA/"
                   f"USMMLA and the SME outer products on every model). ")
        raise RuntimeError(f"{why}llvm-mca failed ({' '.join(cmd)}):\n{res.stderr.strip()}\n"
                           f"input:\n{src}")
    p = _parse_mca(res.stdout)
    cycles = p["total_cycles"] / p["iterations"]
    fma_bound = info.fmas / fma_units if fma_units else 0.0
    rotated = sum(1 for i in info.instructions
                  if re.match(r"^v?f(n)?m(add|sub)\w*132", i.base_mnemonic)
                  and i.memory_operands())
    bottleneck = _bottleneck(cycles, fma_bound, p["rthroughput"] or 0.0, p["pressure"],
                             p["stalls"], p["analysis"])
    return McaInfo(
        mcpu=mcpu, iterations=p["iterations"], cycles_per_iteration=cycles,
        block_rthroughput=p["rthroughput"] or 0.0, ipc=p["ipc"] or 0.0, k_unroll=ku,
        fma_bound=fma_bound,
        bottleneck=bottleneck, caveat=_caveat(bottleneck, rotated),
        resource_bound_by=_top_resources(p["pressure"])[1],
        resource_pressure=p["pressure"], bottleneck_analysis=p["analysis"],
        dispatch_stalls=p["stalls"], version=_mca_version(exe), triple=triple)
