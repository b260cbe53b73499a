#!/usr/bin/env python3
"""Host microseconds per launch of the planner's plan, by launch path (H200 machine).

Usage (on the device machine, from the repository root)::

    python3 bench/gpu_launch_cost.py [--shape MxNxK ...]

For each shape (default 64^3, 35x700x2048, 1024^3, 512x512x4096): the runner's
launchers timed on the host while the GPU is busy (a ``torch.cuda._sleep`` spin
kernel ahead of each batch, so that calls only queue; median and minimum of 7
batches of 200 calls): each kernel's ``cuLaunchKernel`` (``DriverLauncher``) alone,
through ``cuda.bindings`` and through ctypes (``libcuda.so.1``), the plan's launches
one by one, the plan as one CUDA graph (``GraphLauncher``) with and without a node
update, ``Runner.run_fast`` and ``gemm()``; and whether the graph's C equals the
one-by-one launches' C bit for bit. Prints one line per shape (``LAUNCH ...``).
"""
from __future__ import annotations

import argparse
import ctypes
import statistics

import gpu_simt  # noqa: F401  (sets CUPY_TF32=0 and the numba environment first)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", action="append", default=[])
    args = ap.parse_args(argv)
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shape] or [
        (64, 64, 64), (35, 700, 2048), (1024, 1024, 1024), (512, 512, 4096)]
    import cupy as cp
    import torch
    from microkernel.gpu import front, launch
    from microkernel.gpu.launchers import GraphLauncher
    timer = gpu_simt.Timer()
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    lib.cuLaunchKernel.restype = ctypes.c_int

    def via_ctypes(d):
        h, dims, pp = ctypes.c_void_p(int(d.handle)), d._dims, ctypes.c_void_p(d._pp)

        def go():
            rc = lib.cuLaunchKernel(h, *dims, 0, None, pp, None)
            if rc:
                raise RuntimeError(f"cuLaunchKernel: {rc}")
        return go

    def host_us(fn):
        vals = gpu_simt.host_us_samples(fn, timer, 200, 7)
        return round(statistics.median(vals), 2), round(min(vals), 2)

    for m, n, k in shapes:
        A = cp.random.rand(m, k, dtype=cp.float32) - 0.5
        B = cp.random.rand(k, n, dtype=cp.float32) - 0.5
        C = cp.random.rand(m, n, dtype=cp.float32)
        C0 = C.copy()
        run = launch.runner(m, n, k, None, None, "vec", False, True, launch.device_limits())
        pa, pb, pc = A.data.ptr, B.data.ptr, C.data.ptr
        run.graph = None                      # run_fast: the slots, then one by one
        run.run_fast(pa, pb, pc, 1.5, -0.5)
        torch.cuda.synchronize()
        ref = C.copy()
        ls = [d for d in (run.drv, run.rdrv) if d is not None]
        g = GraphLauncher(ls)
        C[...] = C0
        g()
        torch.cuda.synchronize()
        res = {"plan": run.plan.summary(), "graph C == one-by-one C": bool(cp.array_equal(C, ref))}
        for i, d in enumerate(ls):
            res[f"kernel {i} cuLaunchKernel"] = host_us(d)
            res[f"kernel {i} ctypes"] = host_us(via_ctypes(d))
        res["one by one"] = host_us(lambda: [d() for d in ls])
        res["graph"] = host_us(g)
        res["graph update + launch"] = host_us(lambda: (g.update(), g()))
        res["run_fast (one by one)"] = host_us(lambda: run.run_fast(pa, pb, pc, 1.5, -0.5))
        run.graph = g
        res["run_fast (graph)"] = host_us(lambda: run.run_fast(pa, pb, pc, 1.5, -0.5))
        res["gemm"] = host_us(lambda: front.gemm(A, B, C, alpha=1.5, beta=-0.5))
        print("LAUNCH", f"{m}x{n}x{k}", res, flush=True)
        launch.clear_plans()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
