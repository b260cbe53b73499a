#!/usr/bin/env python3
"""The SASS of a SIMT tile's main loop, counted without a GPU.

Usage (from the repository root; needs numba-cuda's NVVM, which the project's test
environment has, and NVIDIA's ``ptxas`` and ``cuobjdump`` + ``nvdisasm`` on PATH, e.g.
from the ``nvidia-cuda-nvcc``, ``nvidia-cuda-cuobjdump`` and ``nvidia-cuda-nvdisasm``
wheels: ``pip download --no-deps`` them and unzip, the binaries are in
``nvidia/cu13/bin``)::

    python3 bench/gpu_sass.py [--variant exact|vec|scalar] [--arch sm_90] [NAME ...]

NAME is an AUTO tile (``microkernel.gpu.launch.AUTO_TILES``) or a
``bench/gpu_simt.py`` ``scan_extra()`` tile (default: all of both). For each: the
kernel source of :func:`microkernel.gpu.simt.kernel_source` is compiled to PTX by
``numba.cuda.compile_ptx`` and by ptxas to a cubin (with the tile's register cap, as
:func:`microkernel.gpu.simt.build` gives numba), then disassembled. Reported: ptxas's
registers and spills, and for the main loop (the backward branch whose body holds the
most FFMA) its instruction count, the FFMA share and the most frequent opcodes, so
that two tiles' per-k-block overheads can be compared before a GPU is lent.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
import _gpu_common  # noqa: E402,F401  (np.row_stack shim, microkernel without cffi)

TOOLS = ("ptxas", "cuobjdump", "nvdisasm")


def loop_stats(sass: str) -> dict:
    """Instruction counts of the main loop in ``cuobjdump -sass`` text."""
    ins = []
    for line in sass.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if m:
            ins.append((int(m.group(1), 16), m.group(2).strip()))
    at = {a: i for i, (a, _) in enumerate(ins)}
    loops = []
    for i, (a, text) in enumerate(ins):
        m = re.search(r"\bBRA\b.*?0x([0-9a-f]+)", text)
        if m and int(m.group(1), 16) < a and int(m.group(1), 16) in at:
            loops.append((at[int(m.group(1), 16)], i))
    if not loops:
        return {"error": "no backward branch"}
    lo, hi = max(loops, key=lambda lh: sum("FFMA" in ins[j][1] for j in range(lh[0], lh[1] + 1)))
    ops = collections.Counter(re.sub(r"^@!?U?P[T\d]+\s+", "", t).split()[0].split(".")[0]
                              for _, t in ins[lo:hi + 1])
    n = hi - lo + 1
    return {"instructions": n, "ffma": ops["FFMA"], "ffma_share": ops["FFMA"] / n,
            "top": ops.most_common(12)}


def sass_of(tile, variant: str, arch: str, work: str) -> dict:
    from numba import cuda
    from microkernel.gpu import simt
    src = simt.kernel_source(tile, vec=variant != "scalar", exact=variant == "exact")
    src = src.replace(simt.ALIGN, ", alignment=16")
    name = f"sgemm_{tile.name}" + ("" if variant == "vec" else f"_{variant}")
    fn = simt._compile_source(src, name, simt._namespace(src, False, cuda))
    ptx, _ = cuda.compile_ptx(fn, simt.SIGNATURE, cc=tuple(int(c) for c in arch[3:]))
    base = os.path.join(work, name)
    with open(base + ".ptx", "w") as f:
        f.write(ptx)
    cap = 65536 // (tile.threads * tile.min_blocks) // 8 * 8
    cmd = ["ptxas", f"-arch={arch}", "-v", *([f"--maxrregcount={cap}"] if cap < 255 else []),
           "-o", base + ".cubin", base + ".ptx"]
    pr = subprocess.run(cmd, capture_output=True, text=True)
    if pr.returncode:
        return {"error": pr.stderr[-500:]}
    info = [ln.split(":", 1)[-1].strip() for ln in pr.stderr.splitlines()
            if "registers" in ln or "spill" in ln]
    sass = subprocess.run(["cuobjdump", "-sass", base + ".cubin"], capture_output=True,
                          text=True).stdout
    return {"ptxas": info, **loop_stats(sass)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--variant", default="exact", choices=("exact", "vec", "scalar"))
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args(argv)
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        print(f"gpu_sass.py: {', '.join(missing)} not on PATH (see the docstring: the "
              "nvidia-cuda-nvcc / -cuobjdump / -nvdisasm wheels carry them)", file=sys.stderr)
        return 2
    import gpu_simt
    from microkernel.gpu import launch, simt
    tiles = {t.name: t for t in (*launch.AUTO_TILES, *gpu_simt.scan_extra())}
    unknown = [n for n in args.names if n not in tiles]
    if unknown:
        print(f"gpu_sass.py: unknown tile(s) {unknown}; known: {sorted(tiles)}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as work:
        for name in args.names or list(tiles):
            t = tiles[name]
            variant = args.variant
            if variant == "exact" and not simt.has_exact(t):
                variant = "vec"
            r = sass_of(t, variant, args.arch, work)
            if "error" in r:
                print(f"{name} ({variant}): {r['error']}")
                continue
            top = ", ".join(f"{op} {c}" for op, c in r["top"])
            print(f"{name} ({variant}): {'; '.join(r['ptxas'])}\n  main loop {r['instructions']} "
                  f"instructions, FFMA {r['ffma']} ({100 * r['ffma_share']:.1f}%): {top}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
