"""The L1 figure of some kernels on each CPU of this host, one CPU at a time: is a low
"% of its own peak" a property of the kernel or of the CPU it ran on?

For each CPU the process pins itself there (``os.sched_setaffinity``) and runs the L1
race of ``microkernel bench`` (:func:`microkernel.bench.l1_contenders` with each
kernel's own peak loop, interleaved rounds, :func:`microkernel.bench.l1_figures`).
On a VM whose vCPUs share physical cores with other tenants (SMT siblings share the
L1 and the FMA ports), a kernel that lives in L1 can lose more than the register-only
peak loop it is measured against.

    python bench/l1_cores.py --kernel avx512fp16_8x64 --kernel avx512_8x32_u4
                             [--cpus 0,2,4] [--kc 256] [--rounds 7] [--json PATH]

Prints one line per CPU and kernel (GFLOP/s, % of its own peak [95% interval]);
--json keeps every figure. Nothing is asserted: this script measures and reports.
"""
import argparse
import os
import sys


def main() -> int:
    from microkernel.commands.common import json_arg, write_json
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", action="append", required=True, help="tile name (repeatable)")
    ap.add_argument("--cpus", default=None, help="comma-separated CPUs (default: every one "
                    "this process may run on)")
    ap.add_argument("--kc", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", type=json_arg, default=None)
    args = ap.parse_args()
    from microkernel import bench
    from microkernel.dispatch import get_kernel
    from microkernel.timing import Rounds

    cpus = ([int(c) for c in args.cpus.split(",")] if args.cpus
            else sorted(os.sched_getaffinity(0)))
    from microkernel import IsaUnavailableError, TileError
    try:
        ks = [get_kernel(n) for n in args.kernel]
    except (IsaUnavailableError, TileError) as e:
        print(f"l1_cores: {e}", file=sys.stderr)
        return 2
    best = get_kernel()
    own = bench.kernel_peaks(ks)
    out = {"kc": args.kc, "rounds": args.rounds, "kernels": args.kernel, "cpus": {}}
    for cpu in cpus:
        os.sched_setaffinity(0, {cpu})
        r = Rounds(bench.l1_contenders(ks, best, kc=args.kc, own_peaks=True))
        for _ in range(args.rounds):
            r.round()
        fig = bench.l1_figures(r, [k.label for k in ks], own)
        out["cpus"][cpu] = fig
        for k in ks:
            f = fig[k.label]
            p = fig[f["peak"]]
            print(f"cpu {cpu:3d} {k.label:<24} {f['gflops']:8.1f} GFLOP/s  "
                  f"{f['pct_peak']:5.1f}% [{f['pct_peak_lo']:5.1f}, {f['pct_peak_hi']:5.1f}] "
                  f"of {f['peak']} {p['gflops']:.1f}", flush=True)
    if args.json:
        write_json(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
