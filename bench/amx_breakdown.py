"""Where an AMX bf16 gemm() spends its time: the real kernel against diagnostic
variants of its micro-kernel that leave one cost out, timed in interleaved rounds.

The variants are C files, each a copy of the generated ``c_src/ukernels/amx_bf16_32x32.c``
with one change (:func:`variant_sources`, written into ``--dir``), compiled with the same
driver (:func:`microkernel.get_kernel` ``source=``). The diagnostic ones compute wrong
results on purpose, so they are timed directly, never validated, never used otherwise:

* ``nop``: the micro-kernel returns at once: packing and the loop nest only;
* ``noc``: no C tile load or store (C tiles zeroed, results dropped): the cost of
  C's traffic;
* ``l1a`` / ``l1b`` / ``l1ab``: the A / B / both tile loads read one fixed 4 KiB buffer
  (always in L1) instead of the packed panels: the cost of streaming them from L2.

``--write-only`` also writes the prefetch variants ``pf{a,b,ab}{1,2}`` (real GEMMs: L1
software prefetch of the next 1 or 2 k steps of the A / B / both panels, 32 lines
each) and ``t1{a,b,ab}`` (real GEMMs: the A / B / both panels' tiles loaded with
TILELOADDT1, the streaming hint), for ``microkernel compare --kernels "amx_bf16_32x32@DIR/pfa1.c;..."``, which
validates them before it times them.

    python bench/amx_breakdown.py [--dir .amxvar] [--sizes 2048,4096] [--rounds 5]
                                  [--json PATH] [--write-only] [--define TAG:NAME=VALUE ...]

``--define TAG:NAME=VALUE`` (repeatable; TAG:N1=V1,N2=V2 for several) adds the real
kernel and ``nop`` built with those defines first, as ``kernel+TAG`` and ``nop+TAG``, to
the same rounds: a driver variant's cost outside the micro-kernel (``nop``) beside its
whole effect.

Prints GFLOP/s (the GEMM's flop count over each variant's time, median and 95%
interval) and each variant's time as a fraction of the real kernel's, paired by round
(bench/_breakdown.py). Nothing is
asserted: this script measures and reports.
"""
import argparse
import sys


KERNEL = "amx_bf16_32x32"
DIAGNOSTIC = ("nop", "noc", "l1a", "l1b", "l1ab")


def _sub(src: str, old: str, new: str) -> str:
    if old not in src:
        raise SystemExit(f"the generated {KERNEL} no longer contains {old.strip()!r}: "
                         f"update bench/amx_breakdown.py")
    return src.replace(old, new)


def variant_sources(src: str) -> dict[str, str]:
    """{name: C source} of every variant of the generated kernel source ``src``."""
    out = {}
    hot = '    __asm__ volatile("" ::: "memory");   /* the panels\' stores before the tile loads */\n'
    out["nop"] = _sub(src, hot, hot + "    return;\n")
    s = src
    for t, (r, c) in enumerate([(0, 0), (0, 16), (16, 0), (16, 16)]):
        s = _sub(s, f"        _tile_loadd({t}, c + {r} * rs_c + {c}, rs_c * 4);\n",
                 f"        _tile_zero({t});\n")
        s = _sub(s, f"        _tile_stored({t}, c + {r} * rs_c + {c}, rs_c * 4);\n", "")
    out["noc"] = s
    loads = {"a": [("_tile_loadd(4, a + 0, 64);", "_tile_loadd(4, vbuf_l1 + 0, 64);"),
                   ("_tile_loadd(5, a + 512, 64);", "_tile_loadd(5, vbuf_l1 + 512, 64);")],
             "b": [("_tile_loadd(6, b + 0, 128);", "_tile_loadd(6, vbuf_l1 + 1024, 128);"),
                   ("_tile_loadd(7, b + 32, 128);", "_tile_loadd(7, vbuf_l1 + 1056, 128);")]}
    for w in ("a", "b", "ab"):
        s = _sub(src, "#include <immintrin.h>\n", "#include <immintrin.h>\n"
                 "static uint16_t vbuf_l1[2048] __attribute__((aligned(64)));\n")
        for part in w:
            for old, new in loads[part]:
                s = _sub(s, old, new)
        out[f"l1{w}"] = s
    # TILELOADDT1 (_tile_stream_loadd: "the data is not reused", SDM vol. 2) for A's,
    # B's or both panels' tile loads: real GEMMs, for blockings whose B micro-panel
    # could then stay in L1 across the ir loop while A streams past it
    for w in ("a", "b", "ab"):
        s = src
        for part in w:
            for old, _ in loads[part]:
                s = _sub(s, old, old.replace("_tile_loadd(", "_tile_stream_loadd("))
        out[f"t1{w}"] = s
    anchor = "        _tile_loadd(4, a + 0, 64);\n"
    for w in ("a", "b", "ab"):
        for d in (1, 2):
            pf = "".join(f"        __builtin_prefetch((const void *)({p} + {d * 1024 + x * 32}), 0, 3);\n"
                         for x in range(32) for p in w)
            out[f"pf{w}{d}"] = _sub(src, anchor, pf + anchor)
    return out


def main() -> int:
    from _breakdown import rows_against
    from microkernel.commands.common import json_arg, write_json
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=".amxvar", help="where the variant sources go")
    ap.add_argument("--write-only", action="store_true", help="write every variant, time nothing")
    ap.add_argument("--sizes", default="2048,4096")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=json_arg, default=None)
    ap.add_argument("--define", action="append", default=[], metavar="TAG:NAME=VALUE")
    args = ap.parse_args()
    import os
    import numpy as np
    import ml_dtypes
    import microkernel as mk
    from microkernel.codegen import generate
    from microkernel.timing import Contender, Rounds

    os.makedirs(args.dir, exist_ok=True)
    paths = {}
    generated = generate(mk.TileSpec.from_name(KERNEL))
    sources = variant_sources(generated)
    for name, src in sources.items():
        paths[name] = os.path.join(args.dir, f"{name}.c")
        with open(paths[name], "w") as fh:
            fh.write(src)
    if args.write_only:
        print("wrote", " ".join(sorted(paths.values())))
        return 0
    try:
        kernels = {"kernel": mk.get_kernel(KERNEL)}
    except mk.IsaUnavailableError as e:
        print(f"amx_breakdown: {e} (--write-only writes the variants anywhere)", file=sys.stderr)
        return 2
    for name in DIAGNOSTIC:
        kernels[name] = mk.get_kernel(KERNEL, source=paths[name])
    for spec in args.define:
        tag, _, defs = spec.partition(":")
        head = "".join(f"#define {d.replace('=', ' ', 1)}\n" for d in defs.split(","))
        for base, src in (("kernel", generated), ("nop", sources["nop"])):
            paths[f"{base}+{tag}"] = os.path.join(args.dir, f"{base}_{tag}.c")
            with open(paths[f"{base}+{tag}"], "w") as fh:
                fh.write(head + src)
            kernels[f"{base}+{tag}"] = mk.get_kernel(KERNEL, source=paths[f"{base}+{tag}"])
    rng = np.random.default_rng(0)
    cons = []
    for n in (int(s) for s in args.sizes.split(",")):
        A = rng.standard_normal((n, n), dtype=np.float32).astype(ml_dtypes.bfloat16)
        B = rng.standard_normal((n, n), dtype=np.float32).astype(ml_dtypes.bfloat16)
        C = np.empty((n, n), np.float32)
        for name, k in kernels.items():
            cons.append(Contender(name, lambda A=A, B=B, C=C, k=k: mk.gemm(A, B, C, kernel=k, threads=1),
                                  2.0 * n ** 3, f"{n}^3"))
    r = Rounds(cons)
    for _ in range(args.rounds):
        r.round()
    out = {"kernel": KERNEL, "rounds": args.rounds, "variants": list(kernels)[1:],
           "defines": args.define, "shapes": rows_against(r, kernels)}
    if args.json:
        write_json(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
