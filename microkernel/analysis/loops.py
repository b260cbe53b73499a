"""The inner K loop of a micro-kernel and what one iteration and one k step do.

The loops are the natural loops of the function's control-flow graph (:func:`find_loops`);
the K loop is the one with the most FMA work among the innermost ones
(:func:`inner_loop`). With the generator's ``k_unroll`` copies of the k step it is the
unrolled main loop, so per-k counts are per-iteration counts divided by ``k_unroll``.

What one iteration counts is :mod:`microkernel.analysis.counts`.

Errors: :func:`inner_loop` raises ValueError for a listing without a loop.
"""
from __future__ import annotations

import functools

from ..tile import TileSpec
from .counts import LoopInfo, a64_access, count, uses_frame_pointer
from .disasm import Instruction, _spec, arch_of, disassemble, parse

__all__ = ["LoopInfo", "find_loops", "all_loops", "inner_loop", "loop_of", "spills", "count",
           "a64_access"]


def find_loops(ins: list[Instruction]) -> list[list[int]]:
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
        if i.is_branch:
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
        t = last.branch_target
        if t is not None and t in index:
            succ[b].add(block_of[index[t]])
        if not last.is_unconditional and b + 1 < len(blocks):
            succ[b].add(b + 1)                   # fall through (also after a conditional)
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
    return [sorted(n for b in bodies[h] for n in range(blocks[b][0], blocks[b][1] + 1))
            for h in sorted(bodies)]


def _rank(info: LoopInfo) -> tuple:
    # a scalable vector holds at least 4 fp32 lanes (VL >= 128 bits)
    w = 4 if info.scalable else 1
    return (info.fma_lanes * w, info.flops * w, -info.instructions_total)


def all_loops(asm: str, k_unroll: int = 1, arch: str = "x86_64") -> list[tuple[LoopInfo, bool]]:
    """Every natural loop of a function listing (:func:`find_loops`), counted, with
    whether it is innermost (no other loop nested inside), in header order."""
    ins = parse(asm, arch)
    loops = find_loops(ins)
    fp = uses_frame_pointer(ins)
    sets = [frozenset(lp) for lp in loops]
    return [(count([ins[n] for n in lp], k_unroll, fp), not any(o < sets[k] for o in sets))
            for k, lp in enumerate(loops)]


def inner_loop(asm: str, k_unroll: int = 1, arch: str = "x86_64") -> LoopInfo:
    """Find the inner K loop in a function listing (``arch``: ``x86_64`` or
    ``aarch64``) and count its instructions.

    The loops are the natural loops of the control-flow graph (:func:`find_loops`).
    The K loop is the one with the most FMA work (FMA lanes, so that 16 scalar
    ``vfmadd231ss`` of a strided-C epilogue loop do not outrank 12 ymm FMAs; an SVE
    vector counts as its minimum of 4 lanes; ties: most flops, then the fewest
    instructions), among the innermost loops (no other loop nested inside) when one
    of them does floating-point work; per-k counts divide by ``k_unroll`` (pass
    ``spec.k_unroll``). If the function has no FMA at all (a scalar tile built
    without -mfma), the loop with the most multiply and add flops is chosen. A loop
    of several basic blocks counts every block once.
    Raises ValueError when the listing has no loop.
    """
    scored = [(inner, *_rank(info), info) for info, inner in all_loops(asm, k_unroll, arch)]
    if not scored:
        raise ValueError("no backward branch (loop) in this listing")
    if any(s[0] and s[2] for s in scored):
        scored = [s for s in scored if s[0]]
    return max(scored, key=lambda s: s[1:4])[4]


@functools.lru_cache(maxsize=256)
def _loop_cached(spec: TileSpec, asm: str) -> LoopInfo:
    return inner_loop(asm, spec.k_unroll, arch_of(spec))


def loop_of(spec: TileSpec | str, source: str | None = None) -> LoopInfo:
    """Inner K loop of ``spec``'s compiled micro-kernel (per-k counts use k_unroll);
    ``source`` (C text) replaces the generated micro-kernel. Raises as
    :func:`microkernel.analysis.disasm.disassemble` does, and ValueError without a
    loop."""
    spec = _spec(spec)
    return _loop_cached(spec, disassemble(spec, source))


def spills(spec: TileSpec | str, source: str | None = None) -> int:
    """Stack accesses (spills + reloads) per iteration of the inner K loop of
    ``spec``'s compiled micro-kernel (x86: memory operands; aarch64: registers
    transferred); 0 means the register tile stayed in registers."""
    return loop_of(spec, source).spills
