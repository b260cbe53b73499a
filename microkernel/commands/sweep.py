"""``microkernel sweep``: arguments, checks before the work, tables, JSON and PNG.

The sweep itself is :mod:`microkernel.sweep`; this module only parses, checks and
renders. Tables are laid out for 100 columns.
"""
from __future__ import annotations

import sys

from rich import box
from rich.table import Table

from .. import stats
from ..tile import ISAS
from .bench import add_dtype_argument
from .common import (Progress, UsageError, check_threads, console, fraction, need_matplotlib,
                     output_path, positive_float, positive_int, positive_ints,
                     python_command, write_json)

__all__ = ["add_arguments", "run", "plot"]

#: the printed next step times the leader against the tiles within this of it
NEXT_WITHIN = 0.03


def add_arguments(p) -> None:
    p.add_argument("--isa", help=f"ISA to sweep (default: the best this machine runs); "
                   f"one of {', '.join(ISAS)}. One this machine cannot run gets a "
                   f"predicted (static) ranking")
    p.add_argument("--mr", type=positive_ints, help="MR values, e.g. 4,6,8")
    p.add_argument("--nr", type=positive_ints, help="NR values in lanes (SVE: vectors), e.g. 16,32")
    p.add_argument("--workload", default="deepbench", choices=["deepbench", "minilm", "square"])
    p.add_argument("--scale", type=positive_int, default=1,
                   help="divide DeepBench dimensions > 256 by this factor (default 1: real shapes); "
                   "shapes that then coincide are timed once")
    p.add_argument("--threads", type=positive_int, default=1)
    p.add_argument("--max-shapes", type=positive_int, default=16,
                   help="at most this many enumerated tile shapes (default 16): those using "
                   "the most registers, one per vector width first; gemm()'s default tile "
                   "is raced beside them unless --mr/--nr narrow the search")
    p.add_argument("--margin", type=fraction, default=stats.DEFAULT_MARGIN,
                   help="speed difference below which tiles tie (default 0: a tile ties "
                   "with the leader unless its interval shows it slower; e.g. 0.03 or 3%%)")
    p.add_argument("--budget", type=positive_float, default=110.0,
                   help="seconds the workload race may take (default 110)")
    p.add_argument("--rounds", type=positive_int, default=40,
                   help="most rounds of the workload race (default 40)")
    p.add_argument("--min-time", type=positive_float, default=0.02,
                   help="seconds each sample lasts at least (default 0.02)")
    p.add_argument("--peers", help="reference libraries, comma-separated (default: every one "
                   "installed of numpy, torch, blis; '' for none)")
    p.add_argument("--predict", action="store_true",
                   help="static ranking only (generated code + llvm-mca), nothing executed")
    p.add_argument("--mcpu", help="llvm-mca -mcpu for the predicted ranking "
                   "(default per ISA, e.g. sapphirerapids, znver3, neoverse-v2)")
    p.add_argument("--blocking", action="store_true",
                   help="also race KC/MC/NC around the model's choice for the leader")
    add_dtype_argument(p, "input types of the tiles and operands (bf16, f16, f16h, s8s8, "
                       "u8s8, u8u8; default f32, or the --isa's own): without --isa, the ISA "
                       "of gemm()'s kernel for them here (amx, avx512bf16, ... or the widening "
                       "avx512 / avx2 tiles)")
    p.add_argument("--json", metavar="PATH", help="save everything (every sample) as JSON")
    p.add_argument("--plot", metavar="PATH", help="write a PNG of the verdict")
    p.add_argument("--gpu", action="store_true",
                   help="rank GPU tiles instead (numba CUDA, on a CUDA GPU; see "
                        "microkernel.gpu.sweep): uses --workload, --scale, --rounds, "
                        "--budget, --margin, --min-time, --json")


def _race_options_given(args) -> list[str]:
    """The options of the measured race that differ from their defaults (the parser's),
    named as the user typed them: a predicted ranking uses none of them."""
    from argparse import ArgumentParser
    p = ArgumentParser(add_help=False)
    add_arguments(p)
    return ["--" + d.replace("_", "-") for d in _RACE_DESTS
            if getattr(args, d, p.get_default(d)) != p.get_default(d)]


#: the measured race's options (parser dests)
_RACE_DESTS = ("workload", "scale", "threads", "margin", "budget", "rounds", "min_time",
               "peers", "blocking")


def _check(args):
    """Every argument problem, before any work (UsageError names the argument)."""
    if args.isa is not None and args.isa not in ISAS:
        raise UsageError(f"--isa {args.isa!r} is not an ISA; known ISAs: {', '.join(ISAS)}")
    json_path = output_path("--json", args.json)
    plot_path = output_path("--plot", args.plot)
    if plot_path is not None:
        need_matplotlib()
    if args.budget <= 0:
        raise UsageError("--budget must be > 0 seconds")
    if args.rounds < 2:
        raise UsageError("--rounds must be >= 2 (the intervals come from the rounds)")
    peers = None
    if args.peers is not None:
        from .. import peers as peers_mod
        names = [x.strip() for x in args.peers.split(",") if x.strip()]
        bad = [n for n in names if n not in peers_mod.PEERS]
        if bad:
            raise UsageError(f"--peers: unknown {', '.join(bad)}; known: {', '.join(peers_mod.PEERS)}")
        dtype = getattr(args, "dtype", None) or "f32"
        why = [w for n in names if (w := peers_mod.typed_why_not(n, dtype))]
        if why:
            raise UsageError(f"--peers: {'; '.join(why)}")
        peers = names          # [] (--peers ''): no peer
    check_threads(args.threads)
    return json_path, plot_path, peers


def run(args) -> int:
    if getattr(args, "gpu", False):
        from ..gpu.sweep import run as run_gpu
        return run_gpu(args)
    from ..dispatch import IsaUnavailableError, usable_isas
    from ..sweep import predicted, sweep, sweep_isa
    json_path, plot_path, peers = _check(args)
    dtype = getattr(args, "dtype", None)
    try:
        isa = args.isa or sweep_isa(dtype)
    except IsaUnavailableError as exc:
        raise UsageError(f"--dtype {dtype}: {exc}; give --isa for a predicted ranking") from None
    if dtype is not None and dtype not in ISAS[isa].types:
        raise UsageError(f"--isa {isa} tiles take {', '.join(ISAS[isa].types)}, not --dtype "
                         f"{dtype}")
    con = console()
    if args.predict or isa not in usable_isas():
        ignored = _race_options_given(args)
        if ignored:
            con.print(f"note: {', '.join(ignored)} ignored: a predicted ranking times nothing")
        with Progress() as progress:
            res = predicted(isa, mrs=args.mr, nrs=args.nr, max_shapes=args.max_shapes,
                            mcpu=args.mcpu, progress=progress, types=dtype)
        if isa not in usable_isas():
            res["why"] = f"this machine cannot run {isa} (probe: {', '.join(usable_isas())})"
        _print_predicted(con, res)
    else:
        if args.mcpu is not None:
            con.print(f"note: --mcpu ignored: {isa} runs here, so the ranking is measured "
                      f"(--predict for llvm-mca's)")
        with Progress() as progress:
            res = sweep(isa, mrs=args.mr, nrs=args.nr, workload=args.workload,
                        scale=args.scale, threads=args.threads, max_shapes=args.max_shapes,
                        margin=args.margin, budget=args.budget,
                        min_rounds=min(5, args.rounds), max_rounds=args.rounds,
                        min_time=args.min_time, peers=peers, progress=progress,
                        blocking_search=args.blocking, types=dtype)
        _print_measured(con, res)
    if json_path is not None:
        write_json(json_path, res)
        con.print(f"wrote {json_path}")
    if plot_path is not None:
        plot(res, str(plot_path))
        con.print(f"wrote {plot_path}")
    if res.get("predicted"):
        return 0
    return 0 if res["leader"] else 1


# -- measured ---------------------------------------------------------------------------

def _print_notes(con, res) -> None:
    """The requested --mr/--nr values that gave no tile, and the --max-shapes cut."""
    for note in res.get("notes") or ():
        con.print(f"note: {note}")


def _iv(d, fmt="{:.3f}") -> str:
    if not d:
        return "-"
    return f"{fmt.format(d['point'])} [{fmt.format(d['lo'])}, {fmt.format(d['hi'])}]"


def _pct(d) -> str:
    if not d:
        return "-"
    f = lambda x: f"{100 * (x - 1):+.1f}"  # noqa: E731
    return f"{f(d['point'])}% [{f(d['lo'])}, {f(d['hi'])}]"


def _short(d) -> str:
    """``-0.4 [-0.8,-0.1]``: a speed ratio as a percentage difference with its interval."""
    if not d:
        return "-"
    f = lambda x: f"{100 * (x - 1):+.1f}"  # noqa: E731
    return f"{f(d['point'])} [{f(d['lo'])},{f(d['hi'])}]"


def _table(title: str, cols) -> Table:
    t = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    for name, justify in cols:
        t.add_column(name, justify=justify, no_wrap=True)
    return t


def _print_measured(con, res) -> None:
    race = res["race"]
    v = res["verdict"]
    peak = res["peak"]
    con.print(f"[bold]{res['isa']} {res.get('types', 'f32')} tiles on {res['workload']}[/bold]: "
              f"{len(res['rows'])} tiles, {len(res['ranked_problems'])} shapes with "
              f"min(m, n) >= 16, {res['threads']} thread(s)"
              + (f"; {len(res['gemv_problems'])} n = 1 shapes not ranked (the driver's GEMV "
                 f"path, the same for every tile)" if res["gemv_problems"] else ""))
    _print_notes(con, res)
    if res.get("merged_problems"):
        con.print(f"--scale {res['scale']} makes some DeepBench shapes the same; each is "
                  f"timed once: " + ", ".join(f"{s} ({n} shapes)"
                                              for s, n in res["merged_problems"].items()))
    con.print(f"FMA peak {peak['gflops']:.1f} GFLOP/s [{peak['gflops_lo']:.1f}, "
              f"{peak['gflops_hi']:.1f}], timed in the same rounds as the L1 figures; "
              f"peers: {'; '.join(res['peers'].values()) or 'none'}")
    con.print(f"workload race: {race['rounds']} interleaved rounds in {race['seconds']:.0f} s "
              f"(stopped: {race['stopped']}; budget {race['budget']:.0f} s), "
              f"{len(race['dropped'])} tile(s) dropped as clearly behind (interval below "
              f"-{100 * race.get('drop', race['margin']):g}%); intervals "
              f"{100 * race['level']:.0f}% (bootstrap over rounds); behind: the interval "
              f"wholly below the leader" + (f" - {100 * race['margin']:g}%" if race['margin'] else "")
              + (f"; {caveat}" if (caveat := stats.interval_caveat(race["rounds"], race["level"]))
                 else ""))
    ref = "numpy" if "numpy" in res["peers"] else None
    t = _table(f"ranking over the workload: speed against the leader {v['leader']} "
               f"(geometric mean of per-shape ratios, paired by round)",
               [("#", "right"), ("tile", "left"), ("vs leader, %", "right"), ("GF/s", "right"),
                (f"vs {ref}" if ref else "", "right"), ("L1 % of peak", "right"),
                ("spills", "right"), ("status", "left")])
    for i, r in enumerate(res["rows"], 1):
        l1 = r["l1"]
        status = r["status"]
        if r["status"] in ("behind", "tied") and r["dropped_after"]:
            status = f"{r['status']}@{r['dropped_after']}"
        if r["status"] in ("invalid", "error"):
            status = f"[red]{r['status']}[/red]"
        t.add_row(str(i), r["name"] + ("*" if r["is_default"] else ""),
                  _short(r["vs_leader"]) if r["status"] != "leader" else "leader",
                  f"{r['workload_gflops']:.1f}" if r["workload_gflops"] else "-",
                  f"{r['vs_numpy']['point']:.2f}" if r.get("vs_numpy") else "-",
                  f"{l1['pct_peak']:.0f} [{l1['pct_peak_lo']:.0f}-{l1['pct_peak_hi']:.0f}]" if l1 else "-",
                  "-" if r["spills"] is None else str(r["spills"]), status)
    t.caption = ("* gemm()'s default tile. vs leader: its time / the tile's - 1, [95% interval]; "
                 "behind@R: dropped after round R (tied@R: too few rounds to show it behind). "
                 "L1: the micro-kernel on packed panels in L1 against the FMA peak, same rounds")
    t.caption_justify = "left"
    con.print(t)
    tied = set(res["ties"])
    t = _table("per shape: the leading tiles (GFLOP/s; speed against the shape's best, "
               "paired by round)",
               [("shape", "left"), ("tile", "left"), ("GF/s", "right"), ("vs best", "right")]
               + [(n, "right") for n in res["peers"]])
    for s in res["shapes"]:
        first = True
        for tile in s["tiles"]:
            if tile["name"] not in tied and tile["name"] != s["best"]:
                continue
            t.add_row(s["shape"] if first else "", tile["name"], f"{tile['gflops']:.1f}",
                      "best" if tile["name"] == s["best"] else _pct(tile["vs_best"]),
                      *([f"{s['peers'][n]:.1f}" for n in res["peers"]] if first else
                        ["" for _ in res["peers"]]))
            first = False
    con.print(t)
    for r in res["rows"]:
        if r["failures"] or (r["error"] and r["status"] in ("invalid", "error")):
            con.print(f"[red]{r['name']}[/red]: {r['error'] or ''} "
                      f"failed {len(r['failures'])} of {r['cases']} cases: {r['failures'][:5]}")
    if "minilm_check" in res:
        mc = res["minilm_check"]
        con.print(f"MiniLM-L6 layer through {mc['kernel']} vs float64 numpy: "
                  f"{'all GEMMs within the bound' if mc['all_ok'] else '[red]OUT OF BOUND[/red]'} "
                  f"(max err/bound {mc['max_err_ratio']:.3f}), layer output rel. diff "
                  f"{mc['output_rel_diff']:.1e}")
    if "blocking_search" in res:
        bt = _table(f"blocking race for {res['leader']}", [("KC", "right"), ("MC", "right"),
                    ("NC", "right"), ("vs the model's", "right"), ("", "left")])
        for b in res["blocking_search"]:
            bt.add_row(str(b["kc"]), str(b["mc"]), str(b["nc"]), _pct(b["vs_model"]),
                       "model" if b["model"] else "")
        con.print(bt)
    verdict = stats.Verdict(v["leader"], tuple(v["ties"]), tuple(v["behind"]), {
        n: stats.Comparison(n, stats.Interval(c["point"], c["lo"], c["hi"], c["level"],
                                              c["rounds"]), c["status"])
        for n, c in v["vs_leader"].items()}, v["margin"], v["level"])
    con.print(f"[bold]{verdict.summary()}[/bold]")
    d = next((r for r in res["rows"] if r["name"] == res["default"]), None)
    if d is not None and d["status"] in ("invalid", "error"):
        con.print(f"[red]gemm()'s default {d['name']} failed here[/red] (see above)")
    elif d is not None:
        con.print(f"gemm()'s default {d['name']}: "
                  + ("the leader" if d["status"] == "leader" else
                     f"{d['status']}, {_pct(d['vs_leader'])} against the leader"))
    close = [r["name"] for r in res["rows"] if r["vs_leader"] and r["status"] != "leader"
             and r["vs_leader"]["point"] >= 1 - NEXT_WITHIN]
    if close:
        kernels = ",".join([res["leader"]] + close)
        con.print(f"next: time the leader against the tiles within {100 * NEXT_WITHIN:.0f}%, "
                  f"15 rounds: "
                  f"{python_command()} compare --kernels {kernels} --workload {res['workload']}"
                  + (f" --scale {res['scale']}" if res["scale"] != 1 else "")
                  + (f" --threads {res['threads']}" if res["threads"] != 1 else ""))


# -- predicted --------------------------------------------------------------------------

def _print_predicted(con, res) -> None:
    con.print(f"[bold yellow]PREDICTED, not measured[/bold yellow]: {res['isa']} "
              f"{res.get('types', '')} tiles ranked "
              f"from their generated code by llvm-mca -mcpu={res['mcpu']}"
              + (f"; {res['why']}" if res.get("why") else ""))
    _print_notes(con, res)
    t = _table("predicted (llvm-mca): ranked by flops per cycle; FMA use = (FMAs per k / "
               "FMA units) / cycles per k", [
                   ("#", "right"), ("tile", "left"), ("regs", "right"), ("spills", "right"),
                   ("FMAs/k", "right"), ("cycles/k", "right"), ("flops/cycle", "right"),
                   ("FMA use", "right"), ("", "left")])
    for i, r in enumerate(res["rows"], 1):
        fpc = r.get("predicted_flops_per_cycle")
        t.add_row(str(i), r["name"], r["registers"],
                  "-" if r["spills"] is None else str(r["spills"]), str(r["fmas_per_k"]),
                  f"{r['predicted_cycles_per_k']:.2f}" if r["predicted_cycles_per_k"] else "-",
                  f"{fpc:.1f}" if fpc else "-",
                  f"{100 * r['predicted_utilisation']:.0f}%" if r["predicted_utilisation"] else "-",
                  ("default " if r["is_default"] else "") + (r["error"] or ""))
    con.print(t)
    from ..dispatch import usable_isas
    where = (f"this machine runs {res['isa']}: drop --predict to measure it"
             if res["isa"] in usable_isas() else f"measure on a machine that runs {res['isa']}")
    con.print(f"predicted leader: {res['leader']} (a model of one core's pipeline: no caches, "
              f"no memory, no driver; {where})")


# -- plot -------------------------------------------------------------------------------

def plot(res: dict, path: str) -> None:
    """PNG of the verdict: each tile's speed against the leader with its interval
    (measured), or predicted FMA-unit use (predicted); the title names the winner or
    the ties."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if res.get("predicted"):
        rows = [r for r in res["rows"] if r.get("predicted_flops_per_cycle")]
        fig, ax = plt.subplots(figsize=(8, 0.35 * len(rows) + 1.5))
        ax.barh([r["name"] for r in rows][::-1],
                [r["predicted_flops_per_cycle"] for r in rows][::-1], color="tab:orange")
        ax.set_xlabel(f"predicted flops per cycle (llvm-mca -mcpu={res['mcpu']})")
        ax.set_title(f"PREDICTED {res['isa']} ranking; leader {res['leader']}", fontsize=9)
    else:
        rows = [r for r in res["rows"] if r["vs_leader"]]
        fig, ax = plt.subplots(figsize=(8, 0.35 * len(rows) + 1.8))
        names = [r["name"] + (" (default)" if r["is_default"] else "") for r in rows][::-1]
        pts = [r["vs_leader"]["point"] for r in rows][::-1]
        err = [[r["vs_leader"]["point"] - r["vs_leader"]["lo"] for r in rows][::-1],
               [r["vs_leader"]["hi"] - r["vs_leader"]["point"] for r in rows][::-1]]
        color = {"leader": "tab:green", "tied": "tab:blue", "behind": "tab:gray"}
        ax.barh(names, pts, xerr=err, color=[color.get(r["status"], "tab:red")
                                             for r in rows][::-1], capsize=2)
        margin = res["race"]["margin"]
        ax.axvline(1 - margin, color="k", ls=":", lw=1)
        if margin:
            ax.text(1 - margin, len(rows) - 0.4, f" tie margin {100 * margin:g}%", fontsize=7)
        ax.set_xlim(min(pts + [1 - 2 * margin]) - 0.02, 1.02)
        ax.set_xlabel(f"speed against the leader on {res['workload']} "
                      f"({100 * res['race']['level']:.0f}% intervals)")
        from matplotlib.patches import Patch
        ax.legend(handles=[Patch(color=c, label=s) for s, c in color.items()], fontsize=7,
                  loc="upper left", bbox_to_anchor=(1.01, 1.0))   # beside the bars, not on them
        verdict = (f"winner {res['winner']}" if res["winner"] else
                   f"tie: {', '.join(res['ties'])}"
                   + (" (too few rounds to tell)" if res["verdict"].get("too_few") else ""))
        ax.set_title(f"{res['isa']} tiles, {res['race']['rounds']} interleaved rounds: "
                     f"{verdict}", fontsize=9, wrap=True)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":  # pragma: no cover
    sys.exit("run `microkernel sweep`")
