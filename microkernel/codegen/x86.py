"""x86-64 emitters: AVX-512 (zmm, 16 fp32 lanes) and AVX2+FMA (ymm, 8 lanes).

Intrinsics per the Intel Intrinsics Guide; each ISA's module is compiled with only
its own flags (``tile.ISAS[isa].cflags``), never -march=native.

Types (microkernel.dtypes): fp32 tiles, and bf16 / fp16 tiles that run the same fp32
micro-kernel on panels widened while packing; integer tiles (``s8s8``, ``u8s8``,
``u8u8``) widen A and B to int16 in pairs along K and multiply-add the pairs with
``vpmaddwd`` (``_mm256_madd_epi16`` / ``_mm512_madd_epi16``: 16 or 32 int16 products
summed pairwise into int32 lanes) and ``vpaddd``, exact for int8 inputs (a pair sum is
at most 2 x 128 x 255 in magnitude); C is int32 and wraps like the kernels' arithmetic.
"""
from __future__ import annotations

from . import PanelLayout, common
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

def _madd_ops(w: str, load: str, store: str) -> VectorOps:
    """The int32 lane operations of the integer tiles at vector width ``w`` ("256" or
    "512" bits): the madd-widened int16 pairs of a K group multiply and add in int32
    (wrapping), B broadcasts a 32-bit pair of A; ``load``/``store`` the width's unaligned
    integer vector accesses."""
    return VectorOps(
        includes=("immintrin.h", "string.h"), vtype=f"__m{w}i", zero=f"_mm{w}_setzero_si{w}()",
        load=load, store=store,
        bcast=f"_mm{w}_set1_epi32(mk_ld32({{p}}))", splat=f"_mm{w}_set1_epi32({{x}})",
        fma=f"_mm{w}_add_epi32({{c}}, _mm{w}_mullo_epi32({{a}}, {{b}}))",
        mul=f"_mm{w}_mullo_epi32({{a}}, {{b}})", add=f"_mm{w}_add_epi32({{a}}, {{b}})",
        scalar_t="int32_t", elem_a="int16_t", elem_b="int16_t", kstep=2, one="1",
        zero_s="0", wrap=True)


AVX2_MADD = _madd_ops("256", load="_mm256_loadu_si256((const __m256i *)({p}))",
                      store="_mm256_storeu_si256((__m256i *)({p}), {v})")
AVX512_MADD = _madd_ops("512", load="_mm512_loadu_si512((const void *)({p}))",
                        store="_mm512_storeu_si512((void *)({p}), {v})")

OPS = {"avx512": AVX512, "avx2": AVX2}
MADD = {"avx512": (AVX512_MADD, "_mm512_madd_epi16", "_mm512_add_epi32"),
        "avx2": (AVX2_MADD, "_mm256_madd_epi16", "_mm256_add_epi32")}
#: independent FMA chains for the peak loop: >= latency x units (4 x 2), within the
#: register file (AVX2 has 16 ymm, AVX-512 32 zmm).
PEAK_CHAINS = {"avx512": 16, "avx2": 12}

#: an aligned-free 32-bit load of an int16 pair (memcpy: no strict-aliasing UB)
LD32 = """#ifndef MK_LD32_DEFINED
#define MK_LD32_DEFINED
static inline int32_t mk_ld32(const int16_t *p) { int32_t x; memcpy(&x, p, 4); return x; }
#endif
"""


def _integer(spec) -> bool:
    return spec.gemm_types.integer


def layout(spec):
    """Integer tiles: int16 panels in pairs along K (vpmaddwd); others: the default."""
    if not _integer(spec):
        return None
    t = spec.gemm_types
    return PanelLayout(sa=t.c_a, sb=t.c_b, ta="int16_t", tb="int16_t", ga=2, gb=2,
                       tc="int32_t", cvt_a="((int16_t)(x))", cvt_b="((int16_t)(x))",
                       fill_a="((int16_t)((i) % 7) - 3)", fill_b="((int16_t)((i) % 5) - 2)")


def _madd_step(spec, ops, acc, u, indent):
    """One k pair: NR/lanes B vectors of int16 pairs, each A pair broadcast as an int32,
    vpmaddwd + vpaddd into each accumulator."""
    madd, add = MADD[spec.isa][1:]
    mr, nr, lanes, nv = spec.mr, spec.nr, spec.info.lanes, len(acc[0])
    lines = [f"{indent}const {ops.vtype} b{v} = {ops.load.format(p=f'b + {2 * (u * nr + v * lanes)}')};"
             for v in range(nv)]
    for i in range(mr):
        lines.append(f"{indent}const {ops.vtype} a{i} = {ops.bcast.format(p=f'a + {2 * (u * mr + i)}')};")
        for v in range(nv):
            lines.append(f"{indent}{acc[i][v]} = {add}({acc[i][v]}, {madd}(a{i}, b{v}));")
    # AVX2: integer adds associate, and without a register barrier at the end of each k
    # step GCC 12 regrouped the sums and copied 8 accumulators (and re-read a B vector 4
    # times) in every iteration of avx2_s8s8_4x16; with it the tile ran 1.10x faster in
    # gemm() on the Zen 4. The AVX-512 tiles, whose 32 zmm leave room, ran 0.8% slower
    # with it, so they go without (docs/design-notes.md, integer tiles).
    if spec.isa == "avx2":
        lines += ["#ifdef __AVX2__"]
        lines += common.register_barrier([x for row in acc for x in row], indent=indent,
                                         constraint="x")
        lines += ["#endif"]
    return lines


def ukernel(spec) -> str:
    """The micro-kernel and, for fp32-panel tiles of several vectors per row, its edge
    entry point."""
    if _integer(spec):
        src = emit_ukernel(spec, MADD[spec.isa][0], step=_madd_step)
        head, _, body = src.partition("\nvoid ")
        return head + "\n" + LD32 + "\nvoid " + body
    src = emit_ukernel(spec, OPS[spec.isa])
    return src + "\n" + emit_edge(spec, OPS[spec.isa]) if spec.vectors_per_row > 1 else src


def edge_symbol(spec) -> str:
    """C name of the edge entry point, or ``NULL`` for one vector per row (an N edge
    would still need the whole vector: the driver's buffer does the same) and for
    integer tiles (the driver's buffer)."""
    return common.edge_symbol(spec) if spec.vectors_per_row > 1 and not _integer(spec) else "NULL"


def _madd_peak(isa: str, chains: int = 14) -> str:
    """Peak of vpmaddwd + vpaddd: ``chains`` chains t = madd(s, x); s = add(t, y) (the
    madd depends on the chain, so it cannot be hoisted). 2 operations per int16
    product: 4 x lanes per chain step. 14 chains fill AVX2's 16 ymm registers beside x
    and y. A register barrier ends each iteration: integer adds associate, and without
    it GCC 12 regrouped the chains and spilled seven of them to the stack in the loop
    (107 GOP/s on a Zen 4, the avx2 int8 tiles at 143% of it; 202 GOP/s with it)."""
    ops, madd, add = MADD[isa]
    lanes = 16 if isa == "avx512" else 8
    w = "512" if isa == "avx512" else "256"
    setup = [f"    const {ops.vtype} x = _mm{w}_set1_epi16(1);",
             f"    const {ops.vtype} y = _mm{w}_set1_epi32(3);"]
    setup += [f"    {ops.vtype} s{j} = _mm{w}_set1_epi32({j});" for j in range(chains)]
    finish = [f"    {ops.vtype} s = s0;"] + [f"    s = {add}(s, s{j});" for j in range(1, chains)]
    finish += ["    int32_t sink[16] __attribute__((aligned(64)));",
               f"    {ops.store.format(p='sink', v='s')};",
               "    volatile int32_t keep = sink[0]; (void)keep;"]
    tail = common.register_barrier([f"s{j}" for j in range(chains)], indent="        ",
                                   constraint="v" if isa == "avx512" else "x")
    return common.peak_source(f"vpmaddwd peak loop for {isa}: {chains} chains of madd + add.",
                              ("immintrin.h",), setup, chains, f"{add}({madd}({{s}}, x), y)",
                              finish, f"4.0 * {lanes} * {chains} * (double)iters", loop_tail=tail)


def peak(isa: str, types: str = "f32") -> str:
    if types in ("s8s8", "u8s8", "u8u8"):
        return _madd_peak(isa)
    return emit_peak(isa, OPS[isa], PEAK_CHAINS[isa])
