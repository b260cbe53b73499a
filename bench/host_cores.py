"""How many of this host's CPUs deliver a whole core's FMA peak at once: the FMA peak
loop of one kernel (``mk_fma_peak``) in N processes started together, each pinned to
its own CPU, for growing N. On a machine of equal, unshared cores the sum grows N-fold;
a CPU whose physical core is shared (SMT siblings, a VM's vCPUs on another tenant's
busy cores) reads about half. It bounds what N threads of any GEMM can reach here, and
says why a fixed share per thread waits for the slowest (c_src/mk_team.h, dynamic units).

    python bench/host_cores.py [--kernel avx512_8x32_u4] [--counts 1,2,4,8,16]
                               [--amx amx_bf16_32x32] [--json PATH]

Prints one line per N (sum, slowest and fastest CPU, GFLOP/s); --json keeps each CPU's
figure. Nothing is asserted: this script measures and reports.
"""
import argparse
import multiprocessing as mp
import os
import sys


def _worker(cpu, name, iters, barrier, queue):
    os.sched_setaffinity(0, {cpu})
    from microkernel import dispatch
    k = dispatch.get_kernel(name)
    k.fma_peak(max(1, iters // 10))          # build, warm up
    barrier.wait()
    queue.put((cpu, k.fma_peak(iters)))


def scaling(name: str, counts, iters: int) -> dict:
    """{N: {"sum": GFLOP/s, "per_cpu": {cpu: GFLOP/s}}} for N pinned processes."""
    cpus = sorted(os.sched_getaffinity(0))
    out = {}
    for n in (c for c in counts if c <= len(cpus)):
        barrier, queue = mp.Barrier(n), mp.Queue()
        procs = [mp.Process(target=_worker, args=(cpus[i], name, iters, barrier, queue))
                 for i in range(n)]
        for p in procs:
            p.start()
        got = dict(queue.get() for _ in procs)
        for p in procs:
            p.join()
        out[n] = {"sum": sum(got.values()), "per_cpu": got}
        print(f"{name}: {n:3d} pinned processes, sum {sum(got.values()):8.0f} GFLOP/s, "
              f"slowest CPU {min(got.values()):7.1f}, fastest {max(got.values()):7.1f}",
              flush=True)
    return out


def main() -> int:
    from microkernel.commands.common import json_arg, write_json
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", default=None, help="kernel whose ISA's peak loop runs "
                    "(default: this machine's default kernel)")
    ap.add_argument("--counts", default="1,2,4,8,12,16")
    ap.add_argument("--iters", type=int, default=200_000_000,
                    help="peak-loop iterations per process (16 FMAs each)")
    ap.add_argument("--amx", default=None, help="also an AMX kernel's tile-product peak")
    ap.add_argument("--json", type=json_arg, default=None)
    args = ap.parse_args()
    mp.set_start_method("fork")
    import microkernel
    name = args.kernel or microkernel.kernels()[0]
    counts = [int(x) for x in args.counts.split(",")]
    res = {"kernel": name, "scaling": scaling(name, counts, args.iters)}
    if args.amx:
        res["amx"] = {"kernel": args.amx, "scaling": scaling(args.amx, counts, args.iters // 100)}
    if args.json:
        write_json(args.json, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
