"""``microkernel port NAME``: the numba CUDA kernel planned from a CPU tile, its
resource report (estimate, and compiled where a GPU or NVVM + ptxas is there), the
split-K launch plans and, with ``--validate``, the float64 check (of the SIMT kernel,
or with ``--mma`` of the tensor-core one).

``microkernel port NAME [--json] [--validate] [--vector-bits B] [--threads T] [--bk K]
[--no-compile] [--warp auto|none|WMxWN] [--mma {f16,bf16,tf32} [--smem M] [--stages S]]
[--arch A|all]``: the plain port is :func:`microkernel.gpu.port.port`; ``--mma`` hands
over to :mod:`microkernel.gpu.mma_port`, ``--arch`` to :mod:`microkernel.gpu.port_targets`.

Exit status: 0, 1 when validation fails, 2 on a bad tile name or configuration, or
on a flag the chosen port would ignore (:func:`check_flags`: refused before any work).
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
    from .common import positive_int
    parser.add_argument("name", metavar="NAME",
                        help="CPU tile to port, e.g. avx512_8x16, avx2_6x16, sve_8x2v")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--validate", action="store_true",
                        help="run the kernel (the SIMT one, or with --mma the tensor-core "
                             "one) against a float64 numpy reference, on the GPU or in the "
                             "CUDA simulator (NUMBA_ENABLE_CUDASIM=1); not with --arch, "
                             "which models the port and runs nothing")
    parser.add_argument("--vector-bits", type=positive_int, default=None,
                        help=f"SVE vector length for sve_* tiles (default {SVE_BITS})")
    parser.add_argument("--threads", type=positive_int, default=None,
                        help="threads per block (default 256; with --mma 32 per warp, a "
                             "power of two of warps, default 128 or 256 by the warp tile; "
                             "with --arch lanes per block/workgroup, default 256)")
    parser.add_argument("--bk", type=positive_int, default=None,
                        help="k depth of a shared stage (default 8, else the first of 16, "
                             "4, 2, 1 that gives a valid block; with --mma 32, tf32 16, "
                             "halved when shared memory does not fit)")
    parser.add_argument("--no-compile", action="store_true",
                        help="estimate only: do not compile (no GPU / ptxas report)")
    parser.add_argument("--mma", choices=("f16", "bf16", "tf32"), default=None,
                        help="port to the tensor cores (mma.sync) instead: see gpu/mma_port.py")
    parser.add_argument("--smem", choices=("swizzle", "pad", "none"), default=None,
                        help="with --mma only: the shared-memory layout (default swizzle)")
    parser.add_argument("--stages", type=positive_int, default=None,
                        help="with --mma only: cp.async stages, at least 2 (default: 4, 3 "
                             "or 2, as many as fit 48 KB)")
    parser.add_argument("--arch", default=None, metavar="A",
                        help="model the port on target A (sm_80, sm_90, cdna2, cdna3, rdna3, "
                             "mali-valhall, adreno-7xx) or 'all' (a table across targets); "
                             "with --mma P its matrix instructions take P inputs: "
                             "see gpu/port_targets.py")
    parser.add_argument("--warp", default=None, metavar="auto|none|WMxWN",
                        help="SIMT warp tile: auto (default: the most nearly square one of "
                             "32 lanes), none (the original kernel's layout) or e.g. 32x64; "
                             "not with --mma, whose warp tile follows from the CPU tile")


def error(args, msg, **extra) -> int:
    """Report a failed port (bad tile name or configuration): JSON on stdout with
    ``--json``, else ``microkernel port: error: MSG`` on stderr. Returns 2."""
    if getattr(args, "json", False):
        print(json.dumps({"error": str(msg), **extra}))
    else:
        print(f"microkernel port: error: {msg}", file=sys.stderr)
    return 2


def _flags(names: list) -> str:
    """["bk", "warp"] -> "--bk and --warp"."""
    f = [f"--{n}" for n in names]
    return f[0] if len(f) == 1 else ", ".join(f[:-1]) + " and " + f[-1]


def check_flags(args) -> None:
    """Refuse, before any work (UsageError: exit 2), a flag the chosen port would
    ignore: ``--arch`` models the port (nothing runs, no kernel parameters), ``--mma``
    derives its warp tile from the CPU tile, ``--smem`` / ``--stages`` belong to the
    tensor-core kernel; and ``--validate`` where no GPU or simulator can run it."""
    from .common import UsageError
    given = [f for f in ("bk", "stages", "smem", "warp") if getattr(args, f, None) is not None]
    if getattr(args, "arch", None):
        if args.validate:
            raise UsageError(
                "--validate runs a kernel, and --arch only models the port on each target "
                "(nothing runs): validate the CUDA kernels with 'microkernel port NAME "
                "--validate' (SIMT) or 'microkernel port NAME --mma P --validate' "
                "(tensor cores)")
        if given:
            raise UsageError(f"{_flags(given)} {'sets' if len(given) == 1 else 'set'} up "
                             f"the kernel that 'port' or 'port --mma' builds; --arch models "
                             f"the port on each target from the CPU tile alone: drop "
                             f"{_flags(given)}, or --arch")
        return
    warp = getattr(args, "warp", None)
    if getattr(args, "mma", None):
        if warp is not None and warp.strip().lower() != "auto":
            raise UsageError("--warp sets the SIMT port's warp tile; with --mma the warp "
                             "tile follows from the CPU tile (MR*NR accumulators per lane): "
                             "drop --warp, or --mma for the SIMT port")
        t = args.threads
        if t is not None and (t % 32 or t > 1024 or (t // 32) & (t // 32 - 1)):
            raise UsageError(f"--threads with --mma: 32 per warp and a power of two of "
                             f"warps (32, 64, 128, 256, 512 or 1024), got {t}")
    else:
        extra = [f for f in ("smem", "stages") if getattr(args, f, None) is not None]
        if extra:
            raise UsageError(f"{_flags(extra)} {'sets' if len(extra) == 1 else 'set'} the "
                             f"tensor-core kernel's shared memory, not the SIMT port's: "
                             f"add --mma f16|bf16|tf32, or drop {_flags(extra)}")
    if args.validate:
        from ..gpu.kernel import simulator_active
        from ..gpu.port import _gpu_available
        if not simulator_active() and not _gpu_available():
            raise UsageError("--validate runs the kernel, and no CUDA GPU is usable here: "
                             "run it on a GPU, or in numba's CUDA simulator with "
                             "NUMBA_ENABLE_CUDASIM=1 in the environment")


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
        render_validation(con, report["validation"])


def run(args) -> int:
    """Run ``microkernel port`` from parsed arguments (see
    :func:`add_arguments`). Prints a rich table, or JSON with ``--json``.
    Returns 0, 1 when validation fails, 2 on a bad tile name or configuration
    (a flag the chosen port would ignore: UsageError, before any work)."""
    from ..tile import TileError
    try:
        check_flags(args)
    except ImportError as e:            # --validate without numba-cuda
        return error(args, e)
    if getattr(args, "arch", None):
        from ..gpu.port_targets import run_arch_port
        return run_arch_port(args)
    if getattr(args, "mma", None):
        from ..gpu.mma_port import run_mma_port
        return run_mma_port(args)
    try:
        report = port(args.name, vector_bits=args.vector_bits,
                      compile=False if getattr(args, "no_compile", False) else None,
                      validate_cases=args.validate, threads=args.threads or 256, bk=args.bk,
                      warp=parse_warp(getattr(args, "warp", None) or "auto"))
    except (TileError, ValueError, TypeError, ImportError) as e:
        return error(args, e)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        _render(report)
    if report["validation"] is not None and not all(r["ok"] for r in report["validation"]):
        return 1
    return 0


def render_validation(con, rows: list) -> None:
    """The validation table: one row per case of :func:`microkernel.gpu.port.validate`
    or :func:`microkernel.gpu.mma_port.validate_mma`."""
    from rich.table import Table
    vt = Table(title="validation (float64 reference)")
    for c in ("case", "M", "N", "K", "alpha", "beta", "max |err|", "bound", "ok"):
        vt.add_column(c, justify="right" if c not in ("case", "ok") else "left")
    for r in rows:
        vt.add_row(r["label"], str(r["m"]), str(r["n"]), str(r["k"]), f"{r['alpha']:g}",
                   f"{r['beta']:g}", f"{r['max_err']:.2e}", f"{r['max_bound']:.2e}",
                   "[green]ok[/green]" if r["ok"] else "[red]FAIL[/red]")
    con.print(vt)


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
