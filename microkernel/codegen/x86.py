"""x86-64 emitters: AVX-512 (zmm, 16 fp32 lanes) and AVX2+FMA (ymm, 8 lanes).

Intrinsics per the Intel Intrinsics Guide; each ISA's module is compiled with only
its own flags (``tile.ISAS[isa].cflags``), never -march=native.
"""
from __future__ import annotations

from . import common
from .common import VectorOps, emit_edge, emit_peak, emit_ukernel

AVX512 = VectorOps(
    includes=("immintrin.h",), vtype="__m512", zero="_mm512_setzero_ps()",
    load="_mm512_loadu_ps({p})", store="_mm512_storeu_ps({p}, {v})",
    bcast="_mm512_set1_ps(*({p}))", splat="_mm512_set1_ps({x})",
    fma="_mm512_fmadd_ps({a}, {b}, {c})", mul="_mm512_mul_ps({a}, {b})",
    add="_mm512_add_ps({a}, {b})", c_prefetch_spread=True)

AVX2 = VectorOps(
    includes=("immintrin.h",), vtype="__m256", zero="_mm256_setzero_ps()",
    load="_mm256_loadu_ps({p})", store="_mm256_storeu_ps({p}, {v})",
    bcast="_mm256_broadcast_ss({p})", splat="_mm256_set1_ps({x})",
    fma="_mm256_fmadd_ps({a}, {b}, {c})", mul="_mm256_mul_ps({a}, {b})",
    add="_mm256_add_ps({a}, {b})")

OPS = {"avx512": AVX512, "avx2": AVX2}
#: independent FMA chains for the peak loop: >= latency x units (4 x 2), within the
#: register file (AVX2 has 16 ymm, AVX-512 32 zmm).
PEAK_CHAINS = {"avx512": 16, "avx2": 12}


def ukernel(spec) -> str:
    """The micro-kernel and, for tiles of several vectors per row, its edge entry point."""
    src = emit_ukernel(spec, OPS[spec.isa])
    return src + "\n" + emit_edge(spec, OPS[spec.isa]) if spec.vectors_per_row > 1 else src


def edge_symbol(spec) -> str:
    """C name of the edge entry point, or ``NULL`` for one vector per row (an N edge
    would still need the whole vector: the driver's buffer does the same)."""
    return common.edge_symbol(spec) if spec.vectors_per_row > 1 else "NULL"


def peak(isa: str) -> str:
    return emit_peak(isa, OPS[isa], PEAK_CHAINS[isa])
