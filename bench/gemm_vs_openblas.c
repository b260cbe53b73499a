/*
 * gemm_vs_openblas.c (x86-64): the GEMM driver against OpenBLAS's sgemm (numpy's
 * bundled libscipy_openblas) in one process, one thread, row-major A (m x k), B (k x n), C
 * (m x n) with leading dimensions k, n, n. Each round times `inner` back-to-back calls
 * of ours, then of OpenBLAS (inner sized for ~20 ms); prints the medians over `reps`
 * rounds in GFLOP/s and the median of the per-round ratios OpenBLAS time / ours (> 1:
 * ours is faster). No Python in the loop: for driver changes that kernel_ab.py (which
 * varies the micro-kernel and the blocking, not the driver) cannot reach.
 *
 * The driver and the micro-kernel are compiled in: DRV (a driver source on the -I path:
 * c_src/driver.c, or a variant written by bench/driver_variants.py) and UKSRC (a
 * micro-kernel file) with the tile's MK_MR, MK_NR, MK_UKERNEL. bench/gemm_vs_openblas.sh
 * builds one binary per variant and rotates them round by round.
 *
 * Ours is checked against OpenBLAS once before timing (a variant that computes a
 * wrong C is not timed unless NOCHECK=1: the prof what-if builds).
 * Environment: OFFA, OFFB, OFFC (floats, default 0) start A, B, C that many floats past
 * a 64-byte boundary; numpy's large arrays start 16 bytes past one (OFF*=4). HUGE=1 puts
 * A, B and C on transparent huge pages (madvise(MADV_HUGEPAGE), whatever their size; numpy
 * does so for its arrays of 4 MiB and more where /sys/kernel/mm/transparent_hugepage/enabled
 * is "madvise").
 * A DRV that defines MK_PROF_SLOTS (the "prof" variant) counts rdtsc cycles in packing
 * B, packing A and the micro-kernels; they are then printed per 1000 flops of ours.
 *
 * Usage: gemm_vs_openblas m n k reps kc mc nc   (OBLAS=path of the OpenBLAS library)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <dlfcn.h>
#include <time.h>
#include <math.h>
#include <x86intrin.h>
#include <sys/mman.h>
#include UKSRC
#include DRV

typedef void (*sgemm_t)(int, int, int, long, long, long, float, const float *, long,
                        const float *, long, float, float *, long);

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static float *alloc_off(long floats, const char *env)
{
    const long off = getenv(env) ? atol(getenv(env)) : 0;
    const int huge = getenv("HUGE") && atoi(getenv("HUGE"));
    const size_t align = huge ? (size_t)2 << 20 : 64;   /* numpy madvises arrays of >= 4 MiB */
    const size_t bytes = ((floats + off) * 4 + align - 1) / align * align;
    float *p = (float *)aligned_alloc(align, bytes);
    if (p && huge) madvise(p, bytes, MADV_HUGEPAGE);
    return p ? p + off : NULL;
}

int main(int argc, char **argv)
{
    if (argc != 8 || !getenv("OBLAS")) {
        fprintf(stderr, "usage: OBLAS=libopenblas.so %s m n k reps kc mc nc\n", argv[0]);
        return 2;
    }
    const long m = atol(argv[1]), n = atol(argv[2]), k = atol(argv[3]);
    int reps = atoi(argv[4]);
    if (reps > 99) reps = 99;
    const mk_blocking blk = {atol(argv[5]), atol(argv[6]), atol(argv[7])};
    void *h = dlopen(getenv("OBLAS"), RTLD_NOW);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    sgemm_t sg = (sgemm_t)dlsym(h, "scipy_cblas_sgemm64_");
    void (*threads)(int) = (void (*)(int))dlsym(h, "scipy_openblas_set_num_threads64_");
    if (!sg || !threads) { fprintf(stderr, "no scipy_cblas_sgemm64_ in OBLAS\n"); return 1; }
    threads(1);
    float *A = alloc_off(m * k, "OFFA"), *B = alloc_off(k * n, "OFFB"), *C = alloc_off(m * n, "OFFC");
    if (!A || !B || !C) return 1;
    for (long i = 0; i < m * k; i++) A[i] = (i % 13) * 0.1f;
    for (long i = 0; i < k * n; i++) B[i] = (i % 7) * 0.1f;
    for (long i = 0; i < m * n; i++) C[i] = 0;
    const mk_ukernel_desc uk = {MK_MR, MK_NR, MK_UKERNEL, MK_UKERNEL_EDGE};
    const double fl = 2.0 * m * n * k;
    const int inner = (int)(0.02 / (fl / 150e9)) + 1;
    double to[99], tb[99], rr[99];
    /* ours against OpenBLAS once before timing (fp32 sums of k products of inputs in
     * [0, 1.2]: a relative difference over 1e-5 * sqrt(k) is a wrong result) */
    float *ref = (float *)malloc(m * n * 4 + 4);
    if (!ref) return 1;
    sg(101, 111, 111, m, n, k, 1.0f, A, k, B, n, 0.0f, ref, n);
    mk_gemm_driver(&uk, &blk, m, n, k, 1.0f, A, k, 1, B, n, 1, 0.0f, C, n, 1, 1);
    double worst = 0;
    for (long i = 0; i < m * n; i++) {
        const double d = fabs((double)C[i] - ref[i]) / (fabs((double)ref[i]) + 1e-30);
        if (d > worst) worst = d;
    }
    free(ref);
    if (worst > 1e-5 * sqrt((double)k) && !getenv("NOCHECK")) {
        printf("WRONG: max relative difference %.3g against OpenBLAS (NOCHECK=1 times it anyway)\n", worst);
        return 1;
    }
    unsigned long long ours_tsc = 0;
#ifdef MK_PROF_SLOTS
    for (int s = 0; s < MK_PROF_SLOTS; ++s) mk_prof[s] = 0;
#endif
    for (int r = 0; r < reps; r++) {
        const unsigned long long c0 = __rdtsc();
        double t0 = now();
        for (int i = 0; i < inner; i++)
            mk_gemm_driver(&uk, &blk, m, n, k, 1.0f, A, k, 1, B, n, 1, 0.0f, C, n, 1, 1);
        to[r] = (now() - t0) / inner;
        ours_tsc += __rdtsc() - c0;
        t0 = now();
        for (int i = 0; i < inner; i++)
            sg(101, 111, 111, m, n, k, 1.0f, A, k, B, n, 0.0f, C, n);
        tb[r] = (now() - t0) / inner;
        rr[r] = tb[r] / to[r];
    }
    qsort(to, reps, 8, cmp); qsort(tb, reps, 8, cmp); qsort(rr, reps, 8, cmp);
    printf("ours %.1f oblas %.1f GFLOP/s (medians) pair %.3f",
           fl / to[reps / 2] / 1e9, fl / tb[reps / 2] / 1e9, rr[reps / 2]);
#ifdef MK_PROF_SLOTS
    const double kflops = fl * inner * reps / 1000.0;
    printf("  cycles per 1000 flops: all %.2f pack B %.2f pack A %.2f micro-kernels %.2f",
           ours_tsc / kflops, mk_prof[0] / kflops, mk_prof[1] / kflops, mk_prof[2] / kflops);
#endif
    printf("\n");
    return 0;
}
