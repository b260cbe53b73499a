"""How much of an fp32 gemm() is spent outside the micro-kernel: the packing of A and B
and the five loops. One tile's gemm() is timed against the same module built with a
micro-kernel that returns at once (``nop``: packing and loops only, C left as it was),
with numpy in the same interleaved rounds.

The ``nop`` build computes a wrong result on purpose: it is timed here, never validated
and never used otherwise. (The AMX tiles have their own breakdown, bench/amx_breakdown.py.)

    python bench/nop_share.py --kernel avx512_8x32_u4 [--sizes 1024,2048,4096]
                              [--rounds 7] [--threads 1] [--json PATH]

Prints each contender's GFLOP/s (the GEMM's flop count over its median time, with the
95% interval over rounds) and its time as a fraction of the real kernel's, paired by
round: ``nop`` at 0.03 means 3% of the gemm() call is packing and loops. Nothing is
asserted: this script measures and reports.
"""
import argparse
import os
import sys
import tempfile


def nop_source(src: str) -> str:
    """The generated fp32 micro-kernel ``src`` with ``return;`` before its K loop."""
    anchor = "    int64_t k = 0;\n"
    if anchor not in src:
        raise SystemExit("the generated kernel has no 'int64_t k = 0;' line any more: "
                         "update bench/nop_share.py")
    return src.replace(anchor, "    return;\n" + anchor, 1)


def main() -> int:
    from _breakdown import rows_against
    from microkernel.commands.common import json_arg, write_json
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", required=True, help="an fp32 tile name")
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", type=json_arg, default=None)
    args = ap.parse_args()
    import numpy as np
    import microkernel as mk
    from microkernel.codegen import generate
    from microkernel.timing import Contender, Rounds

    try:
        spec = mk.TileSpec.from_name(args.kernel)
    except ValueError as e:
        raise SystemExit(f"nop_share: {e}")
    if spec.types != "f32":
        raise SystemExit(f"{args.kernel}: an fp32 tile is needed (bench/amx_breakdown.py for AMX)")
    try:
        real = mk.get_kernel(args.kernel)
    except mk.IsaUnavailableError as e:
        raise SystemExit(f"nop_share: {e}")
    path = os.path.join(tempfile.mkdtemp(prefix="nop_share_"), f"nop_{args.kernel}.c")
    with open(path, "w") as fh:
        fh.write(nop_source(generate(spec)))
    kernels = {"kernel": real, "nop": mk.get_kernel(args.kernel, source=path)}
    rng = np.random.default_rng(0)
    cons = []
    for n in (int(s) for s in args.sizes.split(",")):
        A = rng.standard_normal((n, n), dtype=np.float32)
        B = rng.standard_normal((n, n), dtype=np.float32)
        C = np.empty((n, n), np.float32)
        for name, k in kernels.items():
            cons.append(Contender(name, lambda A=A, B=B, C=C, k=k: mk.gemm(
                A, B, C, kernel=k, threads=args.threads), 2.0 * n ** 3, f"{n}^3"))
        cons.append(Contender("numpy", lambda A=A, B=B, C=C: np.matmul(A, B, out=C),
                              2.0 * n ** 3, f"{n}^3"))
    r = Rounds(cons)
    for _ in range(args.rounds):
        r.round()
    out = {"kernel": args.kernel, "threads": args.threads, "rounds": args.rounds,
           "shapes": rows_against(r, ("kernel", "nop", "numpy"))}
    if args.json:
        write_json(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
