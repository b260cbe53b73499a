"""``microkernel validate``: the edge catalogue on kernels, against a float64 reference."""
from __future__ import annotations

import json

from rich.table import Table

from .bench import DTYPES
from .common import UsageError, console, in_source_child, run_source_child

__all__ = ["add_arguments", "run"]


def add_arguments(p) -> None:
    p.add_argument("--kernel", action="append",
                   help="tile name (repeatable); default: every built-in kernel this machine "
                        "runs, of every input type (or of --dtype)")
    p.add_argument("--dtype", choices=DTYPES, default=None,
                   help="without --kernel: only the built-in kernels of these input types")
    p.add_argument("--quick", action="store_true", help="one case per remainder")
    p.add_argument("--source", help="C file replacing the generated micro-kernel of the one "
                   "--kernel (must define mk_ukernel_<name>; see c_src/mk_ukernel.h)")
    p.add_argument("--json", action="store_true")


def run(args) -> int:
    from ..dispatch import get_kernel, kernels
    from ..validate import run_catalogue
    if args.kernel and args.dtype:
        raise UsageError("--dtype selects built-in kernels: give it without --kernel")
    names = args.kernel or kernels(args.dtype)
    if not names:
        raise UsageError(f"no built-in {args.dtype} kernel runs on this machine "
                         "(microkernel list shows what runs here)")
    if args.source is not None and len(args.kernel or ()) != 1:
        raise ValueError("--source replaces the micro-kernel of one tile: give exactly one --kernel")
    if args.source is not None and not in_source_child():
        # compile here (errors name the user's file and line), run in a child: a crash or
        # a hang of the user's micro-kernel is reported, not suffered
        label = get_kernel(args.kernel[0], source=args.source).label
        res = run_source_child(["validate", "--kernel", args.kernel[0], "--source", args.source]
                               + ["--quick"] * args.quick + ["--json"] * args.json,
                               label, console(stderr=True), capture=False)
        return 1 if res is None else res.returncode
    report, failed = [], 0
    t = Table(title="edge catalogue vs float64 reference (bound c*(K+2)*u*(|a||A||B|+|b||C0|), c=2)")
    for col in ("kernel", "cases", "passed", "failed", "max err/bound", "guards"):
        t.add_column(col, justify="right" if col not in ("kernel", "guards") else "left")
    fails = []
    for name in names:
        k = get_kernel(name, source=args.source)
        results = run_catalogue(k, quick=args.quick)
        bad = [r for r in results if not r.ok]
        failed += len(bad)
        fails += bad
        worst = max((r.err_ratio for r in results), default=0.0)
        guards = "intact" if all(r.guard_ok for r in results) else "OVERWRITTEN"
        t.add_row(k.label, str(len(results)), str(len(results) - len(bad)), str(len(bad)),
                  f"{worst:.3f}", guards)
        report.append({"kernel": k.label, "cases": len(results), "failed": len(bad),
                       "max_err_over_bound": worst,
                       "failures": [{"case": r.case.label, "err_over_bound": r.err_ratio,
                                     "detail": r.detail} for r in bad]})
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        con = console()
        con.print(t)
        for r in fails:
            con.print(f"[red]FAIL[/red] {r.kernel} {r.case.label}: err/bound={r.err_ratio:.3g} {r.detail}")
        con.print("[green]all cases passed[/green]" if not failed else f"[red]{failed} case(s) failed[/red]")
    return 1 if failed else 0
