/* The matrix-vector path (n == 1) of the fp32 driver (driver.c).
 * Part of the one GEMM driver, included by driver.c only, in its order (not a header
 * of its own).
 * Uses: mk_load8 and the transpose masks (mk_pack.h). Gives mk_gemv (fp32 modules only). */

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
