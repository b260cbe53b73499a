"""``microkernel`` command line: probe | list | validate | bench | sweep | asm | cross | port.

Each command that prints results takes ``--json``. Exit status: 0 on success, 1 when
a validation fails, 2 on bad usage or an unavailable ISA/tool.
"""
from __future__ import annotations

import argparse
import json
import re
import sys

from rich.console import Console
from rich.table import Table


def _console() -> Console:
    import shutil
    return Console(highlight=False, width=max(shutil.get_terminal_size((120, 24)).columns, 100))


def _csv_ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _csv(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


_BLOCKING_ITEM = re.compile(r"(kc|mc|nc)=\+?([0-9]+)", re.ASCII)


def _blocking_arg(text: str) -> dict[str, int]:
    """``"kc=384,mc=96"`` -> ``{"kc": 384, "mc": 96}`` (any of kc, mc, nc, each once)."""
    out = {}
    for part in _csv(text):
        item = _BLOCKING_ITEM.fullmatch(part.replace(" ", "").lower())
        if not item or item[1] in out:
            out = {}
            break
        out[item[1]] = int(item[2])
    if not out:
        raise argparse.ArgumentTypeError(
            f"expected kc=N,mc=N,nc=N (any of them, each once, in elements), got {text!r}")
    return out


# -- probe ------------------------------------------------------------------------------

def cmd_probe(args) -> int:
    from .blocking import model_blocking
    from .dispatch import default_tile, usable_isas
    from .probe import cli_probe, probe
    info = probe()
    spec = default_tile(usable_isas()[-1])
    nr = spec.nr_at(info.sve_vector_bits) if spec.is_vla else spec.nr
    blk = model_blocking(spec.mr, nr, info.caches)
    if args.json:
        d = info.to_json()
        d["usable_isas"] = list(usable_isas())
        d["default_kernel"] = spec.name
        d["blocking"] = {"mr": spec.mr, "nr": nr, "kc": blk.kc, "mc": blk.mc, "nc": blk.nc,
                         "why": list(blk.why)}
        print(json.dumps(d, indent=2))
        return 0
    rc = cli_probe(False)
    con = _console()
    con.print(f"\nusable ISAs (MICROKERNEL_ISA honoured): {', '.join(usable_isas())}")
    t = Table(title=f"blocking for the default kernel {spec.name} (Low et al. 2016 model)")
    for col in ("MR", "NR", "KC", "MC", "NC"):
        t.add_column(col, justify="right")
    t.add_row(*(str(x) for x in (spec.mr, nr, blk.kc, blk.mc, blk.nc)))
    con.print(t)
    for line in blk.why:
        con.print(f"  {line}")
    return rc


# -- list ---------------------------------------------------------------------------------

def cmd_list(args) -> int:
    from .dispatch import usable_isas
    from .registry import BUILTIN, DEFAULTS
    from .tile import register_budget
    usable = usable_isas()
    rows = []
    for s in BUILTIN:
        b = register_budget(s)
        rows.append({"name": s.name, "isa": s.isa, "mr": s.mr,
                     "nr": f"{s.nr}v" if s.is_vla else s.nr, "k_unroll": s.k_unroll,
                     "registers": f"{b.needed}/{b.available}", "runnable_here": s.isa in usable,
                     "default": DEFAULTS[s.isa] == s.name,
                     "source": f"c_src/ukernels/{s.file_stem}.c"})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    t = Table(title="built-in tiles (any <isa>_<MR>x<NR> name also works)")
    for col in rows[0]:
        t.add_column(col)
    for r in rows:
        t.add_row(*(str(v) for v in r.values()))
    _console().print(t)
    return 0


# -- validate -----------------------------------------------------------------------------

def cmd_validate(args) -> int:
    from .dispatch import get_kernel, kernels
    from .validate import run_catalogue
    names = args.kernel or kernels()
    if args.source is not None and len(args.kernel or ()) != 1:
        raise ValueError("--source replaces the micro-kernel of one tile: give exactly one --kernel")
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
        con = _console()
        con.print(t)
        for r in fails:
            con.print(f"[red]FAIL[/red] {r.kernel} {r.case.label}: err/bound={r.err_ratio:.3g} {r.detail}")
        con.print("[green]all cases passed[/green]" if not failed else f"[red]{failed} case(s) failed[/red]")
    return 1 if failed else 0


# -- commands from other modules ----------------------------------------------------------

def _delegate(module: str, add: str, run: str):
    def add_args(p):
        import importlib
        mod = importlib.import_module(f"microkernel.{module}")
        getattr(mod, add)(p)
        p.set_defaults(func=lambda a: getattr(mod, run)(a))
    return add_args


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; the module behind a delegated command (sweep, asm, cross, port) is
    imported only when ``command`` names it, so `microkernel probe` stays light."""
    parser = argparse.ArgumentParser(
        prog="microkernel",
        description="Prototype CPU SIMD GEMM micro-kernels, validate them, port the tile to CUDA.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("probe", help="what this CPU and OS can run, caches, blocking")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_probe)

    p = sub.add_parser("list", help="built-in tiles and whether they run here")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("validate", help="run the edge catalogue against numpy (float64)")
    p.add_argument("--kernel", action="append", help="tile name (repeatable); default: all runnable")
    p.add_argument("--quick", action="store_true", help="one case per remainder")
    p.add_argument("--source", help="C file replacing the generated micro-kernel of the one "
                   "--kernel (must define mk_ukernel_<name>; see c_src/mk_ukernel.h)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_validate)

    for name, module, add, run, help_ in (
            ("bench", "commands.bench", "add_arguments", "run",
             "FMA peak, micro-kernels in L1, gemm() against numpy and other peers"),
            ("sweep", "commands.sweep", "add_arguments", "run",
             "generate, compile, validate and rank tile shapes on real GEMM shapes"),
            ("compare", "commands.compare", "add_arguments", "run",
             "time tiles (and peers) against each other round by round"),
            ("asm", "inspect", "add_asm_arguments", "run_asm",
             "inner K loop disassembly, FMA/load/spill counts, llvm-mca cycles"),
            ("cross", "cross", "add_cross_arguments", "run_cross",
             "aarch64 NEON/SVE kernels under qemu at every vector length"),
            ("port", "gpu.port", "add_port_arguments", "run_port",
             "the numba CUDA kernel from the same tile, its resource report")):
        p = sub.add_parser(name, help=help_)
        if command != name:
            continue
        try:
            _delegate(module, add, run)(p)
        except ImportError as exc:
            msg = str(exc)
            p.set_defaults(func=lambda a, msg=msg, name=name: _missing(name, msg))
    return parser


def _missing(name: str, msg: str) -> int:
    print(f"microkernel {name}: unavailable here ({msg})", file=sys.stderr)
    return 2


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    from .build import BuildError
    from .commands.common import UsageError
    from .dispatch import IsaUnavailableError
    from .tile import TileError
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"microkernel {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (IsaUnavailableError, TileError, BuildError, ValueError, OSError) as exc:
        print(f"microkernel {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
