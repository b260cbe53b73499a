"""C emitters: one TileSpec in, the micro-kernel's C source out.

``generate(spec)`` dispatches on the ISA family (x86: avx512, avx2; x86_typed:
avx512bf16, avx512fp16, avx512vnni; amx; arm: neon, sve; scalar). ``generate_peak(isa)`` emits the FMA peak loop for one ISA.
:func:`kernel_list` writes the X-macro list of kernels that every C main includes
(``c_src/ukernels/mk_kernels.inc`` for the built-ins, after IREE's
``mmt4d_x86_64_tiles.inl``), and :func:`desc_function` the one piece of C glue that
fills a kernel's descriptor (used by the kernel modules, the aarch64 harness and the
sanitizer harness).
``python -m microkernel.codegen`` rewrites the committed built-in sources in
``c_src/ukernels/`` (a test checks they match the generator).
"""
from __future__ import annotations

import dataclasses
import functools
import importlib

from ..tile import TileSpec
from .common import symbol

__all__ = ["generate", "c_stationary", "c_stationary_irloop", "generate_peak", "symbol", "FAMILY", "edge_symbol",
           "nr_expr", "kernel_list", "desc_function", "PanelLayout", "layout",
           "module_defines", "mr_expr"]

#: ISA -> emitter module (XNNPACK-style: one emitter per ISA family)
FAMILY = {"avx512": "x86", "avx2": "x86", "scalar": "scalar", "neon": "arm", "sve": "arm",
          "avx512bf16": "x86_typed", "avx512fp16": "x86_typed", "avx512vnni": "x86_typed",
          "amx": "amx",
          # the Arm typed ISAs (issue 22)
          "neondot": "arm_typed", "neonfp16": "arm_typed", "neoni8mm": "arm_mmla",
          "neonbf16": "arm_mmla", "svei8mm": "arm_mmla", "svebf16": "arm_mmla", "sme": "sme"}


def _family(isa: str):
    return importlib.import_module(f".{FAMILY[isa]}", __name__)


def generate(spec: TileSpec) -> str:
    """C source (str) of the micro-kernel ``mk_ukernel_<spec.name>`` (contract:
    c_src/mk_ukernel.h)."""
    return _family(spec.isa).ukernel(spec)


def c_stationary(spec: TileSpec, source: str | None = None) -> bool:
    """Whether ``spec``'s module (``source``: the text of a C file that replaced its
    generated micro-kernel) asks the driver for its C-stationary loops
    (``MK_C_STATIONARY``, c_src/mk_cstat.h: the AMX and AVX512-BF16 tiles do)."""
    return "#define MK_C_STATIONARY 1" in (generate(spec) if source is None else source)


def c_stationary_irloop(spec: TileSpec, source: str | None = None) -> bool:
    """Whether ``spec``'s module (``source`` as for :func:`c_stationary`) takes the
    C-stationary loops and gives them its whole-ir-loop entry point
    (``MK_UKERNEL_IRLOOP``: the AMX tiles do, codegen/amx.py)."""
    text = generate(spec) if source is None else source
    return c_stationary(spec, text) and "#define MK_UKERNEL_IRLOOP " in text


def generate_peak(isa: str, types: str = "f32") -> str:
    """C source of ``double mk_fma_peak(int64_t iters, double *flops)`` for ``isa``: the
    peak of the instruction that ``isa``'s tiles of ``types`` are made of (the fp32 FMA
    for fp32 and widened bf16/fp16 tiles), so that "% of peak" compares like with like.
    ``*flops`` counts 2 operations per multiply-add (integer ones too)."""
    family = _family(isa)
    try:
        return family.peak(isa, types)
    except TypeError:                # a family whose peak loops are of one type
        return family.peak(isa)


@dataclasses.dataclass(frozen=True)
class PanelLayout:
    """How a tile's module packs and computes (the driver's type macros, driver.c):
    ``sa``/``sb`` the C element types of the caller's A and B, ``ta``/``tb`` of the packed
    panels, ``ga``/``gb`` their K groups, ``tc`` of C, alpha and beta; ``cvt_a``/``cvt_b``
    C expressions of ``x`` converting one source element to one panel element;
    ``fill_a``/``fill_b`` the L1 timing's panel values as expressions of ``i``;
    ``value_a``: where a panel element of A is not the value it stands for (the shifted
    VNNI tiles store A + 128 or A - 128), a C expression of ``x`` giving that value
    (``microkernel template`` uses it), else empty; ``colsum_b``: a C expression of ``s``,
    a column's sum in a B micro-panel, that the driver's packing stores per column in one
    more K group at the panel's end (``MK_B_COLSUM``, driver.c), else empty."""
    sa: str = "float"
    sb: str = "float"
    ta: str = "float"
    tb: str = "float"
    ga: int = 1
    gb: int = 1
    tc: str = "float"
    cvt_a: str = "(x)"
    cvt_b: str = "(x)"
    fill_a: str = ""
    fill_b: str = ""
    value_a: str = ""
    colsum_b: str = ""

    @property
    def typed(self) -> bool:
        return self != PanelLayout()


_WIDEN = {"bf16": "mk_bf16_to_f32(x)", "f16": "mk_f16_to_f32(x)"}


@functools.lru_cache(maxsize=None)
def layout(spec: TileSpec) -> PanelLayout:
    """The panel layout of ``spec``'s module: the ISA family's (``family.layout``) when
    it has one for these types, else the portable default: fp32 as it is; bf16 and fp16
    widened to fp32 while packing (the fp32 micro-kernel runs on them); integers widened
    to int32 (the integer micro-kernel of the scalar emitter). Cached per spec (a
    frozen PanelLayout): gemm() asks for it in calls whose blocking depends on the
    packed B's size (``gemm._cstat_fits``)."""
    family = _family(spec.isa)
    if hasattr(family, "layout"):
        got = family.layout(spec)
        if got is not None:
            return got
    t = spec.gemm_types
    if t.name == "f32":
        return PanelLayout()
    if t.name in _WIDEN:
        return PanelLayout(sa=t.c_a, sb=t.c_b, cvt_a=_WIDEN[t.name], cvt_b=_WIDEN[t.name])
    if t.integer:
        return PanelLayout(sa=t.c_a, sb=t.c_b, ta="int32_t", tb="int32_t", tc="int32_t",
                           cvt_a="((int32_t)(x))", cvt_b="((int32_t)(x))",
                           fill_a="((int32_t)((i) % 7) - 3)", fill_b="((int32_t)((i) % 5) - 2)")
    raise ValueError(f"{spec.name}: no panel layout for types {t.name!r} on {spec.isa}")


def module_defines(spec: TileSpec) -> str:
    """The ``#define`` lines a typed module puts before driver.c and timing.c (empty for
    an fp32 tile)."""
    lay = layout(spec)
    if not lay.typed:
        return ""
    lines = ["#define MK_TYPED 1", '#include "mk_convert.h"',
             f"#define MK_SA {lay.sa}", f"#define MK_SB {lay.sb}",
             f"#define MK_TA {lay.ta}", f"#define MK_TB {lay.tb}",
             f"#define MK_GA {lay.ga}", f"#define MK_GB {lay.gb}",
             f"#define MK_TC {lay.tc}", f"#define MK_INT_C {int(lay.tc != 'float')}",
             f"#define MK_CVT_A(x) {lay.cvt_a}", f"#define MK_CVT_B(x) {lay.cvt_b}",
             # panels that only re-lay their elements get the driver's fast packing paths
             f"#define MK_COPY_A {int(lay.sa == lay.ta and lay.cvt_a == '(x)')}",
             f"#define MK_COPY_B {int(lay.sb == lay.tb and lay.cvt_b == '(x)')}"]
    if lay.fill_a:
        lines.append(f"#define MK_FILL_A(i) {lay.fill_a}")
    if lay.fill_b:
        lines.append(f"#define MK_FILL_B(i) {lay.fill_b}")
    if lay.colsum_b:
        lines.append(f"#define MK_B_COLSUM(s) {lay.colsum_b}")
    return "\n".join(lines) + "\n"


def edge_symbol(spec: TileSpec) -> str:
    """C name of the tile's edge entry point (``mk_ukernel_<name>_edge``), or ``NULL``
    when the driver's MR x NR buffer handles its edges."""
    family = _family(spec.isa)
    return family.edge_symbol(spec) if hasattr(family, "edge_symbol") else "NULL"


def nr_expr(spec: TileSpec) -> str:
    """C expression of NR in fp32 columns (SVE: read from the vector length at run
    time, so only valid in code compiled with the ISA's flags)."""
    family = _family(spec.isa)
    return family.nr_expr(spec) if hasattr(family, "nr_expr") else str(spec.nr)


def mr_expr(spec: TileSpec) -> str:
    """C expression of MR in rows (SME: read from the streaming vector length at run
    time; only valid after the probe cleared the ISA)."""
    family = _family(spec.isa)
    return family.mr_expr(spec) if hasattr(family, "mr_expr") else str(spec.mr)


LIST_HEADER = """\
/*
 * {title}: GENERATED by microkernel.codegen from {source}; do not edit.
 * One line per kernel, for a C main to include with MK_KERNEL defined (the X-macro
 * pattern of IREE's mmt4d tile lists):
 *   MK_KERNEL(name, isa, mr, nr, nv, k_unroll, edge)
 *     name      the kernel's name; its micro-kernel is mk_ukernel_<name>
 *     isa       a key of microkernel.tile.ISAS (a bare word: stringify it)
 *     mr, nr    the register tile; nr is 0 for a vector-length-agnostic tile (SVE),
 *               whose NR = nv * VL/32 is known only at run time; mr is 0 too for SME,
 *               whose MR also counts streaming vectors
 *     nv        vectors per row of the tile
 *     k_unroll  copies of the k step in the K loop
 *     edge      1 when the tile has an edge entry point mk_ukernel_<name>_edge
 */
"""


def kernel_list(specs, *, title: str = "mk_kernels.inc",
                source: str = "microkernel.registry") -> str:
    """The X-macro list of ``specs`` (see LIST_HEADER)."""
    lines = [LIST_HEADER.format(title=title, source=source)]
    for s in specs:
        lines.append(f"MK_KERNEL({s.name}, {s.isa}, {0 if s.mr_is_vectors else s.mr}, "
                     f"{0 if s.is_vla else s.nr}, "
                     f"{s.vectors_per_row}, {s.k_unroll}, "
                     f"{0 if edge_symbol(s) == 'NULL' else 1})")
    return "\n".join(lines) + "\n"


def desc_function(spec: TileSpec, fname: str, *, static: bool = False,
                  edge: str | None = None) -> str:
    """C function ``void <fname>(mk_ukernel_desc *d)`` filling ``spec``'s descriptor
    (c_src/mk_ukernel.h): MR, NR (SVE: at the run-time VL), the micro-kernel and its
    edge entry point: the generated kernel's (NULL where it has none), or ``edge`` (a
    symbol, or ``"NULL"``: the driver then computes edge tiles in its MR x NR buffer).
    Compile it with the ISA's flags (it may read the VL)."""
    return (f"{'static ' if static else ''}void {fname}(mk_ukernel_desc *d)\n{{\n"
            f"    d->mr = {mr_expr(spec)};\n    d->nr = {nr_expr(spec)};\n"
            f"    d->ukernel = {symbol(spec)};\n"
            f"    d->edge = {edge_symbol(spec) if edge is None else edge};\n}}\n")
