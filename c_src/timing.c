/*
 * Timing helpers shared by every kernel module (ISA-free): the micro-kernel with its
 * packed panels hot in L1, timed in C so that no Python overhead is measured.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include "mk_ukernel.h"

static double mk_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Panel values for the timing: small and non-zero (never time on zeros). A typed
 * module whose panel elements are not float (bf16 / fp16 bit patterns, integers)
 * defines MK_FILL_A(i) and MK_FILL_B(i) for its types. */
#ifndef MK_FILL_A
#define MK_FILL_A(i) ((MK_TA)(1e-3f * (float)((i) % 7)))
#endif
#ifndef MK_FILL_B
#define MK_FILL_B(i) ((MK_TB)(1e-3f * (float)((i) % 5)))
#endif

/* Seconds taken by `reps` back-to-back calls of the micro-kernel on one packed
 * MR x kc panel of A and kc x NR panel of B (both 64-byte aligned, hot in L1 for
 * kc*(MR+NR)*element bytes <= L1), with alpha = 1 and beta = 1 (C is loaded and stored
 * each call, as inside the GEMM). kc must be a multiple of the tile's K group.
 * Returns a negative value if allocation fails. Flops done: 2 * MR * NR * kc * reps. */
double mk_time_ukernel_desc(const mk_ukernel_desc *uk, int64_t kc, int64_t reps)
{
    const int64_t mr = uk->mr, nr = uk->nr;
#ifdef MK_B_COLSUM
    kc += MK_GB;       /* the panels' trailer beyond the kc timed (driver.c, MK_B_COLSUM) */
#endif
    size_t na = (size_t)(mr * (kc ? kc : 1)), nb = (size_t)(nr * (kc ? kc : 1)), ncc = (size_t)(mr * nr);
    MK_TA *a = (MK_TA *)aligned_alloc(64, (na * sizeof(MK_TA) + 63) & ~(size_t)63);
    MK_TB *b = (MK_TB *)aligned_alloc(64, (nb * sizeof(MK_TB) + 63) & ~(size_t)63);
    MK_TC *c = (MK_TC *)aligned_alloc(64, (ncc * sizeof(MK_TC) + 63) & ~(size_t)63);
    if (!a || !b || !c) {
        free(a); free(b); free(c);
        return -1.0;
    }
    for (size_t i = 0; i < na; ++i) a[i] = MK_FILL_A(i);
    for (size_t i = 0; i < nb; ++i) b[i] = MK_FILL_B(i);
    for (size_t i = 0; i < ncc; ++i) c[i] = 0;
    const MK_TC alpha = 1, beta = 1;
#ifdef MK_UKERNEL_HOT
    /* a micro-kernel with per-thread state (driver.c): set up once, as in the GEMM */
    MK_THREAD_SETUP();
    for (int w = 0; w < 16; ++w)
        MK_UKERNEL_HOT(kc, &alpha, a, b, &beta, c, nr, 1);
    double t0 = mk_now();
    for (int64_t r = 0; r < reps; ++r)
        MK_UKERNEL_HOT(kc, &alpha, a, b, &beta, c, nr, 1);
    double t = mk_now() - t0;
    MK_THREAD_TEARDOWN();
#else
    for (int w = 0; w < 16; ++w)
        uk->ukernel(kc, &alpha, a, b, &beta, c, nr, 1);
    double t0 = mk_now();
    for (int64_t r = 0; r < reps; ++r)
        uk->ukernel(kc, &alpha, a, b, &beta, c, nr, 1);
    double t = mk_now() - t0;
#endif
    free(a); free(b); free(c);
    return t;
}
