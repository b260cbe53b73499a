"""Port a CPU register tile to the tensor cores: ``microkernel port NAME --mma P``.

**The rule.** A CPU micro-kernel keeps MR x NR fp32 accumulators in vector
registers; the tensor-core port gives *each lane* of a warp as many C values:
MR*NR accumulators per lane = MR*NR/4 m16n8 fragments (each fragment is 16x8 fp32
spread as 4 values over the 32 lanes), so the warp tile is 32*MR*NR elements of C,
as MI x NI fragments (WM = 16*MI rows, WN = 8*NI columns, NI even because B
fragments are loaded two n8 tiles per ``ldmatrix.x4``), the most nearly square
such shape (ties: the wider). ``avx512_8x16``: 128 accumulators -> 32 fragments ->
4 x 8 -> a 64x64 warp tile (4096 = 32 lanes x 128). When the registers (the 4*MI*NI
accumulators + one k step of fragments + :data:`~microkernel.gpu.mma_tile.REG_OVERHEAD`)
would pass 255 - 16, the CPU tile is split over 2, 4, ... warps (halving the
fragment count), as the SIMT port splits a tile over threads.

**The block.** 4 warps (2 x 2) for warp tiles of 2048+ elements, else 8, arranged
for the most nearly square block tile; BK = 32 (f16/bf16: two k16 steps; tf32: 16,
two k8 steps, as its rows are twice as wide); as many cp.async stages (4, 3, 2) as
fit the 48 KB of static shared memory; the XOR swizzle unless asked otherwise; the
pipelined main loop (the ``ldmatrix`` of k step s+1 issued before the ``mma.sync`` of
step s) with two fragment sets where the estimate stays within 255 - 16 registers, else
one (on the H200 it gave 54.8% of cuBLAS f16 at 4096^3 against 31.9% for the simple
loop: bench/results/h200/mma_candidates.md).

The report: warp tile, block tile, fragments and accumulators per lane, registers
(estimated; then compiled: numba's dispatcher on a GPU, else ptxas offline),
shared memory, occupancy and its limiter (:mod:`microkernel.gpu.occupancy`), and
the bank-conflict model's wavefronts per request under swizzle, padding and no
padding (:func:`microkernel.gpu.mma_tile.bank_report`); with ``--validate``
(:func:`validate_mma`), the planned kernel through :func:`microkernel.gpu.mma_gemm`
against a float64 reference of the rounded inputs, on a GPU or in numba's CUDA
simulator (whose mma.sync / ldmatrix / cp.async are the numpy fragment model).
"""
from __future__ import annotations

import dataclasses
import json
import math
import warnings

import numpy as np

from ..tile import TileSpec
from .mma_tile import (MmaTile, PRECISIONS, STATIC_SHARED_LIMIT, bank_report,
                       estimate_regs)
from .occupancy import SM90, occupancy

__all__ = ["MmaPlan", "plan_mma", "mma_port", "validate_mma", "run_mma_port", "warp_tile_for",
           "RULE"]

RULE = ("accumulators per lane = the CPU tile's MR*NR; fragments per lane-set = MR*NR/4 "
        "(m16n8, 4 fp32 per lane); warp tile = 16*MI x 8*NI with MI*NI fragments, most "
        "nearly square, NI even")
REG_MARGIN = 16


def warp_tile_for(fragments: int) -> tuple[int, int]:
    """(MI, NI) for ``fragments`` m16n8 fragments: NI even, the most nearly square
    16*MI x 8*NI warp tile, the wider on a tie. ValueError if none exists."""
    best = None
    for mi in range(1, fragments + 1):
        if fragments % mi:
            continue
        ni = fragments // mi
        if ni % 2:
            continue
        score = (round(abs(math.log((16 * mi) / (8 * ni))), 9), -ni)
        if best is None or score < best[0]:
            best = (score, mi, ni)
    if best is None:
        raise ValueError(f"no MI x NI = {fragments} with NI even")
    return best[1], best[2]


@dataclasses.dataclass
class MmaPlan:
    spec: str
    mr: int
    nr: int
    precision: str
    tile: MmaTile
    warps_per_cpu_tile: int
    est_regs: int
    notes: list

    def as_dict(self) -> dict:
        occ = occupancy(min(self.est_regs, 255), self.tile.threads, self.tile.smem_bytes)
        return {"spec": self.spec, "mr": self.mr, "nr": self.nr,
                "cpu_accumulators": self.mr * self.nr, "precision": self.precision,
                "rule": RULE, "warp_tile": [self.tile.wm, self.tile.wn],
                "block_tile": [self.tile.bm, self.tile.bn, self.tile.bk],
                "warps_per_block": self.tile.warps,
                "fragments_per_lane_set": self.tile.fragments,
                "accumulators_per_lane": self.tile.accumulators,
                "warps_per_cpu_tile": self.warps_per_cpu_tile, "tile": self.tile.as_dict(),
                "est_regs": self.est_regs, "est_occupancy": occ.as_dict(),
                "notes": list(self.notes)}


def _block(precision, mi, ni, warps, smem, bk, stages) -> MmaTile:
    wm, wn = 16 * mi, 8 * ni
    best = None
    w = 1
    while w <= warps:
        wmn, wnn = w, warps // w
        if wmn * wnn == warps:
            score = (round(abs(math.log((wm * wmn) / (wn * wnn))), 9), -wn * wnn)
            if best is None or score < best[0]:
                best = (score, wmn, wnn)
        w *= 2
    _, wmn, wnn = best
    err = None
    for k in ((bk,) if bk else ((32, 16) if precision != "tf32" else (16, 8))):
        for s in ((stages,) if stages else (4, 3, 2)):
            try:
                tile = MmaTile(precision, wm, wn, wmn, wnn, k, s, smem)
            except ValueError as e:
                err = e
                continue
            # the pipelined main loop (54.8% of cuBLAS against 31.9% unpipelined on the
            # H200, bench/results/h200/mma_candidates.md), with the second fragment set
            # only where the estimate stays inside 255 registers
            for bufs in (2, 1):
                piped = dataclasses.replace(tile, pipeline="pipelined", frag_buffers=bufs)
                if estimate_regs(piped) <= SM90.max_regs_per_thread - REG_MARGIN:
                    return piped
            return tile
    raise ValueError(f"no BK/stages fit a {wm * wmn}x{wn * wnn} block: {err}")


def plan_mma(spec_or_name, precision: str = "f16", *, vector_bits: int | None = None,
             warps: int | None = None, bk: int | None = None, stages: int | None = None,
             smem: str = "swizzle") -> MmaPlan:
    """The tensor-core kernel for a CPU tile (see the module docstring for the rule).
    ``warps`` per block (a power of two; default 4, or 8 for warp tiles under 2048
    elements), ``bk``, ``stages`` (default: the first of 4, 3, 2 that fits) and
    ``smem`` fix those choices of the block.

    Raises ValueError (bad precision, warps or no configuration), TileError (bad
    name), TypeError (neither a TileSpec nor a str)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if warps is not None and (not isinstance(warps, int) or not 1 <= warps <= 32
                              or warps & (warps - 1)):
        raise ValueError(f"warps must be a power of two in 1..32, got {warps!r}")
    spec = TileSpec.of(spec_or_name)
    bits = (vector_bits or 128) if spec.is_vla else None
    mr, nr = spec.mr, spec.nr_at(bits)
    acc = mr * nr
    notes = []
    if spec.types not in ("f32", precision):
        notes.append(f"{spec.name} takes {spec.types} inputs; this port takes its MR x NR "
                     f"tile only and computes in {precision} (--mma sets the inputs)")
    frags = -(-acc // 4)
    if frags * 4 != acc:
        notes.append(f"{acc} accumulators is not a multiple of 4: rounded up to {frags} "
                     f"fragments")
    split = 1
    while True:
        f = frags if frags % 2 == 0 or frags == 1 else frags + 1
        f = max(f, 2)
        mi, ni = warp_tile_for(f)
        nw = warps or (4 if 16 * mi * 8 * ni >= 2048 else 8)
        tile = _block(precision, mi, ni, nw, smem, bk, stages)
        est = estimate_regs(tile)
        if est <= SM90.max_regs_per_thread - REG_MARGIN or frags <= 2:
            break
        frags = -(-frags // 2)
        split *= 2
    if f != frags:
        notes.append(f"{frags} fragments cannot be MI x NI with NI even: {f} per warp")
    per = "one warp" if split == 1 else f"{split} warps"
    notes.append(f"{spec.name} ({mr}x{nr} = {acc} fp32 accumulators{', VL=%d' % bits if bits else ''})"
                 f" -> {tile.accumulators} per lane = {tile.fragments} m16n8 fragments "
                 f"({tile.mi} x {tile.ni}) -> warp tile {tile.wm}x{tile.wn} "
                 f"(32 lanes x {tile.accumulators} = {tile.wm * tile.wn}); the CPU tile is "
                 f"{per}" + ("" if split == 1 else f": {acc} accumulators would need more "
                             f"than {SM90.max_regs_per_thread - REG_MARGIN} registers"))
    notes.append(f"block {tile.bm}x{tile.bn} = {tile.warps_m}x{tile.warps_n} warps, BK={tile.bk} "
                 f"({tile.ki} k{tile.instr.k} steps), {tile.stages} cp.async stages, "
                 f"{tile.smem} shared layout, {tile.pipeline} main loop"
                 + (f" ({tile.frag_buffers} fragment sets)" if tile.pipeline == "pipelined" else "")
                 + f", {tile.instr.ptx}")
    return MmaPlan(spec.name, mr, nr, precision, tile, split, est, notes)


def mma_port(spec_or_name, precision: str = "f16", *, compile: bool | None = None,
             offline: bool = True, validate_cases: bool = False, progress=None,
             **kw) -> dict:
    """The tensor-core port report (a dict): ``plan``, ``compiled`` (GPU dispatcher
    or offline ptxas; None when neither is available or ``compile`` is False) with
    its occupancy, ``banks`` (per shared-memory mode), ``warnings``, ``validation``
    (:func:`validate_mma`'s rows when ``validate_cases``, else None; ``progress``
    goes to it). ``kw`` goes to :func:`plan_mma` (vector_bits, warps, bk, stages,
    smem)."""
    p = plan_mma(spec_or_name, precision, **kw)
    rep = {"plan": p.as_dict(), "compiled": None, "banks": bank_report(p.tile),
           "warnings": [], "compile": "skipped" if compile is False else "unavailable",
           "validation": None}
    if compile is not False:
        from .port import _gpu_available
        res = None
        try:
            from .mma_kernel import kernel_for
            if _gpu_available():
                k = kernel_for(p.tile)
                res = dict(k.resources(), source="numba dispatcher")
            elif offline:
                k = kernel_for(p.tile)
                res = None if k.simulated else k.ptxas()
        except ImportError:
            res = None
        if res is not None:
            rep["compile"] = res["source"]
            res["occupancy"] = occupancy(res["regs"], p.tile.threads,
                                         res["shared_bytes"]).as_dict()
            res["spills"] = res.get("local_bytes", 0) > 0 or res.get("spill_stores", 0) > 0
            if res["spills"]:
                msg = (f"{p.tile.name}: {res.get('local_bytes', 0)} bytes of local memory per "
                       f"thread (compiled {res['regs']} registers)")
                rep["warnings"].append(msg)
                warnings.warn(msg, RuntimeWarning, stacklevel=2)
            rep["compiled"] = res
    if validate_cases:
        rep["validation"] = validate_mma(p.tile, progress=progress)
    return rep


def validate_mma(tile: MmaTile, cases=None, *, seed: int = 0, progress=None) -> list:
    """Run the tensor-core kernel of ``tile`` (through :func:`microkernel.gpu.mma_gemm`)
    on each case (default: :data:`microkernel.gpu.port.VALIDATION_CASES` on a GPU, its
    :data:`~microkernel.gpu.port.SIM_CASES` in the simulator) and check every element
    against a float64 reference of the inputs as the tensor cores take them (f16 /
    bf16 as stored, tf32 rounded as ``cvt.rna.tf32.f32``), with the fp32 bound of
    :func:`microkernel.validate.reference` (docs/gpu-tensor-cores.md, "Numerics").

    C is a view into a device buffer with guard elements before and after it: a
    change there is an out-of-bounds write. Returns one dict per case, as
    :func:`microkernel.gpu.port.validate`: label, m, n, k, alpha, beta, max_err,
    max_bound, oob, nan, ok. ``progress``, if given, is called with a line per case.
    Raises ImportError without numba-cuda (or, for bf16, ml_dtypes)."""
    from ..validate import reference
    from .fragments import round_tf32
    from .kernel import _import_cuda
    from .mma_gemm import mma_gemm
    from .mma_kernel import kernel_for
    from .port import _PAD, SIM_CASES, VALIDATION_CASES, case_operands, check_case, guarded_c
    from ..dtypes import bfloat16
    cuda = _import_cuda()
    simulated = kernel_for(tile).simulated
    if cases is None:
        cases = SIM_CASES if simulated else VALIDATION_CASES
    if tile.precision == "bf16" and bfloat16 is None:
        raise ImportError("validating bf16 needs ml_dtypes (numpy bfloat16), a "
                          "dependency of microkernel: pip install ml_dtypes")
    stored = {"bf16": bfloat16, "f16": np.float16}.get(tile.precision, np.float32)
    rng = np.random.default_rng(seed)
    out = []
    where = "numba's CUDA simulator" if simulated else "the GPU"
    for i, (label, m, n, k, alpha, beta, special) in enumerate(cases):
        if progress is not None:
            progress(f"validating {tile.name} in {where}: case {i + 1}/{len(cases)} {label}")
        A, B, C0 = case_operands(rng, m, n, k, special, stored)
        dbuf = guarded_c(cuda, C0)
        with warnings.catch_warnings():     # tiny grids: numba's low-occupancy warning
            warnings.filterwarnings("ignore", message=".*under-utilization.*")
            mma_gemm(A, B, dbuf[_PAD:_PAD + m * n].reshape(m, n), alpha=alpha, beta=beta,
                     tile=tile)
        # exact in float32: f16 / bf16 values, and the tf32 rounding the kernel applies
        A32, B32 = A.astype(np.float32), B.astype(np.float32)
        if tile.precision == "tf32":
            A32, B32 = round_tf32(A32), round_tf32(B32)
        ref, bound = reference(A32, B32, C0, alpha, beta, types="f32")
        out.append(check_case(label, m, n, k, alpha, beta, dbuf, ref, bound))
    return out


def _render(rep: dict) -> None:
    from rich.console import Console
    from rich.table import Table
    import sys
    con = Console(width=None if sys.stdout.isatty() else 132)
    p, t = rep["plan"], rep["plan"]["tile"]
    con.print(f"[bold]port {p['spec']} --mma {p['precision']}[/bold] -> [bold]{t['name']}[/bold]")
    con.print(f"  rule: {p['rule']}")
    for n in p["notes"]:
        con.print(f"  {n}")
    comp = rep.get("compiled")
    tab = Table(title="tensor-core kernel resources (sm_90)")
    tab.add_column("")
    tab.add_column("estimate", justify="right")
    if comp:
        tab.add_column(f"compiled ({comp['source']})", justify="right")

    def row(label, est, val=None):
        tab.add_row(*([label, str(est)] + ([str(val) if val is not None else ""] if comp else [])))
    row("warp tile (WM x WN)", f"{t['wm']}x{t['wn']}")
    row("block tile (BM x BN x BK)", f"{t['bm']}x{t['bn']}x{t['bk']}")
    row("warps / threads per block", f"{t['warps_m'] * t['warps_n']} / {t['threads']}")
    row("m16n8 fragments per lane-set", t["fragments"])
    row("fp32 accumulators per lane", t["accumulators"])
    row("registers per thread", p["est_regs"], comp and comp["regs"])
    row("local memory per thread (B)", 0, comp and comp.get("local_bytes"))
    row("shared memory per block (B)", t["smem_bytes"], comp and comp["shared_bytes"])
    eo = p["est_occupancy"]
    co = comp["occupancy"] if comp else None
    row("blocks / warps per SM", f"{eo['blocks_per_sm']} / {eo['warps_per_sm']}",
        co and f"{co['blocks_per_sm']} / {co['warps_per_sm']}")
    row("occupancy (limiter)", f"{eo['occupancy']:.0%} ({eo['limiter']})",
        co and f"{co['occupancy']:.0%} ({co['limiter']})")
    con.print(tab)
    if not comp:
        con.print("  (estimate only: " + ("--no-compile)" if rep["compile"] == "skipped"
                                          else "no GPU, and no NVVM + ptxas offline)"))
    bt = Table(title="shared memory: wavefronts per warp request (bank model, 32 x 4 B)")
    for c in ("layout", "request", "kind", "per slice", "wavefronts", "ideal", "conflicts"):
        bt.add_column(c, justify="left" if c in ("layout", "request", "kind") else "right")
    for mode, b in rep["banks"].items():
        mark = " (kernel)" if mode == t["smem"] else ""
        for r in b["requests"]:
            bt.add_row(mode + mark, r["request"], r["kind"], str(r["count"]),
                       str(r["wavefronts"]), str(r["ideal"]), str(r["conflicts"]))
    con.print(bt)
    for w in rep["warnings"]:
        con.print(f"[bold red]warning:[/bold red] {w}")
    if rep.get("validation") is not None:
        from ..commands.port import render_validation
        render_validation(con, rep["validation"])


def run_mma_port(args) -> int:
    """``microkernel port NAME --mma P`` (see :func:`microkernel.commands.port.add_arguments`;
    its flags already checked by :func:`microkernel.commands.port.check_flags`).
    ``--threads`` sets the warps per block (32 threads each), ``--bk``, ``--stages`` and
    ``--smem`` the block's k depth and shared memory. Returns 0, 1 when validation
    fails, 2 on a bad tile name or configuration (on stderr, or as JSON with --json)."""
    from ..commands.common import Progress
    from ..commands.port import error
    from ..tile import TileError
    threads = getattr(args, "threads", None)
    validate = getattr(args, "validate", False)
    try:
        with Progress(enabled=validate) as progress:  # the simulator takes tens of seconds
            rep = mma_port(args.name, args.mma, vector_bits=args.vector_bits,
                           compile=False if getattr(args, "no_compile", False) else None,
                           validate_cases=validate, progress=progress,
                           warps=threads // 32 if threads else None,
                           bk=getattr(args, "bk", None),
                           smem=getattr(args, "smem", None) or "swizzle",
                           stages=getattr(args, "stages", None))
    except (TileError, ValueError, TypeError, ImportError) as e:
        return error(args, e)
    if args.json:
        print(json.dumps(rep, indent=2, default=str))
    else:
        _render(rep)
    if rep["validation"] is not None and not all(r["ok"] for r in rep["validation"]):
        return 1
    return 0
