/*
 * The one GEMM driver, ISA-free: C := alpha * A*B + beta * C in fp32.
 *
 * The five loops around the micro-kernel of BLIS (Van Zee & van de Geijn, "BLIS: A
 * Framework for Rapidly Instantiating BLAS Functionality", ACM TOMS 41(3), 2015):
 *
 *   for jc in 0..N step NC          (B block of NC columns, sized for L3)
 *     for pc in 0..K step KC        pack B[pc:pc+KC, jc:jc+NC] into NR-wide micro-panels
 *       for ic in 0..M step MC      pack A[ic:ic+MC, pc:pc+KC] into MR-tall micro-panels
 *         for jr in 0..NC step NR
 *           for ir in 0..MC step MR
 *             micro-kernel(KC, alpha, A panel, B panel, beta', C tile)
 *
 * beta' is beta on the first KC block and 1 after it. With MK_C_ALIGN (below) the first
 * NR panel of the first NC block may be narrower, so that later C tiles start aligned.
 * Each loop runs equal blocks of at most its block size (mk_balance). General row and
 * column strides (negative included) are absorbed by packing (one routine for both
 * operands, below); edge tiles (M % MR, N % NR) go through the micro-kernel's edge
 * entry point, else a local MR x NR buffer. Packing buffers live in a per-calling-thread workspace that is
 * grown when needed and reused (bounded by the blocking sizes), freed when the thread
 * exits. With OpenMP, N (or M when N is narrow) is split into one contiguous slice per
 * thread, each running these loops on its own packing buffers with no barrier in
 * between.
 *
 * A module that defines MK_C_STATIONARY (AMX, AVX512-BF16) gets other loops at one thread
 * when K spans several KC blocks: C accumulated in compact tiles (mk_loops_cstat).
 *
 * This file is included by each kernel's module after the micro-kernel (specialised
 * for its tile, see MK_MR below), and by the aarch64 harness; it uses no ISA-specific
 * code (GCC vector extensions compile to whatever the module's flags allow).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif
#include "mk_ukernel.h"
#include "mk_pool.h"

enum { MK_OK = 0, MK_ENOMEM = -1, MK_EINVAL = -2 };

/* A kernel module whose tile is fixed at compile time defines MK_MR, MK_NR and
 * MK_UKERNEL (the micro-kernel's symbol) before including this file, and the driver
 * is specialised for that tile: constant MR and NR in the loops and the packing (the
 * compiler unrolls the copies and transposes for them) and a direct call of the
 * micro-kernel. Without them (SVE, whose NR depends on the run-time vector length;
 * the aarch64 harness) the same code reads the descriptor. Where defined, they must
 * agree with the descriptor passed to mk_gemm_driver. */
#ifdef MK_MR
#define MK_TILE_MR(uk) ((int64_t)(MK_MR))
#else
#define MK_TILE_MR(uk) ((uk)->mr)
#endif
#ifdef MK_NR
#define MK_TILE_NR(uk) ((int64_t)(MK_NR))
#else
#define MK_TILE_NR(uk) ((uk)->nr)
#endif
/* MK_C_ALIGN (bytes, a power of two dividing NR * 4; 0: off): when C's rows all start
 * the same distance past an MK_C_ALIGN boundary (unit column stride, row stride a
 * multiple of it), the first NR-wide panel of each N slice is narrowed to the columns
 * before the next boundary (fewer than NR), so that every later C tile starts on one.
 * kernel.py sets it to 64 for tiles whose vectors are 64 bytes (AVX-512), where every
 * vector access to C at numpy's 16-byte offset would split a cache line;
 * docs/design-notes.md has the measurements, and why AVX2 modules leave it off. */
#ifndef MK_C_ALIGN
#define MK_C_ALIGN 0
#endif
#if MK_C_ALIGN < 0 || (MK_C_ALIGN & (MK_C_ALIGN - 1)) != 0
#error "MK_C_ALIGN must be 0 or a power of two (bytes)"
#endif

/* Types. A typed tile's module (microkernel.dtypes, kernel.py) defines, before this file:
 *   MK_SA, MK_SB    element types of the caller's A and B (float; uint16_t for the bits
 *                   of bf16 and fp16; int8_t; uint8_t)
 *   MK_TA, MK_TB    element types of the packed panels, what the micro-kernel reads
 *                   (mk_ukernel.h), and MK_CVT_A(x), MK_CVT_B(x): one source element to
 *                   one panel element (a widening kernel converts while it packs)
 *   MK_GA, MK_GB    K groups of the panel layouts (mk_ukernel.h): 2 for pairs along K
 *                   (AVX512-BF16, AMX's B, vpmaddwd), 4 for VNNI's int8 quads, 32 or
 *                   64 for an AMX A row of 64 bytes
 *   MK_TC           C, alpha and beta: float, or int32_t (integer arithmetic wraps,
 *                   done in uint32_t: no signed-overflow UB)
 * MK_TYPED is then 1: the fp32-only paths (the GEMV kernels, the in-register transposes
 * of the packing, the C^T = B^T A^T swap that assumes A and B of one type) are off. */
#ifndef MK_SA
#define MK_SA float
#endif
#ifndef MK_SB
#define MK_SB float
#endif
#ifndef MK_GA
#define MK_GA 1
#endif
#ifndef MK_GB
#define MK_GB 1
#endif
#ifndef MK_CVT_A
#define MK_CVT_A(x) (x)
#endif
#ifndef MK_CVT_B
#define MK_CVT_B(x) (x)
#endif
#ifndef MK_TYPED
#define MK_TYPED 0
#endif
/* the K group both panels share (packing pads kc to a multiple of it with zeros) */
#define MK_G ((MK_GA) > (MK_GB) ? (MK_GA) : (MK_GB))
#if MK_G % MK_GA != 0 || MK_G % MK_GB != 0
#error "MK_GA and MK_GB must divide the larger of them"
#endif
/* A module that defines MK_B_COLSUM(s) (the s8s8 and u8u8 VNNI tiles, whose A is shifted
 * by 128 while packing: microkernel/codegen/x86_typed.py) gets one K group more in every
 * packed panel, the trailer: in each B micro-panel it holds, for column l, the uint32
 * MK_B_COLSUM(sum of the column's kc values) in the 4 bytes of that column's slot
 * (mk_b_colsums, written while packing), and the micro-kernel, called with the panels'
 * whole depth, stops one K group early and subtracts it from its C tile. A's trailer is
 * zeros, never read. The sums are made once per packed panel instead of in every call. */
#ifdef MK_B_COLSUM
#define MK_B_TRAILER MK_G
#else
#define MK_B_TRAILER 0
#endif
/* the depth of packed panels of kc k-steps: padded to the K group, plus the trailer */
#define MK_KCP(kc) (mk_round_up((kc), MK_G) + MK_B_TRAILER)
#ifndef MK_DRIVER_NAME
#define MK_DRIVER_NAME mk_gemm_driver
#endif
/* and its workspace query, renamed with it where one program links several drivers
 * (the aarch64 harness: one driver object per typed panel layout) */
#ifndef MK_WORKSPACE_BYTES_NAME
#define MK_WORKSPACE_BYTES_NAME mk_workspace_bytes
#endif

/* A micro-kernel with per-thread state that is costly to set up (AMX: the tile
 * configuration, LDTILECFG) defines, besides its contract entry point (which sets the
 * state up itself), MK_UKERNEL_HOT, an entry point that assumes the state, and
 * MK_THREAD_SETUP() / MK_THREAD_TEARDOWN(), which each thread runs around its loops
 * (mk_loops) and the L1 timing around its calls (timing.c). */
#if defined(MK_UKERNEL_HOT)
#define MK_CALL_UKERNEL(uk, ...) MK_UKERNEL_HOT(__VA_ARGS__)
#elif defined(MK_UKERNEL)
#define MK_CALL_UKERNEL(uk, ...) MK_UKERNEL(__VA_ARGS__)
#else
#define MK_CALL_UKERNEL(uk, ...) (uk)->ukernel(__VA_ARGS__)
#endif
#ifndef MK_THREAD_SETUP
#define MK_THREAD_SETUP() ((void)0)
#define MK_THREAD_TEARDOWN() ((void)0)
#endif
/* A micro-kernel that prefetches the next B micro-panel into L2 while it computes
 * (AMX: codegen/amx.py) defines MK_PREFETCH_B(p, bytes): mk_loops hands each call of
 * its ir loop one 1/(MC/MR) share of the panel the next jr step reads (the B block
 * itself is in L3, far past L2), and (NULL, 0) after its loops. */
#ifndef MK_PREFETCH_B
#define MK_PREFETCH_B(p, bytes) ((void)0)
#endif

/* ---- per-calling-thread workspace ------------------------------------------------ */

typedef struct {
    void *buf;
    size_t bytes;
} mk_workspace;

static pthread_key_t mk_ws_key;
static pthread_once_t mk_ws_once = PTHREAD_ONCE_INIT;

static void mk_ws_destroy(void *p)
{
    mk_workspace *ws = (mk_workspace *)p;
    if (ws) {
        free(ws->buf);
        free(ws);
    }
}

static void mk_ws_key_init(void) { pthread_key_create(&mk_ws_key, mk_ws_destroy); }

/* From MK_WS_HUGE_MIN bytes (0: never) the workspace is 2 MiB-aligned, a whole number
 * of 2 MiB, and asks Linux for transparent huge pages (madvise MADV_HUGEPAGE, which
 * the "madvise" setting of /sys/kernel/mm/transparent_hugepage requires): the packed
 * panels that the micro-kernel streams then take a TLB entry per 2 MiB, not per 4 KiB
 * (an AMX call streams a new 4 KiB page of A or B every 32 cycles). */
#ifndef MK_WS_HUGE_MIN
#define MK_WS_HUGE_MIN ((size_t)4 << 20)
#endif
static void *mk_ws_alloc(size_t *bytes)
{
#if defined(MADV_HUGEPAGE)
    const size_t huge = (size_t)2 << 20;
    if (MK_WS_HUGE_MIN > 0 && *bytes >= (size_t)MK_WS_HUGE_MIN) {
        *bytes = (*bytes + huge - 1) / huge * huge;
        void *p = aligned_alloc(huge, *bytes);
        if (p)
            (void)madvise(p, *bytes, MADV_HUGEPAGE);   /* advice: no error is fatal */
        return p;
    }
#endif
    return aligned_alloc(64, *bytes);
}

/* A 64-byte-aligned buffer of at least `bytes` bytes, reused across calls. */
static void *mk_ws_get(size_t need)
{
    pthread_once(&mk_ws_once, mk_ws_key_init);
    mk_workspace *ws = (mk_workspace *)pthread_getspecific(mk_ws_key);
    if (!ws) {
        ws = (mk_workspace *)calloc(1, sizeof *ws);
        if (!ws || pthread_setspecific(mk_ws_key, ws) != 0) {
            free(ws);
            return NULL;
        }
    }
    size_t bytes = (need + 63) & ~(size_t)63;
    if (bytes > ws->bytes) {
        free(ws->buf);
        ws->buf = mk_ws_alloc(&bytes);
        ws->bytes = ws->buf ? bytes : 0;
    }
    return ws->buf;
}

/* Bytes held by the calling thread's packing workspace (0 before the first call). */
int64_t MK_WORKSPACE_BYTES_NAME(void)
{
    pthread_once(&mk_ws_once, mk_ws_key_init);
    mk_workspace *ws = (mk_workspace *)pthread_getspecific(mk_ws_key);
    return ws ? (int64_t)ws->bytes : 0;
}

static int64_t mk_min(int64_t x, int64_t y) { return x < y ? x : y; }
static int64_t mk_round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/* The block size for a loop of `total` in blocks of at most `blk`: ceil(total/blk)
 * equal blocks, rounded up to `unit` (and never above blk when blk is a multiple of
 * unit), rather than full blocks and a thin remainder. A K remainder of 64 after
 * three KC = 320 blocks would pay the fixed cost of a micro-kernel call (loading and
 * storing the C tile) five times as often per flop; an MC remainder of 4 rows would
 * pack and sweep a whole B block for a single A micro-panel. */
static int64_t mk_balance(int64_t total, int64_t blk, int64_t unit)
{
    const int64_t blocks = (total + blk - 1) / blk;
    const int64_t even = mk_round_up((total + blocks - 1) / blocks, unit);
    return even < blk ? even : blk;
}

/* ---- packing ----------------------------------------------------------------------- */

/*
 * Both operands are packed by the same code. A micro-panel is `w` lines of kc floats
 * (w = MR rows of A, or NR columns of B) stored k-major: dst[k*w + l] = X(line l, k),
 * with lines past wcur zero-padded. For A, a line is a row (s_l = rs_a between lines,
 * s_k = cs_a along K); for B, a line is a column (s_l = cs_b, s_k = rs_b).
 *
 * Two hot cases: s_l == 1 (row-major B, column-major A) is a copy of w floats per k;
 * s_k == 1 (row-major A, column-major B) is a transpose, done 8 x 8 at a time in
 * registers with GCC vector extensions (portable C: the ISA's shuffles where the
 * module's flags have them), or 4 x 8 for a full panel of w = 4 lines (MR = 4, or
 * NR = 4), which writes exactly its panel. The 8 x 8 transpose stores 8 floats per k
 * at dst + k*w + l0, so a group narrower than 8 writes past its end into positions
 * that are written again later in the same pass; MK_PACK_SLACK floats after the last
 * panel absorb the final overrun. The typed packing (below) moves 4-byte K groups
 * (bf16 pairs, int8 quads) through the same 8 x 8 transposes, which move bits.
 */
enum { MK_PACK_SLACK = 8 };

typedef float mk_v8 __attribute__((vector_size(32)));
typedef int32_t mk_v8i __attribute__((vector_size(32)));

static inline mk_v8 mk_load8(const float *p)
{
    mk_v8 v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}

static inline void mk_store8(float *p, mk_v8 v) { __builtin_memcpy(p, &v, sizeof v); }

/* __builtin_shuffle index vectors (lanes 0-7 of the first operand, 8-15 of the
 * second) shared by the transposes and the GEMV reduction: mk_lo/mk_hi interleave
 * single lanes, mk_l2/mk_h2 pairs of lanes, mk_l4/mk_h4 128-bit halves
 * (unpcklps/unpckhps, shufps, vperm2f128 on AVX). */
static const mk_v8i mk_lo = {0, 8, 1, 9, 4, 12, 5, 13}, mk_hi = {2, 10, 3, 11, 6, 14, 7, 15};
static const mk_v8i mk_l2 = {0, 1, 8, 9, 4, 5, 12, 13}, mk_h2 = {2, 3, 10, 11, 6, 7, 14, 15};
static const mk_v8i mk_l4 = {0, 1, 2, 3, 8, 9, 10, 11}, mk_h4 = {4, 5, 6, 7, 12, 13, 14, 15};

/* 8 lines x 8 k: line l is p[l][0..8); stores d[k*w + l] for k, l < 8 in increasing k
 * (the 8 stores of 8 floats may overlap when w < 8: each overwrites the previous
 * one's tail). The in-register transpose is the AVX unpack/shuffle/permute2f128
 * sequence (Intel 64 and IA-32 Architectures Optimization Reference Manual, 8x8
 * matrix transpose), written with GCC vector extensions. */
static inline void mk_transpose8(const float *const p[8], float *d, int64_t w)
{
    const mk_v8 r0 = mk_load8(p[0]), r1 = mk_load8(p[1]), r2 = mk_load8(p[2]),
                r3 = mk_load8(p[3]), r4 = mk_load8(p[4]), r5 = mk_load8(p[5]),
                r6 = mk_load8(p[6]), r7 = mk_load8(p[7]);
    const mk_v8 t0 = __builtin_shuffle(r0, r1, mk_lo), t1 = __builtin_shuffle(r0, r1, mk_hi),
                t2 = __builtin_shuffle(r2, r3, mk_lo), t3 = __builtin_shuffle(r2, r3, mk_hi),
                t4 = __builtin_shuffle(r4, r5, mk_lo), t5 = __builtin_shuffle(r4, r5, mk_hi),
                t6 = __builtin_shuffle(r6, r7, mk_lo), t7 = __builtin_shuffle(r6, r7, mk_hi);
    const mk_v8 u0 = __builtin_shuffle(t0, t2, mk_l2), u1 = __builtin_shuffle(t0, t2, mk_h2),
                u2 = __builtin_shuffle(t1, t3, mk_l2), u3 = __builtin_shuffle(t1, t3, mk_h2),
                u4 = __builtin_shuffle(t4, t6, mk_l2), u5 = __builtin_shuffle(t4, t6, mk_h2),
                u6 = __builtin_shuffle(t5, t7, mk_l2), u7 = __builtin_shuffle(t5, t7, mk_h2);
    mk_store8(d + 0 * w, __builtin_shuffle(u0, u4, mk_l4));
    mk_store8(d + 1 * w, __builtin_shuffle(u1, u5, mk_l4));
    mk_store8(d + 2 * w, __builtin_shuffle(u2, u6, mk_l4));
    mk_store8(d + 3 * w, __builtin_shuffle(u3, u7, mk_l4));
    mk_store8(d + 4 * w, __builtin_shuffle(u0, u4, mk_h4));
    mk_store8(d + 5 * w, __builtin_shuffle(u1, u5, mk_h4));
    mk_store8(d + 6 * w, __builtin_shuffle(u2, u6, mk_h4));
    mk_store8(d + 7 * w, __builtin_shuffle(u3, u7, mk_h4));
}

#if !MK_TYPED

static const float mk_zero8[8] __attribute__((aligned(32)));

/* w floats from s to d (w % 8 == 0: whole vectors). */
static inline void mk_copy_line(float *restrict d, const float *restrict s, int64_t w)
{
    if (w % 8 == 0)
        for (int64_t l = 0; l < w; l += 8)
            mk_store8(d + l, mk_load8(s + l));
    else
        for (int64_t l = 0; l < w; ++l)
            d[l] = s[l];
}

/* 4 lines x 8 k: line l is p[l][0..8); stores the 32 floats d[k*4 + l], k < 8, l < 4:
 * a full 4-line micro-panel (w = 4: MR or NR) with no padding lines and no
 * overlapping stores (half the shuffles of mk_transpose8 on 4 real and 4 zero lines). */
static inline void mk_transpose4x8(const float *const p[4], float *d)
{
    const mk_v8 r0 = mk_load8(p[0]), r1 = mk_load8(p[1]), r2 = mk_load8(p[2]),
                r3 = mk_load8(p[3]);
    const mk_v8 t0 = __builtin_shuffle(r0, r1, mk_lo), t1 = __builtin_shuffle(r0, r1, mk_hi),
                t2 = __builtin_shuffle(r2, r3, mk_lo), t3 = __builtin_shuffle(r2, r3, mk_hi);
    /* u0 holds k = 0 and 4 (4 lines each), u1 k = 1 and 5, u2 k = 2 and 6, u3 k = 3 and 7 */
    const mk_v8 u0 = __builtin_shuffle(t0, t2, mk_l2), u1 = __builtin_shuffle(t0, t2, mk_h2),
                u2 = __builtin_shuffle(t1, t3, mk_l2), u3 = __builtin_shuffle(t1, t3, mk_h2);
    mk_store8(d + 0, __builtin_shuffle(u0, u1, mk_l4));
    mk_store8(d + 8, __builtin_shuffle(u2, u3, mk_l4));
    mk_store8(d + 16, __builtin_shuffle(u0, u1, mk_h4));
    mk_store8(d + 24, __builtin_shuffle(u2, u3, mk_h4));
}

/* One micro-panel that mk_pack_block does not copy (its full panels with s_l == 1 are
 * swept there): wcur <= w lines of kc floats (see above), zero-padded to w lines.
 * Writes up to MK_PACK_SLACK floats past dst + kc*w (s_k == 1 case only). */
static void mk_pack_panel(int64_t wcur, int64_t kc, const float *x, int64_t s_l,
                          int64_t s_k, int64_t w, float *restrict dst)
{
    const int64_t kv = s_k == 1 ? kc - kc % 8 : 0;
    /* lines contiguous along K, a full panel of w = 4 lines: 4 x 8 transposes */
    const int quad = w == 4 && wcur == 4;
    if (quad && kv > 0) {
        const float *p[4] = {x, x + s_l, x + 2 * s_l, x + 3 * s_l};
        for (int64_t k = 0; k < kv; k += 8) {
            mk_transpose4x8(p, dst + k * 4);
            for (int l = 0; l < 4; ++l)
                p[l] += 8;
        }
    }
    /* lines contiguous along K, other panels: 8 x 8 transposes. Groups of 8 lines go
     * last to first, so that a narrow last group's overrun into the next k is
     * rewritten by group 0. */
    for (int64_t l0 = (w - 1) / 8 * 8; kv > 0 && !quad && l0 >= 0; l0 -= 8) {
        const float *p[8];
        int64_t step[8];
        for (int l = 0; l < 8; ++l) {
            const int real = l0 + l < wcur;
            p[l] = real ? x + (l0 + l) * s_l : mk_zero8;
            step[l] = real ? 8 : 0;
        }
        for (int64_t k = 0; k < kv; k += 8) {
            mk_transpose8(p, dst + k * w + l0, w);
            for (int l = 0; l < 8; ++l)
                p[l] += step[l];
        }
    }
    for (int64_t k = kv; k < kc; ++k)           /* the rest, any strides */
        for (int64_t l = 0; l < w; ++l)
            dst[k * w + l] = l < wcur ? x[l * s_l + k * s_k] : 0.0f;
}

/* A block of `width` lines as consecutive micro-panels of w lines (the last one
 * zero-padded). When the lines are unit-stride (s_l == 1), the block is swept 8 k at
 * a time across all panels, so that the source is read along its rows as hardware
 * prefetchers expect, rather than down a column with a whole row between reads. */
static void mk_pack_block(int64_t width, int64_t kc, const float *x, int64_t s_l,
                          int64_t s_k, int64_t w, float *restrict dst)
{
    const int64_t full = s_l == 1 ? width / w : 0;
    for (int64_t k0 = 0; k0 < kc; k0 += 8) {
        const int64_t k1 = mk_min(kc, k0 + 8);
        for (int64_t p = 0; p < full; ++p)
            for (int64_t k = k0; k < k1; ++k)
                mk_copy_line(dst + p * w * kc + k * w, x + k * s_k + p * w, w);
    }
    for (int64_t l = full * w; l < width; l += w)
        mk_pack_panel(mk_min(w, width - l), kc, x + l * s_l, s_l, s_k, w, dst + l * kc);
}
#endif

#if !MK_TYPED
#define mk_pack_a mk_pack_block
#define mk_pack_b mk_pack_block
#else
/* Typed panels: a block of `width` lines (w per micro-panel, the last zero-padded) of
 * kc k-steps, converted element by element (MK_CVT_*), in K groups of g:
 * dst[(k/g)*w*g + l*g + k%g] = X(line l, k), with zeros past kc up to kcp (a multiple
 * of g) and past the last line. The loops read the source along its contiguous axis
 * (K when s_k == 1, the lines when s_l == 1). No overrun: MK_PACK_SLACK is unused. */
#define MK_DEFINE_PACK(name, SRC, DST, G, CVT, FAST, TRAILER)                            \
static void name(int64_t width, int64_t kc, int64_t kcp, const SRC *x, int64_t s_l,     \
                 int64_t s_k, int64_t w, DST *restrict dst)                             \
{                                                                                        \
    for (int64_t l0 = 0; l0 < width; l0 += w) {                                          \
        const int64_t wcur = mk_min(w, width - l0);                                      \
        DST *restrict d = dst + l0 * kcp;                                                \
        const SRC *xs = x + l0 * s_l;                                                    \
        /* whole groups of K by the fast paths (0 when none applies), the rest here */  \
        const int64_t k0 = FAST(wcur, kc, xs, s_l, s_k, w, d);                           \
        if (s_k == 1) {                                                                  \
            for (int64_t l = 0; l < wcur; ++l)                                           \
                for (int64_t k = k0; k < kc; ++k)                                        \
                    d[(k / (G)) * w * (G) + l * (G) + k % (G)] = CVT(xs[l * s_l + k]);   \
        } else {                                                                         \
            for (int64_t k = k0; k < kc; ++k)                                            \
                for (int64_t l = 0; l < wcur; ++l)                                       \
                    d[(k / (G)) * w * (G) + l * (G) + k % (G)] = CVT(xs[l * s_l + k * s_k]); \
        }                                                                                \
        for (int64_t k = wcur < w ? 0 : kc; k < kcp; ++k)   /* the zero padding */       \
            for (int64_t l = (k < kc ? wcur : 0); l < w; ++l)                            \
                d[(k / (G)) * w * (G) + l * (G) + k % (G)] = (DST)0;                     \
        TRAILER(d, w, kcp);                                                              \
    }                                                                                    \
}

/* Fast paths of typed packing on whole groups of K; each returns the k where the
 * generic loops take over (a multiple of the group), 0 when it does not apply.
 *   K contiguous (s_k == 1), a group of 4 bytes (a bf16 pair or an int8 quad of a
 *     row-major A for AVX512-BF16 or VNNI; an int16 pair or a widened fp32 element,
 *     converted by CVT, for the vpmaddwd and widening tiles) and full panels of a
 *     multiple of 8 lines: the fp32 path's 8 x 8 transposes on those 4-byte groups,
 *     8 groups of 8 lines at a time (converted first into a small buffer where the
 *     panel's type is not the source's). The VNNI tile's whole GEMM ran 13-20% faster
 *     on the Zen 4 and 8-39% on Sapphire Rapids than through the generic loops'
 *     element by element index arithmetic (docs/design-notes.md, typed A).
 * The others only re-lay elements (no conversion: MK_COPY_A / MK_COPY_B, set below when
 * the panel's type is the source's and the conversion is the identity):
 *   K contiguous, any other group of g > 1 elements: line l's group is one copy of g
 *     elements (AMX's A, rows of 64 bytes of K, 32 bf16 or 64 int8: a 64-byte vector
 *     move with the module's flags);
 *   lines contiguous (s_l == 1), a group of g <= 4 (pairs along K for bf16, vpmaddwd and
 *     AMX's B; quads for VNNI and AMX int8): the interleave of g source rows of wcur
 *     elements (row k of B is columns l0.. of B's k-th row), d[(k/g)*w*g + l*g + k%g],
 *     which GCC vectorises into unpacks/permutes. */
#define MK_DEFINE_FAST(name, SRC, DST, G, COPY, CVT)                                     \
static inline int64_t name(int64_t wcur, int64_t kc, const SRC *xs, int64_t s_l,        \
                           int64_t s_k, int64_t w, DST *restrict d)                     \
{                                                                                        \
    const int64_t kv = kc - kc % (G);                                                    \
    if (s_k == 1 && (G) * sizeof(DST) == 4 && w % 8 == 0 && wcur == w && kv >= 8 * (G)) { \
        const int64_t kq = kv - kv % (8 * (G));                                          \
        for (int64_t l0 = 0; l0 < w; l0 += 8)                                            \
            for (int64_t k = 0; k < kq; k += 8 * (G)) {                                  \
                DST t[8][8 * (G)];                                                       \
                const float *p[8];                                                       \
                for (int l = 0; l < 8; ++l) {                                            \
                    const SRC *r = xs + (l0 + l) * s_l + k;                              \
                    if (COPY) {                                                          \
                        p[l] = (const float *)(const void *)r;                           \
                        continue;                                                        \
                    }                                                                    \
                    for (int j = 0; j < 8 * (G); ++j)                                    \
                        t[l][j] = CVT(r[j]);                                             \
                    p[l] = (const float *)(const void *)t[l];                            \
                }                                                                        \
                mk_transpose8(p, (float *)(void *)d + k / (G) * w + l0, w);              \
            }                                                                            \
        return kq;                                                                       \
    }                                                                                    \
    if (!(COPY) || kv == 0)                                                              \
        return 0;                                                                        \
    if (s_k == 1 && (G) > 1) {                                                           \
        for (int64_t l = 0; l < wcur; ++l)                                               \
            for (int64_t k = 0; k < kv; k += (G))                                        \
                memcpy(d + k * w + l * (G), xs + l * s_l + k, (G) * sizeof(DST));        \
        return kv;                                                                       \
    }                                                                                    \
    if (s_l == 1 && (G) <= 4 && (G) > 1) {                                               \
        for (int64_t k = 0; k < kv; k += (G)) {                                          \
            DST *restrict dk = d + k * w;                                                \
            const SRC *r0 = xs + k * s_k;                                                \
            for (int64_t l = 0; l < wcur; ++l)                                           \
                for (int g = 0; g < (G); ++g)                                            \
                    dk[l * (G) + g] = (DST)r0[g * s_k + l];                              \
        }                                                                                \
        return kv;                                                                       \
    }                                                                                    \
    return 0;                                                                            \
}
#ifndef MK_COPY_A
#define MK_COPY_A 0
#endif
#ifndef MK_COPY_B
#define MK_COPY_B 0
#endif
MK_DEFINE_FAST(mk_pack_a_fast, MK_SA, MK_TA, MK_GA, MK_COPY_A, MK_CVT_A)
MK_DEFINE_FAST(mk_pack_b_fast, MK_SB, MK_TB, MK_GB, MK_COPY_B, MK_CVT_B)
#define MK_NO_TRAILER(d, w, kcp) ((void)0)
#ifdef MK_B_COLSUM
_Static_assert(MK_GB == MK_G && MK_G * sizeof(MK_TB) == 4,
               "MK_B_COLSUM: a B panel's K group must be 4 bytes, one uint32 per column");
/* B's trailer (above): per column, the sum of its kcp - MK_B_TRAILER packed values (the
 * zero padding adds nothing), as MK_B_COLSUM of it, in the last K group */
static void mk_b_colsums(MK_TB *restrict d, int64_t w, int64_t kcp)
{
    const int64_t kd = kcp - MK_B_TRAILER;
    uint32_t s[w];
    for (int64_t l = 0; l < w; ++l)
        s[l] = 0;
    for (int64_t k = 0; k < kd; k += MK_G)     /* a K group of w lines: d + k * w */
        for (int64_t l = 0; l < w; ++l)
            for (int g = 0; g < MK_G; ++g)
                s[l] += (uint32_t)(int32_t)d[k * w + l * MK_G + g];
    for (int64_t l = 0; l < w; ++l) {
        const uint32_t v = MK_B_COLSUM(s[l]);
        memcpy(d + kd * w + l * MK_G, &v, 4);
    }
}
#define MK_B_PANEL_TRAILER(d, w, kcp) mk_b_colsums((d), (w), (kcp))
#else
#define MK_B_PANEL_TRAILER MK_NO_TRAILER
#endif
MK_DEFINE_PACK(mk_pack_a, MK_SA, MK_TA, MK_GA, MK_CVT_A, mk_pack_a_fast, MK_NO_TRAILER)
MK_DEFINE_PACK(mk_pack_b, MK_SB, MK_TB, MK_GB, MK_CVT_B, mk_pack_b_fast, MK_B_PANEL_TRAILER)
#undef MK_DEFINE_PACK
#undef MK_DEFINE_FAST
#endif

/* ---- C updates ---------------------------------------------------------------------- */

/* e + beta * c in C's type: fp32 arithmetic, or int32 arithmetic that wraps (done in
 * uint32_t, so a result past int32 wraps as two's complement with no UB). */
#ifndef MK_INT_C
#define MK_INT_C 0      /* 1: C is int32_t (a typed module of an integer tile says so) */
#endif
#if MK_INT_C
#define MK_AXPBY(e, beta, c) ((MK_TC)((uint32_t)(e) + (uint32_t)(beta) * (uint32_t)(c)))
#define MK_SCALE(alpha, e) ((MK_TC)((uint32_t)(alpha) * (uint32_t)(e)))
#else
#define MK_AXPBY(e, beta, c) ((e) + (beta) * (c))
#define MK_SCALE(alpha, e) ((alpha) * (e))
#endif

/* C := beta * C (beta == 0 writes zeros without reading C). */
static void mk_scale_c(int64_t m, int64_t n, MK_TC beta, MK_TC *c, int64_t rs_c, int64_t cs_c)
{
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            MK_TC *p = c + i * rs_c + j * cs_c;
            *p = beta == 0 ? (MK_TC)0 : MK_AXPBY(0, beta, *p);
        }
}

/* One register tile: the micro-kernel straight into C when the tile is full; an edge
 * tile through the micro-kernel's edge entry point when it has one (SVE, x86 tiles of
 * several vectors per row), else into the MR x NR edge buffer, merged into the
 * mcur x ncur corner of C. */
static void mk_tile(const mk_ukernel_desc *uk, int64_t mcur, int64_t ncur, int64_t kc,
                    const MK_TC *alpha, const MK_TA *ap, const MK_TB *bp,
                    const MK_TC *beta, MK_TC *c, int64_t rs_c, int64_t cs_c, MK_TC *edge)
{
    const int64_t nr = MK_TILE_NR(uk);
    if (mcur == MK_TILE_MR(uk) && ncur == nr) {
        MK_CALL_UKERNEL(uk, kc, alpha, ap, bp, beta, c, rs_c, cs_c);
        return;
    }
    if (uk->edge) {
        uk->edge(mcur, ncur, kc, alpha, ap, bp, beta, c, rs_c, cs_c);
        return;
    }
    const MK_TC zero = 0;
    MK_CALL_UKERNEL(uk, kc, alpha, ap, bp, &zero, edge, nr, 1);
    for (int64_t i = 0; i < mcur; ++i)
        for (int64_t j = 0; j < ncur; ++j) {
            MK_TC *p = c + i * rs_c + j * cs_c;
            *p = *beta == 0 ? edge[i * nr + j] : MK_AXPBY(edge[i * nr + j], *beta, *p);
        }
}

#if !MK_TYPED
/* This thread's contiguous share [lo, hi) of `units` work units inside an OpenMP
 * team (all of them outside one); returns the thread number. */
static int mk_my_share(int64_t units, int64_t *lo, int64_t *hi)
{
#ifdef _OPENMP
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
    const int t = 0, nt = 1;
#endif
    *lo = units * t / nt;
    *hi = units * (t + 1) / nt;
    return t;
}

/* ---- matrix-vector (n == 1) --------------------------------------------------------- */

/* y[r] := sum_p A(r, p) x(p) for `rows` (<= 4) rows of a row-contiguous A (row r at
 * a + r*rs_a): two vector accumulators per row (up to 8 independent FMA chains to
 * cover the FMA latency), each x vector loaded once for all rows, then a tree
 * reduction per row (a serial sum of the lanes would be a chain of dependent adds). */
static inline __attribute__((always_inline)) void
mk_dot_rows(int rows, int64_t k, const float *a, int64_t rs_a, const float *x, float *y)
{
    const mk_v8 z = {0};
    mk_v8 s[4][2] = {{z, z}, {z, z}, {z, z}, {z, z}};
    int64_t p = 0;
    for (; p + 16 <= k; p += 16) {
        const mk_v8 x0 = mk_load8(x + p), x1 = mk_load8(x + p + 8);
        for (int r = 0; r < rows; ++r) {
            s[r][0] += mk_load8(a + r * rs_a + p) * x0;
            s[r][1] += mk_load8(a + r * rs_a + p + 8) * x1;
        }
    }
    for (int r = 0; r < rows; ++r) {
        const mk_v8 v = s[r][0] + s[r][1];
        float sum = ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
        for (int64_t q = p; q < k; ++q)
            sum += a[r * rs_a + q] * x[q];
        y[r] = sum;
    }
}

/* y[0..8) := the dot products of 8 rows of a row-contiguous A (row r at a + r*rs_a)
 * with x: one vector accumulator per row (8 independent FMA chains, enough for FMA
 * latency x units = 4 x 2), each x vector loaded once for the 8 rows, then the 8
 * accumulators reduced together by a 3-level shuffle-and-add tree into one vector of
 * the 8 sums (7 adds for 8 rows, instead of a horizontal sum per row). */
static inline void mk_dot8(int64_t k, const float *a, int64_t rs_a, const float *x, float *y)
{
    const mk_v8 z = {0};
    mk_v8 s[8] = {z, z, z, z, z, z, z, z};
    int64_t p = 0;
    for (; p + 8 <= k; p += 8) {
        const mk_v8 xv = mk_load8(x + p);
        for (int r = 0; r < 8; ++r)
            s[r] += mk_load8(a + r * rs_a + p) * xv;
    }
    const mk_v8i ev = {0, 8, 2, 10, 4, 12, 6, 14}, od = {1, 9, 3, 11, 5, 13, 7, 15};
    mk_v8 t[4], u[2];
    for (int q = 0; q < 4; ++q)             /* pairs of lanes: rows 2q, 2q+1 interleaved */
        t[q] = __builtin_shuffle(s[2 * q], s[2 * q + 1], ev)
             + __builtin_shuffle(s[2 * q], s[2 * q + 1], od);
    for (int q = 0; q < 2; ++q)             /* quads: rows 4q..4q+3, halves apart */
        u[q] = __builtin_shuffle(t[2 * q], t[2 * q + 1], mk_l2)
             + __builtin_shuffle(t[2 * q], t[2 * q + 1], mk_h2);
    mk_v8 v = __builtin_shuffle(u[0], u[1], mk_l4) + __builtin_shuffle(u[0], u[1], mk_h4);
    for (int r = 0; r < 8; ++r) {
        float sum = v[r];
        for (int64_t q = p; q < k; ++q)
            sum += a[r * rs_a + q] * x[q];
        y[r] = sum;
    }
}

/* c[i*rs_c] := alpha * sum_p A(i, p) x(p) + beta * c[i*rs_c] for i < m, x = b[p*rs_b].
 * Row-contiguous A: dot products, 8 rows at a time (then 4, then 1);
 * column-contiguous A: axpy of each column into y; other strides: one element at a
 * time. Rows are split between threads when A is large enough. xbuf holds k floats,
 * y m floats. */
static void mk_gemv(int64_t m, int64_t k, float alpha, const float *a, int64_t rs_a,
                    int64_t cs_a, const float *b, int64_t rs_b, float beta, float *c,
                    int64_t rs_c, float *xbuf, float *y, int nthreads)
{
    const float *x = b;
    if (rs_b != 1) {
        for (int64_t p = 0; p < k; ++p)
            xbuf[p] = b[p * rs_b];
        x = xbuf;
    }
    /* A thread pays for waking the team (tens of us after the workers slept). Measured
     * here: 4224x1x128 (2.1 MiB of A) ran at 13.9 GFLOP/s on one thread and 10.8 on
     * two, 3072x1x1024 (12 MiB) at 12.0 and 21.5; the cut at m*k = 2^20 floats (4 MiB)
     * is a choice between those two points. */
    if (nthreads > 1 && (m < 64 * (int64_t)nthreads || m * k < ((int64_t)1 << 20)))
        nthreads = 1;
#pragma omp parallel num_threads(nthreads) if (nthreads > 1)
    {
        int64_t i0, i1;
        mk_my_share(m, &i0, &i1);
        if (cs_a == 1) {
            int64_t i = i0;
            /* 8 rows at a time: 9 loads per 8 FMAs against 10 for 4 rows with 2
             * accumulators each. Against OpenBLAS's sgemv in one process (Zen 3, three
             * runs each, bench/gemv_vs_openblas.c), 8 rows also beat 4 for long rows:
             * 1.14-1.21 against 0.93-0.96 of its speed at 3072x1024, 0.85-0.88 against
             * 0.82-0.83 at 128x1024; level at 128x1408 */
            for (; i + 8 <= i1; i += 8)
                mk_dot8(k, a + i * rs_a, rs_a, x, y + i);
            for (; i + 4 <= i1; i += 4)
                mk_dot_rows(4, k, a + i * rs_a, rs_a, x, y + i);
            for (; i < i1; ++i)
                mk_dot_rows(1, k, a + i * rs_a, rs_a, x, y + i);
        } else if (rs_a != 1) {
            for (int64_t i = i0; i < i1; ++i) {
                float sum = 0.0f;
                for (int64_t p = 0; p < k; ++p)
                    sum += a[i * rs_a + p * cs_a] * x[p];
                y[i] = sum;
            }
        } else {                          /* column-contiguous A: y += A(:, p) x(p) */
            for (int64_t i = i0; i < i1; ++i)
                y[i] = 0.0f;
            for (int64_t p = 0; p < k; ++p) {
                const float *ap = a + p * cs_a, xp = x[p];
                for (int64_t i = i0; i < i1; ++i)
                    y[i] += ap[i] * xp;
            }
        }
        for (int64_t i = i0; i < i1; ++i) {
            float *ci = c + i * rs_c;
            *ci = beta == 0.0f ? alpha * y[i] : alpha * y[i] + beta * *ci;
        }
    }
}
#endif

/* Column of panel jp within an NC block whose first panel is w0 wide (w0 > 0: the
 * narrow first panel of MK_C_ALIGN; else every panel is nr wide), and its width in a
 * block of nc columns. */
static inline int64_t mk_panel_col(int64_t jp, int64_t w0, int64_t nr)
{
    return w0 > 0 && jp > 0 ? w0 + (jp - 1) * nr : jp * nr;
}

static inline int64_t mk_panel_width(int64_t jp, int64_t w0, int64_t nr, int64_t nc)
{
    return w0 > 0 && jp == 0 ? w0 : mk_min(nr, nc - mk_panel_col(jp, w0, nr));
}

/* Panel jp of a KC x NC block of B (b: the block's first element; panel 0 w0 wide
 * when w0 > 0) packed into dst: kc k-steps, padded to kcp with zeros for typed panels. */
static inline void mk_pack_b_panel(int64_t jp, int64_t w0, int64_t nr, int64_t nc, int64_t kc,
                                   int64_t kcp, const MK_SB *b, int64_t rs_b, int64_t cs_b,
                                   MK_TB *dst)
{
    const int64_t j = mk_panel_col(jp, w0, nr);
#if MK_TYPED
    mk_pack_b(mk_panel_width(jp, w0, nr, nc), kc, kcp, b + j * cs_b, cs_b, rs_b, nr, dst);
#else
    (void)kcp;
    mk_pack_block(mk_panel_width(jp, w0, nr, nc), kc, b + j * cs_b, cs_b, rs_b, nr, dst);
#endif
}

/* The macro-kernel of one part of a block: mc rows of A (a: row ic, column pc) packed
 * into a_pack, then the jr loop over the packed B panels u0..u1 (b_stride apart) and
 * the ir loop over the MR panels of those rows, into C (c: row ic, column jc). */
static inline void mk_macro(const mk_ukernel_desc *uk, int64_t mc, int64_t kc, int64_t kcp,
                            MK_TC alpha, const MK_SA *a, int64_t rs_a, int64_t cs_a,
                            const MK_TB *b_pack, int64_t b_stride, int64_t u0, int64_t u1,
                            int64_t w0, int64_t nc, const MK_TC *beta_p, MK_TC *c,
                            int64_t rs_c, int64_t cs_c, MK_TA *a_pack, MK_TC *edge)
{
    const int64_t mr = MK_TILE_MR(uk), nr = MK_TILE_NR(uk);
    const int64_t mpanels = (mc + mr - 1) / mr;
#if MK_TYPED
    mk_pack_a(mc, kc, kcp, a, rs_a, cs_a, mr, a_pack);
#else
    (void)kcp;
    mk_pack_block(mc, kc, a, rs_a, cs_a, mr, a_pack);
#endif
    for (int64_t jp = u0; jp < u1; ++jp) {
        const int64_t j = mk_panel_col(jp, w0, nr);
        const int64_t ncur = mk_panel_width(jp, w0, nr, nc);
        /* the panel of the next jr step (after the part's last, its first: a guess at
         * the next part), its bytes shared among this ir loop's calls */
        const char *next_b = (const char *)(b_pack + (jp + 1 < u1 ? jp + 1 : u0) * b_stride);
        const int64_t next_bytes = nr * kcp * (int64_t)sizeof(MK_TB);
        (void)next_b; (void)next_bytes;
        for (int64_t ip = 0; ip < mpanels; ++ip) {
            const int64_t i = ip * mr;
            MK_PREFETCH_B(next_b + next_bytes * ip / mpanels,
                          next_bytes * (ip + 1) / mpanels - next_bytes * ip / mpanels);
            mk_tile(uk, mk_min(mr, mc - i), ncur, kcp, &alpha, a_pack + i * kcp,
                    b_pack + jp * b_stride, beta_p, c + i * rs_c + j * cs_c, rs_c, cs_c, edge);
        }
    }
}

/* Elements from one packed B panel of a team's shared block to the next: MK_PACK_SLACK
 * floats more than the panel, so that one thread's packing overrun never lands in
 * another's panel. */
static inline int64_t mk_team_b_stride(int64_t nr, int64_t kcp)
{
    return mk_round_up(nr * kcp + MK_PACK_SLACK, 16);
}

/* Where a thread stands in a team (the shared-B decomposition below): thread t of nt,
 * at row ti of tm and column tj of tn of the team's grid over each C block. A lone
 * thread, or one running its own slice, is {0, 1, 0, 1, 0, 1}. */
typedef struct {
    int t, nt, ti, tm, tj, tn;
} mk_team_pos;

static const mk_team_pos mk_alone = {0, 1, 0, 1, 0, 1};

/* Columns of C before its first MK_C_ALIGN boundary (see MK_C_ALIGN), 0 if none or off:
 * they form a narrow first panel (w0 wide) of the first NC block. */
static int64_t mk_lead(const MK_TC *c, int64_t rs_c, int64_t cs_c, int64_t n, int64_t nr)
{
    int64_t lead = 0;
#if MK_C_ALIGN > 0
    if ((nr * 4) % MK_C_ALIGN == 0 && cs_c == 1 && (uintptr_t)c % 4 == 0
        && (rs_c * 4) % MK_C_ALIGN == 0) {
        lead = (int64_t)((MK_C_ALIGN - (uintptr_t)c % MK_C_ALIGN) % MK_C_ALIGN) / 4;
        if (lead >= n)
            lead = 0;
    }
#else
    (void)c; (void)rs_c; (void)cs_c; (void)n; (void)nr;
#endif
    return lead;
}

/* The five loops of one GEMM, or of one thread's part of it.
 *
 * Alone (tp->nt == 1): serial, with its own packing buffers (also each thread of the
 * slice decomposition, on its slice).
 * In a team (tp->nt > 1; BLIS's jc-pc-shared, ic and jr ways, Smith et al., "Anatomy
 * of High-Performance Many-Threaded Matrix Multiplication", IPDPS 2014): every thread
 * runs the jc and pc loops; the KC x NC block of B is packed by the whole team into
 * the shared b_pack (each thread some of its NR panels, between two barriers: the
 * block is free before it is overwritten, and complete before it is read); then each
 * thread takes its rows (a contiguous range of MR panels, row ti of tm) and its
 * columns (a contiguous range of NR panels of the block, column tj of tn), packs its
 * own A blocks and runs the jr and ir loops on them (fixed shares: blk->chunks = 0, or
 * MICROKERNEL_TEAM_GRID=square; the default dynamic units are mk_loops_flow's).
 * In a team each B panel is MK_PACK_SLACK floats longer (b_stride), so that one
 * thread's packing overrun never lands in another's panel. */
static void mk_loops(const mk_ukernel_desc *uk, int64_t m, int64_t n, int64_t k,
                     int64_t mc_blk, int64_t nc_blk, int64_t kc_blk, MK_TC alpha,
                     const MK_SA *a, int64_t rs_a, int64_t cs_a,
                     const MK_SB *b, int64_t rs_b, int64_t cs_b, MK_TC beta,
                     MK_TC *c, int64_t rs_c, int64_t cs_c,
                     MK_TA *a_pack, MK_TB *b_pack, MK_TC *edge, const mk_team_pos *tp)
{
    const int64_t mr = MK_TILE_MR(uk), nr = MK_TILE_NR(uk);
    const MK_TC one = 1;
    MK_THREAD_SETUP();
    const int team = tp->nt > 1;
    const int64_t lead = mk_lead(c, rs_c, cs_c, n, nr);
    /* this thread's rows: MR panels [P*ti/tm, P*(ti+1)/tm) of the P of C */
    const int64_t P = (m + mr - 1) / mr;
    const int64_t r0 = mk_min(m, P * tp->ti / tp->tm * mr);
    const int64_t r1 = mk_min(m, P * (tp->ti + 1) / tp->tm * mr);
    const int64_t mcb = team ? mk_balance(r1 - r0 > 0 ? r1 - r0 : 1, mc_blk, mr) : mc_blk;
    for (int64_t jc = 0; jc < n;) {
        const int64_t w0 = jc == 0 ? lead : 0;
        const int64_t nc = mk_min(w0 + nc_blk, n - jc);
        const int64_t npanels = (w0 > 0) + (nc - w0 + nr - 1) / nr;
        const int64_t q0 = npanels * tp->tj / tp->tn, q1 = npanels * (tp->tj + 1) / tp->tn;
        for (int64_t pc = 0; pc < k; pc += kc_blk) {
            const int64_t kc = mk_min(kc_blk, k - pc);
            const MK_TC *beta_p = pc == 0 ? &beta : &one;
#if MK_TYPED
            /* the micro-kernel's depth: kc padded to the K group with zeros (and the
             * trailer, MK_B_COLSUM) */
            const int64_t kcp = MK_KCP(kc);
#else
            const int64_t kcp = kc;
#endif
            const int64_t b_stride = team ? mk_team_b_stride(nr, kcp) : nr * kcp;
            if (team) {
                /* the team packs the block: thread t its share of the panels */
#pragma omp barrier
                for (int64_t jp = npanels * tp->t / tp->nt; jp < npanels * (tp->t + 1) / tp->nt; ++jp)
                    mk_pack_b_panel(jp, w0, nr, nc, kc, kcp, b + pc * rs_b + jc * cs_b, rs_b, cs_b,
                                    b_pack + jp * b_stride);
#pragma omp barrier
            } else {
#if MK_TYPED
                if (w0 > 0)
                    mk_pack_b(w0, kc, kcp, b + pc * rs_b + jc * cs_b, cs_b, rs_b, nr, b_pack);
                mk_pack_b(nc - w0, kc, kcp, b + pc * rs_b + (jc + w0) * cs_b, cs_b, rs_b, nr,
                          b_pack + (w0 > 0 ? nr * kcp : 0));
#else
                if (w0 > 0)
                    mk_pack_block(w0, kc, b + pc * rs_b + jc * cs_b, cs_b, rs_b, nr, b_pack);
                mk_pack_block(nc - w0, kc, b + pc * rs_b + (jc + w0) * cs_b, cs_b, rs_b, nr,
                              b_pack + (w0 > 0 ? nr * kc : 0));
#endif
            }
            for (int64_t ic = r0; ic < r1; ic += mcb)
                mk_macro(uk, mk_min(mcb, r1 - ic), kc, kcp, alpha, a + ic * rs_a + pc * cs_a,
                         rs_a, cs_a, b_pack, b_stride, q0, q1, w0, nc, beta_p,
                         c + ic * rs_c + jc * cs_c, rs_c, cs_c, a_pack, edge);
        }
        jc += nc;
    }
    MK_PREFETCH_B(NULL, 0);
    MK_THREAD_TEARDOWN();
}

/* ---- the team's flow: dynamic units without a barrier per block ----------------------
 *
 * The default team (a grid of one column, blk->chunks > 0). Its work is a list of
 * items that every thread takes from one counter, in order, until none is left:
 *
 *   the pieces of block 0's B;  then for each block t = 0, 1, ..., T - 1 (the KC x NC
 *   blocks in the jc, pc order of the loops):  the pieces of block t + 1's B, then the
 *   units of block t
 *
 * A piece is a share of a block's NR panels (packed into the block's buffer, one of
 * MK_FLOW_BUFS in turn); a unit is a chunk of `chunk` rows (whole MR panels) times one
 * of `parts` parts of the block's panels, taken part-major (the team works through
 * one part of the B block, KC x NC/parts, before the next), whose macro-kernel packs
 * its own rows of A (mk_macro). Each item waits, spinning, only for what it reads or
 * overwrites, all of it in items taken earlier:
 *   - a unit of block t for every piece of block t (its B panels), and for the same
 *     unit of block t - 1 when t - 1 is the previous KC block of the same C columns
 *     (the same C tiles, whose KC blocks must add up in order; no unit waits for the
 *     previous NC block's);
 *   - a piece of block t for every unit of block t - MK_FLOW_BUFS, the buffer's last
 *     reader.
 * So no thread waits at a barrier for the tail of a block: a thread without a unit of
 * block t left goes on to the next block's pieces and units, and the next block's
 * packing overlaps the last units of the one before. Before this (until 2026-12-04)
 * the team packed each block between two barriers. The units and the order of the KC
 * blocks on each C tile are the same on every run whoever takes them, so C is
 * bit-identical from run to run. */
#ifndef MK_FLOW_BUFS
#define MK_FLOW_BUFS 3
#endif
#if MK_FLOW_BUFS < 2
#error "MK_FLOW_BUFS: at least 2 B buffers (3 let a block's packing overlap the tail of the one before the last)"
#endif

/* Unit u of block t, when finished, writes t into done[t % MK_FLOW_RING][u] (-1
 * before). The slot is next written by unit u of block t + MK_FLOW_RING, which runs
 * only after every unit of block t + MK_FLOW_RING - MK_FLOW_BUFS has finished (its B
 * pieces wait for them), the unit of block t + 1 that reads the slot among them. (A
 * single slot per unit would not do: unit u of the previous NC block, which no unit
 * waits for, could finish last and write an older block over a newer one.) */
#define MK_FLOW_RING (MK_FLOW_BUFS + 1)

typedef struct {
    int64_t next;       /* the next item */
    int64_t *packed;    /* [T] pieces of block t packed */
    int64_t *finished;  /* [T] units of block t finished */
    int64_t *done;      /* [MK_FLOW_RING][units] see above */
    int64_t units;      /* the most units of a block */
    int64_t blocks;     /* T */
    int64_t lead;       /* C's columns before its first MK_C_ALIGN boundary (mk_lead) */
} mk_flow;

/* Block t of the flow: its place (jc, nc, w0, pc, kc, kcp) and its item counts. */
typedef struct {
    int64_t jc, nc, w0, npanels, pc, kc, kcp, b_stride, parts, units, pieces;
} mk_flow_block;

static mk_flow_block mk_flow_at(int64_t t, int64_t n, int64_t k, int64_t nc_blk, int64_t kc_blk,
                                int64_t lead, int64_t nr, int64_t row_chunks, int64_t parts,
                                int nt)
{
    mk_flow_block f;
    const int64_t kb = (k + kc_blk - 1) / kc_blk, jb = t / kb;
    const int64_t first = mk_min(lead + nc_blk, n);      /* the first NC block's columns */
    f.jc = jb == 0 ? 0 : first + (jb - 1) * nc_blk;
    f.w0 = jb == 0 ? lead : 0;
    f.nc = jb == 0 ? first : mk_min(nc_blk, n - f.jc);
    f.npanels = (f.w0 > 0) + (f.nc - f.w0 + nr - 1) / nr;
    f.pc = t % kb * kc_blk;
    f.kc = mk_min(kc_blk, k - f.pc);
    f.kcp = MK_KCP(f.kc);
    f.b_stride = mk_team_b_stride(nr, f.kcp);
    f.parts = mk_min(parts, f.npanels);
    f.units = row_chunks * f.parts;
    f.pieces = mk_min(f.npanels, (int64_t)nt);
    return f;
}

static int64_t mk_flow_blocks(int64_t n, int64_t k, int64_t nc_blk, int64_t kc_blk, int64_t lead)
{
    const int64_t first = mk_min(lead + nc_blk, n);
    return (1 + (n - first + nc_blk - 1) / nc_blk) * ((k + kc_blk - 1) / kc_blk);
}

static void mk_flow_wait(const int64_t *p, int64_t v)
{
    for (unsigned spins = 0; __atomic_load_n(p, __ATOMIC_ACQUIRE) < v; ++spins) {
        if (spins < 4096)
            mk_cpu_relax();
        else
            sched_yield();             /* its producer may be descheduled on our core */
    }
}

static void mk_loops_flow(const mk_ukernel_desc *uk, int64_t m, int64_t n, int64_t k,
                          int64_t nc_blk, int64_t kc_blk, MK_TC alpha,
                          const MK_SA *a, int64_t rs_a, int64_t cs_a,
                          const MK_SB *b, int64_t rs_b, int64_t cs_b, MK_TC beta,
                          MK_TC *c, int64_t rs_c, int64_t cs_c,
                          MK_TA *a_pack, MK_TB *const b_bufs[MK_FLOW_BUFS], MK_TC *edge,
                          int nt, int64_t chunk, int64_t parts, mk_flow *fl)
{
    const int64_t nr = MK_TILE_NR(uk);
    const MK_TC one = 1;
    MK_THREAD_SETUP();
    const int64_t row_chunks = (m + chunk - 1) / chunk, T = fl->blocks;
#define MK_FLOW_AT(t) mk_flow_at(t, n, k, nc_blk, kc_blk, fl->lead, nr, row_chunks, parts, nt)
    /* this thread's place in the list: segment t (-1: block 0's pieces) starts at item
     * base; cur is block t, nxt block t + 1 (pieces 0 past the last block) */
    int64_t t = -1, base = 0;
    mk_flow_block cur = MK_FLOW_AT(0), nxt = cur;
    int64_t seg = nxt.pieces;
    for (;;) {
        const int64_t item = __atomic_fetch_add(&fl->next, 1, __ATOMIC_RELAXED);
        while (item >= base + seg && t < T) {      /* items only grow: move forward */
            base += seg;
            ++t;
            if (t == T)
                break;
            cur = nxt;
            if (t + 1 < T)
                nxt = MK_FLOW_AT(t + 1);
            else
                nxt.pieces = 0;
            seg = nxt.pieces + cur.units;
        }
        if (t == T)
            break;
        const int64_t off = item - base;
        if (off < nxt.pieces) {                     /* a piece of block t + 1's B */
            const int64_t tb = t + 1;
            if (tb >= MK_FLOW_BUFS) {               /* the buffer's last reader is done */
                const mk_flow_block old = MK_FLOW_AT(tb - MK_FLOW_BUFS);
                mk_flow_wait(&fl->finished[tb - MK_FLOW_BUFS], old.units);
            }
            MK_TB *dst = b_bufs[tb % MK_FLOW_BUFS];
            for (int64_t jp = nxt.npanels * off / nxt.pieces; jp < nxt.npanels * (off + 1) / nxt.pieces; ++jp)
                mk_pack_b_panel(jp, nxt.w0, nr, nxt.nc, nxt.kc, nxt.kcp,
                                b + nxt.pc * rs_b + nxt.jc * cs_b, rs_b, cs_b, dst + jp * nxt.b_stride);
            __atomic_fetch_add(&fl->packed[tb], 1, __ATOMIC_RELEASE);
            continue;
        }
        /* a unit of block t */
        const int64_t u = off - nxt.pieces;
        mk_flow_wait(&fl->packed[t], cur.pieces);
        if (cur.pc > 0)                             /* its C tiles' previous KC block */
            mk_flow_wait(&fl->done[(t - 1) % MK_FLOW_RING * fl->units + u], t - 1);
        const int64_t part = u / row_chunks, ic = u % row_chunks * chunk;
        mk_macro(uk, mk_min(chunk, m - ic), cur.kc, cur.kcp, alpha, a + ic * rs_a + cur.pc * cs_a,
                 rs_a, cs_a, b_bufs[t % MK_FLOW_BUFS], cur.b_stride, cur.npanels * part / cur.parts,
                 cur.npanels * (part + 1) / cur.parts, cur.w0, cur.nc, cur.pc == 0 ? &beta : &one,
                 c + ic * rs_c + cur.jc * cs_c, rs_c, cs_c, a_pack, edge);
        __atomic_store_n(&fl->done[t % MK_FLOW_RING * fl->units + u], t, __ATOMIC_RELEASE);
        __atomic_fetch_add(&fl->finished[t], 1, __ATOMIC_RELEASE);
    }
#undef MK_FLOW_AT
    MK_PREFETCH_B(NULL, 0);
    MK_THREAD_TEARDOWN();
}

/* One GEMM call's operands and blocking, as the pool's jobs carry them. */
typedef struct {
    const mk_ukernel_desc *uk;
    int64_t m, n, k, mc_blk, nc_blk, kc_blk;
    MK_TC alpha;
    const MK_SA *a;
    int64_t rs_a, cs_a;
    const MK_SB *b;
    int64_t rs_b, cs_b;
    MK_TC beta;
    MK_TC *c;
    int64_t rs_c, cs_c;
} mk_call;

/* The flow's arguments, for the pool's threads (mk_pool_run): slot s takes the s-th
 * per-thread share of the workspace after the B buffers (its A block, its edge tile). */
typedef struct {
    mk_call g;
    char *per_ws;
    size_t per_thread, a_bytes;
    MK_TB *const *b_bufs;
    int nt;
    int64_t chunk, parts;
    mk_flow *fl;
} mk_flow_job;

#if MK_HAVE_POOL
static void mk_flow_job_run(void *arg, int slot)
{
    const mk_flow_job *j = (const mk_flow_job *)arg;
    char *mine = j->per_ws + j->per_thread * (size_t)slot;
    const mk_call *g = &j->g;
    mk_loops_flow(g->uk, g->m, g->n, g->k, g->nc_blk, g->kc_blk, g->alpha, g->a, g->rs_a, g->cs_a,
                  g->b, g->rs_b, g->cs_b, g->beta, g->c, g->rs_c, g->cs_c, (MK_TA *)mine, j->b_bufs,
                  (MK_TC *)(mine + j->a_bytes), j->nt, j->chunk, j->parts, j->fl);
}
#endif

#ifdef MK_C_STATIONARY
/* ---- C-stationary loops (one thread; a module that defines MK_C_STATIONARY) --------
 *
 *   pack all of B: for jc, for pc: the KC x NC block as NR micro-panels, in that order
 *   for ic in 0..M step MC          pack A[ic:ic+MC, 0:K]: one MC x KC sub-block per pc
 *     for jc in 0..N step NC
 *       for pc in 0..K step KC
 *         for jr, for ir            micro-kernel(KC, 1, A panel, B panel, beta', tile)
 *       C[ic.., jc..] := alpha * tiles + beta * C, row by row
 *
 * The MC x NC block of C is accumulated across the KC blocks in a buffer of whole
 * tiles (beta' = 0 in the first KC block, 1 after), tile-major ([jr][ir][MR][NR]: each
 * tile compact, the ir loop's next tile next in memory), rather than in C, whose rows
 * lie a row stride apart; C itself is written once, row by row along its rows. B's
 * micro-panels are read in memory order, so the next one is the one MK_PREFETCH_B
 * hands out. Measured on the AMX tiles (Sapphire Rapids, one thread, n = 3072-4096):
 * 2.0-8.6% faster than the five loops above; with one KC block 6-10% slower (hence
 * only for several); storing each tile straight to C in the last KC block instead of
 * row by row was no faster (docs/design-notes.md, AMX: C stays in compact tiles). */

/* Bytes of the C-stationary workspace (the whole packed B, one A row block of all K,
 * the tiles of one MC x NC block of C); *b_bytes, *a_bytes: the first two parts. */
/* The C-stationary loops' packed depth of all K (each KC block padded, with its trailer)
 * and where block pc starts in it (every block but the last is whole K groups). */
static inline int64_t mk_cstat_kp(int64_t k, int64_t kc_blk)
{
    return mk_round_up(k, MK_G) + (k + kc_blk - 1) / kc_blk * MK_B_TRAILER;
}

static inline int64_t mk_cstat_kpos(int64_t pc, int64_t kc_blk)
{
    return pc + pc / kc_blk * MK_B_TRAILER;
}

static size_t mk_cstat_bytes(int64_t n, int64_t kp, int64_t mc_blk, int64_t nc_blk,
                             int64_t mr, int64_t nr, size_t *b_bytes, size_t *a_bytes)
{
    const int64_t mp = (mc_blk + mr - 1) / mr, np_blk = (nc_blk + nr - 1) / nr;
    *b_bytes = (size_t)mk_round_up(((n + nr - 1) / nr * nr * kp + MK_PACK_SLACK) * (int64_t)sizeof(MK_TB), 64);
    *a_bytes = (size_t)mk_round_up((mp * mr * kp + MK_PACK_SLACK) * (int64_t)sizeof(MK_TA), 64);
    return *b_bytes + *a_bytes + (size_t)mk_round_up(mp * np_blk * mr * nr * (int64_t)sizeof(MK_TC), 64);
}

/* The driver takes these loops when the whole packed B is at most this many bytes. */
#ifndef MK_CSTAT_MAX_B
#define MK_CSTAT_MAX_B ((size_t)1 << 30)
#endif

/* With beta = 0 and C of at least MK_CSTAT_NT_MIN bytes, the pass that writes C stores
 * it non-temporally (MOVNTDQ, SDM vol. 2B; x86-64 only): C is written once and read by
 * no later step of the call, so its lines are not read for ownership first nor kept
 * in the caches (docs/design-notes.md, AMX: C stays in compact tiles). 0: never. */
#ifndef MK_CSTAT_NT_MIN
#define MK_CSTAT_NT_MIN ((size_t)16 << 20)
#endif
#if defined(__x86_64__) && defined(__SSE2__)
typedef long long mk_v2di __attribute__((vector_size(16)));
/* dst[0:w] := alpha * t[0:w] by 16-byte non-temporal stores; 0 (nothing stored) when
 * dst is not 16-byte aligned or w elements are not whole 16-byte pieces */
static int mk_store_nt(MK_TC *dst, const MK_TC *t, int64_t w, MK_TC alpha)
{
    enum { V = 16 / sizeof(MK_TC) };
    if (((uintptr_t)dst & 15) != 0 || w % V != 0)
        return 0;
    for (int64_t j = 0; j < w; j += V) {
        MK_TC v[V];
        for (int q = 0; q < V; ++q)
            v[q] = MK_SCALE(alpha, t[j + q]);
        mk_v2di x;
        memcpy(&x, v, sizeof x);
        __builtin_ia32_movntdq((mk_v2di *)(dst + j), x);
    }
    return 1;
}
#define MK_SFENCE() __builtin_ia32_sfence()
#else
static int mk_store_nt(MK_TC *dst, const MK_TC *t, int64_t w, MK_TC alpha)
{
    (void)dst; (void)t; (void)w; (void)alpha;
    return 0;
}
#define MK_SFENCE() ((void)0)
#endif

static int mk_loops_cstat(const mk_ukernel_desc *uk, int64_t m, int64_t n, int64_t k,
                          int64_t mc_blk, int64_t nc_blk, int64_t kc_blk, MK_TC alpha,
                          const MK_SA *a, int64_t rs_a, int64_t cs_a,
                          const MK_SB *b, int64_t rs_b, int64_t cs_b, MK_TC beta,
                          MK_TC *c, int64_t rs_c, int64_t cs_c)
{
    const int64_t mr = MK_TILE_MR(uk), nr = MK_TILE_NR(uk);
    const MK_TC one = 1, zero = 0;
    (void)uk;
    const int64_t kp = mk_cstat_kp(k, kc_blk);
    size_t b_bytes, a_bytes;
    char *ws = (char *)mk_ws_get(mk_cstat_bytes(n, kp, mc_blk, nc_blk, mr, nr, &b_bytes, &a_bytes));
    if (!ws)
        return MK_ENOMEM;
    MK_TB *bpk = (MK_TB *)ws;
    MK_TA *apk = (MK_TA *)(ws + b_bytes);
    MK_TC *acc = (MK_TC *)(ws + b_bytes + a_bytes);
    MK_THREAD_SETUP();
    /* B, whole: block jc at bpk + jc * kp, its KC sub-block pc at + mk_cstat_kpos(pc) *
     * (its panels x NR) (every KC block but the last is a whole number of K groups:
     * mk_balance) */
    for (int64_t jc = 0; jc < n; jc += nc_blk) {
        const int64_t nc = mk_min(nc_blk, n - jc), ncr = (nc + nr - 1) / nr * nr;
        for (int64_t pc = 0; pc < k; pc += kc_blk) {
            const int64_t kc = mk_min(kc_blk, k - pc);
#if MK_TYPED
            mk_pack_b(nc, kc, MK_KCP(kc), b + pc * rs_b + jc * cs_b, cs_b, rs_b, nr,
                      bpk + jc * kp + mk_cstat_kpos(pc, kc_blk) * ncr);
#else
            mk_pack_block(nc, kc, b + pc * rs_b + jc * cs_b, cs_b, rs_b, nr, bpk + jc * kp + pc * ncr);
#endif
        }
    }
    const char *const b_end = (const char *)(bpk + (n + nr - 1) / nr * nr * kp);
    const int nt = MK_CSTAT_NT_MIN > 0 && beta == 0 && cs_c == 1
                   && (size_t)m * (size_t)n * sizeof(MK_TC) >= (size_t)MK_CSTAT_NT_MIN;
    for (int64_t ic = 0; ic < m; ic += mc_blk) {
        const int64_t mc = mk_min(mc_blk, m - ic), mpanels = (mc + mr - 1) / mr;
        const int64_t mcr = mpanels * mr;
        for (int64_t pc = 0; pc < k; pc += kc_blk) {
            const int64_t kc = mk_min(kc_blk, k - pc);
#if MK_TYPED
            mk_pack_a(mc, kc, MK_KCP(kc), a + ic * rs_a + pc * cs_a, rs_a, cs_a, mr,
                      apk + mk_cstat_kpos(pc, kc_blk) * mcr);
#else
            mk_pack_block(mc, kc, a + ic * rs_a + pc * cs_a, rs_a, cs_a, mr, apk + pc * mcr);
#endif
        }
        for (int64_t jc = 0; jc < n; jc += nc_blk) {
            const int64_t nc = mk_min(nc_blk, n - jc), npanels = (nc + nr - 1) / nr;
            for (int64_t pc = 0; pc < k; pc += kc_blk) {
                const int64_t kcp = MK_KCP(mk_min(kc_blk, k - pc));
                const MK_TA *asub = apk + mk_cstat_kpos(pc, kc_blk) * mcr;
                const MK_TB *bsub = bpk + jc * kp + mk_cstat_kpos(pc, kc_blk) * npanels * nr;
                const int64_t pbytes = nr * kcp * (int64_t)sizeof(MK_TB);
                for (int64_t jp = 0; jp < npanels; ++jp) {
                    const MK_TB *bp = bsub + jp * nr * kcp;
                    /* the next micro-panel in memory is the next one read */
                    const char *next_b = (const char *)(bp + nr * kcp);
                    const int64_t next_bytes = next_b + pbytes <= b_end ? pbytes : 0;
                    (void)next_b; (void)next_bytes;
                    for (int64_t ip = 0; ip < mpanels; ++ip) {
                        MK_PREFETCH_B(next_b + next_bytes * ip / mpanels,
                                      next_bytes * (ip + 1) / mpanels - next_bytes * ip / mpanels);
                        MK_CALL_UKERNEL(uk, kcp, &one, asub + ip * mr * kcp, bp,
                                        pc == 0 ? &zero : &one,
                                        acc + (jp * mpanels + ip) * mr * nr, nr, 1);
                    }
                }
            }
            for (int64_t i = 0; i < mc; ++i) {   /* C := alpha * tiles + beta * C */
                MK_TC *ci = c + (ic + i) * rs_c + jc * cs_c;
                const MK_TC *ti = acc + (i / mr) * mr * nr + (i % mr) * nr;
                for (int64_t jp = 0; jp < npanels; ++jp) {
                    const MK_TC *t = ti + jp * mpanels * mr * nr;
                    MK_TC *cp = ci + jp * nr * cs_c;
                    const int64_t w = mk_min(nr, nc - jp * nr);
                    if (nt && mk_store_nt(cp, t, w, alpha))
                        continue;
                    if (cs_c == 1 && beta == 0)
                        for (int64_t j = 0; j < w; ++j)
                            cp[j] = MK_SCALE(alpha, t[j]);
                    else if (cs_c == 1)
                        for (int64_t j = 0; j < w; ++j)
                            cp[j] = MK_AXPBY(MK_SCALE(alpha, t[j]), beta, cp[j]);
                    else
                        for (int64_t j = 0; j < w; ++j)
                            cp[j * cs_c] = beta == 0 ? MK_SCALE(alpha, t[j])
                                : MK_AXPBY(MK_SCALE(alpha, t[j]), beta, cp[j * cs_c]);
                }
            }
        }
    }
    if (nt)
        MK_SFENCE();   /* the non-temporal stores ordered before the call returns */
    MK_PREFETCH_B(NULL, 0);
    MK_THREAD_TEARDOWN();
    return MK_OK;
}
#endif

/* How a GEMM's threads share it: MK_SLICES (each thread a contiguous slice of N, or
 * of M, with its own packing and no barrier: measured best on the project's shared
 * 2-core machine, where a barrier waits for a descheduled thread) or MK_TEAM (the
 * shared-B team of mk_loops: the B block packed once, not once per thread, and A
 * read once per NC block). $MICROKERNEL_THREADING = slices | team forces one (read
 * once); the default is the team from 3 threads on (docs/design-notes.md, threads). */
enum { MK_SLICES = 0, MK_TEAM = 1 };

/* The slice decomposition's call: slice i of `slices` is units [units * i / slices,
 * units * (i + 1) / slices) of whole NR panels of N (split_n) or MR panels of M. */
typedef struct {
    mk_call g;
    char *ws;                       /* per thread: its A block, B block, edge tile */
    size_t per_thread, a_bytes, b_bytes;
    int64_t units, slices, next;    /* next: the next slice to take */
    int split_n;
} mk_slices_job;

/* Take slices from the job's counter until none is left, each run by the serial loops
 * on the buffers of `slot` (an OpenMP thread number or the pool's slot). Any subset of
 * the threads finishes them (the pool returns when those that joined have left), and
 * each slice's C is the same whoever takes it. */
static void mk_slices_take(void *arg, int slot)
{
    mk_slices_job *j = (mk_slices_job *)arg;
    const mk_call *g = &j->g;
    const int64_t mr = MK_TILE_MR(g->uk), nr = MK_TILE_NR(g->uk);
    char *mine = j->ws + j->per_thread * (size_t)slot;
    MK_TA *a_pack = (MK_TA *)mine;
    MK_TB *b_pack = (MK_TB *)(mine + j->a_bytes);
    MK_TC *edge = (MK_TC *)(mine + j->a_bytes + j->b_bytes);
    for (int64_t i; (i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < j->slices;) {
        const int64_t lo = j->units * i / j->slices, hi = j->units * (i + 1) / j->slices;
        if (j->split_n) {
            const int64_t j0 = lo * nr, j1 = mk_min(g->n, hi * nr);
            if (j1 > j0)
                mk_loops(g->uk, g->m, j1 - j0, g->k, g->mc_blk, g->nc_blk, g->kc_blk, g->alpha,
                         g->a, g->rs_a, g->cs_a, g->b + j0 * g->cs_b, g->rs_b, g->cs_b, g->beta,
                         g->c + j0 * g->cs_c, g->rs_c, g->cs_c, a_pack, b_pack, edge, &mk_alone);
        } else {
            const int64_t i0 = lo * mr, i1 = mk_min(g->m, hi * mr);
            if (i1 > i0)
                mk_loops(g->uk, i1 - i0, g->n, g->k, g->mc_blk, g->nc_blk, g->kc_blk, g->alpha,
                         g->a + i0 * g->rs_a, g->rs_a, g->cs_a, g->b, g->rs_b, g->cs_b, g->beta,
                         g->c + i0 * g->rs_c, g->rs_c, g->cs_c, a_pack, b_pack, edge, &mk_alone);
        }
    }
}

static int mk_threading(int nthreads)
{
    static int forced = -2;            /* -2: not read yet; -1: automatic */
    if (forced == -2) {
        const char *e = getenv("MICROKERNEL_THREADING");
        forced = !e ? -1 : !strcmp(e, "team") ? MK_TEAM : !strcmp(e, "slices") ? MK_SLICES : -1;
    }
    if (forced >= 0)
        return forced;
    return nthreads >= 3 ? MK_TEAM : MK_SLICES;
}

/* The team's grid: tm rows x tn columns of threads. MK_GRID_ROWS: tm the largest
 * divisor of nt that has at least one MR panel of rows each (threads on distinct rows
 * pack distinct A blocks). MK_GRID_SQUARE (BLIS's ic x jr ways): the divisor that makes
 * each thread's part of C most nearly square, so that its share of the B block
 * (KC x NC/tn) is tn times smaller and can stay in its L2 across the ic loop, at the
 * price of tn threads packing the same A block. $MICROKERNEL_TEAM_GRID = rows | square
 * (read once); rows by default. */
enum { MK_GRID_ROWS = 0, MK_GRID_SQUARE = 1 };

static int mk_grid_kind(void)
{
    static int kind = -1;
    if (kind < 0) {
        const char *e = getenv("MICROKERNEL_TEAM_GRID");
        kind = e && !strcmp(e, "square") ? MK_GRID_SQUARE : MK_GRID_ROWS;
    }
    return kind;
}

static void mk_team_grid(int nt, int64_t m, int64_t n, int64_t mr, int64_t nr, int *tm, int *tn)
{
    const int64_t row_panels = (m + mr - 1) / mr, col_panels = (n + nr - 1) / nr;
    int best = 1;
    double best_score = 1e300;
    const int square = mk_grid_kind() == MK_GRID_SQUARE;
    for (int d = 1; d <= nt; ++d) {
        if (nt % d != 0 || d > row_panels)
            continue;
        if (!square) {
            best = d;
            continue;
        }
        if (nt / d > col_panels && d != 1)
            continue;
        /* |log(rows per thread / columns per thread)|, ties to more rows */
        const double r = ((double)m / d) / ((double)n / (nt / d));
        const double score = r >= 1.0 ? r : 1.0 / r;
        if (score <= best_score) {
            best_score = score;
            best = d;
        }
    }
    *tm = best;
    *tn = nt / best;
}

/* ---- the driver ----------------------------------------------------------------------- */

/*
 * C(m x n) := alpha * A(m x k) * B(k x n) + beta * C, element (i, j) of X at
 * x[i*rs_x + j*cs_x] (strides in elements, any sign). BLAS semantics: m == 0 or
 * n == 0 touches nothing; k == 0 or alpha == 0 gives C := beta*C without reading A
 * or B; beta == 0 never reads C. Returns MK_OK, MK_EINVAL (negative size, bad
 * blocking or descriptor) or MK_ENOMEM (workspace allocation failed).
 * nthreads > 1 splits N (else M) between an OpenMP team when built with -fopenmp.
 */
int MK_DRIVER_NAME(const mk_ukernel_desc *uk, const mk_blocking *blk,
                   int64_t m, int64_t n, int64_t k, MK_TC alpha,
                   const MK_SA *a, int64_t rs_a, int64_t cs_a,
                   const MK_SB *b, int64_t rs_b, int64_t cs_b,
                   MK_TC beta, MK_TC *c, int64_t rs_c, int64_t cs_c, int nthreads)
{
    if (m < 0 || n < 0 || k < 0 || !uk || uk->mr < 1 || uk->nr < 1 || !blk
        || blk->kc < 1 || blk->mc < 1 || blk->nc < 1 || blk->chunks < 0
        || blk->parts < 1)
        return MK_EINVAL;
    if (m == 0 || n == 0)
        return MK_OK;
    if (k == 0 || alpha == 0) {
        mk_scale_c(m, n, beta, c, rs_c, cs_c);
        return MK_OK;
    }
#if !MK_TYPED
    /* The micro-kernel's fast path wants unit column stride in C. When C's rows are
     * unit-stride instead (column-major C), compute C^T = B^T A^T. (Typed tiles keep
     * A and B in their places: their types and K groups differ; the micro-kernel's
     * general-stride store takes column-major C.) */
    if ((m == 1 && n > 1)                 /* a row of C: the GEMV below wants a column */
        || (n > 1 && cs_c != 1
            && (rs_c == 1 || (rs_c < 0 ? -rs_c : rs_c) < (cs_c < 0 ? -cs_c : cs_c)))) {
        const float *t = a; a = b; b = t;
        int64_t s;
        s = m; m = n; n = s;
        s = rs_a; rs_a = cs_b; cs_b = s;   /* new A = B^T: rs = cs_b, cs = rs_b */
        s = cs_a; cs_a = rs_b; rs_b = s;   /* new B = A^T: rs = cs_a, cs = rs_a */
        s = rs_c; rs_c = cs_c; cs_c = s;
    }
    if (n == 1) {                         /* matrix-vector: a register tile would waste
                                             NR-1 of its NR columns */
        if (nthreads < 1)
            nthreads = 1;
        float *ws = (float *)mk_ws_get(((size_t)k + (size_t)m + 32) * sizeof(float));
        if (!ws)
            return MK_ENOMEM;
        mk_gemv(m, k, alpha, a, rs_a, cs_a, b, rs_b, beta, c, rs_c, ws, ws + k, nthreads);
        return MK_OK;
    }
#endif
    const int64_t mr = uk->mr, nr = uk->nr;
#if MK_TYPED
    /* KC blocks: multiples of the K group (and of 8 when they are balanced) */
    const int64_t kc_blk = mk_balance(k, mk_round_up(blk->kc, MK_G), MK_G > 8 ? MK_G : 8);
#else
    const int64_t kc_blk = mk_balance(k, blk->kc, 8);
#endif
    const int64_t mc_blk = mk_balance(m, blk->mc < mr ? mr : blk->mc - blk->mc % mr, mr);
    const int64_t nc_blk = mk_balance(n, blk->nc < nr ? nr : blk->nc - blk->nc % nr, nr);
    if (nthreads < 1)
        nthreads = 1;
#ifndef _OPENMP
    nthreads = 1;
#endif
#if defined(MK_C_STATIONARY) && !defined(MK_BLIS_LOOPS)
    /* one thread and more than one KC block: the C-stationary loops (above), when the
     * whole packed B is at most MK_CSTAT_MAX_B bytes (MK_BLIS_LOOPS: never, to race
     * them) */
    if (nthreads == 1 && k > kc_blk) {
        size_t cs_b_bytes, cs_a_bytes;
        mk_cstat_bytes(n, mk_cstat_kp(k, kc_blk), mc_blk, nc_blk, mr, nr, &cs_b_bytes, &cs_a_bytes);
        if (cs_b_bytes <= MK_CSTAT_MAX_B)
            return mk_loops_cstat(uk, m, n, k, mc_blk, nc_blk, kc_blk, alpha, a, rs_a, cs_a,
                                  b, rs_b, cs_b, beta, c, rs_c, cs_c);
    }
#endif
    if (nthreads > 1 && mk_threading(nthreads) == MK_TEAM) {
        /* the shared-B team: B blocks for all (MK_FLOW_BUFS of them in turn for the
         * flow of dynamic units, one for fixed shares), A and the edge buffer per thread */
        int tm, tn;
        mk_team_grid(nthreads, m, n, mr, nr, &tm, &tn);
        const int64_t chunks = blk->chunks;  /* > 0: dynamic units; 0: fixed shares */
        const int flow = chunks > 0 && tn == 1;
        const int64_t max_panels = (nc_blk + (MK_C_ALIGN > 0 ? nr : 0) + nr - 1) / nr + 1;
        const int64_t kcp_max = MK_KCP(kc_blk);
        const size_t b_shared = (size_t)mk_round_up(
            max_panels * mk_team_b_stride(nr, kcp_max) * (int64_t)sizeof(MK_TB), 64);
        const size_t b_total = b_shared * (flow ? MK_FLOW_BUFS : 1);
        const size_t a_bytes = (size_t)mk_round_up(
            (mc_blk * kcp_max + MK_PACK_SLACK) * (int64_t)sizeof(MK_TA), 64);
        const size_t edge_bytes = (size_t)mk_round_up(mr * nr * (int64_t)sizeof(MK_TC), 64);
        const size_t per_thread = a_bytes + edge_bytes;
        char *ws = (char *)mk_ws_get(b_total + per_thread * (size_t)nthreads);
        if (!ws)
            return MK_ENOMEM;
        /* dynamic units: about `chunks` per thread, each whole MR panels of rows times
         * one of `parts` parts of the block's columns; more units per thread than row
         * panels, or more parts than a block has panels (mk_flow_at takes min(parts,
         * its panels)), mean nothing (and would overflow the products below) */
        const int64_t panels = (m + mr - 1) / mr;
        const int64_t parts = mk_min(blk->parts, (mk_min(n, nc_blk) + nr - 1) / nr + (MK_C_ALIGN > 0));
        const int64_t ways = (int64_t)nthreads * mk_min(chunks > 0 ? chunks : 1, panels);
        const int64_t chunk = mk_min(mc_blk, (panels * parts + ways - 1) / ways * mr);
        mk_flow fl = {0, NULL, NULL, NULL, 0, 0, 0};
        int64_t *counts = NULL;
        if (flow) {
            fl.lead = mk_lead(c, rs_c, cs_c, n, nr);
            fl.blocks = mk_flow_blocks(n, k, nc_blk, kc_blk, fl.lead);
            const int64_t T = fl.blocks;
            fl.units = (m + chunk - 1) / chunk * parts;
            counts = (int64_t *)calloc((size_t)(2 * T + MK_FLOW_RING * fl.units), sizeof *counts);
            if (!counts)
                return MK_ENOMEM;
            fl.packed = counts;
            fl.finished = counts + T;
            fl.done = counts + 2 * T;
            for (int64_t u = 0; u < MK_FLOW_RING * fl.units; ++u)
                fl.done[u] = -1;
        }
        MK_TB *b_bufs[MK_FLOW_BUFS];
        for (int i = 0; i < MK_FLOW_BUFS; ++i)
            b_bufs[i] = (MK_TB *)(ws + b_shared * (size_t)(flow ? i : 0));
        int pooled = -1;
#if MK_HAVE_POOL
        if (flow) {                 /* the flow on our own threads (mk_pool.h says why) */
            const mk_flow_job job = {{uk, m, n, k, mc_blk, nc_blk, kc_blk, alpha, a, rs_a, cs_a, b,
                                      rs_b, cs_b, beta, c, rs_c, cs_c}, ws + b_total, per_thread,
                                     a_bytes, b_bufs, nthreads, chunk, parts, &fl};
            pooled = mk_pool_run(mk_flow_job_run, (void *)&job, nthreads);
        }
#endif
        if (pooled != 0)            /* -1: OpenMP's team (the pool is off, busy or absent) */
#pragma omp parallel num_threads(nthreads)
        {
#ifdef _OPENMP
            const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
            const int t = 0, nt = 1;
#endif
            char *mine = ws + b_total + per_thread * (size_t)t;
            if (flow) {
                mk_loops_flow(uk, m, n, k, nc_blk, kc_blk, alpha, a, rs_a, cs_a, b, rs_b, cs_b,
                              beta, c, rs_c, cs_c, (MK_TA *)mine, b_bufs,
                              (MK_TC *)(mine + a_bytes), nt, chunk, parts, &fl);
            } else {
                /* a team smaller than asked (OMP_THREAD_LIMIT, nesting) gets its own grid */
                int gtm = tm, gtn = tn;
                if (nt != nthreads)
                    mk_team_grid(nt, m, n, mr, nr, &gtm, &gtn);
                const mk_team_pos tp = {t, nt, t / gtn, gtm, t % gtn, gtn};
                mk_loops(uk, m, n, k, mc_blk, nc_blk, kc_blk, alpha, a, rs_a, cs_a, b, rs_b, cs_b,
                         beta, c, rs_c, cs_c, (MK_TA *)mine, b_bufs[0], (MK_TC *)(mine + a_bytes),
                         &tp);
            }
        }
        free(counts);
        return MK_OK;
    }
    /* Threads, the slice decomposition (BLIS's JC/IC ways): one contiguous slice of N
     * (in whole NR panels), or of M when N is too narrow, per thread, each run by the
     * serial loops with its own packing buffers: no barrier inside the GEMM. The slices
     * are taken from a counter (mk_slices_take) on the pool's threads (mk_pool.h), so a
     * thread that another runtime's spinner keeps off its core holds no slice: the
     * threads that did join take its slice. */
    int split_n = 1;
    int64_t units = (n + nr - 1) / nr;
    if (units < nthreads && (m + mr - 1) / mr > units) {
        split_n = 0;
        units = (m + mr - 1) / mr;
    }
    if (nthreads > units)
        nthreads = (int)units;
    /* each packed block (bytes) is followed by the packing's slack, rounded to keep
     * 64-byte alignment; MK_C_ALIGN's narrow first panel takes one more panel of B */
    const int64_t kcp_blk = MK_KCP(kc_blk);      /* kc_blk, and the trailer of MK_B_COLSUM */
    const size_t a_bytes = (size_t)mk_round_up(
        (mc_blk * kcp_blk + MK_PACK_SLACK) * (int64_t)sizeof(MK_TA), 64);
    const size_t b_bytes = (size_t)mk_round_up(
        (kcp_blk * (nc_blk + (MK_C_ALIGN > 0 ? nr : 0)) + MK_PACK_SLACK) * (int64_t)sizeof(MK_TB), 64);
    const size_t edge_bytes = (size_t)mk_round_up(mr * nr * (int64_t)sizeof(MK_TC), 64);
    const size_t per_thread = a_bytes + b_bytes + edge_bytes;
    char *ws = (char *)mk_ws_get(per_thread * (size_t)nthreads);
    if (!ws)
        return MK_ENOMEM;

    mk_slices_job job = {{uk, m, n, k, mc_blk, nc_blk, kc_blk, alpha, a, rs_a, cs_a, b, rs_b, cs_b,
                          beta, c, rs_c, cs_c}, ws, per_thread, a_bytes, b_bytes, units, nthreads,
                         0, split_n};
    int pooled = -1;
#if MK_HAVE_POOL
    pooled = mk_pool_run(mk_slices_take, (void *)&job, nthreads);  /* -1 for one thread */
#endif
    if (pooled != 0)
#pragma omp parallel num_threads(nthreads) if (nthreads > 1)
    {
#ifdef _OPENMP
        mk_slices_take(&job, omp_get_thread_num());
#else
        mk_slices_take(&job, 0);
#endif
    }
    return MK_OK;
}
