"""NEON typed emitters by element: SDOT/UDOT/SUDOT (``neondot``, int8 -> int32) and fp16
FMLA / FMLAL (``neonfp16``: fp16 accumulate, or widening to fp32).

Both keep the by-element form of :mod:`.arm` (BLIS armv8a): one k step (or K group)
loads NR columns of B as vectors and the MR values of A as vectors, and each
multiply-add picks its A value from a lane, so no broadcast registers are needed.

``neondot`` (Arm ARM, DDI 0487, C7.2 "SDOT (by element)", "UDOT (by element)", "SUDOT
(by element)"; ACLE ``vdotq_laneq_s32``, ``vdotq_laneq_u32``, ``vsudotq_laneq_s32``):
an int32 lane j of ``sdot vd.4s, vn.16b, vm.4b[l]`` adds the dot product of the 4 bytes
of lane j of vn with the 4 bytes of lane l of vm. So both panels hold K in quads
(MK_GA = MK_GB = 4; the driver's layout ``[(k/4)*w*4 + l*4 + k%4]``): 16 bytes of B are
4 columns x 4 k, 16 bytes of A 4 rows x 4 k, and row i of the tile takes lane i % 4 of
its A vector. Per K group of 4 the 8x12 tile loads 3 B and 2 A vectors for 24 SDOTs
(29 of 32 registers, as neon_8x12). u8s8 (uint8 A, int8 B) is SUDOT: signed vector
(B), unsigned element (A); it is part of FEAT_I8MM, so those tiles also need the
probe's ``i8mm`` bit and ``+i8mm`` (tile.IsaInfo.needs). Products and sums are exact
in int32 (|a b| <= 2^14, 4 per lane per instruction), wrapping modulo 2^32 beyond.

``neonfp16`` (Arm ARM, "FMLA (by element)" half-precision, "FMLAL, FMLAL2 (by
element)"; ACLE ``vfmaq_laneq_f16``, ``vfmlalq_laneq_low_f16``,
``vfmlalq_laneq_high_f16``): ``f16h`` tiles accumulate in fp16, 8 lanes per register
(unit roundoff 2^-11, microkernel.dtypes), and widen the accumulators to fp32 only for
the alpha/beta epilogue (``vcvt_f32_f16``, ``vcvt_high_f32_f16``); ``f16`` tiles use
FMLAL (columns 0-3 of a B vector of 8 fp16) and FMLAL2 (columns 4-7), the fused
widening multiply-add of FEAT_FHM: the fp16 product is exact in fp32 and rounded once
into the fp32 accumulator, so the bound is the fp32 one on the rounded inputs. The
by-element half-precision forms take their element register from V0-V15 only (the
``Vm`` field is 4 bits wide); the compiler allocates it there. Panels hold fp16 bit
patterns (uint16_t), K in ones (MK_GA = MK_GB = 1).
"""
from __future__ import annotations

from . import PanelLayout
from .arm_common import NEON_A_LOADS, neon_a_groups, neon_kernel
from .common import peak_source

__all__ = ["ukernel", "peak", "layout", "edge_symbol", "nr_expr", "PEAK_CHAINS"]

#: independent chains of the peak loops (as arm.PEAK_CHAINS)
PEAK_CHAINS = 24


def _int8_dot(a: str, b: str, q: str, d: str, s: str) -> tuple[str, str, dict]:
    """:func:`_dot_names` of an int8 tile whose A is signed (``a`` = "s") or unsigned
    ("u"), and B likewise: the element and vector types and the loads follow the
    signedness (A's vectors also by half and by duplicated quad); ``q``, ``d`` and
    ``s`` are the dot instruction by quad-lane, by half and in vector form."""
    ta, tb = ("int8" if a == "s" else "uint8"), ("int8" if b == "s" else "uint8")
    return f"{ta}_t", f"{tb}_t", dict(q=q, d=d, s=s, va=f"{ta}x16_t", vd=f"{ta}x8_t",
                                      lq=f"vld1q_{a}8", ld=f"vld1_{a}8", vb=f"{tb}x16_t",
                                      lb=f"vld1q_{b}8", dup=f"vreinterpretq_{a}8_s32")


_DOT = {
    "s8s8": _int8_dot("s", "s", q="vdotq_laneq_s32({c}, {b}, {a}, {l})",
                      d="vdotq_lane_s32({c}, {b}, {a}, {l})", s="vdotq_s32({c}, {b}, {a})"),
    "u8u8": _int8_dot(
        "u", "u",
        q="vreinterpretq_s32_u32(vdotq_laneq_u32(vreinterpretq_u32_s32({c}), {b}, {a}, {l}))",
        d="vreinterpretq_s32_u32(vdotq_lane_u32(vreinterpretq_u32_s32({c}), {b}, {a}, {l}))",
        s="vreinterpretq_s32_u32(vdotq_u32(vreinterpretq_u32_s32({c}), {b}, {a}))"),
    # SUDOT: signed vector (B), unsigned element (A)
    "u8s8": _int8_dot("u", "s", q="vsudotq_laneq_s32({c}, {b}, {a}, {l})",
                      d="vsudotq_lane_s32({c}, {b}, {a}, {l})", s="vusdotq_s32({c}, {a}, {b})"),
}


def _dot_names(spec):
    """(A element type, B element type, intrinsic by quad-lane, by half, vector form,
    accumulator reinterpretation in/out) of a neondot tile's types."""
    if spec.types not in _DOT:
        raise ValueError(f"{spec.name}: neondot takes s8s8, u8u8, u8s8")
    return _DOT[spec.types]


def _dot_ukernel(spec) -> str:
    mr, nr, nv = spec.mr, spec.nr, spec.vectors_per_row
    ea, eb, f = _dot_names(spec)
    acc = [[f"c{i}_{v}" for v in range(nv)] for i in range(mr)]

    def step(u, ind):
        lines = [f"{ind}const {f['vb']} b{v} = {f['lb']}(b + {4 * (u * nr + 4 * v)});"
                 for v in range(nv)]
        for g, (kind, first, rows) in enumerate(neon_a_groups(mr, 4)):
            p = f"a + {4 * (u * mr + first)}"
            if kind == "q":
                lines.append(f"{ind}const {f['va']} a{g} = {f['lq']}({p});")
            elif kind == "d":
                lines.append(f"{ind}const {f['vd']} a{g} = {f['ld']}({p});")
            else:           # one row: its quad replicated in every lane (vector form)
                lines.append(f"{ind}const {f['va']} a{g} = {f['dup']}(mk_dup_quad({p}));")
            for r in range(rows):
                for v in range(nv):
                    x = acc[first + r][v]
                    lines.append(f"{ind}{x} = " + f[kind].format(c=x, b=f"b{v}", a=f"a{g}", l=r) + ";")
        return lines

    pre = []
    if any(kind == "s" for kind, _, _ in neon_a_groups(mr, 4)):
        pre = ["/* one row's K quad (4 bytes) in every int32 lane (memcpy: no aliasing UB) */",
               "static inline int32x4_t mk_dup_quad(const void *p)",
               "{", "    int32_t q;", "    memcpy(&q, p, 4);", "    return vdupq_n_s32(q);", "}", ""]
    return neon_kernel(spec, ea=ea, eb=eb, acc_type="int32x4_t", acc_zero="vdupq_n_s32(0)",
                       acc_names=acc, step=step, kgroup=4, rows=lambda out: acc,
                       preamble=pre, includes=("arm_neon.h", "string.h") if pre else ("arm_neon.h",), what=f"int8 quads along K, {spec.types}: "
                       + {"s8s8": "SDOT", "u8u8": "UDOT", "u8s8": "SUDOT"}[spec.types]
                       + " by element; int32 C, wrapping")


#: GCC 12's arm_neon.h defines vfmaq_laneq_f16 as vfmaq_f16 of vdupq_laneq_f16, and the
#: combined form it emits loads every A lane with its own ``ldr h`` (8 scalar loads per k
#: for 8 rows; neonfp16_8x24 then spilled accumulators, seen with aarch64-linux-gnu-gcc
#: 12.2 -O2). The by-element FMLA is therefore one asm instruction; the element operand
#: takes the constraint "x" (V0-V15: the by-element half-precision forms encode Vm in 4
#: bits, Arm ARM "FMLA (by element)"). Not volatile: the compiler still schedules it.
FMLA_LANE = """\
#define MK_FMLA_LANE(c, b, a, l) \\
    __asm__("fmla %0.8h, %1.8h, %2.h[" #l "]" : "+w"(c) : "w"(b), "x"(a))"""




def _fp16_ukernel(spec) -> str:
    mr, nr, nv = spec.mr, spec.nr, spec.vectors_per_row       # nv: B vectors of 8 fp16
    wide = spec.types == "f16"
    if wide:      # FMLAL: two fp32 accumulators (columns 0-3, 4-7) per B vector
        acc = [[f"c{i}_{h}" for h in range(2 * nv)] for i in range(mr)]
        fq = ("vfmlalq_laneq_{half}_f16({c}, {b}, {a}, {l})",
              "vfmlalq_lane_{half}_f16({c}, {b}, {a}, {l})", "vfmlalq_{half}_f16({c}, {b}, {a})")
    else:         # by element: one-instruction asm (see FMLA_LANE), else a broadcast
        acc = [[f"c{i}_{v}" for v in range(nv)] for i in range(mr)]
        fq = ("MK_FMLA_LANE({c}, {b}, {a}, {l})", "MK_FMLA_LANE({c}, {b}, {a}, {l})",
              "vfmaq_f16({c}, {b}, {a})")

    def step(u, ind):
        lines = [f"{ind}const float16x8_t b{v} = vreinterpretq_f16_u16(vld1q_u16(b + {u * nr + 8 * v}));"
                 for v in range(nv)]
        for g, (kind, first, rows) in enumerate(neon_a_groups(mr, 8)):
            form = {"q": fq[0], "d": fq[1], "s": fq[2]}[kind]
            lines.append(ind + NEON_A_LOADS["f16"][kind].format(g=g, p=f"a + {u * mr + first}"))
            for r in range(rows):
                i = first + r
                for v in range(nv):
                    if wide:
                        for h, half in enumerate(("low", "high")):
                            x = acc[i][2 * v + h]
                            lines.append(f"{ind}{x} = " + form.format(
                                half=half, c=x, b=f"b{v}", a=f"a{g}", l=r) + ";")
                    elif kind == "s":
                        x = acc[i][v]
                        lines.append(f"{ind}{x} = " + form.format(c=x, b=f"b{v}", a=f"a{g}") + ";")
                    else:
                        lines.append(f"{ind}" + form.format(c=acc[i][v], b=f"b{v}", a=f"a{g}",
                                                            l=r) + ";")
        return lines

    def rows(out):
        if wide:
            return acc
        names = [[f"r{i}_{h}" for h in range(2 * nv)] for i in range(mr)]
        out.append("    /* fp16 accumulators widened to fp32 (exact) for the epilogue */")
        for i in range(mr):
            for v in range(nv):
                out.append(f"    float32x4_t r{i}_{2 * v} = vcvt_f32_f16(vget_low_f16({acc[i][v]}));")
                out.append(f"    float32x4_t r{i}_{2 * v + 1} = vcvt_high_f32_f16({acc[i][v]});")
        return names

    zero = "vdupq_n_f32(0.0f)" if wide else "vreinterpretq_f16_u16(vdupq_n_u16(0))"
    what = ("fp16 inputs, FMLAL/FMLAL2 by element into fp32 accumulators" if wide else
            "fp16 inputs, FMLA by element into fp16 accumulators (8 lanes); fp32 epilogue")
    return neon_kernel(spec, ea="uint16_t", eb="uint16_t",
                       acc_type="float32x4_t" if wide else "float16x8_t", acc_zero=zero,
                       acc_names=acc, step=step, kgroup=1, rows=rows, what=what,
                       preamble=[] if wide else FMLA_LANE.splitlines() + [""])


def ukernel(spec) -> str:
    """C source of ``mk_ukernel_<spec.name>`` (neondot or neonfp16)."""
    if spec.isa == "neondot":
        return _dot_ukernel(spec)
    if spec.isa == "neonfp16":
        return _fp16_ukernel(spec)
    raise ValueError(f"arm_typed emitter: ISA {spec.isa!r} is not neondot or neonfp16")


def layout(spec) -> PanelLayout:
    """neondot: int8/uint8 panels in K quads, int32 C; neonfp16: fp16 bit patterns as
    they come (K in ones), float C."""
    t = spec.gemm_types
    if spec.isa == "neondot":
        return PanelLayout(sa=t.c_a, sb=t.c_b, ta=t.c_a, tb=t.c_b, ga=4, gb=4, tc="int32_t",
                           cvt_a="(x)", cvt_b="(x)", fill_a=f"(({t.c_a})((i) % 7))",
                           fill_b=f"(({t.c_b})((i) % 5))")
    return PanelLayout(sa="uint16_t", sb="uint16_t", ta="uint16_t", tb="uint16_t",
                       cvt_a="(x)", cvt_b="(x)", fill_a="((uint16_t)(0x3c00 + (i) % 7))",
                       fill_b="((uint16_t)(0x1c00 + (i) % 5))")


def edge_symbol(spec) -> str:
    return "NULL"      # the driver's MR x NR buffer


def nr_expr(spec) -> str:
    return str(spec.nr)


_PEAK = {
    "s8s8": ("int32x4_t", "vdotq_s32({s}, x, y)", "int8x16_t", "vdupq_n_s8(1)", 16,
             "vdupq_n_s32({j})", "vaddq_s32", "int32_t", "vst1q_s32"),
    "u8u8": ("uint32x4_t", "vdotq_u32({s}, x, y)", "uint8x16_t", "vdupq_n_u8(1)", 16,
             "vdupq_n_u32({j})", "vaddq_u32", "uint32_t", "vst1q_u32"),
    "u8s8": ("int32x4_t", "vusdotq_s32({s}, xu, y)", "int8x16_t", "vdupq_n_s8(1)", 16,
             "vdupq_n_s32({j})", "vaddq_s32", "int32_t", "vst1q_s32"),
    "f16h": ("float16x8_t", "vfmaq_f16(y, {s}, x)", "float16x8_t", "vdupq_n_f16(0.999f)", 8,
             "vdupq_n_f16({j}.0f)", "vaddq_f16", "float16_t", "vst1q_f16"),
    "f16": ("float32x4_t", "vfmlalq_low_f16({s}, x, y)", "float16x8_t", "vdupq_n_f16(1e-3f)", 4,
            "vdupq_n_f32({j}.0f)", "vaddq_f32", "float", "vst1q_f32"),
}


def peak(isa: str, types: str | None = None) -> str:
    """Peak loop of the tile's instruction: PEAK_CHAINS independent chains of SDOT (UDOT,
    USDOT), fp16 FMLA or FMLAL; ``*flops`` = 2 x multiply-adds (16 per int8 dot
    instruction, 8 per fp16 FMLA, 4 per FMLAL)."""
    types = types or ("s8s8" if isa == "neondot" else "f16h")
    vt, op, xt, xinit, macs, init, add, st, store = _PEAK[types]
    chains = PEAK_CHAINS
    setup = [f"    const {xt} x = {xinit}; (void)x;", f"    const {xt} y = {xinit};",
             "    const uint8x16_t xu = vdupq_n_u8(1); (void)xu;"]
    setup += [f"    {vt} s{j} = {init.format(j=j)};" for j in range(chains)]
    finish = [f"    {vt} s = s0;"] + [f"    s = {add}(s, s{j});" for j in range(1, chains)]
    finish += [f"    {st} sink[8];", f"    {store}(sink, s);",
               f"    volatile {st} keep = sink[0]; (void)keep;"]
    return peak_source(f"peak loop for {isa} {types}: {chains} independent chains.",
                       ("arm_neon.h",), setup, chains, op, finish,
                       f"2.0 * {macs} * {chains} * (double)iters")
