"""``microkernel cross``: arguments, the table and JSON of :mod:`microkernel.cross`.

Exit status: 0 when every emulated run passes, 1 on a failure, 2 when the tools are
missing, the harness does not build, or an argument is bad.
"""
from __future__ import annotations

import argparse
import json
import sys

from ..cross import (CUBES, DEFAULT_KERNELS, DEFAULT_VLS, NEON_CPU, REFUSAL_CPUS, CrossError,
                     CrossReport, CrossToolsMissing, KernelRun, check_specs, cross_validate)
from ..tile import TileError
from .common import Progress, positive_float, positive_int

__all__ = ["add_arguments", "run", "main"]


def nonneg_int(text: str) -> int:
    """argparse type: an integer >= 0 (numpy's generator seeds)."""
    try:
        v = int(text)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return v


def _int_list(text: str) -> tuple[int, ...]:
    """argparse type: SVE vector lengths in bits, ``128,256``."""
    try:
        vals = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    if not vals:
        raise argparse.ArgumentTypeError(f"expected at least one vector length, got {text!r}")
    for v in vals:
        if v % 128 or not 128 <= v <= 2048:
            raise argparse.ArgumentTypeError(
                f"SVE vector length {v}: bits, a multiple of 128 in 128..2048")
    return vals


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Options of ``microkernel cross``."""
    parser.add_argument("--vl", type=_int_list, default=DEFAULT_VLS, metavar="BITS,...",
                        help="SVE and SME vector lengths in bits (default: "
                             f"{','.join(map(str, DEFAULT_VLS))}; qemu gets them in bytes; "
                             "SME runs at the powers of two only)")
    parser.add_argument("--neon-cpu", default=NEON_CPU, metavar="CPU",
                        help=f"qemu -cpu of the NEON-only run (default {NEON_CPU}; "
                             f"'none' skips it)")
    parser.add_argument("--no-refusal-cpus", action="store_true",
                        help="skip the CPUs that lack the typed extensions ("
                             + ", ".join(f"{c.label}={c.cpu}" for c in REFUSAL_CPUS) + ")")
    parser.add_argument("--kernels", default=",".join(DEFAULT_KERNELS), metavar="NAME,...",
                        help="aarch64 tiles to check, built-in or any legal name such as "
                             "sve_4x3v, neon_4x16, neondot_s8s8_4x8 or sme_1x4v (default: "
                             "the built-in aarch64 tiles)")
    parser.add_argument("--quick", action="store_true",
                        help="reduced catalogue: one case per M/N remainder, no 'medium'")
    parser.add_argument("--jobs", type=positive_int, default=None,
                        help="qemu processes at a time (default: CPUs, at most one per config)")
    parser.add_argument("--seed", type=nonneg_int, default=0, help="operand seed (>= 0)")
    parser.add_argument("--timeout", type=positive_float, default=600.0,
                        help="seconds per emulated run (default 600)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def _cell(k: KernelRun | None) -> str:
    if k is None:
        return "-"
    if k.unproven:
        return f"[yellow]unproven {k.unproven}[/]"
    if k.cases == 0 and k.refused:
        return f"refused {k.refused}" if not k.failures else "[red]FAIL[/]"
    cell = f"{k.passed}/{k.cases}"
    return cell if not k.failures else f"[red]{cell}[/]"


def _tile_cell(k: KernelRun | None, sme: bool) -> str:
    if k is None or k.nr is None:
        return "-"
    return f"{k.mr}x{k.nr}" if sme else str(k.nr)


def _print_table(rep: CrossReport) -> None:
    """One column per emulated CPU: the VL asked for and the VL the SVE code saw,
    the probe's choice, then cases passed/executed per kernel."""
    from rich.table import Table
    from rich.text import Text
    from .common import console as common_console
    t = Table(title="microkernel cross: aarch64 kernels under qemu (correctness only)")
    names = list(dict.fromkeys(k for r in rep.runs for k in r.kernels))
    t.add_column("", no_wrap=True)
    for r in rep.runs:
        t.add_column(r.label, justify="right", no_wrap=True)
    t.add_row("requested VL", *[str(r.requested_vl_bits or "-") for r in rep.runs])
    t.add_row("observed VL", *[str(r.observed_vl_bits or "none") for r in rep.runs])
    t.add_row("requested SVL", *[str(r.requested_svl_bits or "-") for r in rep.runs])
    t.add_row("observed SVL", *[str(r.observed_svl_bits or "none") for r in rep.runs])
    t.add_row("probe chose", *[r.chosen_isa or "?" for r in rep.runs])
    for name in names:
        t.add_row(name, *[_cell(r.kernels.get(name)) for r in rep.runs])
    isa = {n: k.isa for r in rep.runs for n, k in r.kernels.items()}
    for name in names:
        if isa[name] in ("sve", "svei8mm", "svebf16", "sme"):
            sme = isa[name] == "sme"
            t.add_row(f"{name} {'MRxNR' if sme else 'NR'}",
                      *[_tile_cell(r.kernels.get(name), sme) for r in rep.runs])
    t.add_row("status", *["[green]ok[/]" if r.ok else "[red]FAIL[/]" for r in rep.runs])
    # as wide as the table (a column per emulated CPU): cut cells would hide the counts
    need = sum(3 + max(len(Text.from_markup(str(c)).plain) for c in [col.header, *col.cells])
               for col in t.columns) + 1
    console = common_console(width=need)
    console.print(t)
    console.print("VL in bits, observed = svcntw()*32 inside SVE code; SVL = the streaming "
                  "VL, RDSVL*8 inside SME code; cells: cases passed/executed (edge catalogue + "
                  f"cubes M=N=K in {{{', '.join(map(str, CUBES))}}}, in the tile's types: "
                  "integers bit-exact, fp16/bf16 within the bound on the rounded inputs); "
                  "refused: never executed, the probe did not clear the ISA or the feature "
                  "its types need; unproven: executed, but the emulator's instruction is "
                  "wrong", highlight=False)
    for name, v in rep.identity.items():
        verdict = ("[green]identical[/]" if v["identical"] else
                   "one length: nothing to compare" if v["identical"] is None else
                   f"[red]differ: {', '.join(v['differ'][:5])}[/]")
        console.print(f"{name}: C of its {v['cases']} same_* cases at "
                      f"{', '.join(v['lengths'])}: {verdict}", highlight=False)
    for d in rep.emulator_defects:
        console.print(f"[yellow]emulator: {d}[/]", highlight=False)
    console.print("qemu -cpu: " + "; ".join(f"{r.label}={r.cpu}" for r in rep.runs),
                  highlight=False)
    for r in rep.runs:
        for e in r.errors:
            console.print(f"[red]{r.label}: {e}[/]", highlight=False)
        for k in r.kernels.values():
            for f in k.failures[:10]:
                console.print(f"[red]{r.label} {k.kernel} {f['case']}: {f.get('detail', '')}[/]",
                              highlight=False)
            if len(k.failures) > 10:
                console.print(f"[red]{r.label} {k.kernel}: {len(k.failures) - 10} more failures[/]")
    forced = [(r.label, isa_, msg) for r in rep.runs for isa_, msg in r.forced_errors.items()]
    if forced:
        console.print("MICROKERNEL_ISA forced to an ISA the emulated CPU lacks: what the program "
                      "said (a clear refusal before anything runs is the pass; `status` above "
                      "counts it):", highlight=False)
    for label, isa_, msg in forced:
        console.print(f"  {label}, {isa_}: {msg.removeprefix('error: ')}", highlight=False)
    console.print("[green]PASS[/]" if rep.ok else "[red]FAIL[/]")


def run(args: argparse.Namespace) -> int:
    """``microkernel cross``: 0 when every run passes, 1 on a failure, 2 when the
    tools are missing or the harness does not build."""
    neon_cpu = None if str(args.neon_cpu).lower() in ("", "none", "off") else args.neon_cpu
    try:
        specs = check_specs([s.strip() for s in args.kernels.split(",") if s.strip()])
        sme = [sp.name for sp in specs if sp.isa == "sme"]
        if sme and not any(v & (v - 1) == 0 for v in args.vl):
            raise ValueError(f"--vl {','.join(map(str, args.vl))}: SME runs at powers of two "
                             f"only, so {', '.join(sme)} would run nowhere; add one (e.g. 512)")
        with Progress() as progress:
            rep = cross_validate(specs, args.vl, neon_cpu,
                                 refusal=not getattr(args, "no_refusal_cpus", False),
                                 quick=args.quick, jobs=args.jobs, seed=args.seed,
                                 timeout=args.timeout, progress=progress)
    except (CrossToolsMissing, CrossError, TileError, ValueError) as exc:
        if getattr(args, "json", False):
            print(json.dumps({"ok": False, "error": str(exc)}))
        else:
            print(f"microkernel cross: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rep.to_dict(), indent=2))
    else:
        _print_table(rep)
    return 0 if rep.ok else 1


def main(argv=None) -> int:
    """``python -m microkernel.commands.cross``: the command alone."""
    parser = add_arguments(argparse.ArgumentParser(
        prog="microkernel cross", description=(__doc__ or "").split("\n\n")[0]))
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
