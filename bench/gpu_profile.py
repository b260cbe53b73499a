#!/usr/bin/env python3
"""Nsight Compute side by side: our SIMT kernel, Triton's and cuBLAS's on one shape.

Usage (on the device machine, from the repository root)::

    OUT=/path/to/out python3 bench/gpu_profile.py [--shape 1024x1024x1024]
        [--tile NAME[@S] ...] [--split S]

Each contender runs in its own process under ``ncu`` (``--profile-from-start off``:
the worker compiles, autotunes and warms up first, then profiles one call between
``cudaProfilerStart`` and ``cudaProfilerStop``; ``--clock-control none``, so the clocks
are those of the timings in ``bench/gpu_simt.py``). Contenders: ``auto`` (what
:func:`microkernel.gpu.gemm` launches by default), each ``--tile`` (a name of
``launch.AUTO_TILES`` or of ``gpu_simt.scan_extra()``, at split S, else ``--split``,
else the planner's split), the textbook Triton kernel of ``bench/gpu_simt.py`` and cuBLAS
(``cupy.matmul``, TF32 off).

Per kernel it reports the duration, the launch (grid, block, registers, shared
memory), achieved occupancy, issue-slot and FMA-pipe use, warp cycles per issued
instruction and the largest warp-stall reasons (``smsp__average_warps_issue_stalled_
<reason>_per_issue_active``: warps stalled for that reason per issued instruction,
the breakdown of Nsight Compute's WarpStateStats section; Nsight Compute Kernel
Profiling Guide, "Warp Scheduler" and "Warp Stall Reasons"). Writes
``$OUT/gpu_profile.json`` and ``$OUT/gpu_profile.md``.
"""
from __future__ import annotations

import argparse
import csv
import io
import os
import shutil
import subprocess
import sys

os.environ["CUPY_TF32"] = "0"                    # full fp32 cuBLAS
from _gpu_common import nvidia_smi, write_out  # noqa: E402

#: Nsight Compute sections collected (their metrics come back on the raw page).
SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "WarpStateStats", "SchedulerStats",
            "ComputeWorkloadAnalysis")
STALLS = r"regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
#: Raw metrics shown in the table (name in the report: metric).
SHOWN = {
    "duration ns": "gpu__time_duration.sum",
    "grid": "launch__grid_size",
    "block": "launch__block_size",
    "regs": "launch__registers_per_thread",
    "smem B": "launch__shared_mem_per_block_static",
    "occ. achieved %": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "SM busy %": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "issue active %": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "FMA pipe %": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "cycles/issue": "smsp__average_warp_latency_per_inst_issued.ratio",
}


def _contender_names(args) -> list:
    return ["auto", *args.tile, "Triton", "cuBLAS"]


def _tile_by_name(name: str):
    import gpu_simt
    from microkernel.gpu import launch
    for t in (*launch.AUTO_TILES, *gpu_simt.scan_extra()):
        if t.name == name:
            return t
    raise SystemExit(f"--tile {name}: not an AUTO tile nor a scan_extra() tile")


def worker(args, which: str) -> None:
    """Warm up ``which``, then run it once between cudaProfilerStart and Stop."""
    import cupy as cp
    import torch
    from numba import cuda
    m, n, k = args.m, args.n, args.k
    g = torch.Generator(device="cuda").manual_seed(1)
    A = torch.rand((m, k), device="cuda", generator=g) * 2 - 1
    B = torch.rand((k, n), device="cuda", generator=g) * 2 - 1
    C = torch.empty((m, n), device="cuda")
    if which == "Triton":
        import gpu_simt
        run, _ = gpu_simt.make_triton()
        call = lambda: run(A, B, C)  # noqa: E731
    elif which == "cuBLAS":
        cA, cB, cC = cp.asarray(A), cp.asarray(B), cp.asarray(C)
        call = lambda: cp.matmul(cA, cB, out=cC)  # noqa: E731
    else:
        from microkernel.gpu import front
        dA, dB, dC = cuda.as_cuda_array(A), cuda.as_cuda_array(B), cuda.as_cuda_array(C)
        name, _, split = which.partition("@")
        kw = {} if which == "auto" else {"tile": _tile_by_name(name),
                                         "split": int(split) if split else args.split}
        call = lambda: front.gemm(dA, dB, dC, **kw)  # noqa: E731
        call()
        print("plan:", front.gemm.last_plan.as_dict(), file=sys.stderr)
    for _ in range(5):
        call()
    torch.cuda.synchronize()
    cudart = torch.cuda.cudart()
    cudart.cudaProfilerStart()
    call()
    torch.cuda.synchronize()
    cudart.cudaProfilerStop()


def _raw_rows(text: str) -> list:
    """The raw page's CSV (a header row, a units row, one row per kernel) as dicts."""
    start = text.find('"ID"')
    if start < 0:
        return []
    rows = list(csv.reader(io.StringIO(text[start:])))
    head = rows[0]
    return [dict(zip(head, r)) for r in rows[2:] if len(r) == len(head)]


def _lean(row: dict) -> dict:
    """The raw row without its per-unit min/max/sum duplicates of each average."""
    return {k: v for k, v in row.items()
            if v and not any(f".{x}." in k or k.endswith(f".{x}") for x in ("min", "max", "sum"))
            or k.startswith(("gpu__time", "launch__"))}


def _num(v):
    try:
        return float(str(v).replace(",", ""))
    except ValueError:
        return v


def profile(args) -> dict:
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    if not os.path.exists(ncu):
        return {"error": "ncu not found"}
    out = {"shape": [args.m, args.n, args.k], "nvidia_smi": nvidia_smi(), "kernels": {}}
    sec = [x for s in SECTIONS for x in ("--section", s)]
    for which in _contender_names(args):
        cmd = [ncu, "--profile-from-start", "off", "--clock-control", "none", "--csv",
               "--page", "raw", "--print-units", "base", *sec, "--metrics", STALLS, sys.executable, __file__,
               "--worker", which, "--shape", f"{args.m}x{args.n}x{args.k}"]
        if args.split:
            cmd += ["--split", str(args.split)]
        try:
            pr = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
        except Exception as e:  # noqa: BLE001
            out["kernels"][which] = [{"error": f"{type(e).__name__}: {e}"}]
            continue
        rows = _raw_rows(pr.stdout)
        plan = [ln for ln in pr.stderr.splitlines() if ln.startswith("plan:")]
        ks = []
        for r in rows:
            stalls = {k.split("issue_stalled_")[1].split("_per_issue")[0]: _num(v)
                      for k, v in r.items() if "issue_stalled_" in k and "_per_issue_active" in k}
            stalls = dict(sorted(((k, v) for k, v in stalls.items() if isinstance(v, float)),
                                 key=lambda kv: -kv[1])[:8])
            ks.append({"name": r.get("Kernel Name", "?")[:90],
                       **{label: _num(r.get(metric, "")) for label, metric in SHOWN.items()},
                       "stalls": stalls, "raw": _lean(r)})
        out["kernels"][which] = ks or [{"error": (pr.stderr + pr.stdout)[-1500:]}]
        if plan:
            out["kernels"][which][0]["plan"] = plan[0][6:]
        print(which, [(kd.get("name"), kd.get("duration ns")) for kd in out["kernels"][which]],
              flush=True)
    return out


def render(r: dict) -> str:
    L = [f"# Nsight Compute: {'x'.join(map(str, r.get('shape', [])))}", "",
         f"- `{r.get('nvidia_smi')}`; clocks not locked (`--clock-control none`); one call "
         "per contender after warm-up", ""]
    cols = list(SHOWN)
    L.append("| contender | kernel | " + " | ".join(cols) + " | top stalls (warps per issue) |")
    L.append("|---|---|" + "---:|" * len(cols) + "---|")
    for which, ks in r.get("kernels", {}).items():
        for kd in ks:
            if "error" in kd:
                L.append(f"| {which} | error: {str(kd['error'])[-200:]!r} |")
                continue
            st = ", ".join(f"{k} {v:.2f}" for k, v in list(kd["stalls"].items())[:6])
            vals = " | ".join(f"{kd[c]:.4g}" if isinstance(kd[c], float) else str(kd[c])
                              for c in cols)
            L.append(f"| {which} | `{kd['name'][:50]}` | {vals} | {st} |")
    plans = [(w, ks[0]["plan"]) for w, ks in r.get("kernels", {}).items() if ks and "plan" in ks[0]]
    L += ["", *[f"- {w}: {p}" for w, p in plans]]
    return "\n".join(L) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", default="1024x1024x1024")
    ap.add_argument("--tile", action="append", default=[])
    ap.add_argument("--split", type=int, default=None)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.m, args.n, args.k = (int(x) for x in args.shape.split("x"))
    if args.worker:
        worker(args, args.worker)
        return 0
    r = profile(args)
    write_out("gpu_profile", r, render(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
