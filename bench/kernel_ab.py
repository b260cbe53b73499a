"""Round-robin A/B of several kernels' gemm() and numpy.matmul in one process: each round
times every contender once per shape, in turn (the order rotates from round to round),
so that a slow spell of a shared machine hits all of them; the ratio of each kernel to
numpy is taken per round and the median of the rounds is reported, with its first and
third quartiles.

Use it to choose a default tile for gemm() on a machine (`microkernel sweep` ranks tiles
one after the other, which a machine whose clock moves within the hour cannot rank).

    python bench/kernel_ab.py --kernels avx512_8x16,avx512_6x32 --sizes 512,1024,2048 \\
        --rounds 15 [--workload deepbench] [--threads 1] [--json out.json]

A contender may carry a blocking override after a colon, as in `microkernel bench
--blocking`: `--kernels "avx512_8x32_u4;avx512_8x32_u4:kc=256,mc=192"` (separate
contenders with ';' when any has a blocking; the model's value fills what is left out),
and a micro-kernel source of its own after an '@' (`microkernel.get_kernel(...,
source=)`): `--kernels "avx2_4x24_u8;avx2_4x24_u8@my_4x24.c"` builds the same driver
around my_4x24.c (a path without ':' or ';'). Such a variant must first pass the whole
edge catalogue (at the model's blocking, plus the catalogue's own tiny blockings); then,
like every contender, its result on each shape under its own blocking is checked.
Every contender gets its KC/MC/NC as a resolved Blocking, so all take the same path
through gemm(). Each contender's result is checked once per shape against a float64
reference (microkernel.validate's error bound) before any timing.

Output: per shape and contender, the median GFLOP/s (2*m*n*k flops / seconds) and the
median per-round ratio numpy time / our time (> 1: gemm() is faster); then per
contender the median of those ratios over all shapes and over the shapes with
min(m, n) >= 16 (n = 1 shapes take the driver's GEMV path, not the tile). Every
contender after the first is also set against the first round by round ("vs first": the
first one's time / this one's, > 1: this one is faster, and in how many rounds it was),
the direct A/B of two builds. The JSON keeps every sample.
"""
import argparse
import json
import math
import os
import pathlib
import statistics
import tempfile
import time

import numpy as np
from threadpoolctl import threadpool_limits

import microkernel as mk
from microkernel import validate, workloads
from microkernel.build import BuildError
from microkernel.bench import numpy_blas_info
from microkernel.cli import _blocking_arg
from microkernel.gemm import blocking_for


def quartiles(xs):
    """(q1, median, q3) of xs (all three equal for a single value)."""
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return q[0], statistics.median(xs), q[2]


def positive_int(text):
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def seconds(text):
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and v >= 0):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds >= 0, got {text!r}")
    return v


def write_json(path, data):
    """data as JSON at path, through a temporary file renamed into place."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


def parse_contenders(ap, text):
    """[(label, kernel, Blocking)] from --kernels (items NAME[@SOURCE][:kc=N,...]); a bad
    item is a usage error."""
    sep = ";" if ";" in text or ":" in text else ","
    out = []
    for item in (s.strip() for s in text.split(sep)):
        name, _, blk = item.partition(":")
        name, _, source = name.partition("@")
        try:
            kern = mk.get_kernel(name, source=source or None)
            override = _blocking_arg(blk) if blk else {}
            blocking = blocking_for(kern).replace(**override)
        except (argparse.ArgumentTypeError, ValueError, OSError, BuildError, mk.TileError,
                mk.IsaUnavailableError) as exc:
            hint = " (separate contenders with ';' when one has a blocking)" if "," in name else ""
            ap.error(f"--kernels {item!r}: {exc}{hint}")
        if item in [label for label, _, _ in out]:
            ap.error(f"--kernels: {item!r} given twice")
        out.append((item, kern, blocking))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", required=True,
                    help="tile names, comma-separated (or ';'-separated, each "
                         "NAME[@SOURCE.c][:kc=N,mc=N,nc=N])")
    ap.add_argument("--sizes", default="512,1024,2048", help="square n, comma-separated ('' for none)")
    ap.add_argument("--workload", default=None,
                    help="also a shipped workload (deepbench, square or minilm)")
    ap.add_argument("--rounds", type=positive_int, default=15)
    ap.add_argument("--threads", type=positive_int, default=1)
    ap.add_argument("--min-seconds", type=seconds, default=0.03,
                    help="each sample repeats the call to last at least this long (s)")
    ap.add_argument("--json", type=pathlib.Path,
                    help="write every sample here (at the end; an existing file is replaced "
                         "only then)")
    args = ap.parse_args()
    if args.json is not None and not args.json.parent.is_dir():
        ap.error(f"--json: directory {str(args.json.parent)!r} does not exist")
    contenders = parse_contenders(ap, args.kernels)
    try:
        problems = workloads.square([positive_int(n) for n in args.sizes.split(",") if n.strip()])
        if args.workload:
            problems += workloads.load(args.workload)
    except (argparse.ArgumentTypeError, ValueError, KeyError) as exc:
        ap.error(f"--sizes/--workload: {exc}")
    if not problems:
        ap.error("no shapes: give --sizes or --workload")
    for label, kern, _ in contenders:
        if kern.source is not None:   # a hand-made micro-kernel: correct before fast
            bad = [r for r in validate.run_catalogue(kern) if not r.ok]
            if bad:
                raise SystemExit(f"{label}: {len(bad)} edge-catalogue case(s) failed, first "
                                 f"{bad[0].case.label}: {bad[0].detail}")
            print(f"{label}: edge catalogue passed")

    rng = np.random.default_rng(0)
    pause = 0.3 if args.threads > 1 else 0.0   # let spinning BLAS/OpenMP workers sleep
    first = contenders[0][0]   # every later contender is also set against it, round by round
    width = max(len(label) for label, _, _ in contenders)
    print(f"numpy: {numpy_blas_info()}; {args.threads} thread(s); {args.rounds} rounds")
    rows = []
    with threadpool_limits(limits=args.threads, user_api="blas"):
        for p in problems:
            A, B = p.operands(rng)
            C = np.empty((p.m, p.n), np.float32)
            ref, bound = validate.reference(A, B, C, 1.0, 0.0)
            calls = {"numpy": lambda: np.matmul(A, B, out=C)}
            for label, k, blk in contenders:
                calls[label] = (lambda k=k, blk=blk: mk.gemm(A, B, C, kernel=k, threads=args.threads,
                                                              blocking=blk))
            inner = {}
            for name, f in calls.items():
                C.fill(np.nan)
                f()
                ok, err, _, detail = validate.check(C, ref, bound)
                if not ok:
                    raise SystemExit(f"{name} on {p.label}: wrong result ({detail})")
                t0 = time.perf_counter()
                f()
                one = max(time.perf_counter() - t0, 1e-7)
                inner[name] = max(1, math.ceil(args.min_seconds / one))
            names = list(calls)
            times = {name: [] for name in calls}
            for r in range(args.rounds):
                for name in names[r % len(names):] + names[:r % len(names)]:
                    f = calls[name]
                    time.sleep(pause)
                    f()
                    t0 = time.perf_counter()
                    for _ in range(inner[name]):
                        f()
                    times[name].append((time.perf_counter() - t0) / inner[name])
            for label, _, blk in contenders:
                ratios = [tn / tk for tn, tk in zip(times["numpy"], times[label])]
                q1, med, q3 = quartiles(ratios)
                row = {"shape": p.label, "m": p.m, "n": p.n, "k": p.k, "kernel": label,
                       "kc": blk.kc, "mc": blk.mc, "nc": blk.nc,
                       "gflops": p.flops / statistics.median(times[label]) / 1e9,
                       "numpy_gflops": p.flops / statistics.median(times["numpy"]) / 1e9,
                       "ratio": med, "ratio_q1": q1, "ratio_q3": q3, "pair_ratios": ratios,
                       "seconds": times[label], "numpy_seconds": times["numpy"],
                       "inner": inner[label], "numpy_inner": inner["numpy"]}
                if label != first:   # the same round's times: both met the same spell
                    vs = [tf / tk for tf, tk in zip(times[first], times[label])]
                    row["vs_first"] = vs
                    row["vs_first_median"] = statistics.median(vs)
                rows.append(row)
                print(f"{p.label:>16} {label:>{width}} {row['gflops']:7.1f} GFLOP/s  numpy "
                      f"{row['numpy_gflops']:7.1f}  ratio {med:.3f} (q1 {q1:.3f} q3 {q3:.3f})"
                      + (f"  vs first {row['vs_first_median']:.3f} (faster in "
                         f"{sum(v > 1 for v in row['vs_first'])}/{len(row['vs_first'])})"
                         if "vs_first" in row else ""), flush=True)
    print("median over shapes of the per-shape median ratio (all shapes; min(m, n) >= 16):")
    for label, _, _ in contenders:
        mine = [row for row in rows if row["kernel"] == label]
        r = [row["ratio"] for row in mine]
        tiled = [row["ratio"] for row in mine if min(row["m"], row["n"]) >= 16]
        print(f"  {label:>{width}} {statistics.median(r):.3f} (min {min(r):.3f}, max {max(r):.3f})"
              + (f";  {statistics.median(tiled):.3f} over {len(tiled)}" if tiled else ""))
    if len(contenders) > 1:
        print(f"per round against the first contender ({first}): its time / this "
              "one's (> 1: this one is faster), median over shapes of the per-shape median:")
        for label, _, _ in contenders[1:]:
            vs = [row["vs_first_median"] for row in rows if row["kernel"] == label]
            print(f"  {label:>{width}} {statistics.median(vs):.3f} (min {min(vs):.3f}, "
                  f"max {max(vs):.3f})")
    if args.json is not None:
        write_json(args.json, {"numpy": numpy_blas_info(), "threads": args.threads,
                               "rounds": args.rounds, "sizes": args.sizes,
                               "workload": args.workload, "min_seconds": args.min_seconds,
                               "rows": rows})


if __name__ == "__main__":
    main()
