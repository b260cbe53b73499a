"""Regenerate the committed built-in micro-kernel sources in c_src/ukernels/."""
from __future__ import annotations

import pathlib
import sys

from . import generate
from ..tile import BUILTIN_TILES

ROOT = pathlib.Path(__file__).resolve().parents[2] / "c_src" / "ukernels"


def main() -> int:
    ROOT.mkdir(parents=True, exist_ok=True)
    for spec in BUILTIN_TILES:
        try:
            src = generate(spec)
        except ModuleNotFoundError as exc:  # an emitter family not written yet
            print(f"skip {spec.name}: {exc}", file=sys.stderr)
            continue
        path = ROOT / f"{spec.file_stem}.c"
        path.write_text(src)
        print(f"wrote {path.relative_to(ROOT.parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
