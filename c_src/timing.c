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

/* Seconds taken by `reps` back-to-back calls of the micro-kernel on one packed
 * MR x kc panel of A and kc x NR panel of B (both 64-byte aligned, hot in L1 for
 * kc*(MR+NR)*4 bytes <= L1), with alpha = 1 and beta = 1 (C is loaded and stored
 * each call, as inside the GEMM). Returns a negative value if allocation fails.
 * Flops done: 2 * MR * NR * kc * reps. */
double mk_time_ukernel_desc(const mk_ukernel_desc *uk, int64_t kc, int64_t reps)
{
    const int64_t mr = uk->mr, nr = uk->nr;
    size_t na = (size_t)(mr * (kc ? kc : 1)), nb = (size_t)(nr * (kc ? kc : 1)), ncc = (size_t)(mr * nr);
    float *a = (float *)aligned_alloc(64, (na * 4 + 63) & ~(size_t)63);
    float *b = (float *)aligned_alloc(64, (nb * 4 + 63) & ~(size_t)63);
    float *c = (float *)aligned_alloc(64, (ncc * 4 + 63) & ~(size_t)63);
    if (!a || !b || !c) {
        free(a); free(b); free(c);
        return -1.0;
    }
    for (size_t i = 0; i < na; ++i) a[i] = 1e-3f * (float)(i % 7);
    for (size_t i = 0; i < nb; ++i) b[i] = 1e-3f * (float)(i % 5);
    for (size_t i = 0; i < ncc; ++i) c[i] = 0.0f;
    const float alpha = 1.0f, beta = 1.0f;
    for (int w = 0; w < 16; ++w)
        uk->ukernel(kc, &alpha, a, b, &beta, c, nr, 1);
    double t0 = mk_now();
    for (int64_t r = 0; r < reps; ++r)
        uk->ukernel(kc, &alpha, a, b, &beta, c, nr, 1);
    double t = mk_now() - t0;
    free(a); free(b); free(c);
    return t;
}
