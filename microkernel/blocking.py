"""Cache blocking (KC, MC, NC) from the analytical model.

Low, Igual, Smith and Quintana-Orti, "Analytical Modeling Is Enough for
High-Performance BLIS", ACM TOMS 43(2), 2016 (as reproduced in BLIS
kernels/armsve/3/bli_armsve_utils.c). With W ways, N sets, C-byte lines per level
and S = 4 bytes per fp32 element (typed panels: S_A and S_B bytes per element of the
packed A and B panels, :func:`model_blocking`):

* KC (L1): the B micro-panel (KC x NR) stays in L1 while A micro-panels stream:
  C_Ar = (W_L1 - 1) / (1 + NR/MR),  KC = C_Ar * N_L1 * C_L1 / (MR * S)
* MC (L2): the packed A block (MC x KC) fills the L2 ways not needed by B panels:
  C_Ac = W_L2' - 1 - ceil(2 * KC * NR * S / (C_L2 * N_L2)),
  MC = C_Ac * N_L2 * C_L2 / (KC * S), rounded down to a multiple of MR
* NC (L3): the packed B block (KC x NC) likewise in L3:
  C_Bc = W_L3 - 1 - ceil(2 * KC * MC * S / (C_L3 * N_L3)),
  NC = C_Bc * N_L3 * C_L3 / (KC * S), rounded down to a multiple of NR and capped at
  NC_CAP (the L3 is shared between cores; BLIS ships NC = 3072..4080 for x86).

Two refinements of the paper's rules, each measured on this project's machines
(``bench/blocking_grid.py``; docs/design-notes.md):

* C_Ar is not floored to whole ways: with NR/MR > 2 the floor halves KC (avx2_6x16 on a
  32 KiB 8-way L1: 170 instead of 325), and the C tile is then loaded and stored twice
  as often. KC is rounded down to a multiple of 16 instead.
* W_L2' = W_L2 / 2: only half of the L2 ways hold the A block; the rest is left to the
  C tiles, the B micro-panels on their way to L1 and the prefetchers' streams. With all
  W_L2 - 1 ways (MC = 576 for avx2_6x16 on a 512 KiB L2, with the floored KC = 170 of
  the time) gemm ran about 8% slower at n = 1536 than with half (MC = 102 at KC = 320).

Two empirical rules on top (measured, not derived; docs/design-notes.md):

* MC <= A_BLOCK_L1S * L1 bytes / (KC * S): the packed A block is at most twice the L1
  data cache. The L2 rule gives MC = 720 for avx512_8x32_u4 on Sapphire Rapids' 2 MiB
  L2 and 128 for avx2_4x24_u8 on Zen 3's 512 KiB. On Sapphire Rapids (a shared VM)
  MC of 64-120 ran faster than 720 at n = 1024 and 2048 in all eight runs (n = 1024:
  1.012 against 0.913 of numpy with the cap; n = 2000 went the other way in the three
  runs through gemm() that had it); on Zen 3 MC = 64 measured level with 128 through
  gemm() and 1-3% ahead in a C harness. The cap gives 88 and 64.
* One thread of an fp32 tile (``alone``): NC such that the packed B block (KC x NC x S)
  is at most L2_B_SHARE of the L2, where that still gives NC >= NC_L2_MIN; else the
  L3 rule. Alone, nothing else reads the core's L2, and a B block there is swept once
  per MC rows of A without going back to the L3. On Sapphire Rapids (2 MiB L2) the rule
  gives 1184 (two or four blocks of 1024 at n = 2048 / 4096, where the L3 rule gives
  one or two of 2048); NC = 1024 against the L3 rule's 4064 ran 4.8 [2.3, 7.7] % faster
  over n = 2048 and 4096 on one CPU (6 of 7 rounds each), and in nine races on five
  machines' hosts the rule was faster in three (1-5%), tied in six and slower in none
  (bench/results/sapphire-rapids/onethread/). Where the L2 is too small for 1024
  columns (Zen 3's 512 KiB, Zen 4's 1 MiB), A would be packed again every few hundred
  columns: there NC = 1008 and 504 measured slower than 4080 on the Zen 3, and the L3
  rule stays.
"""
from __future__ import annotations

import dataclasses
import math
import numbers

__all__ = ["Blocking", "model_blocking", "workspace_bound", "FALLBACK", "NC_CAP", "A_BLOCK_L1S",
           "WS_HUGE_MIN", "panel_bytes", "ELEMENT_BYTES", "L2_PANEL_ROW_BYTES", "TEAM_CHUNKS", "TEAM_PARTS",
           "TEAM_PARTS_MAX", "A_SLAB_MAX",
           "FLOW_BUFS", "CSTAT_B_L1", "CSTAT_A_L2", "CSTAT_ACC_L2", "CSTAT_MIN_K",
           "CSTAT_MAX_B", "cstat_b_bytes", "L2_B_SHARE", "NC_L2_MIN"]

S = 4          # bytes per fp32 element
NC_CAP = 4080  # columns
#: A packing workspace of at least this many bytes is whole 2 MiB transparent huge
#: pages (c_src/mk_workspace.h, MK_WS_HUGE_MIN)
WS_HUGE_MIN = 4 << 20
A_BLOCK_L1S = 2  # the packed A block (MC x KC) holds at most this many L1 data caches
#: One thread of an fp32 tile: the packed B block (KC x NC x 4 B) takes at most this
#: fraction of the L2 (the rest: the A block, the C tiles, the prefetchers' streams) ...
L2_B_SHARE = 0.625
#: ... where that leaves at least this many columns (fewer: A packed again too often);
#: see the module docstring and :func:`model_blocking` (``alone``)
NC_L2_MIN = 1024
#: Tile-register ISAs (AMX): bytes of one packed A row (KC x S_A) -- KC = 2048 bf16
#: elements, 4096 int8 ones. See :func:`model_blocking` (``l2_panels``).
L2_PANEL_ROW_BYTES = 4096
#: Tile-register ISAs at one thread (the C-stationary loops, c_src/mk_cstat.h): the B
#: micro-panel (KC x NR x S_B) is this fraction of the L1, so that L1 holds it across the
#: ir loop beside the A tiles and C tiles streaming past; the A sub-block (MC x KC x S_A)
#: 1 / CSTAT_A_L2 of the L2, the compact C tiles of an MC x NC block (MC x NC x 4 B)
#: 1 / CSTAT_ACC_L2 of it. See :func:`model_blocking` (``cstat``).
CSTAT_B_L1 = 3
CSTAT_A_L2 = 16
CSTAT_ACC_L2 = 2
#: ... for K of at least this many elements; below it the tile-register model's one KC
#: block and the BLIS loops (measured on the Sapphire Rapids host, 9 interleaved rounds
#: on two CPUs: at K = 1024 those 12-19% faster for bf16, 5-10% for s8s8 (one interval
#: crossing 0), at 512 4-6% (bf16); at 2048 the C-stationary blocking 6% (bf16) and 7-12%
#: (s8s8) faster; docs/design-notes.md)
CSTAT_MIN_K = 2048
#: ... and a whole packed B of at most this many bytes, the C driver's bound for those
#: loops (c_src/mk_cstat.h MK_CSTAT_MAX_B; a test reads it there): past it the driver
#: runs the BLIS loops, which the C-stationary blocking's small KC does not suit
CSTAT_MAX_B = 1 << 30
#: A team's dynamic units (c_src/mk_team.h, mk_loops_flow) per thread, taken from a shared
#: counter so that a thread on a slower core takes fewer. Measured on the 16-core
#: Sapphire Rapids host (docs/design-notes.md, threads: with TEAM_PARTS = 4, 2 units per
#: thread +6.9 [+5.7, +8.0] % over 8 at 16 threads on a calm host, a tie on a busy one;
#: 8 had won +11.8% over 4 chunks of whole rows on a busy one). C mains: MK_TEAM_CHUNKS.
TEAM_CHUNKS = 2
#: ... and the parts each B block's NR panels are split into, so that a unit is a chunk
#: of rows times a part of the block's columns (BLIS's jr ways, taken dynamically): the
#: units get smaller without shortening the ir loop over each B micro-panel. 0: the
#: driver picks the fewest parts, up to TEAM_PARTS_MAX, whose units still get MC rows
#: (c_src/mk_team.h, mk_team_parts; docs/design-notes.md, threads); C mains:
#: MK_TEAM_PARTS.
TEAM_PARTS = 0
#: ... the most parts the driver picks (C: MK_TEAM_PARTS_MAX)
TEAM_PARTS_MAX = 4
#: The most bytes of a thread's A slab: one KC block's rows of A packed once for every NC
#: block of a slice that spans two or more (c_src/mk_loops.h, mk_loops_slab; C:
#: MK_A_SLAB_MAX in mk_slices.h); past it each A block is packed once per NC block.
A_SLAB_MAX = 16 << 20
#: B blocks the team packs into in turn (c_src/mk_team.h, MK_FLOW_BUFS): a block's
#: packing overlaps the last units of the block before it without a barrier.
FLOW_BUFS = 3


@dataclasses.dataclass(frozen=True)
class Blocking:
    """KC, MC, NC in elements and the reason each was chosen; ``chunks``: how a team of
    threads shares each block of C (> 0: dynamic units, about that many per thread; 0:
    a fixed share of rows each); ``parts``: the dynamic units split each B block's NR
    panels into this many parts (1: a unit is a chunk of whole rows; 0: the fewest, up to
    TEAM_PARTS_MAX, that give each unit MC rows)."""
    kc: int
    mc: int
    nc: int
    why: tuple[str, ...] = ()
    chunks: int = TEAM_CHUNKS
    parts: int = TEAM_PARTS

    def replace(self, **kw) -> "Blocking":
        """A copy with some of kc/mc/nc/chunks/parts overridden (None keeps the model's
        value; numpy integers are taken). Raises ValueError for an unknown key (naming
        the valid ones), kc/mc/nc < 1, chunks/parts < 0, or a value of 2^31 or more."""
        kw = {k: v for k, v in kw.items() if v is not None}
        valid = ("kc", "mc", "nc", "chunks", "parts")
        for k, v in kw.items():
            if k not in valid:
                raise ValueError(f"blocking has no {k!r}; valid keys: {', '.join(valid)}")
            low = 0 if k in ("chunks", "parts") else 1   # kc, mc, nc: >= 1
            if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < low:
                what = "a non-negative" if low == 0 else "a positive"
                raise ValueError(f"blocking {k} must be {what} integer, got {v!r}")
            if v >= 1 << 31:
                raise ValueError(f"blocking {k} must be below 2^31, got {v}")
        kw = {k: int(v) for k, v in kw.items()}
        why = self.why + tuple(f"{k.upper()}={v} overridden" for k, v in kw.items())
        return dataclasses.replace(self, why=why, **kw)


FALLBACK = Blocking(256, 120, 4080, ("caches unknown: BLIS-like defaults",))


def _bytes(cache) -> int:
    """Bytes of a cache level as the model counts them: ways x sets x line bytes."""
    return cache.ways * cache.sets * cache.line_bytes


def _round_down(x: int, to: int) -> int:
    return max(to, x // to * to)


#: bytes of the C element types of packed panels (codegen.PanelLayout.ta / .tb)
ELEMENT_BYTES = {"float": 4, "int32_t": 4, "uint32_t": 4, "int16_t": 2, "uint16_t": 2,
                 "int8_t": 1, "uint8_t": 1}


def cstat_b_bytes(spec, n: int, k: int) -> int:
    """Bytes of the whole packed B (k x n) of ``spec``'s module in the C-stationary loops
    (c_src/mk_cstat.h ``mk_cstat_bytes``: n rounded up to NR, k to the K group
    ``max(ga, gb)``, the packing slack, 64-byte rounding), without the trailer that
    VNNI modules with column sums add per KC block (no AMX module has one)."""
    from .codegen import layout
    lay = layout(spec)
    g = max(lay.ga, lay.gb)
    elems = -(-n // spec.nr) * spec.nr * (-(-k // g) * g) + 8      # MK_PACK_SLACK
    return -(-elems * ELEMENT_BYTES[lay.tb] // 64) * 64


def panel_bytes(spec) -> tuple[int, int]:
    """(bytes per element of the packed A panel, of the packed B panel) of ``spec``'s
    module: 4 for fp32 and the widening tiles, 2 for bf16 / fp16 panels, 1 for int8
    ones (AMX, VNNI), 2 for the int16 pairs of the vpmaddwd tiles."""
    from .codegen import layout
    lay = layout(spec)
    return ELEMENT_BYTES[lay.ta], ELEMENT_BYTES[lay.tb]


def workspace_bound(spec, blk: Blocking, m: int, n: int, k: int, threads: int = 1,
                    c_stationary: bool = False) -> int:
    """Bytes of packing workspace one gemm() call of m x n x k with ``spec``'s module
    and blocking ``blk`` may hold (c_src/mk_slices.h ``mk_run_slices``, mk_team.h
    ``mk_run_team``, mk_cstat.h ``mk_cstat_bytes``): per thread an A block (MC x KC) and
    a B block (KC x (NC + NR)) and an edge tile, or, for a module whose driver takes
    the C-stationary loops (``c_stationary``: MK_C_STATIONARY, at one thread when K
    spans several KC blocks), the whole packed B (K x N), an A row block (MC x K) and
    the tiles of one MC x NC block of C; a thread whose slice spans two NC blocks or
    more also an A slab (m x KC, at most :data:`A_SLAB_MAX` bytes); a team of threads
    shares :data:`FLOW_BUFS` B blocks; each padded up to whole panels and K groups,
    and a buffer of at least
    :data:`WS_HUGE_MIN` bytes up to whole 2 MiB huge pages. A module that defines
    MK_B_COLSUM (``PanelLayout.colsum_b``: the s8s8 / u8u8 VNNI tiles) packs one K group
    more per KC block (driver.c, MK_KCP; mk_cstat.h, mk_cstat_kp)."""
    from .codegen import layout
    sa, sb = panel_bytes(spec)
    lay = layout(spec)
    trailer = max(lay.ga, lay.gb) if lay.colsum_b else 0
    def up(x, to):
        return -(-x // to) * to
    def pages(x):
        return up(x, 2 << 20) if x >= WS_HUGE_MIN else x
    # K groups: at most 64 elements; the trailer once per KC block (at most ceil(k / kc))
    kp = up(k, 64) + -(-k // blk.kc) * trailer
    if c_stationary and threads == 1 and k > blk.kc:
        return pages(up(n, spec.nr) * kp * sb + up(blk.mc, spec.mr) * kp * sa
                     + up(blk.mc, spec.mr) * up(blk.nc, spec.nr) * 4 + 3 * 64 + 8 * 4)
    kcp = up(blk.kc, 64) + trailer
    b_block = kcp * (blk.nc + spec.nr) * sb
    per = up(blk.mc, spec.mr) * kcp * sa + b_block + 2 * (spec.mr * spec.nr * 4 + 48 * 4)
    # the slices' A slab (mk_slices.h): the driver takes one of at most A_SLAB_MAX bytes
    # where a slice spans two NC blocks or more
    slab = min(up(m, spec.mr) * kcp * sa + 8 * 4 + 64, A_SLAB_MAX) if n > spec.nr else 0
    # one buffer per thread (slices), or one for the team with its MK_FLOW_BUFS = 3 B
    # blocks (the flow of dynamic units) and an A block per thread
    return max(threads * pages(per + slab), pages(threads * per + (FLOW_BUFS - 1) * b_block))


def model_blocking(mr: int, nr: int, caches, a_bytes: int = S, b_bytes: int = S,
                   l2_panels: bool = False, cstat: bool = False,
                   alone: bool = False) -> Blocking:
    """Blocking for an MR x NR tile from ``caches`` (probe.Cache objects with
    level, type, ways, sets, line_bytes). Falls back to :data:`FALLBACK` for any
    level the probe could not read.

    ``a_bytes`` / ``b_bytes``: bytes per element of the packed A and B panels (default
    fp32's 4). The model is the same with S_A and S_B in place of S: the B micro-panel
    takes KC x NR x S_B bytes of L1 against the A micro-panel's MR x KC x S_A, so
    C_Ar = (W_L1 - 1) / (1 + NR S_B / (MR S_A)) and KC = C_Ar N_L1 C_L1 / (MR S_A); MC
    from the A block's MC x KC x S_A (and the 2 x L1 cap), NC from the B block's
    KC x NC x S_B. Halving the element size doubles KC for the same bytes in L1: a bf16
    AMX tile of 32 x 32 gets KC = 352 where an fp32 one would get 176, so the C tiles'
    load and store are spread over twice the K.

    ``l2_panels`` (the AMX tiles: ``tileloadd`` reads the micro-panels into tile
    registers, 16 rows of 64 bytes, so the register-to-L1 reasoning above does not
    apply): KC = :data:`L2_PANEL_ROW_BYTES` / S_A (2048 bf16, 4096 int8) and the A block
    half of the L2 (MC = L2 / 2 / (KC x S_A): 256 on a 2 MiB L2); NC from the L3 as
    above. Every pass over K loads and stores all of C once more, from memory at these
    sizes, and the TMUL makes that traffic the larger cost: KC is as deep as the L2
    holds an A block of a few micro-panels. Measured on the 2-core Xeon
    (bench/results/xeon-2c/amx/, one thread, 7 interleaved rounds), this blocking with
    the micro-kernel's C prefetch (:mod:`microkernel.codegen.amx`) against KC = 1024 /
    2048, MC = 512 without it: bf16 +0.7% [-6.5, +1.6] / +17.8 [+13.4, +19.2] / +23.5
    [+23.2, +24.6] at n = 1024 / 2048 / 4096, s8s8 +13.7 [-0.7, +21.0] / +10.5 [+9.5,
    +15.2] / +23.9 [+23.1, +24.6], u8s8 +8.2 / +14.6 / +24.1. (On the Sapphire Rapids
    host KC = 1024, MC = 512 had beaten the L1 model's KC = 352, MC = 128: 799 against
    545 GFLOP/s at n = 4096,
    bench/results/sapphire-rapids/types/).

    ``cstat`` (with ``l2_panels``; ``gemm()`` at one thread, whose AMX calls take the
    C-stationary loops of c_src/mk_cstat.h with the whole-ir-loop micro-kernel): KC such
    that the B micro-panel is 1 / :data:`CSTAT_B_L1` of the L1 (16 KiB: KC = 256 bf16,
    512 int8 for NR = 32 on a 48 KiB L1), so that L1 keeps it across the ir loop; MC
    from an A sub-block of 1 / :data:`CSTAT_A_L2` of the L2 (256 on 2 MiB); NC from the
    compact C tiles of an MC x NC block, 4-byte fp32 / int32, in 1 / :data:`CSTAT_ACC_L2`
    of it (1024). Then the tile loads ask the L2 for A's panel and the C tiles' round
    trip per call rather than for both panels (bench/amx_roofline.py: that ir loop at
    69-73% of the tdpbf16ps peak against 58-60% at KC = 2048). Measured on the Sapphire
    Rapids host (bench/results/sapphire-rapids/amx_irloop/, 11 interleaved rounds over n
    = 2048 and 4096, against KC = 2048, MC = 256 with one call per tile): +7.3% [+3.9,
    +11.5] on CPU 13, +6.8 [-2.9, +11.1] and +4.8 [-0.9, +9.7] % on CPUs 9 and 5; MC =
    NC = 512 +4.9 to +6.0%, a tie with it.

    ``alone`` (without ``l2_panels``; gemm() of an fp32 tile at one thread): NC such that
    the B block (KC x NC x S_B) is at most :data:`L2_B_SHARE` of the L2 when that is at
    least :data:`NC_L2_MIN` columns (and below the L3 rule's), else the L3 rule's NC.
    1184 for an 8 x 32 fp32 tile on a 2 MiB L2 (KC = 272); the measurement is in the
    module docstring."""
    sa, sb = a_bytes, b_bytes
    def level(n):
        for c in caches:
            if c.level == n and c.type in ("Data", "Unified") and c.ways and c.sets and c.line_bytes:
                return c
        return None
    l1, l2, l3 = level(1), level(2), level(3)
    if l1 is None:
        return FALLBACK
    why = []
    if l2_panels and l2 is not None and cstat:
        l1_bytes = _bytes(l1)
        l2_bytes = _bytes(l2)
        kc = max(64 // sa, l1_bytes // CSTAT_B_L1 // (nr * sb) // (64 // sa) * (64 // sa))
        mc = max(mr, _round_down(l2_bytes // CSTAT_A_L2 // (kc * sa), mr))
        nc = max(nr, _round_down(l2_bytes // CSTAT_ACC_L2 // (mc * 4), nr))
        why += [f"KC={kc}: one thread, C-stationary loops: the B micro-panel (KC x NR x {sb} B) "
                f"is 1/{CSTAT_B_L1} of the {l1_bytes // 1024} KiB L1 (in whole 64-byte rows "
                f"of K)",
                f"MC={mc}: the A sub-block (MC x KC x {sa} B) is 1/{CSTAT_A_L2} of the "
                f"{l2_bytes // 1024} KiB L2",
                f"NC={nc}: the compact C tiles of an MC x NC block (4 B each) are "
                f"1/{CSTAT_ACC_L2} of the L2"]
        return Blocking(kc, mc, nc, tuple(why))
    if l2_panels and l2 is not None:
        kc = max(16, L2_PANEL_ROW_BYTES // sa // 16 * 16)
        l2_bytes = _bytes(l2)
        mc = max(mr, _round_down(l2_bytes // 2 // (kc * sa), mr))
        why.append(f"KC={kc}: tile registers (AMX) load the micro-panels from L2: "
                   f"{L2_PANEL_ROW_BYTES} B of an A row ({sa} B elements)")
        why.append(f"MC={mc}: the A block (MC x KC x {sa} B) is half the "
                   f"{l2_bytes // 1024} KiB L2")
        return _with_nc(kc, mc, nr, sa, sb, l3, why)
    c_ar = (l1.ways - 1) / (1 + nr * sb / (mr * sa))
    kc = max(16, int(c_ar * l1.sets * l1.line_bytes / (mr * sa)) // 16 * 16)
    why.append(f"KC={kc}: L1 {l1.ways}-way x {l1.sets} sets x {l1.line_bytes} B, "
               f"C_Ar={c_ar:.2f} ways hold the A micro-panel, {c_ar * nr * sb / (mr * sa):.2f} "
               f"the B micro-panel" + ("" if (sa, sb) == (S, S) else
                                       f" (panel elements of {sa} and {sb} bytes)"))
    if l2 is None:
        mc, rule, reason = FALLBACK.mc, "the default", "no L2 data, default"
    else:
        c_ac = max(1, l2.ways // 2 - 1 - math.ceil(2 * kc * nr * sb / (l2.line_bytes * l2.sets)))
        mc = _round_down(c_ac * l2.sets * l2.line_bytes // (kc * sa), mr)
        rule = "the L2 rule"
        reason = (f"L2 {l2.ways}-way x {l2.sets} sets, C_Ac={c_ac} of the "
                  f"{l2.ways // 2} ways given to the A block")
    l1_bytes = _bytes(l1)
    cap = _round_down(A_BLOCK_L1S * l1_bytes // (kc * sa), mr)
    if cap < mc:
        reason = (f"{rule} gives {mc} ({reason}); capped so that the A block "
                  f"(MC x KC x {sa} B) is at most {A_BLOCK_L1S} x L1 = "
                  f"{A_BLOCK_L1S * l1_bytes // 1024} KiB")
        mc = cap
    why.append(f"MC={mc}: {reason}")
    return _with_nc(kc, mc, nr, sa, sb, l3, why, l2 if alone else None)


def _with_nc(kc, mc, nr, sa, sb, l3, why, l2=None) -> Blocking:
    """NC from the L3 (the B block KC x NC x S_B beside two A blocks), capped at NC_CAP;
    with ``l2`` (one thread), from that L2 instead where it holds a B block of at least
    NC_L2_MIN columns in L2_B_SHARE of its bytes."""
    if l3 is None:
        nc = _round_down(FALLBACK.nc, nr)
        why.append(f"NC={nc}: no L3 data, default")
    else:
        c_bc = max(1, l3.ways - 1 - math.ceil(2 * kc * mc * sa / (l3.line_bytes * l3.sets)))
        nc_model = c_bc * l3.sets * l3.line_bytes // (kc * sb)
        nc = _round_down(min(nc_model, NC_CAP), nr)
        why.append(f"NC={nc}: L3 {l3.ways}-way x {l3.sets} sets gives {nc_model}"
                   + (f", capped at {NC_CAP}" if nc_model > NC_CAP else "")
                   + (f", rounded down to a multiple of NR={nr}" if nc % nr == 0
                      and nc != min(nc_model, NC_CAP) else ""))
    if l2 is not None:
        l2_bytes = _bytes(l2)
        nc_l2 = _round_down(int(L2_B_SHARE * l2_bytes) // (kc * sb), nr)
        if NC_L2_MIN <= nc_l2 < nc:
            why[-1] = (f"NC={nc_l2}: one thread: the B block (KC x NC x {sb} B) in "
                       f"{L2_B_SHARE:g} of the {l2_bytes // 1024} KiB L2 (the L3 rule: {nc})")
            nc = nc_l2
    return Blocking(kc, mc, nc, tuple(why))
