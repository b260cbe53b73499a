#!/usr/bin/env python3
"""The GPU port on an NVIDIA H200: build, validate and time every kernel in one run.

Usage (on the device machine, from the repository root)::

    CUPY_TF32=0 python3 bench/gpu_h200.py [--size 4096] [--repeats 20] [--out DIR]
                                          [--quick] [--tests]

What it does, in order:

1. Environment: GPU, compute capability, SM count, versions; cuBLAS in full fp32
   (``CUPY_TF32`` forced to 0 before CuPy loads: CuPy uses TF32 tensor cores for
   float32 matmul only when ``CUPY_TF32=1``).
2. Kernels: the port of every built-in CPU tile (``microkernel.gpu.port.plan``)
   plus a small sweep of GPU tile shapes and the ablations of the levers
   (register pipelining, signed 64-bit indices, contiguous thread tile, one
   shared stage, BK).
3. For each kernel: compile (numba), the compiled resources from numba's
   dispatcher (``get_regs_per_thread``, ``get_local_mem_per_thread`` - spills -,
   ``get_shared_mem_per_block``), the occupancy from the sm_90 model
   (``microkernel.gpu.occupancy``) next to the driver's
   (cuOccupancyMaxActiveBlocksPerMultiprocessor), validation on the edge and
   BLAS-semantics catalogue (``microkernel.gpu.port.VALIDATION_CASES``), then
   SIZE^3 fp32: every element checked against a float64 reference (cuBLAS dgemm
   through CuPy) with ``|C - C_ref| <= 2 (K+2) u (|A||B|)``, u = 2**-24, and timed
   with CUDA events after warm-up: median (and min, max) of ``--repeats`` runs,
   TFLOP/s = 2*M*N*K / time, % of cuBLAS (``cupy.matmul``, fp32) measured in the
   same run (before and after the kernels: the spread of the two is the noise).
4. ``--tests``: ``tests/test_gpu_sim.py`` on the real GPU (NUMBA_ENABLE_CUDASIM=0),
   the same tests CI runs in the simulator.
5. Writes ``h200_gpu.json`` and ``h200_gpu.md`` to ``--out`` (default
   bench/results), and prints the table last.

numba-cuda 0.30.4 dies at its first compile under numpy >= 2.5 (``np.row_stack``
was removed); this script (and microkernel.gpu.kernel) aliases
``np.row_stack = np.vstack`` before numba.cuda is imported, and records that it did.
Only ``microkernel.tile`` and ``microkernel.gpu`` are imported (the package's
``__init__`` is bypassed, so no cffi is needed on the GPU machine).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time
import traceback

os.environ["CUPY_TF32"] = "0"                 # full fp32 cuBLAS

# numba env, np.row_stack shim, microkernel without cffi: before numba or microkernel
from _gpu_common import ROOT, ROW_STACK_SHIM, nvidia_smi  # noqa: E402

import numpy as np  # noqa: E402

from microkernel.registry import BUILTIN as _ALL_TILES  # noqa: E402
BUILTIN_TILES = [s for s in _ALL_TILES if s.types == "f32"]
from microkernel.gpu import kernel as gk  # noqa: E402
from microkernel.gpu import occupancy as occ  # noqa: E402
from microkernel.gpu import port as gp  # noqa: E402
from microkernel.gpu.kernel import GpuTile  # noqa: E402

#: The sweep of GPU tile shapes and the ablations (label, tile).
SWEEP = [
    ("sweep", GpuTile(8, 8, 128, 128, 16, pipeline=True, min_blocks=2)),
    ("sweep", GpuTile(8, 8, 128, 256, 8, pipeline=True)),      # 512 threads: <= 128 regs
    ("sweep", GpuTile(16, 8, 256, 128, 8, pipeline=True)),
    ("sweep", GpuTile(8, 16, 128, 128, 8, pipeline=True)),     # 128 threads
    ("sweep", GpuTile(4, 8, 64, 128, 8, pipeline=True, min_blocks=3)),
    ("ablation: no register pipeline", GpuTile(8, 16, 128, 256, 8)),
    ("ablation: no register pipeline", GpuTile(16, 8, 256, 128, 8)),
    ("ablation: no register pipeline", GpuTile(8, 8, 128, 128, 8)),
    ("ablation: no register pipeline", GpuTile(8, 8, 128, 256, 8)),
    ("ablation: no register pipeline", GpuTile(6, 16, 192, 128, 8)),
    ("ablation: no register pipeline", GpuTile(8, 12, 128, 192, 8)),
    ("ablation: pipeline without the register cap", GpuTile(8, 8, 128, 128, 8, pipeline=True)),
    ("ablation: pipeline on a 4x4 tile", GpuTile(4, 4, 64, 64, 8, pipeline=True)),
    ("ablation: signed int64 indices", GpuTile(8, 16, 128, 256, 8, index="i64", pipeline=True)),
    ("ablation: contiguous thread tile",
     GpuTile(8, 16, 128, 256, 8, layout="contiguous", pipeline=True)),
    ("ablation: one shared stage", GpuTile(8, 16, 128, 256, 8, stages=1, pipeline=True)),
    ("ablation: i64 + contiguous + 1 stage, no pipeline (plain)",
     GpuTile(8, 8, 128, 128, 8, layout="contiguous", stages=1, index="i64")),
]
QUICK = [("sweep", GpuTile(8, 8, 128, 128, 8, pipeline=True)),
         ("ablation: no register pipeline", GpuTile(8, 8, 128, 128, 8))]


def log(*a):
    print(*a, flush=True)


def versions() -> dict:
    out = {"python": platform.python_version(), "numpy": np.__version__,
           "row_stack_shim": ROW_STACK_SHIM}
    for mod in ("numba", "numba_cuda", "cupy", "cuda.bindings"):
        try:
            m = __import__(mod, fromlist=["__version__"])
            out[mod] = getattr(m, "__version__", "?")
        except Exception as e:  # noqa: BLE001
            out[mod] = f"missing ({type(e).__name__})"
    return out


def event_times(fn, record, warmup: int, repeats: int) -> list:
    """Run fn warmup times, then ``repeats`` times between back-to-back events
    (``record()`` returns a recorded event; the queue stays ahead of the GPU, so
    each interval is one run). Returns the per-run times in ms."""
    for _ in range(warmup):
        fn()
    evs = [record()]
    for _ in range(repeats):
        fn()
        evs.append(record())
    evs[-1].synchronize()
    return evs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--quick", action="store_true", help="two kernels (smoke test)")
    ap.add_argument("--tests", action="store_true",
                    help="also run tests/test_gpu_sim.py on the real GPU")
    args = ap.parse_args(argv)
    outdir = pathlib.Path(args.out)
    outdir.mkdir(parents=True, exist_ok=True)

    import cupy as cp
    from numba import cuda
    t_start = time.time()
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    sms = int(dev.MULTIPROCESSOR_COUNT)
    env = {"device": name, "cc": list(dev.compute_capability), "sm_count": sms,
           "versions": versions(), "CUPY_TF32": os.environ.get("CUPY_TF32"),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    env["driver"] = nvidia_smi()
    log("env:", json.dumps(env))
    limits = occ.SmLimits(name="sm_%d%d" % dev.compute_capability, sm_count=sms)

    # -- kernels: the ports of the built-in tiles, then the sweep --------------------
    entries, seen = [], {}
    for spec in BUILTIN_TILES:
        if args.quick and spec.name != "avx512_8x16":
            continue
        p = gp.plan(spec)
        entries.append({"label": f"port of {spec.name}", "tile": p.tile, "plan": p.as_dict()})
    for label, t in (QUICK if args.quick else SWEEP):
        entries.append({"label": label, "tile": t, "plan": None})
    for e in entries:                          # one row per distinct kernel
        seen.setdefault(e["tile"], []).append(e["label"])

    M = N = K = args.size
    flop = 2.0 * M * N * K
    rng = cp.random.default_rng(12345)
    A = rng.uniform(-1, 1, (M, K), dtype=cp.float64).astype(cp.float32)
    B = rng.uniform(-1, 1, (K, N), dtype=cp.float64).astype(cp.float32)
    C = cp.empty((M, N), cp.float32)
    # float64 reference and the error bound 2 (K+2) u |A||B| (beta = 0)
    ref = A.astype(cp.float64) @ B.astype(cp.float64)
    bound = gp.C_BOUND * (K + 2) * gp.U * (cp.abs(A).astype(cp.float64) @ cp.abs(B).astype(cp.float64))
    cp.cuda.Device().synchronize()

    def cublas_run():
        cp.matmul(A, B, out=C)

    def cp_record():
        ev = cp.cuda.Event()
        ev.record()
        return ev

    def cublas_time():
        evs = event_times(cublas_run, cp_record, args.warmup, args.repeats)
        return [cp.cuda.get_elapsed_time(evs[i], evs[i + 1]) for i in range(args.repeats)]

    cublas_ms_1 = cublas_time()
    err = cp.abs(C.astype(cp.float64) - ref)
    cublas_check = {"max_err": float(err.max()), "ok": bool((err <= bound).all())}
    log(f"cuBLAS fp32 {M}^3: median {statistics.median(cublas_ms_1):.3f} ms, "
        f"{flop / statistics.median(cublas_ms_1) / 1e9:.1f} TFLOP/s, max err {cublas_check['max_err']:.2e}")

    dA, dB, dC = cuda.as_cuda_array(A), cuda.as_cuda_array(B), cuda.as_cuda_array(C)

    def nb_record():
        ev = cuda.event()
        ev.record()
        return ev

    rows = []
    for tile, labels in seen.items():
        row = {"kernel": tile.name, "labels": labels, "tile": tile.as_dict(),
               "est_regs": gp.estimate_regs(tile)}
        plan = next((e["plan"] for e in entries if e["tile"] == tile and e["plan"]), None)
        if plan:
            row["plan"] = plan
        try:
            kern = gk.kernel_for(tile)
            t0 = time.time()
            kern.compile()
            row["compile_s"] = round(time.time() - t0, 2)
            res = kern.resources()
            row.update(res)
            row["spills"] = res["local_bytes"] > 0
            o = occ.occupancy(res["regs"], tile.threads, res["shared_bytes"], limits)
            row["occupancy"] = o.as_dict()
            try:
                row["driver_blocks_per_sm"] = int(
                    kern.dispatcher.overloads[next(iter(kern.dispatcher.overloads))]
                    .max_cooperative_grid_blocks(tile.threads) // sms)
            except Exception as e:  # noqa: BLE001
                row["driver_blocks_per_sm"] = f"n/a ({type(e).__name__})"
            vals = gp.validate(kern, gp.VALIDATION_CASES)
            row["validation_ok"] = all(v["ok"] for v in vals)
            row["validation_failed"] = [v for v in vals if not v["ok"]]
            C.fill(cp.nan)                         # beta = 0: NaN must not survive
            cp.cuda.Device().synchronize()

            def run():
                kern.launch(dA, dB, dC, 1.0, 0.0)
            evs = event_times(run, nb_record, args.warmup, args.repeats)
            ms = [cuda.event_elapsed_time(evs[i], evs[i + 1]) for i in range(args.repeats)]
            e = cp.abs(C.astype(cp.float64) - ref)
            row["big_max_err"] = float(cp.nan_to_num(e, nan=cp.inf).max())
            row["big_ok"] = bool((e <= bound).all())
            med = statistics.median(ms)
            row.update(ms_median=med, ms_min=min(ms), ms_max=max(ms),
                       tflops=flop / med / 1e9)
            log(f"{tile.name:40s} {row['tflops']:6.2f} TFLOP/s  regs {res['regs']:3d} "
                f"local {res['local_bytes']} smem {res['shared_bytes']} "
                f"occ {o.blocks_per_sm}x{o.warps_per_block}w (driver "
                f"{row['driver_blocks_per_sm']}) valid {row['validation_ok']} "
                f"{M}^3 ok {row['big_ok']}  [{', '.join(labels)}]")
        except Exception as e:  # noqa: BLE001 - keep going, record the failure
            row["error"] = f"{type(e).__name__}: {e}"
            row["traceback"] = traceback.format_exc()[-2000:]
            log(f"{tile.name}: FAILED {row['error']}")
        rows.append(row)

    # time the three fastest kernels again: the spread between passes is the noise
    timed = sorted((r for r in rows if "tflops" in r), key=lambda r: -r["tflops"])[:3]
    for r in timed:
        kern = gk.kernel_for(next(t for t in seen if t.name == r["kernel"]))

        def run2():
            kern.launch(dA, dB, dC, 1.0, 0.0)
        evs = event_times(run2, nb_record, args.warmup, args.repeats)
        ms = [cuda.event_elapsed_time(evs[i], evs[i + 1]) for i in range(args.repeats)]
        r["tflops_second_pass"] = flop / statistics.median(ms) / 1e9
        log(f"second pass {r['kernel']}: {r['tflops_second_pass']:.2f} TFLOP/s "
            f"(first {r['tflops']:.2f})")

    cublas_ms_2 = cublas_time()
    cublas_med = statistics.median(cublas_ms_1 + cublas_ms_2)
    cublas_tflops = flop / cublas_med / 1e9
    for r in rows:
        if "tflops" in r:
            r["pct_cublas"] = 100.0 * r["tflops"] / cublas_tflops

    # port reports (the `microkernel port NAME` JSON) of the built-in tiles
    ports = {}
    for spec in BUILTIN_TILES:
        if args.quick and spec.name != "avx512_8x16":
            continue
        try:
            ports[spec.name] = gp.port(spec)
        except Exception as e:  # noqa: BLE001
            ports[spec.name] = {"error": f"{type(e).__name__}: {e}"}

    tests = None
    if args.tests:
        # the package __init__ imports cffi (absent here): bypass it as above
        code = ("import sys, types; p = types.ModuleType('microkernel'); "
                f"p.__path__ = [{str(ROOT / 'microkernel')!r}]; sys.modules['microkernel'] = p; "
                "import pytest; sys.exit(pytest.main(['tests/test_gpu_sim.py', '-q', "
                "'--noconftest', '-p', 'no:cacheprovider', '-o', 'addopts=', "
                "'-W', 'ignore::DeprecationWarning']))")
        envt = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
        t0 = time.time()
        pr = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=envt,
                            capture_output=True, text=True)
        tests = {"returncode": pr.returncode, "seconds": round(time.time() - t0, 1),
                 "tail": (pr.stdout + pr.stderr)[-3000:]}
        log("tests on the GPU:", pr.returncode, (pr.stdout.strip().splitlines() or [""])[-1])
        tests["sim_vs_gpu"] = sim_vs_gpu()
        log("simulator vs GPU:", json.dumps(tests["sim_vs_gpu"]))

    good = [r for r in rows if "tflops" in r and r.get("big_ok") and not r.get("spills")
            and r.get("validation_ok")]
    best = max(good, key=lambda r: r["tflops"]) if good else None
    result = {
        "env": env, "size": [M, N, K], "repeats": args.repeats, "warmup": args.warmup,
        "timing": "CUDA events around each run, back-to-back after warm-up; median",
        "bound": "|C - C_ref| <= 2*(K+2)*2**-24*|A||B| (float64 reference, cuBLAS dgemm)",
        "cublas": {"ms_median": cublas_med, "tflops": cublas_tflops,
                   "tflops_first": flop / statistics.median(cublas_ms_1) / 1e9,
                   "tflops_last": flop / statistics.median(cublas_ms_2) / 1e9,
                   "check": cublas_check, "tf32": False},
        "kernels": rows, "ports": ports, "tests": tests,
        "best": best and {"kernel": best["kernel"], "tflops": best["tflops"],
                          "pct_cublas": best["pct_cublas"]},
        "bar_40pct_met": bool(best and best["pct_cublas"] >= 40.0),
        "wall_s": round(time.time() - t_start, 1),
    }
    (outdir / "h200_gpu.json").write_text(json.dumps(result, indent=1, default=str))
    md = render_md(result)
    (outdir / "h200_gpu.md").write_text(md)
    log(md)
    return 0


SIM_CMP_TILES = [GpuTile(4, 4, 16, 16, 4), GpuTile(2, 4, 8, 16, 4, layout="contiguous")]
SIM_CMP_CASES = [(17, 33, 5, 1.5, -0.5), (64, 40, 3, 1.0, 0.0), (24, 24, 24, 1.0, 0.0)]


def _sim_cmp_inputs(m, n, k):
    rng = np.random.default_rng(m * 10000 + n * 100 + k)
    return (rng.uniform(-1, 1, (m, k)).astype(np.float32),
            rng.uniform(-1, 1, (k, n)).astype(np.float32),
            rng.uniform(-1, 1, (m, n)).astype(np.float32))


def _sim_main(path: str) -> None:
    """(run in a subprocess with NUMBA_ENABLE_CUDASIM=1) the comparison cases."""
    out = {}
    for t in SIM_CMP_TILES:
        for (m, n, k, a, b) in SIM_CMP_CASES:
            A, B, C0 = _sim_cmp_inputs(m, n, k)
            out[f"{t.name}|{m}x{n}x{k}"] = gk.gemm(A, B, C0.copy(), alpha=a, beta=b, tile=t)
    np.savez(path, **out)


def sim_vs_gpu() -> dict:
    """The same small problems through the simulator (subprocess) and the GPU:
    max |C_gpu - C_sim| per case, next to the error bound. Not bitwise: the
    simulator's cuda.fma is a*b + c in two float32 roundings."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "sim.npz")
        envs = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
        pr = subprocess.run([sys.executable, __file__, "--sim-worker", path], env=envs,
                            capture_output=True, text=True, timeout=300)
        if pr.returncode:
            return {"error": (pr.stdout + pr.stderr)[-1500:]}
        sim = dict(np.load(path))
    res = {}
    for t in SIM_CMP_TILES:
        for (m, n, k, a, b) in SIM_CMP_CASES:
            A, B, C0 = _sim_cmp_inputs(m, n, k)
            g = gk.gemm(A, B, C0.copy(), alpha=a, beta=b, tile=t)
            key = f"{t.name}|{m}x{n}x{k}"
            bound = gp.C_BOUND * (k + 2) * gp.U * (
                abs(a) * (np.abs(A).astype(np.float64) @ np.abs(B)) + abs(b) * np.abs(C0))
            d = np.abs(g.astype(np.float64) - sim[key])
            res[key] = {"max_diff": float(d.max()), "bitwise_equal": bool((d == 0).all()),
                        "within_bound": bool((d <= bound).all())}
    return res


def render_md(r: dict) -> str:
    env = r["env"]
    M, N, K = r["size"]
    cb = r["cublas"]
    v = env["versions"]
    lines = [
        f"# microkernel.gpu on {env['device']} ({M}x{N}x{K} fp32)", "",
        f"- date {env['date']}; cc {env['cc']}, {env['sm_count']} SMs; driver/clocks "
        f"`{env.get('driver')}`",
        f"- python {v['python']}, numpy {v['numpy']}, numba {v.get('numba')}, numba-cuda "
        f"{v.get('numba_cuda')}, cupy {v.get('cupy')}; `np.row_stack = np.vstack` shim "
        f"applied: {v['row_stack_shim']} (numba-cuda 0.30.4 needs it under numpy 2.5)",
        f"- cuBLAS (cupy.matmul, CUPY_TF32={env['CUPY_TF32']}, full fp32): "
        f"**{cb['tflops']:.1f} TFLOP/s** (median of both batches; first "
        f"{cb['tflops_first']:.1f}, last {cb['tflops_last']:.1f}); max |err| vs fp64 "
        f"{cb['check']['max_err']:.2e}",
        f"- timing: {r['timing']}, {r['warmup']} warm-up + {r['repeats']} runs per kernel",
        f"- check: every element of C, {r['bound']}; plus the edge/semantics catalogue "
        f"(microkernel.gpu.port.VALIDATION_CASES) per kernel",
        "",
        "| kernel | what | TFLOP/s | % cuBLAS | ms (median) | regs (est.) | local B (spill) "
        "| smem B | blocks x warps / SM (model) | driver blocks/SM | limiter | valid |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for k in sorted(r["kernels"], key=lambda k: -k.get("tflops", -1)):
        if "error" in k:
            lines.append(f"| {k['kernel']} | {'; '.join(k['labels'])} | error: "
                         f"{k['error'][:80]} |||||||||")
            continue
        o = k["occupancy"]
        ok = k["validation_ok"] and k["big_ok"]
        lines.append(
            f"| {k['kernel']} | {'; '.join(k['labels'])} | {k['tflops']:.2f} | "
            f"{k['pct_cublas']:.1f} | {k['ms_median']:.2f} | {k['regs']} ({k['est_regs']}) | "
            f"{k['local_bytes']} ({'SPILL' if k['spills'] else 'none'}) | {k['shared_bytes']} | "
            f"{o['blocks_per_sm']} x {o['warps_per_sm'] // max(o['blocks_per_sm'], 1)} = "
            f"{o['warps_per_sm']} warps ({o['occupancy']:.0%}) | {k['driver_blocks_per_sm']} | "
            f"{o['limiter']} | {'ok' if ok else 'FAIL'} |")
    b = r["best"]
    lines += ["", f"Best: **{b['kernel']}** {b['tflops']:.2f} TFLOP/s = "
              f"**{b['pct_cublas']:.1f}% of cuBLAS** fp32; bar (>= 40%, no spill): "
              f"{'met' if r['bar_40pct_met'] else 'NOT met'}." if b else "No valid kernel."]
    if r.get("tests"):
        t = r["tests"]
        last = [ln for ln in t["tail"].strip().splitlines() if ln.strip()][-1:] or [""]
        lines += ["", f"tests/test_gpu_sim.py on the GPU (NUMBA_ENABLE_CUDASIM=0): exit "
                  f"{t['returncode']}, `{last[0]}` ({t['seconds']} s)"]
        sv = t.get("sim_vs_gpu") or {}
        if "error" in sv:
            lines += [f"simulator vs GPU: error {sv['error'][-200:]}"]
        elif sv:
            worst = max(v["max_diff"] for v in sv.values())
            lines += [f"simulator vs GPU on {len(sv)} small problems: max |C_gpu - C_sim| = "
                      f"{worst:.2e}; all within the bound: "
                      f"{all(v['within_bound'] for v in sv.values())}; bitwise equal: "
                      f"{sum(v['bitwise_equal'] for v in sv.values())}/{len(sv)} (the "
                      f"simulator's fma rounds twice)"]
    again = [k for k in r["kernels"] if "tflops_second_pass" in k]
    if again:
        lines += ["", "Second timing pass (same run): " + "; ".join(
            f"{k['kernel']} {k['tflops']:.2f} -> {k['tflops_second_pass']:.2f} TFLOP/s"
            for k in again)]
    lines += ["", f"Wall time of the run: {r['wall_s']} s.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--sim-worker":
        _sim_main(sys.argv[2])
        sys.exit(0)
    sys.exit(main())
