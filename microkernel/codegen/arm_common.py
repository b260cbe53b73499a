"""What the Arm typed emitters share: the NEON skeleton of a typed micro-kernel (K loop in
K groups, a compiler barrier between unrolled steps as in :mod:`.arm`), the C-tile
epilogues for rows of 4-lane NEON vectors and of predicated SVE vectors, in fp32 or
int32, and the K-group constants.

Used by :mod:`.arm_typed` (SDOT/UDOT/SUDOT, fp16 FMLA, FMLAL) and :mod:`.arm_mmla`
(SMMLA/UMMLA/USMMLA and BFMMLA, NEON and SVE). The epilogues implement the contract of
c_src/mk_ukernel.h for a C of float (bf16, f16, f16h tiles) or int32_t (integer tiles):
C := alpha * acc + beta * C, beta == 0 never reads C, integer arithmetic wraps modulo
2^32 (NEON ``mla``/``mul`` and SVE ``mla``/``mul`` are modular; the strided scalar path
computes in uint32_t), a general-stride C (cs_c != 1) goes through a stack buffer.
"""
from __future__ import annotations

from ..tile import TileSpec
from .common import header, prefetch_columns, symbol

__all__ = ["NEON_A_LOADS", "neon_a_groups", "NEON_C", "SVE_C", "BARRIER", "c_kind", "grouped_k_loops", "neon_epilogue", "neon_kernel",
           "sve_rows_store", "sve_strided", "SVE_MAX_LANES", "signature"]

#: between unrolled k steps: loads may not move across it (registers may), as in arm.py
BARRIER = '__asm__ volatile("" ::: "memory");'
#: 32-bit lanes of the longest SVE vector (2048 bits)
SVE_MAX_LANES = 64

#: NEON intrinsics of C's element type (ACLE, Neon intrinsics: vld1q, vst1q, vdupq_n,
#: vfmaq / vmlaq, vmulq)
#: The A column of a by-element NEON k step, per group kind (:func:`neon_a_groups`:
#: "q" a full vector, "d" a half, "s" one value duplicated) and element (fp32, fp16 as uint16 bits): the declaration of a{g} from
#: the address {p}.
NEON_A_LOADS = {
    "f32": {"q": "const float32x4_t a{g} = vld1q_f32({p});",
            "d": "const float32x2_t a{g} = vld1_f32({p});",
            "s": "const float32x4_t a{g} = vld1q_dup_f32({p});"},
    "f16": {"q": "const float16x8_t a{g} = vreinterpretq_f16_u16(vld1q_u16({p}));",
            "d": "const float16x4_t a{g} = vreinterpret_f16_u16(vld1_u16({p}));",
            "s": "const float16x8_t a{g} = vreinterpretq_f16_u16(vld1q_dup_u16({p}));"},
}



def neon_a_groups(mr: int, lanes: int) -> list[tuple[str, int, int]]:
    """How one k step's MR values of A are loaded in a by-element NEON kernel of
    ``lanes`` per vector (4 fp32, 8 fp16): (kind, first row, rows), kind ``q`` (a full
    vector of ``lanes`` rows), ``d`` (a half vector) or ``s`` (one row, broadcast).
    Never reads past row MR-1 of the packed panel."""
    groups, i = [], 0
    while mr - i >= lanes:
        groups.append(("q", i, lanes))
        i += lanes
    if mr - i >= lanes // 2:
        groups.append(("d", i, lanes // 2))
        i += lanes // 2
    while i < mr:
        groups.append(("s", i, 1))
        i += 1
    return groups


NEON_C = {
    "float": dict(vt="float32x4_t", ct="float", ld="vld1q_f32", st="vst1q_f32",
                  dup="vdupq_n_f32", mla="vfmaq_f32", mul="vmulq_f32", zero="0.0f",
                  one="1.0f", wrap=False),
    "int32_t": dict(vt="int32x4_t", ct="int32_t", ld="vld1q_s32", st="vst1q_s32",
                    dup="vdupq_n_s32", mla="vmlaq_s32", mul="vmulq_s32", zero="0",
                    one="1", wrap=True),
}
#: SVE intrinsics of C's element type (ACLE for SVE: svld1_vnum, svst1_vnum, svmla_x,
#: svmul_x, svdup_n)
SVE_C = {
    "float": dict(vt="svfloat32_t", ct="float", sfx="f32", zero="0.0f", one="1.0f", wrap=False),
    "int32_t": dict(vt="svint32_t", ct="int32_t", sfx="s32", zero="0", one="1", wrap=True),
}


def c_kind(spec: TileSpec) -> str:
    """C's element type of a typed tile: ``int32_t`` for integer inputs, else ``float``."""
    return "int32_t" if spec.gemm_types.integer else "float"


def signature(name: str, ct: str, ea: str, eb: str, edge: bool = False) -> list[str]:
    """The micro-kernel's (or the edge entry point's) prototype lines, c_src/mk_ukernel.h."""
    head = f"void {name}(" + ("int64_t m, int64_t n, " if edge else "")
    return [f"{head}int64_t kc, const {ct} *restrict alpha,",
            f"        const {ea} *restrict a, const {eb} *restrict b,",
            f"        const {ct} *restrict beta, {ct} *restrict c, int64_t rs_c, int64_t cs_c)"]


def _axpby(ct: str, wrap: bool, e: str) -> str:
    return (f"({ct})((uint32_t){e} + (uint32_t)*beta * (uint32_t)*p)" if wrap
            else f"{e} + *beta * *p")


def neon_epilogue(rows, nr: int, ct: str) -> list[str]:
    """C := alpha * rows + beta * C for rows[i][v] (4-lane vectors: row i, columns
    4v..4v+3) of C type ``ct``: alpha skipped when 1; unit-stride C stored directly
    (beta == 0 writes without reading); general stride through a stack buffer."""
    k = NEON_C[ct]
    mr, out = len(rows), []
    out.append(f"    if (*alpha != {k['one']}) {{")
    out.append(f"        const {k['vt']} va = {k['dup']}(*alpha);")
    out += [f"        {x} = {k['mul']}({x}, va);" for row in rows for x in row]
    out.append("    }")
    out.append("    if (cs_c == 1) {")
    out.append(f"        if (*beta == {k['zero']}) {{")
    cells = [(i, v, x) for i, row in enumerate(rows) for v, x in enumerate(row)]
    out += [f"            {k['st']}(c + {i} * rs_c + {4 * v}, {x});" for i, v, x in cells]
    out.append("        } else {")
    out.append(f"            const {k['vt']} vb = {k['dup']}(*beta);")
    out += [f"            {k['st']}(c + {i} * rs_c + {4 * v}, {k['mla']}({x}, vb, "
            f"{k['ld']}(c + {i} * rs_c + {4 * v})));" for i, v, x in cells]
    out.append("        }")
    out.append("    } else {")
    out.append(f"        {ct} t[{mr * nr}] __attribute__((aligned(16)));")
    out += [f"        {k['st']}(t + {i * nr + 4 * v}, {x});" for i, v, x in cells]
    out.append(f"        for (int64_t i = 0; i < {mr}; ++i)")
    out.append(f"            for (int64_t j = 0; j < {nr}; ++j) {{")
    out.append(f"                {ct} *p = c + i * rs_c + j * cs_c;")
    e = f"t[i * {nr} + j]"
    out.append(f"                *p = *beta == {k['zero']} ? {e} : {_axpby(ct, k['wrap'], e)};")
    out.append("            }")
    out.append("    }")
    return out


def grouped_k_loops(step, ku: int, g: int, mr: int, b_advance, *,
                    barrier: bool = False) -> list[str]:
    """The K loops over a kc that is a multiple of the K group ``g``: ku groups a trip
    (copy ``u`` of ``step(u, indent) -> lines`` in a block of its own, after a
    :data:`BARRIER` when ``barrier``), then one group a trip. A advances MR elements
    per k, B ``b_advance(n)`` (C text) for n k."""
    out = [f"    /* kc is a multiple of {g} (the driver pads K with zeros to its K group) */",
           "    int64_t k = 0;"]
    if ku > 1:
        out.append(f"    for (; k + {ku * g} <= kc; k += {ku * g}) {{")
        for u in range(ku):
            out.append("        {")
            if barrier:
                out.append(f"            {BARRIER}")
            out += step(u, "            ")
            out.append("        }")
        out.append(f"        a += {ku * mr * g};")
        out.append(f"        b += {b_advance(ku * g)};")
        out.append("    }")
    out.append(f"    for (; k < kc; k += {g}) {{")
    out += step(0, "        ")
    out.append(f"        a += {mr * g};")
    out.append(f"        b += {b_advance(g)};")
    out.append("    }")
    return out


def neon_kernel(spec: TileSpec, *, ea: str, eb: str, acc_type: str, acc_zero: str,
                acc_names, step, kgroup: int, rows, includes=("arm_neon.h",),
                preamble: list[str] | None = None, what: str = "") -> str:
    """C source of a fixed-width typed NEON micro-kernel.

    ``acc_names[i][j]`` are the accumulators (``acc_type``, zeroed with ``acc_zero``);
    ``step(u, indent) -> lines`` one k group (copy ``u`` of the unrolled body, panel
    offsets in elements); the panels advance MR * kgroup and NR * kgroup elements per
    group; ``rows(out) -> rows`` appends the lines turning the accumulators into 4-lane
    rows of C's type (conversion, un-interleaving) and returns their names [i][v];
    ``preamble``: lines before the function (helpers)."""
    mr, nr, ku = spec.mr, spec.nr, spec.k_unroll
    ct = c_kind(spec)
    out = [header(spec)]
    out += [f"#include <{h}>" for h in ("stdint.h",) + tuple(includes)]
    out.append("")
    if what:
        out += [f"/* {line} */" if line else "" for line in what.splitlines()]
        out.append("")
    out += preamble or []
    out += signature(symbol(spec), ct, ea, eb)
    out.append("{")
    for row in acc_names:
        out.append(f"    {acc_type} " + ", ".join(f"{x} = {acc_zero}" for x in row) + ";")
    for i in range(mr):
        out += [f"    __builtin_prefetch(c + {i} * rs_c" + (f" + {j} * cs_c);" if j else ");")
                for j in prefetch_columns(nr)]
    out += grouped_k_loops(step, ku, kgroup, mr, lambda n: f"{n * nr}", barrier=True)
    names = rows(out)
    out += neon_epilogue(names, nr, ct)
    out.append("}")
    return "\n".join(out) + "\n"


# -- SVE ------------------------------------------------------------------------------

def sve_rows_store(rows, preds: list[str], ct: str, guard_rows: bool) -> list[str]:
    """The cs_c == 1 branch of an SVE epilogue for rows[i][v] (vector v of row i, at
    c + i*rs_c + v*VL/32) of C type ``ct``, vector v under predicate preds[v]; with
    ``guard_rows`` (edge tile) rows at and past m are not stored."""
    k = SVE_C[ct]
    s = k["sfx"]
    out = ["    if (cs_c == 1) {"]
    for beta0 in (True, False):
        if beta0:
            out.append(f"        if (*beta == {k['zero']}) {{          /* C is written, never read */")
        else:
            out.append("        } else {")
            out.append(f"            const {k['vt']} vb = svdup_n_{s}(*beta);")
        for i, row in enumerate(rows):
            if guard_rows and i:
                out.append(f"            if (m <= {i}) return;")
            for v, x in enumerate(row):
                p, pg = f"c + {i} * rs_c", preds[v]
                val = x if beta0 else f"svmla_{s}_x({pg}, {x}, svld1_vnum_{s}({pg}, {p}, {v}), vb)"
                out.append(f"            svst1_vnum_{s}({pg}, {p}, {v}, {val});")
    out.append("        }")
    return out


def sve_strided(rows, ct: str, nrows: str, ncols: str) -> list[str]:
    """General-stride C (inside ``else {``): the tile to a stack buffer sized for the
    longest vector, then a scalar loop over ``nrows`` x ``ncols`` (C expressions)."""
    k = SVE_C[ct]
    mr, nv = len(rows), len(rows[0])
    out = [f"        {ct} t[{mr * nv * SVE_MAX_LANES}];   /* MR x NR at the largest VL */"]
    for i, row in enumerate(rows):
        for v, x in enumerate(row):
            out.append(f"        svst1_vnum_{k['sfx']}(svptrue_b32(), t + {i} * nr, {v}, {x});")
    out.append(f"        for (int64_t i = 0; i < {nrows}; ++i)")
    out.append(f"            for (int64_t j = 0; j < {ncols}; ++j) {{")
    out.append(f"                {ct} *p = c + i * rs_c + j * cs_c;")
    e = "t[i * nr + j]"
    out.append(f"                *p = *beta == {k['zero']} ? {e} : {_axpby(ct, k['wrap'], e)};")
    out.append("            }")
    return out
