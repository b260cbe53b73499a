/* probe.h: CPU feature probe for microkernel (plain C, no Python dependency).
 *
 * Built with baseline compiler flags only (never -mavx*, never -march=native):
 * the probe must run on every CPU of its architecture.
 *
 * Sources:
 *   x86:     Intel SDM vol. 2A, "CPUID" (leaves 0, 1, 7.0, 7.1, 0x80000000-4) and
 *            "XGETBV"; Intel SDM vol. 1, 13.3 "Enabling the XSAVE feature set"
 *            (XCR0 bits: 1 SSE, 2 AVX/YMM, 5-7 opmask/ZMM_Hi256/Hi16_ZMM,
 *            17-18 AMX TILECFG/TILEDATA).
 *   aarch64: Linux Documentation/arch/arm64/elf_hwcaps.rst (AT_HWCAP bit 1 ASIMD,
 *            bit 11 CPUID, bit 22 SVE; AT_HWCAP2 bit 1 SVE2) and
 *            Documentation/arch/arm64/sve.rst (prctl(PR_SVE_GET_VL)).
 */
#ifndef MK_PROBE_H
#define MK_PROBE_H

#include <stdint.h>

#define MK_ARCH_OTHER   0
#define MK_ARCH_X86_64  1
#define MK_ARCH_AARCH64 2

/* One CPUID result. */
typedef struct {
    uint32_t eax, ebx, ecx, edx;
} mk_cpuid_regs;

/* Raw CPUID values the x86 decoder reads. Leaves the CPU does not have are zero. */
typedef struct {
    mk_cpuid_regs leaf0;        /* EAX = max basic leaf; EBX,EDX,ECX = vendor */
    mk_cpuid_regs leaf1;        /* family/model/stepping, ECX/EDX feature bits */
    mk_cpuid_regs leaf7_0;      /* structured extended features, subleaf 0 */
    mk_cpuid_regs leaf7_1;      /* structured extended features, subleaf 1 */
    mk_cpuid_regs ext0;         /* 0x80000000: EAX = max extended leaf */
    mk_cpuid_regs brand[3];     /* 0x80000002..0x80000004: brand string */
} mk_x86_regs;

/* Decoded features. Raw bits are what CPUID / HWCAP say; the usable_* flags also
 * require OS support (XCR0 state enabled, or the kernel's HWCAP). */
typedef struct {
    int arch;                   /* MK_ARCH_* */
    char vendor[16];            /* x86: "GenuineIntel", "AuthenticAMD", ... */
    char model_name[64];        /* x86: CPUID brand string, trimmed */
    int family, model, stepping;/* x86: display family/model (SDM CPUID leaf 1) */

    /* x86 raw CPUID bits */
    int sse2, osxsave, avx, fma, f16c, hypervisor;
    int avx2, avx512f, avx512dq, avx512bw, avx512vl, avx512_vnni;
    int avx512_bf16, avx512_fp16, amx_tile;
    uint64_t xcr0;              /* 0 when OSXSAVE is clear */
    /* x86 OS state from XCR0 */
    int os_ymm;                 /* (XCR0 & 0x6)  == 0x6  : SSE + AVX state */
    int os_zmm;                 /* (XCR0 & 0xE6) == 0xE6 : + opmask, ZMM state */
    int os_amx;                 /* (XCR0 & 0x60000) == 0x60000 (Linux also needs
                                   arch_prctl(ARCH_REQ_XCOMP_PERM): amx_permitted) */
    int amx_bf16, amx_int8;     /* CPUID.7.0:EDX bits 22 and 25 */
    int amx_permitted;          /* mk_probe asked the kernel for the tile data state
                                   (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA))
                                   and it was granted; 0 from the pure decoder */

    /* aarch64 */
    uint64_t hwcap, hwcap2, midr;   /* midr: MIDR_EL1, 0 when not readable */
    int neon, sve, sve2;
    int sve_vector_bits;        /* current SVE VL in bits; 0 without SVE */
    /* aarch64 extensions (Linux elf_hwcaps.rst): AT_HWCAP ASIMDHP (fp16 arithmetic),
     * ASIMDDP (sdot/udot), ASIMDFHM (fmlal); AT_HWCAP2 I8MM (smmla/ummla/usmmla),
     * BF16 (bfdot/bfmmla), SVEI8MM, SVEBF16, SME and its ZA data-type bits */
    int asimdhp, asimddp, asimdfhm, i8mm, bf16, svei8mm, svebf16;
    int sme, sme_i8i32, sme_f16f32, sme_b16f32, sme_f32f32;
    int sme_vector_bits;        /* streaming VL in bits (prctl(PR_SME_GET_VL)); 0 without SME */

    /* what this CPU and OS can run */
    int usable_avx2;            /* AVX && FMA && AVX2 && OSXSAVE && os_ymm */
    int usable_avx512;          /* usable_avx2 && F && DQ && BW && VL && os_zmm */
    int usable_neon;
    int usable_sve;
    /* typed ISAs (microkernel.tile.ISAS; each also needs its base ISA) */
    int usable_avx512bf16;      /* usable_avx512 && AVX512_BF16 */
    int usable_avx512fp16;      /* usable_avx512 && AVX512_FP16 */
    int usable_avx512vnni;      /* usable_avx512 && AVX512_VNNI */
    int usable_amx;             /* usable_avx512 && AMX-TILE, -BF16, -INT8 && os_amx &&
                                   amx_permitted */
    int usable_neondot, usable_neoni8mm, usable_neonbf16, usable_neonfp16;
    int usable_svei8mm, usable_svebf16, usable_sme;
} mk_cpu_features;

/* Pure decoder (no CPUID, no syscalls): fills *out from raw register values so
 * tests can inject any CPU. xcr0 is ignored (treated as 0) when
 * CPUID.1:ECX.OSXSAVE is clear. Returns 0, or -1 when a pointer is NULL. */
int mk_probe_decode_x86(const mk_x86_regs *regs, uint64_t xcr0, mk_cpu_features *out);

/* mk_probe_decode_x86 with the kernel's answer to the AMX permission request given
 * (amx_permitted: what mk_probe_request_amx returned), for tests of the AMX decision. */
int mk_probe_decode_x86_amx(const mk_x86_regs *regs, uint64_t xcr0, int amx_permitted,
                            mk_cpu_features *out);

/* Pure decoder for aarch64 Linux: hwcap/hwcap2 from getauxval, sve_vl_bytes from
 * prctl(PR_SVE_GET_VL) & 0xffff (ignored without HWCAP_SVE), midr = MIDR_EL1 or 0.
 * Returns 0, or -1 when out is NULL. */
int mk_probe_decode_arm(uint64_t hwcap, uint64_t hwcap2, uint32_t sve_vl_bytes,
                        uint64_t midr, mk_cpu_features *out);

/* mk_probe_decode_arm plus the extensions of microkernel's typed aarch64 ISAs:
 * sme_vl_bytes from prctl(PR_SME_GET_VL) & 0xffff (ignored without HWCAP2_SME). */
int mk_probe_decode_arm2(uint64_t hwcap, uint64_t hwcap2, uint32_t sve_vl_bytes,
                         uint32_t sme_vl_bytes, uint64_t midr, mk_cpu_features *out);

/* x86 only: execute CPUID and XGETBV(0) (XGETBV only when OSXSAVE is set; *xcr0 = 0
 * otherwise). Returns 0, or -1 on other architectures (outputs zeroed). */
int mk_probe_read_x86(mk_x86_regs *regs, uint64_t *xcr0);

/* Linux x86-64: ask the kernel for the AMX tile data state (once per process; it stays
 * granted). Returns 1 when granted, 0 otherwise (no AMX, an old kernel, another OS). */
int mk_probe_request_amx(void);

/* Probe the running CPU (on x86-64 with AMX it calls mk_probe_request_amx). Returns 0
 * on success, -1 when out is NULL. On
 * architectures other than x86-64 and aarch64 Linux it reports scalar only. */
int mk_probe(mk_cpu_features *out);

#endif /* MK_PROBE_H */
