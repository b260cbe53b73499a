"""Counting one loop body (or any straight-line block) of a micro-kernel: FMAs, lanes,
loads, broadcasts, spills, per iteration and per k step (:func:`count`, :class:`LoopInfo`).

What is counted (:class:`LoopInfo`), per architecture:

x86-64 (Intel syntax; instruction classes from the Intel SDM vol. 2)
    FMAs ``vfmadd*``/``vfmsub*``/``vfnmadd*``/``vfnmsub*`` (ps, pd and AVX512-FP16's
    ph: 32 lanes per zmm) and their lanes (from the register width); the dot-product
    multiply-adds of the typed tiles count as FMAs too, with 2 flops per product:
    ``vdpbf16ps`` (16 fp32 lanes per zmm, 2 products each), ``vpdpbusd[s]`` (4),
    ``vpdpwssd[s]`` and ``vpmaddwd`` (2), and the AMX tile products ``tdpbf16ps``,
    ``tdpfp16ps`` (256 lanes of a full 16 x 16 C tile, 32 products each) and
    ``tdpbssd``/``tdpbsud``/``tdpbusd``/``tdpbuud`` (64 each); AMX ``tileloadd`` and
    ``tilestored`` are counted apart (``tile_loads``, ``tile_stores``); separate
    multiplies and adds; vector loads (memory operands
    of 16 bytes or more, also when folded into an arithmetic op, which are counted
    again as ``folded_loads``); broadcasts
    (``vbroadcastss`` and embedded-broadcast operands, which objdump prints as
    ``DWORD BCST [..]`` and LLVM as ``DWORD PTR [..]{1to16}``); spills and reloads:
    memory operands based on ``rsp`` (or ``rbp`` when the function sets it up as
    frame pointer, ``mov rbp,rsp``). Counts are memory operands.
aarch64 (A64; instruction classes from the Arm ARM, DDI 0487, C3 and the SVE
supplement)
    FMAs ``fmla``/``fmls``/``fnmla``/``fnmls``, SVE ``fmad``/``fmsb``/``fnmad``/
    ``fnmsb``, scalar ``fmadd``/``fmsub``/``fnmadd``/``fnmsub``; of which by element
    (``fmla v12.4s, v4.4s, v1.s[0]``: the A value picked from a lane, no broadcast
    register) and predicated (SVE ``fmla z5.s, p0/m, z1.s, z3.s``); vector loads
    (``ldr q``, ``ldp q``, ``ld1 {v..}`` of 128-bit arrangements, SVE ``ld1w``, ``ldr
    z``); broadcasts (``ld1r``, SVE ``ld1rw``/``ld1rqw``, ``dup``, ``mov z.s, s0``);
    scalar loads (``ldr s``/``d``/``x``/``w``, lane loads); spills and reloads: loads
    and stores based on ``sp`` (or ``x29`` when the function sets it up as frame
    pointer, ``mov x29, sp``). Counts are **registers transferred** (``ldp q1, q0``
    is two vector loads, ``stp d8, d9, [sp]`` two spills), so they compare with the
    tile's vectors whatever pairs the compiler formed. SVE registers are scalable:
    for SVE FMAs, ``fma_lanes`` and ``flops`` count **vectors** (VL/32 fp32 lanes each;
    the VL is unknown at compile time), and :attr:`LoopInfo.scalable` says so.
    The typed multiply-adds of the Arm typed ISAs count as FMAs too, each with its
    multiply-adds as ``fma_lanes`` (32-bit destination lanes x the K elements one lane
    sums; Arm ARM C7.2 and the SVE/SME supplements): ``sdot``/``udot``/``usdot``/
    ``sudot`` 4 per lane (16 per 128 bits), ``bfdot`` 2, ``smmla``/``ummla``/``usmmla``
    32 per 128 bits (a 2x8 by 8x2 block), ``bfmmla`` 16, ``fmlal``/``fmlal2`` one per
    fp32 lane, fp16 ``fmla v.8h`` 8 lanes; the SME outer products ``fmopa``/``bfmopa``/
    ``smopa``/``umopa``/``usmopa``/``sumopa`` into a 32-bit ZA tile count one *vector
    squared* ((VL/32)^2 lanes) times the K elements of a source pair (1 for fp32 sources,
    2 for 16-bit, 4 for 8-bit), and are scalable.
"""
from __future__ import annotations

import dataclasses
import re

from .disasm import Instruction, split_operands

__all__ = ["LoopInfo", "count", "a64_access", "uses_frame_pointer"]

_FMA_RE = re.compile(r"^v?f(?:n)?m(?:add|sub)(?:sub|add)?(?:132|213|231)?([ps])([sdh])$")
#: multiply-accumulate instructions that sum several products per lane (Intel SDM vol.
#: 2): mnemonic -> (bits of one output lane, products per lane). AVX512-BF16
#: vdpbf16ps (bf16 pairs), AVX512-VNNI / AVX-VNNI vpdpbusd[s] (u8 x s8 quads),
#: vpdpwssd[s] (int16 pairs), and vpmaddwd (int16 pairs summed into int32 lanes, the
#: multiply of the integer tiles: no accumulate, a vpaddd follows).
_DOT = {"vdpbf16ps": (32, 2), "vpdpbusd": (32, 4), "vpdpbusds": (32, 4),
        "vpdpwssd": (32, 2), "vpdpwssds": (32, 2), "vpmaddwd": (32, 2)}
#: AMX tile dot products (SDM, TDPBF16PS, TDPFP16PS, TDPBSSD/TDPBSUD/TDPBUSD/TDPBUUD) ->
#: products per output element of a full tile (16 rows x 64 bytes: 16 pairs of bf16 /
#: fp16, 16 quads of bytes); the output lanes are those of a full C tile, 16 x 16
#: (the configured shape is not in the instruction)
_TDP = {"tdpbf16ps": 32, "tdpfp16ps": 32, "tdpbssd": 64, "tdpbsud": 64, "tdpbusd": 64,
        "tdpbuud": 64}
_TILE_LANES = 256
_MUL_RE = re.compile(r"^v?mul([ps])([sd])$")
_ADD_RE = re.compile(r"^v?(?:add|sub)([ps])([sd])$")
_BCAST_RE = re.compile(r"^v(?:p)?broadcast(?:ss|sd|b|w|d|q|f32x\d|f64x\d|i32x\d|i64x\d)$")
_REG_BITS = {"x": 128, "y": 256, "z": 512}

_A64_FMA = {"fmla", "fmls", "fnmla", "fnmls", "fmad", "fmsb", "fnmad", "fnmsb",
            "fmadd", "fmsub", "fnmadd", "fnmsub"}
#: typed multiply-adds (Arm ARM; see the module docstring): K elements per 32-bit lane
_A64_TYPED_K = {"sdot": 4, "udot": 4, "usdot": 4, "sudot": 4, "bfdot": 2,
                "smmla": 8, "ummla": 8, "usmmla": 8, "bfmmla": 4,
                "fmlal": 1, "fmlal2": 1, "fmlsl": 1, "fmlsl2": 1, "bfmlalb": 1, "bfmlalt": 1}
#: SME outer products into a ZA tile (K per source pair from the source element size)
_A64_MOPA = {"fmopa", "fmops", "bfmopa", "bfmops", "smopa", "umopa", "usmopa", "sumopa",
             "smops", "umops", "usmops", "sumops"}
_A64_FMA = _A64_FMA | set(_A64_TYPED_K) | _A64_MOPA
_A64_MUL = {"fmul", "fmulx"}
_A64_ADD = {"fadd", "fsub"}
_A64_ARR_RE = re.compile(r"^[vz](\d+)\.(\d*)([bhsdq])$")
_A64_ELEM_BITS = {"b": 8, "h": 16, "s": 32, "d": 64, "q": 128}
_A64_SCALAR_BYTES = {"b": 1, "h": 2, "s": 4, "d": 8, "q": 16, "x": 8, "w": 4}


@dataclasses.dataclass(frozen=True)
class LoopInfo:
    """The inner K loop and its counts.

    Counts are per loop iteration; ``per_k(field)`` divides by ``k_unroll`` (the k steps
    one iteration performs, ``spec.k_unroll`` for generated kernels).
    ``stack_loads``/``stack_stores`` are reloads/spills (see the module docstring for
    the stack bases of each architecture); ``spills`` is their sum. On aarch64 the
    counts are registers transferred; with ``scalable`` (SVE), ``fma_lanes`` and
    ``flops`` are in vectors of unknown length.
    """
    start: int                     # lowest address in the loop
    end: int                       # highest address in the loop
    instructions: tuple[Instruction, ...]
    k_unroll: int
    fmas: int
    fma_lanes: int                 # fp lanes summed over the FMAs (scalable: vectors)
    muls: int
    adds: int
    flops: int                     # 2 * fma lanes + mul lanes + add lanes
    vector_loads: int              # full-width loads (mov or folded), not stack
    broadcasts: int                # vbroadcast* + embedded-broadcast operands; ld1r*, dup
    embedded_broadcasts: int       # of which {1toN} / BCST memory operands (x86)
    scalar_loads: int              # narrower loads, not broadcast, not stack
    stores: int                    # non-stack stores
    stack_loads: int
    stack_stores: int
    vector_registers: tuple[str, ...]
    frame_pointer: bool            # rbp / x29 counted as a stack base
    arch: str = "x86_64"
    fma_by_element: int = 0        # A64 FMAs with an indexed operand (v1.s[0])
    fma_predicated: int = 0        # SVE FMAs with a governing predicate (p0/m)
    scalable: bool = False         # SVE arithmetic: lanes counted as vectors
    tile_loads: int = 0            # AMX tileloadd (one tile register of rows each)
    tile_stores: int = 0           # AMX tilestored
    folded_loads: int = 0          # of vector_loads: memory operands of arithmetic (x86)

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
    def stack_bases(self) -> tuple[str, ...]:
        if self.arch == "aarch64":
            return ("sp", "x29") if self.frame_pointer else ("sp",)
        return ("rsp", "rbp") if self.frame_pointer else ("rsp",)

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
        """{"per_iteration": {..}, "per_k": {..}} of every count."""
        keys = ("fmas", "fma_lanes", "fma_by_element", "fma_predicated", "muls", "adds",
                "flops", "vector_loads", "broadcasts", "embedded_broadcasts",
                "scalar_loads", "stores", "stack_loads", "stack_stores", "spills",
                "tile_loads", "tile_stores", "folded_loads", "instructions")
        per_iter = {k: (self.instructions_total if k == "instructions" else getattr(self, k))
                    for k in keys}
        return {"per_iteration": per_iter,
                "per_k": {k: v / self.k_unroll for k, v in per_iter.items()}}

    def to_dict(self) -> dict:
        return {"start": hex(self.start), "end": hex(self.end), "k_unroll": self.k_unroll,
                "arch": self.arch, "contiguous": self.contiguous,
                "frame_pointer_rbp": self.frame_pointer and self.arch == "x86_64",
                "frame_pointer": self.frame_pointer, "stack_bases": list(self.stack_bases),
                "scalable": self.scalable,
                "lane_unit": ("vectors (VL/32 fp32 lanes each; the SVE vector length is "
                              "unknown at compile time)" if self.scalable else "lanes"),
                "count_unit": ("registers transferred (ldp/stp and multi-register ld1/st1 "
                               "count each register)" if self.arch == "aarch64"
                               else "memory operands"),
                "vector_registers_used": list(self.vector_registers),
                **self.counts(), "asm": self.asm.splitlines()}


def uses_frame_pointer(ins: list[Instruction]) -> bool:
    """Whether the function sets up a frame pointer (``mov rbp,rsp``; ``mov x29, sp``):
    then that register is a stack base too."""
    for i in ins[:16]:
        ops = i.operands.replace(" ", "")
        if i.arch == "aarch64":
            if (i.base_mnemonic == "mov" and ops == "x29,sp") or \
                    (i.base_mnemonic == "add" and ops.startswith("x29,sp,")):
                return True
        elif i.base_mnemonic == "mov" and ops == "rbp,rsp":
            return True
    return False


def _zero_counts() -> dict:
    return dict(fmas=0, fma_lanes=0, muls=0, adds=0, flops=0, vector_loads=0, broadcasts=0,
                embedded_broadcasts=0, scalar_loads=0, stores=0, stack_loads=0,
                stack_stores=0, tile_loads=0, tile_stores=0, folded_loads=0)


# -- x86-64 -----------------------------------------------------------------------------

def _lanes(ins: Instruction, packed: str, elem: str) -> int:
    """fp lanes an arithmetic instruction works on (1 for scalar ss/sd)."""
    if packed == "s":
        return 1
    regs = ins.vector_registers()
    bits = _REG_BITS[regs[0][0]] if regs else 128
    return bits // {"s": 32, "d": 64, "h": 16}[elem]


def _count_x86(body: list[Instruction], c: dict, frame_pointer: bool) -> None:
    stack_bases = {"rsp", "esp"} | ({"rbp", "ebp"} if frame_pointer else set())
    for ins in body:
        mn = ins.base_mnemonic
        m = _FMA_RE.match(mn)
        arith = bool(m) or mn in _DOT or bool(_MUL_RE.match(mn)) or bool(_ADD_RE.match(mn))
        if m:
            lanes = _lanes(ins, *m.groups())
            c["fmas"] += 1
            c["fma_lanes"] += lanes
            c["flops"] += 2 * lanes
        elif mn in _DOT:
            regs = ins.vector_registers()
            lanes = (_REG_BITS[regs[0][0]] if regs else 128) // _DOT[mn][0]
            c["fmas"] += 1
            c["fma_lanes"] += lanes
            c["flops"] += 2 * lanes * _DOT[mn][1]
        elif mn in _TDP:
            c["fmas"] += 1
            c["fma_lanes"] += _TILE_LANES
            c["flops"] += 2 * _TILE_LANES * _TDP[mn]
        elif mn in ("tileloadd", "tileloaddt1"):
            c["tile_loads"] += 1
            continue
        elif mn == "tilestored":
            c["tile_stores"] += 1
            continue
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
            dest = mem["index"] == 0 and len(split_operands(ins.operands)) > 1
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
                c["folded_loads"] += arith
            else:
                c["scalar_loads"] += 1


# -- aarch64 ----------------------------------------------------------------------------

def _a64_regs(ops: list[str]) -> list[tuple[str, int | None]]:
    """Transfer registers of a load/store as (kind, bytes): kind ``vector`` (128-bit
    q/v or scalable z: bytes None for z), ``scalar`` or ``predicate``."""
    out: list[tuple[str, int | None]] = []
    for op in ops:
        if re.match(r"^p\d+(/[mz])?$", op):
            continue                                  # governing predicate, not data
        lane = bool(re.search(r"\}\[\d+\]$", op))          # {v0.s}[1]: one element
        inner = (re.sub(r"\[\d+\]$", "", op) if lane else op).strip("{}")
        elems = [e.strip() for e in inner.split(",") if e.strip()]
        regs = []
        for e in elems:
            rng = re.match(r"^([vz])(\d+)(\.\w+)?-[vz](\d+)(\.\w+)?$", e)
            if rng:
                n = (int(rng.group(4)) - int(rng.group(2))) % 32 + 1
                regs += [f"{rng.group(1)}{rng.group(2)}{rng.group(3) or ''}"] * n
            else:
                regs.append(e)
        for r in regs:
            m = _A64_ARR_RE.match(r)
            if r.startswith("z"):
                out.append(("vector", None))
            elif m and r.startswith("v"):
                if lane:
                    out.append(("scalar", _A64_ELEM_BITS[m.group(3)] // 8))
                else:
                    bits = int(m.group(2) or 1) * _A64_ELEM_BITS[m.group(3)]
                    out.append(("vector" if bits >= 128 else "scalar", bits // 8))
            elif r.startswith("p"):
                out.append(("predicate", None))
            elif r[:1] in _A64_SCALAR_BYTES and r[1:].isdigit() or r in ("xzr", "wzr"):
                size = _A64_SCALAR_BYTES[r[0]]
                out.append(("vector" if size >= 16 else "scalar", size))
    return out


def a64_access(ins: Instruction) -> dict | None:
    """An A64 load or store: dict(load=bool, regs=[(kind, bytes)], base register or
    None, broadcast=bool); None for other instructions (prefetches ``prfm``/``prfw``
    access no data)."""
    mn = ins.base_mnemonic
    if not (mn.startswith("ld") or mn.startswith("st")):
        return None
    ops = split_operands(ins.operands)
    mem = next((i for i, op in enumerate(ops) if op.startswith("[")), None)
    base = None
    if mem is not None:
        b = re.match(r"^\[\s*([a-z0-9]+)", ops[mem])
        base = b.group(1) if b else None
    return dict(load=mn.startswith("ld"), regs=_a64_regs(ops[:mem] if mem is not None else ops),
                base=base, broadcast=bool(re.match(r"^ld[1-4]r", mn)))


def _a64_lanes(dest: str) -> int | None:
    """fp lanes of an arithmetic destination: v12.4s -> 4, s3 -> 1, z5.s -> None."""
    m = _A64_ARR_RE.match(dest)
    if dest.startswith("z"):
        return None
    if m and dest.startswith("v"):
        return int(m.group(2) or 1)
    return 1


def _count_a64(body: list[Instruction], c: dict, frame_pointer: bool) -> dict:
    stack_bases = {"sp", "wsp"} | ({"x29"} if frame_pointer else set())
    extra = dict(fma_by_element=0, fma_predicated=0, scalable=False)
    for ins in body:
        mn = ins.base_mnemonic
        ops = split_operands(ins.operands)
        if mn in _A64_FMA | _A64_MUL | _A64_ADD and ops:
            if mn in _A64_MOPA:                          # a ZA tile: one vector squared
                extra["scalable"] = True
                src = re.match(r"^z\d+\.([bhs])$", ops[-1])
                lanes = {"b": 4, "h": 2, "s": 1}[src.group(1)] if src else 1
            else:
                lanes = _a64_lanes(ops[0])
                if lanes is None:
                    extra["scalable"] = True
                    lanes = 1                            # one vector of VL/32 lanes
                lanes *= _A64_TYPED_K.get(mn, 1)
                if mn in ("smmla", "ummla", "usmmla", "bfmmla") and not ops[0].startswith("z"):
                    lanes = 4 * _A64_TYPED_K[mn]         # a 2x2 block of 4 lanes
            if mn in _A64_FMA:
                c["fmas"] += 1
                c["fma_lanes"] += lanes
                c["flops"] += 2 * lanes
                extra["fma_by_element"] += any(re.search(r"\.\d*[bhsd]\[\d+\]$", o) for o in ops)
                extra["fma_predicated"] += any(re.match(r"^p\d+/[mz]$", o) for o in ops)
            elif mn in _A64_MUL:
                c["muls"] += 1
                c["flops"] += lanes
            else:
                c["adds"] += 1
                c["flops"] += lanes
            continue
        if mn == "dup" or (mn == "mov" and ops and ops[0].startswith("z")
                           and len(ops) == 2 and re.match(r"^([bhsdwx]\d+|[zv]\d+\.\w\[\d+\])$",
                                                          ops[1])):
            c["broadcasts"] += 1
            continue
        acc = a64_access(ins)
        if acc is None:
            continue
        n = len(acc["regs"])
        if acc["base"] in stack_bases:
            c["stack_loads" if acc["load"] else "stack_stores"] += n
        elif not acc["load"]:
            c["stores"] += n
        elif acc["broadcast"]:
            c["broadcasts"] += n
        else:
            for kind, _size in acc["regs"]:
                c["vector_loads" if kind == "vector" else "scalar_loads"] += 1
    return extra


def count(body: list[Instruction], k_unroll: int, frame_pointer: bool) -> LoopInfo:
    """Count ``body`` (the instructions of one loop iteration, or any straight-line
    block) as described in the module docstring."""
    arch = body[0].arch if body else "x86_64"
    c = _zero_counts()
    extra = {}
    if arch == "aarch64":
        extra = _count_a64(body, c, frame_pointer)
    else:
        _count_x86(body, c, frame_pointer)
    vregs: set[str] = set()
    for ins in body:
        vregs.update(ins.vector_registers())
    if any(r.startswith("z") for r in vregs):      # v<n> and z<n> are one register
        vregs = {r if r.startswith("tmm") else "z" + r[1:] for r in vregs}
    return LoopInfo(start=min(i.address for i in body), end=max(i.address for i in body),
                    instructions=tuple(body), k_unroll=k_unroll,
                    vector_registers=tuple(sorted(vregs, key=_reg_key)),
                    frame_pointer=frame_pointer, arch=arch, **c, **extra)


def _reg_key(r: str):
    digits = re.search(r"\d+$", r)
    return (r[0], int(digits.group()) if digits else 0)
