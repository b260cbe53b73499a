"""gemm()'s default thread count under other runtimes' spinning workers (issue 24).

    python bench/contention.py [--sizes 256,512,1024,2048,4096] [--rounds 7]
                               [--counts 1,4,16] [--contention]
                               [--peers "numpy,torch;numpy;torch"] [--out DIR]

1. **Alone**: a process of its own times ``gemm()`` with the default thread count
   (the CPUs, fewer for a small problem: :func:`microkernel.threads.threads_for`), with
   each explicit count of ``--counts`` (``threads=N``: how the default's choice for a
   small problem fares), and with ``--contention`` the default with
   ``$MICROKERNEL_CONTENTION=1`` (plus :func:`microkernel.threads.contended`'s extra
   threads when other threads of the process are runnable), ``--alone-pause`` seconds
   (default 0.3) before each sample, no other library loaded.
2. **Interleaved, back to back**: one process, numpy and PyTorch (each at its own
   default, every CPU) and the same ``gemm()`` calls in shuffled order, no pause:
   whatever runs after numpy or torch shares the CPUs with their workers, which spin
   after each call (OpenBLAS about 0.1 s, libgomp GOMP_SPINCOUNT iterations). Each
   call of ``contended`` is logged (runnable threads seen, our awake workers, the
   count chosen). ``--peers`` names the peer groups, ``;`` between groups: one
   back-to-back process per group (``numpy`` alone, ``torch`` alone: whose spinning
   workers cost what); the default is both peers in one group.
3. The same interleaved with ``--pause`` (default 0.3 s) before each sample (0: not run),
   beside the first group.

Around each sample of ours (outside its timed span) the timing process reads every
thread's ``/proc/self/task/<tid>/schedstat`` (time on a CPU, time runnable but waiting
for one, in ns; Documentation/scheduler/sched-stats.rst) and sorts them into ours (the
calling thread and the pool's workers, named ``mk-pool``: c_src/mk_pool.h) and the
others (OpenBLAS's and PyTorch's workers): the CPUs each side held during our samples,
and the share of our threads' runnable time spent waiting for a CPU.

Prints and writes ``contention.json`` / ``contention.md`` under --out: every library's
GFLOP/s (median of the rounds, the spread beside it) and interleaved / alone for both
of ours. Speed is never asserted here.
"""
import argparse
import collections
import json
import os
import pathlib
import statistics
import subprocess
import sys
import textwrap

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from threads import child_env  # noqa: E402  (bench/threads.py: the timing processes' environment)

CHILD = textwrap.dedent("""
    import collections, json, os, statistics, sys
    import numpy as np
    import microkernel as mk
    from microkernel import threads as th
    from microkernel.timing import Contender, Rounds
    sizes, rounds, pause, peers, counts, switch = (
        [int(x) for x in sys.argv[1].split(",")], int(sys.argv[2]), float(sys.argv[3]),
        [p for p in sys.argv[4].split(",") if p], [int(x) for x in sys.argv[5].split(",") if x],
        sys.argv[6] == "1")
    gm = sys.modules["microkernel.gemm"]        # the module (the package's gemm is the function)
    log = collections.Counter()
    real = gm.contended
    def spy(t, macs, awake=0, ours=0):
        r = real(t, macs, awake, ours)
        log[(t, awake, th.runnable_threads(), th.process_threads(), r)] += 1
        return r
    gm.contended = spy
    if "torch" in peers:
        import torch

    def sched():                   # tid -> (ours, ns on a CPU, ns runnable and waiting)
        snap, me = {}, os.getpid()
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/schedstat") as f:
                    run, wait = f.read().split()[:2]
                with open(f"/proc/self/task/{tid}/comm") as f:
                    ours = int(tid) == me or f.read().strip() == "mk-pool"
            except (OSError, ValueError):
                continue                                 # a thread that just exited
            snap[tid] = (ours, int(run), int(wait))
        return snap
    cpu = collections.defaultdict(lambda: [0.0] * 5)   # key -> wall, ours run/wait, others'

    class Sampled(Rounds):         # Rounds' sample, with schedstat read around ours
        def _timed(self, fn, loops):
            key = keys.get(id(fn))
            if key is None:
                return super()._timed(fn, loops)
            if self.pause:
                self.sleep(self.pause)
                fn()
            s0 = sched()
            t0 = self.clock()
            for _ in range(loops):
                fn()
            dt = self.clock() - t0
            s1 = sched()
            acc = cpu[key]
            acc[0] += dt
            for tid, (ours, run, wait) in s1.items():
                if tid in s0:                            # threads alive across the sample
                    i = 1 if ours else 3
                    acc[i] += (run - s0[tid][1]) / 1e9
                    acc[i + 1] += (wait - s0[tid][2]) / 1e9
            return dt / loops
    cons = []
    for n in sizes:
        rng = np.random.default_rng(0)
        A = rng.standard_normal((n, n), dtype=np.float32)
        B = rng.standard_normal((n, n), dtype=np.float32)
        C = np.empty((n, n), np.float32)
        flops = 2.0 * n ** 3
        k = mk.get_kernel()
        def on(A=A, B=B, C=C):              # $MICROKERNEL_CONTENTION=1 for this call only
            os.environ["MICROKERNEL_CONTENTION"] = "1"
            try:
                mk.gemm(A, B, C, kernel=k)
            finally:
                del os.environ["MICROKERNEL_CONTENTION"]
        if switch:
            cons.append(Contender("ours contention=1", on, flops, str(n)))
        cons.append(Contender("ours default", lambda A=A, B=B, C=C: mk.gemm(A, B, C, kernel=k),
                              flops, str(n)))
        for t in counts:
            cons.append(Contender(f"ours threads={t}", lambda A=A, B=B, C=C, t=t:
                                  mk.gemm(A, B, C, kernel=k, threads=t), flops, str(n)))
        if "numpy" in peers:
            cons.append(Contender("numpy", lambda A=A, B=B, C=C: np.matmul(A, B, out=C), flops, str(n)))
        if "torch" in peers:
            a, b, c = (torch.from_numpy(x) for x in (A, B, C))
            cons.append(Contender("torch", lambda a=a, b=b, c=c: torch.matmul(a, b, out=c), flops, str(n)))
    keys = {id(c.fn): (c.shape, c.name) for c in cons if c.name.startswith("ours")}
    r = Sampled(cons, min_time=0.02, pause=pause)
    for _ in range(rounds):
        r.round()
    out = {"gflops": {}, "spread": {},
           "default_threads": {str(n): th.threads_for(n, n, n) for n in sizes}}
    for c in cons:
        g = [c.flops / t / 1e9 for t in r.times[(c.shape, c.name)]]
        out["gflops"].setdefault(c.name, {})[c.shape] = statistics.median(g)
        out["spread"].setdefault(c.name, {})[c.shape] = [min(g), max(g)]
    out["contended_calls"] = [[*k, v] for k, v in sorted(log.items())]
    # CPUs held on average during our samples (ours, others), our runnable time's waiting
    # share, and the others' runnable-but-waiting threads on average
    for (shape, name), (wall, run, wait, orun, owait) in cpu.items():
        out.setdefault("cpus", {}).setdefault(name, {})[shape] = {
            "ours": run / wall, "others": orun / wall,
            "ours_waiting": wait / max(run + wait, 1e-12), "others_waiting": owait / wall}
    print("RESULT " + json.dumps(out))
""")


def child(sizes, rounds, pause, peers, counts=(), switch=False, env_extra=None):
    # every library at its own default thread count: all CPUs
    env = child_env(env_extra, drop=("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                     "MICROKERNEL_CONTENTION", "MICROKERNEL_NUM_THREADS"))
    res = subprocess.run([sys.executable, "-c", CHILD, ",".join(map(str, sizes)), str(rounds),
                          str(pause), ",".join(peers), ",".join(map(str, counts)),
                          "1" if switch else "0"], capture_output=True, text=True,
                         env=env, timeout=1800)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")]
    if not lines:
        print(res.stdout[-3000:], res.stderr[-3000:], flush=True)
        raise SystemExit("a timing process failed")
    return json.loads(lines[-1][7:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="256,512,1024,2048,4096")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--pause", type=float, default=0.3,
                    help="seconds before each sample of the paused interleaved run (0: none)")
    ap.add_argument("--alone-pause", type=float, default=0.3)
    ap.add_argument("--counts", default="",
                    help="explicit thread counts timed beside the default, e.g. 1,4,16")
    ap.add_argument("--contention", action="store_true",
                    help="also time the default with $MICROKERNEL_CONTENTION=1")
    ap.add_argument("--peers", default=None,
                    help="peer groups for the back-to-back runs, ';' between groups, e.g. "
                         "'numpy,torch;numpy;torch' (default: numpy and, where installed, torch)")
    ap.add_argument("--out", default=os.environ.get("OUT", "out"))
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    import importlib.util
    have = ["numpy"] + (["torch"] if importlib.util.find_spec("torch") else [])
    groups = [[p for p in g.split(",") if p] for g in (args.peers or ",".join(have)).split(";")]
    for p in {p for g in groups for p in g}:
        if p not in have:
            ap.error(f"--peers: {p!r} is not one of the peers this Python has: {', '.join(have)}")
    if not all(groups):
        ap.error("--peers: an empty group")
    counts = [int(x) for x in args.counts.split(",") if x]
    ours = dict(counts=counts, switch=args.contention)
    runs = {"alone": child(sizes, args.rounds, args.alone_pause, [], **ours)}
    for g in groups:
        tag = "back to back" if sorted(g) == sorted(have) else "back to back beside " + "+".join(g)
        runs[tag] = child(sizes, args.rounds, 0.0, g, **ours)
    if args.pause:
        runs[f"pause {args.pause} s"] = child(sizes, args.rounds, args.pause, groups[0], **ours)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "contention.json").write_text(json.dumps(runs, indent=1))
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next((ln.split(":", 1)[1].strip() for ln in lscpu.splitlines()
                  if ln.startswith("Model name")), "?")
    md = ["# gemm()'s default thread count under contention", "",
          f"{model}, {os.cpu_count()} CPUs; {args.rounds} rounds; GFLOP/s, median "
          "[min, max] of the rounds; the default's thread count per size: " + ", ".join(
              f"{n}: {t}" for n, t in runs["alone"]["default_threads"].items()), ""]
    for tag, d in runs.items():
        names = list(d["gflops"])
        md += [f"## {tag}", "", "| n | " + " | ".join(names) + " |",
               "| --- | " + " | ".join("---" for _ in names) + " |"]
        for n in map(str, sizes):
            md.append(f"| {n} | " + " | ".join(
                f"{d['gflops'][c][n]:.0f} [{d['spread'][c][n][0]:.0f}, {d['spread'][c][n][1]:.0f}]"
                for c in names) + " |")
        if tag != "alone":
            md.append("")
            for c in (x for x in names if x.startswith("ours")):
                md.append(f"- {c} {tag} / alone: " + ", ".join(
                    f"n={n}: {d['gflops'][c][n] / runs['alone']['gflops'][c][n]:.2f}"
                    for n in map(str, sizes)))
        for c, per in d.get("cpus", {}).items():
            md.append(f"- {c} {tag}, CPUs held during its samples, ours / others' threads "
                      "(ours' waiting share of their runnable time): " + ", ".join(
                          f"n={n}: {per[n]['ours']:.1f} / {per[n]['others']:.1f} "
                          f"({per[n]['ours_waiting']:.2f})" for n in map(str, sizes) if n in per))
        calls = collections.Counter()
        for t, _awake, _seen, _mine, chosen, count in d["contended_calls"]:
            calls[(t, chosen)] += count
        if calls:
            md += ["", "$MICROKERNEL_CONTENTION=1: default count -> threads used (calls): "
                   + ", ".join(f"{t} -> {c} ({k})" for (t, c), k in sorted(calls.items()))]
        md.append("")
    (out / "contention.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
