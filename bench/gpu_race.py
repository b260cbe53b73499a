#!/usr/bin/env python3
"""A short race on the GPU: a few tiles against the planner, cuBLAS and Triton.

Usage (on the device machine, from the repository root)::

    OUT=/path/to/out python3 bench/gpu_race.py --shape 1024x1024x1024 \\
        --tile gpu_8x4_b64x64x16_w32x32_s4_mb2_cp16@1 [--tile NAME@S ...] [--rounds 9] \\
        [--baseline DIR ...]

For each shape: every contender's C is checked against the float64 product with the
bound of ``bench/gpu_simt.py`` (a contender outside it is reported and not timed);
then all of them run in interleaved rounds, the order shuffled each round, each
sample a batch of back-to-back calls between CUDA events queued behind a spin kernel
(``gpu_simt.Timer``), as in ``gpu_simt.py``'s table. Reported: median TFLOP/s and the
per-round paired ratio against cuBLAS and against Triton with a bootstrap interval
(``microkernel.stats``). Tiles are named as in ``gpu_profile.py`` (``NAME@S``: an
AUTO tile or a ``gpu_simt.scan_extra()`` tile at split S). For a quick answer to one
question in far less time than ``gpu_simt.py`` takes; writes ``$OUT/gpu_race.json``
and ``$OUT/gpu_race.md``.

``--baseline DIR`` (repeatable): DIR holds the ``microkernel`` package of another
commit (``git archive <commit> microkernel | tar -x -C DIR``); it is imported under a
name of its own and its planner's plan races as the contender ``baseline:DIR``, so that
a change to the kernel is timed against the code before it in the same rounds.
"""
from __future__ import annotations

import argparse
import statistics
import sys

import gpu_simt  # noqa: F401  (sets CUPY_TF32=0 and the numba environment first)
from _gpu_common import bare_package, write_out
from gpu_profile import _tile_by_name
from gpu_simt import Timer, interleaved, make_triton, reference_and_bound


def baseline_gemm(path: str, name: str):
    """``front.gemm`` of the ``microkernel`` package under ``path``, imported as the
    bare package ``name`` (its ``__init__`` bypassed, as _gpu_common does)."""
    import importlib
    import pathlib
    root = pathlib.Path(path, "microkernel")
    if not (root / "gpu" / "front.py").is_file():
        raise SystemExit(f"--baseline {path}: no microkernel/gpu/front.py there")
    bare_package(name, root)
    return importlib.import_module(f"{name}.gpu.front").gemm


def race(shape, tiles, rounds: int, baselines=None) -> dict:
    import cupy as cp
    import numpy as np
    import torch
    from numba import cuda
    from microkernel import stats
    from microkernel.gpu import front
    m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(m + 2 * n + 3 * k)
    A = torch.rand((m, k), device="cuda", generator=g) * 2 - 1
    B = torch.rand((k, n), device="cuda", generator=g) * 2 - 1
    C = torch.empty((m, n), device="cuda")
    ref, bound = reference_and_bound(A, B)
    dA, dB, dC = cuda.as_cuda_array(A), cuda.as_cuda_array(B), cuda.as_cuda_array(C)
    cA, cB, cC = cp.asarray(A), cp.asarray(B), cp.asarray(C)
    trun, _ = make_triton()
    calls = {"auto": lambda: front.gemm(dA, dB, dC),
             "cuBLAS": lambda: cp.matmul(cA, cB, out=cC),
             "Triton": lambda: trun(A, B, C)}
    for nm, fn in (baselines or {}).items():
        calls[nm] = lambda fn=fn: fn(dA, dB, dC)
    for spec in tiles:
        name, _, split = spec.partition("@")
        t = _tile_by_name(name)
        calls[spec] = (lambda t=t, s=int(split) if split else None:
                       front.gemm(dA, dB, dC, tile=t, split=s))
    out = {"shape": [m, n, k], "valid": {}, "plan": None}
    ok = {}
    for nm, fn in calls.items():
        C.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        err = (C.double() - ref).abs()
        good = bool(torch.isfinite(C).all()) and bool((err <= bound).all())
        out["valid"][nm] = {"ok": good, "max_err": float(err.max())}
        if nm == "auto":
            out["plan"] = front.gemm.last_plan.as_dict()
        if good:
            ok[nm] = fn
    times = interleaved(Timer(), ok, rounds, seed=m + n + k)
    flop = 2.0 * m * n * k
    out["tflops"] = {nm: flop / statistics.median(v) / 1e12 for nm, v in times.items()}
    out["us"] = {nm: 1e6 * statistics.median(v) for nm, v in times.items()}
    for ref_nm in ("cuBLAS", "Triton"):
        if ref_nm in times:
            r = np.array(times[ref_nm])[None, :]
            out[f"vs_{ref_nm}"] = {nm: stats.bootstrap(stats.paired_ratios(
                r, np.array(v)[None, :])).as_dict() for nm, v in times.items()}
    out["times_s"] = times
    return out


def render(rows: list) -> str:
    L = ["# GPU race (bench/gpu_race.py)", ""]
    for r in rows:
        L += [f"## {'x'.join(map(str, r['shape']))}", "",
              f"planner: {r['plan']['tile']} split {r['plan']['split']}", "",
              "| contender | us | TFLOP/s | vs cuBLAS | vs Triton | valid (max err) |",
              "|---|---:|---:|---|---|---|"]
        for nm, v in r["valid"].items():
            def iv(key):
                d = r.get(key, {}).get(nm)
                return f"{d['point']:.3f} [{d['lo']:.3f}, {d['hi']:.3f}]" if d else "-"
            L.append(f"| {nm} | {r['us'].get(nm, float('nan')):.1f} | "
                     f"{r['tflops'].get(nm, float('nan')):.2f} | {iv('vs_cuBLAS')} | "
                     f"{iv('vs_Triton')} | {v['ok']} ({v['max_err']:.2g}) |")
        L.append("")
    L.append("Ratios are of speed (time of the reference / time of the contender), per "
             "round, median with a 95% bootstrap interval.")
    return "\n".join(L) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", action="append", default=[])
    ap.add_argument("--tile", action="append", default=[])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--baseline", metavar="DIR", action="append", default=[],
                    help="race the planner of the microkernel package in DIR too")
    args = ap.parse_args(argv)
    base = {f"baseline:{d}": baseline_gemm(d, f"mk_baseline{i}")
            for i, d in enumerate(args.baseline)}
    shapes = [tuple(int(x) for x in s.split("x")) for s in (args.shape or ["1024x1024x1024"])]
    rows = [race(sh, args.tile, args.rounds, base) for sh in shapes]
    write_out("gpu_race", rows, render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
