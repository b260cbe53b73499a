"""Inspection: the CPU side of ``ptxas -v`` and ``cuobjdump -sass``.

``microkernel asm NAME`` compiles a tile's kernel module (without importing it, so any
x86 ISA can be inspected on any x86 host), disassembles the micro-kernel
``mk_ukernel_<name>`` with objdump (**Intel syntax**, ``-M intel``, everywhere in this
module), finds the inner K loop and counts what one loop iteration and one k step do:

* FMAs (``vfmadd*``/``vfmsub*``/``vfnmadd*``/``vfnmsub*``), and their fp32 lanes;
  separate multiplies and adds too (the scalar tile may get mul + add);
* vector loads (full-width memory operands, also when folded into an arithmetic op);
* broadcasts (``vbroadcastss`` and embedded-broadcast operands, which objdump's Intel
  syntax prints as ``DWORD BCST [..]`` and LLVM's as ``DWORD PTR [..]{1to16}``);
* stack spills and reloads: memory operands based on ``rsp`` (or ``rbp`` when the
  function keeps it as a frame pointer) inside the loop;
* total instructions.

Then, where ``llvm-mca`` is installed, it predicts cycles per iteration for the loop
body and names the bottleneck; and where the CPU runs the ISA, it measures the
micro-kernel in L1 and converts GFLOP/s into cycles per k step (see
:func:`measure`: the clock is derived from the FMA peak loop, because ``perf stat -e
cycles`` is not available on virtual machines such as this project's).

The inner K loop is the natural loop of the function's control-flow graph with the
most FMA work among the innermost loops (:func:`inner_loop`): with the generator's
``k_unroll`` copies of the k step it is the unrolled main loop, so per-k counts are
per-iteration counts divided by ``spec.k_unroll``.

Public: :func:`disassemble`, :func:`inner_loop` / :func:`loop_of` (``LoopInfo``),
:func:`spills` (for the sweep), :func:`mca` (``McaInfo``), :func:`measure`
(``Measured``), :func:`report`, and the CLI pair :func:`add_asm_arguments` /
:func:`run_asm` behind ``microkernel asm NAME [--json] [--mcpu CPU] [--full]
[--no-measure]``.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import shutil
import subprocess

from .tile import TileSpec, register_budget

__all__ = [
    "Instruction", "LoopInfo", "McaInfo", "Measured", "disassemble", "parse",
    "inner_loop", "loop_of", "spills", "mca", "default_mcpu", "checked_mcpu",
    "mca_fma_rate", "measure", "report",
    "add_asm_arguments", "run_asm", "SYNTAX",
]

#: the assembly syntax of every listing this module prints or parses
SYNTAX = "intel"

#: ISAs whose kernels are x86-64 code that objdump and llvm-mca read on this host
X86_ISAS = ("avx512", "avx2", "scalar")

_PREFIXES = {"lock", "rep", "repz", "repe", "repnz", "repne", "data16", "addr32",
             "notrack", "bnd", "cs", "ds", "es", "ss", "fs", "gs", "xacquire", "xrelease"}
_FMA_RE = re.compile(r"^v?f(?:n)?m(?:add|sub)(?:sub|add)?(?:132|213|231)?([ps])([sd])$")
_MUL_RE = re.compile(r"^v?mul([ps])([sd])$")
_ADD_RE = re.compile(r"^v?(?:add|sub)([ps])([sd])$")
_BCAST_RE = re.compile(r"^v(?:p)?broadcast(?:ss|sd|d|q|f32x\d|f64x\d|i32x\d|i64x\d)$")
# Intel-syntax memory operand: optional size + PTR/BCST, optional segment, [..]
_MEM_RE = re.compile(
    r"(?:(?P<size>BYTE|WORD|DWORD|QWORD|TBYTE|XMMWORD|YMMWORD|ZMMWORD|OWORD)\s+"
    r"(?P<kind>PTR|BCST)\s+)?(?:[a-z]s:)?\[(?P<addr>[^\]]*)\](?P<att_bcst>\{1to\d+\})?",
    re.IGNORECASE)
_VREG_RE = re.compile(r"\b([xyz]mm\d+)\b")
_SIZE_BYTES = {"byte": 1, "word": 2, "dword": 4, "qword": 8, "tbyte": 10,
               "xmmword": 16, "oword": 16, "ymmword": 32, "zmmword": 64}
_REG_BITS = {"x": 128, "y": 256, "z": 512}
_NO_MEMORY_ACCESS = {"lea", "nop", "prefetcht0", "prefetcht1", "prefetcht2",
                     "prefetchnta", "prefetchw"}


# -- disassembly ---------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Instruction:
    """One disassembled instruction (objdump, Intel syntax)."""
    address: int
    mnemonic: str          # lower case, prefixes included ("rep stos")
    operands: str          # as objdump prints them
    text: str              # "mnemonic operands"

    @property
    def base_mnemonic(self) -> str:
        return self.mnemonic.split()[-1]

    @property
    def branch_target(self) -> int | None:
        """Target address of a direct jump (``jne 23d8 <sym+0x78>``), else None."""
        if not self.base_mnemonic.startswith("j"):
            return None
        m = re.match(r"^([0-9a-f]+)\b", self.operands.strip())
        return int(m.group(1), 16) if m else None

    def memory_operands(self) -> list[dict]:
        """Memory operands: dicts with index (operand position), size (bytes or None),
        broadcast (bool), base register and the address text."""
        if self.base_mnemonic in _NO_MEMORY_ACCESS:
            return []
        out = []
        for pos, op in enumerate(_split_operands(self.operands)):
            m = _MEM_RE.search(op)
            if not m:
                continue
            addr = m.group("addr").strip()
            base = re.match(r"^([a-z][a-z0-9]*)", addr)
            size = m.group("size")
            out.append(dict(
                index=pos, size=_SIZE_BYTES.get(size.lower()) if size else None,
                broadcast=bool((m.group("kind") or "").upper() == "BCST"
                               or m.group("att_bcst")),
                base=base.group(1) if base else None, address=addr))
        return out

    def vector_registers(self) -> list[str]:
        return _VREG_RE.findall(self.operands)


def _split_operands(operands: str) -> list[str]:
    """Split 'a,b,c' at top-level commas (not inside [..] or {..}); drops '<sym+off>'."""
    s = re.sub(r"\s*<[^>]*>\s*$", "", operands.strip())
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


_LINE_RE = re.compile(r"^\s*([0-9a-f]+):\s+(.*\S)\s*$")


def parse(asm: str) -> list[Instruction]:
    """Instructions of an objdump ``-d --no-show-raw-insn -M intel`` listing."""
    out = []
    for line in asm.splitlines():
        m = _LINE_RE.match(line)
        if not m:
            continue
        body = m.group(2).split("\t")[-1] if "\t" in m.group(2) else m.group(2)
        body = body.strip()
        if not body or body.startswith("(bad)") or body == "...":
            continue
        toks = body.split()
        i = 0
        while i < len(toks) - 1 and toks[i].lower() in _PREFIXES:
            i += 1
        mnemonic = " ".join(t.lower() for t in toks[:i + 1])
        operands = " ".join(toks[i + 1:])
        out.append(Instruction(int(m.group(1), 16), mnemonic, operands,
                               f"{toks[i].lower():<12} {operands}".rstrip()
                               if i == 0 else f"{mnemonic} {operands}".rstrip()))
    return out


def _objdump() -> str:
    exe = shutil.which("objdump")
    if not exe:
        raise RuntimeError("objdump not found: install binutils to inspect kernels")
    return exe


@functools.lru_cache(maxsize=256)
def _disassemble_file(path: str, mtime_ns: int, symbol: str) -> str:
    cmd = [_objdump(), "-d", "--no-show-raw-insn", "-M", SYNTAX, "-w",
           f"--disassemble={symbol}", path]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"objdump failed ({' '.join(cmd)}): {res.stderr.strip()}")
    lines, inside = [], False
    for line in res.stdout.splitlines():
        if re.match(rf"^[0-9a-f]+ <{re.escape(symbol)}>:\s*$", line):
            inside = True
        elif inside and re.match(r"^[0-9a-f]+ <.*>:\s*$", line):
            break                       # next symbol (objdump prints only ours, but be safe)
        if inside and line.strip():
            lines.append(line.rstrip())
    if not lines:
        raise RuntimeError(f"symbol {symbol} not found in {path}")
    return "\n".join(lines) + "\n"


def _check_x86(spec: TileSpec) -> None:
    if spec.isa not in X86_ISAS:
        raise NotImplementedError(
            f"asm inspection reads x86-64 code ({', '.join(X86_ISAS)}); {spec.name} is "
            f"{spec.info.arch} ({spec.isa})")


def disassemble(spec: TileSpec | str) -> str:
    """objdump (Intel syntax, no raw bytes) of ``mk_ukernel_<name>`` only.

    Builds the kernel module with :func:`microkernel.kernel.compile_only` (cached,
    never imported: works for ISAs this CPU cannot run).
    """
    from . import codegen
    from .kernel import compile_only
    spec = _spec(spec)
    _check_x86(spec)
    path = os.fspath(compile_only(spec))
    return _disassemble_file(path, os.stat(path).st_mtime_ns, codegen.symbol(spec))


def _spec(spec: TileSpec | str) -> TileSpec:
    return TileSpec.from_name(spec) if isinstance(spec, str) else spec


# -- the inner loop ------------------------------------------------------------------

def _lanes(ins: Instruction, packed: str, elem: str) -> int:
    """fp lanes an arithmetic instruction works on (1 for scalar ss/sd)."""
    if packed == "s":
        return 1
    regs = ins.vector_registers()
    bits = _REG_BITS[regs[0][0]] if regs else 128
    return bits // (32 if elem == "s" else 64)


@dataclasses.dataclass(frozen=True)
class LoopInfo:
    """The inner K loop and its counts.

    Counts are per loop iteration; ``per_k(field)`` divides by ``k_unroll`` (the k steps
    one iteration performs, ``spec.k_unroll`` for generated kernels).
    ``stack_loads``/``stack_stores`` are reloads/spills (memory operands relative to rsp,
    or rbp when it is the frame pointer); ``spills`` is their sum.
    """
    start: int                     # lowest address in the loop
    end: int                       # highest address in the loop
    instructions: tuple[Instruction, ...]
    k_unroll: int
    fmas: int
    fma_lanes: int                 # fp lanes summed over the FMAs
    muls: int
    adds: int
    flops: int                     # 2 * fma lanes + mul lanes + add lanes
    vector_loads: int              # full-width loads (mov or folded), not stack
    broadcasts: int                # vbroadcast* + embedded-broadcast operands
    embedded_broadcasts: int       # of which {1toN} / BCST memory operands
    scalar_loads: int              # <= 8-byte loads, not broadcast, not stack
    stores: int                    # non-stack stores
    stack_loads: int
    stack_stores: int
    vector_registers: tuple[str, ...]
    frame_pointer: bool            # rbp counted as a stack base

    @property
    def instructions_total(self) -> int:
        return len(self.instructions)

    @property
    def spills(self) -> int:
        return self.stack_loads + self.stack_stores

    def per_k(self, field: str) -> float:
        value = self.instructions_total if field == "instructions" else getattr(self, field)
        return value / self.k_unroll

    @property
    def contiguous(self) -> bool:
        """False when the compiler placed part of the loop elsewhere in the function."""
        return self.gaps == 0

    @property
    def gaps(self) -> int:
        return sum(1 for a, b in zip(self.instructions, self.instructions[1:])
                   if b.address - a.address > 16)

    @property
    def asm(self) -> str:
        """The loop body as objdump-style lines (``addr: mnemonic operands``); a line
        ``...`` marks where the loop continues at a distant address."""
        lines, prev = [], None
        for i in self.instructions:
            if prev is not None and i.address - prev.address > 16:
                lines.append("     ...")
            lines.append(f"{i.address:8x}:\t{i.text}")
            prev = i
        return "\n".join(lines) + "\n"

    def counts(self) -> dict:
        keys = ("fmas", "fma_lanes", "muls", "adds", "flops", "vector_loads",
                "broadcasts", "embedded_broadcasts", "scalar_loads", "stores",
                "stack_loads", "stack_stores", "spills", "instructions")
        per_iter = {k: (self.instructions_total if k == "instructions" else getattr(self, k))
                    for k in keys}
        return {"per_iteration": per_iter,
                "per_k": {k: v / self.k_unroll for k, v in per_iter.items()}}

    def to_dict(self) -> dict:
        return {"start": hex(self.start), "end": hex(self.end), "k_unroll": self.k_unroll,
                "contiguous": self.contiguous,
                "frame_pointer_rbp": self.frame_pointer,
                "vector_registers_used": list(self.vector_registers),
                **self.counts(), "asm": self.asm.splitlines()}


def _uses_frame_pointer(ins: list[Instruction]) -> bool:
    for i in ins[:16]:
        if i.base_mnemonic == "mov" and i.operands.replace(" ", "") == "rbp,rsp":
            return True
    return False


def _count(body: list[Instruction], k_unroll: int, frame_pointer: bool) -> LoopInfo:
    stack_bases = {"rsp", "esp"} | ({"rbp", "ebp"} if frame_pointer else set())
    c = dict(fmas=0, fma_lanes=0, muls=0, adds=0, flops=0, vector_loads=0, broadcasts=0,
             embedded_broadcasts=0, scalar_loads=0, stores=0, stack_loads=0, stack_stores=0)
    vregs: set[str] = set()
    for ins in body:
        mn = ins.base_mnemonic
        vregs.update(ins.vector_registers())
        m = _FMA_RE.match(mn)
        if m:
            lanes = _lanes(ins, *m.groups())
            c["fmas"] += 1
            c["fma_lanes"] += lanes
            c["flops"] += 2 * lanes
        elif (m := _MUL_RE.match(mn)):
            c["muls"] += 1
            c["flops"] += _lanes(ins, *m.groups())
        elif (m := _ADD_RE.match(mn)):
            c["adds"] += 1
            c["flops"] += _lanes(ins, *m.groups())
        is_bcast_insn = bool(_BCAST_RE.match(mn))
        if is_bcast_insn:
            c["broadcasts"] += 1
        is_move = mn.startswith(("mov", "vmov")) or mn in ("vmaskmovps",)
        for mem in ins.memory_operands():
            # a mov's first operand is its destination; other first-operand memory
            # (add [m], r) is read-modify-write: count as a store and a load
            dest = mem["index"] == 0 and len(_split_operands(ins.operands)) > 1
            reads = not (dest and is_move)
            writes = dest
            if mem["base"] in stack_bases:
                c["stack_loads"] += reads
                c["stack_stores"] += writes
                continue
            if writes:
                c["stores"] += 1
            if not reads:
                continue
            if mem["broadcast"]:
                c["broadcasts"] += 1
                c["embedded_broadcasts"] += 1
            elif is_bcast_insn:
                pass                      # counted as a broadcast above
            elif mem["size"] is not None and mem["size"] >= 16:
                c["vector_loads"] += 1
            else:
                c["scalar_loads"] += 1
    return LoopInfo(start=min(i.address for i in body), end=max(i.address for i in body),
                    instructions=tuple(body),
                    k_unroll=k_unroll, vector_registers=tuple(sorted(
                        vregs, key=lambda r: (r[0], int(r[3:])))),
                    frame_pointer=frame_pointer, **c)


_UNCONDITIONAL = {"jmp", "ret", "retq", "ud2", "hlt"}


def _loops(ins: list[Instruction]) -> list[list[int]]:
    """Natural loops of the function's control-flow graph, as sorted instruction
    indices (one per loop header; back edges to one header are merged).

    Blocks start at the entry, at branch targets and after branches; an edge u -> h is
    a back edge when h dominates u. Compilers do place parts of a loop after the
    function's return (seen: GCC's rotated k_unroll=2 loops), so a loop is not always
    the address range between a target and a backward jump, and a backward ``jmp`` is
    not always a loop."""
    if not ins:
        return []
    index = {i.address: n for n, i in enumerate(ins)}
    leaders = {0}
    for n, i in enumerate(ins):
        if i.base_mnemonic.startswith("j") or i.base_mnemonic in _UNCONDITIONAL:
            if n + 1 < len(ins):
                leaders.add(n + 1)
            t = i.branch_target
            if t is not None and t in index:
                leaders.add(index[t])
    starts = sorted(leaders)
    block_of = {}
    blocks = []                                   # (first, last) instruction index
    for b, st in enumerate(starts):
        end = (starts[b + 1] if b + 1 < len(starts) else len(ins)) - 1
        blocks.append((st, end))
        block_of[st] = b
    succ: list[set[int]] = [set() for _ in blocks]
    for b, (st, end) in enumerate(blocks):
        last = ins[end]
        mn = last.base_mnemonic
        t = last.branch_target
        if t is not None and t in index:
            succ[b].add(block_of[index[t]])
        if mn not in _UNCONDITIONAL and b + 1 < len(blocks):
            succ[b].add(b + 1)                   # fall through (also after jcc)
    pred: list[set[int]] = [set() for _ in blocks]
    for b, ss in enumerate(succ):
        for x in ss:
            pred[x].add(b)
    # reachable blocks, then dominators (iterative data flow; functions are small)
    reach, stack = {0}, [0]
    while stack:
        for x in succ[stack.pop()]:
            if x not in reach:
                reach.add(x)
                stack.append(x)
    allb = frozenset(reach)
    dom = {b: (frozenset({b}) if b == 0 else allb) for b in reach}
    changed = True
    while changed:
        changed = False
        for b in sorted(reach - {0}):
            ps = [dom[p] for p in pred[b] if p in reach]
            new = frozenset({b}) | (frozenset.intersection(*ps) if ps else frozenset())
            if new != dom[b]:
                dom[b], changed = new, True
    bodies: dict[int, set[int]] = {}
    for u in reach:
        for h in succ[u]:
            if h in dom[u]:                       # back edge u -> h
                body, work = {h, u}, [u]
                while work:
                    x = work.pop()
                    if x == h:
                        continue
                    for p in pred[x]:
                        if p in reach and p not in body:
                            body.add(p)
                            work.append(p)
                bodies.setdefault(h, set()).update(body)
    loops = []
    for h in sorted(bodies):
        idx = sorted(n for b in bodies[h] for n in range(blocks[b][0], blocks[b][1] + 1))
        loops.append(idx)
    return loops


def inner_loop(asm: str, k_unroll: int = 1) -> LoopInfo:
    """Find the inner K loop in a function listing and count its instructions.

    The loops are the natural loops of the control-flow graph (see :func:`_loops`).
    The K loop is the one with the most FMA work (FMA lanes, so that 16 scalar
    ``vfmadd231ss`` of a strided-C epilogue loop do not outrank 12 ymm FMAs; ties:
    most flops, then the fewest instructions), among the innermost loops (no other
    loop nested inside) when one of them does floating-point work; per-k counts
    divide by ``k_unroll`` (pass ``spec.k_unroll``). If the function has no FMA at
    all (a scalar tile built without -mfma), the loop with the most multiply and add
    flops is chosen. A loop of several basic blocks counts every block once.
    Raises ValueError when the listing has no loop.
    """
    ins = parse(asm)
    loops = _loops(ins)
    if not loops:
        raise ValueError("no backward branch (loop) in this listing")
    fp = _uses_frame_pointer(ins)
    sets = [frozenset(lp) for lp in loops]

    def innermost(k):
        return not any(o < sets[k] for o in sets)

    scored = []
    for k, lp in enumerate(loops):
        info = _count([ins[n] for n in lp], k_unroll, fp)
        scored.append((innermost(k), info.fma_lanes, info.flops,
                       -info.instructions_total, info))
    if any(s[0] and s[2] for s in scored):
        scored = [s for s in scored if s[0]]
    return max(scored, key=lambda s: s[1:4])[4]


@functools.lru_cache(maxsize=256)
def _loop_cached(spec: TileSpec, asm: str) -> LoopInfo:
    return inner_loop(asm, spec.k_unroll)


def loop_of(spec: TileSpec | str) -> LoopInfo:
    """Inner K loop of ``spec``'s compiled micro-kernel (per-k counts use k_unroll)."""
    spec = _spec(spec)
    return _loop_cached(spec, disassemble(spec))


def spills(spec: TileSpec | str) -> int:
    """Stack memory operands (spills + reloads) per iteration of the inner K loop of
    ``spec``'s compiled micro-kernel; 0 means the register tile stayed in registers."""
    return loop_of(spec).spills


# -- llvm-mca ------------------------------------------------------------------------

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
def _mca_cpus(exe: str) -> frozenset:
    res = subprocess.run([exe, "-mcpu=help"], capture_output=True, text=True, check=False)
    return frozenset(re.findall(r"^\s+([a-z0-9][\w.-]*)\s+- Select", res.stdout + res.stderr,
                                re.MULTILINE))


def default_mcpu(isa: str, cpu_info=None) -> str:
    """llvm-mca ``-mcpu`` for an ISA: avx512 -> sapphirerapids (else icelake-server,
    skylake-avx512, whichever this llvm-mca knows); avx2 and scalar -> znver3 when the
    probe reports AMD family 0x19 (Zen 3/4), else haswell."""
    exe = _llvm_mca()
    known = _mca_cpus(exe) if exe else frozenset()
    if isa == "avx512":
        for c in ("sapphirerapids", "icelake-server", "skylake-avx512"):
            if not known or c in known:
                return c
        return "skylake-avx512"
    if cpu_info is None:
        try:
            from .probe import probe
            cpu_info = probe()
        except Exception:               # noqa: BLE001 - the mcpu is a best guess
            cpu_info = None
    if cpu_info is not None and getattr(cpu_info, "vendor", "") == "AuthenticAMD" \
            and cpu_info.features.get("family") == 0x19 and (not known or "znver3" in known):
        return "znver3"
    return "haswell"


#: scheduling models to fall back to when the default one fails the FMA self-check
#: (same core family, FMA pipes modelled right): LLVM <= 15's znver3 model charges a
#: ymm/xmm FMA to both FP0 and FP1 (1 FMA/cycle instead of 2; llvm/llvm-project#59325)
_MCPU_FALLBACKS = {"znver3": ("znver2",), "sapphirerapids": ("icelake-server", "skylake-avx512"),
                   "icelake-server": ("skylake-avx512",)}


@functools.lru_cache(maxsize=None)
def mca_fma_rate(mcpu: str, isa: str = "avx2") -> float | None:
    """FMAs per cycle llvm-mca's ``mcpu`` model gives a block of 12 independent FMA
    chains of ``isa``'s vector width (the FMA peak loop); None without llvm-mca.
    A model that cannot reproduce the core's FMA units (2 per cycle on Zen 2/3/4 and on
    Intel server cores) mispredicts every FMA-bound kernel."""
    exe = _llvm_mca()
    if exe is None:
        return None
    reg = {"avx512": "zmm", "avx2": "ymm"}.get(isa, "xmm")
    src = ".intel_syntax noprefix\n" + "".join(
        f"vfmadd231ps {reg}{i}, {reg}12, {reg}13\n" for i in range(12))
    res = subprocess.run([exe, f"-mcpu={mcpu}", "-mtriple=x86_64-unknown-linux-gnu",
                          "-iterations=200"], input=src, capture_output=True, text=True,
                         check=False)
    p = _parse_mca(res.stdout) if res.returncode == 0 else None
    if not p or not p["total_cycles"]:
        return None
    return 12 * p["iterations"] / p["total_cycles"]


def checked_mcpu(isa: str, mcpu: str | None = None, fma_units: int = 2) -> tuple[str, str]:
    """(mcpu, note): ``mcpu`` or :func:`default_mcpu`, checked with :func:`mca_fma_rate`.

    An explicit ``mcpu`` is kept (the note warns if its model fails the check); a
    default one that fails is replaced by the first fallback of the same family that
    passes (znver3 -> znver2 on LLVM 14), and the note says so."""
    isa_v = isa if isa in ("avx512", "avx2") else "avx2"
    chosen = mcpu or default_mcpu(isa)
    rate = mca_fma_rate(chosen, isa_v)
    if rate is None or rate >= 0.95 * fma_units:
        return chosen, ""
    bad = (f"llvm-mca's {chosen} model runs {rate:.2f} FMAs/cycle on independent chains, "
           f"not {fma_units}")
    if mcpu:
        return chosen, bad + " (kept: --mcpu given)"
    for alt in _MCPU_FALLBACKS.get(chosen, ()):
        if alt in _mca_cpus(_llvm_mca()):
            r = mca_fma_rate(alt, isa_v)
            if r is not None and r >= 0.95 * fma_units:
                return alt, bad + f"; using {alt} (llvm/llvm-project#59325)"
    return chosen, bad


def _mca_source(loop_asm: str | LoopInfo) -> str:
    """objdump Intel listing of a loop -> llvm-mca input (LLVM Intel syntax)."""
    ins = loop_asm.instructions if isinstance(loop_asm, LoopInfo) else parse(loop_asm)
    if not ins:
        raise ValueError("no instructions in the loop listing")
    lines = [".intel_syntax noprefix", ".Lmk_loop:"]
    first = ins[0].address
    for i in ins:
        mn, ops = i.mnemonic, i.operands
        if i.branch_target is not None:
            ops = ".Lmk_loop" if i.branch_target == first else ".Lmk_exit"
        else:
            regs = i.vector_registers()
            bits = _REG_BITS[regs[0][0]] if regs else 128

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
        fma_units: int = 2, iterations: int = 500) -> McaInfo | None:
    """Run llvm-mca on the loop body; None when llvm-mca is not installed.

    ``loop_asm`` is a :class:`LoopInfo` or its objdump-style listing (``LoopInfo.asm``);
    the listing is turned into LLVM Intel syntax (``DWORD BCST [m]`` -> ``DWORD PTR
    [m]{1toN}``, the back-edge to a label). Bottleneck: "FMA throughput" when the
    predicted cycles are within 5% of FMAs / ``fma_units``; else the most loaded
    resource (port group) when the cycles match its pressure; else a latency or
    dependency chain (with llvm-mca's dispatch-stall evidence).
    Raises RuntimeError when llvm-mca rejects the input.
    """
    exe = _llvm_mca()
    if exe is None:
        return None
    if isinstance(loop_asm, LoopInfo):
        info = loop_asm
    else:
        try:
            info = inner_loop(loop_asm)
        except ValueError:                 # a straight-line block: simulate it as is
            info = _count(parse(loop_asm), 1, False)
    ku = k_unroll or info.k_unroll
    src = _mca_source(info)
    cmd = [exe, f"-mcpu={mcpu}", "-mtriple=x86_64-unknown-linux-gnu",
           f"-iterations={iterations}", "-bottleneck-analysis", "-dispatch-stats",
           "-resource-pressure", "-timeline=false", "-instruction-info=false"]
    res = subprocess.run(cmd, input=src, capture_output=True, text=True, check=False)
    if res.returncode != 0 or "Total Cycles" not in res.stdout:
        raise RuntimeError(f"llvm-mca failed ({' '.join(cmd)}):\n{res.stderr.strip()}\n"
                           f"input:\n{src}")
    p = _parse_mca(res.stdout)
    cycles = p["total_cycles"] / p["iterations"]
    fma_bound = info.fmas / fma_units if fma_units else 0.0
    rotated = sum(1 for i in info.instructions
                  if re.match(r"^v?f(n)?m(add|sub)\w*132", i.base_mnemonic)
                  and i.memory_operands())
    bottleneck = _bottleneck(cycles, fma_bound, p["rthroughput"] or 0.0, p["pressure"],
                             p["stalls"], p["analysis"])
    ver = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False)
    vm = re.search(r"LLVM version ([\w.]+)", ver.stdout)
    return McaInfo(
        mcpu=mcpu, iterations=p["iterations"], cycles_per_iteration=cycles,
        block_rthroughput=p["rthroughput"] or 0.0, ipc=p["ipc"] or 0.0, k_unroll=ku,
        fma_bound=fma_bound,
        bottleneck=bottleneck, caveat=_caveat(bottleneck, rotated),
        resource_bound_by=_top_resources(p["pressure"])[1],
        resource_pressure=p["pressure"], bottleneck_analysis=p["analysis"],
        dispatch_stalls=p["stalls"], version=vm.group(1) if vm else "?")


# -- measured cycles -----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Measured:
    """Measured cycles per k step, derived from the FMA peak (see :func:`measure`)."""
    kernel_gflops: float
    peak_gflops: float
    peak_isa: str
    ghz: float
    cycles_per_k: float
    fraction_of_peak: float | None     # None when the peak is another ISA's
    method: str
    kc: int
    reps: int
    repeats: int

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _perf_cycles_available() -> bool:
    exe = shutil.which("perf")
    if not exe:
        return False
    res = subprocess.run([exe, "stat", "-x,", "-e", "cycles", "true"], capture_output=True,
                         text=True, check=False)
    return res.returncode == 0 and "<not supported>" not in res.stderr \
        and "<not counted>" not in res.stderr


def measure(spec: TileSpec | str, *, kc: int = 256, reps: int = 20000,
            repeats: int = 7, peak_iters: int = 5_000_000) -> Measured:
    """Time the micro-kernel in L1 and convert to cycles per k step.

    The core clock comes from the FMA peak loop of the same ISA (for ``scalar``, of the
    best usable vector ISA, because the scalar peak loop built without -mfma is not
    throughput-bound): that loop runs independent FMA chains, more than FMA latency x
    FMA units (12 ymm / 16 zmm chains against 4 x 2), so it retires ``fma_units`` FMAs
    per cycle and::

        GHz = peak GFLOP/s / (2 flops x lanes x fma_units)
        cycles per k step = (2 x MR x NR flops per k step) x GHz / kernel GFLOP/s
                          = (MR x NR / lanes FMAs per k / fma_units) x peak / kernel

    ``fma_units`` comes from the probe (2 on Zen 3 and on Intel server cores). The
    peak and the kernel are timed alternately ``repeats`` times (about 10 ms each) and
    the best of each is kept: on a shared machine the best short run is the one least
    disturbed, and a peak taken under contention would make the derived clock (and so
    the cycles) wrong. The kernel timing includes one call's epilogue
    per ``kc`` steps (kc=256: under 2%). ``perf stat -e cycles`` would measure the
    clock directly, but it is not supported on virtual machines like this one.

    Raises IsaUnavailableError when this CPU/OS cannot run ``spec.isa``.
    """
    from .dispatch import get_kernel, usable_isas
    from .probe import probe
    from .tile import ISAS
    spec = _spec(spec)
    kernel = get_kernel(spec)
    usable = usable_isas()
    peak_isa = spec.isa
    if spec.isa == "scalar":
        vec = [i for i in usable if i != "scalar" and ISAS[i].lanes]
        peak_isa = vec[-1] if vec else "scalar"
    if peak_isa == spec.isa:
        peak_kernel = kernel
    else:
        from .dispatch import default_tile
        peak_kernel = get_kernel(default_tile(peak_isa))
    units = getattr(probe(), "fma_units", None) or ISAS[peak_isa].fma_units
    lanes = ISAS[peak_isa].lanes
    best_k = best_p = 0.0
    for _ in range(repeats):
        best_p = max(best_p, peak_kernel.fma_peak(peak_iters))
        best_k = max(best_k, kernel.time_ukernel(kc=kc, reps=reps))
    ghz = best_p / (2 * lanes * units)
    flops_per_k = 2 * kernel.mr * kernel.nr
    cycles_per_k = flops_per_k * ghz / best_k
    method = (f"measured (derived from the FMA peak): clock {ghz:.2f} GHz = "
              f"{best_p:.1f} GFLOP/s / ({2 * lanes * units} flops/cycle: {peak_isa} "
              f"{lanes} lanes x 2 x {units} FMA units)")
    return Measured(kernel_gflops=best_k, peak_gflops=best_p, peak_isa=peak_isa, ghz=ghz,
                    cycles_per_k=cycles_per_k,
                    fraction_of_peak=best_k / best_p if peak_isa == spec.isa else None,
                    method=method, kc=kc, reps=reps, repeats=repeats)


_measure = measure      # report()'s ``measure`` flag shadows the function there


def _runnable(spec: TileSpec) -> tuple[bool, str]:
    try:
        from .dispatch import usable_isas
        usable = usable_isas()
    except Exception as exc:          # noqa: BLE001 - report, do not crash the listing
        return False, f"not runnable here: {exc}"
    if spec.isa not in usable:
        return False, f"not runnable here: {spec.isa} not supported by this CPU"
    return True, ""


# -- report and CLI ------------------------------------------------------------------

def report(spec: TileSpec | str, *, mcpu: str | None = None, measure: bool = True,
           full: bool = False, kc: int = 256, reps: int = 20000) -> dict:
    """Everything ``microkernel asm`` shows, as a JSON-serialisable dict.

    Keys: name, isa, symbol, syntax, shared_object, loop (counts per iteration and per
    k step, the loop listing), expected (FMAs per k from the spec), register_budget,
    mca (None when llvm-mca is missing), measured ({"runnable": False, "reason": ..}
    when the ISA does not run here; not timed when ``measure`` is False), function (the
    whole listing, only when ``full``), and flat keys for tables such as the sweep's:
    ``spills`` (stack memory operands per loop iteration, as :func:`spills`),
    ``fmas_per_k``, ``predicted_cycles_per_k`` (llvm-mca simulated, or None),
    ``predicted_bound_cycles_per_k`` (max of llvm-mca's resource bound and the FMA
    bound, or None) and ``measured_cycles_per_k`` (or None).
    """
    from . import codegen
    from .kernel import compile_only
    spec = _spec(spec)
    _check_x86(spec)
    asm = disassemble(spec)
    loop = _loop_cached(spec, asm)
    b = register_budget(spec)
    lanes = spec.info.lanes
    out: dict = {
        "name": spec.name, "isa": spec.isa, "mr": spec.mr, "nr": spec.nr,
        "k_unroll": spec.k_unroll, "symbol": codegen.symbol(spec), "syntax": SYNTAX,
        "shared_object": os.fspath(compile_only(spec)),
        "loop": loop.to_dict(),
        "k_steps_per_iteration": _observed_k_steps(spec, loop),
        "expected": {"fmas_per_k": spec.mr * spec.vectors_per_row,
                     "flops_per_k": 2 * spec.mr * spec.nr,
                     "b_loads_per_k": None if spec.isa == "scalar" else spec.vectors_per_row,
                     "broadcasts_per_k": None if spec.isa == "scalar" else spec.mr,
                     "scalar_loads_per_k": spec.mr + spec.nr if spec.isa == "scalar" else None,
                     "lanes": lanes},
        "register_budget": {
            "accumulators": b.accumulators, "b_vectors": b.b_vectors,
            "broadcasts": b.broadcasts, "needed": b.needed, "available": b.available,
            "min_accumulators": b.min_accumulators,
            "hides_fma_latency": b.hides_fma_latency, "near_limit": b.near_limit,
            "used_in_loop": len(loop.vector_registers)},
    }
    try:
        cpu, note = checked_mcpu(spec.isa, mcpu, spec.info.fma_units)
        m = mca(loop, cpu, k_unroll=spec.k_unroll, fma_units=spec.info.fma_units)
        out["mca"] = m.to_dict() if m else None
        if m is not None:
            out["mca"]["model_note"] = note
        if m is None:
            out["mca_missing"] = "llvm-mca not installed"
    except RuntimeError as exc:
        out["mca"] = None
        out["mca_error"] = str(exc)
    ok, why = _runnable(spec)
    if not ok:
        out["measured"] = {"runnable": False, "reason": why}
    elif not measure:
        out["measured"] = {"runnable": True, "reason": "not measured (--no-measure)"}
    else:
        mm = _measure(spec, kc=kc, reps=reps)
        out["measured"] = {"runnable": True, **mm.to_dict(),
                           "perf_stat_cycles_available": _perf_cycles_available()}
    if full:
        out["function"] = asm.splitlines()
    m = out.get("mca")
    out["spills"] = loop.spills
    out["fmas_per_k"] = loop.per_k("fmas")
    out["predicted_cycles_per_k"] = m["cycles_per_k"] if m else None
    out["predicted_bound_cycles_per_k"] = (
        max(m["rthroughput_per_k"], m["fma_bound_per_k"]) if m else None)
    out["measured_cycles_per_k"] = out["measured"].get("cycles_per_k")
    return out


def _observed_k_steps(spec: TileSpec, loop: LoopInfo) -> float | None:
    """k steps one loop iteration really does, from its FMA lanes (MR*NR per step);
    differs from ``k_unroll`` when the compiler unrolled or vectorised across k.
    None for loops without FMAs (scalar mul + add: packed ops may be half used)."""
    if not loop.fma_lanes or spec.is_vla:
        return None
    return loop.fma_lanes / (spec.mr * spec.nr)


def add_asm_arguments(parser) -> None:
    """Arguments of ``microkernel asm``."""
    parser.add_argument("name", metavar="NAME",
                        help="tile name, e.g. avx512_8x16, avx2_6x16, avx512_12x32")
    parser.add_argument("--json", action="store_true",
                        help="print the report as JSON instead of tables")
    parser.add_argument("--mcpu", default=None,
                        help="llvm-mca -mcpu (default: sapphirerapids for avx512; znver3 "
                             "on AMD family 0x19, else haswell, for avx2/scalar)")
    parser.add_argument("--full", action="store_true",
                        help="print the whole micro-kernel function, not only the K loop")
    parser.add_argument("--no-measure", action="store_true",
                        help="skip timing the kernel (faster)")


def _fmt(x, nd=2):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{nd}f}".rstrip("0").rstrip(".") if x == x else "n/a"
    return str(x)


def _print(rep: dict) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text
    con = Console()
    loop = rep["loop"]
    title = (f"{rep['name']}: {rep['symbol']} ({rep['syntax']} syntax)")
    con.rule(title)
    if rep.get("function"):
        con.print(Text("\n".join(rep["function"])))
        con.rule("inner K loop")
    con.print(f"inner K loop {loop['start']}..{loop['end']}, {rep['k_unroll']} k steps "
              f"per iteration (k_unroll)")
    if not loop.get("contiguous", True):
        con.print("[yellow]note: the compiler split this loop; '...' marks where it "
                  "continues at another address[/yellow]")
    obs = rep.get("k_steps_per_iteration")
    if obs is not None and abs(obs - rep["k_unroll"]) > 1e-9:
        con.print(f"[yellow]note: the loop's FMAs cover {obs:g} k steps, not "
                  f"{rep['k_unroll']}: the compiler unrolled or vectorised across k; per-k "
                  f"counts below divide by k_unroll[/yellow]")
    lines = Text()
    for line in loop["asm"]:
        stack = "[rsp" in line or (loop["frame_pointer_rbp"] and "[rbp" in line)
        style = ("bold red" if stack else
                 "bold green" if re.search(r"\tv?f(n)?m(add|sub)", line) else None)
        lines.append(line + "\n", style=style)
    con.print(lines, end="")

    pi, pk, exp = loop["per_iteration"], loop["per_k"], rep["expected"]
    t = Table(title="counts", show_lines=False)
    t.add_column("")
    t.add_column("per iteration", justify="right")
    t.add_column("per k step", justify="right")
    t.add_column("expected per k", justify="right")
    rows = [("FMAs", "fmas", exp["fmas_per_k"]),
            ("flops", "flops", exp["flops_per_k"]),
            ("muls (unfused)", "muls", None), ("adds (unfused)", "adds", None),
            ("vector loads", "vector_loads", exp["b_loads_per_k"]),
            ("broadcasts", "broadcasts", exp["broadcasts_per_k"]),
            ("  of which embedded {1toN}", "embedded_broadcasts", None),
            ("scalar loads", "scalar_loads", exp["scalar_loads_per_k"]),
            ("stack spills (stores)", "stack_stores", 0),
            ("stack reloads (loads)", "stack_loads", 0),
            ("instructions", "instructions", None)]
    for label, key, e in rows:
        if key in ("muls", "adds", "scalar_loads", "embedded_broadcasts") and not pi[key]:
            continue
        style = "bold red" if key.startswith("stack") and pi[key] else None
        t.add_row(label, _fmt(pi[key]), _fmt(pk[key]), _fmt(e), style=style)
    con.print(t)

    b = rep["register_budget"]
    bt = Table(title="register budget (tile.register_budget)")
    for col in ("acc", "B", "bcast", "needed", "available", "used in loop",
                "latency bound"):
        bt.add_column(col, justify="right")
    bt.add_row(str(b["accumulators"]), str(b["b_vectors"]), str(b["broadcasts"]),
               str(b["needed"]), str(b["available"]), str(b["used_in_loop"]),
               f"{b['min_accumulators']} acc: "
               + ("met" if b["hides_fma_latency"] else "NOT met"))
    con.print(bt)

    ct = Table(title="cycles per k step")
    ct.add_column("source")
    ct.add_column("cycles / k", justify="right")
    ct.add_column("why / what")
    notes = []
    m = rep.get("mca")
    if m:
        ct.add_row(f"llvm-mca -mcpu={m['mcpu']} (simulated)", _fmt(m["cycles_per_k"]),
                   f"bottleneck: {m['bottleneck']}")
        ct.add_row("llvm-mca resource bound", _fmt(m["rthroughput_per_k"]),
                   f"Block RThroughput / k_unroll; most loaded: {m['resource_bound_by']}")
        if m["fma_bound"]:
            ct.add_row("FMA bound", _fmt(m["fma_bound_per_k"]), "FMAs / FMA units")
        if m.get("caveat"):
            notes.append("llvm-mca caveat: " + m["caveat"])
        if m.get("model_note"):
            notes.append(m["model_note"])
        notes.append(f"llvm-mca {m['version']}, {m['iterations']} iterations simulated")
    else:
        ct.add_row("llvm-mca", "-", rep.get("mca_error") or rep.get("mca_missing", "-"))
    meas = rep["measured"]
    if meas.get("runnable") and "cycles_per_k" in meas:
        frac = meas["fraction_of_peak"]
        ct.add_row("measured (derived from the FMA peak)", _fmt(meas["cycles_per_k"]),
                   f"{meas['kernel_gflops']:.1f} GFLOP/s in L1 (kc={meas['kc']})"
                   + (f", {100 * frac:.0f}% of the FMA peak" if frac is not None else ""))
        notes.append(meas["method"])
    else:
        ct.add_row("measured", "-", meas.get("reason", ""))
    con.print(ct)
    for n in notes:
        con.print(f"  note: {n}", style="dim", highlight=False)


def run_asm(args) -> int:
    """``microkernel asm NAME``: print (or ``--json``) :func:`report`. Returns 0, or 2
    for a bad tile name / non-x86 ISA (message on stderr)."""
    import sys
    from .tile import TileError
    try:
        rep = report(args.name, mcpu=getattr(args, "mcpu", None),
                     measure=not getattr(args, "no_measure", False),
                     full=getattr(args, "full", False))
    except (TileError, NotImplementedError) as exc:
        print(f"microkernel asm: {exc}", file=sys.stderr)
        return 2
    if getattr(args, "json", False):
        print(json.dumps(rep, indent=2, default=str))
    else:
        _print(rep)
    return 0
