"""aarch64 emitters: NEON (AdvSIMD, 4 fp32 lanes, fixed width) and SVE (vector
length agnostic: NR = nv * svcntw() lanes, read at run time).

NEON (``arm_neon.h``) uses the fixed-width :class:`common.VectorOps` templates
(``vld1q_f32``/``vst1q_f32``, ``vdupq_n_f32``, ``vfmaq_f32(c, a, b) = c + a*b``,
``vmulq_f32``) for the peak loop and the alpha/beta epilogue, and its own K-loop
step (:func:`neon_ukernel`), the BLIS armv8a form: the MR values of A for one k are
*loaded* as MR/4 vectors (``vld1q_f32``; a 2-lane ``vld1_f32`` and a scalar for
MR % 4) and used through the by-element FMA ``vfmaq_laneq_f32(c, b, a, lane)``
(``fmla v.4s, v.4s, v.s[lane]``), instead of MR broadcasts. A compiler barrier
(empty ``asm volatile`` with a memory clobber) between the unrolled k steps stops
GCC's scheduler from hoisting the next step's loads over this step's FMAs. Checked
with aarch64-linux-gnu-gcc 12.2 at -O2 and -O3 (tests/test_cross.py checks it): on
neon_8x12 the shared broadcast skeleton (``vdupq_n_f32(a[i])`` per row) spills
accumulators to the stack inside the K loop, at k-unroll 1 as at 4; this form
spills none.

Why ``neon_8x12`` is the built-in NEON tile: it is BLIS's Cortex-A57 sgemm shape
(kernels/armv8a, MR x NR = 8 x 12). AArch64 has 32 128-bit registers; the tile
holds 8 x 12 / 4 = 24 accumulators, plus 3 B vectors and 2 A vectors per k step
(29 of 32, no spills; the generated header's budget, from tile.register_budget,
counts 1 broadcast register instead of the 2 A vectors), and its 24 independent
FMA chains are well above the latency bound (4-cycle FMA x 2 pipes = 8 chains,
Low et al. 2016; 16 on 4-pipe cores such as Apple's). Per k step: 5 vector loads
(3 B, 2 A) for 24 FMAs.

SVE (``arm_sve.h``, ACLE for SVE) cannot go through the fixed-width skeleton: its
offsets are compile-time multiples of a fixed lane count and its strided-C buffer
is sized MR x NR at generation time, while SVE's NR is only known at run time. So
:func:`sve_ukernel` writes its own straight-line code. The sizeless
``svfloat32_t`` cannot be an array element or struct member, so the MR x nv
accumulators are named variables; B is loaded with ``svld1_vnum_f32`` (offsets in
vectors), A broadcast with ``svmla_n_f32_x`` (``ld1rw`` + ``fmla``, as BLIS's
armsve kernels do), and NR = nv * ``svcntw()`` is computed at run time. It is
compiled with ``-march=armv8.2-a+sve`` and never ``-msve-vector-bits`` (which
would fix the VL at compile time), so one binary runs at every VL from 128 to
2048 bits.

The SVE edge entry point ``mk_ukernel_<name>_edge(m, n, ...)`` (contract:
``mk_ukernel_edge_fn`` in c_src/mk_ukernel.h) handles the N edge with
``svwhilelt_b32`` predicates on loads and stores (inactive lanes are neither read
nor written, so beta == 0 never reads C and nothing past column n is touched) and
the M edge with a row count (row i is stored only when i < m). A general-stride C
(cs_c != 1) goes through a stack buffer sized for the largest SVE vector
(2048 bits), then a scalar loop over the m x n corner.
"""
from __future__ import annotations

from ..tile import TileSpec
from . import common
from .common import VectorOps, alpha_scale, emit_peak, emit_ukernel, header, symbol
from .arm_common import NEON_A_LOADS, neon_a_groups

__all__ = ["NEON", "ukernel", "peak", "nr_expr", "edge_symbol", "neon_ukernel",
           "sve_ukernel", "sve_peak", "SVE_MAX_LANES", "PEAK_CHAINS", "BARRIER"]

NEON = VectorOps(
    includes=("arm_neon.h",), vtype="float32x4_t", zero="vdupq_n_f32(0.0f)",
    load="vld1q_f32({p})", store="vst1q_f32({p}, {v})",
    bcast="vdupq_n_f32(*({p}))", splat="vdupq_n_f32({x})",
    fma="vfmaq_f32({c}, {a}, {b})", mul="vmulq_f32({a}, {b})", align=16)

#: fp32 lanes of the longest SVE vector the architecture allows (2048 bits)
SVE_MAX_LANES = 64

#: independent FMA chains of the peak loop: above latency x pipes of every core we
#: know (Cortex/Neoverse 4 x 2, Apple 4 x 4 = 16, A64FX 9 x 2 = 18), leaving
#: 32 - 24 - 2 registers free so the loop does not spill.
PEAK_CHAINS = {"neon": 24, "sve": 24}


def ukernel(spec: TileSpec) -> str:
    """C source of ``mk_ukernel_<spec.name>`` (and, for SVE, its edge entry point)."""
    if spec.isa == "neon":
        return neon_ukernel(spec)
    if spec.isa == "sve":
        return sve_ukernel(spec)
    raise ValueError(f"arm emitter: ISA {spec.isa!r} is not neon or sve")


def peak(isa: str) -> str:
    """C source of ``double mk_fma_peak(int64_t iters, double *flops)``."""
    if isa == "neon":
        return emit_peak(isa, NEON, PEAK_CHAINS["neon"])
    if isa == "sve":
        return sve_peak(PEAK_CHAINS["sve"])
    raise ValueError(f"arm emitter: ISA {isa!r} is not neon or sve")


def nr_expr(spec: TileSpec) -> str:
    """C expression for NR (fp32 columns) at run time: SVE reads the VL."""
    if spec.isa == "sve":
        return f"(int64_t)({spec.vectors_per_row} * svcntw())"
    return str(spec.nr)


def edge_symbol(spec: TileSpec) -> str:
    """C name of the edge entry point, or ``NULL`` (NEON: the driver's buffer)."""
    return common.edge_symbol(spec) if spec.isa == "sve" else "NULL"


#: between unrolled k steps: loads may not move across it (registers may)
BARRIER = '__asm__ volatile("" ::: "memory");'




def _neon_step(spec: TileSpec, ops: VectorOps, acc, u: int, indent: str) -> list[str]:
    """One k step in the by-element form: B row as vectors, A column as vectors, and
    vfmaq_laneq_f32 picks each A value from its lane (no broadcast registers)."""
    mr, nr, lanes, nv = spec.mr, spec.nr, 4, spec.vectors_per_row
    lines = []
    for v in range(nv):
        lines.append(f"{indent}const float32x4_t b{v} = vld1q_f32(b + {u * nr + v * lanes});")
    for g, (kind, first, rows) in enumerate(neon_a_groups(mr, 4)):
        lines.append(indent + NEON_A_LOADS["f32"][kind].format(g=g, p=f"a + {u * mr + first}"))
        for r in range(rows):
            i = first + r
            for v in range(nv):
                if kind == "q":
                    fma = f"vfmaq_laneq_f32({acc[i][v]}, b{v}, a{g}, {r})"
                elif kind == "d":
                    fma = f"vfmaq_lane_f32({acc[i][v]}, b{v}, a{g}, {r})"
                else:
                    fma = f"vfmaq_f32({acc[i][v]}, b{v}, a{g})"
                lines.append(f"{indent}{acc[i][v]} = {fma};")
    return lines


def neon_ukernel(spec: TileSpec) -> str:
    """C source of the NEON micro-kernel (contract: c_src/mk_ukernel.h): the shared
    skeleton with the by-element k step and a compiler barrier between unrolled steps."""
    if spec.isa != "neon":
        raise ValueError(f"neon_ukernel needs a neon tile, got {spec.name}")
    return emit_ukernel(spec, NEON, step=_neon_step, includes=("arm_neon.h",),
                        step_prefix=BARRIER)


# -- SVE ------------------------------------------------------------------------------

def _sve_unit_stride_store(acc, out: list[str], preds: list[str], guard_rows: bool) -> None:
    """The cs_c == 1 branch of the epilogue: C := acc (beta == 0, C never read) or
    acc + beta*C, vector v of each row under predicate preds[v]; with ``guard_rows``
    (edge tile) rows at and past m are not stored."""
    out.append("    if (cs_c == 1) {")
    for beta0 in (True, False):
        if beta0:
            out.append("        if (*beta == 0.0f) {          /* C is written, never read */")
        else:
            out.append("        } else {")
            out.append("            const svfloat32_t vb = svdup_n_f32(*beta);")
        for i, row in enumerate(acc):
            if guard_rows and i:
                out.append(f"            if (m <= {i}) return;")
            for v, name in enumerate(row):
                p, pg = f"c + {i} * rs_c", preds[v]
                val = name if beta0 else (f"svmla_f32_x({pg}, {name}, "
                                          f"svld1_vnum_f32({pg}, {p}, {v}), vb)")
                out.append(f"            svst1_vnum_f32({pg}, {p}, {v}, {val});")
    out.append("        }")


def _sve_body(spec: TileSpec, out: list[str]) -> list[list[str]]:
    """Declarations and K loop shared by the full and the edge entry point.
    Appends to ``out``; returns the accumulator names [row][vector]."""
    mr, nv, ku = spec.mr, spec.vectors_per_row, spec.k_unroll
    acc = [[f"c{i}_{v}" for v in range(nv)] for i in range(mr)]
    out.append("    const svbool_t pg = svptrue_b32();")
    out.append("    const int64_t vl = (int64_t)svcntw();        /* fp32 lanes per vector */")
    out.append(f"    const int64_t nr = {nv} * vl;                 /* NR at this VL */")
    for i in range(mr):
        out.append("    svfloat32_t " + ", ".join(f"{n} = svdup_n_f32(0.0f)" for n in acc[i]) + ";")

    def step(u: int, indent: str) -> list[str]:
        lines = []
        base = "b" if u == 0 else f"b + {u} * nr"
        for v in range(nv):
            lines.append(f"{indent}const svfloat32_t b{v} = svld1_vnum_f32(pg, {base}, {v});")
        for i in range(mr):
            for v in range(nv):
                lines.append(f"{indent}{acc[i][v]} = svmla_n_f32_x(pg, {acc[i][v]}, b{v}, "
                             f"a[{u * mr + i}]);")
        return lines

    out.append("    int64_t k = 0;")
    if ku > 1:
        out.append(f"    for (; k + {ku} <= kc; k += {ku}) {{")
        for u in range(ku):
            out.append("        {")
            out += step(u, "            ")
            out.append("        }")
        out.append(f"        a += {ku * mr};")
        out.append(f"        b += {ku} * nr;")
        out.append("    }")
    out.append("    for (; k < kc; ++k) {")
    out += step(0, "        ")
    out.append(f"        a += {mr};")
    out.append("        b += nr;")
    out.append("    }")
    out += alpha_scale(acc, "svfloat32_t", "svdup_n_f32(*alpha)", "svmul_f32_x(pg, {a}, {b})")
    return acc


def _sve_strided(spec: TileSpec, acc, out: list[str], rows: str, cols: str) -> None:
    """General-stride C: spill the tile to a stack buffer, then a scalar loop over
    ``rows`` x ``cols`` (C expressions)."""
    mr, nv = spec.mr, spec.vectors_per_row
    out.append(f"        float t[{mr * nv * SVE_MAX_LANES}];   /* MR x NR at the largest VL */")
    for i in range(mr):
        for v in range(nv):
            out.append(f"        svst1_vnum_f32(pg, t + {i} * nr, {v}, {acc[i][v]});")
    out.append(f"        for (int64_t i = 0; i < {rows}; ++i)")
    out.append(f"            for (int64_t j = 0; j < {cols}; ++j) {{")
    out.append("                float *p = c + i * rs_c + j * cs_c;")
    out.append("                *p = *beta == 0.0f ? t[i * nr + j] : t[i * nr + j] + *beta * *p;")
    out.append("            }")


def sve_ukernel(spec: TileSpec) -> str:
    """C source of the SVE micro-kernel and its predicated edge entry point."""
    if spec.isa != "sve":
        raise ValueError(f"sve_ukernel needs an sve tile, got {spec.name}")
    mr, nv = spec.mr, spec.vectors_per_row
    name = symbol(spec)
    out: list[str] = [header(spec, nr_desc=f"{nv} vectors (NR = {nv} * svcntw())")]
    out.append("#include <stdint.h>")
    out.append("#include <arm_sve.h>")
    out.append("")
    out.append("/* Straight-line code: sizeless svfloat32_t cannot be array elements, so each")
    out.append(" * accumulator is a named variable. VL is read at run time (svcntw()); this file")
    out.append(" * is compiled with -march=armv8.2-a+sve and never -msve-vector-bits. */")
    out.append("")
    # ---- full tile
    out.append(f"void {name}(int64_t kc, const float *restrict alpha,")
    out.append("        const float *restrict a, const float *restrict b,")
    out.append("        const float *restrict beta, float *restrict c, int64_t rs_c, int64_t cs_c)")
    out.append("{")
    acc = _sve_body(spec, out)
    _sve_unit_stride_store(acc, out, ["pg"] * nv, guard_rows=False)
    out.append("    } else {")
    _sve_strided(spec, acc, out, str(mr), "nr")
    out.append("    }")
    out.append("}")
    out.append("")
    # ---- edge tile: top-left m x n corner
    out.append(f"/* Edge tile: the same update on the top-left m x n corner only (1 <= m <= {mr},")
    out.append(f" * 1 <= n <= {nv} * VL). Columns: svwhilelt_b32 predicates (inactive lanes are")
    out.append(" * neither loaded nor stored); rows: stored while i < m. */")
    out.append(f"void {common.edge_symbol(spec)}(int64_t m, int64_t n, int64_t kc, const float *restrict alpha,")
    out.append("        const float *restrict a, const float *restrict b,")
    out.append("        const float *restrict beta, float *restrict c, int64_t rs_c, int64_t cs_c)")
    out.append("{")
    acc = _sve_body(spec, out)
    for v in range(nv):
        start = "0" if v == 0 else f"{v} * vl"
        out.append(f"    const svbool_t p{v} = svwhilelt_b32_s64({start}, n);")
    _sve_unit_stride_store(acc, out, [f"p{v}" for v in range(nv)], guard_rows=True)
    out.append("    } else {")
    _sve_strided(spec, acc, out, "m", "n")
    out.append("    }")
    out.append("}")
    return "\n".join(out) + "\n"


def sve_peak(chains: int = PEAK_CHAINS["sve"]) -> str:
    """The SVE FMA peak loop: ``chains`` independent ``fmla`` chains at the run-time
    VL; ``*flops = 2 * svcntw() * chains * iters``."""
    setup = ["    const svbool_t pg = svptrue_b32();",
             "    const svfloat32_t x = svdup_n_f32(0.999999f);",
             "    const svfloat32_t y = svdup_n_f32(1e-7f);"]
    setup += [f"    svfloat32_t s{j} = svdup_n_f32({j}.0f);" for j in range(chains)]
    finish = [f"    float sink[{SVE_MAX_LANES}];", "    svfloat32_t s = s0;"]
    finish += [f"    s = svmla_f32_x(pg, s, s{j}, x);" for j in range(1, chains)]
    finish += ["    svst1_f32(pg, sink, s);", "    volatile float keep = sink[0]; (void)keep;"]
    return common.peak_source(
        f"FMA peak loop for sve: {chains} independent FMA chains at the run-time VL.",
        ("arm_sve.h",), setup, chains, "svmla_f32_x(pg, y, {s}, x)", finish,
        f"2.0 * (double)svcntw() * {chains} * (double)iters")
