"""``microkernel port NAME``: the numba CUDA kernel planned from a CPU tile, its
resource report (estimate, and compiled where a GPU or NVVM + ptxas is there), the
split-K launch plans and, with ``--validate``, the float64 check.

``microkernel port NAME [--json] [--validate] [--vector-bits B] [--threads T] [--bk K]
[--no-compile] [--warp auto|none|WMxWN] [--mma {f16,bf16,tf32} [--smem M] [--stages S]]
[--arch A|all]``: the plain port is :func:`microkernel.gpu.port.port`; ``--mma`` hands
over to :mod:`microkernel.gpu.mma_port`, ``--arch`` to :mod:`microkernel.gpu.port_targets`.

Exit status: 0, 1 when validation fails, 2 on a bad tile name or configuration.
"""
from __future__ import annotations

import json
import sys

from ..gpu.port import SVE_BITS, parse_warp, port

__all__ = ["add_arguments", "run"]


def add_arguments(parser) -> None:
    """Arguments of ``microkernel port``: NAME [--json] [--validate] [--vector-bits B]
    [--threads T] [--bk K] [--no-compile] [--warp auto|none|WMxWN]
    [--mma {f16,bf16,tf32} [--smem M] [--stages S]] [--arch A|all]."""
    parser.add_argument("name", metavar="NAME",
                        help="CPU tile to port, e.g. avx512_8x16, avx2_6x16, sve_8x2v")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--validate", action="store_true",
                        help="run the kernel against a float64 numpy reference (on the "
                             "GPU, or the CUDA simulator when NUMBA_ENABLE_CUDASIM=1)")
    parser.add_argument("--vector-bits", type=int, default=None,
                        help=f"SVE vector length for sve_* tiles (default {SVE_BITS})")
    parser.add_argument("--threads", type=int, default=256, help="threads per block")
    parser.add_argument("--bk", type=int, default=None, help="k depth of a shared stage")
    parser.add_argument("--no-compile", action="store_true",
                        help="estimate only: do not compile (no GPU / ptxas report)")
    parser.add_argument("--mma", choices=("f16", "bf16", "tf32"), default=None,
                        help="port to the tensor cores (mma.sync) instead: see gpu/mma_port.py")
    parser.add_argument("--smem", choices=("swizzle", "pad", "none"), default=None,
                        help="with --mma: the shared-memory layout (default swizzle)")
    parser.add_argument("--stages", type=int, default=None, help="with --mma: cp.async stages")
    parser.add_argument("--arch", default=None, metavar="A",
                        help="model the port on target A (sm_80, sm_90, cdna2, cdna3, rdna3, "
                             "mali-valhall, adreno-7xx) or 'all' (a table across targets); "
                             "with --mma P its matrix instructions take P inputs: "
                             "see gpu/port_targets.py")
    parser.add_argument("--warp", default="auto", metavar="auto|none|WMxWN",
                        help="warp tile: auto (default: the most nearly square one of 32 "
                             "lanes), none (the original kernel's layout) or e.g. 32x64")


def _render(report: dict) -> None:
    from .common import console
    from rich.table import Table
    con = console()
    p = report["plan"]
    t = p["tile"]
    con.print(f"[bold]port {p['spec']}[/bold] -> [bold]{t['name']}[/bold]")
    for note in p["notes"]:
        con.print(f"  {note}")
    tab = Table(title="resources per kernel (sm_90)")
    tab.add_column("")
    tab.add_column("estimate (before compiling)", justify="right")
    comp = report.get("compiled")
    if comp:
        tab.add_column(f"compiled ({comp.get('source', '')})", justify="right")
    eo = p["est_occupancy"]

    def row(label, est, key=None, fmt=str):
        vals = [label, fmt(est)]
        if comp:
            vals.append(fmt(comp.get(key)) if key and comp.get(key) is not None else "")
        tab.add_row(*vals)
    row("thread tile (TM x TN)", f"{p['thread_tile'][0]}x{p['thread_tile'][1]}")
    if t.get("warp_tile"):
        row("warp tile (WM x WN, lanes)", f"{t['wm']}x{t['wn']} ({t['lanes'][0]}x"
            f"{t['lanes'][1]}), {t['warps'][0]}x{t['warps'][1]} warps")
    else:
        row("warp tile", "none (original layout)")
    row("block tile (BM x BN x BK)", f"{t['bm']}x{t['bn']}x{t['bk']}")
    row("threads per block", t["threads"])
    row("registers per thread", p["est_regs"], "regs")
    row("local memory per thread (B)", 0, "local_bytes")
    row("shared memory per block (B)", t["smem_bytes"], "shared_bytes")
    co = comp["occupancy"] if comp else None
    vals = ["blocks / warps per SM", f"{eo['blocks_per_sm']} / {eo['warps_per_sm']}"]
    if comp:
        vals.append(f"{co['blocks_per_sm']} / {co['warps_per_sm']}")
    tab.add_row(*vals)
    vals = ["occupancy (limiter)", f"{eo['occupancy']:.0%} ({eo['limiter']})"]
    if comp:
        vals.append(f"{co['occupancy']:.0%} ({co['limiter']})")
    tab.add_row(*vals)
    con.print(tab)
    if not comp:
        con.print("  (estimate only: "
                  + ("--no-compile)" if report.get("compile") == "skipped"
                     else "no GPU, and no NVVM + ptxas for an offline compile)"))
    if report.get("device"):
        con.print(f"  device: {report['device']['name']} (cc {report['device']['cc']})")
    sc = (comp or {}).get("scalar")
    if sc:
        con.print(f"  scalar-load variant (K or N not a multiple of 4, or unaligned "
                  f"operands): {sc['regs']} registers, {sc.get('local_bytes', 0)} B local")
    for w in report["warnings"]:
        con.print(f"[bold red]warning:[/bold red] {w}")
    if report.get("launch"):
        _render_plans(con, report["launch"], f"split-K with {t['name']} (132 SMs, sm_90 "
                     f"model)", show_tile=False)
    if report.get("validation") is not None:
        vt = Table(title="validation (float64 reference)")
        for c in ("case", "M", "N", "K", "alpha", "beta", "max |err|", "bound", "ok"):
            vt.add_column(c, justify="right" if c not in ("case", "ok") else "left")
        for r in report["validation"]:
            vt.add_row(r["label"], str(r["m"]), str(r["n"]), str(r["k"]), f"{r['alpha']:g}",
                       f"{r['beta']:g}", f"{r['max_err']:.2e}", f"{r['max_bound']:.2e}",
                       "[green]ok[/green]" if r["ok"] else "[red]FAIL[/red]")
        con.print(vt)


def run(args) -> int:
    """Run ``microkernel port`` from parsed arguments (see
    :func:`add_arguments`). Prints a rich table, or JSON with ``--json``.
    Returns 0, 1 when validation fails, 2 on a bad tile name or configuration."""
    from ..tile import TileError
    if getattr(args, "arch", None):
        from ..gpu.port_targets import run_arch_port
        return run_arch_port(args)
    if getattr(args, "mma", None):
        from ..gpu.mma_port import run_mma_port
        return run_mma_port(args)
    try:
        report = port(args.name, vector_bits=args.vector_bits,
                      compile=False if getattr(args, "no_compile", False) else None,
                      validate_cases=args.validate, threads=args.threads, bk=args.bk,
                      warp=parse_warp(getattr(args, "warp", "auto") or "auto"))
    except (TileError, ValueError, TypeError) as e:
        if args.json:
            print(json.dumps({"error": str(e)}))
        else:
            print(f"microkernel port: error: {e}", file=sys.stderr)
        return 2
    except ImportError as e:
        print(f"microkernel port: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        _render(report)
    if report["validation"] is not None and not all(r["ok"] for r in report["validation"]):
        return 1
    return 0


def _render_plans(con, plans: list, title: str, show_tile: bool = True) -> None:
    """A rich table of :meth:`microkernel.gpu.launch.LaunchPlan.as_dict` rows;
    ``show_tile=False`` when every row has the same tile."""
    from rich.table import Table
    lt = Table(title=title)
    cols = ["m x n x k"] + (["tile"] if show_tile else []) + [
        "split-K", "grid", "blocks/SM", "waves", "predicted us"]
    for c in cols:
        lt.add_column(c, justify="left" if c == "tile" else "right", no_wrap=True)
    for lp in plans:
        g = lp["grid"]
        lt.add_row(f"{lp['m']}x{lp['n']}x{lp['k']}", *([lp["tile"]] if show_tile else []),
                   str(lp["split"]), f"{g[0]}x{g[1]}x{g[2]}", str(lp["blocks_per_sm"]),
                   f"{lp['waves']:.2f}", f"{lp['predicted_us']:.1f}")
    con.print(lt)
