#!/usr/bin/env python3
"""gemm() called on PyTorch tensors, back to back, beside the same call on CuPy views of
the same memory and ``torch.mm`` (H200 machine).

Usage (on the device machine, from the repository root, numba on the GPU)::

    NUMBA_ENABLE_CUDASIM=0 python3 bench/gpu_torch_calls.py

For each shape (35x700x2048, 64^3, 128x1500x1280, 1024^3): one gemm() with alpha 1.5,
beta 0.5 checked against the float64 product (the largest error printed), then 7
rounds of 200 back-to-back calls of each contender from one synchronize to the next;
prints the plan and, per contender, the median, minimum and maximum microseconds per
call (``GEMM ...`` lines). At these sizes the host's cost per call is most of it: the
figures say what a Python loop of calls sees. Nothing is asserted.
"""
import statistics

import gpu_simt  # noqa: F401  (sets CUPY_TF32=0 and the numba environment first)
from gpu_simt import back_to_back_us


def main() -> int:
    import cupy as cp
    import torch
    from microkernel.gpu import front
    for m, n, k in ((35, 700, 2048), (64, 64, 64), (128, 1500, 1280), (1024, 1024, 1024)):
        A = torch.rand(m, k, device="cuda") - 0.5
        B = torch.rand(k, n, device="cuda") - 0.5
        C = torch.rand(m, n, device="cuda")
        C0 = C.clone()
        front.gemm(A, B, C, alpha=1.5, beta=0.5)
        torch.cuda.synchronize()
        want = 1.5 * (A.double() @ B.double()) + 0.5 * C0.double()
        err = (C.double() - want).abs().max().item()
        Cm = torch.empty(m, n, device="cuda")
        Ac, Bc, Cc = cp.asarray(A), cp.asarray(B), cp.asarray(C)
        fs = {"gemm(torch)": lambda: front.gemm(A, B, C),
              "gemm(cupy)": lambda: front.gemm(Ac, Bc, Cc),
              "torch.mm": lambda: torch.mm(A, B, out=Cm)}
        r = {nm: [] for nm in fs}
        for _ in range(7):
            for nm, f in fs.items():
                r[nm].append(back_to_back_us(f))
        print("GEMM", f"{m}x{n}x{k}", front.gemm.last_plan.summary().split(": ", 1)[1],
              f"max err {err:.2e}",
              {nm: (round(statistics.median(v), 2), round(min(v), 2), round(max(v), 2))
               for nm, v in r.items()}, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
