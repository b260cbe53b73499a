"""One kernel built with this tree's driver against the same kernel built with another
git revision's driver (c_src/driver.c, its parts and headers: every .c and .h file at
the top of that revision's c_src/), timed in
interleaved rounds in one process: a change to the driver's loops or packing raced
against what it replaces, where a define cannot turn the change off.

Both builds are checked first on every shape against the float64 reference of the
kernel's types (microkernel.validate, the bound of each type); a wrong result stops the
script before any timing.

    python bench/driver_ab.py --rev fbb3a17 --kernel avx512bf16_8x32 \\
        [--sizes 1024,2048,4096] [--rounds 9] [--threads 1] [--json PATH]
    python bench/driver_ab.py --rev fbb3a17 --write DIR     (those files into DIR, for a
                                                            machine without the git history)
    python bench/driver_ab.py --rev fbb3a17 --c-src DIR --kernel ...   (raced from DIR)

Prints GFLOP/s of each build (median and 95% interval over the rounds) and the old
build's time over the new one's, paired by round (> 1: this tree is faster). Nothing is
asserted: this script measures and reports.
"""
import argparse
import pathlib
import subprocess
import sys
import tempfile

def old_c_src(rev: str, dest: pathlib.Path) -> pathlib.Path:
    """The .c and .h files at the top of c_src/ as of ``rev`` (git show), written into
    ``dest`` (the driver was one file before 2026-12-05, parts of it since)."""
    names = subprocess.run(["git", "ls-tree", "--name-only", f"{rev}:c_src"], check=True,
                           capture_output=True, text=True).stdout.split()
    for name in names:
        if name.endswith((".c", ".h")):
            text = subprocess.run(["git", "show", f"{rev}:c_src/{name}"], check=True,
                                  capture_output=True, text=True).stdout
            (dest / name).write_text(text)
    return dest


def main() -> int:
    from microkernel.commands.common import json_arg, write_json
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rev", required=True, help="the git revision whose driver is raced")
    ap.add_argument("--kernel")
    ap.add_argument("--write", metavar="DIR", help="only write REV's files into DIR")
    ap.add_argument("--c-src", metavar="DIR", help="REV's files, as --write left them")
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", type=json_arg, default=None)
    args = ap.parse_args()
    if args.write:
        pathlib.Path(args.write).mkdir(parents=True, exist_ok=True)
        print("wrote", old_c_src(args.rev, pathlib.Path(args.write)))
        return 0
    if not args.kernel:
        ap.error("--kernel is required unless --write")
    import numpy as np
    import microkernel as mk
    from microkernel import build, kernel, stats, validate
    from microkernel.bench import gflops_interval, typed_operands
    from microkernel.dtypes import get as types_get
    from microkernel.timing import Contender, Rounds

    new = mk.get_kernel(args.kernel)              # refuses a kernel this CPU cannot run
    spec = new.spec
    tmp = (pathlib.Path(args.c_src) if args.c_src
           else old_c_src(args.rev, pathlib.Path(tempfile.mkdtemp(prefix="driver_ab_"))))
    build_args = kernel._build_args(spec)
    build_args.update(name=f"{spec.name}_driver_{args.rev}", include_dirs=(str(tmp),),
                      depends=sorted(tmp.glob("*.[ch]")))
    old = kernel.Kernel(spec, build.load_module(**build_args))
    builds = {"this tree": new, f"driver of {args.rev}": old}
    t = types_get(spec.types)
    rng = np.random.default_rng(0)
    cons = []
    for n in (int(s) for s in args.sizes.split(",")):
        A, B = typed_operands(rng.standard_normal((n, n), dtype=np.float32),
                              rng.standard_normal((n, n), dtype=np.float32), spec.types, rng)
        C = np.empty((n, n), t.dtype("out"))
        ref, bound = validate.reference(A, B, np.zeros((n, n), np.float32), 1, 0, spec.types)
        for label, k in builds.items():
            mk.gemm(A, B, C, kernel=k, threads=args.threads)
            ok, _, _, detail = validate.check(C, ref, bound)
            if not ok:
                print(f"driver_ab: {label} wrong on {n}^3 ({detail})", file=sys.stderr)
                return 1
            cons.append(Contender(label, lambda A=A, B=B, C=C, k=k: mk.gemm(
                A, B, C, kernel=k, threads=args.threads), 2.0 * n ** 3, f"{n}^3"))
    r = Rounds(cons)
    for _ in range(args.rounds):
        r.round()
    out = {"kernel": spec.name, "rev": args.rev, "rounds": args.rounds,
           "threads": args.threads, "shapes": {}}
    for shape in r.shapes:
        row = {label: gflops_interval(r.contender(shape, label).flops
                                      / np.asarray(r.times[(shape, label)]) / 1e9)
               for label in builds}
        t_new, t_old = (np.asarray(r.times[(shape, lab)]) for lab in builds)
        iv = stats.bootstrap((t_old / t_new)[None, :])
        row["old_over_new"] = {"point": iv.point, "lo": iv.lo, "hi": iv.hi,
                               "new_faster_rounds": int(np.sum(t_new < t_old))}
        print(f"{shape:>8}  " + "  ".join(f"{lab} {row[lab]['gflops']:.1f} GFLOP/s "
                                          f"[{row[lab]['gflops_lo']:.1f}, {row[lab]['gflops_hi']:.1f}]"
                                          for lab in builds)
              + f"  old/new time {iv.point:.3f} [{iv.lo:.3f}, {iv.hi:.3f}],"
              f" this tree faster in {int(np.sum(t_new < t_old))}/{len(t_new)} rounds", flush=True)
        out["shapes"][shape] = row
    if args.json:
        write_json(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
