"""Where an AMX bf16 gemm() spends its time: the real kernel against diagnostic
variants of its micro-kernel that leave one cost out, timed in interleaved rounds.

The variants are C files (``--variant NAME=PATH``, each a copy of the generated
``c_src/ukernels/amx_bf16_32x32.c`` with one change) compiled with the same driver
(:func:`microkernel.get_kernel` ``source=``). They compute wrong results on purpose,
so they are timed directly, never validated and never used for anything else:

* ``nop``: the micro-kernel returns at once: packing and the loop nest only;
* ``noc``: no C tile load or store (C tiles zeroed, results dropped): the cost of
  C's traffic;
* ``l1a`` / ``l1b`` / ``l1ab``: the A / B / both tile loads read one fixed 4 KiB buffer
  (always in L1) instead of the packed panels: the cost of streaming them from L2.

    python bench/amx_breakdown.py --variant nop=.amxvar/diag_nop.c ... [--sizes 2048,4096]
                                  [--rounds 5] [--json PATH]

Prints GFLOP/s (the GEMM's flop count over each variant's time, median and 95%
interval) and each variant's time as a fraction of the real kernel's. Nothing is
asserted: this script measures and reports.
"""
import argparse
import json
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", default="amx_bf16_32x32")
    ap.add_argument("--variant", action="append", default=[], help="NAME=PATH.c (repeatable)")
    ap.add_argument("--sizes", default="2048,4096")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    import numpy as np
    import ml_dtypes  # noqa: F401  (bfloat16 operands)
    import microkernel as mk
    from microkernel import stats
    from microkernel.timing import Contender, Rounds

    kernels = {"kernel": mk.get_kernel(args.kernel)}
    for v in args.variant:
        name, path = v.split("=", 1)
        kernels[name] = mk.get_kernel(args.kernel, source=path)
    rng = np.random.default_rng(0)
    cons = []
    for n in (int(s) for s in args.sizes.split(",")):
        A = rng.standard_normal((n, n), dtype=np.float32).astype(ml_dtypes.bfloat16)
        B = rng.standard_normal((n, n), dtype=np.float32).astype(ml_dtypes.bfloat16)
        C = np.empty((n, n), np.float32)
        for name, k in kernels.items():
            cons.append(Contender(name, lambda A=A, B=B, C=C, k=k: mk.gemm(A, B, C, kernel=k, threads=1),
                                  2.0 * n ** 3, f"{n}^3"))
    r = Rounds(cons)
    for i in range(args.rounds):
        r.round()
    out = {"kernel": args.kernel, "rounds": args.rounds, "variants": dict(v.split("=", 1) for v in args.variant),
           "shapes": {}}
    for shape in r.shapes:
        rows = {}
        for name in kernels:
            g = r.contender(shape, name).flops / np.asarray(r.times[(shape, name)]) / 1e9
            iv = stats.bootstrap(g[None, :])
            rows[name] = {"gflops": iv.point, "lo": iv.lo, "hi": iv.hi, "rounds": g.tolist()}
        t0 = np.median(1 / np.array(rows["kernel"]["rounds"]))
        for name, row in rows.items():
            row["time_vs_kernel"] = float(np.median(1 / np.array(row["rounds"])) / t0)
            print(f"{shape:>8} {name:<8} {row['gflops']:8.1f} GFLOP/s [{row['lo']:.1f}, {row['hi']:.1f}]"
                  f"  time {row['time_vs_kernel']:.3f} of the kernel's", flush=True)
        out["shapes"][shape] = rows
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
