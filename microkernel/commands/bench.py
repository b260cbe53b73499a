"""``microkernel bench``: the FMA peak, the micro-kernels in L1, gemm() against the peers.

All through the timing engine (:mod:`microkernel.timing`): the peak loop and every
kernel's micro-kernel in L1 in the same interleaved rounds (so "% of peak" is a
per-round ratio with an interval), then per thread count ``gemm()`` with the first
kernel and the peer libraries (numpy, and torch / blis where installed) on each shape
in the same rounds; at one thread the kernel's peak loop is timed beside each shape
too, so that the gemm table's "% peak" is paired by round like every other ratio (on a
shared host the peak itself moves by tens of percent between phases). Every figure is a
median over rounds with its 95% interval.
"""
from __future__ import annotations

from rich import box
from rich.table import Table

from .. import stats
from .common import (UsageError, check_memory, check_threads, console, output_path, positive_float,
                     positive_int, positive_ints, sources_pass_catalogue, write_json)

__all__ = ["add_arguments", "run", "DTYPES", "add_dtype_argument", "resolve_dtype",
           "resolve_peers"]

#: the --dtype choices of bench, compare and sweep (microkernel.dtypes.TYPES)
DTYPES = ("f32", "bf16", "f16", "f16h", "s8s8", "u8s8", "u8u8")


#: the deepest K of the L1 timing: an 8 x 32 tile's panels of 65536 fp32 are 10 MiB
MAX_L1_KC = 1 << 16

def add_dtype_argument(p, help_: str) -> None:
    """``--dtype`` (one of :data:`DTYPES`, default None) of bench, compare and sweep."""
    p.add_argument("--dtype", choices=DTYPES, default=None, help=help_)


def resolve_dtype(dtype, kernels) -> str:
    """--dtype, else the input types of the first kernel, else f32; UsageError when a
    kernel takes other inputs (an f16h tile takes the float16 inputs of f16)."""
    from ..dtypes import get
    t = dtype or (kernels[0].spec.types if kernels else "f32")
    want = get(t)
    for k in kernels:
        kt = k.spec.gemm_types
        if (kt.a, kt.b) != (want.a, want.b):
            of = (f"--dtype {t}" if dtype else
                  f"{kernels[0].label} (without --dtype, the first kernel's inputs are "
                  f"the run's)")
            raise UsageError(f"{k.label} takes {kt.a} @ {kt.b} inputs, not the {want.a} @ "
                             f"{want.b} of {of}; time each input type in its own run")
    return t


def resolve_peers(peers, dtype: str) -> list[str]:
    """--peers (comma-separated names; None: every peer available for dtype) as a list;
    UsageError for a name that is unknown, not installed or has no dtype GEMM here."""
    from .. import peers as peers_mod
    names = (peers_mod.available(types=dtype) if peers is None else
             [x.strip() for x in peers.split(",") if x.strip()])
    for n in names:
        if (why := peers_mod.typed_why_not(n, dtype)) is not None:
            raise UsageError(f"--peers: {why}")
    return names


def add_arguments(p) -> None:
    from .common import blocking_arg
    p.add_argument("--kernel", action="append", help="tile name (repeatable); default: all "
                   "runnable built-ins; the first is the one gemm() is timed with; NAME@PATH: "
                   "that tile with the micro-kernel of the C file PATH")
    p.add_argument("--kc", type=positive_int, default=256, help="K for the L1 timing (default 256)")
    p.add_argument("--sizes", type=positive_ints, default=[256, 512, 1024], help="square sizes")
    p.add_argument("--workload", default="square", choices=["square", "deepbench", "minilm"])
    p.add_argument("--threads", type=positive_ints, default=[1], help="e.g. 1,2")
    p.add_argument("--rounds", type=positive_int, default=7,
                   help="interleaved rounds (default 7; the intervals come from them)")
    p.add_argument("--min-time", type=positive_float, default=0.02,
                   help="seconds each sample lasts at least (default 0.02)")
    p.add_argument("--peers", help="reference libraries (default: every one installed)")
    p.add_argument("--blocking", type=blocking_arg, metavar="kc=N,mc=N,nc=N,chunks=N,parts=N",
                   help="override the model's gemm() blocking (any of KC, MC, NC in elements; "
                        "chunks: a team's units per thread, 0 a fixed share; parts: the parts "
                        "of a B block's columns the units split, 0 the fewest that give each "
                        "unit MC rows)")
    add_dtype_argument(p, "input types (microkernel.dtypes): bf16, f16, f16h (fp16 "
                       "accumulation), s8s8, u8s8, u8u8; default: the first --kernel's, else "
                       "f32. Kernels of those types, each against its own instruction's peak; "
                       "gemm() on operands of that type against the peers on them")
    p.add_argument("--json", metavar="PATH", help="save results (every sample) as JSON")


def _iv(g: dict, key: str = "gflops", scale: float = 1.0, fmt: str = "{:.1f}") -> str:
    return (f"{fmt.format(scale * g[key])} [{fmt.format(scale * g[key + '_lo'])}-"
            f"{fmt.format(scale * g[key + '_hi'])}]")


def run(args) -> int:
    from .. import bench, codegen, peers as peers_mod
    from ..blocking import workspace_bound
    from ..dispatch import get_kernel, kernels
    from ..gemm import blocking_for
    from ..threads import threads_for
    from ..timing import Rounds
    from ..workloads import load, square
    json_path = output_path("--json", args.json)
    if args.rounds < 2:
        raise UsageError("--rounds must be >= 2 (the intervals come from the rounds)")
    if args.kc > MAX_L1_KC:
        raise UsageError(f"--kc must be at most {MAX_L1_KC} (the L1 timing's panels of K "
                         f"x (MR + NR) elements stay in the caches), got {args.kc}")
    check_threads(args.threads)
    problems = square(args.sizes) if args.workload == "square" else load(args.workload)
    check_memory(problems, "--sizes" if args.workload == "square" else "--workload")
    dtype = getattr(args, "dtype", None)
    names = args.kernel or kernels(dtype or "f32")
    if not names:
        raise UsageError(f"no built-in {dtype} kernel runs here (--kernel names one)")
    ks = []
    for n in names:   # NAME or NAME@path: a C file in place of the generated micro-kernel
        name, at, source = n.partition("@")
        if at and not source.strip():
            raise UsageError(f"--kernel {n!r}: no file after '@' (NAME@SOURCE.c)")
        ks.append(get_kernel(name, source=source or None))
    dtype = resolve_dtype(dtype, ks)
    peer_names = resolve_peers(args.peers, dtype)
    kern = ks[0]
    if args.blocking:
        blocking_for(kern).replace(**args.blocking)  # ValueError (exit 2) for values < 1
    con = console()
    if not sources_pass_catalogue(ks, con):
        return 1
    best = get_kernel()   # the peak of this core: FMA chains of the best usable ISA
    typed = dtype != "f32" or any(k.spec.types != "f32" for k in ks)
    own = bench.kernel_peaks(ks) if typed else None   # typed: each its own instruction's peak
    l1 = Rounds(bench.l1_contenders(ks, best, kc=args.kc, own_peaks=typed),
                min_time=args.min_time)
    for _ in range(args.rounds):
        l1.round()
    fig = bench.l1_figures(l1, [k.label for k in ks], own)
    peak = fig[bench.PEAK]
    result = {"peak": {x: y for x, y in peak.items()}, "peak_gflops": peak["gflops"],
              "peak_isa": best.spec.isa, "peers": {n: peers_mod.describe(n) for n in peer_names},
              "rounds": args.rounds, "l1": [], "gemm": [], "dtype": dtype,
              "own_peaks": ({n: fig[n] for n in set(own.values())} if own else None),
              "gemm_blocking": {}}   # per thread count, below
    t = Table(title=f"micro-kernel in L1 (K={args.kc}) and the {best.spec.isa} FMA peak "
                    f"{_iv(peak)} GFLOP/s, {args.rounds} interleaved rounds, medians "
                    f"[95% intervals]" + (f" ({c})" if (c := stats.interval_caveat(args.rounds))
                                          else ""), box=box.SIMPLE_HEAD, title_justify="left")
    cols = ("kernel", "GFLOP/s", "% of peak") + (("its peak", "peak GFLOP/s") if own else ())
    for col in cols:
        t.add_column(col, justify="right", no_wrap=True)
    for k in ks:
        g = fig[k.label]
        row = [k.label, _iv(g), _iv(g, "pct_peak", fmt="{:.0f}")]
        if own:
            row += [(f"{best.spec.isa}/f32" if g["peak"] == bench.PEAK else
                     g["peak"].removeprefix(f"{bench.PEAK}:")), _iv(fig[g["peak"]])]
        t.add_row(*row)
        result["l1"].append({"kernel": k.label, **g})
    if own:
        t.caption = ("typed kernels: % of each kernel's own instruction's peak (vdpbf16ps, "
                     "tdp*, vfmadd231ph, vpdpbusd, or the fp32 FMA of widening tiles; for "
                     "scalar tiles, which the compiler vectorises, the best ISA's fp32 "
                     "FMA), timed in the same rounds")
        t.caption_justify = "left"
    con.print(t)
    # the peak that "% peak" is of: the kernel's own instruction's (typed) or the best ISA's
    pname = fig[kern.label]["peak"] if own else bench.PEAK
    # whether gemm()'s module takes the C-stationary loops (its workspace bound below)
    cst = codegen.c_stationary(kern.spec, None if kern.source is None else
                               open(kern.source, encoding="utf-8").read())
    for threads in args.threads:
        # gemm() takes its model blocking per call (for this many threads and the call's
        # K: one thread of an AMX tile from K = CSTAT_MIN_K gets the C-stationary loops'
        # own) with the --blocking overrides; the title names each shape's. Each shape runs
        # threads_for(m, n, k, most=threads) threads (bench.gemm_contenders): fewer for a
        # small one, as gemm()'s default count chooses
        used = {p.label: threads_for(p.m, p.n, p.k, most=threads) for p in problems}
        blks = {p.label: blocking_for(kern, used[p.label], p.k, p.n).replace(**(args.blocking or {}))
                for p in problems}
        blk = blks[max(problems, key=lambda p: p.k).label]
        entry = bench.GemmEntry(kern.label, kern, dict(args.blocking) if args.blocking else None)
        result["gemm_blocking"][str(threads)] = {     # the deepest shape's (each: "gemm")
            "kc": blk.kc, "mc": blk.mc, "nc": blk.nc, "chunks": blk.chunks, "parts": blk.parts,
            "overridden": sorted(args.blocking or ())}
        try:
            cons = bench.gemm_contenders([entry], problems, threads=threads, peers=peer_names,
                                         types=dtype)
        except bench.WrongResult as exc:   # a validation failure: exit 1, as compare
            con.print(f"[red]not timed[/red]: {exc}")
            return 1
        if threads == 1:   # one thread: that peak loop beside every shape, paired by round
            cons += [bench.peak_contender(pname, kern if pname != bench.PEAK else best,
                                          shape=p.label)
                     for p in problems]
        with peers_mod.limit_threads(threads, peer_names):
            r = Rounds(cons, min_time=args.min_time, pause=0.3 if threads > 1 else 0.0)
            for _ in range(args.rounds):
                r.round()
        kcs = f"KC={blk.kc} MC={blk.mc} NC={blk.nc}"
        other = {(b.kc, b.mc, b.nc): p.k for p in problems      # shallower shapes that
                 if (b := blks[p.label]) != blk}                 # block otherwise
        kcs += "".join(f"; K = {k}: KC={x[0]} MC={x[1]} NC={x[2]}" for x, k in other.items())
        t = Table(title=f"gemm() {kern.label} on {dtype} ({kcs}), "
                        f"{threads} thread(s), {args.rounds} interleaved rounds; ratio: "
                        f"the peer's time / ours (> 1: ours is faster) [95%]",
                  box=box.SIMPLE_HEAD, title_justify="left",
                  caption=("% peak: of the peak loop timed beside each shape in the same rounds "
                           "[95%]" if threads == 1 else
                           "% peak: of the kernel's peak (the L1 rounds above) x the threads "
                           "the shape ran (fewer for a small one: threads_for)"),
                  caption_justify="left")
        cols = ["shape", "ours GF/s", "% peak"]
        for n in peer_names:
            cols += [f"{n} GF/s", f"vs {n}"]
        for col in cols:
            t.add_column(col, justify="right", no_wrap=True)
        ratios = {n: [] for n in peer_names}
        for i, p in enumerate(problems):
            ours_t = r.matrix(kern.label)[i:i + 1]
            g = r.gflops(p.label, kern.label)
            b = blks[p.label]
            rec = {"kernel": kern.label, "shape": p.label, "threads": used[p.label],
                   "ours_gflops": g, "peers": {}, "peak": pname,
                   "blocking": {"kc": b.kc, "mc": b.mc, "nc": b.nc}}
            if threads == 1:
                iv = bench.paired_pct_peak(r, p.label, kern.label, pname)
                rec["pct_peak"] = {**iv.as_dict(), "peak_gflops": r.gflops(p.label, pname)}
                pct = f"{iv.point:.0f}% [{iv.lo:.0f}-{iv.hi:.0f}]"
            else:
                pct = f"{100 * g / (fig[pname]['gflops'] * used[p.label]):.0f}%"
                rec["pct_peak"] = {"point": 100 * g / (fig[pname]["gflops"] * used[p.label])}
            row = [p.label, f"{g:.1f}", pct]
            for n in peer_names:
                iv = stats.bootstrap(stats.paired_ratios(r.matrix(n)[i:i + 1], ours_t))
                ratios[n].append(iv.point)
                row += [f"{r.gflops(p.label, n):.1f}", str(iv)]
                rec["peers"][n] = {"gflops": r.gflops(p.label, n), "ratio": iv.as_dict()}
            t.add_row(*row)
            result["gemm"].append(rec)
        con.print(t)
        for n in peer_names:
            w = stats.bootstrap(stats.paired_ratios(r.matrix(n), r.matrix(kern.label)))
            con.print(f"ours against {n} over these shapes ({threads} thread(s)), geometric "
                      f"mean of per-shape ratios: {w}")
            result.setdefault("workload", {}).setdefault(str(threads), {})[n] = w.as_dict()
        result.setdefault("samples", {})[str(threads)] = r.samples()
        # extra memory of a call: the calling thread's packing workspace, reused
        ws = int(kern.lib.mk_workspace_bytes())
        bound = max(workspace_bound(kern.spec, blks[p.label], p.m, p.n, p.k, threads, cst)
                    for p in problems)
        how = ("the C-stationary loops at one thread: the whole packed B, MC x K of A, "
               "MC x NC of C" if cst and threads == 1 else
               f"{threads} x (MC x KC of A + KC x (NC + NR) of B + 2 edge tiles)")
        con.print(f"packing workspace held after these calls: {ws / 2**20:.2f} MiB "
                  f"(bound {bound / 2**20:.2f} MiB: {how})")
        result.setdefault("workspace_bytes", {})[str(threads)] = ws
    result["l1_samples"] = l1.samples()
    if json_path is not None:
        write_json(json_path, result)
        con.print(f"wrote {json_path}")
    return 0
