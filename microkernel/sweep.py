"""``microkernel sweep``: prototype register-tile shapes and rank them.

For one ISA (default: the best this machine runs), enumerate MR x NR candidates
between the latency bound and the register bound (Low et al. 2016, see
``tile.register_budget``), plus gemm()'s default tile of that ISA (which may be
k-unrolled, as ``avx2_4x24_u8`` is, and so not among the enumerated shapes) unless
--mr/--nr restrict the search, then for each: generate the C micro-kernel, compile it
through cffi, validate it on the edge catalogue (a failing shape is reported and
excluded from the ranking), time it in L1 and inside the full ``gemm()`` on a
workload of real GEMM shapes next to ``numpy.matmul`` (same run, same threads), and
rank by the ratio to numpy on the workload (numpy's total time over ours, numpy timed
beside each tile): a slow spell of a shared machine moves both sides of that ratio,
where it would move a tile's GFLOP/s alone. The result is a table, optionally JSON and
a PNG.
"""
from __future__ import annotations

import dataclasses
import json
import time

from .tile import ISAS, TileError, TileSpec, register_budget

__all__ = ["candidates", "SweepRow", "sweep", "add_sweep_arguments", "run_sweep"]


def candidates(isa: str, mrs=None, nrs=None, max_shapes: int = 16,
               vector_bits: int | None = None) -> list[TileSpec]:
    """Tile shapes for ``isa``: every MR x NR with MR*NR/lanes >= FMA latency x FMA
    units (hides FMA latency) and accumulators + B vectors + 1 <= vector registers.

    ``mrs``/``nrs`` restrict the search (NR in lanes; for SVE in vectors). When more
    than ``max_shapes`` remain, the ones using the most registers are kept (at least
    one per vector width), since they amortise B loads best.
    """
    info = ISAS[isa]
    lanes = info.lanes or 1
    nv_options = range(1, 9)
    cands = []
    for nv in nv_options:
        nr = nv if info.lanes is None else nv * lanes
        if nrs and nr not in nrs:
            continue
        for mr in (mrs or range(1, 33)):
            try:
                spec = TileSpec(isa, mr, nr)
            except TileError:
                continue
            b = register_budget(spec)
            if not mrs and not b.hides_fma_latency:
                continue
            cands.append(spec)
    if len(cands) > max_shapes:
        by_width: dict[int, list[TileSpec]] = {}
        for s in cands:
            by_width.setdefault(s.vectors_per_row, []).append(s)
        keep = {max(v, key=lambda s: register_budget(s).needed) for v in by_width.values()}
        rest = sorted((s for s in cands if s not in keep),
                      key=lambda s: (-register_budget(s).needed, s.mr))
        keep |= set(rest[:max(0, max_shapes - len(keep))])
        cands = [s for s in cands if s in keep]
    return cands


@dataclasses.dataclass
class SweepRow:
    name: str
    mr: int
    nr: int
    registers: str
    compile_s: float
    valid: bool
    cases: int
    failures: list
    l1_gflops: float | None = None
    pct_peak: float | None = None
    workload_gflops: float | None = None
    numpy_gflops: float | None = None
    ratio_numpy: float | None = None
    median_ratio: float | None = None
    spills: int | None = None
    predicted_cycles_per_k: float | None = None
    measured_cycles_per_k: float | None = None
    error: str = ""


def _inspect_row(spec: TileSpec, row: SweepRow, peak: float) -> None:
    """Spills and cycles from microkernel.inspect, when it is available."""
    try:
        from . import inspect as mk_inspect
    except ImportError:
        return
    try:
        rep = mk_inspect.report(spec, measure=False)
    except Exception as exc:  # inspection is advisory; never sink the sweep
        row.error = (row.error + f" inspect: {exc}").strip()
        return
    row.spills = rep.get("spills")
    row.predicted_cycles_per_k = rep.get("predicted_cycles_per_k")
    # measured cycles per k step from the L1 rate: FMAs per k step run at
    # fma_units per cycle at peak, so cycles/k = (FMAs/k / units) * peak / achieved.
    if row.l1_gflops:
        fmas = spec.mr * spec.vectors_per_row
        row.measured_cycles_per_k = fmas / spec.info.fma_units * peak / row.l1_gflops


def sweep(isa: str | None = None, *, mrs=None, nrs=None, workload: str = "deepbench",
          scale: int = 1, threads: int = 1, max_shapes: int = 16, repeats: int = 3,
          progress=None, blocking_search: bool = False) -> dict:
    """Run the sweep; returns a dict with 'rows' (SweepRow dicts, ranked by ratio to
    numpy), 'peak_gflops', 'numpy_gflops' (numpy's GFLOP/s beside the winner),
    'workload', 'winner' and 'default' (gemm()'s default tile of the ISA). See the module
    docstring."""
    from . import bench
    from .dispatch import best_isa, default_tile, get_kernel
    from .validate import run_catalogue
    from .workloads import load

    isa = isa or best_isa()
    specs = candidates(isa, mrs, nrs, max_shapes)
    if not specs:
        raise ValueError(f"no {isa} tile fits the register and latency bounds for "
                         f"MR={mrs or 'any'} NR={nrs or 'any'}")
    default = default_tile(isa)
    if not (mrs or nrs) and default not in specs:
        specs.append(default)  # gemm()'s default (k-unrolled on x86): ranked beside the shapes
    problems = load(workload, scale)
    rows: list[SweepRow] = []
    peak = None
    task = progress.add_task(f"sweep {isa}", total=len(specs)) if progress else None
    for spec in specs:
        if progress:
            progress.update(task, description=f"{spec.name}: compile")
        t0 = time.perf_counter()
        b = register_budget(spec)
        row = SweepRow(spec.name, spec.mr, spec.nr, f"{b.needed}/{b.available}", 0.0, False, 0, [])
        try:
            k = get_kernel(spec)
        except Exception as exc:
            row.error = f"{type(exc).__name__}: {exc}"
            rows.append((spec, row))
            if progress:
                progress.advance(task)
            continue
        row.compile_s = time.perf_counter() - t0
        # The peak is re-measured next to every shape and the best kept: on a VM the
        # clock moves (turbo, neighbours), and a peak taken once could sit below a
        # kernel timed a minute later.
        peak = max(peak or 0.0, bench.measure_peak(k, repeats=3))
        if progress:
            progress.update(task, description=f"{spec.name}: validate")
        results = run_catalogue(k)
        row.cases = len(results)
        row.failures = [r.case.label for r in results if not r.ok]
        row.valid = not row.failures
        if row.valid:
            if progress:
                progress.update(task, description=f"{spec.name}: time")
            row.l1_gflops = bench.time_l1(k)
            timings = bench.time_gemm_vs_numpy(k, problems, threads=threads, repeats=repeats)
            flops = sum(t.flops for t in timings)
            ours = sum(t.ours_s for t in timings)
            theirs = sum(t.numpy_s for t in timings)
            row.workload_gflops = flops / ours / 1e9
            row.numpy_gflops = flops / theirs / 1e9
            row.ratio_numpy = theirs / ours
            row.median_ratio = bench.median_ratio(timings)
        rows.append((spec, row))
        if progress:
            progress.advance(task)
    for spec, row in rows:  # against the best peak of the whole run
        if row.l1_gflops:
            row.pct_peak = 100 * row.l1_gflops / peak
        _inspect_row(spec, row, peak or 1.0)
    rows = [row for _, row in rows]
    ranked = sorted(rows, key=lambda r: -(r.ratio_numpy or -1))
    winner = next((r for r in ranked if r.valid and r.workload_gflops), None)
    out = {"isa": isa, "workload": workload, "scale": scale, "threads": threads,
           "problems": [p.label for p in problems], "peak_gflops": peak,
           "numpy_blas": bench.numpy_blas_info(),
           "numpy_gflops": winner.numpy_gflops if winner else None,
           "rows": [dataclasses.asdict(r) for r in ranked],
           "winner": winner.name if winner else None,
           "default": default.name}
    if workload == "minilm" and winner:
        from .minilm import run_layer
        layer = run_layer(get_kernel(winner.name))
        out["minilm_check"] = {"kernel": winner.name, "all_ok": layer["all_ok"],
                               "max_err_ratio": layer["max_err_ratio"],
                               "output_rel_diff": layer["output_rel_diff"]}
    if blocking_search and winner:
        out["blocking_search"] = search_blocking(get_kernel(winner.name), problems, threads)
    return out


def search_blocking(kernel, problems, threads: int = 1) -> list[dict]:
    """Time the kernel on ``problems`` with KC, MC, NC scaled around the model's choice
    (x0.5, x1, x1.5/x2); returns rows sorted fastest first."""
    from . import bench
    from .gemm import blocking_for
    base = blocking_for(kernel)
    rows = []
    seen = set()
    for fk, fm, fn in [(1, 1, 1), (0.5, 1, 1), (1.5, 1, 1), (1, 0.5, 1), (1, 2, 1),
                       (1, 1, 0.5), (0.5, 2, 1), (1.5, 0.5, 1)]:
        kc = max(8, int(base.kc * fk))
        mc = max(kernel.mr, int(base.mc * fm) // kernel.mr * kernel.mr)
        nc = max(kernel.nr, int(base.nc * fn) // kernel.nr * kernel.nr)
        if (kc, mc, nc) in seen:
            continue
        seen.add((kc, mc, nc))
        blk = base.replace(kc=kc, mc=mc, nc=nc)
        t = bench.time_gemm_vs_numpy(kernel, problems, threads=threads, repeats=3,
                                     blocking=blk)
        flops = sum(x.flops for x in t)
        secs = sum(x.ours_s for x in t)
        rows.append({"kc": kc, "mc": mc, "nc": nc, "model": (fk, fm, fn) == (1, 1, 1),
                     "gflops": flops / secs / 1e9})
    return sorted(rows, key=lambda r: -r["gflops"])


def plot(result: dict, path: str) -> None:
    """PNG: workload GFLOP/s over the MR x NR grid, with the FMA peak and numpy marked."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in result["rows"] if r["workload_gflops"]]
    fig, ax = plt.subplots(figsize=(8, 5.5))
    sc = ax.scatter([r["nr"] for r in rows], [r["mr"] for r in rows],
                    c=[r["workload_gflops"] for r in rows], s=[40 + 6 * (r["l1_gflops"] or 0) for r in rows],
                    cmap="viridis")
    for r in rows:   # gemm()'s default may share its MR x NR point: its label goes below
        is_default = r["name"] == result.get("default")
        ax.annotate((f"{r['name']} (default): " if is_default else "")
                    + f"{r['workload_gflops']:.0f} (L1 {r['pct_peak']:.0f}% of peak)",
                    (r["nr"], r["mr"]), textcoords="offset points",
                    xytext=(10, -10 if is_default else 4), fontsize=7)
    cb = fig.colorbar(sc, ax=ax)
    cb.set_label("GFLOP/s on workload (marker size: GFLOP/s in L1)")
    if result.get("numpy_gflops"):
        cb.ax.axhline(result["numpy_gflops"], color="red", lw=2)
        cb.ax.text(-0.1, result["numpy_gflops"], "numpy ", color="red", va="center", ha="right",
                   transform=cb.ax.get_yaxis_transform(), fontsize=8)
    ax.set_xlabel("NR (fp32 lanes)")
    ax.set_ylabel("MR (rows)")
    ax.set_title(f"{result['isa']} tiles on {result['workload']}: FMA peak "
                 f"{result['peak_gflops']:.0f} GFLOP/s, numpy {result.get('numpy_gflops') or 0:.0f}; "
                 f"winner {result['winner']}", fontsize=9)
    ax.grid(alpha=0.3)
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- CLI ------------------------------------------------------------------------------------

def add_sweep_arguments(p) -> None:
    from .cli import _csv_ints
    p.add_argument("--isa", help="ISA to sweep (default: the best this machine runs)")
    p.add_argument("--mr", type=_csv_ints, help="MR values, e.g. 4,6,8")
    p.add_argument("--nr", type=_csv_ints, help="NR values in lanes (SVE: vectors), e.g. 16,32")
    p.add_argument("--workload", default="deepbench", choices=["deepbench", "minilm", "square"])
    p.add_argument("--scale", type=int, default=1,
                   help="divide DeepBench dimensions > 256 by this factor (default 1: real shapes)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--max-shapes", type=int, default=16)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--blocking", action="store_true",
                   help="also search KC/MC/NC around the model's choice for the winner")
    p.add_argument("--json", metavar="PATH", help="save everything as JSON")
    p.add_argument("--plot", metavar="PATH", help="write a PNG of GFLOP/s over the MR x NR grid")


def run_sweep(args) -> int:
    from rich.progress import Progress
    from rich.table import Table

    from .cli import _console
    con = _console()
    with Progress(console=con, transient=True) as progress:
        res = sweep(args.isa, mrs=args.mr, nrs=args.nr, workload=args.workload, scale=args.scale,
                    threads=args.threads, max_shapes=args.max_shapes, repeats=args.repeats,
                    progress=progress, blocking_search=args.blocking)
    t = Table(title=f"{res['isa']} tiles on {res['workload']} ({len(res['problems'])} GEMM shapes, "
                    f"{res['threads']} thread(s)); FMA peak {res['peak_gflops']:.1f} GFLOP/s; "
                    f"numpy ({res['numpy_blas']}) {res['numpy_gflops'] or 0:.1f} GFLOP/s "
                    f"beside the winner")
    for col in ("rank", "tile", "regs", "valid", "L1 GFLOP/s", "% peak", "workload GFLOP/s",
                "vs numpy", "median ratio", "spills", "cycles/k pred", "cycles/k meas"):
        t.add_column(col, justify="right", no_wrap=col == "tile")
    fmt = lambda v, f="{:.1f}": "-" if v is None else f.format(v)  # noqa: E731
    for i, r in enumerate(res["rows"], 1):
        valid = "yes" if r["valid"] else ("[red]FAIL[/red]" if r["cases"] else "[red]ERR[/red]")
        t.add_row(str(i), r["name"], r["registers"], valid, fmt(r["l1_gflops"]),
                  fmt(r["pct_peak"], "{:.0f}%"), fmt(r["workload_gflops"]),
                  fmt(r["ratio_numpy"], "{:.2f}"), fmt(r["median_ratio"], "{:.2f}"),
                  fmt(r["spills"], "{}"), fmt(r["predicted_cycles_per_k"], "{:.2f}"),
                  fmt(r["measured_cycles_per_k"], "{:.2f}"))
    con.print(t)
    for r in res["rows"]:
        if r["failures"] or r["error"]:
            con.print(f"[red]{r['name']}[/red]: failed {r['failures'][:5]} {r['error']}")
    if "minilm_check" in res:
        mc = res["minilm_check"]
        con.print(f"MiniLM-L6 layer through {mc['kernel']} vs float64 numpy: "
                  f"{'all GEMMs within the bound' if mc['all_ok'] else '[red]OUT OF BOUND[/red]'} "
                  f"(max err/bound {mc['max_err_ratio']:.3f}), layer output rel. diff "
                  f"{mc['output_rel_diff']:.1e}")
    if "blocking_search" in res:
        bt = Table(title=f"blocking search for {res['winner']}")
        for col in ("KC", "MC", "NC", "GFLOP/s", "model's choice"):
            bt.add_column(col, justify="right")
        for b in res["blocking_search"]:
            bt.add_row(str(b["kc"]), str(b["mc"]), str(b["nc"]), f"{b['gflops']:.1f}",
                       "yes" if b["model"] else "")
        con.print(bt)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)
        con.print(f"wrote {args.json}")
    if args.plot:
        plot(res, args.plot)
        con.print(f"wrote {args.plot}")
    if res["winner"]:
        w = next(r for r in res["rows"] if r["name"] == res["winner"])
        con.print(f"[bold]winner: {w['name']}[/bold]: {w['workload_gflops']:.1f} GFLOP/s on "
                  f"{res['workload']}, {w['ratio_numpy']:.2f}x numpy, L1 {w['l1_gflops']:.1f} "
                  f"GFLOP/s = {w['pct_peak']:.0f}% of the measured FMA peak")
        ranks = {r["name"]: i for i, r in enumerate(res["rows"], 1)}
        d = next((r for r in res["rows"] if r["name"] == res["default"]), None)
        if d is not None and d["name"] != w["name"] and not d["ratio_numpy"]:
            con.print(f"[red]gemm()'s default {d['name']} failed here[/red] (see above)")
        elif d is not None and d["name"] != w["name"]:
            con.print(f"gemm()'s default {d['name']}: rank {ranks[d['name']]}, "
                      f"{d['ratio_numpy']:.2f}x numpy against the winner's {w['ratio_numpy']:.2f}x. "
                      f"A sweep times each tile once, a few samples per shape; to choose between "
                      f"two tiles, time them round by round: python bench/kernel_ab.py "
                      f"--kernels '{w['name']};{d['name']}' --sizes '' --workload {res['workload']}"
                      + (f" --threads {res['threads']}" if res["threads"] != 1 else "")
                      + (" (at full size: kernel_ab.py has no --scale)" if res["scale"] != 1 else ""))
        return 0
    con.print("[red]no tile passed validation[/red]")
    return 1
