"""What the AMX bf16 register tile can reach on this core when its panels come from L1,
L2 or L3, against the tdpbf16ps peak loop and gemm() in the same rounds (issue 21).

Issue 21 asks gemm() for 50% of the peak loop at n = 4096. This script measures the
ceiling that the 2 x 2 tile (`amx_bf16_32x32`: 4 C, 2 A and 2 B tile registers, all 8)
leaves below that peak, with the micro-kernel's own k loop and nothing else: no
packing, no C traffic, no driver loops. Contenders, one shape, timed in interleaved
rounds pinned to one CPU (:class:`microkernel.timing.Rounds`):

* ``peak``: the peak loop of the kernel module (``mk_fma_peak``: 4 independent
  tdpbf16ps on tiles loaded once, constant operands); ``peak random``: the same loop
  here with A and B tiles of random bf16 (whether the operands' values move the peak);
* ``loop L1`` / ``loop L2`` / ``loop L3``: the micro-kernel's k step (load A0, B0;
  C00 += A0 B0; load B1; C01; load A1; C10; C11: the order of
  :mod:`microkernel.codegen.amx`) over packed A and B panels that cycle through
  buffers of 16 KiB / 512 KiB / 32 MiB each (the B tile rows 128 bytes apart, as in
  the packed B micro-panel of NR = 32); ``loop A L2 B L1`` and ``loop A L1 B L2`` mix
  them (1 MiB and 16 KiB); ``loop A 256K B 128K`` ... ``loop A 1.5M B 128K``: a B buffer
  of one B micro-panel at gemm()'s KC = 2048 against A blocks of MC = 64 ... 384 rows;
* ``loop L2 split rows``: ``loop L2`` with both buffers 16 bytes past a line boundary, so
  that every 64-byte tile row spans two lines (what a buffer of numpy's 16-byte alignment
  does);
* ``ir loop ...`` (:data:`IRLOOPS`): gemm()'s ir loop without the driver: calls of 64 k
  steps (KC = 2048), A micro-panels from a 1 MiB block (MC = 256), each B micro-panel
  reused by the block's 8 calls. The C tiles: ``ir loop`` keeps them in the tile
  registers; ``+ C`` loads and stores its 4 compact C tiles every call (the C-stationary
  loops after their first KC block), ``+ C stores`` zeroes and stores them (a first KC
  block), ``+ C zero`` only zeroes them, ``+ C store only`` only stores them, ``+ C in
  L1`` loads and stores one 4 KiB slot, ``+ C early`` stores each tile right after its
  last product in a peeled last step, ``+ C early next`` also loads the next call's
  tile into that register there, ``+ C lag`` stores each tile one product later (the
  last one in the next call's first k step); ``KC 4096 + C stores``: calls of 128 k
  steps (A block of 4 micro-panels, MC = 128), C zeroed and stored;
* ``ir KC 256 ...`` / ``ir KC 384 ...`` (:data:`IRSMALL`): the ir loop at a KC whose B
  micro-panel (16 / 24 KiB) L1 can hold across the ir loop, A blocks of MC = 1024 rows,
  8 B micro-panels, C tiles of a 1 MiB buffer (MC = 1024 x NC = 256) loaded and stored
  every call (``+ C``, ``+ C early next``, ``+ C lag``);
* ``... compact B`` (the loops of :data:`COMPACT_TOO`): each B tile 1 KiB with rows 64
  bytes apart, as A's, instead of the two B tiles of a k step interleaved in rows of 128
  bytes (the packed B micro-panel of NR = 32);
* ``loads L1`` / ``loads L2``: the same 4 tile loads per step without the products
  (bandwidth of the tile loads alone; 4 KiB per step);
* ``gemm 2048`` / ``gemm 4096``: gemm() with ``amx_bf16_32x32``, one thread (with
  ``--blocking``, also with those overrides of the model's blocking: ``gemm 4096 mc=128``).

Per contender: GFLOP/s (the loads: GB/s) and % of ``peak`` paired by round
(:func:`microkernel.bench.paired_pct_peak`), with 95% bootstrap intervals; for the
loads also bytes per cycle of the peak loop's clock (its rate over 1024 flops per
cycle: 16 x 16 x 32 x 2 per tdpbf16ps every 16 cycles). That is an estimate: a loop of
loads alone need not run at the clock the TMUL loop runs at (on the calm host the L1
loads read 139 such bytes per cycle, more than two 64-byte loads a cycle), so the
GB/s are the figure to compare.

    python bench/amx_roofline.py [--cpus 9] [--rounds 9] [--sizes 2048,4096]
                                 [--blocking "mc=128;kc=4096,mc=128"]
                                 [--only "ir KC,gemm"] [--json PATH]

Exits 2 with a message where the probe does not clear AMX. Nothing is asserted: this
script measures and reports.
"""
import argparse
import os
import sys

KERNEL = "amx_bf16_32x32"
KIB = 1024
#: (name, A buffer bytes, B buffer bytes): where the k loop's panels live
LOOPS = (("loop L1", 16 * KIB, 16 * KIB), ("loop L2", 512 * KIB, 512 * KIB),
         ("loop A L2 B L1", 1024 * KIB, 16 * KIB), ("loop A L1 B L2", 16 * KIB, 1024 * KIB),
         ("loop L3", 32 * KIB * KIB, 32 * KIB * KIB),
         # gemm()'s case: one B micro-panel of KC = 2048 (128 KiB) against A blocks of
         # MC = 64 ... 384 rows (256 KiB ... 1.5 MiB; the default MC = 256 is 1 MiB)
         ("loop A 256K B 128K", 256 * KIB, 128 * KIB), ("loop A 512K B 128K", 512 * KIB, 128 * KIB),
         ("loop A 1M B 128K", 1024 * KIB, 128 * KIB), ("loop A 1.5M B 128K", 1536 * KIB, 128 * KIB),
         ("loop A 512K B 16K", 512 * KIB, 16 * KIB))
LOADS = (("loads L1", 16 * KIB, 16 * KIB), ("loads L2", 512 * KIB, 512 * KIB))
#: loops also timed with each B tile compact (1 KiB, rows 64 bytes apart, as A's)
COMPACT_TOO = ("loop L2", "loop A L1 B L2", "loop A 1M B 128K")
STEPS = 50_000           # k steps per call of a loop: 3.3 Gflop
#: the ir loop: KC = 2048 (64 k steps), an A block of MC = 256 rows (1 MiB), B micro-panels
#: of 8 jr steps (1 MiB), C tiles of 8 x 8 calls (256 KiB)
IR_KC_STEPS, IR_A, IR_B, IR_C = 64, 1024 * KIB, 1024 * KIB, 256 * KIB
LOAD, ZERO, STORE, EARLY, NEXT, LAG = 1, 2, 4, 8, 16, 32     # rf_irloop's modes (SOURCE)
#: (name, k steps per call, mode, bytes of C slots) of the ir loops at gemm()'s KC = 2048
IRLOOPS = (("ir loop", IR_KC_STEPS, 0, IR_C),
           ("ir loop + C", IR_KC_STEPS, LOAD | STORE, IR_C),
           ("ir loop + C stores", IR_KC_STEPS, ZERO | STORE, IR_C),
           ("ir loop + C zero", IR_KC_STEPS, ZERO, IR_C),
           ("ir loop + C store only", IR_KC_STEPS, STORE, IR_C),
           ("ir loop + C in L1", IR_KC_STEPS, LOAD | STORE, 4 * KIB),
           ("ir loop + C early", IR_KC_STEPS, LOAD | EARLY, IR_C),
           ("ir loop + C early next", IR_KC_STEPS, LOAD | EARLY | NEXT, IR_C),
           ("ir loop + C lag", IR_KC_STEPS, LOAD | EARLY | NEXT | LAG, IR_C),
           ("ir loop KC 4096 + C stores", 2 * IR_KC_STEPS, ZERO | STORE, IR_C))
#: (name, k steps per call, mode, A block, B buffer, C slots) of ir loops at a small KC,
#: whose B micro-panel (k steps x 2 KiB) L1 can hold across the ir loop ("loop A 512K B
#: 16K" reaches the peak) while the C tiles (a buffer of MC x NC fp32: 1 MiB at MC =
#: 1024, NC = 256) make a round trip every call: KC = 256 (8 k steps) and 384 (12), MC =
#: 1024 (32 micro-panels of A), 8 B micro-panels (NC = 256)
IRSMALL = tuple((f"ir KC {32 * st}{label}", st, mode, 32 * st * 2 * KIB, 8 * st * 2 * KIB, 1024 * KIB)
                for st in (8, 12)
                for label, mode in ((" + C", LOAD | STORE), (" + C early next", LOAD | EARLY | NEXT),
                                    (" + C lag", LOAD | EARLY | NEXT | LAG)))
PEAK_ITERS = 50_000      # iterations of the random-operand peak loop per call

CDEF = """
double rf_peak(int64_t iters, const void *a, const void *b);
double rf_loop(int64_t steps, const char *a, int64_t a_bytes, const char *b, int64_t b_bytes,
               int compact_b);
double rf_loads(int64_t steps, const char *a, int64_t a_bytes, const char *b, int64_t b_bytes);
double rf_irloop(int64_t calls, int64_t kc_steps, const char *a, int64_t a_bytes,
                 const char *b, int64_t b_bytes, float *c, int64_t c_bytes, int mode);
"""

SOURCE = r"""
#include <stdint.h>
#include <time.h>
#include <immintrin.h>

/* palette 1, tmm0-7 all 16 rows x 64 bytes (SDM vol. 1, ch. 18; LDTILECFG's layout) */
static void rf_config(void)
{
    static const struct { uint8_t palette, start_row, reserved[14];
                          uint16_t colsb[16]; uint8_t rows[16]; }
        cfg __attribute__((aligned(64))) = {1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64},
                                            {16, 16, 16, 16, 16, 16, 16, 16}};
    _tile_loadconfig(&cfg);
}

static double rf_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void rf_sink(void)
{
    static float sink[256] __attribute__((aligned(64)));
    _tile_stored(0, sink, 64);
    _tile_release();
    volatile float keep = sink[0]; (void)keep;
}

/* 4 independent tdpbf16ps on A and B tiles loaded once from a and b (2 KiB each) */
double rf_peak(int64_t iters, const void *a, const void *b)
{
    rf_config();
    __asm__ volatile("" ::: "memory");
    _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
    _tile_loadd(4, a, 64); _tile_loadd(5, (const char *)a + 1024, 64);
    _tile_loadd(6, b, 64); _tile_loadd(7, (const char *)b + 1024, 64);
    double t0 = rf_now();
    for (int64_t i = 0; i < iters; ++i) {
        _tile_dpbf16ps(0, 4, 6); _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6); _tile_dpbf16ps(3, 5, 7);
    }
    double t1 = rf_now();
    rf_sink();
    return t1 - t0;
}

/* amx_bf16_32x32's k step (the order of microkernel/codegen/amx.py): A0 at pa, A1 at
   pa + 1 KiB (rows of 64 bytes), B0 at pb, B1 at pb + b1 (rows bs bytes apart) */
#define RF_STEP(pa, pb, b1, bs)                                                          \
    _tile_loadd(4, pa, 64);                                                              \
    _tile_loadd(6, pb, bs);                                                              \
    _tile_dpbf16ps(0, 4, 6);                                                             \
    _tile_loadd(7, (pb) + (b1), bs);                                                     \
    _tile_dpbf16ps(1, 4, 7);                                                             \
    _tile_loadd(5, (pa) + 1024, 64);                                                     \
    _tile_dpbf16ps(2, 5, 6);                                                             \
    _tile_dpbf16ps(3, 5, 7)

/* amx_bf16_32x32's k step over panels cycling through a (a_bytes) and b (b_bytes),
   both multiples of 2 KiB: A0 at +0 and A1 at +1 KiB (rows of 64 bytes), B0 at +0 and
   B1 at +64 bytes (rows 128 bytes apart), 2 KiB of each per step; C stays in tmm0-3 */
double rf_loop(int64_t steps, const char *a, int64_t a_bytes, const char *b, int64_t b_bytes,
               int compact_b)
{
    /* compact_b: B1 at +1 KiB with rows 64 bytes apart (each B tile 1 KiB contiguous, as
       A's), instead of B0 / B1 interleaved in rows of 128 bytes */
    const int64_t b1 = compact_b ? 1024 : 64, bs = compact_b ? 64 : 128;
    rf_config();
    __asm__ volatile("" ::: "memory");
    _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
    int64_t ia = 0, ib = 0;
    double t0 = rf_now();
    for (int64_t s = 0; s < steps; ++s) {
        const char *pa = a + ia, *pb = b + ib;
        RF_STEP(pa, pb, b1, bs);
        ia += 2048; if (ia == a_bytes) ia = 0;
        ib += 2048; if (ib == b_bytes) ib = 0;
    }
    double t1 = rf_now();
    rf_sink();
    return t1 - t0;
}

/* gemm()'s ir loop without the driver: calls of kc_steps k steps each, the A micro-panel
   of call ir from a block of a_bytes (MC / 32 panels of kc_steps * 2 KiB), the B
   micro-panel of step jr from b_bytes, reused by the MC / 32 calls of the ir loop. The
   C tiles (4 KiB per call, compact, the next slot of c's c_bytes each call) per `mode`:
   RF_LOAD loads them at the call's start (the C-stationary loops after their first KC
   block), RF_ZERO zeroes them (a first KC block), RF_STORE stores them at its end;
   RF_EARLY peels the last k step and stores each C tile right after its last product;
   RF_NEXT (with RF_EARLY and RF_LOAD) then loads the next call's C tile into the same
   register at once, so that the next call starts on loaded tiles; RF_LAG (with those)
   stores each tile one product later, the last (C11) in the next call's first step
   (the TMUL need not wait for a product's result before its next product). mode 0: C
   never leaves the tile registers. */
enum { RF_LOAD = 1, RF_ZERO = 2, RF_STORE = 4, RF_EARLY = 8, RF_NEXT = 16, RF_LAG = 32 };
double rf_irloop(int64_t calls, int64_t kc_steps, const char *a, int64_t a_bytes,
                 const char *b, int64_t b_bytes, float *c, int64_t c_bytes, int mode)
{
    rf_config();
    __asm__ volatile("" ::: "memory");
    const int64_t panel = kc_steps * 2048, nir = a_bytes / panel, njr = b_bytes / panel;
    const int64_t slots = c_bytes / 4096;
    int64_t ir = 0, jr = 0, slot = 0;
    float *lag = c;
    _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
    if (mode & RF_NEXT) {
        _tile_loadd(0, c, 64); _tile_loadd(1, c + 256, 64);
        _tile_loadd(2, c + 512, 64); _tile_loadd(3, c + 768, 64);
    }
    double t0 = rf_now();
    for (int64_t call = 0; call < calls; ++call) {
        const char *pa = a + ir * panel, *pb = b + jr * panel;
        float *pc = c + slot * 1024;
        if (++slot == slots)
            slot = 0;
        float *pn = c + slot * 1024;                 /* the next call's C tiles */
        if ((mode & RF_LOAD) && !(mode & RF_NEXT)) {
            _tile_loadd(0, pc, 64); _tile_loadd(1, pc + 256, 64);
            _tile_loadd(2, pc + 512, 64); _tile_loadd(3, pc + 768, 64);
        } else if (mode & RF_ZERO) {
            _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
        }
        const int64_t body = (mode & RF_EARLY) ? kc_steps - 1 : kc_steps;
        int64_t s0 = 0;
        if ((mode & RF_LAG) && call > 0) {           /* the last tile of the last call out */
            _tile_loadd(4, pa, 64);
            _tile_loadd(6, pb, 128);
            _tile_dpbf16ps(0, 4, 6);
            _tile_loadd(7, pb + 64, 128);
            _tile_dpbf16ps(1, 4, 7);
            _tile_loadd(5, pa + 1024, 64);
            _tile_dpbf16ps(2, 5, 6);
            _tile_stored(3, lag + 768, 64);
            _tile_loadd(3, pc + 768, 64);
            _tile_dpbf16ps(3, 5, 7);
            pa += 2048;
            pb += 2048;
            s0 = 1;
        }
        for (int64_t s = s0; s < body; ++s) {
            RF_STEP(pa, pb, 64, 128);
            pa += 2048;
            pb += 2048;
        }
        if (mode & RF_LAG) {          /* each C tile out one product after its last */
            _tile_loadd(4, pa, 64);
            _tile_loadd(6, pb, 128);
            _tile_dpbf16ps(0, 4, 6);
            _tile_loadd(7, pb + 64, 128);
            _tile_dpbf16ps(1, 4, 7);
            _tile_stored(0, pc, 64);
            _tile_loadd(0, pn, 64);
            _tile_loadd(5, pa + 1024, 64);
            _tile_dpbf16ps(2, 5, 6);
            _tile_stored(1, pc + 256, 64);
            _tile_loadd(1, pn + 256, 64);
            _tile_dpbf16ps(3, 5, 7);
            _tile_stored(2, pc + 512, 64);
            _tile_loadd(2, pn + 512, 64);
            lag = pc;                   /* C11 goes out in the next call's first step */
        } else if (mode & RF_EARLY) {                /* the last step, C out as it ends */
            _tile_loadd(4, pa, 64);
            _tile_loadd(6, pb, 128);
            _tile_dpbf16ps(0, 4, 6);
            _tile_stored(0, pc, 64);
            if (mode & RF_NEXT)
                _tile_loadd(0, pn, 64);
            _tile_loadd(7, pb + 64, 128);
            _tile_dpbf16ps(1, 4, 7);
            _tile_stored(1, pc + 256, 64);
            if (mode & RF_NEXT)
                _tile_loadd(1, pn + 256, 64);
            _tile_loadd(5, pa + 1024, 64);
            _tile_dpbf16ps(2, 5, 6);
            _tile_stored(2, pc + 512, 64);
            if (mode & RF_NEXT)
                _tile_loadd(2, pn + 512, 64);
            _tile_dpbf16ps(3, 5, 7);
            _tile_stored(3, pc + 768, 64);
            if (mode & RF_NEXT)
                _tile_loadd(3, pn + 768, 64);
        } else if (mode & RF_STORE) {
            _tile_stored(0, pc, 64); _tile_stored(1, pc + 256, 64);
            _tile_stored(2, pc + 512, 64); _tile_stored(3, pc + 768, 64);
        }
        if (++ir == nir) {
            ir = 0;
            if (++jr == njr)
                jr = 0;
        }
    }
    double t1 = rf_now();
    if (mode & RF_LAG)
        _tile_stored(3, lag + 768, 64);
    rf_sink();
    return t1 - t0;
}

/* the same tile loads, no products */
double rf_loads(int64_t steps, const char *a, int64_t a_bytes, const char *b, int64_t b_bytes)
{
    rf_config();
    __asm__ volatile("" ::: "memory");
    _tile_zero(0);
    int64_t ia = 0, ib = 0;
    double t0 = rf_now();
    for (int64_t s = 0; s < steps; ++s) {
        const char *pa = a + ia, *pb = b + ib;
        _tile_loadd(4, pa, 64);
        _tile_loadd(6, pb, 128);
        _tile_loadd(7, pb + 64, 128);
        _tile_loadd(5, pa + 1024, 64);
        ia += 2048; if (ia == a_bytes) ia = 0;
        ib += 2048; if (ib == b_bytes) ib = 0;
    }
    double t1 = rf_now();
    rf_sink();
    return t1 - t0;
}
"""

#: flops of one tdpbf16ps: 16 x 16 outputs x 32 products x 2
TDP_FLOPS = 16 * 16 * 32 * 2
#: flops per cycle of the TMUL at its peak (one tdpbf16ps per 16 cycles)
PEAK_FLOPS_PER_CYCLE = TDP_FLOPS // 16


def _check_sizes() -> None:
    """The C loops wrap a buffer when a 2 KiB step reaches its end exactly, and the ir
    loop needs at least one micro-panel per buffer: sizes that break either would read
    past a buffer, so they stop here."""
    for name, ab, bb in LOOPS + LOADS:
        assert ab % 2048 == 0 and bb % 2048 == 0, f"{name}: buffers of whole 2 KiB steps"
    for name, steps, _mode, ab, bb, cb in _irloops():
        assert ab >= steps * 2048 and bb >= steps * 2048, f"{name}: a micro-panel per buffer"
        assert ab % (steps * 2048) == 0 and bb % (steps * 2048) == 0 and cb % 4096 == 0, name


def _irloops():
    """:data:`IRLOOPS` (A and B buffers of gemm()'s KC = 2048) and :data:`IRSMALL`, as
    (name, k steps, mode, A bytes, B bytes, C bytes)."""
    return tuple((n, st, m, IR_A, IR_B, cb) for n, st, m, cb in IRLOOPS) + IRSMALL


def build():
    """The cffi module of :data:`SOURCE`, built with the amx ISA's flags."""
    from microkernel.build import load_module
    from microkernel.tile import ISAS
    return load_module("amx_roofline", CDEF, SOURCE, cflags=ISAS["amx"].cflags)


def contenders(mod, n_sizes=(2048, 4096), blockings=(), only=()):
    """Every contender of the module docstring, on one shape ("roof"), with gemm() also
    at each blocking override of ``blockings`` (``{"kc": 4096, "mc": 128}``: the model's
    blocking with those values); with ``only``, just ``peak`` and those whose names start
    with one of its prefixes. Returns the list and the buffers they read (kept alive by
    the caller)."""
    import numpy as np
    import ml_dtypes
    import microkernel as mk
    from microkernel import bench
    from microkernel.timing import Contender

    _check_sizes()
    ffi, lib = mod.ffi, mod.lib
    rng = np.random.default_rng(0)
    keep = []

    def buf(nbytes, offset=0):
        """``nbytes`` of random bf16 starting on a page (numpy aligns to 16 bytes only:
        a tile row of 64 bytes would then straddle two lines, as a packed panel's never does)"""
        raw = np.empty(nbytes + 4096 + offset, np.uint8)
        off = -raw.ctypes.data % 4096 + offset
        x = raw[off:off + nbytes].view(ml_dtypes.bfloat16)
        x[...] = rng.standard_normal(nbytes // 2, dtype=np.float32).astype(ml_dtypes.bfloat16)
        keep.append(raw)
        return ffi.cast("const char *", ffi.from_buffer(x.view(np.uint8)))

    kernel = mk.get_kernel(KERNEL)
    out = [bench.peak_contender("peak", kernel, shape="roof")]
    ra, rb = buf(2048), buf(2048)
    out.append(Contender("peak random", lambda: lib.rf_peak(PEAK_ITERS, ra, rb),
                         4.0 * TDP_FLOPS * PEAK_ITERS, "roof"))
    for name, ab, bb in LOOPS:
        pa, pb = buf(ab), buf(bb)
        for compact in (0, 1) if name in COMPACT_TOO else (0,):
            out.append(Contender(name + (" compact B" if compact else ""),
                                 lambda pa=pa, pb=pb, ab=ab, bb=bb, compact=compact:
                                 lib.rf_loop(STEPS, pa, ab, pb, bb, compact),
                                 4.0 * TDP_FLOPS * STEPS, "roof"))
    pa, pb = buf(512 * KIB, 16), buf(512 * KIB, 16)
    out.append(Contender("loop L2 split rows", lambda pa=pa, pb=pb: lib.rf_loop(STEPS, pa, 512 * KIB, pb, 512 * KIB, 0),
                         4.0 * TDP_FLOPS * STEPS, "roof"))
    craw = np.zeros(max(cb for *_, cb in _irloops()) // 4 + 1024, np.float32)
    keep.append(craw)
    coff = (-craw.ctypes.data % 4096) // 4
    pc = ffi.cast("float *", ffi.from_buffer(craw[coff:]))
    for name, steps, mode, ab, bb, cb in _irloops():
        calls = STEPS // steps
        pa, pb = buf(ab), buf(bb)
        out.append(Contender(name, lambda pa=pa, pb=pb, ab=ab, bb=bb, steps=steps, calls=calls,
                             mode=mode, cb=cb:
                             lib.rf_irloop(calls, steps, pa, ab, pb, bb, pc, cb, mode),
                             4.0 * TDP_FLOPS * calls * steps, "roof"))
    for name, ab, bb in LOADS:
        pa, pb = buf(ab), buf(bb)
        # "flops" here are bytes loaded (4 tiles of 1 KiB per step): reported as GB/s
        out.append(Contender(name, lambda pa=pa, pb=pb, ab=ab, bb=bb: lib.rf_loads(STEPS, pa, ab, pb, bb),
                             4096.0 * STEPS, "roof"))
    from microkernel.gemm import blocking_for
    for n in n_sizes:
        A = rng.standard_normal((n, n), dtype=np.float32).astype(ml_dtypes.bfloat16)
        B = rng.standard_normal((n, n), dtype=np.float32).astype(ml_dtypes.bfloat16)
        C = np.empty((n, n), np.float32)
        keep += [A, B, C]
        for over in (None, *blockings):
            blk = None if over is None else blocking_for(kernel).replace(**over)
            label = "" if over is None else " " + ",".join(f"{k}={v}" for k, v in over.items())
            out.append(Contender(f"gemm {n}" + label,
                                 lambda A=A, B=B, C=C, blk=blk: mk.gemm(A, B, C, kernel=kernel,
                                                                        threads=1, blocking=blk),
                                 2.0 * n ** 3, "roof"))
    if only:
        out = [c for c in out if c.name == "peak" or any(c.name.startswith(p) for p in only)]
    return out, keep


def _blockings(text: str) -> list[dict]:
    """argparse type of --blocking: each ';'-separated override through the CLI's own
    parser (``kc=N,mc=N,...``), so a typo stops before anything is built."""
    from microkernel.commands.common import blocking_arg
    return [blocking_arg(b) for b in text.split(";") if b]


def main() -> int:
    from microkernel.commands.common import json_arg, write_json
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpus", default=None, help="comma-separated CPUs, one after another "
                    "(default: the first this process may run on)")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--sizes", default="2048,4096", help="gemm() sizes in the rounds")
    ap.add_argument("--blocking", default=[], type=_blockings, help="';'-separated blocking "
                    "overrides (\"mc=128;kc=4096,mc=128\"): gemm() at each size also with each")
    ap.add_argument("--only", default="", help="comma-separated name prefixes (\"ir KC,gemm\"): "
                    "time just those contenders and the peak loop")
    ap.add_argument("--json", type=json_arg, default=None)
    args = ap.parse_args()
    import numpy as np
    from microkernel import bench, stats
    from microkernel.dispatch import usable_isas
    from microkernel.timing import Rounds

    if "amx" not in usable_isas():
        print("amx_roofline: this CPU (or its OS) does not allow AMX "
              "(`microkernel probe` says why); nothing was run", file=sys.stderr)
        return 2
    mod = build()
    cpus = ([int(c) for c in args.cpus.split(",")] if args.cpus
            else [min(os.sched_getaffinity(0))])
    sizes = tuple(int(s) for s in args.sizes.split(",") if s)
    out = {"kernel": KERNEL, "rounds": args.rounds, "steps": STEPS, "cpus": {}}
    for cpu in cpus:
        os.sched_setaffinity(0, {cpu})
        cons, keep = contenders(mod, sizes, tuple(args.blocking),
                                tuple(p for p in args.only.split(",") if p))
        r = Rounds(cons)
        for _ in range(args.rounds):
            r.round()
        peak_g = cons[0].flops / r.matrix("peak")[0]          # per round, flop/s
        ghz = np.nanmedian(peak_g) / PEAK_FLOPS_PER_CYCLE / 1e9
        rows = {}
        print(f"cpu {cpu}: peak loop {np.nanmedian(peak_g) / 1e9:.0f} GFLOP/s "
              f"(a clock of {ghz:.2f} GHz at {PEAK_FLOPS_PER_CYCLE} flops per cycle)")
        for c in cons:
            rate = c.flops / r.matrix(c.name)[0]
            iv = stats.bootstrap((rate / 1e9)[None, :])
            row = {"rate": iv.point, "lo": iv.lo, "hi": iv.hi,
                   "rounds": (rate / 1e9).tolist()}
            if c.name.startswith("loads"):
                bpc = stats.bootstrap((rate / peak_g * PEAK_FLOPS_PER_CYCLE)[None, :])
                row.update(unit="GB/s", bytes_per_cycle=bpc.point, bpc_lo=bpc.lo, bpc_hi=bpc.hi)
                print(f"  {c.name:<28} {iv.point:8.1f} GB/s [{iv.lo:.1f}, {iv.hi:.1f}]"
                      f"  {bpc.point:5.1f} bytes per peak-loop cycle [{bpc.lo:.1f}, {bpc.hi:.1f}]")
            else:
                pct = bench.paired_pct_peak(r, "roof", c.name, "peak")
                row.update(unit="GFLOP/s", pct_peak=pct.point, pct_lo=pct.lo, pct_hi=pct.hi)
                print(f"  {c.name:<28} {iv.point:8.1f} GFLOP/s [{iv.lo:.1f}, {iv.hi:.1f}]"
                      f"  {pct.point:5.1f}% [{pct.lo:.1f}, {pct.hi:.1f}] of the peak loop")
            rows[c.name] = row
        out["cpus"][cpu] = {"ghz": ghz, "contenders": rows}
        del keep
    if args.json:
        write_json(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
