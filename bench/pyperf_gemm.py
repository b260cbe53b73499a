"""pyperf runner for publication-grade numbers: gemm() per tile and numpy.matmul on
the same shapes, single thread both sides, in calibrated worker processes.

    python bench/pyperf_gemm.py -o out/pyperf.json [--tiles avx2_6x16,avx2_4x24] [--sizes 512,1024]
    python -m pyperf stats out/pyperf.json ; python -m pyperf compare_to ...
"""
import functools
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pyperf  # noqa: E402

import microkernel as mk  # noqa: E402


def add_cmdline_args(cmd, args):
    cmd.extend(["--tiles", args.tiles, "--sizes", args.sizes])


def main():
    runner = pyperf.Runner(add_cmdline_args=add_cmdline_args)
    runner.argparser.add_argument("--tiles", default=",".join(mk.kernels()))
    runner.argparser.add_argument("--sizes", default="256,512,1024")
    args = runner.parse_args()
    rng = np.random.default_rng(0)
    for n in (int(s) for s in args.sizes.split(",")):
        A = rng.standard_normal((n, n), dtype=np.float32)
        B = rng.standard_normal((n, n), dtype=np.float32)
        C = np.empty((n, n), np.float32)
        runner.bench_func(f"numpy n={n}", np.matmul, A, B, C,
                          metadata={"flops": 2 * n ** 3})
        for tile in args.tiles.split(","):
            k = mk.get_kernel(tile)
            runner.bench_func(f"{tile} n={n}", functools.partial(mk.gemm, A, B, C, kernel=k, threads=1),
                              metadata={"flops": 2 * n ** 3})


if __name__ == "__main__":
    main()
