/*
 * The one GEMM driver, ISA-free: C := alpha * A*B + beta * C in fp32, or on typed inputs
 * (bf16, fp16, int8) into fp32 or int32 C (MK_TYPED, below).
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
 * operands, mk_pack.h); edge tiles (M % MR, N % NR) go through the micro-kernel's edge
 * entry point, else a local MR x NR buffer. Packing buffers live in a per-calling-thread
 * workspace that is grown when needed and reused (bounded by the blocking sizes), freed
 * when the thread exits. Threads (by default; MICROKERNEL_THREADING forces either): one,
 * or two where C has fewer than MK_TEAM2_MIN_M rows, take contiguous slices of N (or M
 * when N is narrow), each running these loops on its own packing buffers with no barrier
 * in between (mk_slices.h); more share each packed B block as a team (mk_team.h).
 *
 * A module that defines MK_C_STATIONARY (AMX, AVX512-BF16) gets other loops at one thread
 * when K spans several KC blocks: C accumulated in compact tiles (mk_loops_cstat).
 *
 * This file is included by each kernel's module after the micro-kernel (specialised
 * for its tile, see MK_MR below), and by the aarch64 harness; it uses no ISA-specific
 * code (GCC vector extensions compile to whatever the module's flags allow). It holds
 * the configuration macros and the entry point (mk_gemm_driver, at the end); its parts,
 * each one job, are included in this order after the macros:
 *
 *   mk_workspace.h  the per-calling-thread buffer that holds the packed panels (mk_ws_get)
 *   mk_pack.h       packing A and B into micro-panels (fp32, and typed K groups; B's
 *                   column sums, MK_B_COLSUM)
 *   mk_loops.h      C updates and edge tiles (mk_tile), the macro-kernel (mk_macro), the
 *                   five loops (mk_loops: alone, a slice, or a team's fixed share), and
 *                   what every thread path shares: mk_call (one call's operands),
 *                   mk_team_pos / mk_alone, mk_lead (MK_C_ALIGN), mk_team_b_stride
 *   mk_gemv.h       the fp32 matrix-vector path (n == 1)
 *   mk_trace.h      a timeline of the team's flow, in a module built with MK_FLOW_TRACE
 *                   (bench/flow_trace.py); empty otherwise
 *   mk_team.h       the shared-B team (by default 3 or more threads, or 2 on 256 rows or
 *                   more: mk_threading): its grid and its flow of dynamic units
 *                   (mk_loops_flow), called by mk_run_team
 *   mk_cstat.h      the C-stationary loops of one thread (MK_C_STATIONARY)
 *   mk_slices.h     the slice decomposition (one thread, or two on fewer than 256 rows,
 *                   by default; one thread is one slice), called by mk_run_slices
 *
 * mk_pool.h (our own worker threads) and mk_ukernel.h (the micro-kernel contract) are
 * headers of their own. microkernel/build.py's DRIVER_FILES lists the driver's files:
 * this one, its parts and the headers they include.
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

#include "mk_workspace.h"
#include "mk_pack.h"
#include "mk_loops.h"
#include "mk_gemv.h"
#include "mk_trace.h"
#include "mk_team.h"
#include "mk_cstat.h"
#include "mk_slices.h"

/* How a GEMM's threads share it: MK_SLICES (each thread a contiguous slice of N, or
 * of M, with its own packing and no barrier; mk_slices.h) or MK_TEAM (the shared-B
 * team, mk_team.h: the B block packed once, not once per thread, A read once per NC
 * block, the work handed out in units and slivers to whichever thread runs).
 * $MICROKERNEL_THREADING = slices | team forces one (read once). The default: the team
 * from 3 threads on, and at 2 threads where C has at least MK_TEAM2_MIN_M rows; the
 * slices at 2 threads below that, where the team's flow has too little work per B block
 * to pay for its waits (measured on a 2-core Zen 4, 2026-12-07: docs/design-notes.md,
 * threads). */
enum { MK_SLICES = 0, MK_TEAM = 1 };
#ifndef MK_TEAM2_MIN_M
#define MK_TEAM2_MIN_M 256
#endif

static int mk_threading(int nthreads, int64_t m)
{
    static int forced = -2;            /* -2: not read yet; -1: automatic */
    if (forced == -2) {
        const char *e = getenv("MICROKERNEL_THREADING");
        forced = !e ? -1 : !strcmp(e, "team") ? MK_TEAM : !strcmp(e, "slices") ? MK_SLICES : -1;
    }
    if (forced >= 0)
        return forced;
    return nthreads >= 3 || (nthreads == 2 && m >= MK_TEAM2_MIN_M) ? MK_TEAM : MK_SLICES;
}

/* ---- the driver ----------------------------------------------------------------------- */

/*
 * C(m x n) := alpha * A(m x k) * B(k x n) + beta * C, element (i, j) of X at
 * x[i*rs_x + j*cs_x] (strides in elements, any sign). BLAS semantics: m == 0 or
 * n == 0 touches nothing; k == 0 or alpha == 0 gives C := beta*C without reading A
 * or B; beta == 0 never reads C. Returns MK_OK, MK_EINVAL (negative size, bad
 * blocking or descriptor) or MK_ENOMEM (workspace allocation failed).
 * nthreads > 1 (with -fopenmp) runs on the driver's own pool of threads (mk_pool.h;
 * OpenMP's team where the pool is busy or off): slices or the team, as mk_threading
 * picks. One thread runs the slices' call with one slice (or the C-stationary loops).
 */
int MK_DRIVER_NAME(const mk_ukernel_desc *uk, const mk_blocking *blk,
                   int64_t m, int64_t n, int64_t k, MK_TC alpha,
                   const MK_SA *a, int64_t rs_a, int64_t cs_a,
                   const MK_SB *b, int64_t rs_b, int64_t cs_b,
                   MK_TC beta, MK_TC *c, int64_t rs_c, int64_t cs_c, int nthreads)
{
    if (m < 0 || n < 0 || k < 0 || !uk || uk->mr < 1 || uk->nr < 1 || !blk
        || blk->kc < 1 || blk->mc < 1 || blk->nc < 1 || blk->chunks < 0
        || blk->parts < 0)
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
    /* one thread and more than one KC block: the C-stationary loops (mk_cstat.h), when the
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
    const mk_call g = {uk, m, n, k, mc_blk, nc_blk, kc_blk, alpha, a, rs_a, cs_a, b, rs_b, cs_b,
                       beta, c, rs_c, cs_c};
    if (nthreads > 1 && mk_threading(nthreads, m) == MK_TEAM)
        return mk_run_team(&g, blk, nthreads);
    return mk_run_slices(&g, nthreads);
}
