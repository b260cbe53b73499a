"""Everything ``microkernel asm`` shows, as one JSON-serialisable dict (:func:`report`).

The counts come from :mod:`.loops`, the prediction from :mod:`.llvm_mca`, the
measurement from :mod:`.measured`; the expectations from the tile itself (what the
generator emits per k step, :func:`expected`), so that a reader sees where the
compiler departed from the plan.
"""
from __future__ import annotations

import os

from ..tile import TileSpec, register_budget
from .disasm import SYNTAXES, _spec, arch_of, disassemble, object_path
from .loops import LoopInfo, _loop_cached
from .llvm_mca import check_mcpu, checked_mcpu, mca
from .measured import measure as _measure
from .measured import perf_cycles_available, runnable

__all__ = ["report", "expected"]


def expected(spec: TileSpec) -> dict:
    """What the generated micro-kernel does per k step, from the spec: FMAs and flops
    (SVE: flops in vectors, 2 x MR x nv), vector loads, broadcasts, scalar loads,
    by-element FMAs (NEON: A loaded as vectors, lanes picked by the FMA; see
    :mod:`microkernel.codegen.arm`), predicated FMAs (SVE) and the fp32 lanes per
    vector (None: SVE)."""
    nv = spec.vectors_per_row
    if spec.isa == "amx":
        return _expected_amx(spec)
    # products per lane of one multiply-add: the K group of the B panel (vpmaddwd and
    # vdpbf16ps pairs, vpdpbusd quads; 1 for the FMAs); one k step is one such group
    from ..codegen import layout
    depth = layout(spec).gb if spec.info.arch == "x86_64" else 1
    out = {"fmas_per_k": spec.mr * nv,
           "flops_per_k": 2 * spec.mr * (nv if spec.is_vla else spec.nr) * depth,
           "k_per_step": depth,
           "b_loads_per_k": None if spec.isa == "scalar" else nv,
           "vector_loads_per_k": None if spec.isa == "scalar" else nv,
           "broadcasts_per_k": None if spec.isa == "scalar" else spec.mr,
           "scalar_loads_per_k": spec.mr + spec.nr if spec.isa == "scalar" else None,
           "fma_by_element_per_k": None,
           "fma_predicated_per_k": spec.mr * nv if spec.isa == "sve" else None,
           "lanes": spec.info.lanes}
    if spec.info.form != "fma":
        out.update(_expected_typed(spec))
    if spec.isa == "neon":
        from ..codegen.arm_common import neon_a_groups
        groups = neon_a_groups(spec.mr, 4)
        out["vector_loads_per_k"] = nv + sum(g[0] == "q" for g in groups)
        out["scalar_loads_per_k"] = sum(g[0] == "d" for g in groups)
        out["broadcasts_per_k"] = sum(g[0] == "s" for g in groups)
        out["fma_by_element_per_k"] = nv * sum(rows for kind, _, rows in groups if kind != "s")
    return out


def _kgroup(spec: TileSpec) -> int:
    from .. import codegen
    lay = codegen.layout(spec)
    return max(lay.ga, lay.gb)


def _expected_typed(spec: TileSpec) -> dict:
    """Per K group (the loop's k step) of the Arm typed forms (tile.IsaInfo.form): the
    multiply-add instructions and their flops in :mod:`.loops`' units (MACs = 32-bit
    lanes x K per lane; scalable: per vector of VL/32 lanes, SME per vector squared), the
    loads. See microkernel.codegen.arm_typed, arm_mmla, sme."""
    from ..codegen.arm_common import neon_a_groups
    form, mr, nr, nv, g = spec.info.form, spec.mr, spec.nr, spec.vectors_per_row, _kgroup(spec)
    if form == "dot":
        groups = neon_a_groups(mr, 4)
        return dict(fmas_per_k=mr * nv, flops_per_k=2 * 16 * mr * nv,
                    vector_loads_per_k=nv + sum(k == "q" for k, _, _ in groups),
                    scalar_loads_per_k=sum(k == "d" for k, _, _ in groups),
                    broadcasts_per_k=sum(k == "s" for k, _, _ in groups),
                    fma_by_element_per_k=nv * sum(r for k, _, r in groups if k != "s"))
    if form == "mmla":
        pairs = mr // 2
        if spec.is_vla:     # 2 nv B vectors; the A row pairs replicated (ld1rq)
            return dict(fmas_per_k=pairs * 2 * nv, flops_per_k=2 * g * pairs * 2 * nv,
                        vector_loads_per_k=2 * nv, broadcasts_per_k=pairs,
                        fma_predicated_per_k=None)
        return dict(fmas_per_k=pairs * (nr // 2), flops_per_k=2 * 4 * g * pairs * (nr // 2),
                    vector_loads_per_k=nr // 2 + pairs, broadcasts_per_k=0)
    if form == "fma16":
        groups = neon_a_groups(mr, 8)
        wide = 2 if spec.types == "f16" else 1
        rows_el = sum(r for k, _, r in groups if k != "s")
        return dict(fmas_per_k=wide * mr * nv, flops_per_k=2 * 8 * mr * nv,
                    vector_loads_per_k=nv + sum(k == "q" for k, _, _ in groups),
                    scalar_loads_per_k=sum(k == "d" for k, _, _ in groups),
                    broadcasts_per_k=sum(k == "s" for k, _, _ in groups),
                    fma_by_element_per_k=wide * nv * rows_el)
    # mopa: MR x NR outer products per K group, MR + NR vector loads, predicated
    return dict(fmas_per_k=mr * nr, flops_per_k=2 * g * mr * nr, vector_loads_per_k=mr + nr,
                broadcasts_per_k=0, fma_predicated_per_k=mr * nr, b_loads_per_k=nr)


def _expected_amx(spec: TileSpec) -> dict:
    """AMX per k step (64 bytes of K): one tile product per C tile, one tile load per A
    and B tile, no vector load or broadcast."""
    from ..codegen.amx import K_GROUP
    b = register_budget(spec)
    kg = K_GROUP[spec.types]
    return {"fmas_per_k": b.accumulators, "flops_per_k": 2 * spec.mr * spec.nr * kg,
            "k_per_step": kg, "b_loads_per_k": 0, "vector_loads_per_k": 0,
            "broadcasts_per_k": 0, "scalar_loads_per_k": None, "fma_by_element_per_k": None,
            "fma_predicated_per_k": None, "tile_loads_per_k": b.broadcasts + b.b_vectors,
            "lanes": spec.info.lanes}


def _observed_k_steps(spec: TileSpec, loop: LoopInfo) -> float | None:
    """k steps one loop iteration really does, from its FMA lanes (MR*NR per step);
    differs from ``k_unroll`` when the compiler unrolled or vectorised across k.
    None for loops without FMAs (scalar mul + add: packed ops may be half used) and
    for SVE (lanes unknown at compile time)."""
    if not loop.fma_lanes or spec.is_vla:
        return None
    g = _kgroup(spec) if spec.info.form != "fma" else 1
    return loop.fma_lanes / (spec.mr * spec.nr * g)


def report(spec: TileSpec | str, *, mcpu: str | None = None, measure: bool = True,
           full: bool = False, kc: int = 256, reps: int = 1000,
           source: str | None = None, source_path=None) -> dict:
    """Everything ``microkernel asm`` shows, as a JSON-serialisable dict.

    Keys: name, isa, arch, symbol, syntax (intel or a64), shared_object (the object
    disassembled), loop (counts per iteration and per k step, the loop listing; see
    :meth:`LoopInfo.to_dict`), expected (per k step from the spec, :func:`expected`),
    register_budget, mca (None when llvm-mca is missing, then ``mca_missing``;
    ``mca_error`` when it failed), measured ({"runnable": False, "reason": ..} when
    the ISA does not run here; not timed when ``measure`` is False), function (the
    whole listing, only when ``full``), notes (what a reader must know, e.g. SVE
    counts in vectors), and flat keys for tables such as the sweep's: ``spills``
    (stack accesses per loop iteration, as :func:`spills`), ``fmas_per_k``,
    ``predicted_cycles_per_k`` (llvm-mca simulated, or None),
    ``predicted_bound_cycles_per_k`` (max of llvm-mca's resource bound and the FMA
    bound, or None) and ``measured_cycles_per_k`` (or None). ``source`` (C text)
    replaces the generated micro-kernel; ``source_path``, the file it came from, is
    where compile errors point.

    Raises TileError (bad name), NotImplementedError (an x86 ISA on a non-x86 host),
    CrossToolsMissing / CrossError (aarch64 tools missing, compile failure),
    BuildError, RuntimeError (objdump), ValueError (no loop in the micro-kernel, or an
    ``mcpu`` that llvm-mca does not know: :func:`~.llvm_mca.check_mcpu`, before any build).
    """
    from .. import codegen
    spec = _spec(spec)
    arch = arch_of(spec)
    check_mcpu(mcpu, arch)
    asm = disassemble(spec, source, source_path)
    loop = _loop_cached(spec, asm)
    b = register_budget(spec)
    out: dict = {
        "name": spec.name, "isa": spec.isa, "arch": arch, "mr": spec.mr, "nr": spec.nr,
        "k_unroll": spec.k_unroll, "symbol": codegen.symbol(spec),
        "syntax": SYNTAXES.get(arch, arch),
        "shared_object": os.fspath(object_path(spec, source, source_path)),
        "loop": loop.to_dict(),
        "k_steps_per_iteration": _observed_k_steps(spec, loop),
        "expected": expected(spec),
        "register_budget": {
            "accumulators": b.accumulators, "b_vectors": b.b_vectors,
            "broadcasts": b.broadcasts, "temporaries": b.temporaries, "needed": b.needed,
            "available": b.available,
            "min_accumulators": b.min_accumulators,
            "hides_fma_latency": b.hides_fma_latency, "near_limit": b.near_limit,
            "used_in_loop": len(loop.vector_registers)},
        "notes": [],
    }
    if spec.isa == "amx":
        out["notes"].append("AMX: FMAs are tile products (tdp*), each counted as a full "
                            "16 x 16 C tile; the register budget counts tile registers "
                            "(C + A + B <= 8); one k step is 64 bytes of K; llvm-mca's "
                            "x86 models (LLVM 14-17) carry no TMUL timings, so its cycles "
                            "for tdp* are not a prediction")
    elif out["expected"].get("k_per_step", 1) > 1:
        out["notes"].append(f"one k step is a group of {out['expected']['k_per_step']} k "
                            f"(the panels' K group); flops count 2 per product")
    if spec.isa == "sme":
        out["nr_unit"] = "vectors"
        out["notes"].append(
            "SME: the streaming vector length is unknown at compile time; MR and NR are "
            f"vectors ({spec.mr} x {spec.nr} x SVL/32), an outer product counts one vector "
            "squared ((SVL/32)^2 lanes) times the K elements of a source pair; the loop is "
            "inline assembly run in streaming mode (codegen/sme.py)")
    elif spec.is_vla:
        out["nr_unit"] = "vectors"
        out["notes"].append(
            "SVE: the vector length is unknown at compile time; NR, FMA lanes and flops "
            f"are counted in vectors (NR = {spec.vectors_per_row} x VL/32 lanes at run time)")
    if spec.info.form != "fma":
        out["notes"].append(
            f"{spec.isa} {spec.types}: one k step of the counts is one K group of "
            f"{_kgroup(spec)} (the panels' layout); FMAs are the typed multiply-adds "
            "(sdot, smmla, bfmmla, fmlal, fmopa ...), their lanes the multiply-adds each does")
    exp_loads = out["expected"].get("vector_loads_per_k", out["expected"].get("b_loads_per_k"))
    loads_k = loop.vector_loads / loop.k_unroll
    if exp_loads is not None and loads_k > exp_loads and loop.folded_loads:
        out["notes"].append(
            f"vector loads: {loads_k:.2f} per k step against {exp_loads:g} expected; "
            f"{loop.folded_loads} of the {loop.vector_loads} per iteration are memory operands "
            "folded into FMAs (the compiler re-reads a B vector from L1 there instead of "
            "holding it in a register)" + ("; no stack access, so not a spill"
                                            if not loop.spills else ""))
    if spec.isa == "avx512vnni" and spec.types != "u8s8":
        out["notes"].append(
            f"avx512vnni {spec.types}: A is shifted by 128 while packing, and the C tile "
            "is corrected after the K loop by B's column sums, which the packing stores in "
            "one more K group of each B micro-panel (codegen/x86_typed.py, driver.c "
            "MK_B_COLSUM)")
    if spec.isa in ("avx2", "avx512") and spec.types in ("s8s8", "u8s8", "u8u8"):
        out["notes"].append(
            f"{spec.isa} {spec.types}: vpmaddwd has no fused accumulate (that is AVX-VNNI's "
            f"vpdpwssd), so each product needs a register beside the accumulators (the "
            f"budget counts it): {b.needed} live registers of {b.available}"
            + (f"; the compiler spills ({loop.spills} stack accesses per iteration)"
               if loop.spills else ""))
    if arch == "aarch64":
        out["notes"].append("aarch64 counts are registers transferred: ldp/stp and "
                            "multi-register ld1/st1 count each register")
    if source is not None:
        out["source"] = (os.fspath(source_path) if source_path is not None
                         else "user source (replaces the generated micro-kernel)")
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
    ok, why = runnable(spec)
    if not ok:
        out["measured"] = {"runnable": False, "reason": why}
    elif not measure:
        out["measured"] = {"runnable": True, "reason": "not measured (--no-measure)"}
    elif source is not None:
        out["measured"] = {"runnable": True, "reason": "not measured (the measurement "
                           "times the generated micro-kernel, not a source)"}
    else:
        mm = _measure(spec, kc=kc, reps=reps)
        out["measured"] = {"runnable": True, **mm.to_dict(),
                           "perf_stat_cycles_available": perf_cycles_available()}
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
