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
 * beta' is beta on the first KC block and 1 after it. General row and column strides
 * (negative included) are absorbed by packing; edge tiles (M % MR, N % NR) go
 * through the micro-kernel's edge entry point, else a local MR x NR buffer. Packing buffers live in a per-calling-thread
 * workspace that is grown when needed and reused (bounded by the blocking sizes),
 * freed when the thread exits. With OpenMP, N (or M when N is narrow) is split
 * into one contiguous slice per thread, each running these loops on its own
 * packing buffers with no barrier in between.
 *
 * This file is included by each kernel's module after the micro-kernel, and by the
 * aarch64 harness; it uses no ISA-specific code.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "mk_ukernel.h"

enum { MK_OK = 0, MK_ENOMEM = -1, MK_EINVAL = -2 };

/* ---- per-calling-thread workspace ------------------------------------------------ */

typedef struct {
    float *buf;
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

/* A 64-byte-aligned buffer of at least `floats` floats, reused across calls. */
static float *mk_ws_get(size_t floats)
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
    size_t bytes = (floats * sizeof(float) + 63) & ~(size_t)63;
    if (bytes > ws->bytes) {
        free(ws->buf);
        ws->buf = (float *)aligned_alloc(64, bytes);
        ws->bytes = ws->buf ? bytes : 0;
    }
    return ws->buf;
}

/* Bytes held by the calling thread's packing workspace (0 before the first call). */
int64_t mk_workspace_bytes(void)
{
    pthread_once(&mk_ws_once, mk_ws_key_init);
    mk_workspace *ws = (mk_workspace *)pthread_getspecific(mk_ws_key);
    return ws ? (int64_t)ws->bytes : 0;
}

static int64_t mk_min(int64_t x, int64_t y) { return x < y ? x : y; }
static int64_t mk_round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/* ---- packing ----------------------------------------------------------------------- */

/* One MR-tall micro-panel of A: rows [0, mcur) of an mcur x kc block starting at a,
 * written as kc steps of MR floats, zero-padded to MR rows. */
static void mk_pack_a_panel(int64_t mcur, int64_t kc, const float *a, int64_t rs_a,
                            int64_t cs_a, int64_t mr, float *restrict dst)
{
    if (mcur == mr && rs_a == 1) {              /* column-major A: a copy per k */
        for (int64_t k = 0; k < kc; ++k)
            for (int64_t i = 0; i < mr; ++i)
                dst[k * mr + i] = a[k * cs_a + i];
        return;
    }
    if (cs_a == 1) {                            /* row-major A: read rows, in k chunks
                                                   so the writes stay in a few lines */
        for (int64_t k0 = 0; k0 < kc; k0 += 16) {
            const int64_t k1 = mk_min(kc, k0 + 16);
            for (int64_t i = 0; i < mcur; ++i) {
                const float *row = a + i * rs_a;
                for (int64_t k = k0; k < k1; ++k)
                    dst[k * mr + i] = row[k];
            }
        }
    } else {
        for (int64_t k = 0; k < kc; ++k)
            for (int64_t i = 0; i < mcur; ++i)
                dst[k * mr + i] = a[i * rs_a + k * cs_a];
    }
    if (mcur < mr)
        for (int64_t k = 0; k < kc; ++k)
            for (int64_t i = mcur; i < mr; ++i)
                dst[k * mr + i] = 0.0f;
}

/* One NR-wide micro-panel of B: columns [0, ncur) of a kc x ncur block, written as kc
 * steps of NR floats, zero-padded to NR columns. */
static void mk_pack_b_panel(int64_t kc, int64_t ncur, const float *b, int64_t rs_b,
                            int64_t cs_b, int64_t nr, float *restrict dst)
{
    if (ncur == nr && cs_b == 1) {              /* row-major B: a copy per k */
        for (int64_t k = 0; k < kc; ++k)
            for (int64_t j = 0; j < nr; ++j)
                dst[k * nr + j] = b[k * rs_b + j];
        return;
    }
    if (rs_b == 1) {                            /* column-major B: read columns */
        for (int64_t j = 0; j < ncur; ++j) {
            const float *col = b + j * cs_b;
            for (int64_t k = 0; k < kc; ++k)
                dst[k * nr + j] = col[k];
        }
    } else {
        for (int64_t k = 0; k < kc; ++k)
            for (int64_t j = 0; j < ncur; ++j)
                dst[k * nr + j] = b[k * rs_b + j * cs_b];
    }
    if (ncur < nr)
        for (int64_t k = 0; k < kc; ++k)
            for (int64_t j = ncur; j < nr; ++j)
                dst[k * nr + j] = 0.0f;
}

/* ---- C updates ---------------------------------------------------------------------- */

/* C := beta * C (beta == 0 writes zeros without reading C). */
static void mk_scale_c(int64_t m, int64_t n, float beta, float *c, int64_t rs_c, int64_t cs_c)
{
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            float *p = c + i * rs_c + j * cs_c;
            *p = beta == 0.0f ? 0.0f : beta * *p;
        }
}

/* One register tile: the micro-kernel straight into C when the tile is full, else
 * into the MR x NR edge buffer and merged into the mcur x ncur corner of C. */
static void mk_tile(const mk_ukernel_desc *uk, int64_t mcur, int64_t ncur, int64_t kc,
                    const float *alpha, const float *ap, const float *bp,
                    const float *beta, float *c, int64_t rs_c, int64_t cs_c, float *edge)
{
    if (mcur == uk->mr && ncur == uk->nr) {
        uk->ukernel(kc, alpha, ap, bp, beta, c, rs_c, cs_c);
        return;
    }
    if (uk->edge) {
        uk->edge(mcur, ncur, kc, alpha, ap, bp, beta, c, rs_c, cs_c);
        return;
    }
    const float zero = 0.0f;
    const int64_t nr = uk->nr;
    uk->ukernel(kc, alpha, ap, bp, &zero, edge, nr, 1);
    for (int64_t i = 0; i < mcur; ++i)
        for (int64_t j = 0; j < ncur; ++j) {
            float *p = c + i * rs_c + j * cs_c;
            *p = *beta == 0.0f ? edge[i * nr + j] : edge[i * nr + j] + *beta * *p;
        }
}


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

/* c[i*rs_c] := alpha * sum_p A(i, p) x(p) + beta * c[i*rs_c] for i < m, x = b[p*rs_b].
 * Row-contiguous A: one dot product per row in 32 independent lanes (vectorised by
 * the compiler with the module's ISA flags); otherwise column-wise axpy into y.
 * Rows are split between threads. xbuf holds k floats, y m floats. */
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
    if (nthreads > 1 && m < 64 * (int64_t)nthreads)
        nthreads = 1;
#pragma omp parallel num_threads(nthreads) if (nthreads > 1)
    {
        int64_t i0, i1;
        mk_my_share(m, &i0, &i1);
        if (cs_a == 1 || rs_a != 1) {
            for (int64_t i = i0; i < i1; ++i) {
                const float *ai = a + i * rs_a;
                float acc[32] = {0.0f};
                int64_t p = 0;
                if (cs_a == 1)
                    for (; p + 32 <= k; p += 32)
                        for (int l = 0; l < 32; ++l)
                            acc[l] += ai[p + l] * x[p + l];
                float sum = 0.0f;
                for (; p < k; ++p)
                    sum += ai[p * cs_a] * x[p];
                for (int l = 0; l < 32; ++l)
                    sum += acc[l];
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

/* The five loops of one GEMM (or of one thread's slice of it), serial, with its own
 * packing buffers. */
static void mk_loops(const mk_ukernel_desc *uk, int64_t m, int64_t n, int64_t k,
                     int64_t mc_blk, int64_t nc_blk, int64_t kc_blk, float alpha,
                     const float *a, int64_t rs_a, int64_t cs_a,
                     const float *b, int64_t rs_b, int64_t cs_b, float beta,
                     float *c, int64_t rs_c, int64_t cs_c,
                     float *a_pack, float *b_pack, float *edge)
{
    const int64_t mr = uk->mr, nr = uk->nr;
    const float one = 1.0f;
    for (int64_t jc = 0; jc < n; jc += nc_blk) {
        const int64_t nc = mk_min(nc_blk, n - jc);
        const int64_t npanels = (nc + nr - 1) / nr;
        for (int64_t pc = 0; pc < k; pc += kc_blk) {
            const int64_t kc = mk_min(kc_blk, k - pc);
            const float *beta_p = pc == 0 ? &beta : &one;
            for (int64_t jp = 0; jp < npanels; ++jp) {
                const int64_t j = jp * nr;
                mk_pack_b_panel(kc, mk_min(nr, nc - j), b + pc * rs_b + (jc + j) * cs_b,
                                rs_b, cs_b, nr, b_pack + j * kc);
            }
            for (int64_t ic = 0; ic < m; ic += mc_blk) {
                const int64_t mc = mk_min(mc_blk, m - ic);
                const int64_t mpanels = (mc + mr - 1) / mr;
                for (int64_t ip = 0; ip < mpanels; ++ip) {
                    const int64_t i = ip * mr;
                    mk_pack_a_panel(mk_min(mr, mc - i), kc, a + (ic + i) * rs_a + pc * cs_a,
                                    rs_a, cs_a, mr, a_pack + i * kc);
                }
                for (int64_t jp = 0; jp < npanels; ++jp)
                    for (int64_t ip = 0; ip < mpanels; ++ip) {
                        const int64_t i = ip * mr, j = jp * nr;
                        mk_tile(uk, mk_min(mr, mc - i), mk_min(nr, nc - j), kc, &alpha,
                                a_pack + i * kc, b_pack + j * kc, beta_p,
                                c + (ic + i) * rs_c + (jc + j) * cs_c, rs_c, cs_c, edge);
                    }
            }
        }
    }
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
int mk_gemm_driver(const mk_ukernel_desc *uk, const mk_blocking *blk,
                   int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t rs_a, int64_t cs_a,
                   const float *b, int64_t rs_b, int64_t cs_b,
                   float beta, float *c, int64_t rs_c, int64_t cs_c, int nthreads)
{
    if (m < 0 || n < 0 || k < 0 || !uk || uk->mr < 1 || uk->nr < 1 || !blk
        || blk->kc < 1 || blk->mc < 1 || blk->nc < 1)
        return MK_EINVAL;
    if (m == 0 || n == 0)
        return MK_OK;
    if (k == 0 || alpha == 0.0f) {
        mk_scale_c(m, n, beta, c, rs_c, cs_c);
        return MK_OK;
    }
    /* The micro-kernel's fast path wants unit column stride in C. When C's rows are
     * unit-stride instead (column-major C), compute C^T = B^T A^T. */
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
        float *ws = mk_ws_get((size_t)k + (size_t)m + 32);
        if (!ws)
            return MK_ENOMEM;
        mk_gemv(m, k, alpha, a, rs_a, cs_a, b, rs_b, beta, c, rs_c, ws, ws + k, nthreads);
        return MK_OK;
    }
    const int64_t mr = uk->mr, nr = uk->nr;
    const int64_t kc_blk = mk_min(blk->kc, k);
    const int64_t mc_blk = mk_min(mk_round_up(blk->mc < mr ? mr : blk->mc - blk->mc % mr, mr),
                                  mk_round_up(m, mr));
    const int64_t nc_blk = mk_min(mk_round_up(blk->nc < nr ? nr : blk->nc - blk->nc % nr, nr),
                                  mk_round_up(n, nr));
    if (nthreads < 1)
        nthreads = 1;
#ifndef _OPENMP
    nthreads = 1;
#endif
    /* Threads (BLIS's JC/IC ways): each thread takes a contiguous slice of N (in whole
     * NR panels), or of M when N is too narrow, and runs the serial loops on it with
     * its own packing buffers: no barrier inside the GEMM, so a thread descheduled on
     * a shared machine delays only its own slice. */
    int split_n = 1;
    int64_t units = (n + nr - 1) / nr;
    if (units < nthreads && (m + mr - 1) / mr > units) {
        split_n = 0;
        units = (m + mr - 1) / mr;
    }
    if (nthreads > units)
        nthreads = (int)units;
    const size_t a_floats = (size_t)mc_blk * (size_t)kc_blk;
    const size_t b_floats = (size_t)kc_blk * (size_t)nc_blk;
    const size_t edge_floats = (size_t)mk_round_up(mr * nr, 16);
    const size_t per_thread = a_floats + b_floats + edge_floats;
    float *ws = mk_ws_get(per_thread * (size_t)nthreads);
    if (!ws)
        return MK_ENOMEM;

#pragma omp parallel num_threads(nthreads) if (nthreads > 1)
    {
        int64_t lo, hi;
        const int t = mk_my_share(units, &lo, &hi);
        float *mine = ws + per_thread * (size_t)t;
        if (split_n) {
            const int64_t j0 = lo * nr, j1 = mk_min(n, hi * nr);
            if (j1 > j0)
                mk_loops(uk, m, j1 - j0, k, mc_blk, nc_blk, kc_blk, alpha, a, rs_a, cs_a,
                         b + j0 * cs_b, rs_b, cs_b, beta, c + j0 * cs_c, rs_c, cs_c,
                         mine, mine + a_floats, mine + a_floats + b_floats);
        } else {
            const int64_t i0 = lo * mr, i1 = mk_min(m, hi * mr);
            if (i1 > i0)
                mk_loops(uk, i1 - i0, n, k, mc_blk, nc_blk, kc_blk, alpha, a + i0 * rs_a, rs_a,
                         cs_a, b, rs_b, cs_b, beta, c + i0 * rs_c, rs_c, cs_c,
                         mine, mine + a_floats, mine + a_floats + b_floats);
        }
    }
    return MK_OK;
}
