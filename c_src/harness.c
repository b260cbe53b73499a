/*
 * harness.c: the aarch64 cross-validation harness behind `microkernel cross`.
 *
 * A small static program that links the probe (probe.c), the one driver (driver.c)
 * and a selection of aarch64 micro-kernels, and runs GEMM cases sent by Python on
 * stdin, writing the results to stdout. microkernel/cross/harness.py builds it with
 * aarch64-linux-gnu-gcc -static, microkernel/cross/run.py runs it under qemu-aarch64
 * at each SVE vector length and checks the results against a float64 numpy
 * reference; microkernel/cross/wire.py is the Python side of the protocol below.
 *
 * Objects (each built with only its own ISA flags, so no SVE instruction leaks into the rest):
 *   harness.c, probe.c, driver.c      baseline (-march=armv8-a), -fopenmp for driver.c
 *   harness.c -DMK_HARNESS_SVE_UNIT   -march=armv8.2-a+sve: only mk_harness_sve_bits()
 *   one glue object per kernel        its ISA's flags: the generated micro-kernel and
 *                                     void mk_harness_desc_<name>(mk_ukernel_desc *)
 *
 * The kernel list is the project's X-macro list (microkernel.codegen.kernel_list),
 * one line per kernel:  MK_KERNEL(name, isa, mr, nr, nv, k_unroll, edge)
 * included from the file named by the macro MK_KERNEL_LIST (a quoted include name;
 * default "ukernels/mk_kernels.inc", the committed list of built-ins). The cross
 * build writes the selection's list and passes -DMK_KERNEL_LIST="mk_harness_kernels.inc".
 * The descriptor functions are declared weak: a listed kernel whose glue object is
 * not linked (an x86 kernel of the default list) is left out of the table, and its
 * cases come back as unknown (-101).
 *
 * Nothing of a kernel runs, and no SVE instruction executes, unless the probe
 * cleared its ISA: descriptors are built (mk_harness_desc_*, which may read
 * svcntw()) only for cleared ISAs, and a case for another ISA is refused.
 * MICROKERNEL_ISA=<isa> narrows the cleared set to that ISA (plus scalar), and is a
 * clear error (exit 2) when the probe did not clear it, as in microkernel.dispatch.
 *
 * ---- usage -------------------------------------------------------------------------
 *   harness --info     print the info block (below) and exit
 *   harness            print the info block, then read cases on stdin, run them and
 *                      write the results block
 *
 * ---- stdout: info block (text, one "key value..." record per line) -----------------
 *   probe arch=<aarch64|...> neon=<0|1> sve=<0|1> sve2=<0|1> sve_bits=<n>
 *         hwcap=0x.. hwcap2=0x.. midr=0x..         (one line; sve_bits from prctl)
 *   isas scalar[,neon][,sve]                          ISAs the probe cleared
 *   chosen <isa>                                      best cleared (or forced) ISA
 *   observed_vl_bits <n>|none   svcntw()*32 read inside SVE code; only when the probe
 *                               cleared SVE, else "none" (nothing SVE executes)
 *   kernel <name> isa=<isa> mr=<MR|0> nr=<NR|0> runnable=<0|1>   per linked kernel;
 *                               NR is the run-time value (SVE: nv*svcntw()); both 0
 *                               when not runnable (its code is never entered)
 *   results <ncases>            last text line; the binary results follow (below)
 *
 * ---- stdin: cases (binary, little-endian, native aarch64 layout) -------------------
 *   char magic[8] = "MKCASES1"; int64_t ncases;
 *   then ncases times: struct mk_hcase (216 bytes, below), followed by
 *   len_a floats (A buffer), len_b floats (B buffer), len_c floats (C buffer).
 *   X(i, j) is buf_x[off_x + i*rs_x + j*cs_x]; strides in elements, any sign.
 *   align_x: byte offset (0..60, multiple of 4) of the buffer past a 64-byte
 *   boundary, to reproduce the caller's alignment.
 *
 * ---- stdout after "results": per case (binary) -------------------------------------
 *   int64_t status;  0 = driver returned MK_OK, -1/-2 driver MK_ENOMEM/MK_EINVAL,
 *                    -100 refused (ISA not cleared), -101 unknown kernel name,
 *                    -102 something wrote outside the A, B or C buffer (into the
 *                    red zones of MK_SLACK floats around each);
 *   int64_t len_c;   then len_c floats: the whole C buffer after the call (guard
 *                    elements included, so Python sees out-of-bounds writes).
 *
 * Exit status: 0 when every case was read and answered (whatever its status),
 * 1 on a protocol or allocation error, 2 for a refused MICROKERNEL_ISA.
 */
#include <stdint.h>

#ifdef MK_HARNESS_SVE_UNIT
/* ---- the SVE unit: compiled with -march=armv8.2-a+sve, called only after the probe
 * cleared SVE. The VL the code itself runs at, in bits. */
#include <arm_sve.h>
int64_t mk_harness_sve_bits(void) { return (int64_t)svcntw() * 32; }

#else  /* ---- the baseline unit -------------------------------------------------- */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mk_ukernel.h"
#include "probe.h"

int mk_gemm_driver(const mk_ukernel_desc *uk, const mk_blocking *blk,
                   int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t rs_a, int64_t cs_a,
                   const float *b, int64_t rs_b, int64_t cs_b,
                   float beta, float *c, int64_t rs_c, int64_t cs_c, int nthreads);

/* weak: a harness linked without any SVE object still links (never called then) */
int64_t mk_harness_sve_bits(void) __attribute__((weak));

#ifndef MK_KERNEL_LIST
#define MK_KERNEL_LIST "ukernels/mk_kernels.inc"
#endif

/* the kernels' descriptor functions (one glue object each; weak: see above) */
#define MK_KERNEL(name, isa, mr, nr, nv, k_unroll, edge) \
    void mk_harness_desc_##name(mk_ukernel_desc *d) __attribute__((weak));
#include MK_KERNEL_LIST
#undef MK_KERNEL

typedef struct {
    const char *name;
    const char *isa;
    void (*desc)(mk_ukernel_desc *d);
} mk_hkernel;

static const mk_hkernel KERNELS[] = {
#define MK_KERNEL(name, isa, mr, nr, nv, k_unroll, edge) \
    { #name, #isa, mk_harness_desc_##name },
#include MK_KERNEL_LIST
#undef MK_KERNEL
    { NULL, NULL, NULL }
};

/* One case header: 32 + 22*8 + 2*4 = 216 bytes, no padding. */
typedef struct {
    char kernel[32];
    int64_t m, n, k;
    int64_t rs_a, cs_a, off_a, len_a, align_a;
    int64_t rs_b, cs_b, off_b, len_b, align_b;
    int64_t rs_c, cs_c, off_c, len_c, align_c;
    int64_t kc, mc, nc;
    int64_t threads;
    float alpha, beta;
} mk_hcase;
_Static_assert(sizeof(mk_hcase) == 216, "mk_hcase layout is part of the protocol");

enum { ST_REFUSED = -100, ST_UNKNOWN = -101, ST_OUTSIDE = -102 };

static int cleared[3];                  /* scalar, neon, sve */

static int isa_index(const char *isa)
{
    if (!strcmp(isa, "scalar")) return 0;
    if (!strcmp(isa, "neon")) return 1;
    if (!strcmp(isa, "sve")) return 2;
    return -1;
}
static const char *ISA_NAMES[3] = { "scalar", "neon", "sve" };

static int runnable(const char *isa)
{
    int i = isa_index(isa);
    return i >= 0 && cleared[i];
}

static int read_all(void *p, size_t n)
{
    return fread(p, 1, n, stdin) == n;
}

/* One operand buffer: len floats starting `align` bytes past a 64-byte boundary,
 * between two red zones of MK_SLACK floats filled with a canary, so that a kernel
 * writing outside its buffer is reported per case (status -102) instead of
 * corrupting the heap. */
#define MK_SLACK 4096
#define MK_CANARY 0x7fc0beefu           /* a quiet NaN with a payload */
typedef struct {
    void *raw;
    float *data;
    int64_t len;
} hbuf;

static int hbuf_alloc(hbuf *h, int64_t len, int64_t align)
{
    if (!(align >= 0 && align < 64 && align % 4 == 0))
        align = 0;
    size_t floats = (size_t)(2 * MK_SLACK + (len > 0 ? len : 0));
    size_t bytes = (floats * 4 + 64 + 63) & ~(size_t)63;
    h->raw = aligned_alloc(64, bytes);
    if (!h->raw)
        return 0;
    h->len = len;
    h->data = (float *)((char *)h->raw + align) + MK_SLACK;
    const uint32_t canary = MK_CANARY;
    for (int64_t i = 0; i < MK_SLACK; ++i) {
        memcpy(h->data - MK_SLACK + i, &canary, 4);
        memcpy(h->data + len + i, &canary, 4);
    }
    return 1;
}

static int hbuf_intact(const hbuf *h)
{
    for (int64_t i = 0; i < MK_SLACK; ++i) {
        uint32_t lo, hi;
        memcpy(&lo, h->data - MK_SLACK + i, 4);
        memcpy(&hi, h->data + h->len + i, 4);
        if (lo != MK_CANARY || hi != MK_CANARY)
            return 0;
    }
    return 1;
}

static int run_cases(void)
{
    char magic[8];
    int64_t ncases;
    if (!read_all(magic, 8) || memcmp(magic, "MKCASES1", 8) || !read_all(&ncases, 8)
        || ncases < 0) {
        fprintf(stderr, "harness: bad input header (expected MKCASES1, ncases)\n");
        return 1;
    }
    printf("results %lld\n", (long long)ncases);
    fflush(stdout);
    for (int64_t ci = 0; ci < ncases; ++ci) {
        mk_hcase h;
        if (!read_all(&h, sizeof h) || h.len_a < 0 || h.len_b < 0 || h.len_c < 0) {
            fprintf(stderr, "harness: truncated or bad case %lld\n", (long long)ci);
            return 1;
        }
        h.kernel[31] = '\0';
        hbuf ha, hb, hc;
        if (!hbuf_alloc(&ha, h.len_a, h.align_a) || !hbuf_alloc(&hb, h.len_b, h.align_b)
            || !hbuf_alloc(&hc, h.len_c, h.align_c)) {
            fprintf(stderr, "harness: out of memory in case %lld\n", (long long)ci);
            return 1;
        }
        float *a = ha.data, *b = hb.data, *c = hc.data;
        if (!read_all(a, (size_t)h.len_a * 4) || !read_all(b, (size_t)h.len_b * 4)
            || !read_all(c, (size_t)h.len_c * 4)) {
            fprintf(stderr, "harness: truncated buffers in case %lld\n", (long long)ci);
            return 1;
        }
        int64_t status = ST_UNKNOWN;
        for (const mk_hkernel *kp = KERNELS; kp->name; ++kp) {
            if (!kp->desc || strcmp(kp->name, h.kernel))
                continue;
            if (!runnable(kp->isa)) {
                status = ST_REFUSED;        /* nothing of this ISA executes */
                break;
            }
            mk_ukernel_desc d;
            kp->desc(&d);
            mk_blocking blk = { h.kc, h.mc, h.nc };
            status = mk_gemm_driver(&d, &blk, h.m, h.n, h.k, h.alpha,
                                    a + h.off_a, h.rs_a, h.cs_a,
                                    b + h.off_b, h.rs_b, h.cs_b,
                                    h.beta, c + h.off_c, h.rs_c, h.cs_c, (int)h.threads);
            break;
        }
        if (!hbuf_intact(&ha) || !hbuf_intact(&hb) || !hbuf_intact(&hc))
            status = ST_OUTSIDE;
        int64_t out[2] = { status, h.len_c };
        if (fwrite(out, 8, 2, stdout) != 2 || fwrite(c, 4, (size_t)h.len_c, stdout) != (size_t)h.len_c) {
            fprintf(stderr, "harness: cannot write results\n");
            return 1;
        }
        free(ha.raw); free(hb.raw); free(hc.raw);
    }
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    int info_only = argc > 1 && !strcmp(argv[1], "--info");
    if (argc > 1 && !info_only) {
        fprintf(stderr, "usage: %s [--info]  (cases on stdin; see c_src/harness.c)\n", argv[0]);
        return 1;
    }
    mk_cpu_features f;
    memset(&f, 0, sizeof f);
    mk_probe(&f);
    cleared[0] = 1;
    cleared[1] = f.usable_neon;
    cleared[2] = f.usable_sve;

    char found[64] = "";
    for (int i = 0; i < 3; ++i)
        if (cleared[i]) {
            if (found[0]) strcat(found, ",");
            strcat(found, ISA_NAMES[i]);
        }

    const char *forced = getenv("MICROKERNEL_ISA");
    if (forced && forced[0]) {
        int fi = isa_index(forced);
        if (fi < 0) {
            fprintf(stderr, "error: MICROKERNEL_ISA=%s is not an aarch64 ISA; valid: scalar, neon, sve\n",
                    forced);
            return 2;
        }
        if (!cleared[fi]) {
            fprintf(stderr, "error: MICROKERNEL_ISA=%s: this CPU/OS cannot run %s "
                    "(the probe found: %s)\n", forced, forced, found);
            return 2;
        }
        for (int i = 1; i < 3; ++i)     /* narrow to the forced ISA plus scalar */
            if (i != fi) cleared[i] = 0;
    }
    const char *chosen = cleared[2] ? "sve" : cleared[1] ? "neon" : "scalar";

    printf("probe arch=%s neon=%d sve=%d sve2=%d sve_bits=%d hwcap=0x%llx hwcap2=0x%llx midr=0x%llx\n",
           f.arch == MK_ARCH_AARCH64 ? "aarch64" : f.arch == MK_ARCH_X86_64 ? "x86_64" : "other",
           f.neon, f.sve, f.sve2, f.sve_vector_bits, (unsigned long long)f.hwcap,
           (unsigned long long)f.hwcap2, (unsigned long long)f.midr);
    printf("isas %s\n", found);
    printf("chosen %s\n", chosen);
    if (cleared[2] && mk_harness_sve_bits)
        printf("observed_vl_bits %lld\n", (long long)mk_harness_sve_bits());
    else
        printf("observed_vl_bits none\n");
    for (const mk_hkernel *kp = KERNELS; kp->name; ++kp) {
        if (!kp->desc)
            continue;                   /* listed, but its glue is not linked */
        mk_ukernel_desc d = { 0, 0, NULL, NULL };
        int ok = runnable(kp->isa);
        if (ok)
            kp->desc(&d);
        printf("kernel %s isa=%s mr=%lld nr=%lld runnable=%d\n", kp->name, kp->isa,
               (long long)d.mr, (long long)d.nr, ok);
    }
    fflush(stdout);
    if (info_only)
        return 0;
    return run_cases();
}
#endif
