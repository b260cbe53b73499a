"""``microkernel template NAME``: a commented plain-C micro-kernel for a tile, the
starting point of a kernel of your own (from ``c_src/template/ukernel_template.c``).

It compiles as written, with the tile's ISA flags, and passes the edge catalogue; the
tile's module also calls an edge entry point where the generated kernel has one (x86
tiles of several vectors per row), and the template then defines that too.
"""
from __future__ import annotations

import sys

from .common import UsageError, output_path

__all__ = ["add_arguments", "run", "render"]

EDGE = """
/* The edge entry point this tile's module calls for an edge tile: the same update on
 * the top-left m x n corner only (1 <= m <= MR, 1 <= n <= NR); the panels are still
 * full MR and NR wide (zero-padded). */
void mk_ukernel_@NAME@_edge(int64_t m, int64_t n, int64_t kc, const float *restrict alpha,
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


def render(name: str) -> str:
    """The template's C text for tile ``name``. Raises TileError for a bad name and
    UsageError for a vector-length-agnostic (SVE) tile, whose NR is not a constant."""
    from .. import build, codegen
    from ..tile import TileSpec
    spec = TileSpec.from_name(name)
    if spec.is_vla:
        raise UsageError(f"{name}: an SVE tile's NR is read at run time (svcntw()); start "
                         f"from its generated file, `python -m microkernel.codegen` output "
                         f"c_src/ukernels/{spec.file_stem}.c")
    text = (build.c_src_dir() / "template" / "ukernel_template.c").read_text()
    edge = EDGE if codegen.edge_symbol(spec) != "NULL" else ""
    return (text.replace("@EDGE@", edge).replace("@NAME@", spec.name)
            .replace("@MR@", str(spec.mr)).replace("@NR@", str(spec.nr)))


def add_arguments(p) -> None:
    p.add_argument("name", metavar="NAME", help="tile name, e.g. avx2_4x24, scalar_4x4")
    p.add_argument("-o", "--output", metavar="PATH", help="write here (default: stdout)")


def run(args) -> int:
    path = output_path("--output", args.output)
    text = render(args.name)
    if path is None:
        sys.stdout.write(text)
    else:
        path.write_text(text)
        print(f"wrote {path}: validate it with `microkernel validate --kernel {args.name} "
              f"--source {path}`", file=sys.stderr)
    return 0
