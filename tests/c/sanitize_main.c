/*
 * tests/c/sanitize_main.c: a self-checking C harness for the probe, the driver and the
 * x86 micro-kernels, built with AddressSanitizer + UndefinedBehaviorSanitizer by
 * tests/test_sanitizers.py and, statically and uninstrumented, run under
 * qemu-x86_64 -cpu Haswell / Nehalem by tests/test_old_cpus.py.
 *
 * It runs, for every linked kernel whose ISA the probe clears (an AVX-512 kernel may
 * be linked in but is never called unless mk_probe() says usable_avx512):
 *   1. the edge catalogue (microkernel.validate.catalogue), read from a case file;
 *   2. a remainder sweep: every M in 0..2*MR and N in 0..2*NR, K cycling through
 *      0, 1, unroll-1, unroll, unroll+1, 2*unroll+1, 7, 19;
 *   3. a seeded random corpus: shapes 0..300 (small most of the time), every
 *      stride sign, views inside larger buffers, unaligned data, K = 0,
 *      alpha = 0 with NaN/Inf in A and B, beta = 0 with NaN/Inf in C, small
 *      blockings that run every loop of the driver,
 * each against a double-precision reference loop with the bound of
 * microkernel/validate.py (Higham, Accuracy and Stability, 2nd ed., sec. 3.5):
 *     |C - C_ref| <= 2 * (K + 2) * 2^-24 * (|alpha| |A||B| + |beta| |C0|).
 *
 * Out-of-bounds and forbidden accesses are made visible three ways:
 *   - every operand is its own heap block, sized exactly to the storage its view
 *     spans (plus 0..8 guard elements around it): ASan reports any access past it;
 *   - elements of the storage that are not part of the view hold NaN in A and B (a
 *     wrong element read into the result makes it NaN) and a guard value in C (a
 *     write there is reported);
 *   - with ASan, operands that must not be touched at all are poisoned: A and B when
 *     alpha == 0 or K == 0, and A, B and C when M == 0 or N == 0.
 * beta == 0 is tested with NaN/Inf in C (they must not survive).
 *
 * Build (objects: this file and its includes with baseline flags, each micro-kernel
 * with its own ISA's flags only, never -march=native):
 *   cc -I<dir of the generated lists> -Ic_src -c tests/c/sanitize_main.c
 *   cc -mavx2 -mfma -c avx2_6x16.c ...       (one object per kernel)
 *   cc *.o -o sanitize_main [-lm]
 * optionally with -fopenmp (the driver's OpenMP team) and
 * -fsanitize=address,undefined -fno-sanitize-recover=all.
 *
 * The kernels: the project's X-macro list (microkernel.codegen.kernel_list, the format
 * of c_src/ukernels/mk_kernels.inc), named by MK_KERNEL_LIST (default
 * "sanitize_kernels.inc"), one line per kernel:
 *   MK_KERNEL(avx2_6x16, avx2, 6, 16, 2, 1, 1)    name, isa, MR, NR, vectors per row,
 *                                                  k-unroll, has an edge entry point
 * and each kernel's default blocking in MK_BLOCKING_LIST (default
 * "sanitize_blocking.inc"), one line per kernel:
 *   MK_BLOCKING(avx2_6x16, 170, 576, 4080)         name, KC, MC, NC
 *
 * Usage: sanitize_main [--cases FILE] [--fuzz N] [--seed S] [--threads T]
 *                      [--best] [--no-sweep] [--only NAME]
 *   --cases FILE  catalogue cases, one per line ('#' comments):
 *                 kernel label m n k alpha beta la lb lc nan_c nan_ab threads kc mc nc
 *                 layouts: c row-major, f column-major, s strided (steps 2, 3),
 *                 n negative strides, u / m data 4 bytes past a 64-byte boundary
 *                 ('m', 1-byte misalignment, is not addressable as float in C:
 *                 gemm() copies such views, so here it is 'u'); kc/mc/nc 0 = default
 *   --fuzz N      random cases per kernel (default 200)
 *   --threads T   driver threads for cases that ask for 1 (default 1); cases
 *                 asking for more keep theirs (without -fopenmp the driver uses 1)
 *   --best        run only the best cleared ISA's kernels, and scalar ones
 *   --only NAME   run only that kernel
 *   --ignore-probe  run kernels the probe did not clear (a negative control: under
 *                 qemu-x86_64 -cpu Haswell an AVX-512 kernel must die with SIGILL)
 * Output: "probe ..." and "chosen <isa>" lines, one "kernel <name> ..." line per
 * kernel with its case counts, "FAIL ..." lines, and a final "total cases=N
 * failures=F" line. Exit status 0 when every case passed, 1 on any failure,
 * 2 on a usage or allocation error.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"
#include "probe.c"
#include "mk_ukernel.h"

#ifndef MK_KERNEL_LIST
#define MK_KERNEL_LIST "sanitize_kernels.inc"
#endif
#ifndef MK_BLOCKING_LIST
#define MK_BLOCKING_LIST "sanitize_blocking.inc"
#endif
/* Declarations, before the driver (one specialised with MK_UKERNEL calls it directly);
 * an edge entry point is weak: a tile without one leaves it NULL. */
#define MK_KERNEL(name, isa, mr, nr, nv, k_unroll, edge)                                  \
    void mk_ukernel_##name(int64_t, const float *, const float *, const float *,         \
                           const float *, float *, int64_t, int64_t);                    \
    void mk_ukernel_##name##_edge(int64_t, int64_t, int64_t, const float *,               \
                                  const float *, const float *, const float *, float *,  \
                                  int64_t, int64_t) __attribute__((weak));
#include MK_KERNEL_LIST
#undef MK_KERNEL

#include "driver.c"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#define SAN_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define SAN_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define SAN_POISON(p, n) ((void)(p), (void)(n))
#define SAN_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

typedef struct {
    const char *name;
    const char *isa;
    int64_t mr, nr, k_unroll;
    mk_ukernel_fn ukernel;
    mk_ukernel_edge_fn edge;
    int64_t kc, mc, nc;
} san_kernel;

static san_kernel KERNELS[] = {
#define MK_KERNEL(name, isa, mr, nr, nv, k_unroll, edge)                                  \
    { #name, #isa, mr, nr, k_unroll, mk_ukernel_##name,                                 \
      (edge) ? mk_ukernel_##name##_edge : NULL, 0, 0, 0 },
#include MK_KERNEL_LIST
#undef MK_KERNEL
};
#define NKERNELS ((int)(sizeof KERNELS / sizeof KERNELS[0]))

static const struct { const char *name; int64_t kc, mc, nc; } BLOCKINGS[] = {
#define MK_BLOCKING(name, kc, mc, nc) { #name, kc, mc, nc },
#include MK_BLOCKING_LIST
#undef MK_BLOCKING
};

/* Each kernel's default KC, MC, NC from MK_BLOCKING_LIST; 0 when one is missing. */
static int set_blockings(void)
{
    for (int t = 0; t < NKERNELS; ++t) {
        int found = 0;
        for (size_t b = 0; b < sizeof BLOCKINGS / sizeof BLOCKINGS[0]; ++b)
            if (!strcmp(BLOCKINGS[b].name, KERNELS[t].name)) {
                KERNELS[t].kc = BLOCKINGS[b].kc;
                KERNELS[t].mc = BLOCKINGS[b].mc;
                KERNELS[t].nc = BLOCKINGS[b].nc;
                found = 1;
            }
        if (!found) {
            fprintf(stderr, "sanitize_main: no MK_BLOCKING line for %s\n", KERNELS[t].name);
            return 0;
        }
    }
    return 1;
}

#define GUARD (-7.25e30f)
#define U (1.0 / 16777216.0)
#define C_BOUND 2.0

/* ---- random numbers (splitmix64) -------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd64(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int64_t rnd(int64_t n) { return n > 0 ? (int64_t)(rnd64() % (uint64_t)n) : 0; }
static float rnd_unit(void) { return (float)((double)(rnd64() >> 11) * 0x1.0p-53 * 2.0 - 1.0); }

/* ---- operands ---------------------------------------------------------------------- */

typedef struct {
    int fortran;            /* column-major storage */
    int64_t step_r, step_c; /* >= 1: view takes every step-th row / column */
    int neg_r, neg_c;       /* negative row / column stride */
    int zero_r, zero_c;     /* stride 0 (a broadcast view; inputs only) */
    int64_t pad;            /* storage elements around the view */
    int byte_off;           /* data starts this many bytes past a 64-byte boundary */
} san_layout;

typedef struct {
    void *raw;
    size_t raw_bytes;
    float *base;            /* storage: base_n floats */
    int64_t base_n;
    float *v;               /* the view: v[i*rs + j*cs] */
    int64_t rows, cols, rs, cs;
    unsigned char *in_view; /* per storage element */
} san_mat;

static san_layout layout_from_char(char ch)
{
    san_layout L = {0, 1, 1, 0, 0, 0, 0, 3, 0};
    switch (ch) {
    case 'f': L.fortran = 1; break;
    case 's': L.step_r = 2; L.step_c = 3; break;
    case 'n': L.neg_r = L.neg_c = 1; break;
    case 'u': case 'm': L.byte_off = 4; break;
    default: break;
    }
    return L;
}

static san_layout layout_random(int input)
{
    static const int64_t pads[] = {0, 0, 0, 1, 3, 8};
    san_layout L;
    L.fortran = (int)rnd(2);
    L.step_r = rnd(10) < 6 ? 1 : 1 + rnd(3);
    L.step_c = rnd(10) < 6 ? 1 : 1 + rnd(3);
    L.neg_r = rnd(4) == 0;
    L.neg_c = rnd(4) == 0;
    L.zero_r = input && rnd(30) == 0;
    L.zero_c = input && rnd(30) == 0;
    L.pad = pads[rnd(6)];
    L.byte_off = rnd(3) == 0 ? 4 * (int)rnd(16) : 0;
    return L;
}

/* A rows x cols view in the layout L, inside its own exactly-sized heap block.
 * View elements get `fill(i, j)`-style values from vals (row-major rows x cols, or
 * NULL: uniform(-1, 1)); the rest of the storage gets `gap`. */
static int mat_make(san_mat *M, int64_t rows, int64_t cols, const san_layout *L, float gap)
{
    memset(M, 0, sizeof *M);
    M->rows = rows;
    M->cols = cols;
    const int64_t span_r = rows == 0 ? 0 : L->zero_r ? 1 : (rows - 1) * L->step_r + 1;
    const int64_t span_c = cols == 0 ? 0 : L->zero_c ? 1 : (cols - 1) * L->step_c + 1;
    const int64_t br = span_r + 2 * L->pad, bc = span_c + 2 * L->pad;
    M->base_n = br * bc;
    M->raw_bytes = (size_t)L->byte_off + (size_t)M->base_n * sizeof(float);
    if (posix_memalign(&M->raw, 64, M->raw_bytes ? M->raw_bytes : 1) != 0)
        return -1;
    M->base = (float *)((char *)M->raw + L->byte_off);
    M->in_view = (unsigned char *)calloc((size_t)(M->base_n ? M->base_n : 1), 1);
    if (!M->in_view)
        return -1;
    for (int64_t t = 0; t < M->base_n; ++t)
        M->base[t] = gap;
    const int64_t brs = L->fortran ? 1 : bc, bcs = L->fortran ? br : 1;
    const int64_t r0 = L->pad + (L->neg_r && !L->zero_r && rows ? (rows - 1) * L->step_r : 0);
    const int64_t c0 = L->pad + (L->neg_c && !L->zero_c && cols ? (cols - 1) * L->step_c : 0);
    M->rs = L->zero_r ? 0 : (L->neg_r ? -1 : 1) * L->step_r * brs;
    M->cs = L->zero_c ? 0 : (L->neg_c ? -1 : 1) * L->step_c * bcs;
    /* a view with no elements still gets a pointer inside (or at the end of) its block */
    M->v = M->base + (M->base_n ? r0 * brs + c0 * bcs : 0);
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
            M->in_view[(M->v - M->base) + i * M->rs + j * M->cs] = 1;
    return 0;
}

static void mat_free(san_mat *M)
{
    if (M->raw) {
        SAN_UNPOISON(M->raw, M->raw_bytes ? M->raw_bytes : 1);
        free(M->raw);
    }
    free(M->in_view);
    memset(M, 0, sizeof *M);
}

static void mat_poison(san_mat *M) { SAN_POISON(M->raw, M->raw_bytes ? M->raw_bytes : 1); }

#define AT(M, i, j) ((M)->v[(i) * (M)->rs + (j) * (M)->cs])

/* ---- cases ------------------------------------------------------------------------- */

typedef struct {
    char kernel[64];
    char label[64];
    int64_t m, n, k;
    float alpha, beta;
    san_layout la, lb, lc;
    int nan_c;      /* C0 non-finite (beta == 0 only): 1 NaN, 2 +Inf, 3 -Inf */
    int nan_ab;     /* A and B non-finite (alpha == 0 only): 1 NaN, 2 Inf */
    int threads;
    int64_t kc, mc, nc;  /* 0: the kernel's default */
} san_case;

typedef struct {
    int64_t cases, failures;
} san_count;

static int g_threads = 1;

static float special(int kind)
{
    return kind == 1 ? NAN : kind == 2 ? INFINITY : -INFINITY;
}

static void describe(const san_case *cs, const san_kernel *kn, char *buf, size_t cap)
{
    snprintf(buf, cap,
             "kernel=%s case=%s m=%" PRId64 " n=%" PRId64 " k=%" PRId64
             " alpha=%.9g beta=%.9g A(f%d s%" PRId64 ",%" PRId64 " n%d%d z%d%d p%" PRId64 " o%d)"
             " B(f%d s%" PRId64 ",%" PRId64 " n%d%d z%d%d p%" PRId64 " o%d)"
             " C(f%d s%" PRId64 ",%" PRId64 " n%d%d p%" PRId64 " o%d)"
             " nan_c=%d nan_ab=%d threads=%d blk=%" PRId64 ",%" PRId64 ",%" PRId64,
             kn->name, cs->label, cs->m, cs->n, cs->k, (double)cs->alpha, (double)cs->beta,
             cs->la.fortran, cs->la.step_r, cs->la.step_c, cs->la.neg_r, cs->la.neg_c,
             cs->la.zero_r, cs->la.zero_c, cs->la.pad, cs->la.byte_off,
             cs->lb.fortran, cs->lb.step_r, cs->lb.step_c, cs->lb.neg_r, cs->lb.neg_c,
             cs->lb.zero_r, cs->lb.zero_c, cs->lb.pad, cs->lb.byte_off,
             cs->lc.fortran, cs->lc.step_r, cs->lc.step_c, cs->lc.neg_r, cs->lc.neg_c,
             cs->lc.pad, cs->lc.byte_off, cs->nan_c, cs->nan_ab, cs->threads,
             cs->kc, cs->mc, cs->nc);
}

/* Run one case; returns 0 when it passed, 1 when it failed (reported on stdout),
 * -1 on allocation failure. */
static int run_case(const san_kernel *kn, const san_case *cs)
{
    const int64_t m = cs->m, n = cs->n, k = cs->k;
    san_mat A, B, C;
    double *c0 = NULL;
    int rc = -1;
    char why[256] = "";
    if (mat_make(&A, m, k, &cs->la, NAN) || mat_make(&B, k, n, &cs->lb, NAN)
        || mat_make(&C, m, n, &cs->lc, GUARD))
        goto out;
    c0 = (double *)malloc((size_t)(m * n > 0 ? m * n : 1) * sizeof(double));
    if (!c0)
        goto out;
    for (int64_t i = 0; i < m; ++i)
        for (int64_t p = 0; p < k; ++p)
            AT(&A, i, p) = cs->nan_ab ? special(cs->nan_ab) : rnd_unit();
    for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j)
            AT(&B, p, j) = cs->nan_ab ? special(cs->nan_ab == 2 ? 3 : 1) : rnd_unit();
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            AT(&C, i, j) = cs->nan_c ? special(cs->nan_c) : rnd_unit();
            c0[i * n + j] = AT(&C, i, j);
        }
    /* what BLAS semantics say must not be touched at all */
    const int touch_nothing = m == 0 || n == 0;
    const int skip_ab = touch_nothing || k == 0 || cs->alpha == 0.0f;
    if (skip_ab) {
        mat_poison(&A);
        mat_poison(&B);
    }
    if (touch_nothing)
        mat_poison(&C);

    mk_ukernel_desc d = {kn->mr, kn->nr, kn->ukernel, kn->edge};
    mk_blocking blk = {cs->kc > 0 ? cs->kc : kn->kc, cs->mc > 0 ? cs->mc : kn->mc,
                       cs->nc > 0 ? cs->nc : kn->nc, MK_TEAM_CHUNKS, MK_TEAM_PARTS};
    int threads = cs->threads > 1 ? cs->threads : g_threads;
    int ret = mk_gemm_driver(&d, &blk, m, n, k, cs->alpha, A.v, A.rs, A.cs, B.v, B.rs, B.cs,
                             cs->beta, C.v, C.rs, C.cs, threads);
    if (touch_nothing)
        SAN_UNPOISON(C.raw, C.raw_bytes ? C.raw_bytes : 1);
    int bad = 0;
    if (ret != MK_OK) {
        snprintf(why, sizeof why, "driver returned %d", ret);
        bad = 1;
    }
    /* guards: storage of C outside the view is untouched */
    for (int64_t t = 0; !bad && t < C.base_n; ++t)
        if (!C.in_view[t] && memcmp(&C.base[t], &(float){GUARD}, sizeof(float)) != 0) {
            snprintf(why, sizeof why, "write outside the view of C at storage element %" PRId64
                     " (value %.9g)", t, (double)C.base[t]);
            bad = 1;
        }
    /* values against the double-precision reference */
    for (int64_t i = 0; !bad && i < m; ++i)
        for (int64_t j = 0; !bad && j < n; ++j) {
            double s = 0.0, sa = 0.0;
            if (!skip_ab)
                for (int64_t p = 0; p < k; ++p) {
                    double x = (double)AT(&A, i, p) * (double)AT(&B, p, j);
                    s += x;
                    sa += fabs(x);
                }
            double ref = 0.0, bound = 0.0;
            if (!skip_ab) {
                ref += (double)cs->alpha * s;
                bound += fabs((double)cs->alpha) * sa;
            }
            if (cs->beta != 0.0f) {
                ref += (double)cs->beta * c0[i * n + j];
                bound += fabs((double)cs->beta) * fabs(c0[i * n + j]);
            }
            bound *= C_BOUND * (double)(k + 2) * U;
            double got = (double)AT(&C, i, j);
            int ok;
            if (isnan(ref))
                ok = isnan(got);
            else if (isinf(ref))
                ok = got == ref;
            else
                ok = isfinite(got) && fabs(got - ref) <= bound;
            if (!ok) {
                snprintf(why, sizeof why, "C(%" PRId64 ",%" PRId64 ") = %.9g, want %.9g "
                         "(bound %.3g)", i, j, got, ref, bound);
                bad = 1;
            }
        }
    if (bad) {
        char desc[1024];
        describe(cs, kn, desc, sizeof desc);
        printf("FAIL %s: %s\n", desc, why);
        fflush(stdout);
    }
    rc = bad;
out:
    if (rc < 0)
        fprintf(stderr, "sanitize_main: allocation failed\n");
    free(c0);
    mat_free(&A);
    mat_free(&B);
    mat_free(&C);
    return rc;
}

static int tally(san_count *cnt, int r)
{
    if (r < 0)
        return -1;
    cnt->cases++;
    cnt->failures += r;
    return 0;
}

static void case_init(san_case *cs, const san_kernel *kn, const char *label)
{
    memset(cs, 0, sizeof *cs);
    snprintf(cs->kernel, sizeof cs->kernel, "%s", kn->name);
    snprintf(cs->label, sizeof cs->label, "%s", label);
    cs->la = cs->lb = cs->lc = layout_from_char('c');
    cs->alpha = 1.0f;
    cs->threads = 1;
}

/* ---- the three corpora ------------------------------------------------------------- */

static int run_catalogue(const san_kernel *kn, const char *path, san_count *cnt)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "sanitize_main: cannot open %s\n", path);
        return -1;
    }
    char line[512];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        san_case cs;
        char la, lb, lc;
        double alpha, beta;
        memset(&cs, 0, sizeof cs);
        int got = sscanf(line, "%63s %63s %" SCNd64 " %" SCNd64 " %" SCNd64 " %lf %lf %c %c %c %d %d %d %"
                         SCNd64 " %" SCNd64 " %" SCNd64, cs.kernel, cs.label, &cs.m, &cs.n, &cs.k,
                         &alpha, &beta, &la, &lb, &lc, &cs.nan_c, &cs.nan_ab, &cs.threads,
                         &cs.kc, &cs.mc, &cs.nc);
        if (got != 16 || cs.m < 0 || cs.n < 0 || cs.k < 0) {
            fprintf(stderr, "sanitize_main: %s:%d: bad case line\n", path, lineno);
            fclose(f);
            return -1;
        }
        if (strcmp(cs.kernel, kn->name) != 0)
            continue;
        cs.alpha = (float)alpha;
        cs.beta = (float)beta;
        cs.la = layout_from_char(la);
        cs.lb = layout_from_char(lb);
        cs.lc = layout_from_char(lc);
        if (tally(cnt, run_case(kn, &cs)) < 0) {
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    return 0;
}

static int run_sweep(const san_kernel *kn, san_count *cnt)
{
    const int64_t ku = kn->k_unroll;
    const int64_t ks[] = {0, 1, ku > 1 ? ku - 1 : 2, ku, ku + 1, 2 * ku + 1, 7, 19};
    const int nks = (int)(sizeof ks / sizeof ks[0]);
    int t = 0;
    for (int64_t m = 0; m <= 2 * kn->mr; ++m)
        for (int64_t n = 0; n <= 2 * kn->nr; ++n, ++t) {
            san_case cs;
            case_init(&cs, kn, "sweep");
            cs.m = m;
            cs.n = n;
            cs.k = ks[t % nks];
            if (t % 2) {
                cs.beta = 0.5f;
                cs.alpha = -1.5f;
            } else {
                cs.nan_c = 1;   /* beta == 0: NaN in C must not survive */
            }
            if (t % 3 == 1) {   /* column-major / strided C and transposed inputs too */
                cs.lc = layout_from_char(t % 2 ? 'f' : 's');
                cs.la = layout_from_char('f');
                cs.lb = layout_from_char('n');
            }
            if (tally(cnt, run_case(kn, &cs)) < 0)
                return -1;
        }
    return 0;
}

static int64_t pick_dim(int64_t tile)
{
    int64_t u = rnd(100);
    if (u < 45) return rnd(2 * tile + 2);   /* 0..2*tile+1: every remainder */
    if (u < 75) return rnd(65);
    if (u < 94) return rnd(161);
    return rnd(301);
}

static int run_fuzz(const san_kernel *kn, int64_t count, san_count *cnt)
{
    static const float alphas[] = {0.0f, 1.0f, -1.0f, 0.5f, 2.75f};
    static const float betas[] = {0.0f, 1.0f, -1.0f, 0.25f};
    for (int64_t t = 0; t < count; ++t) {
        san_case cs;
        case_init(&cs, kn, "fuzz");
        cs.m = pick_dim(kn->mr);
        cs.n = pick_dim(kn->nr);
        int64_t u = rnd(100);
        cs.k = u < 10 ? 0 : u < 50 ? rnd(2 * kn->k_unroll + 4) : u < 80 ? rnd(65)
             : u < 95 ? rnd(161) : rnd(301);
        cs.alpha = rnd(6) < 5 ? alphas[rnd(5)] : 4.0f * rnd_unit();
        cs.beta = rnd(5) < 4 ? betas[rnd(4)] : 4.0f * rnd_unit();
        if (cs.beta == 0.0f && rnd(2))
            cs.nan_c = 1 + (int)rnd(3);
        if (cs.alpha == 0.0f && rnd(2))
            cs.nan_ab = 1 + (int)rnd(2);
        cs.la = layout_random(1);
        cs.lb = layout_random(1);
        cs.lc = layout_random(0);
        if (rnd(10) < 3) {   /* small blocking: every loop of the driver runs */
            cs.kc = 1 + rnd(2 * kn->k_unroll + 4);
            cs.mc = 1 + rnd(3 * kn->mr);
            cs.nc = 1 + rnd(3 * kn->nr);
        }
        if (rnd(4) == 0)
            cs.threads = 2;
        if (tally(cnt, run_case(kn, &cs)) < 0)
            return -1;
    }
    return 0;
}

/* ---- the probe under the sanitizers ------------------------------------------------ */

/* Random register values through both decoders: no UB, NUL-terminated strings, and
 * the usable_* flags never claim more than the bits and the OS state allow. Returns
 * the number of violations. */
static int check_decoders(int64_t rounds)
{
    int bad = 0;
    for (int64_t r = 0; r < rounds; ++r) {
        mk_x86_regs regs;
        uint32_t *w = (uint32_t *)&regs;
        for (size_t t = 0; t < sizeof regs / sizeof *w; ++t)
            w[t] = (uint32_t)rnd64();
        if (r % 2)
            regs.leaf0.eax = (uint32_t)rnd(20);
        if (r % 3 == 0)
            regs.ext0.eax = 0x80000000u + (uint32_t)rnd(8);
        uint64_t xcr0 = r % 4 == 0 ? rnd64() : (uint64_t)rnd(2) * 0x6 | (uint64_t)rnd(2) * 0xE0;
        mk_cpu_features f;
        if (mk_probe_decode_x86(&regs, xcr0, &f) != 0)
            bad++;
        if (memchr(f.vendor, 0, sizeof f.vendor) == NULL
            || memchr(f.model_name, 0, sizeof f.model_name) == NULL)
            bad++;
        if (f.usable_avx512 && !(f.usable_avx2 && f.os_zmm && (f.xcr0 & 0xE6) == 0xE6))
            bad++;
        if (f.usable_avx2 && !(f.osxsave && f.os_ymm && (f.xcr0 & 0x6) == 0x6))
            bad++;
        if (!f.osxsave && f.xcr0 != 0)
            bad++;
        if (mk_probe_decode_arm(rnd64(), rnd64(), (uint32_t)rnd64(), r % 2 ? rnd64() : 0, &f) != 0)
            bad++;
        if (memchr(f.vendor, 0, sizeof f.vendor) == NULL
            || memchr(f.model_name, 0, sizeof f.model_name) == NULL)
            bad++;
        if (f.usable_sve && f.sve_vector_bits < 128)
            bad++;
    }
    if (mk_probe_decode_x86(NULL, 0, NULL) != -1 || mk_probe(NULL) != -1)
        bad++;
    return bad;
}

static int isa_cleared(const mk_cpu_features *f, const char *isa)
{
    if (strcmp(isa, "scalar") == 0) return 1;
    if (strcmp(isa, "avx2") == 0) return f->usable_avx2;
    if (strcmp(isa, "avx512") == 0) return f->usable_avx512;
    return 0;   /* neon/sve kernels are not linked into this x86 harness */
}

/* ---- main ------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    const char *cases_path = NULL, *only = NULL;
    int64_t fuzz = 200;
    uint64_t seed = 1;
    int best_only = 0, sweep = 1, ignore_probe = 0;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--cases") && val) { cases_path = val; ++i; }
        else if (!strcmp(a, "--fuzz") && val) { fuzz = strtoll(val, NULL, 10); ++i; }
        else if (!strcmp(a, "--seed") && val) { seed = strtoull(val, NULL, 10); ++i; }
        else if (!strcmp(a, "--threads") && val) { g_threads = atoi(val); ++i; }
        else if (!strcmp(a, "--only") && val) { only = val; ++i; }
        else if (!strcmp(a, "--best")) best_only = 1;
        else if (!strcmp(a, "--no-sweep")) sweep = 0;
        else if (!strcmp(a, "--ignore-probe")) ignore_probe = 1;
        else {
            fprintf(stderr, "usage: %s [--cases FILE] [--fuzz N] [--seed S] [--threads T] "
                    "[--best] [--no-sweep] [--only NAME] [--ignore-probe]\n", argv[0]);
            return 2;
        }
    }
    rng_state = seed;
    if (!set_blockings())
        return 2;

    mk_cpu_features f;
    if (mk_probe(&f) != 0) {
        fprintf(stderr, "sanitize_main: mk_probe failed\n");
        return 2;
    }
    const char *best = f.usable_avx512 ? "avx512" : f.usable_avx2 ? "avx2" : "scalar";
    printf("probe arch=%d vendor=%s avx=%d fma=%d avx2=%d avx512f=%d osxsave=%d "
           "xcr0=0x%" PRIx64 " usable_avx2=%d usable_avx512=%d\n", f.arch, f.vendor, f.avx,
           f.fma, f.avx2, f.avx512f, f.osxsave, f.xcr0, f.usable_avx2, f.usable_avx512);
    printf("chosen %s\n", best);
    int decoder_bad = check_decoders(2000);
    printf("decoders rounds=2000 violations=%d\n", decoder_bad);

    san_count total = {0, decoder_bad};
    for (int t = 0; t < NKERNELS; ++t) {
        const san_kernel *kn = &KERNELS[t];
        if (only && strcmp(only, kn->name) != 0)
            continue;
        if (!ignore_probe && !isa_cleared(&f, kn->isa)) {
            printf("skip %s: the probe did not clear %s\n", kn->name, kn->isa);
            continue;
        }
        if (best_only && strcmp(kn->isa, best) != 0 && strcmp(kn->isa, "scalar") != 0) {
            printf("skip %s: not the chosen ISA\n", kn->name);
            continue;
        }
        san_count cat = {0, 0}, swp = {0, 0}, fz = {0, 0};
        if ((cases_path && run_catalogue(kn, cases_path, &cat) < 0)
            || (sweep && run_sweep(kn, &swp) < 0) || run_fuzz(kn, fuzz, &fz) < 0)
            return 2;
        int64_t cases = cat.cases + swp.cases + fz.cases;
        int64_t fails = cat.failures + swp.failures + fz.failures;
        printf("kernel %s isa=%s mr=%" PRId64 " nr=%" PRId64 " catalogue=%" PRId64 " sweep=%"
               PRId64 " fuzz=%" PRId64 " cases=%" PRId64 " failures=%" PRId64 "\n", kn->name,
               kn->isa, kn->mr, kn->nr, cat.cases, swp.cases, fz.cases, cases, fails);
        fflush(stdout);
        total.cases += cases;
        total.failures += fails;
    }
    printf("workspace_bytes %" PRId64 "\n", mk_workspace_bytes());
    printf("total cases=%" PRId64 " failures=%" PRId64 "\n", total.cases, total.failures);
    return total.failures ? 1 : 0;
}
