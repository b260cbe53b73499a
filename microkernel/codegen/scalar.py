"""Portable scalar emitter: one lane per "vector", plain C, baseline flags.
The compiler may contract c + a*b into an FMA where the target has one.

Integer tiles (``s8s8``, ``u8s8``, ``u8u8``): A and B are widened to int32 while
packing (codegen.layout's default) and the accumulators are uint32_t, so products and
sums wrap exactly as int32 two's complement without signed-overflow UB; the result is
exact for int8 inputs up to K of about 130,000 (127 x 128 x K < 2^31).
"""
from __future__ import annotations

from .common import VectorOps, emit_peak, emit_ukernel

SCALAR = VectorOps(
    includes=(), vtype="float", zero="0.0f", load="*({p})", store="*({p}) = {v}",
    bcast="*({p})", splat="({x})", fma="({c} + {a} * {b})", mul="({a} * {b})", align=16)

SCALAR_I32 = VectorOps(
    includes=(), vtype="uint32_t", zero="0u", load="(uint32_t)*({p})",
    store="*({p}) = (int32_t)({v})", bcast="(uint32_t)*({p})", splat="((uint32_t)({x}))",
    fma="({c} + {a} * {b})", mul="({a} * {b})", add="({a} + {b})", align=16,
    scalar_t="int32_t", elem_a="int32_t", elem_b="int32_t", one="1", zero_s="0", wrap=True)


def ukernel(spec) -> str:
    return emit_ukernel(spec, SCALAR_I32 if spec.gemm_types.integer else SCALAR)


def peak(isa: str = "scalar", types: str = "f32") -> str:
    """The scalar fp32 multiply-add peak (integer scalar tiles are measured against it
    too: a portable fallback, not a tuned kernel)."""
    return emit_peak("scalar", SCALAR, 8)
