"""``microkernel compare``: tiles (and peers) against each other, round by round.

    microkernel compare --kernels avx2_4x24_u8,avx2_6x16 --workload deepbench --rounds 15
    microkernel compare --kernels "avx2_4x24_u8;avx2_4x24_u8:kc=192,mc=96" --sizes 1024,2048
    microkernel compare --kernels "avx2_4x24;avx2_4x24@my_4x24.c" --sizes 1024
    microkernel compare --kernels amx_bf16_32x32,avx512bf16_8x32 --dtype bf16 --sizes 1024
    microkernel compare --kernels "avx512_8x32_u4;avx512_8x32_u4:chunks=0" --threads 16
    microkernel compare --kernels "avx512_8x32_u4;avx512_8x32_u4:parts=1,chunks=4" --threads 16

Each contender is ``NAME[@SOURCE.c][:kc=N,mc=N,nc=N,chunks=N,parts=N]``: a tile,
optionally with a micro-kernel source of its own (which must first pass the whole edge
catalogue) and a blocking override (``chunks``: a team's dynamic units per thread, 0 a
fixed share of rows each; ``parts``: the parts of each B block's columns the units
split; see :class:`microkernel.blocking.Blocking`). Contenders are separated by ',' (or ';' when any has a blocking).
Every contender's result is checked once per shape against the float64 reference;
then all of them and the peers (numpy, and torch / blis where installed) are timed in
the same interleaved rounds (:mod:`microkernel.timing`). Printed: per shape GFLOP/s
and the speed against the first contender and against numpy with 95% intervals; over
the workload, the geometric mean of the per-shape ratios with its interval, and the
verdict (leader, ties) at ``--margin``. ``--json`` keeps every sample.
"""
from __future__ import annotations

import argparse

from rich import box
from rich.table import Table

from .. import stats
from .bench import add_dtype_argument, resolve_dtype, resolve_peers
from .common import (Progress, UsageError, check_memory, check_threads, console, fraction, nonneg_float, output_path,
                     positive_float, positive_int, positive_ints_or_none, sources_pass_catalogue,
                     write_json)

__all__ = ["add_arguments", "run", "parse_contenders"]


def add_arguments(p) -> None:
    p.add_argument("--kernels", required=True,
                   help="contenders NAME[@SOURCE.c][:kc=N,mc=N,nc=N,chunks=N,parts=N], ',' or ';' "
                        "separated")
    p.add_argument("--sizes", type=positive_ints_or_none, default=None,
                   help="square sizes n, comma-separated (default 512,1024,2048 without "
                   "--workload, none with it)")
    p.add_argument("--workload", choices=["deepbench", "square", "minilm"])
    p.add_argument("--scale", type=positive_int, default=1,
                   help="divide DeepBench dimensions > 256 by this factor")
    p.add_argument("--gemv", action="store_true",
                   help="also time the n = 1 shapes (the driver's GEMV path, not the tile)")
    p.add_argument("--rounds", type=positive_int, default=15)
    p.add_argument("--threads", type=positive_int, default=1)
    p.add_argument("--min-time", type=positive_float, default=0.02,
                   help="seconds each sample lasts at least")
    p.add_argument("--margin", type=fraction, default=stats.DEFAULT_MARGIN,
                   help="speed difference below which contenders tie (default 0: tied "
                   "unless the interval shows one slower)")
    p.add_argument("--peers", help="reference libraries (default: every one installed)")
    add_dtype_argument(p, "input types of the operands (bf16, f16, f16h, s8s8, u8s8, u8u8; "
                       "default: the first contender's); peers on that dtype: numpy on the "
                       "float32 upcast, torch on the native dtype where it has a GEMM for it")
    p.add_argument("--pause", type=nonneg_float, default=None,
                   help="seconds to sleep before each sample (default 0.3 with several "
                   "threads, so that the workers other runtimes leave spinning after a call "
                   "go to sleep; 0: back to back, the contended case)")
    p.add_argument("--json", metavar="PATH", help="write every sample here")


def parse_contenders(text: str, threads: int = 1):
    """[GemmEntry] from --kernels, each with its overrides (``NAME:kc=N,...``) as a dict,
    which gemm() applies to its model blocking of each call (for ``threads`` threads and
    the call's K: :func:`microkernel.gemm.blocking_for`), or None. UsageError naming the
    bad item."""
    from .. import TileError, get_kernel
    from ..bench import GemmEntry
    from ..build import BuildError
    from .common import blocking_arg
    from ..dispatch import IsaUnavailableError
    from ..gemm import blocking_for
    sep = ";" if ";" in text or ":" in text else ","
    out = []
    for item in (s.strip() for s in text.split(sep)):
        if not item:
            continue
        name, colon, blk = item.partition(":")
        name, at, source = name.partition("@")
        if colon and not blk.strip():
            raise UsageError(f"--kernels {item!r}: nothing after ':' (NAME:kc=N,mc=N,...)")
        if at and not source.strip():
            raise UsageError(f"--kernels {item!r}: no file after '@' (NAME@SOURCE.c)")
        try:
            kern = get_kernel(name, source=source or None)
            override = blocking_arg(blk) if blk else {}
            blocking_for(kern, threads).replace(**override)   # ValueError for a bad value
            # gemm() applies the overrides to its own model blocking of each call
            # (gemm.blocking_for: per thread count and K); none: None, that blocking itself
            blocking = override or None
        except (argparse.ArgumentTypeError, ValueError, OSError, BuildError, TileError,
                IsaUnavailableError) as exc:
            hint = " (separate contenders with ';' when one has a blocking)" if "," in item else ""
            raise UsageError(f"--kernels {item!r}: {exc}{hint}") from None
        if item in [e.label for e in out]:
            raise UsageError(f"--kernels: {item!r} given twice")
        out.append(GemmEntry(item, kern, blocking))
    if not out:
        raise UsageError("--kernels: no contender given")
    return out


def _problems(args):
    from .. import workloads
    from ..bench import tiled
    if args.scale != 1 and args.workload != "deepbench":
        raise UsageError(f"--scale {args.scale} divides the DeepBench shapes: it needs "
                         f"--workload deepbench")
    ns = args.sizes if args.sizes is not None else ([] if args.workload else [512, 1024, 2048])
    problems = workloads.square(ns)
    if args.workload:
        problems += workloads.load(args.workload, args.scale)
    problems = workloads.unique(problems)    # --sizes 256 --workload square: 256^3 once
    if not args.gemv:
        problems = tiled(problems)
    if not problems:
        raise UsageError("no shapes to time: give --sizes or --workload "
                         "(n = 1 shapes need --gemv)")
    check_memory(problems, "--sizes" if args.sizes else "--workload")
    return problems


def run(args) -> int:
    from .. import peers as peers_mod, workloads
    from ..bench import WrongResult, gemm_contenders
    from ..timing import Rounds
    json_path = output_path("--json", args.json)
    if args.rounds < 2:
        raise UsageError("--rounds must be >= 2 (the intervals come from the rounds)")
    check_threads(args.threads)
    problems = _problems(args)
    entries = parse_contenders(args.kernels, args.threads)
    dtype = resolve_dtype(getattr(args, "dtype", None), [e.kernel for e in entries])
    peer_names = resolve_peers(args.peers, dtype)
    con = console()
    if dtype != "f32":
        missing = {n: peers_mod.typed_why_not(n, dtype) for n in peers_mod.PEERS
                   if n not in peer_names}
        for n, why in missing.items():
            con.print(f"peer {n}: not timed on {dtype} ({why or 'not asked for'})")
    if not sources_pass_catalogue([e.kernel for e in entries], con):
        return 1
    if args.workload and (merged := workloads.merged(args.workload, args.scale)):
        con.print(f"--scale {args.scale} makes some {args.workload} shapes the same; each is "
                  "timed once: " + ", ".join(f"{s} ({n} shapes)" for s, n in merged.items()))
    with peers_mod.limit_threads(args.threads, peer_names), Progress() as progress:
        progress(f"checking {len(entries)} contender(s) and {len(peer_names)} peer(s) on "
                 f"{len(problems)} shape(s) against float64")
        try:
            contenders = gemm_contenders(entries, problems, threads=args.threads,
                                         peers=peer_names, types=dtype, progress=progress)
        except WrongResult as exc:
            progress.close()
            con.print(f"[red]not timed[/red]: {exc}")
            return 1
        pause = (0.3 if args.threads > 1 else 0.0) if args.pause is None else args.pause
        r = Rounds(contenders, min_time=args.min_time, pause=pause,
                   progress=lambda text: progress(f"{text} of {args.rounds}"))
        for _ in range(args.rounds):
            r.round()
    labels = [e.label for e in entries]
    res = _figures(r, problems, labels, peer_names, args)
    res["dtype"] = dtype
    res["openblas_spin"] = peers_mod.openblas_spin_note(peer_names, args.threads, pause)
    res["torch_spin"] = peers_mod.torch_spin_note(peer_names, args.threads, pause)
    if dtype != "f32":
        res["peers_what"] = {n: peers_mod.typed_call(n, *_tiny(dtype), dtype).what
                             for n in peer_names}
        res["peers_missing"] = {n: peers_mod.typed_why_not(n, dtype)
                                for n in peers_mod.PEERS if n not in peer_names}
    _print(con, res, labels, peer_names)
    for key in ("openblas_spin", "torch_spin"):
        if res[key]:
            con.print(f"note: {res[key]}")
    if json_path is not None:
        write_json(json_path, res)
        con.print(f"wrote {json_path}")
    return 0


def _tiny(dtype):
    """A 2 x 2 operand pair of ``dtype`` (only to ask a peer what it runs)."""
    import numpy as np
    from ..dtypes import get
    t = get(dtype)
    return np.ones((2, 2), t.dtype("a")), np.ones((2, 2), t.dtype("b"))


def _figures(r, problems, labels, peer_names, args) -> dict:
    from .. import peers as peers_mod
    from ..threads import threads_for
    first = labels[0]
    times = r.matrices(labels + peer_names)
    shapes = []
    for i, p in enumerate(problems):
        row = {"shape": p.label, "m": p.m, "n": p.n, "k": p.k, "flops": p.flops,
               "threads": threads_for(p.m, p.n, p.k, most=args.threads),   # ours (gemm_contenders)
               "contenders": {}}
        for name in labels + peer_names:
            t = times[name][i:i + 1]
            row["contenders"][name] = {
                "gflops": r.gflops(p.label, name),
                "vs_first": stats.bootstrap(stats.paired_ratios(times[first][i:i + 1], t)).as_dict(),
                "vs_numpy": (stats.bootstrap(stats.paired_ratios(times["numpy"][i:i + 1], t)).as_dict()
                             if "numpy" in peer_names else None),
                "faster_than_first": int((times[first][i] > times[name][i]).sum())}
        shapes.append(row)
    over = {}
    for name in labels + peer_names:
        over[name] = {
            "vs_first": stats.bootstrap(stats.paired_ratios(times[first], times[name])).as_dict(),
            "vs_numpy": (stats.bootstrap(stats.paired_ratios(times["numpy"], times[name])).as_dict()
                         if "numpy" in peer_names else None)}
    v = stats.verdict({n: times[n] for n in labels}, margin=args.margin)
    return {"rounds": r.rounds, "threads": args.threads, "min_time": args.min_time,
            "pause": r.pause,
            "peers": {n: peers_mod.describe(n) for n in peer_names},
            "shapes": shapes, "workload": over, "verdict": v.as_dict(),
            "summary": v.summary(), "samples": r.samples()}


def _pct(d) -> str:
    """``+11.2 [+2.6,+26.9]``: a speed ratio as a percentage difference (the column
    header carries the %) with its interval."""
    f = lambda x: f"{100 * (x - 1):+.1f}"  # noqa: E731
    return f"{f(d['point'])} [{f(d['lo'])},{f(d['hi'])}]"


def _print(con, res, labels, peer_names) -> None:
    first = labels[0]
    fewer = {s["shape"]: s["threads"] for s in res["shapes"] if s["threads"] < res["threads"]}
    few = ("; ours on fewer for a small problem, as gemm()'s default: " + ", ".join(
        f"{k} {v}" for k, v in fewer.items())) if fewer else ""
    con.print(f"{len(labels)} contender(s), {len(res['shapes'])} shape(s), {res['rounds']} "
              f"interleaved rounds, {res['threads']} thread(s){few}; peers: "
              f"{'; '.join(res['peers'].values()) or 'none'}; intervals 95% (bootstrap "
              f"over rounds{'; ' + c if (c := stats.interval_caveat(res['rounds'])) else ''}); "
              f"'vs' = their time / this one's (> 0%: this one is faster); "
              f"'faster' = rounds in which it beat {first}")
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left",
              title="per shape: GFLOP/s (of each contender's median time) and speed "
                    "paired by round (the median of the per-round ratios: with few or noisy "
                    "rounds the two can disagree)")
    # the shape on a row of its own: the numbers never lose digits to a 100-column table
    for col, j in (("shape / contender", "left"), ("GF/s", "right"),
                   (f"vs {first}, %", "right"), ("vs numpy, %", "right"), ("faster", "right")):
        t.add_column(col, justify=j, no_wrap=True)
    for s in res["shapes"]:
        t.add_row(f"[bold]{s['shape']}[/bold]", "", "", "", "")
        for name in labels + peer_names:
            c = s["contenders"][name]
            t.add_row(f"  {name}", f"{c['gflops']:.1f}",
                      "-" if name == first else _pct(c["vs_first"]),
                      "-" if name == "numpy" or not c["vs_numpy"] else _pct(c["vs_numpy"]),
                      "-" if name == first else f"{c['faster_than_first']}/{res['rounds']}")
    con.print(t)
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left",
              title="over all shapes (geometric mean of per-shape ratios)")
    for col, j in (("contender", "left"), (f"vs {first}, %", "right"), ("vs numpy, %", "right")):
        t.add_column(col, justify=j, no_wrap=True)
    for name in labels + peer_names:
        w = res["workload"][name]
        t.add_row(name, "-" if name == first else _pct(w["vs_first"]),
                  "-" if name == "numpy" or not w["vs_numpy"] else _pct(w["vs_numpy"]))
    con.print(t)
    con.print(f"[bold]{res['summary']}[/bold]")
