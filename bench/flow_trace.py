"""Where a team call's time goes (issue 24): the timeline of the flow's threads.

The fp32 default (or --kernel) is built a second time with ``MK_FLOW_TRACE``
(c_src/mk_trace.h): each team call then records when each thread entered and left
the flow, and for each item (a piece of a B block packed, a unit of A rows times a
part of a B block run) when it was taken, when its waits ended and when it was done.
gemm() at --threads threads, squares of --sizes, --calls traced calls after two
untraced ones; with --after numpy (or torch) each call follows a matmul of that
library at the same size, back to back, as in bench/contention.py.

    python bench/flow_trace.py [--kernel NAME] [--threads 16] [--sizes 1024,2048,4096]
                               [--calls 9] [--after none|numpy|torch] [--json PATH]
                               [--define NAME[=VALUE] ...]

(--define: a driver macro for the traced build, e.g. MK_FLOW_HOME=0, to see a variant's
timeline.)

For each size, the call of median time (on a busy host one call in three can take
5-10x longer, a thread descheduled inside a unit) and the fastest, each with (times in
microseconds, then each share of threads x the call's time, which add up to 1):

  call       mk_run_team's time, and the GFLOP/s it gives (tracing costs a clock read per item)
  setup      mk_run_team's entry to the threads' start (workspace, counters)
  join       the threads' start to each thread's entry into the flow (pool wake-up)
  units      inside the units' macro-kernels (A packed, micro-kernels), the slivers that
             threads other than a unit's owner ran among them
  pieces     inside the B pieces' packing
  wait       in the items' waits (a unit for its B pieces or its C tiles' previous KC
             block, a piece for its buffer's last readers)
  between    in the flow but in no item (the hand-out loops, the last waits for others)
  after      a thread's exit from the flow to the call's end (the caller waits for the last)

and the GFLOP/s per thread inside the units (the call's flops over the units' summed
time: what one core reaches in the macro-kernel, to set against one thread's gemm()),
the units taken away from their home thread, the share of the units' time in slivers
run by other threads than the unit's owner (MK_FLOW_STEAL), and the spread of the
threads' unit time.
Nothing is asserted: this measures and reports. Each traced result is checked against
the float64 reference first.
"""
import argparse
import os
import shutil
import sys
import tempfile


def main() -> int:
    from microkernel.commands.common import json_arg
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", default=None, help="an fp32 tile name (default: this machine's)")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--calls", type=int, default=9)
    ap.add_argument("--after", choices=("none", "numpy", "torch"), default="none")
    ap.add_argument("--json", type=json_arg, default=None)
    ap.add_argument("--define", action="append", default=[], metavar="NAME[=VALUE]")
    args = ap.parse_args()
    if args.threads < 3 or args.calls < 1:
        raise SystemExit("flow_trace: --threads must be at least 3 (the team's flow) and --calls at least 1")
    import microkernel as mk
    from microkernel.build import BuildError

    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        raise SystemExit(f"flow_trace: --sizes {args.sizes!r}: expected integers, e.g. 1024,2048")
    if any(n < 1 for n in sizes):
        raise SystemExit(f"flow_trace: --sizes {args.sizes!r}: each size must be at least 1")
    tmp = tempfile.mkdtemp(prefix="flow_trace_")      # the traced source, the events
    try:
        return run(args, sizes, tmp)
    except BuildError as e:
        raise SystemExit(f"flow_trace: the traced build failed (a --define the driver "
                         f"cannot take?): {str(e).splitlines()[0]}")
    except (ValueError, OSError, mk.IsaUnavailableError) as e:   # TileError is a ValueError
        raise SystemExit(f"flow_trace: {e}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(args, sizes, tmp) -> int:
    """The traced calls of each size, printed (and written to --json)."""
    import numpy as np
    import microkernel as mk
    from microkernel import flow_trace, validate
    from microkernel.commands.common import write_json
    kern = flow_trace.traced_kernel(args.kernel, tmp, tuple(args.define))
    before = None
    if args.after == "torch":
        try:
            import torch
        except ImportError:
            raise SystemExit("flow_trace: --after torch needs PyTorch, which is not installed")
        torch.set_num_threads(args.threads)
        before = lambda A, B: torch.from_numpy(A) @ torch.from_numpy(B)  # noqa: E731
    elif args.after == "numpy":
        before = np.matmul
    trace = os.path.join(tmp, "events.bin")
    rng = np.random.default_rng(0)
    out = {"kernel": kern.name, "threads": args.threads, "calls": args.calls,
           "after": args.after, "defines": args.define, "sizes": {}}
    keys = flow_trace.SHARES
    print(f"{kern.name}{''.join(' -D' + d for d in args.define)}, {args.threads} threads, "
          f"the median and the fastest of {args.calls} traced calls"
          f"{'' if before is None else ', each after ' + args.after}")
    print("| n | call us | GFLOP/s | " + " | ".join(keys) +
          " | GFLOP/s per thread in units | stolen | stolen slivers | max join us | unit time max/mean |")
    print("|" + "---|" * (len(keys) + 8))
    for n in sizes:
        A = rng.standard_normal((n, n), dtype=np.float32)
        B = rng.standard_normal((n, n), dtype=np.float32)
        C = np.empty((n, n), np.float32)
        for _ in range(2):
            mk.gemm(A, B, C, kernel=kern, threads=args.threads)
        ref, bound = validate.reference(A, B, None, 1.0, 0.0)
        ok, ratio, _, detail = validate.check(C, ref, bound)
        if not ok:
            print(f"{n}: the traced build is WRONG: {detail}")
            return 1
        if os.path.exists(trace):
            os.remove(trace)
        os.environ["MICROKERNEL_FLOW_TRACE"] = trace
        try:
            for _ in range(args.calls):
                if before is not None:
                    before(A, B)
                mk.gemm(A, B, C, kernel=kern, threads=args.threads)
        finally:
            del os.environ["MICROKERNEL_FLOW_TRACE"]
        if not os.path.exists(trace):
            print(f"{n}: no trace written (did the call take the team's flow?)")
            return 1
        ev = flow_trace.read(trace)
        calls = [flow_trace.breakdown(ev[ev["call"] == c], 2.0 * n ** 3)
                 for c in np.unique(ev["call"])]
        by_time = sorted(calls, key=lambda c: c["call_us"])
        med, best = by_time[(len(by_time) - 1) // 2], by_time[0]
        out["sizes"][str(n)] = {"median_call": med, "fastest_call": best, "calls": calls,
                                "err_over_bound": ratio}
        for tag, c in (("median", med), ("fastest", best)):
            print(f"| {n} {tag} | {c['call_us']:.0f} | {c['gflops']:.0f} | " +
                  " | ".join(f"{c[k]:.3f}" for k in keys) +
                  f" | {c['unit_gflops_per_thread']:.1f} | {c['stolen']:.2f} | {c['steal']:.2f} | "
                  f"{c['join_max_us']:.0f} | {c['unit_time_spread']:.2f} |", flush=True)
    if args.json:
        write_json(args.json, out)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.exit(main())
