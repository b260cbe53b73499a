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
 *   harness.c -DMK_HARNESS_SME_UNIT   baseline + ".arch_extension sme": only
 *                                     mk_harness_sme_bits() (RDSVL)
 *   one driver object per typed panel layout (driver_<L>.c, generated): driver.c with the
 *                                     layout's type macros (microkernel.codegen.
 *                                     module_defines), MK_DRIVER_NAME mk_gemm_driver_<L>,
 *                                     and the wrapper mk_hdriver_<L> (below), baseline
 *   one glue object per kernel        its tile's flags (TileSpec.cflags): the generated
 *                                     micro-kernel and void mk_harness_desc_<name>(
 *                                     mk_ukernel_desc *), with the tile's MK_TA/MK_TB/MK_TC
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
 * Types. A second generated list, named by MK_HARNESS_TYPES (a quoted include name;
 * without it every kernel is fp32 on mk_gemm_driver), says per typed kernel
 *   MK_HTYPES(name, types, driver, esize_a, esize_b, esize_c, need)
 * its input types (microkernel.dtypes), the wrapper of its driver object, the element
 * sizes of A, B and C in bytes, and the offset in mk_cpu_features of the probe flag the
 * tile needs beyond its ISA (-1: none; e.g. i8mm for SUDOT, asimdfhm for FMLAL,
 * sme_i8i32 for SMOPA). A wrapper has one signature for every type set (alpha and beta
 * as double, converted to the driver's C type: exact for the float32 and integer values
 * sent):
 *   int mk_hdriver_<L>(const mk_ukernel_desc *, const mk_blocking *, int64_t m, n, k,
 *                      double alpha, const void *a, rs_a, cs_a, const void *b, rs_b,
 *                      cs_b, double beta, void *c, rs_c, cs_c, int nthreads)
 *
 * Nothing of a kernel runs, and no instruction of its ISA executes, unless the probe
 * cleared its ISA and the feature its types need: descriptors are built
 * (mk_harness_desc_*, which may read svcntw() or RDSVL) only for runnable kernels, and a
 * case for another kernel is refused. MICROKERNEL_ISA=<isa> narrows the cleared set as
 * microkernel.dispatch does (an fp32 ISA: it and scalar; a typed one: it, scalar and
 * the best fp32 ISA), and is a clear error (exit 2) when the probe did not clear it.
 *
 * ---- usage -------------------------------------------------------------------------
 *   harness --info     print the info block (below) and exit
 *   harness            print the info block, then read cases on stdin, run them and
 *                      write the results block
 *
 * ---- stdout: info block (text, one "key value..." record per line) -----------------
 *   probe arch=<aarch64|...> neon=<0|1> sve=<0|1> sve2=<0|1> sve_bits=<n> sme=<0|1>
 *         sme_bits=<n> hwcap=0x.. hwcap2=0x.. midr=0x..  (one line; sve_bits and sme_bits
 *                               from prctl)
 *   features asimdhp=<0|1> asimddp=.. asimdfhm=.. i8mm=.. bf16=.. svei8mm=.. svebf16=..
 *         sme_i8i32=.. sme_f16f32=.. sme_b16f32=.. sme_f32f32=..   the decoded extensions
 *   isas scalar[,neon][,sve][,neondot]...             ISAs the probe cleared (ISAS order)
 *   chosen <isa>                                      best cleared (or forced) fp32 ISA
 *   observed_vl_bits <n>|none   svcntw()*32 read inside SVE code; only when the probe
 *                               cleared SVE, else "none" (nothing SVE executes)
 *   observed_svl_bits <n>|none  RDSVL*8 (the streaming VL); only when the probe cleared SME
 *   smopa32 ok|wrong            a known answer of the 32-bit SMOPA (only with SME): "wrong"
 *                               on an emulator with qemu's SMOPA defect (mk_harness_smopa32_ok)
 *   kernel <name> isa=<isa> types=<t> mr=<MR|0> nr=<NR|0> runnable=<0|1>   per linked
 *                               kernel; MR, NR the run-time values (SVE: nv*svcntw(), SME:
 *                               vectors*SVL/32); both 0 when not runnable (its code is
 *                               never entered)
 *   results <ncases>            last text line; the binary results follow (below)
 *
 * ---- stdin: cases (binary, little-endian, native aarch64 layout) -------------------
 *   char magic[8] = "MKCASES2"; int64_t ncases;
 *   then ncases times: struct mk_hcase (272 bytes, below), followed by the A, B and C
 *   buffers: len_x elements of esize_x bytes each (the kernel's types; a case whose
 *   types or sizes differ from the kernel's is answered -103).
 *   X(i, j) is buf_x[off_x + i*rs_x + j*cs_x]; strides in elements, any sign.
 *   align_x: byte offset (0..63, a multiple of esize_x) of the buffer past a 64-byte
 *   boundary, to reproduce the caller's alignment.
 *
 * ---- stdout after "results": per case (binary) -------------------------------------
 *   int64_t status;  0 = driver returned MK_OK, -1/-2 driver MK_ENOMEM/MK_EINVAL,
 *                    -100 refused (ISA not cleared), -101 unknown kernel name,
 *                    -102 something wrote outside the A, B or C buffer (into the
 *                    red zones of MK_SLACK bytes around each), -103 types mismatch;
 *   int64_t len_c;   then len_c elements of esize_c bytes: the whole C buffer after the
 *                    call (guard elements included, so Python sees out-of-bounds writes).
 *
 * Exit status: 0 when every case was read and answered (whatever its status),
 * 1 on a protocol or allocation error, 2 for a refused MICROKERNEL_ISA.
 */
#include <stddef.h>
#include <stdint.h>

#ifdef MK_HARNESS_SVE_UNIT
/* ---- the SVE unit: compiled with -march=armv8.2-a+sve, called only after the probe
 * cleared SVE. The VL the code itself runs at, in bits. */
#include <arm_sve.h>
int64_t mk_harness_sve_bits(void) { return (int64_t)svcntw() * 32; }

#elif defined(MK_HARNESS_SME_UNIT)
/* ---- the SME unit: baseline flags, RDSVL assembled with .arch_extension sme (GCC 12
 * has no SME option); called only after the probe cleared SME. The streaming VL in bits. */
int64_t mk_harness_sme_bits(void)
{
    int64_t bytes;
    __asm__ volatile(".arch_extension sme\n\trdsvl %0, #1" : "=r"(bytes));
    return bytes * 8;
}

/* A known answer of the 32-bit integer outer product (SMOPA za0.s from .b): bytes 0..
 * and 16.. in z0 and z1, the top-left 4 x 4 of ZA0 (every SVL has it). qemu before
 * "target/arm: Fix 32-bit SMOPA" (upstream, March 2024, gitlab issue 2083; not in
 * Debian's 7.2) computes two 32-bit outputs at once from the wrong rows: 0 then. */
int mk_harness_smopa32_ok(void)
{
    static const int32_t want[16] = { 110, 134, 158, 182, 390, 478, 566, 654,
                                      670, 822, 974, 1126, 950, 1166, 1382, 1598 };
    int32_t got[16];
    int32_t *p = got;
    __asm__ volatile(".arch_extension sme\n\t"
                     "smstart\n\tzero {za}\n\tindex z0.b, #0, #1\n\tmovprfx z1, z0\n\t"
                     "add z1.b, z1.b, #16\n\tptrue p0.b\n\t"
                     "smopa za0.s, p0/m, p0/m, z0.b, z1.b\n\tptrue p0.s, vl4\n\tmov w12, #0\n\t"
                     "st1w {za0h.s[w12, 0]}, p0, [%0]\n\tadd %0, %0, #16\n\t"
                     "st1w {za0h.s[w12, 1]}, p0, [%0]\n\tadd %0, %0, #16\n\t"
                     "st1w {za0h.s[w12, 2]}, p0, [%0]\n\tadd %0, %0, #16\n\t"
                     "st1w {za0h.s[w12, 3]}, p0, [%0]\n\tsmstop"
                     : "+r"(p) : : "memory", "x12", "v0", "v1", "p0", "ffr");
    for (int i = 0; i < 16; ++i)
        if (got[i] != want[i])
            return 0;
    return 1;
}

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

/* weak: a harness linked without an SVE or SME unit still links (never called then) */
int64_t mk_harness_sve_bits(void) __attribute__((weak));
int64_t mk_harness_sme_bits(void) __attribute__((weak));
int mk_harness_smopa32_ok(void) __attribute__((weak));

#define MK_HDRIVER_ARGS const mk_ukernel_desc *uk, const mk_blocking *blk, int64_t m,   \
    int64_t n, int64_t k, double alpha, const void *a, int64_t rs_a, int64_t cs_a,       \
    const void *b, int64_t rs_b, int64_t cs_b, double beta, void *c, int64_t rs_c,       \
    int64_t cs_c, int nthreads
typedef int (*mk_hdriver_fn)(MK_HDRIVER_ARGS);

/* the typed drivers' wrappers (one driver object per layout; weak: a list naming a
 * driver whose object is not linked leaves it NULL, and its cases are answered -103) */
#ifdef MK_HARNESS_TYPES
#define MK_HTYPES(name, types, driver, ea, eb, ec, need) \
    int driver(MK_HDRIVER_ARGS) __attribute__((weak));
#include MK_HARNESS_TYPES
#undef MK_HTYPES
#endif

/* the fp32 driver behind the one wrapper signature (fp32 kernels of the types list name
 * it too) */
int mk_hdriver_f32(MK_HDRIVER_ARGS);
int mk_hdriver_f32(MK_HDRIVER_ARGS)
{
    return mk_gemm_driver(uk, blk, m, n, k, (float)alpha, (const float *)a, rs_a, cs_a,
                          (const float *)b, rs_b, cs_b, (float)beta, (float *)c, rs_c, cs_c,
                          nthreads);
}

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

/* typed kernels: types, driver wrapper, element sizes, the feature they need */
typedef struct {
    const char *name;
    const char *types;
    mk_hdriver_fn driver;
    int64_t esize_a, esize_b, esize_c;
    long need;                          /* offsetof(mk_cpu_features, flag) or -1 */
} mk_htypes;

static const mk_htypes TYPES[] = {
#ifdef MK_HARNESS_TYPES
#define MK_HTYPES(name, types, driver, ea, eb, ec, need) \
    { #name, #types, driver, ea, eb, ec, need },
#include MK_HARNESS_TYPES
#undef MK_HTYPES
#endif
    { NULL, NULL, NULL, 0, 0, 0, -1 }
};
static const mk_htypes F32_TYPES = { NULL, "f32", mk_hdriver_f32, 4, 4, 4, -1 };

static const mk_htypes *types_of(const char *name)
{
    for (const mk_htypes *t = TYPES; t->name; ++t)
        if (!strcmp(t->name, name))
            return t;
    return &F32_TYPES;
}

/* One case header: 48 + 8 + 25*8 + 2*8 = 272 bytes, no padding. */
typedef struct {
    char kernel[48];
    char types[8];
    int64_t m, n, k;
    int64_t rs_a, cs_a, off_a, len_a, align_a;
    int64_t rs_b, cs_b, off_b, len_b, align_b;
    int64_t rs_c, cs_c, off_c, len_c, align_c;
    int64_t kc, mc, nc;
    int64_t threads;
    int64_t esize_a, esize_b, esize_c;
    double alpha, beta;
} mk_hcase;
_Static_assert(sizeof(mk_hcase) == 272, "mk_hcase layout is part of the protocol");

enum { ST_REFUSED = -100, ST_UNKNOWN = -101, ST_OUTSIDE = -102, ST_TYPES = -103 };

/* the aarch64 ISAs of microkernel.tile.ISAS, in its order (tests check the two agree);
 * fp32: an ISA whose tiles are fp32 without saying so (tile.IsaInfo.implied) */
#define MK_NISA 10
static const char *ISA_NAMES[MK_NISA] = {
    "scalar", "neon", "sve", "neondot", "neoni8mm", "neonbf16", "neonfp16", "svei8mm",
    "svebf16", "sme" };
static const int ISA_FP32[MK_NISA] = { 1, 1, 1, 0, 0, 0, 0, 0, 0, 1 };
static int cleared[MK_NISA];
static mk_cpu_features F;

static int isa_index(const char *isa)
{
    for (int i = 0; i < MK_NISA; ++i)
        if (!strcmp(isa, ISA_NAMES[i]))
            return i;
    return -1;
}

/* its ISA cleared and the probe flag its types need set */
static int runnable(const mk_hkernel *kp)
{
    int i = isa_index(kp->isa);
    if (i < 0 || !cleared[i])
        return 0;
    const mk_htypes *t = types_of(kp->name);
    if (t->need >= 0) {
        int flag;
        memcpy(&flag, (const char *)&F + t->need, sizeof flag);
        return flag != 0;
    }
    return 1;
}

static int read_all(void *p, size_t n)
{
    return fread(p, 1, n, stdin) == n;
}

/* One operand buffer: `bytes` bytes starting `align` bytes past a 64-byte boundary,
 * between two red zones of MK_SLACK bytes filled with a canary pattern, so that a kernel
 * writing outside its buffer is reported per case (status -102) instead of corrupting
 * the heap. */
#define MK_SLACK 16384
static const unsigned char MK_CANARY[4] = { 0xef, 0xbe, 0xc0, 0x7f };  /* a quiet NaN */
typedef struct {
    void *raw;
    unsigned char *data;
    size_t bytes;
} hbuf;

static int hbuf_alloc(hbuf *h, int64_t len, int64_t esize, int64_t align)
{
    if (!(align >= 0 && align < 64 && esize > 0 && align % esize == 0))
        align = 0;
    h->bytes = (size_t)(len > 0 ? len : 0) * (size_t)esize;
    size_t total = (2 * MK_SLACK + h->bytes + 64 + 63) & ~(size_t)63;
    h->raw = aligned_alloc(64, total);
    if (!h->raw)
        return 0;
    h->data = (unsigned char *)h->raw + align + MK_SLACK;
    for (size_t i = 0; i < MK_SLACK; ++i) {
        h->data[(ptrdiff_t)i - MK_SLACK] = MK_CANARY[i % 4];
        h->data[h->bytes + i] = MK_CANARY[i % 4];
    }
    return 1;
}

static int hbuf_intact(const hbuf *h)
{
    for (size_t i = 0; i < MK_SLACK; ++i)
        if (h->data[(ptrdiff_t)i - MK_SLACK] != MK_CANARY[i % 4]
            || h->data[h->bytes + i] != MK_CANARY[i % 4])
            return 0;
    return 1;
}

static int run_cases(void)
{
    char magic[8];
    int64_t ncases;
    if (!read_all(magic, 8) || memcmp(magic, "MKCASES2", 8) || !read_all(&ncases, 8)
        || ncases < 0) {
        fprintf(stderr, "harness: bad input header (expected MKCASES2, ncases)\n");
        return 1;
    }
    printf("results %lld\n", (long long)ncases);
    fflush(stdout);
    for (int64_t ci = 0; ci < ncases; ++ci) {
        mk_hcase h;
        if (!read_all(&h, sizeof h) || h.len_a < 0 || h.len_b < 0 || h.len_c < 0
            || h.esize_a < 1 || h.esize_b < 1 || h.esize_c < 1 || h.esize_a > 8
            || h.esize_b > 8 || h.esize_c > 8) {
            fprintf(stderr, "harness: truncated or bad case %lld\n", (long long)ci);
            return 1;
        }
        h.kernel[sizeof h.kernel - 1] = '\0';
        h.types[sizeof h.types - 1] = '\0';
        hbuf ha, hb, hc;
        if (!hbuf_alloc(&ha, h.len_a, h.esize_a, h.align_a)
            || !hbuf_alloc(&hb, h.len_b, h.esize_b, h.align_b)
            || !hbuf_alloc(&hc, h.len_c, h.esize_c, h.align_c)) {
            fprintf(stderr, "harness: out of memory in case %lld\n", (long long)ci);
            return 1;
        }
        unsigned char *a = ha.data, *b = hb.data, *c = hc.data;
        if (!read_all(a, ha.bytes) || !read_all(b, hb.bytes) || !read_all(c, hc.bytes)) {
            fprintf(stderr, "harness: truncated buffers in case %lld\n", (long long)ci);
            return 1;
        }
        int64_t status = ST_UNKNOWN;
        for (const mk_hkernel *kp = KERNELS; kp->name; ++kp) {
            if (!kp->desc || strcmp(kp->name, h.kernel))
                continue;
            const mk_htypes *t = types_of(kp->name);
            if (strcmp(t->types, h.types) || t->esize_a != h.esize_a
                || t->esize_b != h.esize_b || t->esize_c != h.esize_c || !t->driver) {
                status = ST_TYPES;
                break;
            }
            if (!runnable(kp)) {
                status = ST_REFUSED;        /* nothing of this ISA executes */
                break;
            }
            mk_ukernel_desc d;
            kp->desc(&d);
            mk_blocking blk = { h.kc, h.mc, h.nc, MK_TEAM_CHUNKS, MK_TEAM_PARTS };
            status = t->driver(&d, &blk, h.m, h.n, h.k, h.alpha,
                               a + h.off_a * h.esize_a, h.rs_a, h.cs_a,
                               b + h.off_b * h.esize_b, h.rs_b, h.cs_b,
                               h.beta, c + h.off_c * h.esize_c, h.rs_c, h.cs_c,
                               (int)h.threads);
            break;
        }
        if (!hbuf_intact(&ha) || !hbuf_intact(&hb) || !hbuf_intact(&hc))
            status = ST_OUTSIDE;
        int64_t out[2] = { status, h.len_c };
        if (fwrite(out, 8, 2, stdout) != 2 || fwrite(c, 1, hc.bytes, stdout) != hc.bytes) {
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
    memset(&F, 0, sizeof F);
    mk_probe(&F);
    const int usable[MK_NISA] = {
        1, F.usable_neon, F.usable_sve, F.usable_neondot, F.usable_neoni8mm,
        F.usable_neonbf16, F.usable_neonfp16, F.usable_svei8mm, F.usable_svebf16,
        F.usable_sme };
    for (int i = 0; i < MK_NISA; ++i)
        cleared[i] = usable[i] != 0;

    char found[160] = "";
    for (int i = 0; i < MK_NISA; ++i)
        if (cleared[i]) {
            if (found[0]) strcat(found, ",");
            strcat(found, ISA_NAMES[i]);
        }

    const char *forced = getenv("MICROKERNEL_ISA");
    if (forced && forced[0]) {
        int fi = isa_index(forced);
        if (fi < 0) {
            fprintf(stderr, "error: MICROKERNEL_ISA=%s is not an aarch64 ISA; valid: scalar, "
                    "neon, sve, neondot, neoni8mm, neonbf16, neonfp16, svei8mm, svebf16, sme\n",
                    forced);
            return 2;
        }
        if (!cleared[fi]) {
            fprintf(stderr, "error: MICROKERNEL_ISA=%s: this CPU/OS cannot run %s "
                    "(the probe found: %s)\n", forced, forced, found);
            return 2;
        }
        /* as microkernel.dispatch: the forced ISA and scalar; a typed ISA keeps the best
         * fp32 ISA (its base) too */
        const int base = cleared[2] ? 2 : cleared[1] ? 1 : 0;
        for (int i = 1; i < MK_NISA; ++i)
            if (i != fi && !(!ISA_FP32[fi] && i == base))
                cleared[i] = 0;
    }
    const char *chosen = cleared[2] ? "sve" : cleared[1] ? "neon" : "scalar";

    printf("probe arch=%s neon=%d sve=%d sve2=%d sve_bits=%d sme=%d sme_bits=%d hwcap=0x%llx "
           "hwcap2=0x%llx midr=0x%llx\n",
           F.arch == MK_ARCH_AARCH64 ? "aarch64" : F.arch == MK_ARCH_X86_64 ? "x86_64" : "other",
           F.neon, F.sve, F.sve2, F.sve_vector_bits, F.sme, F.sme_vector_bits,
           (unsigned long long)F.hwcap, (unsigned long long)F.hwcap2,
           (unsigned long long)F.midr);
    printf("features asimdhp=%d asimddp=%d asimdfhm=%d i8mm=%d bf16=%d svei8mm=%d svebf16=%d "
           "sme_i8i32=%d sme_f16f32=%d sme_b16f32=%d sme_f32f32=%d\n", F.asimdhp, F.asimddp,
           F.asimdfhm, F.i8mm, F.bf16, F.svei8mm, F.svebf16, F.sme_i8i32, F.sme_f16f32,
           F.sme_b16f32, F.sme_f32f32);
    printf("isas %s\n", found);
    printf("chosen %s\n", chosen);
    if (cleared[2] && mk_harness_sve_bits)
        printf("observed_vl_bits %lld\n", (long long)mk_harness_sve_bits());
    else
        printf("observed_vl_bits none\n");
    if (cleared[9] && mk_harness_sme_bits)
        printf("observed_svl_bits %lld\n", (long long)mk_harness_sme_bits());
    else
        printf("observed_svl_bits none\n");
    if (cleared[9] && mk_harness_smopa32_ok)
        printf("smopa32 %s\n", mk_harness_smopa32_ok() ? "ok" : "wrong");
    for (const mk_hkernel *kp = KERNELS; kp->name; ++kp) {
        if (!kp->desc)
            continue;                   /* listed, but its glue is not linked */
        mk_ukernel_desc d = { 0, 0, NULL, NULL };
        int ok = runnable(kp);
        if (ok)
            kp->desc(&d);
        printf("kernel %s isa=%s types=%s mr=%lld nr=%lld runnable=%d\n", kp->name, kp->isa,
               types_of(kp->name)->types, (long long)d.mr, (long long)d.nr, ok);
    }
    fflush(stdout);
    if (info_only)
        return 0;
    return run_cases();
}
#endif
