"""The C-stationary loops of a kernel module against the float64 reference with K over
several KC blocks (small KC, MC and NC blockings that cut every loop, edge tiles, beta 0
and not): ``python bench/cstat_check.py NAME[@SOURCE] ...``. Prints one line per case
and exits 1 when one fails. Needs a CPU that runs NAME's ISA."""
import sys

import numpy as np

CASES = ((70, 50, 700, {"kc": 128}), (100, 130, 600, {"kc": 64, "mc": 64, "nc": 64}),
         (33, 97, 257, {"kc": 64, "mc": 32, "nc": 32}), (64, 64, 1000, {"kc": 256, "mc": 64, "nc": 64}),
         (520, 300, 1100, {"kc": 256, "mc": 512, "nc": 256}), (300, 520, 900, {"kc": 256, "mc": 256, "nc": 512}))


def main(argv) -> int:
    import ml_dtypes
    from microkernel import gemm, kernel, validate
    from microkernel.tile import TileSpec
    bad = 0
    for arg in argv:
        name, _, path = arg.partition("@")
        spec = TileSpec.from_name(name)
        k = kernel.load(spec, open(path).read(), path) if path else kernel.load(spec)
        rng = np.random.default_rng(3)
        for m, n, kk, blk in CASES:
            if spec.types == "bf16":
                A = rng.uniform(-1, 1, (m, kk)).astype(ml_dtypes.bfloat16)
                B = rng.uniform(-1, 1, (kk, n)).astype(ml_dtypes.bfloat16)
                C0 = rng.uniform(-1, 1, (m, n)).astype(np.float32)
                al, be = 1.5, 0.5
            else:
                A = rng.integers(0, 256, (m, kk)).astype(np.uint8 if spec.types[0] == "u" else np.int8)
                B = rng.integers(-128, 128, (kk, n)).astype(np.int8 if spec.types[2] == "s" else np.uint8)
                C0 = rng.integers(-99, 99, (m, n)).astype(np.int32)
                al, be = 2, 1
            for beta in (0, be):
                C = C0.copy()
                gemm(A, B, C, alpha=al, beta=beta, kernel=k, blocking=blk, threads=1)
                ref, bound = validate.reference(A, B, C0, al, beta, spec.types)
                ok, _, _, detail = validate.check(C, ref, bound)
                bad += not ok
                print(f"{arg} {m}x{n}x{kk} {blk} beta={beta}: {'ok' if ok else 'FAIL ' + detail}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
