#!/usr/bin/env python3
"""The tensor-core port on an H200: build, check and time every mma.sync kernel in one run.

Usage (device machine, repository root)::

    python3 bench/gpu_mma.py [--repeats 20] [--warmup 3] [--quick] [--no-tests] [--no-ncu]
    python3 bench/gpu_mma.py --candidates [--rounds 5] [--per-round 4]   # ~2-3 minutes

Writes ``gpu_mma.json`` and ``gpu_mma.md`` to ``$OUT`` (default ./out) and prints the
markdown table last. Budget: about 5-6 minutes (numba compiles ~10-20 s per variant;
each variant is compiled once and cached).

What it does:

1. Environment (GPU, versions; ``np.row_stack`` shim for numba-cuda 0.30.4 under
   numpy >= 2.5). Only ``microkernel.gpu`` is imported (no cffi needed).
2. Variants (:data:`VARIANTS`): f16 / bf16 / tf32, two warp/block tiles, 2-3 stages,
   swizzle vs padding vs none. Each: compiled resources (numba dispatcher: regs,
   local memory = spills, shared), sm_90 occupancy model, the bank model's wavefronts
   per request, the BLAS-semantics catalogue, then each shape.
3. Shapes: 4096^3, 8192^3 and the DeepBench inference shapes with min(m, n) >= 16
   (defaults per precision only). Inputs uniform(-1, 1), rounded to the input type;
   every element of C checked against a float64 reference of the rounded inputs
   (tf32: rounded as cvt.rna.tf32.f32 does) with
   ``|C - ref| <= 2 (K+2) 2^-24 |A||B|`` (products of f16/bf16/tf32 values are exact
   in fp32, so only the fp32 accumulation rounds; the factor 2 allows truncation
   instead of round-to-nearest, which PTX leaves unspecified).
4. cuBLAS at the same precision through PyTorch: fp16/bf16 ``torch.mm`` (fp32
   accumulation: ``allow_{fp16,bf16}_reduced_precision_reduction = False``; the
   output is fp16/bf16, stated in the table; also ``out_dtype=torch.float32`` where
   this torch has it), TF32 ``torch.mm`` on float32 with ``allow_tf32 = True``.
   CUDA events around each run after warm-up, medians; TFLOP/s = 2MNK / time.
5. ncu (if present and permitted): bank-conflict counters of one small launch per
   shared-memory layout, next to the model's prediction.
6. ``tests/test_mma_sim.py`` and ``tests/test_mma.py`` with NUMBA_ENABLE_CUDASIM=0
   (the placement test then compares the GPU's registers with the numpy model).

``--candidates`` (:data:`CANDIDATES`, at most 6 kernels: numba compiles each in
~15-30 s) compiles and times only the current defaults beside the new main-loop
variants at 4096^3 and 8192^3: per shape, cuBLAS and every kernel in interleaved
rounds (``--rounds`` rounds of ``--per-round`` launches each, CUDA events, median
over all launches), every element of each kernel's C checked against float64;
writes ``gpu_mma_candidates.{json,md}`` to ``$OUT``.

Every variant, shape, check and step is in its own try/except: a failure is
recorded and the run goes on.
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

# numba env, np.row_stack shim, microkernel without cffi: before numba or microkernel
from _gpu_common import ROOT, ROW_STACK_SHIM  # noqa: E402

import numpy as np  # noqa: E402

from microkernel.gpu import mma_kernel as MK, mma_tile as T  # noqa: E402
from microkernel.gpu import occupancy as occ  # noqa: E402
from microkernel.gpu.mma_gemm import mma_gemm  # noqa: E402

D = MK.DEFAULT_MMA_TILES
#: (label, tile, run the DeepBench shapes too)
VARIANTS = [
    ("f16 default (port of avx512_8x16)", D["f16"], True),
    ("f16 padding, 2 stages", T.MmaTile("f16", 64, 64, 2, 2, 32, 2, "pad"), False),
    ("f16 no padding (bank conflicts)", T.MmaTile("f16", 64, 64, 2, 2, 32, 2, "none"), False),
    ("f16 2x4 warps, 128x256", T.MmaTile("f16", 64, 64, 2, 4, 32, 2, "swizzle"), False),
    ("bf16 default", D["bf16"], True),
    ("tf32 default", D["tf32"], True),
    ("tf32 padding, 2 stages", T.MmaTile("tf32", 64, 64, 2, 2, 16, 2, "pad"), False),
]
SQUARES = [4096, 8192]
#: --candidates: (label, tile). The unpipelined loop first, then the pipelined
#: main loop (microkernel.gpu.mma_tile.MmaTile.pipeline; offline ptxas sm_90
#: registers in the labels' notes in docs/gpu-tensor-cores.md).
CANDIDATES = [          # pairs first: a time-budget cut drops only the last ones
    ("f16 unpipelined main loop (the default before 2026-12-01)",
     T.MmaTile("f16", 64, 64, 2, 2, 32, 3, "swizzle")),
    ("f16 default: pipelined, 2 fragment sets, BK32 3 stages (48 KB static)", D["f16"]),
    ("tf32 unpipelined main loop (the default before 2026-12-01)",
     T.MmaTile("tf32", 64, 64, 2, 2, 16, 3, "swizzle")),
    ("tf32 default: pipelined, 2 fragment sets, BK16 3 stages (48 KB static)", D["tf32"]),
    ("f16 pipelined, 1 fragment set, BK64 3 stages (96 KB dynamic)",
     T.MmaTile("f16", 64, 64, 2, 2, 64, 3, "swizzle", "pipelined", 1, 1, True)),
    ("f16 pipelined, 2 fragment sets, BK32 4 stages (64 KB dynamic), grouped grid 8",
     T.MmaTile("f16", 64, 64, 2, 2, 32, 4, "swizzle", "pipelined", 2, 8, True)),
]
NCU_METRICS = ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,"
               "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,"
               "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,"
               "smsp__sass_inst_executed_op_ldsm.sum")
NCU_SIZE = 512
C_BOUND, U = 2.0, 2.0 ** -24


def log(*a):
    print(*a, flush=True)


def deepbench():
    import csv
    rows = []
    with open(ROOT / "microkernel" / "data" / "deepbench_inference_device.csv") as f:
        for r in csv.DictReader(ln for ln in f if not ln.startswith("#")):
            m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
            if min(m, n) >= 16:
                rows.append((m, n, k))
    return rows


def versions():
    out = {"python": platform.python_version(), "numpy": np.__version__,
           "row_stack_shim": ROW_STACK_SHIM}
    for mod in ("numba", "numba_cuda", "torch", "cupy", "ml_dtypes"):
        try:
            m = __import__(mod)
            out[mod] = getattr(m, "__version__", "?")
        except Exception as e:  # noqa: BLE001
            out[mod] = f"missing ({type(e).__name__})"
    return out


TORCH_DT = {"f16": "float16", "bf16": "bfloat16", "tf32": "float32"}


def make_inputs(torch, precision, m, n, k, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    A = (torch.rand((m, k), device="cuda", generator=g) * 2 - 1).to(getattr(torch, TORCH_DT[precision]))
    B = (torch.rand((k, n), device="cuda", generator=g) * 2 - 1).to(getattr(torch, TORCH_DT[precision]))
    return A, B


def rounded64(torch, X, precision):
    """float64 of the values the tensor cores multiply (tf32: cvt.rna rounding)."""
    if precision != "tf32":
        return X.double()
    b = X.contiguous().view(torch.int32)
    r = ((b + 0x1000) & ~0x1FFF).view(torch.float32)
    return r.double()


def kernel_form(torch, cuda, X, precision):
    """numba device array in the kernel's element type, rows padded to 16 bytes
    (once, outside the timing)."""
    ce = 4 if precision == "tf32" else 8
    m, k = X.shape
    kp = -(-k // ce) * ce
    if kp != k:
        P = torch.zeros((m, kp), dtype=X.dtype, device="cuda")
        P[:, :k] = X
        X = P
    if precision == "tf32":
        return cuda.as_cuda_array(X.contiguous())
    return cuda.as_cuda_array(X.contiguous().view(torch.int16)).view(np.uint16)


def time_events(torch, fn, warmup, repeats):
    for _ in range(warmup):
        fn()
    evs = [torch.cuda.Event(enable_timing=True) for _ in range(repeats + 1)]
    evs[0].record()
    for i in range(repeats):
        fn()
        evs[i + 1].record()
    torch.cuda.synchronize()
    return [evs[i].elapsed_time(evs[i + 1]) for i in range(repeats)]


def cublas(torch, precision, A, B, warmup, repeats):
    """cuBLAS at the same precision via torch.mm; returns rows of {api, out, ms}."""
    res = []
    if precision == "tf32":
        torch.backends.cuda.matmul.allow_tf32 = True
        ms = time_events(torch, lambda: torch.mm(A, B), warmup, repeats)
        res.append({"api": "torch.mm fp32 (allow_tf32=True)", "out": "float32",
                    "ms": statistics.median(ms)})
        torch.backends.cuda.matmul.allow_tf32 = False
        return res
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    ms = time_events(torch, lambda: torch.mm(A, B), warmup, repeats)
    res.append({"api": f"torch.mm {TORCH_DT[precision]} (fp32 accumulation)",
                "out": TORCH_DT[precision], "ms": statistics.median(ms)})
    try:
        torch.mm(A[:16, :16], B[:16, :16], out_dtype=torch.float32)
        ms = time_events(torch, lambda: torch.mm(A, B, out_dtype=torch.float32), warmup,
                         repeats)
        res.append({"api": f"torch.mm {TORCH_DT[precision]}, out_dtype=float32",
                    "out": "float32", "ms": statistics.median(ms)})
    except Exception as e:  # noqa: BLE001
        res.append({"api": "torch.mm out_dtype=float32", "error": f"{type(e).__name__}: {e}"[:200]})
    return res


def catalogue(torch, tile):
    """The BLAS-semantics / edge cases through mma_gemm on torch device tensors."""
    out = []
    cases = [(17, 33, 5, 1.0, 0.0, None), (1, 1, 1, 1.0, 0.0, None),
             (257, 129, 77, 1.5, -0.5, None), (33, 17, 9, -2.0, 0.75, None),
             (19, 21, 7, 1.0, 0.0, "nan_c"), (19, 21, 7, 0.0, 2.0, "nan_ab"),
             (9, 11, 0, 1.0, 0.5, None), (200, 72, 300, 1.0, 0.0, None)]
    for i, (m, n, k, a, b, special) in enumerate(cases):
        try:
            A, B = make_inputs(torch, tile.precision, m, n, k, 100 + i)
            C0 = torch.rand((m, n), device="cuda") * 2 - 1
            if special == "nan_ab" and k:
                A[0, 0] = float("nan")
                B[-1, -1] = float("nan")
            C = torch.full((m, n), float("nan"), device="cuda") if special == "nan_c" else C0.clone()
            mma_gemm(A, B, C, alpha=a, beta=b, tile=tile)
            torch.cuda.synchronize()
            A64, B64 = rounded64(torch, A, tile.precision), rounded64(torch, B, tile.precision)
            if a == 0 or k == 0:
                ref = b * C0.double() if special != "nan_c" else torch.zeros((m, n), dtype=torch.float64, device="cuda")
                scale = abs(b) * C0.double().abs()
            else:
                ref = a * (A64 @ B64) + (b * C0.double() if b else 0)
                scale = abs(a) * (A64.abs() @ B64.abs()) + (abs(b) * C0.double().abs() if b else 0)
            bound = C_BOUND * (k + 2) * U * scale
            err = (C.double() - ref).abs()
            ok = bool(torch.isfinite(C).all()) and bool((err <= bound).all())
            out.append({"case": f"{m}x{n}x{k} a={a} b={b} {special or ''}".strip(), "ok": ok,
                        "max_err": float(torch.nan_to_num(err, nan=float("inf")).max()) if err.numel() else 0.0})
        except Exception as e:  # noqa: BLE001
            out.append({"case": f"{m}x{n}x{k}", "ok": False, "error": f"{type(e).__name__}: {e}"[:300]})
    return out


def compile_variant(torch, tile, v, static_smem=True):
    """Compile ``tile``'s kernel and record into ``v``: compile seconds, numba's
    resources, spills, the sm_90 occupancy model and the catalogue (edges, guarded
    copies, BLAS cases). Returns the kernel."""
    kern = MK.kernel_for(tile)
    t0 = time.time()
    kern.compile()
    v["compile_s"] = round(time.time() - t0, 1)
    res = kern.resources()
    v["resources"] = res
    v["spills"] = res["local_bytes"] > 0
    v["occupancy"] = occ.occupancy(res["regs"], tile.threads, res["shared_bytes"],
                                   static_smem=static_smem).as_dict()
    log(f"{tile.name}: compiled in {v['compile_s']} s, {res}")
    v["catalogue"] = catalogue(torch, tile)
    log(f"  catalogue ok: {all(c['ok'] for c in v['catalogue'])}")
    return kern


def run_shape(torch, cuda, kern, tile, m, n, k, args, cublas_cache):
    A, B = make_inputs(torch, tile.precision, m, n, k, m + n + k)
    dA, dB = kernel_form(torch, cuda, A, tile.precision), kernel_form(torch, cuda, B, tile.precision)
    C = torch.full((m, n), float("nan"), device="cuda")         # beta = 0: NaN must not survive
    dC = cuda.as_cuda_array(C)
    row = {"shape": [m, n, k]}
    ms = time_events(torch, lambda: kern.launch(dA, dB, dC, k, 1.0, 0.0), args.warmup, args.repeats)
    med = statistics.median(ms)
    flop = 2.0 * m * n * k
    row.update(ms=med, ms_min=min(ms), tflops=flop / med / 1e9)
    A64, B64 = rounded64(torch, A, tile.precision), rounded64(torch, B, tile.precision)
    ref = A64 @ B64
    bound = C_BOUND * (k + 2) * U * (A64.abs() @ B64.abs())
    err = (C.double() - ref).abs()
    row["max_err"] = float(torch.nan_to_num(err, nan=float("inf")).max())
    row["max_bound"] = float(bound.max())
    row["ok"] = bool(torch.isfinite(C).all()) and bool((err <= bound).all())
    del ref, bound, err, A64, B64
    key = (tile.precision, m, n, k)
    if key not in cublas_cache:
        cublas_cache[key] = cublas(torch, tile.precision, A, B, args.warmup, args.repeats)
    cb = [c for c in cublas_cache[key] if "ms" in c]
    row["cublas"] = cublas_cache[key]
    if cb:
        best = min(cb, key=lambda c: c["ms"])
        row["cublas_tflops"] = flop / best["ms"] / 1e9
        row["cublas_api"] = best["api"]
        row["pct_cublas"] = 100.0 * row["tflops"] / row["cublas_tflops"]
    return row


def ncu_compare(args):
    """Bank-conflict counters of one NCU_SIZE^3 launch per f16 layout vs the model."""
    import shutil
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    if not os.path.exists(ncu):
        return {"error": "ncu not found"}
    out = {}
    for mode in ("swizzle", "none"):
        tile = T.MmaTile("f16", 64, 64, 2, 2, 32, 2, mode)
        cmd = [ncu, "--clock-control", "none", "--csv", "--metrics", NCU_METRICS,
               "--kernel-name-base", "mangled", "-k", f"regex:{tile.name}",
               sys.executable, __file__, "--ncu-worker", mode]
        try:
            pr = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
        except Exception as e:  # noqa: BLE001
            out[mode] = {"error": f"{type(e).__name__}: {e}"}
            continue
        vals = {}
        for ln in pr.stdout.splitlines():
            parts = [p.strip('"') for p in ln.split('","')]
            for metric in NCU_METRICS.split(","):
                if metric in parts:
                    try:
                        vals[metric] = float(parts[-1].replace(",", ""))
                    except ValueError:
                        vals[metric] = parts[-1]
        # the model: per warp and slice, summed over warps, slices and blocks
        nk = -(-NCU_SIZE // tile.bk)
        blocks = (-(-NCU_SIZE // tile.bm)) * (-(-NCU_SIZE // tile.bn))
        ld = st = wf = 0
        import microkernel.gpu.banks as bk
        for w in range(tile.warps):
            for r in T.requests(tile, w):
                c = bk.cost(r)
                if r.kind.startswith("cp."):
                    st += c.conflicts
                else:
                    ld += c.conflicts
                    wf += c.wavefronts
        out[mode] = {"ncu": vals, "returncode": pr.returncode,
                     "model_ld_conflicts": ld * nk * blocks,
                     "model_cp_async_store_conflicts": st * nk * blocks,
                     "model_ld_wavefronts": wf * nk * blocks,
                     "stderr": (pr.stderr + pr.stdout)[-600:] if not vals else ""}
    return out


def ncu_worker(mode):
    import torch
    from numba import cuda
    tile = T.MmaTile("f16", 64, 64, 2, 2, 32, 2, mode)
    kern = MK.kernel_for(tile)
    A, B = make_inputs(torch, "f16", NCU_SIZE, NCU_SIZE, NCU_SIZE, 1)
    dA, dB = kernel_form(torch, cuda, A, "f16"), kernel_form(torch, cuda, B, "f16")
    C = torch.zeros((NCU_SIZE, NCU_SIZE), device="cuda")
    kern.launch(dA, dB, cuda.as_cuda_array(C), NCU_SIZE)
    torch.cuda.synchronize()


def run_tests():
    code = ("import sys, types; p = types.ModuleType('microkernel'); "
            f"p.__path__ = [{str(ROOT / 'microkernel')!r}]; sys.modules['microkernel'] = p; "
            "import numpy as np; np.row_stack = getattr(np, 'row_stack', np.vstack); "
            "import pytest; sys.exit(pytest.main(['tests/test_mma_sim.py', 'tests/test_mma.py', "
            "'-q', '--noconftest', '-p', 'no:cacheprovider', '-o', 'addopts=', "
            "'-W', 'ignore::DeprecationWarning']))")
    t0 = time.time()
    pr = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                        env=dict(os.environ, NUMBA_ENABLE_CUDASIM="0"), timeout=200)
    return {"returncode": pr.returncode, "seconds": round(time.time() - t0, 1),
            "tail": (pr.stdout + pr.stderr)[-2500:]}


def render_md(r):
    env = r["env"]
    lines = [f"# microkernel.gpu tensor cores (mma.sync) on {env.get('device')}", "",
             f"- date {env.get('date')}; cc {env.get('cc')}; versions `{json.dumps(env.get('versions'))}`",
             f"- timing: CUDA events, {r['warmup']} warm-up + {r['repeats']} runs, median",
             f"- check: every element, {r['bound']}",
             "- cuBLAS: torch.mm at the same input precision, fp32 accumulation; its output "
             "type is in the `cuBLAS API` column (fp16/bf16 torch.mm writes fp16/bf16: half "
             "the C traffic of our fp32 output); % cuBLAS uses the fastest listed API",
             "- A and B rows padded to 16 bytes once before timing where N or K is not a "
             "multiple of 8 (f16/bf16) or 4 (tf32); cuBLAS gets the unpadded tensors", "",
             "| kernel | what | M x N x K | TFLOP/s | cuBLAS TFLOP/s | % cuBLAS | cuBLAS API (output) "
             "| regs | local B | smem B | blocks x warps/SM (limiter) | ld wavefronts/ideal per slice "
             "| max err / bound | ok |",
             "|---|---|---|---:|---:|---:|---|---:|---:|---:|---|---|---|---|"]
    for v in r["variants"]:
        if "error" in v and not v.get("shapes"):
            lines.append(f"| {v['kernel']} | {v['label']} | error: {v['error'][:120]} |||||||||||")
            continue
        res = v.get("resources") or {}
        o = v.get("occupancy") or {}
        b = v.get("banks", {}).get(v["tile"]["smem"], {})
        for s in v.get("shapes", []):
            if "error" in s:
                lines.append(f"| {v['kernel']} | {v['label']} | {'x'.join(map(str, s['shape']))} | "
                             f"error: {s['error'][:100]} ||||||||||")
                continue
            api = s.get("cublas_api", "n/a")
            lines.append(
                f"| {v['kernel']} | {v['label']} | {'x'.join(map(str, s['shape']))} | {s['tflops']:.1f} | "
                f"{s.get('cublas_tflops', float('nan')):.1f} | {s.get('pct_cublas', float('nan')):.1f} | {api} | "
                f"{res.get('regs')} | {res.get('local_bytes')} | {res.get('shared_bytes')} | "
                f"{o.get('blocks_per_sm')} x {o.get('warps_per_sm', 0) // max(o.get('blocks_per_sm') or 1, 1)} "
                f"({o.get('limiter')}) | {b.get('wavefronts')}/{b.get('ideal')} | "
                f"{s['max_err']:.2e} / {s['max_bound']:.2e} | {'ok' if s['ok'] else 'FAIL'} |")
    lines += ["", "Bars (4096^3): " + json.dumps(r.get("bars")), ""]
    cat = {v["kernel"]: all(c["ok"] for c in v.get("catalogue", [])) for v in r["variants"]}
    lines += [f"Edge/BLAS catalogue all ok: {json.dumps(cat)}", ""]
    if r.get("ncu") is not None:
        lines += ["ncu vs the bank model (f16 64x64 warp tiles, one %d^3 launch):" % NCU_SIZE, "",
                  "```", json.dumps(r["ncu"], indent=1)[:3000], "```", ""]
    if r.get("tests"):
        t = r["tests"]
        last = [ln for ln in t["tail"].splitlines() if ln.strip()][-1:] or [""]
        lines += [f"tests/test_mma_sim.py + tests/test_mma.py on the GPU (NUMBA_ENABLE_CUDASIM=0): "
                  f"exit {t['returncode']}, `{last[0]}` ({t['seconds']} s)", ""]
    lines += [f"Wall time: {r['wall_s']} s.", ""]
    return "\n".join(lines)


def run_candidates(args, torch, cuda, result, t_start):
    """--candidates: compile CANDIDATES, then per (precision, square) time cuBLAS and
    every kernel of that precision in interleaved rounds and check each C."""
    kernels = []
    for label, tile in CANDIDATES:
        v = {"kernel": tile.name, "label": label, "tile": tile.as_dict(),
             "est_regs": T.estimate_regs(tile), "shapes": []}
        result["variants"].append(v)
        if time.time() - t_start > args.budget_s:
            v["error"] = "skipped: time budget"
            continue
        try:
            kern = compile_variant(torch, tile, v, static_smem=not tile.dynamic_smem)
            kernels.append((v, kern, tile))
        except Exception as e:  # noqa: BLE001
            v["error"] = f"{type(e).__name__}: {e}"[:600]
            v["traceback"] = traceback.format_exc()[-2000:]
            log(f"{tile.name}: FAILED {v['error']}")
    flop_of = lambda n: 2.0 * n ** 3  # noqa: E731
    for prec in ("f16", "tf32"):
        ks = [x for x in kernels if x[2].precision == prec]
        if not ks:
            continue
        for n in SQUARES:
            if time.time() - t_start > args.budget_s + 60:
                for v, _, _ in ks:
                    v["shapes"].append({"shape": [n] * 3, "error": "skipped: time budget"})
                continue
            try:
                A, B = make_inputs(torch, prec, n, n, n, n + 7)
                dA, dB = kernel_form(torch, cuda, A, prec), kernel_form(torch, cuda, B, prec)
                Cs = {}
                for v, kern, tile in ks:
                    C = torch.full((n, n), float("nan"), device="cuda")   # beta = 0
                    Cs[tile.name] = (C, cuda.as_cuda_array(C))
                    kern.launch(dA, dB, Cs[tile.name][1], n, 1.0, 0.0)   # warm-up + check run
                torch.cuda.synchronize()
                A64, B64 = rounded64(torch, A, prec), rounded64(torch, B, prec)
                ref = A64 @ B64
                bound = C_BOUND * (n + 2) * U * (A64.abs() @ B64.abs())
                del A64, B64
                checks = {}
                for v, kern, tile in ks:
                    C = Cs[tile.name][0]
                    err = (C.double() - ref).abs()
                    checks[tile.name] = {
                        "max_err": float(torch.nan_to_num(err, nan=float("inf")).max()),
                        "max_bound": float(bound.max()),
                        "ok": bool(torch.isfinite(C).all()) and bool((err <= bound).all())}
                    del err
                del ref, bound
                torch.cuda.empty_cache()
                # cuBLAS at the same precision (fp16: fp32 accumulation)
                if prec == "tf32":
                    torch.backends.cuda.matmul.allow_tf32 = True
                    cb = lambda: torch.mm(A, B)  # noqa: E731
                    cb_api = "torch.mm fp32 (allow_tf32=True)"
                else:
                    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
                    cb = lambda: torch.mm(A, B)  # noqa: E731
                    cb_api = "torch.mm float16 (fp32 accumulation)"
                runners = [("cuBLAS", cb)] + [
                    (tile.name, (lambda kern=kern, C=Cs[tile.name][1]:
                                 kern.launch(dA, dB, C, n, 1.0, 0.0))) for _, kern, tile in ks]
                times = {name: [] for name, _ in runners}
                for _ in range(args.warmup):
                    for _, fn in runners:
                        fn()
                for rnd in range(args.rounds):       # interleaved rounds
                    order = runners if rnd % 2 == 0 else runners[::-1]
                    for name, fn in order:
                        times[name] += time_events(torch, fn, 0, args.per_round)
                torch.backends.cuda.matmul.allow_tf32 = False
                cb_ms = statistics.median(times["cuBLAS"])
                cb_tf = flop_of(n) / cb_ms / 1e9
                log(f"{prec} {n}^3: cuBLAS {cb_tf:.1f} TFLOP/s ({cb_api})")
                for v, kern, tile in ks:
                    ms = statistics.median(times[tile.name])
                    row = {"shape": [n] * 3, "ms": ms, "ms_min": min(times[tile.name]),
                           "tflops": flop_of(n) / ms / 1e9, "cublas_tflops": cb_tf,
                           "cublas_api": cb_api, "cublas_ms": cb_ms,
                           "pct_cublas": 100.0 * cb_ms / ms, "launches": len(times[tile.name]),
                           **checks[tile.name]}
                    v["shapes"].append(row)
                    log(f"  {tile.name}: {row['tflops']:.1f} TFLOP/s ({row['pct_cublas']:.1f}% "
                        f"of cuBLAS), ok {row['ok']}")
                del Cs, A, B, dA, dB
                torch.cuda.empty_cache()
            except Exception as e:  # noqa: BLE001
                for v, _, _ in ks:
                    v["shapes"].append({"shape": [n] * 3,
                                        "error": f"{type(e).__name__}: {e}"[:400]})
                log(f"{prec} {n}^3: FAILED {type(e).__name__}: {e}")
                log(traceback.format_exc()[-1500:])


def render_candidates_md(r):
    env = r["env"]
    lines = [f"# mma.sync main-loop candidates on {env.get('device')}", "",
             f"- date {env.get('date')}; versions `{json.dumps(env.get('versions'))}`",
             f"- timing: CUDA events, {r['warmup']} warm-up rounds, then {r['rounds']} "
             f"interleaved rounds (cuBLAS and every kernel of the precision, order reversed "
             f"every other round) of {r['per_round']} launches each; median of all launches",
             f"- check: every element, {r['bound']}", "",
             "| kernel | what | N^3 | TFLOP/s | cuBLAS | % cuBLAS | regs | local B | smem B | "
             "blocks x warps/SM | compile s | max err / bound | ok |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---|---|"]
    for v in r["variants"]:
        res = v.get("resources") or {}
        o = v.get("occupancy") or {}
        if not v.get("shapes"):
            lines.append(f"| {v['kernel']} | {v['label']} | error: "
                         f"{v.get('error', 'no shapes')[:160]} ||||||||||")
        for s in v.get("shapes", []):
            if "error" in s:
                lines.append(f"| {v['kernel']} | {v['label']} | {s['shape'][0]} | error: "
                             f"{s['error'][:120]} |||||||||")
                continue
            bpsm = o.get("blocks_per_sm") or 0
            lines.append(
                f"| {v['kernel']} | {v['label']} | {s['shape'][0]} | {s['tflops']:.1f} | "
                f"{s['cublas_tflops']:.1f} | {s['pct_cublas']:.1f} | {res.get('regs')} | "
                f"{res.get('local_bytes')} | {res.get('shared_bytes')} | "
                f"{bpsm} x {o.get('warps_per_sm', 0) // max(bpsm, 1)} ({o.get('limiter')}) | "
                f"{v.get('compile_s')} | {s['max_err']:.2e} / {s['max_bound']:.2e} | "
                f"{'ok' if s['ok'] else 'FAIL'} |")
    cat = {v["kernel"]: all(c["ok"] for c in v.get("catalogue", [{"ok": False}]))
           for v in r["variants"]}
    lines += ["", "Edge/BLAS catalogue (odd shapes, alpha/beta, NaN, K=0) all ok: "
              + json.dumps(cat)]
    lines += ["", "Best at 4096^3 (correct, no spills): " + json.dumps(r.get("bars")), "",
              f"Wall time: {r['wall_s']} s.", ""]
    return "\n".join(lines)


def write_result(outdir, stem, result, render, t_start):
    """Record the wall time, write ``STEM.json`` and ``STEM.md`` (``render(result)``)
    to ``outdir`` and print the markdown last. Returns 0 (the exit status)."""
    result["wall_s"] = round(time.time() - t_start, 1)
    (outdir / f"{stem}.json").write_text(json.dumps(result, indent=1, default=str))
    md = render(result)
    (outdir / f"{stem}.md").write_text(md)
    log(md)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="defaults only, 4096^3 only")
    ap.add_argument("--no-tests", action="store_true")
    ap.add_argument("--no-ncu", action="store_true")
    ap.add_argument("--budget-s", type=float, default=240.0,
                    help="stop starting new variants after this many seconds")
    ap.add_argument("--candidates", action="store_true",
                    help="only the defaults and the new main-loop variants (CANDIDATES) at "
                         "4096^3 and 8192^3, interleaved rounds")
    ap.add_argument("--rounds", type=int, default=5, help="--candidates: interleaved rounds")
    ap.add_argument("--per-round", type=int, default=4,
                    help="--candidates: launches per kernel per round")
    args = ap.parse_args(argv)
    if args.candidates and args.budget_s == 240.0:
        args.budget_s = 150.0
    t_start = time.time()
    outdir = pathlib.Path(os.environ.get("OUT") or "out")
    outdir.mkdir(parents=True, exist_ok=True)
    result = {"env": {}, "repeats": args.repeats, "warmup": args.warmup, "variants": [],
              "bound": "|C - ref| <= 2*(K+2)*2**-24*|A||B|, ref = float64 of the rounded inputs"}
    try:
        import torch
        from numba import cuda
        dev = cuda.get_current_device()
        result["env"] = {"device": str(dev.name.decode() if isinstance(dev.name, bytes) else dev.name),
                         "cc": list(dev.compute_capability), "sm_count": int(dev.MULTIPROCESSOR_COUNT),
                         "versions": versions(),
                         "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        log("env:", json.dumps(result["env"]))
    except Exception as e:  # noqa: BLE001
        result["env"]["error"] = f"{type(e).__name__}: {e}"
        log("FATAL env:", result["env"]["error"])
        torch = cuda = None
    if args.candidates:
        result.update(rounds=args.rounds, per_round=args.per_round, mode="candidates")
        if torch is not None:
            run_candidates(args, torch, cuda, result, t_start)
        bars = {}
        for prec in ("f16", "tf32"):
            best = [(v["kernel"], s) for v in result["variants"]
                    if v["tile"]["precision"] == prec and not v.get("spills")
                    for s in v.get("shapes", []) if s.get("shape") == [4096] * 3 and s.get("ok")]
            if best:
                k, b = max(best, key=lambda x: x[1].get("pct_cublas", 0))
                bars[prec] = {"kernel": k, "pct_cublas": round(b["pct_cublas"], 1),
                              "tflops": round(b["tflops"], 1),
                              "met_40pct": b["pct_cublas"] >= 40}
        result["bars"] = bars
        return write_result(outdir, "gpu_mma_candidates", result, render_candidates_md, t_start)
    variants = [v for v in VARIANTS if not args.quick or "default" in v[0]]
    squares = SQUARES[:1] if args.quick else SQUARES
    cublas_cache = {}
    if torch is not None:
        for label, tile, with_db in variants:
            v = {"kernel": tile.name, "label": label, "tile": tile.as_dict(), "shapes": [],
                 "est_regs": T.estimate_regs(tile)}
            result["variants"].append(v)
            if time.time() - t_start > args.budget_s:
                v["error"] = "skipped: time budget"
                continue
            try:
                v["banks"] = T.bank_report(tile)
                kern = compile_variant(torch, tile, v)
                shapes = [(s, s, s) for s in squares] + (deepbench() if with_db and not args.quick else [])
                for (m, n, k) in shapes:
                    try:
                        row = run_shape(torch, cuda, kern, tile, m, n, k, args, cublas_cache)
                        log(f"  {m}x{n}x{k}: {row['tflops']:.1f} TFLOP/s, cuBLAS "
                            f"{row.get('cublas_tflops', float('nan')):.1f} ({row.get('pct_cublas', float('nan')):.1f}%), ok {row['ok']}")
                    except Exception as e:  # noqa: BLE001
                        row = {"shape": [m, n, k], "error": f"{type(e).__name__}: {e}"[:400]}
                        log(f"  {m}x{n}x{k}: FAILED {row['error']}")
                    v["shapes"].append(row)
                    torch.cuda.empty_cache()
            except Exception as e:  # noqa: BLE001
                v["error"] = f"{type(e).__name__}: {e}"[:600]
                v["traceback"] = traceback.format_exc()[-2000:]
                log(f"{tile.name}: FAILED {v['error']}")
    bars = {}
    for prec in ("f16", "tf32"):
        best = [s for v in result["variants"] if v["tile"]["precision"] == prec and not v.get("spills")
                for s in v.get("shapes", []) if s.get("shape") == [4096] * 3 and s.get("ok")]
        if best:
            b = max(best, key=lambda s: s.get("pct_cublas", 0))
            bars[prec] = {"pct_cublas": b.get("pct_cublas"), "met_40pct": (b.get("pct_cublas") or 0) >= 40}
    result["bars"] = bars
    if not args.no_ncu and torch is not None and time.time() - t_start < 330:
        try:
            result["ncu"] = ncu_compare(args)
        except Exception as e:  # noqa: BLE001
            result["ncu"] = {"error": f"{type(e).__name__}: {e}"}
    if not args.no_tests:
        try:
            result["tests"] = run_tests()
            log("tests:", result["tests"]["returncode"], result["tests"]["tail"][-300:])
        except Exception as e:  # noqa: BLE001
            result["tests"] = {"returncode": -1, "seconds": 0, "tail": f"{type(e).__name__}: {e}"}
    return write_result(outdir, "gpu_mma", result, render_md, t_start)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--ncu-worker":
        ncu_worker(sys.argv[2])
        sys.exit(0)
    sys.exit(main())
