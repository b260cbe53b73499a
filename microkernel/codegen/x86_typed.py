"""x86-64 emitters of the AVX-512 typed ISAs: AVX512-BF16, AVX512-FP16, AVX512-VNNI.

One register tile per spec as the fp32 tiles of :mod:`.x86` (MR rows x NR/lanes
accumulators, one B row of NR/lanes vectors per k step, A broadcast), with the
instruction of the types in place of the fp32 FMA. Sources: Intel 64 and IA-32
Architectures Software Developer's Manual (SDM) vol. 2C, VDPBF16PS, VFMADD132PH/
VFMADD213PH/VFMADD231PH, VPDPBUSD; Intel Intrinsics Guide for the intrinsics.

``avx512bf16`` (types ``bf16``): ``vdpbf16ps`` (``_mm512_dpbf16_ps``) adds, in each of
16 fp32 lanes, the dot product of one bf16 pair of each source (SDM: two fp32
accumulations per lane, round to nearest even, denormal inputs treated as zero and
denormal results flushed to zero, MXCSR not consulted). Panels hold K in pairs
(ga = gb = 2, :func:`layout`): a B vector is 16 columns x (k, k+1), an A pair is one
32-bit element broadcast to every lane (``vpbroadcastd``, or folded into the
instruction as ``{1to16}``), so a k step is a pair of k.

``avx512fp16`` (types ``f16h``): ``vfmadd231ph`` (``_mm512_fmadd_ph``) on 32 fp16
lanes, fp16 accumulation (one rounding per k, unit roundoff 2^-11). The A panel
stores each value twice in a 32-bit element (packing does it), so that its broadcast
is the 32-bit ``vpbroadcastd`` load (a load-port uop) rather than a 16-bit broadcast;
after the K loop each accumulator is widened (``vcvtph2ps``) to two fp32 vectors and
C := alpha * acc + beta * C is computed in fp32.

``avx512vnni`` (types ``u8s8``): ``vpdpbusd`` (``_mm512_dpbusd_epi32``) adds, in each of
16 int32 lanes, four products of an unsigned byte of its first source and a signed
byte of its second (each product fits int16, the sum of four int32: exact; the int32
accumulation wraps; ``vpdpbusds`` would saturate instead). Panels hold K in quads
(ga = gb = 4): the A quad (unsigned) is broadcast, the B vector (signed) loaded.

``avx512vnni`` of ``s8s8`` and ``u8u8``: the same ``vpdpbusd`` after shifting A by 128
while packing, so that one operand is unsigned and the other signed, and a column
compensation (the method of oneDNN's s8s8 GEMM, which adds 128 to A and subtracts
128 x the column sums of B). s8s8: A' = A + 128 (u8), c = sum A'B = AB + 128 sum_k B.
u8u8: A' = A - 128 (s8), B (u8) is the unsigned operand, c = sum B A' = AB - 128 sum_k B.
The driver's packing writes cs = 128 sum_k B (s8s8) or -128 sum_k B (u8u8) per column
into one more K group at the end of each B micro-panel (``MK_B_COLSUM``, c_src/driver.c),
once per packed panel; the micro-kernel, called with that depth, stops one K group early
and ends with AB = c - cs, exact in wrapping int32 arithmetic. Zero padding stays
exact: a padded k has B = 0.

Every ISA's peak loop (:func:`peak`) runs independent chains of its own instruction,
counting 2 operations per multiply-add (vdpbf16ps: 64 per zmm, vfmadd231ph: 64,
vpdpbusd: 128). Edges go through the driver's MR x NR buffer (:func:`edge_symbol`).
"""
from __future__ import annotations

import dataclasses

from . import PanelLayout
from .common import (alpha_scale, emit_ukernel, header, peak_source, prefetch_columns,
                     register_barrier, symbol)
from .x86 import AVX512, AVX512_MADD

__all__ = ["layout", "ukernel", "peak", "edge_symbol", "OPS", "PEAK_CHAINS"]

#: small integers of the L1 timing's int8 panels (u8: never zero)
_U8, _S8 = "((uint8_t)((i) % 7 + 1))", "((int8_t)((i) % 5) - 2)"
#: the L1 timing's panels per ISA: bf16 bits 1.0 + i/128 (A) and 2^-8 (B) -- normal
#: values, never zero, whose sums stay far from the fp16 range limit; the int8 ones above
_FILL = {
    "avx512bf16": ("((uint16_t)(0x3F80u + (i) % 7))", "((uint16_t)(0x3B80u + (i) % 5))"),
    "avx512fp16": ("((uint32_t)(0x3C00u + (i) % 7) * 0x10001u)", "((uint16_t)(0x1C00u + (i) % 5))"),
    "avx512vnni": (_U8, _S8),
}

#: the epilogue's operations (C's type) and the panels' element types per ISA
OPS = {
    "avx512bf16": dataclasses.replace(AVX512, includes=("immintrin.h", "string.h"),
                                      elem_a="uint16_t", elem_b="uint16_t", kstep=2),
    "avx512vnni": dataclasses.replace(AVX512_MADD, elem_a="uint8_t", elem_b="int8_t", kstep=4),
}

@dataclasses.dataclass(frozen=True)
class Shift:
    """s8s8 and u8u8 on vpdpbusd, which multiplies only u8 by s8: A is shifted by 128
    while packing and C is compensated by B's column sums (module docstring). The
    fields are C type names and C expressions of x (a source element) and s (a
    column's sum of B)."""
    ta: str          #: A's panel type
    tb: str          #: B's panel type
    cvt_a: str       #: A's conversion while packing (the shift)
    value_a: str     #: a shifted panel element of A as the value it stands for
    colsum: str      #: the driver's MK_B_COLSUM(s), as uint32: 128 s (s8s8), -128 s (u8u8)


#: the VNNI types whose A is shifted by 128 while packing and whose C is compensated
SHIFTED = {
    "s8s8": Shift("uint8_t", "int8_t", "((uint8_t)((int)(x) + 128))", "((int32_t)(x) - 128)",
                  "((s) * 128u)"),
    "u8u8": Shift("int8_t", "uint8_t", "((int8_t)((int)(x) - 128))", "((int32_t)(x) + 128)",
                  "(0u - (s) * 128u)"),
}


def _ops(spec):
    """The VectorOps of ``spec``'s micro-kernel (the panels' element types per types)."""
    if spec.isa == "avx512vnni" and spec.types in SHIFTED:
        sh = SHIFTED[spec.types]
        return dataclasses.replace(OPS["avx512vnni"], elem_a=sh.ta, elem_b=sh.tb)
    return OPS[spec.isa]

#: independent chains of the peak loops: at least latency x ports (4-5 x 2), within 32 zmm
PEAK_CHAINS = {"avx512bf16": 16, "avx512fp16": 16, "avx512vnni": 16}

#: an unaligned 32-bit load (memcpy: no strict-aliasing UB), the element a broadcast reads
LD32 = """#ifndef MK_LD32U_DEFINED
#define MK_LD32U_DEFINED
static inline int32_t mk_ld32u(const void *p) { int32_t x; memcpy(&x, p, 4); return x; }
#endif
"""


def layout(spec) -> PanelLayout:
    """The panels of each ISA (see the module docstring): bf16 pairs, fp16 with A values
    doubled into 32 bits, u8 / s8 quads; C float (int32 for vnni)."""
    fa, fb = _FILL[spec.isa]
    if spec.isa == "avx512bf16":
        return PanelLayout(sa="uint16_t", sb="uint16_t", ta="uint16_t", tb="uint16_t",
                           ga=2, gb=2, fill_a=fa, fill_b=fb)
    if spec.isa == "avx512fp16":
        return PanelLayout(sa="uint16_t", sb="uint16_t", ta="uint32_t", tb="uint16_t",
                           cvt_a="((uint32_t)(x) * 0x10001u)", fill_a=fa, fill_b=fb)
    if spec.types in SHIFTED:
        sh, t = SHIFTED[spec.types], spec.gemm_types
        fa, fb = (_U8, _S8) if sh.ta == "uint8_t" else (_S8, _U8)
        return PanelLayout(sa=t.c_a, sb=t.c_b, ta=sh.ta, tb=sh.tb, ga=4, gb=4, tc="int32_t",
                           cvt_a=sh.cvt_a, fill_a=fa, fill_b=fb, value_a=sh.value_a,
                           colsum_b=sh.colsum)
    return PanelLayout(sa="uint8_t", sb="int8_t", ta="uint8_t", tb="int8_t", ga=4, gb=4,
                       tc="int32_t", fill_a=fa, fill_b=fb)


def _dot_step(spec, ops, acc, u, indent):
    """One k group (a pair for bf16, a quad for vnni): NR/16 B vectors, each A group
    broadcast as a 32-bit element, one dot-product instruction per accumulator."""
    mr, nr, g, nv = spec.mr, spec.nr, ops.kstep, len(acc[0])
    lines = [f"{indent}const __m512i b{v} = _mm512_loadu_si512((const void *)(b + "
             f"{g * (u * nr + v * 16)}));" for v in range(nv)]
    for i in range(mr):
        lines.append(f"{indent}const __m512i a{i} = _mm512_set1_epi32(mk_ld32u(a + {g * (u * mr + i)}));")
        for v in range(nv):
            c = acc[i][v]
            if spec.isa == "avx512bf16":   # the broadcast last: foldable as {1to16}
                lines.append(f"{indent}{c} = _mm512_dpbf16_ps({c}, (__m512bh)b{v}, (__m512bh)a{i});")
            elif spec.types == "u8u8":     # vpdpbusd: unsigned B first, shifted (signed) A
                lines.append(f"{indent}{c} = _mm512_dpbusd_epi32({c}, b{v}, a{i});")
            else:                          # vpdpbusd: unsigned A first, signed B second
                lines.append(f"{indent}{c} = _mm512_dpbusd_epi32({c}, a{i}, b{v});")
    return lines


def _compensation(spec) -> tuple[list[str], list[str]]:
    """(prologue, after-loop lines) of a shifted VNNI tile: the K loop stops before the
    trailer that the driver's packing wrote (MK_B_COLSUM), whose NR int32 are then
    subtracted from C's tile (module docstring); ([], []) for the others."""
    if spec.isa != "avx512vnni" or spec.types not in SHIFTED:
        return [], []
    nv = spec.vectors_per_row
    pro = ["#ifndef MK_B_COLSUM",
           '#error "this micro-kernel reads the column sums the driver packs (MK_B_COLSUM)"',
           "#endif",
           "    kc -= 4;   /* the last K group of the panels: B's column sums (driver.c) */"]
    # An empty asm that takes every accumulator in a register: without it GCC 12 keeps
    # copies of the accumulators for the subtraction and moves 16 zmm (and spills two)
    # in every iteration of the K loop (54% of the vpdpbusd peak in L1 on the Zen 4,
    # with the column sums then summed in the loop, against 83% with it). Only where
    # the vectors are registers: tests/x86emul's portable emulation is not.
    live = [f"c{i}_{v}" for i in range(spec.mr) for v in range(nv)]
    post = ["#ifdef __AVX512F__", *register_barrier(live), "#endif"]
    post += [f"    const __m512i cs{v} = _mm512_loadu_si512((const void *)(b + {64 * v}));"
             for v in range(nv)]
    post += [f"    c{i}_{v} = _mm512_sub_epi32(c{i}_{v}, cs{v});"
             for i in range(spec.mr) for v in range(nv)]
    return pro, post


def _with_ld32(src: str) -> str:
    head, _, body = src.partition("\nvoid ")
    return head + "\n" + LD32 + "\nvoid " + body


#: the ISAs whose modules ask the driver for its C-stationary loops (MK_C_STATIONARY,
#: c_src/mk_cstat.h; docs/design-notes.md, AMX: C stays in compact tiles). Measured at one
#: thread against the BLIS loops: AVX512-BF16 +16.4% on a Zen 4, a tie on Sapphire
#: Rapids; VNNI +5.9% on the Zen 4 but -4.0% on Sapphire Rapids, and the widening FP16
#: and fp32 tiles tied on the Zen 4, so those keep the BLIS loops
C_STATIONARY = ("avx512bf16",)


def ukernel(spec) -> str:
    if spec.isa == "avx512fp16":
        return _fp16_ukernel(spec)
    pro, post = _compensation(spec)
    src = _with_ld32(emit_ukernel(spec, _ops(spec), step=_dot_step, prologue=pro,
                                  after_loop=post))
    if spec.isa in C_STATIONARY:
        src += ("\n/* one thread, K over several KC blocks: C accumulated in compact tiles "
                "(mk_cstat.h) */\n#define MK_C_STATIONARY 1\n")
    return src


def edge_symbol(spec) -> str:
    """``NULL``: edge tiles go through the driver's MR x NR buffer."""
    return "NULL"


# -- AVX512-FP16: fp16 accumulators, an fp32 epilogue -------------------------------------

def _fp16_ukernel(spec) -> str:
    mr, nr, ku = spec.mr, spec.nr, spec.k_unroll
    nv = spec.vectors_per_row
    acc = [[f"c{i}_{v}" for v in range(nv)] for i in range(mr)]
    wide = [[f"f{i}_{w}" for w in range(2 * nv)] for i in range(mr)]
    out = [header(spec), "#include <stdint.h>", "#include <string.h>", "#include <immintrin.h>",
           "", LD32,
           f"void {symbol(spec)}(int64_t kc, const float *restrict alpha,",
           "        const uint32_t *restrict a, const uint16_t *restrict b,",
           "        const float *restrict beta, float *restrict c, int64_t rs_c, int64_t cs_c)",
           "{"]
    for i in range(mr):
        out.append("    __m512h " + ", ".join(f"{x} = _mm512_setzero_ph()" for x in acc[i]) + ";")
    for i in range(mr):     # C's lines: an fp32 row of NR columns (prefetched during the loop)
        out += [f"    __builtin_prefetch(c + {i} * rs_c" + (f" + {j} * cs_c);" if j else ");")
                for j in prefetch_columns(nr)]

    def step(u: int, indent: str) -> list[str]:
        lines = [f"{indent}const __m512h b{v} = _mm512_castsi512_ph(_mm512_loadu_si512("
                 f"(const void *)(b + {u * nr + v * 32})));" for v in range(nv)]
        for i in range(mr):
            lines.append(f"{indent}const __m512h a{i} = _mm512_castsi512_ph("
                         f"_mm512_set1_epi32(mk_ld32u(a + {u * mr + i})));")
            lines += [f"{indent}{acc[i][v]} = _mm512_fmadd_ph(a{i}, b{v}, {acc[i][v]});"
                      for v in range(nv)]
        return lines
    out.append("    int64_t k = 0;")
    if ku > 1:
        out.append(f"    for (; k + {ku} <= kc; k += {ku}) {{")
        for u in range(ku):
            out += ["        {"] + step(u, "            ") + ["        }"]
        out += [f"        a += {ku * mr};", f"        b += {ku * nr};", "    }"]
    out.append("    for (; k < kc; ++k) {")
    out += step(0, "        ")
    out += [f"        a += {mr};", f"        b += {nr};", "    }"]
    # widen: fp16 lanes 0-15 of accumulator v are columns 32v..32v+15, lanes 16-31 the next 16
    for i in range(mr):
        for v in range(nv):
            for h in range(2):
                out.append(f"    __m512 {wide[i][2 * v + h]} = _mm512_cvtph_ps(_mm512_extracti64x4_epi64("
                           f"_mm512_castph_si512({acc[i][v]}), {h}));")
    out += fp32_epilogue(mr, nr, wide)
    out.append("}")
    return "\n".join(out) + "\n"


def fp32_epilogue(mr: int, nr: int, acc) -> list[str]:
    """C := alpha * acc + beta * C for fp32 accumulators ``acc[i][w]`` (16 columns each):
    alpha skipped when 1, beta == 0 never reads C, unit column stride straight from the
    registers, other strides through a stack buffer (as :func:`common.emit_ukernel`)."""
    ops = AVX512
    out = alpha_scale(acc, ops.vtype, ops.splat.format(x="*alpha"), ops.mul)
    out += ["    if (cs_c == 1) {", "        if (*beta == 0.0f) {"]
    for i, row in enumerate(acc):
        out += [f"            {ops.store.format(p=f'c + {i} * rs_c + {16 * w}', v=x)};"
                for w, x in enumerate(row)]
    out += ["        } else {", f"            const __m512 vb = {ops.splat.format(x='*beta')};"]
    for i, row in enumerate(acc):
        for w, x in enumerate(row):
            p = f"c + {i} * rs_c + {16 * w}"
            val = ops.fma.format(a="vb", b=ops.load.format(p=p), c=x)
            out.append(f"            {ops.store.format(p=p, v=val)};")
    out += ["        }", "    } else {", f"        float t[{mr * nr}] __attribute__((aligned(64)));"]
    for i, row in enumerate(acc):
        out += [f"        {ops.store.format(p=f't + {i * nr + 16 * w}', v=x)};"
                for w, x in enumerate(row)]
    out += [f"        for (int64_t i = 0; i < {mr}; ++i)",
            f"            for (int64_t j = 0; j < {nr}; ++j) {{",
            "                float *p = c + i * rs_c + j * cs_c;",
            f"                *p = *beta == 0.0f ? t[i * {nr} + j] : t[i * {nr} + j] + *beta * *p;",
            "            }", "    }"]
    return out


# -- peak loops -----------------------------------------------------------------------------

_PEAKS = {
    # isa: (instruction, C vector type, chain init, the update of chain s, ops per instruction)
    "avx512bf16": ("vdpbf16ps", "__m512", "_mm512_set1_ps((float){j})",
                   "_mm512_dpbf16_ps({s}, (__m512bh)x, (__m512bh)y)", 64),
    "avx512fp16": ("vfmadd231ph", "__m512h", "_mm512_castsi512_ph(_mm512_set1_epi16((short)(0x3C00 + {j})))",
                   "_mm512_fmadd_ph({s}, xh, yh)", 64),
    "avx512vnni": ("vpdpbusd", "__m512i", "_mm512_set1_epi32({j})",
                   "_mm512_dpbusd_epi32({s}, x, y)", 128),
}


def peak(isa: str, types: str | None = None) -> str:
    """``double mk_fma_peak(int64_t iters, double *flops)``: PEAK_CHAINS[isa] independent
    chains of the ISA's instruction. The operands keep every value normal and finite:
    bf16 x = 1.0 pairs, y = 2^-24 pairs (the chains grow by 2^-23 per step); fp16
    s = 0.9995 s + 2^-14 converges to 0.125; integers wrap."""
    insn, vtype, init, update, ops_per = _PEAKS[isa]
    chains = PEAK_CHAINS[isa]
    if isa == "avx512fp16":
        setup = ["    const __m512h xh = _mm512_castsi512_ph(_mm512_set1_epi16(0x3BFF));",
                 "    const __m512h yh = _mm512_castsi512_ph(_mm512_set1_epi16(0x0400));"]
    else:
        setup = ["    const __m512i x = _mm512_set1_epi32(0x3F803F80), "
                 "y = _mm512_set1_epi32(0x33803380);"]
    setup += [f"    {vtype} s{j} = {init.format(j=j)};" for j in range(chains)]
    cast = {"__m512": "_mm512_castps_si512", "__m512h": "_mm512_castph_si512", "__m512i": ""}[vtype]
    finish = [f"    __m512i s = {cast}(s0);"]
    finish += [f"    s = _mm512_xor_si512(s, {cast}(s{j}));" for j in range(1, chains)]
    finish += ["    int32_t sink[16] __attribute__((aligned(64)));",
               "    _mm512_store_si512((void *)sink, s);",
               "    volatile int32_t keep = sink[0]; (void)keep;"]
    return peak_source(f"{insn} peak loop for {isa}: {chains} independent chains.",
                       ("immintrin.h",), setup, chains, update, finish,
                       f"{float(ops_per)} * {chains} * (double)iters")
