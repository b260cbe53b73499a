#!/usr/bin/env python3
"""Issue 23 on an H200 in one call: the warp-tiled SIMT kernel against cuBLAS and Triton.

Usage (on the device machine, from the repository root)::

    OUT=/path/to/out python3 bench/gpu_simt.py [--quick] [--no-tests] [--rounds 7]

Every part runs in its own try/except (a failure is recorded with its traceback and
the script goes on); the final markdown table is printed last and written, with
everything else, to ``$OUT/gpu_simt.json`` and ``$OUT/gpu_simt.md`` (default
``./out``). Budget: under 6 minutes of wall time on an H200 (numba compiles take
most of it; ``--quick`` compiles the shape-adaptive tiles only).

Parts, in order:

1. **env**: GPU, SMs, clocks, versions; ``CUPY_TF32=0`` is set before CuPy loads
   (full fp32 cuBLAS); checks that ``import microkernel.gpu`` did not import cffi.
2. **compile**: each variant (the shape-adaptive candidates
   ``microkernel.gpu.launch.AUTO_TILES`` with the three kernel variants, float4,
   scalar and exact loads, each as the general kernel and as the split-K partials
   kernel, ``+partials``; the GPU sweep's other candidates, float4 only; the original
   kernel's default for reference): compile time, numba's resource report
   (registers, local memory = spills, shared memory), the occupancy model and the
   driver's blocks per SM, or the error.
3. **validate**: the edge/BLAS-semantics catalogue (``port.VALIDATION_CASES``; for
   float4-only variants the cases it can run), then on every benchmark shape every
   element of C against a float64 reference (cuBLAS dgemm through torch) with
   ``|C - C_ref| <= 2 (K+2) 2^-24 |A||B|``, for ours (shape-adaptive and each fixed
   tile), cuBLAS and Triton.
4. **time**, per shape of the issue's table: ours shape-adaptive (``gemm()``
   default, its plan printed), ours with each fixed tile (the planner's split for
   that tile), cuBLAS (``cupy.matmul``, fp32) and the textbook Triton kernel
   (``tl.dot(..., input_precision="ieee")``, five autotuned configurations, tuned
   once per shape). Interleaved rounds, the contenders' order shuffled each round;
   a sample is a batch of back-to-back calls between two CUDA events, issued behind
   a ``torch.cuda._sleep`` spin kernel so that host time is not counted; medians
   over rounds; per-round paired ratios against cuBLAS with bootstrap intervals
   (``microkernel.stats``).
5. **call overhead**: host microseconds per ``gemm()`` call on device arrays (GPU
   kept busy so that calls only queue), against the bare launch of the same plan
   (``Runner.run_fast``: the plan's CUDA graph, or ``cuLaunchKernel`` per kernel, on
   the packed parameters), numba's
   dispatcher launch, ``cupy.matmul`` and a no-op call.
6. **tile and split-K scan** on the shapes of :data:`SCAN` (measured time per split for the
   candidates, next to the planner's prediction and choice).
7. **sweep**: ``microkernel sweep --gpu`` logic on a small workload.
8. **tests**: tests/test_gpu_simt.py and tests/test_gpu_sim.py on the GPU
   (NUMBA_ENABLE_CUDASIM=0), if time is left.

With ``--exact-ab``, before part 2: each AUTO tile's exact variant against its vec
variant at its planned split on :data:`EXACT_AB_SHAPES` (:func:`exact_ab_part`; JSON
key ``exact_ab``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import random
import statistics
import subprocess
import sys
import time
import traceback

os.environ["CUPY_TF32"] = "0"                    # full fp32 cuBLAS

# numba env, np.row_stack shim, microkernel without cffi: before numba or microkernel
from _gpu_common import ROOT, ROW_STACK_SHIM, nvidia_smi  # noqa: E402

import numpy as np  # noqa: E402

T_START = time.time()
BUDGET_S = 345.0                                 # stop optional parts past this

#: The issue's table of shapes (m, n, k).
SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (4000, 4000, 4000), (1024, 1024, 1024),
          (5124, 700, 2048), (3072, 1500, 1024), (128, 1500, 1280), (35, 700, 2048)]
#: The tile and split-K scan: shape -> the splits timed for every AUTO_TILES tile (the
#: planner's own split is timed too), to check and refit the planner's model.
SCAN = {(35, 700, 2048): (1, 2, 4, 8, 16, 32), (128, 1500, 1280): (1, 2, 4, 8, 16),
        (1024, 1024, 1024): (1, 2, 4, 8), (3072, 1500, 1024): (1, 2, 4)}


def scan_extra():
    """Tiles the scan also times with ``--scan-extra``: candidates for AUTO_TILES.

    Now (2026-12-02 evening): ``copy="async16"`` tiles, A kept k-contiguous in shared
    memory and filled by 16-byte ``cp.async`` copies like B, 2-4 stages (Triton's
    pipeline at 1024^3 is 4 stages of BK 32 in 64 x 64 blocks): the 128 x 128 block of
    the 8x8 thread tile at BK 8 in 4 stages (with and without the two-blocks-per-SM
    register cap) and at BK 16 in 2, Triton's 64 x 64 block of 4 warps at BK 16 in 4
    stages and BK 32 in 2, 64 x 128 at BK 16 in 3, and the 8x16 thread tile in 128 x 256
    blocks at BK 8 in 3. Nsight Compute put the planner's 1024^3 kernel at 3.2 warp
    cycles per issued instruction, 0.35 of them barrier and 0.38 global-load stalls,
    against Triton's 2.75 and 0.08 / < 0.08 (``bench/results/h200/profile/profile_1024.md``).
    Timed the same evening (``simt_scan_cp16``): correct, the stalls gone, but at 1024^3
    the best took 59.6 us against the planner's 58.6, and 8-31% more at 4096^3 / 8192^3;
    faster only at 3072x1500x1024 (2%). Not in AUTO_TILES.

    Timed here before and not kept (``bench/results/h200/``): the 128 x 128 block at BK
    16 and without the register cap, 128 x 64 of 4 warps (``simt_scan_bk16``); the 8x16
    thread tile in 128 x 128 blocks (``simt_scan_8x16b128``); 8x4 / 4x8 thread tiles in
    64 x 128 blocks, 8x8 in 64 x 128 at BK 16 and in 128 x 64 at BK 8; the ``copy="async"``
    variants of the AUTO tiles (A by 4-byte copies), 0.99-1.38x the time of the
    register-staged tiles at the same split (median 1.14, ``simt_cpa_scan.json``)."""
    from microkernel.gpu.tiles import GpuTile
    r16 = dict(copy="async16")
    return [GpuTile(8, 8, 128, 128, 8, wm=32, wn=64, stages=4, min_blocks=2, **r16),
            GpuTile(8, 4, 64, 64, 16, wm=32, wn=32, stages=4, min_blocks=2, **r16),
            GpuTile(8, 8, 128, 128, 8, wm=32, wn=64, stages=4, **r16),
            GpuTile(8, 8, 128, 128, 16, wm=32, wn=64, stages=2, min_blocks=2, **r16),
            GpuTile(8, 4, 64, 64, 32, wm=32, wn=32, stages=2, min_blocks=2, **r16),
            GpuTile(8, 8, 64, 128, 16, wm=32, wn=64, stages=3, min_blocks=2, **r16),
            GpuTile(8, 16, 128, 256, 8, wm=64, wn=64, stages=3, **r16)]


#: With ``--scan-extra``: large shapes the scan also times (split 1), where the block
#: rasterization (``--group-m``) can matter: B is read once per wave from HBM.
SCAN_LARGE = {(4096, 4096, 4096): (1,), (8192, 8192, 8192): (1,), (5124, 700, 2048): (1, 2)}
#: Calls per sample of the split-K scan.
SCAN_CALLS = 20
#: Shapes of the call-overhead measurement (one plain; two split-K plans, reduced by a
#: kernel: two launches as one graph; in the last block, one launch, when
#: launch.TWO_LAUNCH_MIN_S is raised).
OVERHEAD_SHAPES = [(64, 64, 64), (35, 700, 2048), (1024, 1024, 1024)]
#: Calls per batch and batches of the call-overhead measurement.
OVERHEAD_CALLS, OVERHEAD_BATCHES = 200, 5

#: Triton: the tutorial's matmul with fp32 configurations (five, autotuned per shape).
TRITON_CONFIGS = [(128, 128, 32, 3, 8), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4),
                  (128, 256, 32, 3, 8), (64, 64, 32, 4, 4)]


def log(*a):
    print(f"[{time.time() - T_START:6.1f}s]", *a, flush=True)


def elapsed() -> float:
    return time.time() - T_START


def part(result: dict, name: str):
    """Decorator-like runner: result[name] = fn() or {"error", "traceback"}."""
    def run(fn, *a, **kw):
        t0 = time.time()
        try:
            out = fn(*a, **kw)
        except Exception as e:  # noqa: BLE001 - never crash as a whole
            out = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-3000:]}
            log(f"{name}: FAILED {out['error']}")
        if isinstance(out, dict):
            out.setdefault("seconds", round(time.time() - t0, 1))
        result[name] = out
        return out
    return run


# -- 1. env ---------------------------------------------------------------------------

def env_part() -> dict:
    import microkernel.gpu  # noqa: F401  (the import under test: no cffi)
    cffi_loaded = "cffi" in sys.modules
    from numba import cuda
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    out = {"device": name, "cc": list(dev.compute_capability),
           "sm_count": int(dev.MULTIPROCESSOR_COUNT), "cffi_imported_by_microkernel_gpu": cffi_loaded,
           "row_stack_shim": ROW_STACK_SHIM, "CUPY_TF32": os.environ.get("CUPY_TF32"),
           "python": platform.python_version(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    for mod in ("numpy", "numba", "numba_cuda", "cupy", "torch", "triton", "cuda.core",
                "cuda.bindings"):
        try:
            m = __import__(mod, fromlist=["__version__"])
            out[mod] = getattr(m, "__version__", "?")
        except Exception as e:  # noqa: BLE001
            out[mod] = f"missing ({type(e).__name__})"
    out["nvidia_smi"] = nvidia_smi()
    log("env:", json.dumps(out))
    return out


# -- 2. compile -----------------------------------------------------------------------

def variant_list(quick: bool):
    from microkernel.gpu.launch import AUTO_TILES
    from microkernel.gpu.sweep import CANDIDATES
    from microkernel.gpu.tiles import LEGACY_TILE
    vs = [(t, "auto candidate", ("vec", "scalar", "exact")) for t in AUTO_TILES]
    if not quick:
        vs += [(t, "sweep candidate", ("vec",)) for t in CANDIDATES if t not in AUTO_TILES]
        vs.append((LEGACY_TILE, "original kernel (no warp tile)", ("vec",)))
    return vs


def compile_part(variants, sm_count: int) -> dict:
    from microkernel.gpu import kernel as gk, occupancy as occ
    lim = occ.SmLimits(name="sm_90", sm_count=sm_count)
    rows = {}
    for t, label, which in variants:
        row = {"label": label, "tile": t.as_dict(), "variants": {}}
        parts = (False, True) if label == "auto candidate" else (False,)
        for v, part in [(v, p) for p in parts for v in which]:
            r = {}
            t0 = time.time()
            try:
                kern = gk.kernel_for(t)
                kern.compile(v, part)
                r["compile_s"] = round(time.time() - t0, 1)
                r.update(kern.resources(v, part))
                r["spills"] = r["local_bytes"] > 0
                o = occ.occupancy(r["regs"], t.threads, r["shared_bytes"], lim)
                r["occupancy"] = o.as_dict()
                try:
                    from numba.cuda.core import sigutils
                    args, _ = sigutils.normalize_signature(kern.signature)
                    disp = kern.dispatcher_for(v, "kernel" if part else "last block")
                    k = disp.overloads[tuple(args)]
                    r["driver_blocks_per_sm"] = int(k.max_cooperative_grid_blocks(t.threads)
                                                    // sm_count)
                except Exception as e:  # noqa: BLE001
                    r["driver_blocks_per_sm"] = f"n/a ({type(e).__name__})"
            except Exception as e:  # noqa: BLE001
                r["error"] = f"{type(e).__name__}: {e}"
                r["traceback"] = traceback.format_exc()[-2000:]
            v = v + ("+partials" if part else "")
            row["variants"][v] = r
            log(f"compile {t.name} [{v}]: " + (r.get("error") or
                f"{r['compile_s']} s, {r['regs']} regs, {r['local_bytes']} B local, "
                f"{r['shared_bytes']} B smem, {r['occupancy']['blocks_per_sm']} blocks/SM "
                f"(driver {r['driver_blocks_per_sm']})"))
        rows[t.name] = row
    return rows


# -- 3. validation (catalogue) --------------------------------------------------------

def catalogue_part(variants) -> dict:
    from microkernel.gpu import kernel as gk, port as gp
    out = {}
    for t, _, which in variants:
        cases = gp.VALIDATION_CASES
        if "scalar" not in which and t.warp_tiled:      # float4 only: aligned cases
            cases = tuple(c for c in cases if c[3] % 4 == 0 and c[2] % 4 == 0)
        try:
            res = gp.validate(gk.kernel_for(t), cases)
            bad = [r for r in res if not r["ok"]]
            out[t.name] = {"cases": len(res), "failed": bad}
            log(f"catalogue {t.name}: {len(res) - len(bad)}/{len(res)} ok"
                + (f" FAILED {[b['label'] for b in bad]}" if bad else ""))
        except Exception as e:  # noqa: BLE001
            out[t.name] = {"error": f"{type(e).__name__}: {e}",
                           "traceback": traceback.format_exc()[-2000:]}
            log(f"catalogue {t.name}: ERROR {out[t.name]['error']}")
    return out


# -- Triton -----------------------------------------------------------------------------

def make_triton():
    import triton
    import triton.language as tl

    configs = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                             num_stages=st, num_warps=nw)
               for bm, bn, bk, st, nw in TRITON_CONFIGS]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                      stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
        pid = tl.program_id(axis=0)
        num_pid_m = tl.cdiv(M, BLOCK_M)
        num_pid_n = tl.cdiv(N, BLOCK_N)
        num_pid_in_group = GROUP_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m
        offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
        offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
            acc = tl.dot(a, b, acc, input_precision="ieee")
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptrs, acc, mask=c_mask)

    def run(a, b, c):
        M, K = a.shape
        _, N = b.shape
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
        matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                            b.stride(1), c.stride(0), c.stride(1))
        return c

    return run, matmul_kernel


# -- timing helpers ---------------------------------------------------------------------

class Timer:
    """CUDA-event timing of a batch of back-to-back calls, queued behind a spin
    kernel (torch.cuda._sleep) so that the host's launch overhead is not counted
    while the GPU is busy."""

    def __init__(self):
        import torch
        self.torch = torch
        self.sleep_ok = hasattr(torch.cuda, "_sleep")
        torch.cuda.synchronize()
        # cycles per microsecond of torch.cuda._sleep (calibrated once)
        self.cyc_per_us = 1980.0
        if self.sleep_ok:
            try:
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                torch.cuda._sleep(2_000_000)
                e.record()
                e.synchronize()
                self.cyc_per_us = 2_000_000 / (s.elapsed_time(e) * 1000.0)
            except Exception:  # noqa: BLE001
                self.sleep_ok = False

    def per_call(self, fn, reps: int, host_us: float = 30.0) -> float:
        """Seconds per call (GPU timeline) of ``reps`` back-to-back calls."""
        torch = self.torch
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if self.sleep_ok:
            torch.cuda._sleep(int(self.cyc_per_us * (reps * host_us + 200)))
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) / 1000.0 / reps


def reps_for(seconds_per_call: float) -> int:
    return int(max(3, min(200, 0.02 / max(seconds_per_call, 1e-6))))


def interleaved(timer: Timer, contenders: dict, rounds: int, seed: int) -> dict:
    """name -> list of seconds per call, one per round; order shuffled each round."""
    rng = random.Random(seed)
    est = {}
    for nm, fn in contenders.items():                # warm-up and estimate
        fn()
        est[nm] = timer.per_call(fn, 2)
    times = {nm: [] for nm in contenders}
    names = list(contenders)
    for _ in range(rounds):
        rng.shuffle(names)
        for nm in names:
            times[nm].append(timer.per_call(contenders[nm], reps_for(est[nm])))
    return times


def reference_and_bound(A, B):
    """The float64 product of torch CUDA matrices A, B and the per-element bound
    ``C_BOUND (K+2) U |A||B|`` of :func:`microkernel.gpu.port.validate`."""
    from microkernel.gpu import port as gp
    ref = A.double() @ B.double()
    return ref, gp.C_BOUND * (A.shape[1] + 2) * gp.U * (A.abs().double() @ B.abs().double())


# -- 4. the table ---------------------------------------------------------------------------

def table_part(result: dict, args, tile_names: dict) -> dict:
    import cupy as cp
    import torch
    from numba import cuda
    from microkernel import stats
    from microkernel.gpu import front, launch
    timer = Timer()
    result["timer"] = {"sleep_kernel": timer.sleep_ok, "cycles_per_us": timer.cyc_per_us}
    try:
        triton_run, triton_kernel = make_triton()
    except Exception as e:  # noqa: BLE001
        triton_run, triton_kernel = None, None
        result["triton_error"] = f"{type(e).__name__}: {e}"
        log("triton unavailable:", result["triton_error"])
    out = {}
    fixed = [t for t in tile_names.values()]
    for (m, n, k) in SHAPES:
        label = f"{m}x{n}x{k}"
        if elapsed() > BUDGET_S - 60:
            out[label] = {"skipped": "time budget"}
            continue
        row = {"m": m, "n": n, "k": k}
        try:
            g = torch.Generator(device="cuda").manual_seed(m * 7 + n * 3 + k)
            A = torch.rand((m, k), device="cuda", generator=g, dtype=torch.float32) * 2 - 1
            B = torch.rand((k, n), device="cuda", generator=g, dtype=torch.float32) * 2 - 1
            C = torch.empty((m, n), device="cuda", dtype=torch.float32)
            ref, bound = reference_and_bound(A, B)
            dA, dB, dC = cuda.as_cuda_array(A), cuda.as_cuda_array(B), cuda.as_cuda_array(C)
            cA, cB, cC = cp.asarray(A), cp.asarray(B), cp.asarray(C)

            def check(name):
                err = (C.double() - ref).abs()
                ok = bool(torch.isfinite(C).all()) and bool((err <= bound).all())
                row.setdefault("valid", {})[name] = {"ok": ok, "max_err": float(err.max()),
                                                     "max_bound": float(bound.max())}
                return ok

            contenders = {}
            C.fill_(float("nan"))
            front.gemm(dA, dB, dC)
            row["auto_plan"] = front.gemm.last_plan.as_dict()
            if check("auto"):
                contenders["auto"] = lambda: front.gemm(dA, dB, dC)
            for t in fixed:
                C.fill_(float("nan"))
                try:
                    front.gemm(dA, dB, dC, tile=t)
                    lp = front.gemm.last_plan
                    row.setdefault("fixed_plans", {})[t.name] = lp.as_dict() if lp else None
                    if check(t.name):
                        contenders[t.name] = (lambda t=t: front.gemm(dA, dB, dC, tile=t))
                except Exception as e:  # noqa: BLE001
                    row.setdefault("valid", {})[t.name] = {"ok": False,
                                                           "error": f"{type(e).__name__}: {e}"}
            C.fill_(float("nan"))
            cp.matmul(cA, cB, out=cC)
            cp.cuda.Device().synchronize()
            if check("cuBLAS"):
                contenders["cuBLAS"] = lambda: cp.matmul(cA, cB, out=cC)
            if triton_run is not None:
                try:
                    C.fill_(float("nan"))
                    triton_run(A, B, C)               # autotunes once for this shape
                    torch.cuda.synchronize()
                    row["triton_config"] = str(getattr(triton_kernel, "best_config", "?"))
                    if check("Triton"):
                        contenders["Triton"] = lambda: triton_run(A, B, C)
                except Exception as e:  # noqa: BLE001
                    row["triton_error"] = f"{type(e).__name__}: {e}"
            rounds = args.rounds if m * n * k < 2e11 else max(3, args.rounds - 2)
            times = interleaved(timer, contenders, rounds, seed=m + n + k)
            flop = 2.0 * m * n * k
            row["tflops"] = {nm: flop / statistics.median(v) / 1e12 for nm, v in times.items()}
            row["rounds"] = rounds
            if "cuBLAS" in times:
                cb = np.array(times["cuBLAS"])[None, :]
                row["vs_cublas"] = {nm: stats.bootstrap(stats.paired_ratios(
                    cb, np.array(v)[None, :])).as_dict() for nm, v in times.items()}
            fx = {nm: tf for nm, tf in row["tflops"].items() if nm in tile_names}
            if fx:
                best = max(fx, key=fx.get)
                row["best_fixed"] = {"tile": best, "tflops": fx[best]}
            row["times_s"] = times
            cbt = row["tflops"].get("cuBLAS")
            pct = (lambda nm: 100.0 * row["tflops"][nm] / cbt if cbt and nm in row["tflops"]
                   else None)
            row["pct_cublas"] = {nm: pct(nm) for nm in row["tflops"]}
            log(f"{label}: cuBLAS {cbt and round(cbt, 2)} TFLOP/s; Triton "
                f"{pct('Triton') and round(pct('Triton'), 1)}%; auto {pct('auto') and round(pct('auto'), 1)}% "
                f"({row['auto_plan']['tile']} split {row['auto_plan']['split']}); best fixed "
                f"{row.get('best_fixed', {}).get('tile')} "
                f"{pct(row['best_fixed']['tile']) and round(pct(row['best_fixed']['tile']), 1) if 'best_fixed' in row else None}%")
        except Exception as e:  # noqa: BLE001
            row["error"] = f"{type(e).__name__}: {e}"
            row["traceback"] = traceback.format_exc()[-2500:]
            log(f"{label}: ERROR {row['error']}")
        out[label] = row
        launch.clear_plans()                          # free workspaces between shapes
    return out


# -- 5. split-K scan ---------------------------------------------------------------------

def splitk_part(extra: bool = False, others=()) -> dict:
    import torch
    from numba import cuda
    from microkernel.gpu import front, launch
    timer = Timer()
    out = {}
    for (m, n, k), splits in {**SCAN, **(SCAN_LARGE if extra else {})}.items():
        if elapsed() > BUDGET_S - 45:
            break
        A = torch.rand((m, k), device="cuda") - 0.5
        B = torch.rand((k, n), device="cuda") - 0.5
        C = torch.empty((m, n), device="cuda")
        dA, dB, dC = cuda.as_cuda_array(A), cuda.as_cuda_array(B), cuda.as_cuda_array(C)
        auto = launch.plan_launch(m, n, k, limits=launch.device_limits())
        rows = []
        for t in list(launch.AUTO_TILES) + list(others) + (scan_extra() if extra else []):
            if elapsed() > BUDGET_S + 60:           # the extra tiles' compiles: stop in time
                rows.append({"tile": t.name, "skipped": "time budget"})
                continue
            for s in sorted(set(splits) | ({auto.split} if t == auto.tile else set())):
                if s > 1 and k // s < t.bk:
                    continue
                try:
                    p = launch.plan_launch(m, n, k, tile=t, split=s,
                                           limits=launch.device_limits())
                except ValueError as e:     # e.g. the split's workspace is over the limit
                    rows.append({"tile": t.name, "split": s, "skipped": str(e)})
                    continue
                fn = (lambda t=t, s=s: front.gemm(dA, dB, dC, tile=t, split=s))
                fn()
                ts = [timer.per_call(fn, SCAN_CALLS) for _ in range(3)]
                rows.append({"tile": t.name, "split": p.split, "blocks": p.blocks,
                             "waves": round(p.waves, 3), "predicted_us": round(p.predicted_s * 1e6, 1),
                             "measured_us": round(statistics.median(ts) * 1e6, 1)})
        timed = [r for r in rows if "measured_us" in r]
        best = min(timed, key=lambda r: r["measured_us"])
        pick = next((r for r in timed if r["tile"] == auto.tile.name
                     and r["split"] == auto.split), None)
        out[f"{m}x{n}x{k}"] = {"auto": auto.as_dict(), "scan": rows, "measured_best": best,
                               "planner_measured_us": pick and pick["measured_us"],
                               "planner_vs_best": pick and round(pick["measured_us"]
                                                                 / best["measured_us"], 3)}
        log(f"tile/split scan {m}x{n}x{k}: planner {auto.tile.name} split {auto.split} "
            f"(pred {auto.predicted_s * 1e6:.1f} us, measured {pick and pick['measured_us']}); "
            f"measured best {best['tile']} split {best['split']} {best['measured_us']} us")
        launch.clear_plans()
    return out


#: Shapes of the exact/vec comparison (``--exact-ab``): every AUTO tile divides them.
EXACT_AB_SHAPES = [(1024, 1024, 1024), (4096, 4096, 4096), (3072, 1536, 1024), (2048, 2048, 2048)]


def exact_ab_part() -> dict:
    """The warp-tiled kernel's exact variant against its vec variant: every AUTO tile at
    the split the planner gives it, the same buffers, interleaved rounds, each output
    checked against float64 first (the measurement behind ``simt.EXACT_SLOWER``)."""
    import torch
    from numba import cuda
    from microkernel.gpu import front, launch
    timer = Timer()
    out = {}
    for (m, n, k) in EXACT_AB_SHAPES:
        A = torch.rand((m, k), device="cuda") * 2 - 1
        B = torch.rand((k, n), device="cuda") * 2 - 1
        C = torch.empty((m, n), device="cuda")
        ref, bound = reference_and_bound(A, B)
        dA, dB, dC = cuda.as_cuda_array(A), cuda.as_cuda_array(B), cuda.as_cuda_array(C)
        cont, invalid, pairs = {}, [], {}
        for t in launch.AUTO_TILES:
            p = launch.plan_launch(m, n, k, tile=t, limits=launch.device_limits())
            pairs[t.name] = tuple(f"{t.name}/s{p.split}/{v}" for v in ("exact", "vec"))
            kern = front._resolve_tile(t)
            W, T = launch.split_buffers(t, m, n, p.split)
            for v in ("vec", "exact"):
                fn = (lambda kern=kern, v=v, W=W, T=T, p=p: kern.launch(
                    dA, dB, dC, 1.0, 0.0, W=W, T=T, split=p.split, kslice=p.kslice, variant=v))
                C.fill_(float("nan"))
                fn()
                torch.cuda.synchronize()
                label = f"{t.name}/s{p.split}/{v}"
                if bool(((C.double() - ref).abs() <= bound).all()):
                    cont[label] = fn
                else:
                    invalid.append(label)
        times = interleaved(timer, cont, 7, seed=m + n)
        med = {kk: statistics.median(vv) * 1e6 for kk, vv in times.items()}
        ratios = {}
        for t, (ex, ve) in pairs.items():
            if ex in med and ve in med:
                ratios[t] = round(med[ex] / med[ve], 3)
                log(f"exact/vec {m}x{n}x{k} {t}: vec {med[ve]:.1f} us, exact "
                    f"{med[ex]:.1f} us, exact/vec {ratios[t]}")
        out[f"{m}x{n}x{k}"] = {"us": med, "exact_over_vec": ratios, "invalid": invalid,
                               "times_s": times}
        launch.clear_plans()
    return out


# -- 6. call overhead -----------------------------------------------------------------------

def host_us_samples(fn, timer, calls: int = OVERHEAD_CALLS,
                    batches: int = OVERHEAD_BATCHES) -> list:
    """Host microseconds per call of ``fn``, one value per batch of ``calls`` calls,
    each batch issued while a 20 ms spin kernel keeps the GPU busy (so that launches
    only queue)."""
    import torch
    vals = []
    for _ in range(batches):
        fn()
        torch.cuda.synchronize()
        if timer.sleep_ok:
            torch.cuda._sleep(int(timer.cyc_per_us * 20000))   # 20 ms of GPU work
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        vals.append((time.perf_counter() - t0) / calls * 1e6)
        torch.cuda.synchronize()
    return vals


def problem(m: int, n: int, k: int, seed: int):
    """Seeded CUDA operands of an m x n x k GEMM, each in [-0.5, 0.5): A, B, C0, and the
    float64 A B with its bound (:func:`reference_and_bound`)."""
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.rand(m, k, device="cuda", generator=g) - 0.5
    B = torch.rand(k, n, device="cuda", generator=g) - 0.5
    C0 = torch.rand(m, n, device="cuda", generator=g) - 0.5
    return (A, B, C0) + tuple(reference_and_bound(A, B))


def checked_runner(r, A, B, C0, ref, bound, beta: float):
    """Runner ``r`` (``launch.runner``) called once with alpha 1 on a copy C of C0, and
    (a call of it on the same A, B, C, its largest ``|C - (ref + beta C0)| / bound``)."""
    import torch
    C = C0.clone()
    r.run_fast(A.data_ptr(), B.data_ptr(), C.data_ptr(), 1.0, beta)
    torch.cuda.synchronize()
    err = ((C.double() - (ref + beta * C0.double())).abs() / (bound + 1e-30)).max().item()
    return (lambda: r.run_fast(A.data_ptr(), B.data_ptr(), C.data_ptr(), 1.0, beta)), err


def cublas_call(A, B, C0, beta: float):
    """cuBLAS on a copy of C0: ``torch.mm`` when beta is 0, else ``addmm_`` with beta."""
    import torch
    C = C0.clone()
    if beta:
        return lambda: C.addmm_(A, B, beta=beta)
    return lambda: torch.mm(A, B, out=C)


def race_args(doc: str, argv=None, rounds: int = 9, extra=None):
    """The arguments of a race script: ``--rounds`` (default ``rounds``), ``--json``
    (a path for the results), and what ``extra(parser)`` adds."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--json", default=None)
    if extra:
        extra(ap)
    return ap.parse_args(argv)


def save_json(path, data) -> None:
    """Write ``data`` to ``path`` as indented JSON, when a path is given."""
    if path:
        with open(path, "w") as f:
            json.dump(data, f, indent=1)


def back_to_back_us(fn, calls: int = 200) -> float:
    """Microseconds per call of ``calls`` calls of ``fn`` from one synchronize to the
    next, after one warm-up call: what a loop of calls sees (the host's cost or the
    GPU's, whichever is longer), unlike :func:`host_us_samples` and :class:`Timer`."""
    import torch
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def overhead_part() -> dict:
    import cupy as cp
    import torch
    from numba import cuda
    from microkernel.gpu import front, launch
    timer = Timer()
    out = {"method": "host microseconds per call while the GPU is busy (calls only "
                     "queue); median of 5 batches of 200 calls"}

    def host_us(fn):
        return round(statistics.median(host_us_samples(fn, timer)), 2)

    def noop():
        return None

    out["noop_python_call_us"] = host_us(noop)
    for (m, n, k) in OVERHEAD_SHAPES:
        A = torch.rand((m, k), device="cuda")
        B = torch.rand((k, n), device="cuda")
        C = torch.empty((m, n), device="cuda")
        dA, dB, dC = cuda.as_cuda_array(A), cuda.as_cuda_array(B), cuda.as_cuda_array(C)
        cA, cB, cC = cp.asarray(A), cp.asarray(B), cp.asarray(C)
        r = {}

        def meas(key, fn):
            try:
                r[key] = fn()
            except Exception as e:  # noqa: BLE001 - one measurement, not the part
                r[key] = f"error: {type(e).__name__}: {e}"
        front.gemm(dA, dB, dC)
        plan = front.gemm.last_plan
        r["plan"] = plan.summary()
        meas("gemm_numba_arrays_us", lambda: host_us(lambda: front.gemm(dA, dB, dC)))
        meas("gemm_cupy_arrays_us", lambda: host_us(lambda: front.gemm(cA, cB, cC)))
        meas("gemm_torch_arrays_us", lambda: host_us(lambda: front.gemm(A, B, C)))
        run = launch.runner(m, n, k, None, None, "vec", False, False, launch.device_limits())
        r["launch_path"] = run.path + (f" ({run.fast_error})" if run.fast_error else "")
        if run.direct:
            pa, pb, pc = (x.device_ctypes_pointer.value for x in (dA, dB, dC))
            meas("bare_launch_us",
                 lambda: host_us(lambda: run.run_fast(pa, pb, pc, 1.0, 0.0)))
        meas("numba_dispatcher_launch_us", lambda: host_us(lambda: run.run(dA, dB, dC, 1.0, 0.0)))
        meas("cupy_matmul_us", lambda: host_us(lambda: cp.matmul(cA, cB, out=cC)))
        meas("kernel_gpu_us", lambda: round(timer.per_call(lambda: front.gemm(dA, dB, dC),
                                                           SCAN_CALLS) * 1e6, 2))
        r["gemm_overhead_us"] = r["gemm_numba_arrays_us"]
        r["bar_20us_met"] = (isinstance(r["gemm_overhead_us"], float)
                             and r["gemm_overhead_us"] < 20.0)
        out[f"{m}x{n}x{k}"] = r
        log(f"overhead {m}x{n}x{k}: {json.dumps(r)}")
        launch.clear_plans()
    return out


# -- 7. sweep -----------------------------------------------------------------------------

def sweep_part(quick: bool) -> dict:
    from microkernel.gpu import sweep, launch
    tiles = list(launch.AUTO_TILES) + ([] if quick else [sweep.CANDIDATES[3]])
    res = sweep.sweep_gpu(tiles=tiles, shapes=[(35, 700, 2048), (1024, 1024, 1024),
                                               (2048, 2048, 2048)],
                          rounds=6, budget=25.0, min_time=0.01, min_rounds=3,
                          progress=lambda s: log("sweep:", s))
    text = sweep.render_text(res)
    log("sweep result:\n" + text)
    cli = {"skipped": "quick or short of time (it would compile every sweep candidate)"}
    try:                                   # the CLI entry (needs rich)
        if quick:
            raise StopIteration
        from microkernel.commands import sweep as cs
        ap = argparse.ArgumentParser()
        cs.add_arguments(ap)
        a = ap.parse_args(["--gpu", "--workload", "square", "--scale", "8", "--rounds", "3",
                           "--budget", "10"])
        cli = {"args": "--gpu --workload square --scale 8 --rounds 3 --budget 10",
               "returncode": cs.run(a)}
    except StopIteration:
        pass
    except Exception as e:  # noqa: BLE001
        cli = {"error": f"{type(e).__name__}: {e}"}
    res.pop("samples", None)
    return {"result": res, "markdown": text, "cli": cli}


# -- 8. tests on the GPU ---------------------------------------------------------------------

def tests_part() -> dict:
    code = ("import sys, types; p = types.ModuleType('microkernel'); "
            f"p.__path__ = [{str(ROOT / 'microkernel')!r}]; sys.modules['microkernel'] = p; "
            "import numpy as np; np.row_stack = getattr(np, 'row_stack', np.vstack); "
            "import pytest; sys.exit(pytest.main(['tests/test_gpu_simt.py', "
            "'tests/test_gpu_sim.py', '-q', '--noconftest', '-p', 'no:cacheprovider', "
            "'-o', 'addopts=', '-W', 'ignore::DeprecationWarning', '-x', "
            "'-k', 'not sweep_gpu_without']))")
    t0 = time.time()
    pr = subprocess.run([sys.executable, "-c", code], cwd=ROOT,
                        env=dict(os.environ, NUMBA_ENABLE_CUDASIM="0"),
                        capture_output=True, text=True, timeout=max(30, BUDGET_S + 50 - elapsed()))
    tail = (pr.stdout + pr.stderr)[-3000:]
    log("tests on the GPU:", pr.returncode, (tail.strip().splitlines() or [""])[-1])
    return {"returncode": pr.returncode, "seconds": round(time.time() - t0, 1), "tail": tail}


# -- report -------------------------------------------------------------------------------

def _one(x, n: int = 120) -> str:
    """One table cell: no newlines or pipes, at most n characters."""
    return " ".join(str(x).replace("|", "/").split())[:n]


def render_md(r: dict) -> str:
    env = r.get("env", {})
    if "error" in env:
        env = {}
    L = [f"# Issue 23: SIMT port vs cuBLAS and Triton on {env.get('device', '?')}", "",
         f"- {env.get('date')}; cc {env.get('cc')}, {env.get('sm_count')} SMs; "
         f"`{env.get('nvidia_smi')}`",
         f"- numpy {env.get('numpy')}, numba {env.get('numba')}, numba-cuda "
         f"{env.get('numba_cuda')}, cupy {env.get('cupy')}, torch {env.get('torch')}, triton "
         f"{env.get('triton')}, cuda.core {env.get('cuda.core')}; row_stack shim "
         f"{env.get('row_stack_shim')}; cffi imported by microkernel.gpu: "
         f"{env.get('cffi_imported_by_microkernel_gpu')}; CUPY_TF32={env.get('CUPY_TF32')}",
         "- timing: CUDA events around batches of back-to-back calls queued behind a spin "
         "kernel (host time not counted), interleaved rounds with the order shuffled, "
         "medians; % of cuBLAS = median TFLOP/s ratio", ""]
    comp = r.get("compile", {})
    if isinstance(comp, dict) and "error" not in comp:
        L += ["## Variants", "", "| kernel | role | variant | compile s | regs | local B | "
              "smem B | blocks/SM (model / driver) | catalogue |", "|---|---|---|---:|---:|---:|---:|---|---|"]
        cat = r.get("catalogue", {})
        for name, row in comp.items():
            if not isinstance(row, dict) or "variants" not in row:
                continue
            c = cat.get(name, {}) if isinstance(cat, dict) else {}
            cs = (f"{c['cases'] - len(c['failed'])}/{c['cases']}" if "cases" in c
                  else _one(c.get("error", "-"), 60))
            for v, x in row["variants"].items():
                if "error" in x:
                    L.append(f"| {name} | {row['label']} | {v} | error: {_one(x['error'], 90)} ||||||")
                    continue
                L.append(f"| {name} | {row['label']} | {v} | {x['compile_s']} | {x['regs']} | "
                         f"{x['local_bytes']}{' SPILL' if x['spills'] else ''} | {x['shared_bytes']} | "
                         f"{x['occupancy']['blocks_per_sm']} / {x['driver_blocks_per_sm']} | {cs} |")
        L.append("")
    tab = r.get("table", {})
    if isinstance(tab, dict) and "error" not in tab:
        L += ["## The issue's table (same run)", "",
              "| shape | cuBLAS TFLOP/s | Triton % | ours auto % | auto plan | best fixed % | "
              "best fixed tile | auto >= Triton | all valid |",
              "|---|---:|---:|---:|---|---:|---|---|---|"]
        for label, row in tab.items():
            if not isinstance(row, dict) or "tflops" not in row:
                L.append(f"| {label} | {_one(row.get('error') or row.get('skipped') if isinstance(row, dict) else row)} ||||||||")
                continue
            p = row["pct_cublas"]
            f = lambda x: "-" if x is None else f"{x:.1f}"  # noqa: E731
            ap = row["auto_plan"]
            bf = row.get("best_fixed", {})
            ok = all(v.get("ok") for v in row.get("valid", {}).values())
            ge = (p.get("auto") is not None and p.get("Triton") is not None
                  and p["auto"] >= p["Triton"])
            L.append(f"| {label} | {row['tflops'].get('cuBLAS', float('nan')):.2f} | "
                     f"{f(p.get('Triton'))} | {f(p.get('auto'))} | {ap['tile']} split "
                     f"{ap['split']} ({ap['blocks']} blocks, {ap['waves']:.2f} waves) | "
                     f"{f(p.get(bf.get('tile')))} | {bf.get('tile', '-')} | "
                     f"{'yes' if ge else 'NO'} | {'yes' if ok else 'NO'} |")
        L.append("")
    ov = r.get("overhead", {})
    if isinstance(ov, dict) and "error" not in ov:
        L += ["## Call overhead (host us per call on device arrays)", ""]
        for k, v in ov.items():
            if isinstance(v, dict):
                L.append(f"- {k}: gemm() {v.get('gemm_numba_arrays_us')} us (cupy arrays "
                         f"{v.get('gemm_cupy_arrays_us')}, torch {v.get('gemm_torch_arrays_us')}); "
                         f"bare launch {v.get('bare_launch_us')}; numba dispatcher "
                         f"{v.get('numba_dispatcher_launch_us')}; cupy.matmul "
                         f"{v.get('cupy_matmul_us')}; kernel {v.get('kernel_gpu_us')} us on the GPU; "
                         f"path {v.get('launch_path')}; < 20 us: {v.get('bar_20us_met')}")
        L.append(f"- no-op Python call: {ov.get('noop_python_call_us')} us")
        L.append("")
    sk = r.get("splitk", {})
    if isinstance(sk, dict) and "error" not in sk:
        L += ["## Tile and split-K scan (measured vs the planner)", ""]
        for k, v in sk.items():
            if isinstance(v, dict) and "scan" in v:
                L.append(f"- {k}: planner {v['auto']['tile']} split {v['auto']['split']} "
                         f"(pred {v['auto']['predicted_us']} us, measured "
                         f"{v.get('planner_measured_us')} us); measured best "
                         f"{v['measured_best']['tile']} split {v['measured_best']['split']} "
                         f"{v['measured_best']['measured_us']} us (planner / best "
                         f"{v.get('planner_vs_best')})")
        L.append("")
    sw = r.get("sweep", {})
    if isinstance(sw, dict) and "markdown" in sw:
        L += ["## microkernel sweep --gpu (small workload)", "", sw["markdown"], "",
              f"CLI: {sw.get('cli')}", ""]
    for k in ("env", "compile", "catalogue", "table", "splitk", "overhead", "sweep", "tests"):
        v = r.get(k)
        if isinstance(v, dict) and "error" in v:
            L.append(f"- part {k} FAILED: {_one(v['error'], 300)}")
    t = r.get("tests")
    if isinstance(t, dict) and "returncode" in t:
        last = [x for x in t["tail"].strip().splitlines() if x.strip()][-1:] or [""]
        L.append(f"- tests on the GPU: exit {t['returncode']}, `{last[0]}` ({t['seconds']} s)")
    L += ["", "## Bars (issue 23)", ""] + bars(r)
    L += ["", f"Wall time: {r.get('wall_s')} s.", ""]
    return "\n".join(L)


def bars(r: dict) -> list:
    """The issue's bars, each met / NOT met / unknown, from this run."""
    out = []
    tab = r.get("table") if isinstance(r.get("table"), dict) else {}
    tab = {k: v for k, v in tab.items() if isinstance(v, dict) and "pct_cublas" in v}

    def pct(label, who):
        row = tab.get(label) or {}
        return (row.get("pct_cublas") or {}).get(who)

    for label in ("4096x4096x4096", "8192x8192x8192"):
        a, t = pct(label, "auto"), pct(label, "Triton")
        bf = ((tab.get(label) or {}).get("best_fixed") or {}).get("tile")
        b = pct(label, bf) if bf else None
        best = max(x for x in (a, b, -1.0) if x is not None)
        ok = best >= 85.0 and (t is None or best >= t) if best >= 0 else None
        out.append(f"- {label}: >= 85% of cuBLAS and >= Triton: "
                   f"{'unknown' if ok is None else 'met' if ok else 'NOT met'} (auto "
                   f"{a and round(a, 1)}%, best fixed {b and round(b, 1)}%, Triton "
                   f"{t and round(t, 1)}%)")
    rows = [(lb, pct(lb, "auto"), pct(lb, "Triton")) for lb in tab]
    miss = [lb for lb, a, t in rows if a is not None and t is not None and a < t]
    known = [lb for lb, a, t in rows if a is not None and t is not None]
    out.append(f"- every shape, shape-adaptive >= Triton: "
               f"{'unknown' if not known else 'met' if not miss else 'NOT met: ' + ', '.join(miss)}"
               f" ({len(known)} shapes compared)")
    comp = r.get("compile") if isinstance(r.get("compile"), dict) else {}
    comp = {k: v for k, v in comp.items() if isinstance(v, dict)}
    spilled = [f"{n} [{v}]" for n, row in comp.items() if isinstance(row, dict)
               for v, x in row.get("variants", {}).items() if x.get("spills")]
    # a spilling partials kernel is never launched (launch.Runner reduces in the
    # last block instead); listed, not counted against the bar
    spills = [x for x in spilled if not x.endswith("+partials]")]
    unused = [x for x in spilled if x.endswith("+partials]")]
    compiled = [x for row in comp.values() for x in row.get("variants", {}).values()
                if "regs" in x]
    out.append(f"- no spills ({len(compiled)} variants compiled): "
               + ("NOT met: " + ", ".join(spills) if spills else "met" if compiled else "unknown")
               + (f" (spilling partials kernels, never launched: {', '.join(unused)})"
                  if unused else ""))
    bad = [f"{lb}: {w}" for lb, row in tab.items() if isinstance(row, dict)
           for w, v in (row.get("valid") or {}).items() if not v.get("ok")]
    out.append(f"- results within the float64 bound on every shape: "
               f"{'NOT met: ' + '; '.join(bad) if bad else 'met' if tab else 'unknown'}")
    ov = r.get("overhead") if isinstance(r.get("overhead"), dict) else {}
    vals = [v.get("gemm_overhead_us") for v in ov.values() if isinstance(v, dict)
            and "gemm_overhead_us" in v]
    nums = [v for v in vals if isinstance(v, float)]
    out.append(f"- call overhead < 20 us: "
               f"{'unknown' if not nums else 'met' if max(nums) < 20 else 'NOT met'} ({vals})")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="the shape-adaptive tiles (AUTO_TILES) only")
    ap.add_argument("--no-tests", action="store_true")
    ap.add_argument("--scan-extra", action="store_true",
                    help="the tile/split scan also times scan_extra()'s tiles")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--exact-ab", action="store_true",
                    help="first time each AUTO tile's exact variant against its vec variant")
    ap.add_argument("--group-m", type=int, default=0,
                    help="run with the AUTO_TILES grouped by this many block rows "
                         "(GpuTile.group_m); the scan also times them ungrouped")
    args = ap.parse_args(argv)
    outdir = pathlib.Path(os.environ.get("OUT") or "out")
    outdir.mkdir(parents=True, exist_ok=True)
    r: dict = {"argv": sys.argv[1:]}
    others = ()
    if args.group_m:
        import dataclasses
        from microkernel.gpu import launch
        others = tuple(dataclasses.replace(t, group_m=1) for t in launch.AUTO_TILES)
        launch.AUTO_TILES = tuple(dataclasses.replace(t, group_m=args.group_m)
                                  for t in others)
        r["auto_tiles"] = [t.name for t in launch.AUTO_TILES]
    part(r, "env")(env_part)
    sms = r["env"].get("sm_count", 132) if isinstance(r.get("env"), dict) else 132
    variants = variant_list(args.quick)
    if args.exact_ab:
        part(r, "exact_ab")(exact_ab_part)
    part(r, "compile")(compile_part, variants, sms)
    part(r, "catalogue")(catalogue_part, variants)
    tile_names = {t.name: t for t, _, _ in variants}
    part(r, "table")(lambda: table_part(r, args, tile_names))
    part(r, "overhead")(overhead_part)
    if elapsed() < BUDGET_S - 45:
        part(r, "splitk")(splitk_part, args.scan_extra, others)
    else:
        r["splitk"] = {"error": "skipped: time budget"}
    if elapsed() < BUDGET_S - 40:
        part(r, "sweep")(sweep_part, args.quick or elapsed() > BUDGET_S - 90)
    else:
        r["sweep"] = {"error": "skipped: time budget"}
    if not args.no_tests and elapsed() < BUDGET_S - 30:
        part(r, "tests")(tests_part)
    r["wall_s"] = round(elapsed(), 1)
    md = ""
    try:
        md = render_md(r)
    except Exception as e:  # noqa: BLE001
        md = f"render failed: {type(e).__name__}: {e}\n{traceback.format_exc()[-2000:]}"
    (outdir / "gpu_simt.json").write_text(json.dumps(r, indent=1, default=str))
    (outdir / "gpu_simt.md").write_text(md)
    print(md, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
