"""``microkernel template NAME``: a commented plain-C micro-kernel for a tile, the
starting point of a kernel of your own (from ``c_src/template/ukernel_template.c``,
or ``ukernel_template_typed.c`` for a tile of other types than fp32: its panels hold
the elements, in the K groups, that the tile's module packs for its instruction).

It compiles as written, with the tile's ISA flags, and passes the edge catalogue
(tests/test_template.py builds one of each panel layout). Where the generated kernel
has an edge entry point (x86 tiles of several vectors per row) the template defines
one too; it is optional (c_src/mk_ukernel.h).
"""
from __future__ import annotations

import sys

from .common import UsageError, output_path

__all__ = ["add_arguments", "run", "render"]

_EDGE_DOC = """
/* The edge entry point, optional (without it the driver computes edge tiles in its
 * MR x NR buffer): the same update on the top-left m x n corner only (1 <= m <= MR,
 * 1 <= n <= NR); the panels are still full MR and NR wide (zero-padded). */
"""

EDGE = _EDGE_DOC + """void mk_ukernel_@NAME@_edge(int64_t m, int64_t n, int64_t kc, const float *restrict alpha,
        const float *restrict a, const float *restrict b,
        const float *restrict beta, float *restrict c, int64_t rs_c, int64_t cs_c)
{
    float acc[TILE_MR][TILE_NR] = {{0.0f}};
    for (int64_t k = 0; k < kc; ++k)
        for (int i = 0; i < TILE_MR; ++i)
            for (int j = 0; j < TILE_NR; ++j)
                acc[i][j] += a[k * TILE_MR + i] * b[k * TILE_NR + j];
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            float *p = c + i * rs_c + j * cs_c;
            const float v = *alpha * acc[i][j];
            *p = *beta == 0.0f ? v : v + *beta * *p;
        }
}
"""


EDGE_TYPED = _EDGE_DOC + """void mk_ukernel_@NAME@_edge(int64_t m, int64_t n, int64_t kc, const MK_TC *restrict alpha,
        const MK_TA *restrict a, const MK_TB *restrict b,
        const MK_TC *restrict beta, MK_TC *restrict c, int64_t rs_c, int64_t cs_c)
{
    tile_acc acc[TILE_MR][TILE_NR];
    tile_product(kc, a, b, acc);
    tile_store(m, n, alpha, beta, acc, c, rs_c, cs_c);
}
"""

_ACCUMULATE = {
    False: "Sums in fp32, in any order: the catalogue's bound for these types allows it\n"
           " * (microkernel.dtypes).",
    True: "Sums in uint32, so they wrap modulo 2^32 as the instructions' int32 does, and\n"
          " * C := alpha * sum + beta * C likewise; integer results must be exact.",
}


def _value(c_type: str, types: str) -> str:
    """C expression of ``x``, one packed element of ``c_type``, as the value it
    multiplies by: floats as they are, 16-bit floats decoded (mk_convert.h), integers
    widened to int32."""
    if c_type == "float":
        return "(x)"
    if c_type in ("uint16_t", "uint32_t") and types in ("bf16", "f16", "f16h"):
        decode = "mk_bf16_to_f32" if types == "bf16" else "mk_f16_to_f32"
        return f"{decode}((uint16_t)(x))"      # uint32_t: an fp16 pair, both halves equal
    return "((int32_t)(x))"


def render(name: str, filename: str | None = None) -> str:
    """The template's C text for tile ``name`` (``filename``: the name its first line
    gives the file; default ``<name>.c``). Raises TileError for a bad name and
    UsageError for a vector-length-agnostic (SVE) tile, whose NR is not a constant."""
    from .. import build, codegen
    from ..tile import TileSpec
    spec = TileSpec.from_name(name)
    if spec.is_vla:
        raise UsageError(f"{name}: an SVE tile's NR (an SME tile's MR and NR) is read at run "
                         f"time from the vector length (svcntw(), the streaming length); start "
                         f"from the generated file of such a tile (`microkernel list` names "
                         f"them; `python -m microkernel.codegen` writes the built-ins into "
                         f"c_src/ukernels/)")
    lay = codegen.layout(spec)
    has_edge = codegen.edge_symbol(spec) != "NULL"
    if lay.typed:
        t = spec.gemm_types
        integer = lay.tc != "float"
        text = (build.c_src_dir() / "template" / "ukernel_template_typed.c").read_text()
        text = (text.replace("@EDGE@", EDGE_TYPED if has_edge else "")
                .replace("@TYPES@", f"{t.a} x {t.b} -> {t.acc} accumulate, {t.out} C")
                .replace("@TA@", lay.ta).replace("@TB@", lay.tb).replace("@TC@", lay.tc)
                .replace("@GA@", str(lay.ga)).replace("@GB@", str(lay.gb))
                .replace("@A_VALUE@", lay.value_a or _value(lay.ta, t.name))
                .replace("@B_VALUE@", _value(lay.tb, t.name))
                .replace("@INT_C@", str(int(integer)))
                .replace("@ACCUMULATE@", _ACCUMULATE[integer]))
    else:
        text = (build.c_src_dir() / "template" / "ukernel_template.c").read_text()
        text = text.replace("@EDGE@", EDGE if has_edge else "")
    text = text.replace("@NAME@.c:", f"{filename or spec.name + '.c'}:", 1)
    return (text.replace("@NAME@", spec.name)
            .replace("@MR@", str(spec.mr)).replace("@NR@", str(spec.nr)))


def add_arguments(p) -> None:
    p.add_argument("name", metavar="NAME", help="tile name, e.g. avx2_4x24, scalar_4x4")
    p.add_argument("-o", "--output", metavar="PATH", help="write here (default: stdout)")
    p.add_argument("--force", action="store_true",
                   help="replace the --output file if it exists (else refused)")


def run(args) -> int:
    path = output_path("--output", args.output)
    if path is not None and path.exists() and not args.force:
        raise UsageError(f"--output {path}: the file exists (your kernel?); give another "
                         f"name, or --force to replace it")
    text = render(args.name, None if path is None else path.name)
    if path is None:
        sys.stdout.write(text)
    else:
        from ..dispatch import usable_isas
        from ..tile import TileSpec
        isa = TileSpec.from_name(args.name).isa
        runs_here = isa in usable_isas()     # (a bad MICROKERNEL_ISA fails before the write)
        path.write_text(text)
        if runs_here:
            print(f"wrote {path}: validate it with `microkernel validate --kernel {args.name} "
                  f"--source {path}`", file=sys.stderr)
        else:
            print(f"wrote {path}: this machine cannot run {isa}, so validate it on one that "
                  f"can (`microkernel validate --kernel {args.name} --source {path}`); here "
                  f"`microkernel asm {args.name} --source {path}` shows its inner loop "
                  f"(with the aarch64 cross compiler for neon, sve, sme)", file=sys.stderr)
    return 0
