"""``microkernel asm NAME``: the inner K loop of a tile's micro-kernel, its counts,
llvm-mca's cycles and (where the ISA runs here) the measured cycles.

``microkernel asm NAME [--json] [--mcpu CPU] [--full] [--no-measure] [--source FILE]``
prints :func:`microkernel.analysis.report` as tables (or JSON). x86 tiles are read in
Intel syntax on an x86-64 host; NEON and SVE tiles in A64 syntax through the aarch64
cross compiler, on any host.

Exit status: 0, or 2 for a bad tile name, an ISA this host cannot compile, missing
aarch64 tools (the message names the Debian packages), a source that does not compile
or cannot be read (message on stderr).
"""
from __future__ import annotations

import json
import re
import sys

from rich.markup import escape

__all__ = ["add_arguments", "run"]


def add_arguments(parser) -> None:
    """Arguments of ``microkernel asm``."""
    parser.add_argument("name", metavar="NAME",
                        help="tile name, e.g. avx512_8x16, avx2_6x16, neon_8x12, sve_8x2v")
    parser.add_argument("--json", action="store_true",
                        help="print the report as JSON instead of tables")
    parser.add_argument("--mcpu", default=None,
                        help="llvm-mca -mcpu (default: sapphirerapids for avx512; znver3 "
                             "on AMD family 0x19, else haswell, for avx2/scalar; "
                             "neoverse-v2 for neon/sve; a default whose model fails the "
                             "FMA self-check is replaced by the nearest that passes, e.g. "
                             "znver2 for znver3 on LLVM <= 15, and a note says so)")
    parser.add_argument("--full", action="store_true",
                        help="print the whole micro-kernel function, not only the K loop")
    parser.add_argument("--no-measure", action="store_true",
                        help="skip timing the kernel (faster)")
    parser.add_argument("--source", metavar="FILE", default=None,
                        help="C file replacing the generated micro-kernel (must define "
                             "mk_ukernel_<name>; see c_src/mk_ukernel.h)")


def _fmt(x, nd=2):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{nd}f}".rstrip("0").rstrip(".") if x == x else "n/a"
    return str(x)


_FMA_LINE = {"x86_64": re.compile(r"\t(v?f(n)?m(add|sub)|vdpbf16ps|vpdpbus|vpdpwss|vpmaddwd|tdp)"),
             "aarch64": re.compile(r"\t(f(n)?(ml[as]|mad|msb|madd|msub)|fmlal2?|[su]dot|usdot|sudot|"
                                   r"bfdot|[su]mmla|usmmla|bfmmla|b?fmopa|[su]mopa|usmopa|sumopa)\b")}


def _print(rep: dict) -> None:
    from .common import console
    from rich.table import Table
    from rich.text import Text
    con = console()
    loop = rep["loop"]
    arch = rep.get("arch", "x86_64")
    origin = f"@{rep['source']}" if rep.get("source") else " (generated)"
    con.rule(f"{rep['name']}{origin}: {rep['symbol']} ({rep['syntax']} syntax)")
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
    bases = loop.get("stack_bases") or (["rsp", "rbp"] if loop.get("frame_pointer_rbp")
                                         else ["rsp"])
    stack_re = re.compile(r"\[(" + "|".join(map(re.escape, bases)) + r")\b")
    fma_re = _FMA_LINE.get(arch, _FMA_LINE["x86_64"])
    lines = Text()
    for line in loop["asm"]:
        style = ("bold red" if stack_re.search(line) else
                 "bold green" if fma_re.search(line) else None)
        lines.append(line + "\n", style=style)
    con.print(lines, end="")

    pi, pk, exp = loop["per_iteration"], loop["per_k"], rep["expected"]
    t = Table(title="counts" + (" (SVE: lanes and flops in vectors)" if loop.get("scalable")
                                else ""), show_lines=False)
    t.add_column("")
    t.add_column("per iteration", justify="right")
    t.add_column("per k step", justify="right")
    t.add_column("expected per k", justify="right")
    rows = [("FMAs", "fmas", exp["fmas_per_k"]),
            ("  of which by element (lane of A)", "fma_by_element", exp.get("fma_by_element_per_k")),
            ("  of which predicated (SVE)", "fma_predicated", exp.get("fma_predicated_per_k")),
            ("flops" + (" (vectors x 2)" if loop.get("scalable") else ""), "flops",
             exp["flops_per_k"]),
            ("muls (unfused)", "muls", None), ("adds (unfused)", "adds", None),
            ("vector loads", "vector_loads", exp.get("vector_loads_per_k", exp["b_loads_per_k"])),
            ("broadcasts", "broadcasts", exp["broadcasts_per_k"]),
            ("  of which embedded {1toN}", "embedded_broadcasts", None),
            ("scalar loads", "scalar_loads", exp["scalar_loads_per_k"]),
            ("tile loads (AMX)", "tile_loads", exp.get("tile_loads_per_k")),
            ("tile stores (AMX)", "tile_stores", None),
            ("stack spills (stores)", "stack_stores", 0),
            ("stack reloads (loads)", "stack_loads", 0),
            ("instructions", "instructions", None)]
    optional = ("muls", "adds", "scalar_loads", "embedded_broadcasts", "fma_by_element",
                "fma_predicated", "tile_loads", "tile_stores")
    for label, key, e in rows:
        if key in optional and not pi.get(key) and not e:
            continue
        style = "bold red" if key.startswith("stack") and pi[key] else None
        t.add_row(label, _fmt(pi.get(key, 0)), _fmt(pk.get(key, 0)), _fmt(e), style=style)
    con.print(t)

    b = rep["register_budget"]
    bt = Table(title="register budget (tile.register_budget)" + (
        ": tile registers (acc = C tiles, B = B tiles, bcast = A tiles)"
        if rep.get("isa") == "amx" else ""),
        caption=("form: what the instruction form needs beyond them (vpmaddwd's product)"
                 if b["temporaries"] else None))
    for col in ("acc", "B", "bcast", "form", "needed", "available", "used in loop",
                "latency bound"):
        bt.add_column(col, justify="right")
    bt.add_row(str(b["accumulators"]), str(b["b_vectors"]), str(b["broadcasts"]),
               str(b["temporaries"]), str(b["needed"]), str(b["available"]), str(b["used_in_loop"]),
               f"{b['min_accumulators']} acc: "
               + ("met" if b["hides_fma_latency"] else "NOT met"))
    con.print(bt)

    ct = Table(title="cycles per k step")
    ct.add_column("source")
    ct.add_column("cycles / k", justify="right")
    ct.add_column("why / what")
    notes = list(rep.get("notes", []))
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
        notes.append(f"llvm-mca {m['version']} ({m.get('triple', '')}), {m['iterations']} "
                     f"iterations simulated")
    else:
        why = (rep.get("mca_error") or rep.get("mca_missing", "-")).splitlines()
        ct.add_row("llvm-mca", "-", escape("\n".join(why[:4]) + (
            f"\n... ({len(why) - 4} more lines with --json)" if len(why) > 4 else "")))
    meas = rep["measured"]
    if meas.get("runnable") and "cycles_per_k" in meas:
        frac = meas["fraction_of_peak"]
        ct.add_row("measured (derived from the FMA peak)",
                   f"{_fmt(meas['cycles_per_k'])} [{_fmt(meas['cycles_per_k_lo'])}, "
                   f"{_fmt(meas['cycles_per_k_hi'])}]",
                   f"{meas['kernel_gflops']:.1f} GFLOP/s in L1 (kc={meas['kc']}, median of "
                   f"{meas['rounds']} rounds)"
                   + (f", {100 * frac:.0f}% of the FMA peak" if frac is not None else ""))
        notes.append(meas["method"])
    else:
        ct.add_row("measured", "-", meas.get("reason", ""))
    con.print(ct)
    for n in notes:
        con.print(f"  note: {n}", style="dim", highlight=False)


def run(args) -> int:
    """``microkernel asm NAME``: print (or ``--json``) the report. Returns 0, or 2 with
    a message on stderr (see the module docstring)."""
    from ..analysis import report
    from ..build import BuildError
    from ..cross import CrossError, CrossToolsMissing
    from ..tile import TileError
    source = None
    try:
        if getattr(args, "source", None):
            from ..dispatch import check_source
            with open(args.source, encoding="utf-8") as f:
                source = f.read()
            check_source(args.name, source, args.source)
        rep = report(args.name, mcpu=getattr(args, "mcpu", None),
                     measure=not getattr(args, "no_measure", False),
                     full=getattr(args, "full", False), source=source,
                     source_path=getattr(args, "source", None))
    except (TileError, NotImplementedError, CrossToolsMissing, CrossError, BuildError,
            OSError, ValueError) as exc:
        print(f"microkernel asm: error: {exc}", file=sys.stderr)
        return 2
    if getattr(args, "json", False):
        print(json.dumps(rep, indent=2, default=str))
    else:
        _print(rep)
    return 0
