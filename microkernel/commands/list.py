"""``microkernel list``: the registry's built-in tiles and whether they run here."""
from __future__ import annotations

import json

from rich import box
from rich.table import Table

from .common import console

__all__ = ["add_arguments", "run"]


def add_arguments(p) -> None:
    p.add_argument("--isa", help="only this ISA's tiles")
    p.add_argument("--names", action="store_true",
                   help="print only the names, one per line (for scripts; with --json a "
                   "JSON list)")
    p.add_argument("--json", action="store_true")


def run(args) -> int:
    from ..dispatch import usable_isas
    from ..registry import BUILTIN, DEFAULTS
    from ..tile import register_budget
    from ..tile import ISAS
    from .common import UsageError
    if args.isa is not None and args.isa not in ISAS:
        raise UsageError(f"--isa {args.isa!r} is not an ISA; known ISAs: {', '.join(ISAS)}")
    usable = usable_isas()
    rows = []
    for s in BUILTIN:
        if args.isa is not None and s.isa != args.isa:
            continue
        b = register_budget(s)
        rows.append({"name": s.name, "isa": s.isa, "mr": s.mr,
                     "nr": f"{s.nr}v" if s.is_vla else s.nr, "k_unroll": s.k_unroll,
                     "registers": f"{b.needed}/{b.available}", "runnable_here": s.isa in usable,
                     "default": DEFAULTS[s.isa] == s.name,
                     "source": f"c_src/ukernels/{s.file_stem}.c"})
    heads = {"name": "name", "isa": "isa", "mr": "MR", "nr": "NR", "k_unroll": "k-unroll",
             "registers": "regs", "runnable_here": "runs here", "default": "default",
             "source": "source"}
    if args.names and args.json:
        print(json.dumps([r["name"] for r in rows]))
        return 0
    if args.names:
        print("\n".join(r["name"] for r in rows))
        return 0
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    t = Table(title="built-in tiles (microkernel.registry; sources c_src/ukernels/<name>.c; "
                    "any <isa>_<MR>x<NR> name also works)", box=box.SIMPLE_HEAD)
    cols = [c for c in rows[0] if c != "source"]        # the name says it (JSON keeps it)
    for col in cols:
        t.add_column(heads[col], no_wrap=True, min_width=len(heads[col]))
    for r in rows:
        t.add_row(*("yes" if r[c] is True else "" if r[c] is False else str(r[c])
                    for c in cols))
    console().print(t)
    return 0
