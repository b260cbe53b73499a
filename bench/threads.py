"""gemm() on all the cores against the BLAS libraries: each library alone, then
interleaved (issue 24). For the lent machine's 16-core host; runs anywhere.

    python bench/threads.py [--threads 1,4,16] [--sizes 512,1024,2048,4096] [--out DIR]

1. **Alone**: one process per library (microkernel.gemm with its default tile, numpy /
   OpenBLAS, PyTorch's CPU matmul / MKL, when installed), each timing its own calls at
   every thread count and size: a warm-up call, then 7 samples (the timing engine,
   :class:`microkernel.timing.Rounds`, with only that library in the round), medians.
   microkernel runs once per decomposition (MICROKERNEL_THREADING=team and slices; the
   team with its dynamic units (2 per thread since session 55, each rows x a quarter of the B block's
   columns, by default), and with the blocking's chunks=0 (static: a fixed share per
   thread), 2, 8 (the default before) and 16, with its units of whole rows (parts=1 chunks=4: the team before
   2026-12-04) or an eighth of the columns (parts=8), with MICROKERNEL_TEAM_GRID=square,
   and with its threads bound to the cores (OMP_PROC_BIND=close OMP_PLACES=cores:
   "bind")), so the switch between them is measured, not
   assumed, and with the team also fully passive (OMP_WAIT_POLICY=PASSIVE) and with
   libgomp's default spin (300,000): ours, GOMP_SPINCOUNT=20000, between the two.
   With ``--repeats N`` every library's process runs N times, the libraries in turn
   (A B C A B C ...), and each figure is the median of all 7N samples, with each
   process's own median beside it: on a shared host one process's figure moves by
   20-40% with the CPUs it lands on, and in turn every library meets the same minutes.
   ``--libs`` keeps only the named libraries (e.g. "microkernel team,numpy,torch").
2. **Interleaved**: one process, `microkernel compare` with numpy and torch as peers at
   the largest thread count, back to back (--pause 0: the other runtimes' workers may
   still be spinning when the next call starts) and with the default pause; and back to
   back once more with the other runtimes' spin cut before they load
   (OPENBLAS_THREAD_TIMEOUT=4: OpenBLAS's workers spin 2^4 TSC cycles instead of
   2^28; GOMP_SPINCOUNT=20000 for PyTorch's libgomp, the value ours runs with), which
   says how much of the back-to-back loss is theirs.

Writes threads.json (every figure) and threads.md (the tables) under --out; prints the
tables. Speed is never asserted: this script measures and reports.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[1]

ALONE = textwrap.dedent("""
    import json, os, sys, time
    import numpy as np
    lib, threads, sizes = sys.argv[1], [int(x) for x in sys.argv[2].split(",")], [int(x) for x in sys.argv[3].split(",")]
    from microkernel.timing import Contender, Rounds
    out = []
    for t in threads:
        if lib == "torch":
            import torch
            torch.set_num_threads(t)
        if lib == "numpy":
            from threadpoolctl import threadpool_limits
            limit = threadpool_limits(limits=t, user_api="blas")
        for n in sizes:
            rng = np.random.default_rng(0)
            A = rng.standard_normal((n, n), dtype=np.float32)
            B = rng.standard_normal((n, n), dtype=np.float32)
            C = np.empty((n, n), np.float32)
            if lib.startswith("microkernel"):
                import microkernel as mk
                k = mk.get_kernel()
                # "... static": fixed shares; "... chunks=N" / "parts=N": the team's
                # dynamic units per thread / the parts of a B block's columns they split
                blk = {w.split("=")[0]: int(w.split("=")[1]) for w in lib.split() if "=" in w}
                blk = {"chunks": 0} if lib.endswith("static") else blk or None
                # at most t threads, fewer for a small problem, as `compare --threads t`
                # times it and numpy's BLAS sizes its calls under a limit of t
                tc = mk.threads.threads_for(n, n, n, most=t)
                fn = lambda: mk.gemm(A, B, C, kernel=k, threads=tc, blocking=blk)
            elif lib == "numpy":
                fn = lambda: np.matmul(A, B, out=C)
            else:
                a, b, c = (torch.from_numpy(x) for x in (A, B, C))
                fn = lambda: torch.matmul(a, b, out=c)
            r = Rounds([Contender(lib, fn, 2.0 * n ** 3, f"{n}")], min_time=0.05)
            for _ in range(7):
                r.round()
            s = r.matrix(lib)[0]
            out.append({"lib": lib, "threads": t, "n": n, "gflops": 2.0 * n ** 3 / float(np.median(s)) / 1e9,
                        "seconds": [float(x) for x in s]})
            print(f"{lib:>18} {t:3d}T n={n:5d} {out[-1]['gflops']:8.1f} GFLOP/s", flush=True)
        if lib == "numpy":
            limit.restore_original_limits()
    print("RESULT " + json.dumps(out))
""")


def child_env(extra=None, drop=()):
    """The environment of a timing process: this one's with the repository root first on
    PYTHONPATH (the child imports this tree's microkernel), ``extra`` added and the
    variables named in ``drop`` removed (bench/contention.py uses it too)."""
    env = {**os.environ, **(extra or {}), "PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    for var in drop:
        env.pop(var, None)
    return env


def alone(lib, threads, sizes, env_extra):
    env = child_env(env_extra)
    res = subprocess.run([sys.executable, "-c", ALONE, lib, ",".join(map(str, threads)),
                          ",".join(map(str, sizes))], capture_output=True, text=True, env=env,
                         timeout=1800)
    print(res.stdout[-4000:], res.stderr[-2000:], flush=True)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")]
    return json.loads(lines[-1][7:]) if lines else []


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1,4,16")
    ap.add_argument("--sizes", default="512,1024,2048,4096")
    ap.add_argument("--out", default=os.environ.get("OUT", "out"))
    ap.add_argument("--rounds", type=int, default=7, help="rounds of the interleaved run")
    ap.add_argument("--repeats", type=int, default=1,
                    help="processes per library, the libraries in turn (default 1)")
    ap.add_argument("--libs", default=None,
                    help="comma-separated library names to run alone (default: all)")
    ap.add_argument("--interleaved", type=int, default=1, choices=(0, 1),
                    help="0: skip the interleaved runs (default 1)")
    ap.add_argument("--variants-threads", default=None,
                    help="thread counts of the passive / spin300k / chunks variants (default: "
                         "the largest)")
    args = ap.parse_args()
    threads = [int(x) for x in args.threads.split(",")]
    sizes = [int(x) for x in args.sizes.split(",")]
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import importlib.util
    libs = [("microkernel team", {"MICROKERNEL_THREADING": "team"}),
            ("microkernel team square", {"MICROKERNEL_THREADING": "team",
                                         "MICROKERNEL_TEAM_GRID": "square"}),
            ("microkernel slices", {"MICROKERNEL_THREADING": "slices"}),
            ("microkernel team static", {"MICROKERNEL_THREADING": "team"}),
            ("microkernel team chunks=2", {"MICROKERNEL_THREADING": "team"}),
            ("microkernel team chunks=8", {"MICROKERNEL_THREADING": "team"}),
            ("microkernel team chunks=16", {"MICROKERNEL_THREADING": "team"}),
            ("microkernel team parts=1 chunks=4", {"MICROKERNEL_THREADING": "team"}),
            ("microkernel team parts=8", {"MICROKERNEL_THREADING": "team"}),
            ("microkernel team nc=4096", {"MICROKERNEL_THREADING": "team"}),
            ("microkernel team bind", {"MICROKERNEL_THREADING": "team", "OMP_PROC_BIND": "close",
                                       "OMP_PLACES": "cores"}),
            ("microkernel team passive", {"MICROKERNEL_THREADING": "team",
                                          "OMP_WAIT_POLICY": "PASSIVE"}),
            ("microkernel team spin300k", {"MICROKERNEL_THREADING": "team",
                                           "GOMP_SPINCOUNT": "300000"}),
            ("numpy", {})]
    if importlib.util.find_spec("torch"):
        libs.append(("torch", {}))
    if args.libs:
        keep = [x.strip() for x in args.libs.split(",")]
        unknown = sorted(set(keep) - {lib for lib, _ in libs})
        if unknown:
            ap.error(f"--libs: unknown {unknown}; known: {[lib for lib, _ in libs]}")
        libs = [(lib, env) for lib, env in libs if lib in keep]
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    runs = {}
    vthreads = ([int(x) for x in args.variants_threads.split(",")] if args.variants_threads
                else [max(threads)])
    for rep in range(args.repeats):
        for lib, env in libs:
            ts = (vthreads if lib.endswith(("passive", "spin300k", "chunks=2", "chunks=8", "chunks=16"))
                  else threads if lib in ("microkernel team", "microkernel slices", "numpy",
                                          "torch")
                  else [t for t in threads if t > 1])   # a team variant: 1 thread has none
            for r in alone(lib, ts, sizes, env):
                runs.setdefault((lib, r["threads"], r["n"]), []).append(r)
    results = []
    for (lib, t, n), rs in runs.items():
        secs = [x for r in rs for x in r["seconds"]]
        results.append({"lib": lib, "threads": t, "n": n, "processes": len(rs),
                        "gflops": 2.0 * n ** 3 / statistics.median(secs) / 1e9,
                        "process_gflops": [r["gflops"] for r in rs], "seconds": secs})
    # interleaved, at the largest thread count, back to back and with a pause, and back
    # to back with the other runtimes' spin cut
    tmax = max(threads)
    inter = {}
    spin_cut = {"OPENBLAS_THREAD_TIMEOUT": "4", "GOMP_SPINCOUNT": "20000"}
    for tag, pause, env_extra in (("0", "0", {}), ("pause", None, {}),
                                  ("0_spin_cut", "0", spin_cut))[:3 * args.interleaved]:
        path = out / f"threads_interleaved_{tag}.json"
        cmd = [sys.executable, "-m", "microkernel", "compare", "--kernels",
               "", "--sizes", ",".join(map(str, sizes)), "--threads", str(tmax),
               "--rounds", str(args.rounds), "--json", str(path)]
        import microkernel as mk
        cmd[cmd.index("--kernels") + 1] = mk.kernels()[0]
        if pause is not None:
            cmd += ["--pause", pause]
        res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=1800,
                             env={**os.environ, **env_extra})
        print(res.stdout[-5000:], res.stderr[-2000:], flush=True)
        if path.exists():
            d = json.loads(path.read_text())
            label = {"0": "back to back (pause 0)", "pause": "pause 0.3 s before each sample",
                     "0_spin_cut": "back to back, the other runtimes' spin cut "
                     "(OPENBLAS_THREAD_TIMEOUT=4 GOMP_SPINCOUNT=20000)"}[tag]
            inter[label] = {s["shape"]: {n: c["gflops"] for n, c in s["contenders"].items()}
                            for s in d["shapes"]}
    # tables
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    topo = "; ".join(ln.strip() for ln in lscpu.splitlines()
                     if ln.split(":")[0].strip() in ("Model name", "Thread(s) per core",
                                                     "Core(s) per socket", "Socket(s)",
                                                     "NUMA node(s)", "L2 cache", "L3 cache"))
    md = ["# gemm() threads against the BLAS libraries", "", f"lscpu: {topo}", "",
          f"## Each library alone in its own process (GFLOP/s, median of 7 samples"
          + (f" in each of {args.repeats} processes per library, the libraries in turn; "
             "the median of all of them, each process's median in brackets" if args.repeats > 1
             else "") + ")", "",
          "| library | threads | " + " | ".join(f"n = {n}" for n in sizes) + " |",
          "| --- | --- | " + " | ".join("---" for _ in sizes) + " |"]
    for lib, _ in libs:
        for t in threads:
            row = [next((f"{r['gflops']:.0f}" + (
                " [" + ", ".join(f"{g:.0f}" for g in r["process_gflops"]) + "]"
                if r["processes"] > 1 else "")
                for r in results if r["lib"] == lib and r["threads"] == t and r["n"] == n), "-")
                for n in sizes]
            md.append(f"| {lib} | {t} | " + " | ".join(row) + " |")
    one = {(r["lib"], r["n"]): r["gflops"] for r in results if r["threads"] == min(threads)}
    top = {(r["lib"], r["n"]): r["gflops"] for r in results if r["threads"] == tmax}
    md += ["", f"Scaling {min(threads)} -> {tmax} threads: " + "; ".join(
        f"{lib} n={n}: {top[(lib, n)] / one[(lib, n)]:.1f}x" for lib, _ in libs for n in sizes
        if (lib, n) in one and (lib, n) in top and n == max(sizes))]
    for pause, shapes in inter.items():
        md += ["", f"## Interleaved in one process, {tmax} threads, {pause} "
               "(GFLOP/s, median)", "", "| shape | " + " | ".join(next(iter(shapes.values()))) + " |",
               "| --- | " + " | ".join("---" for _ in next(iter(shapes.values()))) + " |"]
        for shape, c in shapes.items():
            md.append(f"| {shape} | " + " | ".join(f"{v:.0f}" for v in c.values()) + " |")
        md.append("")
        for name in next(iter(shapes.values())):   # ours (the kernel's name), numpy, torch
            lib = name if name in ("numpy", "torch") else "microkernel team"
            solo = {r["n"]: r["gflops"] for r in results if r["lib"] == lib
                    and r["threads"] == tmax}
            md.append(f"- {name} interleaved / {lib} alone: " + ", ".join(
                f"n={s.split('x')[0]}: {c[name] / solo.get(int(s.split('x')[0]), float('nan')):.2f}"
                for s, c in shapes.items()))
    (out / "threads.json").write_text(json.dumps({"alone": results, "interleaved": inter}, indent=1))
    (out / "threads.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
