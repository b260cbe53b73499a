"""AMX emitter: the register tile is a set of tile registers (tmm0-7).

Sources: Intel 64 and IA-32 Architectures SDM vol. 1, ch. 18 (Intel AMX: palette 1,
eight tiles of at most 16 rows x 64 bytes, TILECFG) and vol. 2 (LDTILECFG, TILELOADD,
TILESTORED, TILEZERO, TILERELEASE, TDPBF16PS, TDPBSSD/TDPBSUD/TDPBUSD/TDPBUUD); the
Intel Intrinsics Guide (``_tile_loadconfig``, ``_tile_loadd``, ``_tile_dpbf16ps``, ...);
Linux Documentation/arch/x86/xstate.rst (the process asks for the tile data state:
the probe does, :mod:`microkernel.probe`).

A tile ``amx_<types>_<MR>x<NR>`` holds ceil(MR/16) x NR/16 C tiles (16 x 16 fp32 or
int32 each; MR <= 16 gives one row of tiles of MR rows), one A tile per row of C tiles
and one B tile per column (:func:`microkernel.tile.register_budget`: all <= 8). The
tile configuration is generated from the spec (palette 1, rows and bytes per row of
each tile register, :func:`tile_config`). One k step is one group of 64 bytes of K:

* bf16 (``tdpbf16ps``): 32 k. A tile: MR rows x 32 bf16 of K (the A panel in rows of
  64 bytes, ga = 32); B tile: 16 rows of bf16 pairs (k, k+1) x 16 columns (the B
  panel in pairs, gb = 2, a row of the tile is 64 bytes of one pair row);
* int8 (``tdpbssd``, ``tdpbusd``, ``tdpbuud`` for s8s8, u8s8, u8u8: the first source is A):
  64 k; A rows of 64 bytes (ga = 64), B in quads (gb = 4).

C[i][j] += A_i . B_j for every pair, B tiles loaded once per step and A tiles once per
row, interleaved with the dot products (the loads of the next tile overlap the TMUL).
While it computes, the micro-kernel prefetches (into L2) the C tile the driver's ir
loop hands it next, the MR rows below its own, a few rows per k step: C's rows lie
rs_c apart, each on a page of its own, where the hardware prefetchers do not follow,
and at AMX's speed loading and storing C is a large part of the time (measured with
the deeper KC of :func:`microkernel.blocking.model_blocking`: 10-24% faster at n =
2048-4096 on the 2-core Xeon, bench/results/xeon-2c/amx/).

It also prefetches into L2 its share of the B micro-panel of the driver's next jr step
(``MK_PREFETCH_B``: the driver hands each of the MC/MR calls of its ir loop 1/(MC/MR)
of that panel, c_src/driver.c): the KC x NC block of B lies in L3, so the first call
of every ir loop read its B tiles from there. Where the time went before (Sapphire
Rapids host, bench/amx_breakdown.py, n = 2048-4096): with B's tile loads served from
one L1-resident buffer a gemm() took 0.61-0.65 of the time, with A's 0.70-0.77, both
0.51-0.55, without any C traffic 0.85-0.96, packing and loops alone 0.10-0.12
(bench/results/sapphire-rapids/amx_diag/). With the prefetch (as a loop, ba284cc):
+15.7 and +14.8% at 2048 and 4096 on one CPU, +1.1 and +16.8% on another, s8s8 +13.6%
at 4096 (same rounds; bench/results/sapphire-rapids/amx_prefetch/); as the straight-line
code here, on a busier host, +2.7 and +4.6% (types_5d866b3/). Driver chunks of K that
keep the B chunk in L1 were slower (C's tiles then cross L2 once per chunk), also with
the C tiles kept in L1 buffers across the chunks (14.3% slower; docs/design-notes.md).

Tile configuration: loading it (LDTILECFG) is costly, so the micro-kernel comes in two
entry points: ``mk_ukernel_<name>`` (the contract of c_src/mk_ukernel.h: it loads the
configuration, computes, and releases the tiles) and the always-inlined
``mk_ukernel_<name>_hot``, which assumes the configuration; the module tells the driver
(``MK_UKERNEL_HOT``, ``MK_THREAD_SETUP`` / ``MK_THREAD_TEARDOWN``, c_src/driver.c) to load
it once per thread around its loops and to release the tiles after them, and the L1
timing does the same (c_src/timing.c).

Epilogue: with unit column stride, alpha = 1 and beta = 0 or 1 (every call of the
driver's K loop but the general alpha/beta ones) the C tiles are stored straight to C
(beta = 1: loaded from C first, so the dot products accumulate onto it; beta = 0
never reads C); otherwise they are stored to a stack buffer and C := alpha * t +
beta * C is computed in C (integer C in uint32 arithmetic: wraps modulo 2^32). GCC's
tile intrinsics are inline asm that declares no memory read, so a compiler barrier
orders the packing's stores before the tile loads.

A third entry point, ``mk_ukernel_<name>_irloop`` (``MK_UKERNEL_IRLOOP``, :func:`_irloop`), runs
the whole ir loop of the C-stationary loops below over their compact C tiles: each C tile
stored right after its last product and the next tile's loaded into that register, so
that the next tile's products start on loaded tiles; with gemm()'s one-thread blocking
(KC = 256 bf16, whose B micro-panel L1 keeps across the ir loop:
:func:`microkernel.blocking.model_blocking` ``cstat``), over n = 2048 and 4096 on the
Sapphire Rapids host, +7.3% [+3.9, +11.5] against one call per tile at KC = 2048 on one CPU
and +6.8 / +4.8% on two others, whose intervals cross 0 (bench/results/sapphire-rapids/
amx_irloop/irloop2_*; timed as a variant of the tree before it).

The module asks for the driver's C-stationary loops (``MK_C_STATIONARY``, c_src/mk_cstat.h):
at one thread, when K spans several KC blocks, each MC x NC block of C is accumulated
in compact tiles across them and written to C once, row by row; on the Sapphire Rapids
host 2.0-8.6% faster at n = 3072-4096 (six races on four CPUs) than the five BLIS loops,
whose C tiles lie a row stride (16 KiB at n = 4096) apart
(bench/results/sapphire-rapids/amx_cstat/, docs/design-notes.md).
"""
from __future__ import annotations

from . import PanelLayout
from .common import header, symbol
from ..tile import AMX_TILE_ROWS

__all__ = ["layout", "ukernel", "peak", "edge_symbol", "tile_config", "DP", "K_GROUP"]

#: the dot-product intrinsic of each types (A is the first source: tdpbusd = u8 A, s8 B)
DP = {"bf16": "_tile_dpbf16ps", "s8s8": "_tile_dpbssd", "u8s8": "_tile_dpbusd",
      "u8u8": "_tile_dpbuud"}
#: K elements per 64-byte row of an A tile
K_GROUP = {"bf16": 32, "s8s8": 64, "u8s8": 64, "u8u8": 64}
_C_ELEM = {"bf16": ("uint16_t", "uint16_t"), "s8s8": ("int8_t", "int8_t"),
           "u8s8": ("uint8_t", "int8_t"), "u8u8": ("uint8_t", "uint8_t")}
#: lines of the next B micro-panel prefetched per k step (MK_PREFETCH_B): the driver's
#: share per call is (64 bytes of B per k step per 16 columns) x NR/16 / (MC/MR) lines,
#: 4 for the 32 x 32 tiles at the default MC (256 rows); straight-line code, not a
#: loop, so that the k loop stays innermost (and :func:`microkernel.analysis.inner_loop`
#: finds it)
PF_B_LINES = 4
_FILLS = {"bf16": ("((uint16_t)(0x3F80u + (i) % 7))", "((uint16_t)(0x3B80u + (i) % 5))")}


def _b_group(types: str) -> int:
    """K elements of one 32-bit B element: a bf16 pair, an int8 quad."""
    return 2 if types == "bf16" else 4


def layout(spec) -> PanelLayout:
    """A in rows of 64 bytes of K, B in pairs (bf16) or quads (int8); C fp32 / int32."""
    t = spec.types
    ca, cb = _C_ELEM[t]
    fa, fb = _FILLS.get(t, (f"(({ca})((i) % 7 + 1))", f"(({cb})((i) % 5 + 1))"))
    return PanelLayout(sa=ca, sb=cb, ta=ca, tb=cb, ga=K_GROUP[t], gb=_b_group(t),
                       tc="float" if t == "bf16" else "int32_t", fill_a=fa, fill_b=fb)


def _shape(spec):
    """(row tiles, column tiles, rows of each row tile)."""
    mt = -(-spec.mr // AMX_TILE_ROWS)
    rows = [min(AMX_TILE_ROWS, spec.mr - AMX_TILE_ROWS * i) for i in range(mt)]
    return mt, spec.nr // 16, rows


def _regs(spec):
    """Tile register numbers: C[i][j], A[i], B[j] (C first, then A, then B)."""
    mt, nt, _ = _shape(spec)
    c = [[i * nt + j for j in range(nt)] for i in range(mt)]
    a = [mt * nt + i for i in range(mt)]
    b = [mt * nt + mt + j for j in range(nt)]
    return c, a, b


def tile_config(spec) -> list[tuple[int, int]]:
    """(rows, bytes per row) of tmm0..tmm7 for ``spec`` ((0, 0): unused), in the order of
    :func:`_regs`: C tiles (rows of their row of C, 64 bytes = 16 fp32/int32), A tiles
    (the same rows, 64 bytes of K), B tiles (16 rows of pairs/quads, 64 bytes)."""
    mt, nt, rows = _shape(spec)
    cfg = [(rows[i], 64) for i in range(mt) for _ in range(nt)]
    cfg += [(rows[i], 64) for i in range(mt)]
    cfg += [(AMX_TILE_ROWS, 64)] * nt
    return cfg + [(0, 0)] * (8 - len(cfg))


def _config_c(name: str, cfg) -> list[str]:
    """A static 64-byte palette-1 configuration (LDTILECFG's memory layout: byte 0
    palette, 1 start_row, 16-31 bytes per row of tmm0-7, 48-55 rows) and the function
    that loads it."""
    colsb = ", ".join(str(c) for _, c in cfg)
    rows = ", ".join(str(r) for r, _ in cfg)
    return [f"static void {name}(void)", "{",
            "    static const struct { uint8_t palette, start_row, reserved[14];",
            "                          uint16_t colsb[16]; uint8_t rows[16]; }",
            f"        cfg __attribute__((aligned(64))) = {{1, 0, {{0}}, {{{colsb}}}, {{{rows}}}}};",
            "    _tile_loadconfig(&cfg);", "}"]


def edge_symbol(spec) -> str:
    """``NULL``: edge tiles go through the driver's MR x NR buffer."""
    return "NULL"


def _step(spec, pa: str, pb: str, after=None) -> list[str]:
    """One k step of ``spec``'s tile, unindented: A tile i loaded from ``pa`` (rows of 64
    bytes), B tile j from ``pb`` (the pair / quad rows of NR columns) with the first row of
    C tiles, each C[i][j] += A_i B_j; ``after(i, j)``: lines after that product."""
    t, nr = spec.types, spec.nr
    kg, g = K_GROUP[t], _b_group(t)
    mt, nt, _ = _shape(spec)
    creg, areg, breg = _regs(spec)
    out = []
    for i in range(mt):
        out.append(f"_tile_loadd({areg[i]}, {pa} + {16 * i * kg}, 64);")
        for j in range(nt):
            if i == 0:
                out.append(f"_tile_loadd({breg[j]}, {pb} + {16 * j * g}, {nr * 4});")
            out.append(f"{DP[t]}({creg[i][j]}, {areg[i]}, {breg[j]});")
            out += after(i, j) if after else []
    return out


def _prefetch(ptr: str, end: str, lines: int, locality: int) -> list[str]:
    """Unindented: while ``ptr`` is below ``end``, prefetch its next ``lines`` lines
    (``__builtin_prefetch`` locality 3: L1, 2: L2) and move it past them."""
    return ([f"if ({ptr} < {end}) {{"]
            + [f"    __builtin_prefetch((const void *)({ptr} + {64 * x}), 0, {locality});"
               for x in range(lines)]
            + [f"    {ptr} += {64 * lines};", "}"])


def _indent(lines: list[str], n: int) -> list[str]:
    return [" " * n + x for x in lines]


def ukernel(spec) -> str:
    t = spec.types
    mr, nr = spec.mr, spec.nr
    ca, cb = _C_ELEM[t]
    ct = "float" if t == "bf16" else "int32_t"
    one, zero = ("1.0f", "0.0f") if t == "bf16" else ("1", "0")
    kg = K_GROUP[t]
    mt, nt, rows = _shape(spec)
    creg, areg, breg = _regs(spec)
    sym = symbol(spec)
    cfg = f"mk_amx_config_{spec.name}"
    out = [header(spec).replace("vector registers needed", "tile registers needed"),
           "#include <stdint.h>", "#include <immintrin.h>", ""]
    out += _config_c(cfg, tile_config(spec))
    out += ["", "/* the share of the next B micro-panel this call prefetches into L2 (the driver's",
            "   MK_PREFETCH_B; none in the L1 timing or through the contract entry point) */",
            "static __thread const char *mk_amx_pf_b;",
            "static __thread int64_t mk_amx_pf_bytes;"]
    out += ["", f"/* C tiles: {mt} x {nt}, A tiles {areg}, B tiles {breg}; one k step = {kg} k */",
            "static inline __attribute__((always_inline)) void",
            f"{sym}_hot(int64_t kc, const {ct} *restrict alpha, const {ca} *restrict a,",
            f"        const {cb} *restrict b, const {ct} *restrict beta, {ct} *restrict c,",
            "        int64_t rs_c, int64_t cs_c)", "{",
            "    __asm__ volatile(\"\" ::: \"memory\");   /* the panels' stores before the tile loads */",
            f"    const int direct = cs_c == 1 && rs_c > 0 && *alpha == {one} && "
            f"(*beta == {zero} || *beta == {one});",
            f"    if (direct && *beta == {one}) {{"]
    for i in range(mt):
        for j in range(nt):
            out.append(f"        _tile_loadd({creg[i][j]}, c + {16 * i} * rs_c + {16 * j}, rs_c * 4);")
    out.append("    } else {")
    out += [f"        _tile_zero({creg[i][j]});" for i in range(mt) for j in range(nt)]
    lines = -(-nr * 4 // 64)          # 64-byte lines in one row of the C tile
    out += ["    }",
            "    /* the next C tile of the driver's ir loop (MR rows below this one) into L2, a",
            f"       row pair per k step (all {mr} rows from KC = {kg * -(-mr // 2)} on): its rows",
            "       lie rs_c apart, each on a page of its own, where the hardware prefetchers",
            "       do not follow */",
            f"    const uintptr_t pf = (uintptr_t)c + (uintptr_t)({mr} * rs_c) * sizeof *c;",
            f"    int64_t pf_row = direct ? 0 : {mr};",
            f"    /* the driver's share of the next B micro-panel, {PF_B_LINES} lines per k step */",
            "    const char *pb = mk_amx_pf_b;",
            "    const char *const pb_end = pb + mk_amx_pf_bytes;",
            f"    for (int64_t k = 0; k < kc; k += {kg}) {{"]
    out += _indent(_prefetch("pb", "pb_end", PF_B_LINES, 2), 8)
    out += [f"        if (pf_row < {mr}) {{"]
    # locality 2: prefetcht1, into L2; two rows per step in straight-line code like the B
    # prefetch above, so that the k loop stays innermost (with an odd MR the last pair's
    # second row is the one after the next tile: a prefetch never faults)
    for r in range(2 if mr > 1 else 1):
        row = f"(pf_row + {r})" if r else "pf_row"
        out += [f"            __builtin_prefetch((const void *)(pf + (uintptr_t)({row} * rs_c) * sizeof *c"
                f"{f' + {64 * x}' if x else ''}), 0, 2);" for x in range(lines)]
    out += [f"            pf_row += {2 if mr > 1 else 1};", "        }"]
    out += _indent(_step(spec, "a", "b"), 8)
    out += [f"        a += {mr * kg};", f"        b += {kg * nr};", "    }",
            "    if (direct) {"]
    out += [f"        _tile_stored({creg[i][j]}, c + {16 * i} * rs_c + {16 * j}, rs_c * 4);"
            for i in range(mt) for j in range(nt)]
    out += ["        return;", "    }",
            f"    {ct} t[{mr * nr}] __attribute__((aligned(64)));"]
    out += [f"    _tile_stored({creg[i][j]}, t + {16 * i * nr + 16 * j}, {nr * 4});"
            for i in range(mt) for j in range(nt)]
    if t == "bf16":
        axpby = "al * t[i * {nr} + j] + be * *p".format(nr=nr)
        ax = f"al * t[i * {nr} + j]"
    else:   # int32 C: uint32 arithmetic wraps modulo 2^32 (no signed-overflow UB)
        ax = f"(int32_t)((uint32_t)al * (uint32_t)t[i * {nr} + j])"
        axpby = (f"(int32_t)((uint32_t)al * (uint32_t)t[i * {nr} + j] + "
                 f"(uint32_t)be * (uint32_t)*p)")
    out += [f"    const {ct} al = *alpha, be = *beta;",
            f"    for (int64_t i = 0; i < {mr}; ++i)",
            f"        for (int64_t j = 0; j < {nr}; ++j) {{",
            f"            {ct} *p = c + i * rs_c + j * cs_c;",
            f"            *p = be == {zero} ? {ax} : {axpby};",
            "        }", "}", "",
            f"void {sym}(int64_t kc, const {ct} *restrict alpha, const {ca} *restrict a,",
            f"        const {cb} *restrict b, const {ct} *restrict beta, {ct} *restrict c,",
            "        int64_t rs_c, int64_t cs_c)", "{",
            f"    {cfg}();",
            f"    {sym}_hot(kc, alpha, a, b, beta, c, rs_c, cs_c);",
            "    _tile_release();", "}", "",
            *_irloop(spec, sym), "",
            "/* the driver and the L1 timing: the configuration once per thread (driver.c) */",
            f"#define MK_UKERNEL_HOT {sym}_hot",
            "#define MK_PREFETCH_B(p, bytes) (mk_amx_pf_b = (const char *)(p), mk_amx_pf_bytes = (bytes))",
            f"#define MK_THREAD_SETUP() {cfg}()",
            "#define MK_THREAD_TEARDOWN() _tile_release()",
            "/* one thread, K over several KC blocks: C accumulated in compact tiles (mk_cstat.h) */",
            "#define MK_C_STATIONARY 1"]
    return "\n".join(out) + "\n"


def _irloop(spec, sym: str) -> list[str]:
    """``<sym>_irloop``: the driver's whole ir loop over compact C tiles in one function
    (``MK_UKERNEL_IRLOOP``, the C-stationary loops of c_src/mk_cstat.h): ``calls``
    micro-panels of A (``a_step`` elements apart) against one B micro-panel, tile q's C
    at ``c + q * MR * NR`` (MR x NR fp32 / int32, rows NR apart), loaded (``load_c``)
    or zeroed first, stored after. The last k step of each tile stores every C tile
    right after its last product and loads (or zeroes) the next tile's into that
    register, so that the next tile's products start on loaded tiles rather than after a
    round trip of all four (bench/amx_roofline.py: ``ir ... + C early next``). In each k
    step but a tile's last it also prefetches the next tile's C into L1, 8 lines (at KC =
    256: 56 of a C tile's 64 lines; the last step loads the rest as tiles). In every k
    step, the last included, it prefetches the ranges ``pf_b`` (the driver's next B
    micro-panel) and ``pf_a`` (its share of the next A sub-block) into L2, PF_B_LINES
    lines of each, as far as the ranges reach: at KC = 256 bf16 and MC = 256 (8 tiles of
    8 k steps) all 256 lines of the next 16 KiB B micro-panel (without the last step's
    share, 224: the rest was left to the hardware prefetchers; +3.2% at 4096 on a busy
    Sapphire Rapids host, a tie on a calm one, bench/results/sapphire-rapids/amx_lastpf/)."""
    t = spec.types
    mr, nr = spec.mr, spec.nr
    ca, cb = _C_ELEM[t]
    ct = "float" if t == "bf16" else "int32_t"
    kg = K_GROUP[t]
    mt, nt, _ = _shape(spec)
    creg, _, _ = _regs(spec)
    out = ["/* the whole ir loop of the C-stationary loops: C tiles compact, alpha = 1, beta' = 0",
           "   (zero) or 1 (load) */",
           "static inline __attribute__((always_inline)) void",
           f"{sym}_irloop(int64_t kc, int64_t calls, const {ca} *restrict a, int64_t a_step,",
           f"        const {cb} *restrict b, int load_c, {ct} *restrict c,",
           "        const char *pf_b, int64_t pf_b_bytes, const char *pf_a, int64_t pf_a_bytes)", "{",
           "    __asm__ volatile(\"\" ::: \"memory\");   /* the panels' stores before the tile loads */",
           "    if (calls <= 0)", "        return;",
           "    if (load_c) {"]
    out += [f"        _tile_loadd({creg[i][j]}, c + {16 * i * nr + 16 * j}, {nr * 4});"
            for i in range(mt) for j in range(nt)]
    out += ["    } else {"]
    out += [f"        _tile_zero({creg[i][j]});" for i in range(mt) for j in range(nt)]
    out += ["    }",
            "    const char *pb = pf_b;", "    const char *const pb_end = pf_b + pf_b_bytes;",
            "    const char *pfa = pf_a;", "    const char *const pfa_end = pf_a + pf_a_bytes;",
            "    for (int64_t q = 0; q < calls; ++q) {",
            f"        const {ca} *pa = a + q * a_step;",
            f"        const {cb} *pbk = b;",
            f"        {ct} *const cq = c + q * {mr * nr};",
            f"        {ct} *const cn = cq + {mr * nr};",
            "        const int more = q + 1 < calls;",
            "        const char *pfc = more ? (const char *)cn : (const char *)cq;",
            f"        const char *const pfc_end = more ? pfc + {mr * nr * 4} : pfc;",
            f"        for (int64_t k = {kg}; k < kc; k += {kg}) {{"]
    pf_l2 = _prefetch("pb", "pb_end", PF_B_LINES, 2) + _prefetch("pfa", "pfa_end", PF_B_LINES, 2)
    out += _indent(_prefetch("pfc", "pfc_end", 8, 3) + pf_l2 + _step(spec, "pa", "pbk"), 12)
    out += [f"            pa += {mr * kg};", f"            pbk += {kg * nr};", "        }",
            "        /* the last k step: each C tile out after its last product, the next in */"]
    out += _indent(pf_l2, 8)

    def out_next(i, j):
        off = 16 * i * nr + 16 * j
        return [f"_tile_stored({creg[i][j]}, cq + {off}, {nr * 4});",
                "if (more) {",
                f"    if (load_c) _tile_loadd({creg[i][j]}, cn + {off}, {nr * 4});",
                f"    else _tile_zero({creg[i][j]});",
                "}"]
    out += _indent(_step(spec, "pa", "pbk", out_next), 8)
    out += ["    }", "}",
            f"#define MK_UKERNEL_IRLOOP {sym}_irloop"]
    return out


def peak(isa: str, types: str = "bf16") -> str:
    """``double mk_fma_peak(int64_t iters, double *flops)``: four independent chains of the
    types' dot product on full 16 x 64-byte tiles (C in tmm0-3, A in tmm4-5, B in
    tmm6-7: C[i][j] += A_i B_j, the shape of amx_*_32x32), the TMUL's peak.
    2 operations per multiply-add: 16 x 16 x 32 x 2 per tdpbf16ps, 16 x 16 x 64 x 2 per
    int8 one. bf16 operands are 2^-7 and 2^-8 (the chains grow by 2^-10 per step)."""
    t = types if types in DP else "bf16"
    kg = K_GROUP[t]
    full = [(16, 64)] * 8
    fill = "0x3C003C00u" if t == "bf16" else "0x01020304u"
    fill_b = "0x3B803B80u" if t == "bf16" else "0x02010201u"
    out = [f"/* {DP[t][1:]} peak loop for amx ({t}): 4 independent C tiles. */",
           "#include <stdint.h>", "#include <time.h>", "#include <immintrin.h>"]
    out += _config_c("mk_amx_config_peak", full)
    out += ["double mk_fma_peak(int64_t iters, double *flops)", "{",
            "    static uint32_t ab[2][256] __attribute__((aligned(64)));",
            "    int32_t sink[256] __attribute__((aligned(64)));",
            f"    for (int i = 0; i < 256; ++i) {{ ab[0][i] = {fill}; ab[1][i] = {fill_b}; }}",
            "    mk_amx_config_peak();",
            "    __asm__ volatile(\"\" ::: \"memory\");",
            "    _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);",
            "    _tile_loadd(4, ab[0], 64); _tile_loadd(5, ab[0], 64);",
            "    _tile_loadd(6, ab[1], 64); _tile_loadd(7, ab[1], 64);",
            "    struct timespec t0, t1;", "    clock_gettime(CLOCK_MONOTONIC, &t0);",
            "    for (int64_t it = 0; it < iters; ++it) {",
            f"        {DP[t]}(0, 4, 6);", f"        {DP[t]}(1, 4, 7);",
            f"        {DP[t]}(2, 5, 6);", f"        {DP[t]}(3, 5, 7);",
            "    }", "    clock_gettime(CLOCK_MONOTONIC, &t1);",
            "    _tile_stored(0, sink, 64);", "    _tile_release();",
            "    volatile int32_t keep = sink[0]; (void)keep;",
            f"    *flops = {4.0 * 16 * 16 * kg * 2} * (double)iters;",
            "    return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);",
            "}"]
    return "\n".join(out) + "\n"
