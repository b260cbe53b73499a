"""Portable scalar emitter: one fp32 lane per "vector", plain C, baseline flags.
The compiler may contract c + a*b into an FMA where the target has one."""
from __future__ import annotations

from .common import VectorOps, emit_peak, emit_ukernel

SCALAR = VectorOps(
    includes=(), vtype="float", zero="0.0f", load="*({p})", store="*({p}) = {v}",
    bcast="*({p})", splat="({x})", fma="({c} + {a} * {b})", mul="({a} * {b})", align=16)


def ukernel(spec) -> str:
    return emit_ukernel(spec, SCALAR)


def peak(isa: str = "scalar") -> str:
    return emit_peak("scalar", SCALAR, 8)
