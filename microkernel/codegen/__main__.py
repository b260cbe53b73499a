"""Regenerate the committed built-in micro-kernel sources in c_src/ukernels/ and the
X-macro list of them, c_src/ukernels/mk_kernels.inc (all from microkernel.registry)."""
from __future__ import annotations

import pathlib
import sys

from . import generate, kernel_list
from ..registry import BUILTIN

ROOT = pathlib.Path(__file__).resolve().parents[2] / "c_src" / "ukernels"


def main() -> int:
    ROOT.mkdir(parents=True, exist_ok=True)
    for spec in BUILTIN:
        path = ROOT / f"{spec.file_stem}.c"
        path.write_text(generate(spec))
        print(f"wrote {path.relative_to(ROOT.parents[1])}")
    inc = ROOT / "mk_kernels.inc"
    inc.write_text(kernel_list(BUILTIN))
    print(f"wrote {inc.relative_to(ROOT.parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
