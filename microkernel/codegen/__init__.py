"""C emitters: one TileSpec in, the micro-kernel's C source out.

``generate(spec)`` dispatches on the ISA family (x86: avx512, avx2; arm: neon, sve;
scalar). ``generate_peak(isa)`` emits the FMA peak loop for one ISA.
``python -m microkernel.codegen`` rewrites the committed built-in sources in
``c_src/ukernels/`` (a test checks they match the generator).
"""
from __future__ import annotations

import importlib

from ..tile import TileSpec
from .common import symbol

__all__ = ["generate", "generate_peak", "symbol", "FAMILY"]

#: ISA -> emitter module (XNNPACK-style: one emitter per ISA family)
FAMILY = {"avx512": "x86", "avx2": "x86", "scalar": "scalar", "neon": "arm", "sve": "arm"}


def _family(isa: str):
    return importlib.import_module(f".{FAMILY[isa]}", __name__)


def generate(spec: TileSpec) -> str:
    """C source (str) of the micro-kernel ``mk_ukernel_<spec.name>`` (contract:
    c_src/mk_ukernel.h)."""
    return _family(spec.isa).ukernel(spec)


def generate_peak(isa: str) -> str:
    """C source of ``double mk_fma_peak(int64_t iters, double *flops)`` for ``isa``."""
    return _family(isa).peak(isa)
