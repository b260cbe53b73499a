"""``microkernel probe``: what this CPU and OS can run, its caches, the blocking model's
choice for the default kernel."""
from __future__ import annotations

import json

from rich.table import Table

from .common import console

__all__ = ["add_arguments", "run"]


def add_arguments(p) -> None:
    p.add_argument("--json", action="store_true")


def run(args) -> int:
    from ..blocking import model_blocking
    from ..dispatch import best_isa, default_tile, usable_isas
    from ..dtypes import TYPES
    from ..gemm_typed import default_kernel
    from ..probe import cli_probe, probe
    info = probe()
    spec = default_tile(best_isa())
    # gemm()'s kernel per input types (the fp32 default, then the typed ones)
    per_types = {"f32": spec.name}
    per_types.update({t: default_kernel(t).name for t in TYPES if t not in ("f32", "f16h")})
    nr = spec.nr_at(info.sve_vector_bits) if spec.is_vla else spec.nr
    blk = model_blocking(spec.mr, nr, info.caches)
    # one thread of an fp32 tile: NC from the L2 where it holds enough (gemm.blocking_for)
    one = model_blocking(spec.mr, nr, info.caches, alone=spec.types == "f32")
    if args.json:
        d = info.to_json()
        d["usable_isas"] = list(usable_isas())
        d["default_kernel"] = spec.name
        d["gemm_kernels"] = per_types
        d["blocking"] = {"mr": spec.mr, "nr": nr, "kc": blk.kc, "mc": blk.mc, "nc": blk.nc,
                         "why": list(blk.why), "nc_one_thread": one.nc}
        print(json.dumps(d, indent=2))
        return 0
    rc = cli_probe(False)
    con = console()
    con.print(f"\nusable ISAs (MICROKERNEL_ISA honoured): {', '.join(usable_isas())}")
    if info.arch == "x86_64" and info.features.get("amx_tile"):
        con.print("AMX tile data state: " + ("granted by the kernel (arch_prctl "
                  "ARCH_REQ_XCOMP_PERM)" if info.features.get("amx_permitted") else
                  "NOT granted (the amx tiles are refused)"))
    con.print("gemm()'s kernel per input types: "
              + ", ".join(f"{t} -> {n}" for t, n in per_types.items()))
    t = Table(title=f"blocking for the default kernel {spec.name} (Low et al. 2016 model)")
    for col in ("MR", "NR", "KC", "MC", "NC"):
        t.add_column(col, justify="right")
    t.add_row(*(str(x) for x in (spec.mr, nr, blk.kc, blk.mc, blk.nc)))
    con.print(t)
    for line in blk.why:
        con.print(f"  {line}")
    if one.nc != blk.nc:
        con.print(f"  at one thread {one.why[-1]}")
    return rc
