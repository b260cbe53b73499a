"""``microkernel port NAME --arch A|all``: the CPU tile on each GPU target, as a model.

For every target in :mod:`microkernel.gpu.targets` (or one), from the CPU tile
MR x NR (SVE tiles at ``--vector-bits``, default 128):

**SIMT (FMA) lane tile.** The whole CPU tile goes to one lane while the register
estimate fits the target's per-lane registers less 1/16 (the margin for the
estimate's error); otherwise the longer side is halved (as ``microkernel port`` does
for sm_90) and the CPU tile is spread over 2, 4, ... lanes. Estimate
(:func:`lane_regs`): ``TM*TN`` accumulators + ``TM + TN`` operands (twice, double
buffered, from 32 accumulators) + 28 registers of addresses, loop state and
epilogue -- the overhead measured with ptxas on sm_90 for the numba kernel
(:data:`microkernel.gpu.port.REG_OVERHEAD`), *assumed* for the other targets.
Block/workgroup: ``--threads`` (default 256) lanes in the most nearly square
power-of-two grid, BK = 8, two shared-memory (LDS) stages of fp32.

**Matrix instructions.** Where the target has them, the rule of ``--mma``
(:mod:`microkernel.gpu.mma_port`): MR*NR fp32 accumulators per lane, held as
``ceil(MR*NR / c)`` C fragments of the instruction (``c`` = accumulator registers per
lane of one fragment), arranged as the most nearly square MI x NI wave tile
(m*MI x n*NI; ties: the wider). NVIDIA: ``plan_mma`` itself (mma.sync m16n8k16 /
m16n8k8). AMD: the instruction with the least padding, then the largest output,
among :func:`~microkernel.gpu.fragments_amd.instructions_for`; registers = the
accumulators (CDNA: in AccVGPRs) + one k step of A and B fragments + 40
(:data:`microkernel.gpu.mma_tile.REG_OVERHEAD`, ptxas sm_90, assumed); 4 waves
(2 x 2) per workgroup, BK = 2 instruction k steps, two LDS stages. If the registers
do not fit, the fragments are split over 2, 4, ... waves.

Occupancy: :func:`microkernel.gpu.occupancy_models.occupancy_for`. Every number is
a model of documented limits (each with its source in ``--json``), not a measurement.
"""
from __future__ import annotations

import json
import math
import sys

from ..tile import TileSpec
from .fragments_amd import ReplicatedLayout, instructions_for
from .occupancy_models import amd_vgprs, occupancy_for
from .sources import SOURCES
from .targets import TARGETS, Target, UnknownTarget, get_target

__all__ = ["lane_regs", "lane_budget", "halvings", "split_tile", "block_tile", "simt_plan",
           "matrix_plan", "arch_report", "run_arch_port", "describe_layout", "RULES", "MODEL"]

MODEL = "a model of documented limits, not a measurement"
BK, STAGES = 8, 2
RULES = {
    "simt": "lane tile = the CPU tile in one lane while TM*TN + (TM+TN)*(2 if TM*TN >= 32 "
            "else 1) + 28 registers fit the target's per-lane maximum less 1/16; else halve "
            "the longer side (28: ptxas sm_90 overhead, assumed elsewhere)",
    "matrix": "accumulators per lane = MR*NR; fragments = ceil(MR*NR / C regs per lane of "
              "the instruction); wave tile = most nearly square (m*MI) x (n*NI); registers = "
              "accumulators + one k step of A/B fragments + 40 (ptxas sm_90, assumed)",
}


def _overheads():
    from .mma_tile import REG_OVERHEAD as mma_overhead
    from .port import PIPELINE_MIN_TILE, REG_OVERHEAD, SVE_BITS
    return REG_OVERHEAD, PIPELINE_MIN_TILE, SVE_BITS, mma_overhead


def lane_regs(tm: int, tn: int) -> int:
    """Registers per lane of a TM x TN FMA lane tile (see the module docstring)."""
    overhead, pipe_min, _, _ = _overheads()
    acc = tm * tn
    return acc + (tm + tn) * (2 if acc >= pipe_min else 1) + overhead


def _lane_max(t: Target) -> int:
    return t.value("max_arch_vgprs") if t.model == "amd" else t.value("max_regs_per_lane")


def lane_budget(t: Target) -> int:
    """Per-lane registers a lane tile may use on ``t``: the maximum less 1/16."""
    mx = _lane_max(t)
    return mx - mx // 16


def halvings(tm: int, tn: int):
    """(tm, tn), then each split of it in turn: the longer side (TN on a tie) halved
    when even, else the other side when even; ends after a tile with no even side."""
    while True:
        yield tm, tn
        if tn >= tm and tn % 2 == 0:
            tn //= 2
        elif tm % 2 == 0:
            tm //= 2
        elif tn % 2 == 0:
            tn //= 2
        else:
            return


def split_tile(mr: int, nr: int, budget: int) -> tuple[int, int]:
    """(TM, TN): halve the longer side of MR x NR until :func:`lane_regs` fits
    ``budget``. ValueError when no power-of-two split fits."""
    for tm, tn in halvings(mr, nr):
        if lane_regs(tm, tn) <= budget:
            return tm, tn
    raise ValueError(f"cannot split a {mr}x{nr} tile to fit {budget} registers per lane")


def block_tile(tm: int, tn: int, threads: int) -> tuple[int, int]:
    """(BM, BN) for ``threads`` lanes in a power-of-two grid: the most nearly
    square block tile, the wider on a tie."""
    best = None
    ty = 1
    while ty <= threads:
        if threads % ty == 0:
            bm, bn = ty * tm, (threads // ty) * tn
            score = (round(abs(math.log(bm / bn)), 9), -bn)
            if best is None or score < best[0]:
                best = (score, bm, bn)
        ty *= 2
    return best[1], best[2]


def simt_plan(mr: int, nr: int, t: Target, threads: int = 256) -> dict:
    """The FMA lane tile of an MR x NR CPU tile on ``t`` and its occupancy (dict:
    lane tile, lanes per CPU tile, registers per lane, block tile, shared bytes).
    Raises ValueError when no power-of-two split fits the lane's registers."""
    tm, tn = split_tile(mr, nr, lane_budget(t))
    est = lane_regs(tm, tn)
    bm, bn = block_tile(tm, tn, threads)
    smem = STAGES * (bm + bn) * BK * 4
    occ = occupancy_for(t, est, threads, smem)
    return {"lane_tile": [tm, tn], "lanes_per_cpu_tile": (mr // tm) * (nr // tn),
            "est_regs": est, "lane_budget": lane_budget(t), "block": [bm, bn, BK],
            "threads": threads, "smem_bytes": smem, "occupancy": occ.as_dict()}


def describe_layout(lay) -> dict:
    """A fragment layout as data: shape, registers, a few owners, the formula."""
    r, c = lay.rows - 1, lay.cols - 1
    d = {"name": lay.name, "operand": lay.operand, "shape": [lay.rows, lay.cols],
         "elem": lay.elem, "regs_per_lane": lay.regs, "per_reg": lay.per_reg,
         "lanes": lay.lanes, "source": lay.source,
         "owners": {"0,0": list(lay.owner(0, 0)), f"{r},{c}": list(lay.owner(r, c)),
                    f"0,{c}": list(lay.owner(0, c)), f"{r},0": list(lay.owner(r, 0))}}
    if isinstance(lay, ReplicatedLayout):
        d["replicas"] = lay.replicas
        d["physical_lanes"] = lay.physical_lanes
    return d


def _mi_ni(frags: int, m: int, n: int) -> tuple[int, int]:
    best = None
    for mi in range(1, frags + 1):
        if frags % mi == 0:
            ni = frags // mi
            score = (round(abs(math.log((m * mi) / (n * ni))), 9), -ni)
            if best is None or score < best[0]:
                best = (score, mi, ni)
    return best[1], best[2]


def _nvidia_matrix(spec, t, precision, bits) -> dict:
    from .fragments import INSTRUCTIONS
    from .mma_port import plan_mma
    p = plan_mma(spec, precision, vector_bits=bits)
    ins = INSTRUCTIONS[precision]
    tile = p.tile
    occ = occupancy_for(t, p.est_regs, tile.threads, tile.smem_bytes)
    return {"instruction": f"mma.sync m{ins.m}n{ins.n}k{ins.k}", "ptx": ins.ptx,
            "shape": [ins.m, ins.n, ins.k], "precision": precision,
            "fragments_per_lane": tile.fragments, "accumulators_per_lane": tile.accumulators,
            "acc_regs_per_fragment": ins.c.regs, "wave_tile": [tile.wm, tile.wn],
            "waves_per_cpu_tile": p.warps_per_cpu_tile, "est_regs": p.est_regs,
            "acc_regs": 0, "threads": tile.threads, "smem_bytes": tile.smem_bytes,
            "occupancy": occ.as_dict(), "plan": "microkernel.gpu.mma_port.plan_mma",
            "layout": {k: describe_layout(v) for k, v in
                       (("A", ins.a), ("B", ins.b), ("C", ins.c))}}


def _pick(instrs, acc):
    def key(ins):
        frags = -(-acc // ins.acc_regs)
        return (frags * ins.acc_regs - acc, -(ins.m * ins.n))
    return min(instrs, key=key)


def _amd_matrix(mr, nr, t, precision) -> dict:
    instrs = instructions_for(t.matrix, precision)
    if not instrs:
        return {"instruction": None, "precision": precision,
                "why": f"no modelled {t.name} matrix instruction takes {precision} inputs"}
    _, _, _, overhead = _overheads()
    acc = mr * nr
    ins = _pick(instrs, acc)
    cdna = "max_acc_vgprs" in t.limits
    frags, split, notes = -(-acc // ins.acc_regs), 1, []
    if frags * ins.acc_regs != acc:
        notes.append(f"{acc} accumulators padded to {frags} fragments of {ins.acc_regs}")
    while True:
        mi, ni = _mi_ni(frags, ins.m, ins.n)
        operands = mi * ins.a.regs + ni * ins.b.regs
        accr = frags * ins.acc_regs
        if cdna:
            arch, total = operands + overhead, amd_vgprs(t, operands + overhead, accr)
            fits = arch <= lane_budget(t) and accr <= t.value("max_acc_vgprs")
        else:
            arch = total = accr + operands + overhead
            fits = total <= lane_budget(t)
        if fits or frags == 1:
            break
        frags, split = -(-frags // 2), split * 2
    if split > 1:
        notes.append(f"the CPU tile's {acc} accumulators need more registers than one lane "
                     f"has: split over {split} waves")
    wm, wn = ins.m * mi, ins.n * ni
    ebytes = 4 if ins.precision == "f32" else 2
    threads = 4 * ins.wave
    smem = STAGES * (2 * wm + 2 * wn) * (2 * ins.k) * ebytes
    if smem > t.value("lds_per_group"):
        smem //= STAGES
        notes.append("two LDS stages exceed the workgroup's LDS: one stage")
    occ = occupancy_for(t, arch, threads, smem, acc_regs=accr if cdna else 0)
    return {"instruction": ins.mnemonic, "shape": [ins.m, ins.n, ins.k],
            "precision": ins.precision, "cycles": ins.cycles, "fragments_per_lane": frags,
            "accumulators_per_lane": accr, "acc_regs_per_fragment": ins.acc_regs,
            "wave_tile": [wm, wn], "mi_ni": [mi, ni], "waves_per_cpu_tile": split,
            "est_regs": total, "arch_regs": arch, "acc_regs": accr if cdna else 0,
            "threads": threads, "smem_bytes": smem, "occupancy": occ.as_dict(),
            "alternatives": [i.mnemonic for i in instrs if i is not ins], "notes": notes,
            "layout": {k: dict(describe_layout(v), formula=ins.formulas[k])
                       for k, v in ins.layouts().items()}}


def matrix_plan(spec: TileSpec, t: Target, precision: str = "f16",
                vector_bits: int | None = None) -> dict:
    """The matrix-instruction port of ``spec`` on ``t`` (dict); ``instruction``
    is None (with ``why``) where the target has none documented or modelled."""
    if t.matrix is None:
        return {"instruction": None, "precision": precision,
                "why": t.limits["matrix_shapes"].why_missing}
    bits = (vector_bits or _overheads()[2]) if spec.is_vla else None
    if t.matrix == "nvidia":
        return _nvidia_matrix(spec, t, precision, bits)
    return _amd_matrix(spec.mr, spec.nr_at(bits), t, precision)


def _numba_note(spec, t, bits, threads) -> str:
    """What today's numba kernel model (``microkernel port`` without --arch) says."""
    try:
        from .port import plan
        p = plan(spec, vector_bits=bits, threads=threads)
        occ = occupancy_for(t, p.est_regs, p.tile.threads, p.tile.smem_bytes)
        return (f"the numba kernel ({p.tile.name}, microkernel port without --arch) is "
                f"estimated at {p.est_regs} registers: {occ}")
    except Exception as e:          # the kernel model may reject a configuration
        return f"the numba kernel model gives no plan here ({e})"


def arch_report(name, arch: str = "all", *, vector_bits: int | None = None,
                threads: int = 256, precision: str = "f16") -> dict:
    """The ``--arch`` report (dict): per target its SIMT plan, matrix plan, limits
    (each with its source) and notes; the rules and the sources list.

    Raises UnknownTarget (unknown ``arch``), TileError / ValueError (bad tile or
    thread count), TypeError (``name`` neither a TileSpec nor a str)."""
    spec = name if isinstance(name, TileSpec) else TileSpec.from_name(name) \
        if isinstance(name, str) else None
    if spec is None:
        raise TypeError(f"expected a TileSpec or a tile name, got {type(name).__name__}")
    if threads < 16 or threads > 1024 or threads & (threads - 1):
        raise ValueError(f"threads must be a power of two in 16..1024, got {threads}")
    targets = list(TARGETS.values()) if arch == "all" else [get_target(arch)]
    bits = (vector_bits or _overheads()[2]) if spec.is_vla else None
    mr, nr = spec.mr, spec.nr_at(bits)
    rows, used = [], []
    for t in targets:
        row = {"target": t.name, "description": t.description, "unit": t.unit,
               "lane_word": t.lane_word, "lanes": t.lanes, "model": t.model,
               "notes": list(t.notes)}
        try:
            row["simt"] = simt_plan(mr, nr, t, threads)
        except ValueError as e:
            row["simt"] = {"error": str(e)}
        if t.model == "cuda":
            row["notes"].append(_numba_note(spec, t, bits, threads))
        row["matrix"] = matrix_plan(spec, t, precision, vector_bits)
        row["limits"] = {k: v.as_dict() for k, v in t.limits.items()}
        used += [s for s in t.sources() if s not in used]
        rows.append(row)
    return {"spec": spec.name, "mr": mr, "nr": nr, "vector_bits": bits, "model": MODEL,
            "precision": precision, "threads": threads, "rules": dict(RULES),
            "targets": rows,
            "sources": {k: {"title": SOURCES[k].title, "where": SOURCES[k].where,
                            "kind": SOURCES[k].kind} for k in used}}


# -- rendering -----------------------------------------------------------------------------

def _occ_cells(o: dict) -> tuple[str, str, str]:
    if o.get("error"):
        return "-", "-", f"cannot run: {o['error']}"
    return (f"{o['waves']}/{o['max_waves']} per {o['unit']}", f"{o['occupancy']:.0%}",
            o["limiter"])


def _render(rep: dict, detail: bool) -> None:
    from rich.console import Console
    from rich.table import Table
    con = Console(width=None if sys.stdout.isatty() else 170)
    con.print(f"[bold]port {rep['spec']} --arch[/bold] ({rep['mr']}x{rep['nr']} fp32 "
              f"accumulators{', VL=%d' % rep['vector_bits'] if rep['vector_bits'] else ''}): "
              f"[italic]{rep['model']}[/italic]")
    st = Table(title=f"FMA (SIMT) lane tile, {rep['threads']} lanes per block/workgroup")
    for c in ("target", "lanes", "lane tile", "lanes/CPU tile", "regs/lane (alloc)",
              "block (smem B)", "resident", "occ.", "limiter"):
        st.add_column(c, justify="left" if c in ("target", "limiter") else "right")
    mt = Table(title=f"matrix instructions ({rep['precision']} inputs, fp32 accumulate)")
    for c in ("target", "instruction", "frags/lane", "acc/lane", "wave tile", "regs/lane",
              "resident", "occ.", "limiter"):
        mt.add_column(c, justify="left" if c in ("target", "instruction", "limiter") else "right")
    for r in rep["targets"]:
        s = r["simt"]
        if "error" in s:
            st.add_row(r["target"], str(r["lanes"]), "-", "-", "-", "-", "-", "-", s["error"])
        else:
            o = s["occupancy"]
            st.add_row(r["target"], str(r["lanes"]), "%dx%d" % tuple(s["lane_tile"]),
                       str(s["lanes_per_cpu_tile"]), f"{s['est_regs']} ({o['alloc_regs']})",
                       "%dx%dx%d" % tuple(s["block"]) + f" ({s['smem_bytes']})", *_occ_cells(o))
        m = r["matrix"]
        if m["instruction"] is None:
            mt.add_row(r["target"], "-", "-", "-", "-", "-", "-", "-", m["why"])
        else:
            o = m["occupancy"]
            regs = (f"{m['arch_regs']}+{m['acc_regs']} acc" if m.get("acc_regs")
                    else str(m["est_regs"]))
            mt.add_row(r["target"], m["instruction"], str(m["fragments_per_lane"]),
                       str(m["accumulators_per_lane"]), "%dx%d" % tuple(m["wave_tile"]),
                       regs, *_occ_cells(o))
    con.print(st)
    con.print(mt)
    con.print(f"  simt rule: {rep['rules']['simt']}")
    con.print(f"  matrix rule: {rep['rules']['matrix']}")
    for r in rep["targets"]:
        for n in r["notes"] + r["matrix"].get("notes", []):
            con.print(f"  {r['target']}: {n}")
    if detail:
        r = rep["targets"][0]
        lt = Table(title=f"{r['target']}: {r['description']} -- limits and their sources")
        for c in ("limit", "value", "unit", "source"):
            lt.add_column(c)
        for k, v in r["limits"].items():
            lt.add_row(k, "-" if v["value"] is None else str(v["value"]), v["unit"],
                       v.get("source") or f"(not documented: {v['why_missing']})")
        con.print(lt)
        m = r["matrix"]
        if m["instruction"] is not None:
            con.print(f"  fragment layout of {m['instruction']} (lane, reg, half):")
            for op, lay in m["layout"].items():
                f = lay.get("formula", "as the PTX ISA table")
                con.print(f"    {op} {lay['shape'][0]}x{lay['shape'][1]}: {f}; "
                          f"{lay['regs_per_lane']} regs/lane; source: {lay['source']}")
    con.print("  sources (--json gives the section of every limit):")
    for k, v in rep["sources"].items():
        con.print(f"    {k}: {v['title']} [{v['kind']}]", markup=False)


def run_arch_port(args) -> int:
    """``microkernel port NAME --arch A|all [--mma P] [--threads T] [--vector-bits B]
    [--json]`` (its flags already checked by :func:`microkernel.commands.port.check_flags`).
    Returns 0, or 2 for an unknown target (the known ones are listed), a bad tile
    name or configuration (on stderr, or as JSON with --json)."""
    from ..commands.port import error
    from ..tile import TileError
    precision = getattr(args, "mma", None) or "f16"
    try:
        rep = arch_report(args.name, args.arch, vector_bits=getattr(args, "vector_bits", None),
                          threads=getattr(args, "threads", None) or 256, precision=precision)
    except UnknownTarget as e:
        return error(args, e, known=list(e.known) + ["all"])
    except (TileError, ValueError, TypeError) as e:
        return error(args, e)
    if args.json:
        print(json.dumps(rep, indent=2, default=str))
    else:
        _render(rep, detail=args.arch != "all")
    return 0
