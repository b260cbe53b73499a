"""The team's dynamic units checked at many threads on a real machine (issue 24): the
default kernel's gemm() at 16 (or --threads) threads against the float64 reference on
shapes with every remainder, strided, transposed and column-major views, each with the
default units (the flow of c_src/mk_team.h, mk_loops_flow, with the parts the driver
picks), with 4 parts fixed (the default until 2026-12-06), with the old units (parts=1,
chunks=4) and with fixed shares between barriers (chunks=0, mk_loops), and the results
compared bit for bit (the units only change which thread computes which tile).

    python bench/team_check.py [--threads 16]

Prints one line per case and a summary; exit status 1 on any failure. Correctness
only: nothing here is timed."""
import argparse
import sys

import numpy as np

import microkernel as mk
from microkernel import validate

SHAPES = [(4096, 4096, 300), (1000, 1000, 1000), (517, 2049, 333), (33, 4100, 97),
          (3001, 17, 555), (255, 257, 4099), (1, 900, 900), (700, 1, 500), (64, 64, 1)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=16)
    args = ap.parse_args()
    rng = np.random.default_rng(11)
    bad = 0
    for (m, n, k) in SHAPES:
        for view in ("plain", "strided", "transposed", "col-major C"):
            A = rng.standard_normal((m, k)).astype(np.float32)
            B = rng.standard_normal((k, n)).astype(np.float32)
            C0 = rng.standard_normal((m, n)).astype(np.float32)
            if view == "strided":
                A = np.repeat(A, 2, axis=1)[:, ::2]
                B = B[::-1]
            elif view == "transposed":
                A = np.ascontiguousarray(A.T).T
                B = np.ascontiguousarray(B.T).T
            elif view == "col-major C":
                C0 = np.asfortranarray(C0)
            # one output buffer for both runs: C's alignment decides the driver's narrow
            # first panel (MK_C_ALIGN), and with it the rounding of the edge columns
            C = C0.copy(order="K")
            outs = []
            for blk in (None, {"parts": 4}, {"parts": 1, "chunks": 4}, {"chunks": 0}):
                np.copyto(C, C0)
                mk.gemm(A, B, C, alpha=1.25, beta=-0.5, threads=args.threads, blocking=blk)
                outs.append(C.copy())
            ref, bound = validate.reference(A, B, C0, 1.25, -0.5)
            ok, ratio, _, detail = validate.check(outs[0], ref, bound)
            same = [np.array_equal(outs[0], o) for o in outs[1:]]
            bad += (not ok) + (not all(same))
            print(f"{m}x{n}x{k} {view:12s} err/bound {ratio:.3g} "
                  f"{'ok' if ok else 'FAIL ' + detail}; 4 parts "
                  f"{'identical' if same[0] else 'DIFFER'}; old units "
                  f"{'identical' if same[1] else 'DIFFER'}; fixed shares "
                  f"{'identical' if same[2] else 'DIFFER'}", flush=True)
    print(f"{len(SHAPES) * 4} cases at {args.threads} threads ({mk.kernels()[0]}): {bad} failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
