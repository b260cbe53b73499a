/* probe.c: CPU feature probe for microkernel. See probe.h for the API and sources.
 *
 * Compile with baseline flags only. The decoders are pure functions of raw values
 * (compiled on every architecture, so tests can inject any CPU); only
 * mk_probe_read_x86() and mk_probe() touch the hardware.
 */
#ifndef MK_PROBE_H   /* the cffi build may paste probe.h in front of this file */
#include "probe.h"
#endif

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#  define MK_X86 1
#  include <cpuid.h>
#  if defined(__linux__)
#    include <sys/syscall.h>
#    include <unistd.h>
#  endif
#elif defined(__aarch64__) && defined(__linux__)
#  define MK_ARM_LINUX 1
#  include <sys/auxv.h>
#  include <sys/prctl.h>
#  ifndef PR_SVE_GET_VL
#    define PR_SVE_GET_VL 51          /* linux/prctl.h */
#  endif
#endif

#define BIT(v, n) ((int)(((v) >> (n)) & 1u))

/* One row of a decoder's feature table: the int flag of mk_cpu_features it sets (its
 * offsetof), the register word it reads (an index into the decoder's words[]) and the
 * flag's mask in that word. */
typedef struct {
    size_t field;
    int word;
    uint64_t mask;
} mk_feature_bit;

#define MK_FEATURE(flag, word, mask) { offsetof(mk_cpu_features, flag), word, mask }
#define MK_COUNT(table) (sizeof (table) / sizeof (table)[0])

/* Sets the flag of each of the n rows to whether its mask is set in words[its word]. */
static void mk_decode_bits(mk_cpu_features *out, const uint64_t *words,
                           const mk_feature_bit *rows, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        *(int *)((char *)out + rows[i].field) = (words[rows[i].word] & rows[i].mask) != 0;
}

/* ---- x86 ------------------------------------------------------------------ */

/* XCR0 state components (Intel SDM vol. 1, 13.1). */
#define MK_XCR0_SSE_AVX   0x6ull      /* XMM | YMM */
#define MK_XCR0_AVX512    0xE6ull     /* XMM | YMM | opmask | ZMM_Hi256 | Hi16_ZMM */
#define MK_XCR0_AMX       0x60000ull  /* TILECFG | TILEDATA */

/* The CPUID registers the feature flags are read from; a leaf the CPU does not report
 * (max basic leaf < 7, or max subleaf of leaf 7 < 1) reads as zero. */
enum {
    MK_CPUID_1_ECX, MK_CPUID_1_EDX,                         /* leaf 1 */
    MK_CPUID_7_0_EBX, MK_CPUID_7_0_ECX, MK_CPUID_7_0_EDX,   /* leaf 7, subleaf 0 */
    MK_CPUID_7_1_EAX,                                       /* leaf 7, subleaf 1 */
    MK_CPUID_WORDS
};

/* The raw CPUID feature flags (Intel SDM vol. 2A, CPUID: feature information and
 * structured extended feature flags). */
static const mk_feature_bit X86_FEATURES[] = {
    MK_FEATURE(sse2,        MK_CPUID_1_EDX,   1ull << 26),
    MK_FEATURE(fma,         MK_CPUID_1_ECX,   1ull << 12),
    MK_FEATURE(osxsave,     MK_CPUID_1_ECX,   1ull << 27),
    MK_FEATURE(avx,         MK_CPUID_1_ECX,   1ull << 28),
    MK_FEATURE(f16c,        MK_CPUID_1_ECX,   1ull << 29),
    MK_FEATURE(hypervisor,  MK_CPUID_1_ECX,   1ull << 31),
    MK_FEATURE(avx2,        MK_CPUID_7_0_EBX, 1ull << 5),
    MK_FEATURE(avx512f,     MK_CPUID_7_0_EBX, 1ull << 16),
    MK_FEATURE(avx512dq,    MK_CPUID_7_0_EBX, 1ull << 17),
    MK_FEATURE(avx512bw,    MK_CPUID_7_0_EBX, 1ull << 30),
    MK_FEATURE(avx512vl,    MK_CPUID_7_0_EBX, 1ull << 31),
    MK_FEATURE(avx512_vnni, MK_CPUID_7_0_ECX, 1ull << 11),
    MK_FEATURE(amx_bf16,    MK_CPUID_7_0_EDX, 1ull << 22),
    MK_FEATURE(avx512_fp16, MK_CPUID_7_0_EDX, 1ull << 23),
    MK_FEATURE(amx_tile,    MK_CPUID_7_0_EDX, 1ull << 24),
    MK_FEATURE(amx_int8,    MK_CPUID_7_0_EDX, 1ull << 25),
    MK_FEATURE(avx512_bf16, MK_CPUID_7_1_EAX, 1ull << 5),
};

static void copy_trimmed(char *dst, size_t cap, const char *src, size_t n)
{
    /* copy n bytes, stop at NUL, strip leading and trailing spaces */
    size_t b = 0, e;
    while (b < n && src[b] == ' ') b++;
    e = b;
    while (e < n && src[e] != '\0') e++;
    while (e > b && src[e - 1] == ' ') e--;
    if (e - b >= cap) e = b + cap - 1;
    memcpy(dst, src + b, e - b);
    dst[e - b] = '\0';
}

/* The typed x86 ISAs from the decoded bits (amx_permitted as set by the caller). */
static void mk_probe_typed_x86(mk_cpu_features *out)
{
    out->usable_avx512bf16 = out->usable_avx512 && out->avx512_bf16;
    out->usable_avx512fp16 = out->usable_avx512 && out->avx512_fp16;
    out->usable_avx512vnni = out->usable_avx512 && out->avx512_vnni;
    out->usable_amx = out->usable_avx512 && out->amx_tile && out->amx_bf16 &&
                      out->amx_int8 && out->os_amx && out->amx_permitted;
}

int mk_probe_decode_x86(const mk_x86_regs *r, uint64_t xcr0, mk_cpu_features *out)
{
    uint32_t max_leaf, base_family, base_model;
    uint64_t words[MK_CPUID_WORDS] = {0};
    char buf[48];

    if (!r || !out) return -1;
    memset(out, 0, sizeof *out);
    out->arch = MK_ARCH_X86_64;

    max_leaf = r->leaf0.eax;
    /* vendor: EBX, EDX, ECX of leaf 0 */
    memcpy(buf + 0, &r->leaf0.ebx, 4);
    memcpy(buf + 4, &r->leaf0.edx, 4);
    memcpy(buf + 8, &r->leaf0.ecx, 4);
    copy_trimmed(out->vendor, sizeof out->vendor, buf, 12);

    /* brand string: leaves 0x80000002..4, EAX EBX ECX EDX each */
    if (r->ext0.eax >= 0x80000004u) {
        int i;
        for (i = 0; i < 3; i++) {
            memcpy(buf + 16 * i + 0, &r->brand[i].eax, 4);
            memcpy(buf + 16 * i + 4, &r->brand[i].ebx, 4);
            memcpy(buf + 16 * i + 8, &r->brand[i].ecx, 4);
            memcpy(buf + 16 * i + 12, &r->brand[i].edx, 4);
        }
        copy_trimmed(out->model_name, sizeof out->model_name, buf, 48);
    }
    if (max_leaf < 1) return 0;

    /* leaf 1: display family/model (SDM vol. 2A, CPUID, figure 3-6) */
    base_family = (r->leaf1.eax >> 8) & 0xf;
    base_model = (r->leaf1.eax >> 4) & 0xf;
    out->family = (int)base_family;
    out->model = (int)base_model;
    if (base_family == 0xf)
        out->family += (int)((r->leaf1.eax >> 20) & 0xff);
    if (base_family == 0x6 || base_family == 0xf)
        out->model += (int)(((r->leaf1.eax >> 16) & 0xf) << 4);
    out->stepping = (int)(r->leaf1.eax & 0xf);

    words[MK_CPUID_1_ECX] = r->leaf1.ecx;
    words[MK_CPUID_1_EDX] = r->leaf1.edx;
    if (max_leaf >= 7) {
        words[MK_CPUID_7_0_EBX] = r->leaf7_0.ebx;
        words[MK_CPUID_7_0_ECX] = r->leaf7_0.ecx;
        words[MK_CPUID_7_0_EDX] = r->leaf7_0.edx;
        if (r->leaf7_0.eax >= 1)      /* max subleaf of leaf 7 */
            words[MK_CPUID_7_1_EAX] = r->leaf7_1.eax;
    }
    mk_decode_bits(out, words, X86_FEATURES, MK_COUNT(X86_FEATURES));

    /* OS support: XGETBV is only valid when the OS set CR4.OSXSAVE. */
    out->xcr0 = out->osxsave ? xcr0 : 0;
    out->os_ymm = (out->xcr0 & MK_XCR0_SSE_AVX) == MK_XCR0_SSE_AVX;
    out->os_zmm = (out->xcr0 & MK_XCR0_AVX512) == MK_XCR0_AVX512;
    out->os_amx = (out->xcr0 & MK_XCR0_AMX) == MK_XCR0_AMX;

    out->usable_avx2 = out->avx && out->fma && out->avx2 && out->osxsave && out->os_ymm;
    out->usable_avx512 = out->usable_avx2 && out->avx512f && out->avx512dq &&
                         out->avx512bw && out->avx512vl && out->os_zmm;
    mk_probe_typed_x86(out);
    return 0;
}

int mk_probe_decode_x86_amx(const mk_x86_regs *r, uint64_t xcr0, int amx_permitted,
                            mk_cpu_features *out)
{
    const int rc = mk_probe_decode_x86(r, xcr0, out);
    if (rc == 0) {
        out->amx_permitted = amx_permitted != 0;
        mk_probe_typed_x86(out);
    }
    return rc;
}

int mk_probe_read_x86(mk_x86_regs *r, uint64_t *xcr0)
{
    if (!r || !xcr0) return -1;
    memset(r, 0, sizeof *r);
    *xcr0 = 0;
#if defined(MK_X86)
    {
        unsigned a, b, c, d, max_leaf, i;
        if (!__get_cpuid(0, &a, &b, &c, &d)) return 0;   /* no CPUID at all */
        r->leaf0 = (mk_cpuid_regs){a, b, c, d};
        max_leaf = a;
        if (max_leaf >= 1) {
            __cpuid_count(1, 0, a, b, c, d);
            r->leaf1 = (mk_cpuid_regs){a, b, c, d};
        }
        if (max_leaf >= 7) {
            __cpuid_count(7, 0, a, b, c, d);
            r->leaf7_0 = (mk_cpuid_regs){a, b, c, d};
            if (r->leaf7_0.eax >= 1) {
                __cpuid_count(7, 1, a, b, c, d);
                r->leaf7_1 = (mk_cpuid_regs){a, b, c, d};
            }
        }
        __cpuid(0x80000000u, a, b, c, d);
        r->ext0 = (mk_cpuid_regs){a, b, c, d};
        if (r->ext0.eax >= 0x80000004u) {
            for (i = 0; i < 3; i++) {
                __cpuid(0x80000002u + i, a, b, c, d);
                r->brand[i] = (mk_cpuid_regs){a, b, c, d};
            }
        } else {
            r->ext0.eax = 0;   /* garbage on CPUs without extended leaves */
        }
        if (BIT(r->leaf1.ecx, 27)) {   /* OSXSAVE: XGETBV(ECX=0) is allowed */
            uint32_t lo, hi;
            /* xgetbv encoded as bytes: no -mxsave needed */
            __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
            *xcr0 = ((uint64_t)hi << 32) | lo;
        }
        return 0;
    }
#else
    return -1;
#endif
}

/* ---- aarch64 -------------------------------------------------------------- */

/* Linux arch/arm64 hwcaps (Documentation/arch/arm64/elf_hwcaps.rst). */
#define MK_HWCAP_ASIMD  (1ull << 1)
#define MK_HWCAP_CPUID  (1ull << 11)
#define MK_HWCAP_SVE    (1ull << 22)
#define MK_HWCAP2_SVE2  (1ull << 1)
#define MK_HWCAP_ASIMDHP   (1ull << 10)
#define MK_HWCAP_ASIMDDP   (1ull << 20)
#define MK_HWCAP_ASIMDFHM  (1ull << 23)
#define MK_HWCAP2_SVEI8MM  (1ull << 9)
#define MK_HWCAP2_SVEBF16  (1ull << 12)
#define MK_HWCAP2_I8MM     (1ull << 13)
#define MK_HWCAP2_BF16     (1ull << 14)
#define MK_HWCAP2_SME      (1ull << 23)
#define MK_HWCAP2_SME_I8I32   (1ull << 26)
#define MK_HWCAP2_SME_F16F32  (1ull << 27)
#define MK_HWCAP2_SME_B16F32  (1ull << 28)
#define MK_HWCAP2_SME_F32F32  (1ull << 29)

/* The words the aarch64 flags are read from: AT_HWCAP, AT_HWCAP2, and AT_HWCAP2 again
 * for the SVE (SME) extensions, zero without HWCAP_SVE (HWCAP2_SME) itself. */
enum { MK_AT_HWCAP, MK_AT_HWCAP2, MK_AT_HWCAP2_SVE, MK_AT_HWCAP2_SME, MK_AT_WORDS };

static void mk_arm_words(uint64_t words[MK_AT_WORDS], uint64_t hwcap, uint64_t hwcap2)
{
    words[MK_AT_HWCAP] = hwcap;
    words[MK_AT_HWCAP2] = hwcap2;
    words[MK_AT_HWCAP2_SVE] = (hwcap & MK_HWCAP_SVE) ? hwcap2 : 0;
    words[MK_AT_HWCAP2_SME] = (hwcap2 & MK_HWCAP2_SME) ? hwcap2 : 0;
}

/* The aarch64 flags: mk_probe_decode_arm sets the first MK_ARM_BASE_FEATURES (neon, sve,
 * sve2), mk_probe_decode_arm2 all of them (the rest: the typed ISAs' extensions). */
#define MK_ARM_BASE_FEATURES 3
static const mk_feature_bit ARM_FEATURES[] = {
    MK_FEATURE(neon,       MK_AT_HWCAP,      MK_HWCAP_ASIMD),
    MK_FEATURE(sve,        MK_AT_HWCAP,      MK_HWCAP_SVE),
    MK_FEATURE(sve2,       MK_AT_HWCAP2_SVE, MK_HWCAP2_SVE2),
    MK_FEATURE(asimdhp,    MK_AT_HWCAP,      MK_HWCAP_ASIMDHP),
    MK_FEATURE(asimddp,    MK_AT_HWCAP,      MK_HWCAP_ASIMDDP),
    MK_FEATURE(asimdfhm,   MK_AT_HWCAP,      MK_HWCAP_ASIMDFHM),
    MK_FEATURE(i8mm,       MK_AT_HWCAP2,     MK_HWCAP2_I8MM),
    MK_FEATURE(bf16,       MK_AT_HWCAP2,     MK_HWCAP2_BF16),
    MK_FEATURE(svei8mm,    MK_AT_HWCAP2_SVE, MK_HWCAP2_SVEI8MM),
    MK_FEATURE(svebf16,    MK_AT_HWCAP2_SVE, MK_HWCAP2_SVEBF16),
    MK_FEATURE(sme,        MK_AT_HWCAP2,     MK_HWCAP2_SME),
    MK_FEATURE(sme_i8i32,  MK_AT_HWCAP2_SME, MK_HWCAP2_SME_I8I32),
    MK_FEATURE(sme_f16f32, MK_AT_HWCAP2_SME, MK_HWCAP2_SME_F16F32),
    MK_FEATURE(sme_b16f32, MK_AT_HWCAP2_SME, MK_HWCAP2_SME_B16F32),
    MK_FEATURE(sme_f32f32, MK_AT_HWCAP2_SME, MK_HWCAP2_SME_F32F32),
};

/* MIDR_EL1 implementer codes (Arm ARM, "MIDR_EL1, Main ID Register"). */
static const char *arm_implementer(unsigned code)
{
    switch (code) {
    case 0x41: return "ARM";
    case 0x42: return "Broadcom";
    case 0x43: return "Cavium";
    case 0x46: return "Fujitsu";
    case 0x48: return "HiSilicon";
    case 0x4e: return "NVIDIA";
    case 0x50: return "APM";
    case 0x51: return "Qualcomm";
    case 0x61: return "Apple";
    case 0x6d: return "Microsoft";
    case 0xc0: return "Ampere";
    default:   return NULL;
    }
}

int mk_probe_decode_arm2(uint64_t hwcap, uint64_t hwcap2, uint32_t sve_vl_bytes,
                         uint32_t sme_vl_bytes, uint64_t midr, mk_cpu_features *out)
{
    extern int mk_probe_decode_arm(uint64_t, uint64_t, uint32_t, uint64_t, mk_cpu_features *);
    uint64_t words[MK_AT_WORDS];
    int rc = mk_probe_decode_arm(hwcap, hwcap2, sve_vl_bytes, midr, out);
    if (rc)
        return rc;
    mk_arm_words(words, hwcap, hwcap2);
    mk_decode_bits(out, words, ARM_FEATURES, MK_COUNT(ARM_FEATURES));
    if (out->sme)
        out->sme_vector_bits = (int)(sme_vl_bytes & 0xffffu) * 8;
    out->usable_neondot = out->usable_neon && out->asimddp;
    out->usable_neoni8mm = out->usable_neon && out->i8mm;
    out->usable_neonbf16 = out->usable_neon && out->bf16;
    out->usable_neonfp16 = out->usable_neon && out->asimdhp;
    out->usable_svei8mm = out->usable_sve && out->svei8mm;
    out->usable_svebf16 = out->usable_sve && out->svebf16;
    /* the streaming VL of an SME kernel: at least 128 bits, or the report is broken */
    out->usable_sme = out->sme && out->sme_f32f32 && out->sme_vector_bits >= 128;
    return 0;
}

int mk_probe_decode_arm(uint64_t hwcap, uint64_t hwcap2, uint32_t sve_vl_bytes,
                        uint64_t midr, mk_cpu_features *out)
{
    uint64_t words[MK_AT_WORDS];
    if (!out) return -1;
    memset(out, 0, sizeof *out);
    out->arch = MK_ARCH_AARCH64;
    out->hwcap = hwcap;
    out->hwcap2 = hwcap2;
    out->midr = midr;
    mk_arm_words(words, hwcap, hwcap2);
    mk_decode_bits(out, words, ARM_FEATURES, MK_ARM_BASE_FEATURES);
    if (out->sve)
        out->sve_vector_bits = (int)(sve_vl_bytes & 0xffffu) * 8;
    if (midr) {   /* MIDR_EL1: implementer [31:24], variant [23:20], part [15:4], rev [3:0] */
        out->family = (int)((midr >> 24) & 0xff);   /* implementer */
        out->model = (int)((midr >> 4) & 0xfff);    /* part number */
        out->stepping = (int)(midr & 0xf);          /* revision */
        if (arm_implementer((unsigned)out->family))
            snprintf(out->vendor, sizeof out->vendor, "%s",
                     arm_implementer((unsigned)out->family));
        else
            snprintf(out->vendor, sizeof out->vendor, "0x%02x", (unsigned)out->family);
        snprintf(out->model_name, sizeof out->model_name, "part 0x%03x r%up%u",
                 (unsigned)out->model, (unsigned)((midr >> 20) & 0xf),
                 (unsigned)out->stepping);
    }
    out->usable_neon = out->neon;
    /* an SVE VL below 128 bits would be a broken report: do not trust it */
    out->usable_sve = out->sve && out->sve_vector_bits >= 128;
    return 0;
}

/* ---- the running CPU ------------------------------------------------------ */

int mk_probe_request_amx(void)
{
#if defined(MK_X86) && defined(__linux__)
    /* Linux Documentation/arch/x86/xstate.rst: the AMX tile data state (XSTATE
     * component 18, XFEATURE_XTILEDATA) is enabled in XCR0 but trapped until the
     * process asks for it; ARCH_GET_XCOMP_PERM then lists the permitted components. */
    const long ARCH_GET_XCOMP_PERM = 0x1022, ARCH_REQ_XCOMP_PERM = 0x1023;
    const int XFEATURE_XTILEDATA = 18;
    unsigned long bitmask = 0;
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0)
        return 0;
    if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &bitmask) != 0)
        return 0;
    return (bitmask & (1ul << XFEATURE_XTILEDATA)) != 0;
#else
    return 0;
#endif
}

int mk_probe(mk_cpu_features *out)
{
    if (!out) return -1;
#if defined(MK_X86)
    {
        mk_x86_regs r;
        uint64_t xcr0;
        mk_probe_read_x86(&r, &xcr0);
        int rc = mk_probe_decode_x86(&r, xcr0, out);
        if (rc == 0 && out->amx_tile && out->os_amx) {
            out->amx_permitted = mk_probe_request_amx();
            mk_probe_typed_x86(out);
        }
        return rc;
    }
#elif defined(MK_ARM_LINUX)
    {
        uint64_t hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2), midr = 0;
        uint32_t vl = 0, svl = 0;
        if (hwcap & MK_HWCAP_SVE) {          /* prctl fails (EINVAL) without SVE */
            int r = prctl(PR_SVE_GET_VL, 0, 0, 0, 0);
            if (r > 0) vl = (uint32_t)r & 0xffffu;
        }
        if (hwcap2 & MK_HWCAP2_SME) {        /* PR_SME_GET_VL = 64 (linux/prctl.h) */
            int r = prctl(64, 0, 0, 0, 0);
            if (r > 0) svl = (uint32_t)r & 0xffffu;
        }
        if (hwcap & MK_HWCAP_CPUID)          /* kernel emulates MRS of ID registers */
            __asm__ volatile("mrs %0, MIDR_EL1" : "=r"(midr));
        return mk_probe_decode_arm2(hwcap, hwcap2, vl, svl, midr, out);
    }
#else
    memset(out, 0, sizeof *out);
    out->arch = MK_ARCH_OTHER;
    return 0;
#endif
}
