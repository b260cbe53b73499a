"""Matrix multiply-accumulate emitters: SMMLA/UMMLA/USMMLA (int8 -> int32) and BFMMLA
(bf16 -> fp32), NEON (``neoni8mm``, ``neonbf16``) and SVE (``svei8mm``, ``svebf16``).

The instruction (Arm ARM, DDI 0487, C7.2 "SMMLA (vector)", "UMMLA", "USMMLA",
"BFMMLA"; the SVE supplement's forms work per 128-bit segment; ACLE ``vmmlaq_s32``,
``vmmlaq_u32``, ``vusmmlaq_s32``, ``vbfmmlaq_f32``, ``svmmla_s32``, ``svmmla_u32``,
``svusmmla_s32``, ``svbfmmla_f32``): the first 128-bit source holds a 2 x 8 int8 (2 x 4
bf16) matrix row by row, the second a 2 x 8 (2 x 4) matrix whose rows are the *columns*
of the right operand, and the destination's four 32-bit lanes a 2 x 2 block of C, row
major: ``d[2i + j] += sum_k n[i][k] * m[j][k]``. So with K groups of 8 int8 or 4 bf16
(MK_GA = MK_GB = 64 bits / element size; the driver's layout ``[(k/g)*w*g + l*g +
k%g]``) 16 consecutive bytes of a packed panel are exactly one operand: rows 2p, 2p+1
of A (lines 2p and 2p+1 of its micro-panel), or columns 2q, 2q+1 of B. MR must be even
(tile.TileSpec refuses odd MR for these ISAs); the zero padding of packing covers the
edges.

NEON tile MR x NR: per K group, NR/2 B vectors and one A row pair at a time, MR/2 x
NR/2 accumulators of 2x2 blocks (8x8: 16 accumulators + 4 B + 1 A of 32). Before the
epilogue the blocks are un-interleaved into rows: as 64-bit lanes block (p, q) is
[row 2p cols 2q..2q+1, row 2p+1 cols 2q..2q+1], so ``zip1``/``zip2`` of the 64-bit
lanes of blocks (p, 2v) and (p, 2v+1) give rows 2p and 2p+1 at columns 4v..4v+3.

SVE tile MR x nv v (NR = nv x VL/32 columns at run time): a B vector holds VL/64
column pairs (one per 128-bit segment), so 2 nv B vectors per K group; the A row pair
is loaded replicated into every segment (``ld1rqb`` / ``ld1rqh``, ``svld1rq``); MR/2 x
2 nv accumulators. ``uzp1``/``uzp2`` of the 64-bit elements of accumulators (p, 2v) and
(p, 2v+1) give rows 2p and 2p+1 over NR/nv = VL/32 consecutive columns (the even 64-bit
elements of a block vector are row 2p across its segments). Edges: the predicated entry
point of :mod:`.arm` (``svwhilelt`` columns, a row count), vector length agnostic
(never ``-msve-vector-bits``).

Numerics: integer products and sums are exact in int32 (|a b| <= 2^14, 8 per lane per
instruction), wrapping modulo 2^32 beyond (like the epilogue's ``mla``/``mul``). BFMMLA
without FEAT_EBF16 (or with FPCR.EBF = 0, Linux's default) rounds each product and each
pair sum, with the non-IEEE round-to-odd and denormals flushed to zero (Arm ARM,
"BFMMLA"): the products of bf16 values are exact in fp32, and a k-long sum sees at most
k roundings of at most one ulp (2u): within microkernel.validate's c (K+2) u bound with
c = 2 on the rounded inputs (the catalogue's operands never make denormals).
"""
from __future__ import annotations

from . import PanelLayout, common
from .arm_common import (SVE_C, c_kind, grouped_k_loops, neon_kernel, signature, sve_rows_store, sve_strided)
from .common import header, symbol

__all__ = ["ukernel", "peak", "layout", "edge_symbol", "nr_expr", "PEAK_CHAINS"]

PEAK_CHAINS = 24

def _int8_ops(a: str, b: str, mm: str, smm: str) -> dict:
    """The :data:`_OPS` of int8 tiles whose A is signed (``a`` = "s") or unsigned ("u"),
    and B likewise: element and vector types and loads follow the signedness; ``mm``
    and ``smm`` are the NEON and SVE matrix multiply-accumulates."""
    ta, tb = ("int8" if a == "s" else "uint8"), ("int8" if b == "s" else "uint8")
    return dict(ea=f"{ta}_t", eb=f"{tb}_t", va=f"{ta}x16_t", vb=f"{tb}x16_t",
                la=f"vld1q_{a}8({{p}})", lb=f"vld1q_{b}8({{p}})", mm=mm,
                sa=f"sv{ta}_t", sb=f"sv{tb}_t", sla=f"svld1rq_{a}8(svptrue_b8(), {{p}})",
                slb=f"svld1_vnum_{b}8(svptrue_b8(), {{p}}, {{v}})", smm=smm, g=8)


#: per types: (A element, B element, NEON A/B vector types and loads, NEON mmla, SVE
#: vector types, SVE load-replicate / load, SVE mmla, K group)
_OPS = {
    "s8s8": _int8_ops("s", "s", mm="vmmlaq_s32({c}, {a}, {b})", smm="svmmla_s32({c}, {a}, {b})"),
    "u8u8": _int8_ops(
        "u", "u", mm="vreinterpretq_s32_u32(vmmlaq_u32(vreinterpretq_u32_s32({c}), {a}, {b}))",
        smm="svreinterpret_s32_u32(svmmla_u32(svreinterpret_u32_s32({c}), {a}, {b}))"),
    "u8s8": _int8_ops("u", "s", mm="vusmmlaq_s32({c}, {a}, {b})",
                      smm="svusmmla_s32({c}, {a}, {b})"),
    "bf16": dict(ea="uint16_t", eb="uint16_t", va="bfloat16x8_t", vb="bfloat16x8_t",
                 la="vreinterpretq_bf16_u16(vld1q_u16({p}))",
                 lb="vreinterpretq_bf16_u16(vld1q_u16({p}))", mm="vbfmmlaq_f32({c}, {a}, {b})",
                 sa="svbfloat16_t", sb="svbfloat16_t",
                 sla="svreinterpret_bf16_u16(svld1rq_u16(svptrue_b16(), {p}))",
                 slb="svreinterpret_bf16_u16(svld1_vnum_u16(svptrue_b16(), {p}, {v}))",
                 smm="svbfmmla_f32({c}, {a}, {b})", g=4),
}


def _kgroup(spec) -> int:
    return _OPS[spec.types]["g"]


def layout(spec) -> PanelLayout:
    """Panels in K groups of 64 bits (8 int8, 4 bf16) for both operands, as they come
    (no conversion); int32 C for integers, float for bf16."""
    t, g = spec.gemm_types, _kgroup(spec)
    o = _OPS[spec.types]
    integer = t.integer
    return PanelLayout(sa=t.c_a, sb=t.c_b, ta=o["ea"], tb=o["eb"], ga=g, gb=g,
                       tc="int32_t" if integer else "float", cvt_a="(x)", cvt_b="(x)",
                       fill_a=f"(({o['ea']})((i) % 7))" if integer else "((uint16_t)(0x3f80 + (i) % 7))",
                       fill_b=f"(({o['eb']})((i) % 5))" if integer else "((uint16_t)(0x3c00 + (i) % 5))")


def _neon_ukernel(spec) -> str:
    mr, nr = spec.mr, spec.nr
    o, g = _OPS[spec.types], _kgroup(spec)
    pairs, nb = mr // 2, nr // 2
    acc = [[f"c{p}_{q}" for q in range(nb)] for p in range(pairs)]
    ct = c_kind(spec)
    vt = "int32x4_t" if ct == "int32_t" else "float32x4_t"
    zero = "vdupq_n_s32(0)" if ct == "int32_t" else "vdupq_n_f32(0.0f)"

    def step(u, ind):
        lines = [f"{ind}const {o['vb']} b{q} = " + o["lb"].format(p=f"b + {u * nr * g + 2 * g * q}") + ";"
                 for q in range(nb)]
        for p in range(pairs):
            lines.append(f"{ind}const {o['va']} a{p} = " + o["la"].format(p=f"a + {u * mr * g + 2 * g * p}") + ";")
            for q in range(nb):
                lines.append(f"{ind}{acc[p][q]} = " + o["mm"].format(c=acc[p][q], a=f"a{p}", b=f"b{q}") + ";")
        return lines

    def rows(out):
        s64 = "vreinterpretq_s64_s32" if ct == "int32_t" else "vreinterpretq_s64_f32"
        back = "vreinterpretq_s32_s64" if ct == "int32_t" else "vreinterpretq_f32_s64"
        names = [[f"r{i}_{v}" for v in range(nr // 4)] for i in range(mr)]
        out.append("    /* 2x2 blocks -> rows: zip the 64-bit halves of neighbouring blocks */")
        for p in range(pairs):
            for v in range(nr // 4):
                x, y = acc[p][2 * v], acc[p][2 * v + 1]
                out.append(f"    {vt} r{2 * p}_{v} = {back}(vzip1q_s64({s64}({x}), {s64}({y})));")
                out.append(f"    {vt} r{2 * p + 1}_{v} = {back}(vzip2q_s64({s64}({x}), {s64}({y})));")
        return names

    inst = {"s8s8": "SMMLA", "u8u8": "UMMLA", "u8s8": "USMMLA", "bf16": "BFMMLA"}[spec.types]
    return neon_kernel(spec, ea=o["ea"], eb=o["eb"], acc_type=vt, acc_zero=zero, acc_names=acc,
                       step=step, kgroup=g, rows=rows,
                       what=f"{inst}: 2 x {g} by {g} x 2 blocks into 2x2 blocks of C, K groups of {g}")


def _sve_body(spec, out: list[str]) -> list[list[str]]:
    """Declarations and K loop (full and edge entry points); returns the row vectors
    [i][v] after un-interleaving."""
    mr, nv, ku = spec.mr, spec.vectors_per_row, spec.k_unroll
    o, g = _OPS[spec.types], _kgroup(spec)
    ct = c_kind(spec)
    k = SVE_C[ct]
    pairs, nb = mr // 2, 2 * nv
    acc = [[f"c{p}_{q}" for q in range(nb)] for p in range(pairs)]
    out.append("    const int64_t vl = (int64_t)svcntw();        /* 32-bit lanes per vector */")
    out.append(f"    const int64_t nr = {nv} * vl;                 /* NR at this VL */")
    for row in acc:
        out.append(f"    {k['vt']} " + ", ".join(f"{x} = svdup_n_{k['sfx']}({k['zero']})" for x in row) + ";")

    def step(u, ind):
        base = "b" if u == 0 else f"b + {u * g} * nr"
        lines = [f"{ind}const {o['sb']} b{q} = " + o["slb"].format(p=base, v=q) + ";" for q in range(nb)]
        for p in range(pairs):
            lines.append(f"{ind}const {o['sa']} a{p} = " + o["sla"].format(p=f"a + {u * mr * g + 2 * g * p}") + ";")
            for q in range(nb):
                lines.append(f"{ind}{acc[p][q]} = " + o["smm"].format(c=acc[p][q], a=f"a{p}", b=f"b{q}") + ";")
        return lines

    out += grouped_k_loops(step, ku, g, mr, lambda n: f"{n} * nr")  # NR: a run-time value
    s64 = f"svreinterpret_s64_{k['sfx']}"
    back = f"svreinterpret_{k['sfx']}_s64"
    rows = [[f"r{i}_{v}" for v in range(nv)] for i in range(mr)]
    out.append("    /* 2x2 blocks per segment -> rows: uzp1/uzp2 of the 64-bit elements */")
    for p in range(pairs):
        for v in range(nv):
            x, y = acc[p][2 * v], acc[p][2 * v + 1]
            out.append(f"    {k['vt']} r{2 * p}_{v} = {back}(svuzp1_s64({s64}({x}), {s64}({y})));")
            out.append(f"    {k['vt']} r{2 * p + 1}_{v} = {back}(svuzp2_s64({s64}({x}), {s64}({y})));")
    out.append("    const svbool_t pg = svptrue_b32();")
    out.append(f"    if (*alpha != {k['one']}) {{")
    out.append(f"        const {k['vt']} va = svdup_n_{k['sfx']}(*alpha);")
    out += [f"        {x} = svmul_{k['sfx']}_x(pg, {x}, va);" for row in rows for x in row]
    out.append("    }")
    return rows


def _sve_ukernel(spec) -> str:
    mr, nv = spec.mr, spec.vectors_per_row
    o = _OPS[spec.types]
    ct = c_kind(spec)
    inst = {"s8s8": "SMMLA", "u8u8": "UMMLA", "u8s8": "USMMLA", "bf16": "BFMMLA"}[spec.types]
    out = [header(spec, nr_desc=f"{nv} vectors (NR = {nv} * svcntw())"),
           "#include <stdint.h>", "#include <arm_sve.h>", "",
           f"/* SVE {inst} per 128-bit segment; VL read at run time (svcntw()), compiled",
           " * without -msve-vector-bits. Sizeless types are never array elements: every",
           " * accumulator is a named variable. */", ""]
    out += signature(symbol(spec), ct, o["ea"], o["eb"])
    out.append("{")
    rows = _sve_body(spec, out)
    out += sve_rows_store(rows, ["pg"] * nv, ct, guard_rows=False)
    out.append("    } else {")
    out += sve_strided(rows, ct, str(mr), "nr")
    out.append("    }")
    out.append("}")
    out.append("")
    out.append(f"/* Edge tile: the top-left m x n corner only (1 <= m <= {mr}, 1 <= n <= {nv} * VL/32):")
    out.append(" * svwhilelt_b32 predicates for columns, rows stored while i < m. */")
    out += signature(common.edge_symbol(spec), ct, o["ea"], o["eb"], edge=True)
    out.append("{")
    rows = _sve_body(spec, out)
    for v in range(nv):
        start = "0" if v == 0 else f"{v} * vl"
        out.append(f"    const svbool_t p{v} = svwhilelt_b32_s64({start}, n);")
    out += sve_rows_store(rows, [f"p{v}" for v in range(nv)], ct, guard_rows=True)
    out.append("    } else {")
    out += sve_strided(rows, ct, "m", "n")
    out.append("    }")
    out.append("}")
    return "\n".join(out) + "\n"


def ukernel(spec) -> str:
    if spec.isa in ("neoni8mm", "neonbf16"):
        return _neon_ukernel(spec)
    if spec.isa in ("svei8mm", "svebf16"):
        return _sve_ukernel(spec)
    raise ValueError(f"arm_mmla emitter: ISA {spec.isa!r} is not an mmla ISA")


def edge_symbol(spec) -> str:
    """SVE: the predicated edge entry point; NEON: the driver's buffer (NULL)."""
    return common.edge_symbol(spec) if spec.is_vla else "NULL"


def nr_expr(spec) -> str:
    if spec.is_vla:
        return f"(int64_t)({spec.vectors_per_row} * svcntw())"
    return str(spec.nr)


def peak(isa: str, types: str | None = None) -> str:
    """Peak loop: PEAK_CHAINS independent chains of the tile's matrix instruction;
    ``*flops`` = 2 x multiply-adds (32 per SMMLA and 16 per BFMMLA per 128 bits)."""
    types = types or ("bf16" if isa.endswith("bf16") else "s8s8")
    sve = isa.startswith("sve")
    o = _OPS[types]
    macs = 32 if o["g"] == 8 else 16
    fl = "float" if types == "bf16" else "int32_t"
    chains = PEAK_CHAINS
    # the operands come from memory: GCC 12 folds bf16 vector constants wrongly
    setup = ["    static volatile uint8_t src[256];",
             "    uint8_t buf[256];",
             "    for (int i = 0; i < 256; ++i) buf[i] = src[i];"]
    if sve:
        vt = "svfloat32_t" if fl == "float" else "svint32_t"
        sfx = "f32" if fl == "float" else "s32"
        opnd = o["sla"].format(p=f"({o['ea']} *)buf")
        setup += [f"    const {o['sa']} x = {opnd};",
                  f"    const {o['sb']} y = " + o["slb"].format(p=f"({o['eb']} *)buf", v=0) + ";"]
        setup += [f"    {vt} s{j} = svdup_n_{sfx}({j});" for j in range(chains)]
        op = o["smm"]
        finish = [f"    {vt} s = s0;"]
        finish += [f"    s = svadd_{sfx}_x(svptrue_b32(), s, s{j});" for j in range(1, chains)]
        finish += [f"    {fl} sink[64];", f"    svst1_{sfx}(svptrue_b32(), sink, s);"]
        flops = f"2.0 * {macs} * ((double)svcntw() / 4) * {chains} * (double)iters"
    else:
        vt = "float32x4_t" if fl == "float" else "int32x4_t"
        setup += [f"    const {o['va']} x = " + o["la"].format(p=f"({o['ea']} *)buf") + ";",
                  f"    const {o['vb']} y = " + o["lb"].format(p=f"({o['eb']} *)(buf + 16)") + ";"]
        init = "vdupq_n_f32({j}.0f)" if fl == "float" else "vdupq_n_s32({j})"
        setup += [f"    {vt} s{j} = {init.format(j=j)};" for j in range(chains)]
        op = o["mm"]
        add = "vaddq_f32" if fl == "float" else "vaddq_s32"
        st = "vst1q_f32" if fl == "float" else "vst1q_s32"
        finish = [f"    {vt} s = s0;"] + [f"    s = {add}(s, s{j});" for j in range(1, chains)]
        finish += [f"    {fl} sink[4];", f"    {st}(sink, s);"]
        flops = f"2.0 * {macs} * {chains} * (double)iters"
    finish.append(f"    volatile {fl} keep = sink[0]; (void)keep;")
    return common.peak_source(
        f"peak loop for {isa} {types}: {chains} independent matrix multiply-accumulate chains.",
        ("arm_sve.h" if sve else "arm_neon.h",), setup, chains,
        op.format(c="{s}", a="x", b="y"), finish, flops)
