/*
 * Tests only: the AVX-512 (F, BF16, FP16, VNNI) and AMX intrinsics that the generated
 * typed x86 micro-kernels use, in portable C, so that those kernels run here (a CPU
 * with neither AVX-512 nor AMX) through the real driver and the edge catalogue
 * (tests/test_x86_emulated.py puts this directory first on the include path: the
 * kernels' `#include <immintrin.h>` finds this file, and the module is built without
 * any ISA flag).
 *
 * Written from the instructions' Operation sections, not from the generator: Intel SDM
 * vol. 2 (VDPBF16PS: per fp32 lane, srcdest += src1.bf16[2i+1]*src2.bf16[2i+1], then
 * += src1.bf16[2i]*src2.bf16[2i], round to nearest even, denormal inputs as zero,
 * denormal results flushed; VFMADD231PH: fp16 a*b+c with one rounding; VPDPBUSD: per
 * int32 lane, the sum of 4 products of zero-extended bytes of src1 and sign-extended
 * bytes of src2, added with wrap-around; VCVTPH2PS), the SDM's AMX chapter and
 * instruction pages (LDTILECFG's 64-byte layout, TILELOADD/TILESTORED row by row at
 * base + row * stride, TDPBF16PS's two fp32 partial sums per output then added to C,
 * TDPBSSD/TDPBSUD/TDPBUSD/TDPBUUD with the first source's bytes of the first
 * signedness) and the Intrinsics Guide's argument orders (_tile_dpbusd(dst, a, b): a
 * unsigned, b signed; _mm512_dpbusd_epi32(src, a, b): a unsigned).
 *
 * A tile instruction on an unconfigured tile state (#UD on hardware), a shape that
 * does not match the configuration, or an invalid configuration counts a fault
 * (mk_emu_faults()) and is skipped: the test asserts there are none.
 */
#ifndef MK_X86EMUL_IMMINTRIN_H
#define MK_X86EMUL_IMMINTRIN_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef float __m512 __attribute__((vector_size(64), may_alias));
typedef long long __m512i __attribute__((vector_size(64), may_alias));
typedef long long __m256i __attribute__((vector_size(32), may_alias));
typedef short __m512bh __attribute__((vector_size(64), may_alias));
typedef unsigned short __m512h __attribute__((vector_size(64), may_alias));

static int mk_emu_fault_count;
static int mk_emu_faults(void) { return __atomic_load_n(&mk_emu_fault_count, __ATOMIC_RELAXED); }
static void mk_emu_fault(const char *what)
{
    if (__atomic_fetch_add(&mk_emu_fault_count, 1, __ATOMIC_RELAXED) < 8)
        fprintf(stderr, "x86emul fault: %s\n", what);
}

/* ---- fp32 ------------------------------------------------------------------------------ */
static inline __m512 _mm512_setzero_ps(void) { return (__m512){0}; }
static inline __m512 _mm512_set1_ps(float x) { __m512 v; for (int i = 0; i < 16; ++i) v[i] = x; return v; }
static inline __m512 _mm512_loadu_ps(const void *p) { __m512 v; memcpy(&v, p, 64); return v; }
static inline void _mm512_storeu_ps(void *p, __m512 v) { memcpy(p, &v, 64); }
static inline __m512 _mm512_mul_ps(__m512 a, __m512 b) { return a * b; }
static inline __m512 _mm512_add_ps(__m512 a, __m512 b) { return a + b; }
static inline __m512 _mm512_fmadd_ps(__m512 a, __m512 b, __m512 c)
{
    __m512 r;
    for (int i = 0; i < 16; ++i) r[i] = fmaf(a[i], b[i], c[i]);
    return r;
}

/* ---- integers -------------------------------------------------------------------------- */
static inline __m512i _mm512_setzero_si512(void) { return (__m512i){0}; }
static inline __m512i _mm512_loadu_si512(const void *p) { __m512i v; memcpy(&v, p, 64); return v; }
static inline void _mm512_storeu_si512(void *p, __m512i v) { memcpy(p, &v, 64); }
static inline __m512i _mm512_set1_epi32(int x)
{
    uint32_t l[16];
    for (int i = 0; i < 16; ++i) l[i] = (uint32_t)x;
    __m512i v; memcpy(&v, l, 64); return v;
}
static inline __m512i mk_emu_i32(__m512i a, __m512i b, int op)
{
    uint32_t x[16], y[16];
    memcpy(x, &a, 64); memcpy(y, &b, 64);
    for (int i = 0; i < 16; ++i) x[i] = op == 1 ? x[i] * y[i] : op == 2 ? x[i] - y[i] : x[i] + y[i];
    __m512i r; memcpy(&r, x, 64); return r;
}
static inline __m512i _mm512_add_epi32(__m512i a, __m512i b) { return mk_emu_i32(a, b, 0); }
static inline __m512i _mm512_sub_epi32(__m512i a, __m512i b) { return mk_emu_i32(a, b, 2); }
static inline __m512i _mm512_xor_si512(__m512i a, __m512i b) { return a ^ b; }
static inline void _mm512_store_si512(void *p, __m512i v) { memcpy(p, &v, 64); }
static inline __m512i _mm512_castps_si512(__m512 v) { __m512i r; memcpy(&r, &v, 64); return r; }
static inline __m512i _mm512_set1_epi16(short x)
{
    short l[32];
    for (int i = 0; i < 32; ++i) l[i] = x;
    __m512i v; memcpy(&v, l, 64); return v;
}
static inline __m512i _mm512_mullo_epi32(__m512i a, __m512i b) { return mk_emu_i32(a, b, 1); }

/* VPDPBUSD: unsigned bytes of a times signed bytes of b, 4 per lane, wrap-around add */
static inline __m512i _mm512_dpbusd_epi32(__m512i src, __m512i a, __m512i b)
{
    uint8_t x[64]; int8_t y[64]; uint32_t s[16];
    memcpy(x, &a, 64); memcpy(y, &b, 64); memcpy(s, &src, 64);
    for (int i = 0; i < 16; ++i) {
        int32_t t = 0;
        for (int q = 0; q < 4; ++q) t += (int32_t)x[4 * i + q] * (int32_t)y[4 * i + q];
        s[i] += (uint32_t)t;
    }
    __m512i r; memcpy(&r, s, 64); return r;
}

/* ---- bf16 ------------------------------------------------------------------------------ */
static inline float mk_emu_bf16(uint16_t h)      /* DAZ: a denormal input is zero */
{
    uint32_t u = (uint32_t)h << 16;
    if ((u & 0x7f800000u) == 0) u &= 0x80000000u;
    float f; memcpy(&f, &u, 4); return f;
}
static inline float mk_emu_ftz(float f) { return fabsf(f) < 1.17549435e-38f ? copysignf(0.0f, f) : f; }
static inline __m512 _mm512_dpbf16_ps(__m512 src, __m512bh a, __m512bh b)
{
    uint16_t x[32], y[32];
    memcpy(x, &a, 64); memcpy(y, &b, 64);
    for (int i = 0; i < 16; ++i) {
        volatile float t = src[i];
        t = mk_emu_ftz(t + mk_emu_bf16(x[2 * i + 1]) * mk_emu_bf16(y[2 * i + 1]));
        t = mk_emu_ftz(t + mk_emu_bf16(x[2 * i]) * mk_emu_bf16(y[2 * i]));
        src[i] = t;
    }
    return src;
}

/* ---- fp16 ------------------------------------------------------------------------------ */
static inline float mk_emu_h2f(uint16_t h) { _Float16 x; memcpy(&x, &h, 2); return (float)x; }
static inline uint16_t mk_emu_f2h(double f) { _Float16 x = (_Float16)f; uint16_t h; memcpy(&h, &x, 2); return h; }
static inline __m512h _mm512_setzero_ph(void) { return (__m512h){0}; }
static inline __m512h _mm512_castsi512_ph(__m512i v) { __m512h r; memcpy(&r, &v, 64); return r; }
static inline __m512i _mm512_castph_si512(__m512h v) { __m512i r; memcpy(&r, &v, 64); return r; }
/* a*b + c in fp16 with one rounding (the product of two fp16 values and the sum are
 * exact in double here, but for sums far apart in magnitude: then the double rounding
 * differs from hardware by far less than the error bound's fp16 ulp) */
static inline __m512h _mm512_fmadd_ph(__m512h a, __m512h b, __m512h c)
{
    __m512h r;
    for (int i = 0; i < 32; ++i)
        r[i] = mk_emu_f2h((double)mk_emu_h2f(a[i]) * (double)mk_emu_h2f(b[i]) + (double)mk_emu_h2f(c[i]));
    return r;
}
static inline __m256i _mm512_extracti64x4_epi64(__m512i v, int half)
{
    __m256i r; memcpy(&r, (const char *)&v + 32 * (half & 1), 32); return r;
}
static inline __m512 _mm512_cvtph_ps(__m256i v)
{
    uint16_t h[16]; memcpy(h, &v, 32);
    __m512 r;
    for (int i = 0; i < 16; ++i) r[i] = mk_emu_h2f(h[i]);
    return r;
}

/* ---- AMX: the tile state of each thread (as XSAVE state component 17-18 is) ----------- */
static __thread struct {
    int configured;
    uint8_t rows[8];
    uint16_t colsb[8];
    uint8_t data[8][16 * 64];
} mk_emu_amx;

static inline void _tile_loadconfig(const void *p)
{
    const uint8_t *c = (const uint8_t *)p;
    memset(&mk_emu_amx, 0, sizeof mk_emu_amx);
    if (c[0] == 0) return;                           /* palette 0: the init state */
    if (c[0] != 1) { mk_emu_fault("LDTILECFG: palette other than 0 or 1 (#GP)"); return; }
    for (int i = 2; i < 16; ++i) if (c[i]) { mk_emu_fault("LDTILECFG: reserved byte set"); return; }
    for (int i = 32; i < 48; ++i) if (c[i]) { mk_emu_fault("LDTILECFG: reserved byte set"); return; }
    for (int i = 56; i < 64; ++i) if (c[i]) { mk_emu_fault("LDTILECFG: reserved byte set"); return; }
    for (int t = 0; t < 8; ++t) {
        uint16_t cb; memcpy(&cb, c + 16 + 2 * t, 2);
        const uint8_t r = c[48 + t];
        if (cb > 64 || r > 16 || (cb == 0) != (r == 0) || cb % 4) {
            mk_emu_fault("LDTILECFG: a tile beyond 16 rows x 64 bytes (#GP)"); return;
        }
        mk_emu_amx.colsb[t] = cb;
        mk_emu_amx.rows[t] = r;
    }
    mk_emu_amx.configured = 1;
}
static inline void _tile_release(void) { memset(&mk_emu_amx, 0, sizeof mk_emu_amx); }
static inline int mk_emu_tile_ok(int t, const char *what)
{
    if (!mk_emu_amx.configured) { mk_emu_fault(what); return 0; }
    if (t < 0 || t > 7 || mk_emu_amx.rows[t] == 0) { mk_emu_fault("tile not configured"); return 0; }
    return 1;
}
static inline void _tile_zero(int t)
{
    if (mk_emu_tile_ok(t, "TILEZERO without a tile configuration (#UD)"))
        memset(mk_emu_amx.data[t], 0, sizeof mk_emu_amx.data[t]);
}
static inline void _tile_loadd(int t, const void *base, long stride)
{
    if (!mk_emu_tile_ok(t, "TILELOADD without a tile configuration (#UD)")) return;
    memset(mk_emu_amx.data[t], 0, sizeof mk_emu_amx.data[t]);
    for (int r = 0; r < mk_emu_amx.rows[t]; ++r)
        memcpy(mk_emu_amx.data[t] + 64 * r, (const char *)base + (long)r * stride, mk_emu_amx.colsb[t]);
}
static inline void _tile_stored(int t, void *base, long stride)
{
    if (!mk_emu_tile_ok(t, "TILESTORED without a tile configuration (#UD)")) return;
    for (int r = 0; r < mk_emu_amx.rows[t]; ++r)
        memcpy((char *)base + (long)r * stride, mk_emu_amx.data[t] + 64 * r, mk_emu_amx.colsb[t]);
}
/* shapes (SDM, TDP*: #UD unless dst.rows == a.rows, a.colsb / 4 == b.rows, dst.colsb
 * == b.colsb) */
static inline int mk_emu_dp_ok(int d, int a, int b)
{
    if (!mk_emu_tile_ok(d, "TDP* without a tile configuration (#UD)") || !mk_emu_tile_ok(a, "TDP*")
        || !mk_emu_tile_ok(b, "TDP*")) return 0;
    if (mk_emu_amx.rows[d] != mk_emu_amx.rows[a] || mk_emu_amx.colsb[a] / 4 != mk_emu_amx.rows[b]
        || mk_emu_amx.colsb[d] != mk_emu_amx.colsb[b]) {
        mk_emu_fault("TDP*: tile shapes do not match (#UD)"); return 0;
    }
    return 1;
}
static inline void _tile_dpbf16ps(int d, int a, int b)
{
    if (!mk_emu_dp_ok(d, a, b)) return;
    const int kk = mk_emu_amx.colsb[a] / 4, nn = mk_emu_amx.colsb[d] / 4;
    for (int m = 0; m < mk_emu_amx.rows[d]; ++m) {
        float tmp[32] = {0};
        for (int k = 0; k < kk; ++k)
            for (int n = 0; n < nn; ++n)
                for (int q = 0; q < 2; ++q) {
                    uint16_t x, y;
                    memcpy(&x, mk_emu_amx.data[a] + 64 * m + 4 * k + 2 * q, 2);
                    memcpy(&y, mk_emu_amx.data[b] + 64 * k + 4 * n + 2 * q, 2);
                    volatile float t = tmp[2 * n + q] + mk_emu_bf16(x) * mk_emu_bf16(y);
                    tmp[2 * n + q] = mk_emu_ftz(t);
                }
        for (int n = 0; n < nn; ++n) {
            float c;
            memcpy(&c, mk_emu_amx.data[d] + 64 * m + 4 * n, 4);
            volatile float s = tmp[2 * n] + tmp[2 * n + 1];
            c = mk_emu_ftz(c + mk_emu_ftz(s));
            memcpy(mk_emu_amx.data[d] + 64 * m + 4 * n, &c, 4);
        }
    }
}
static inline void mk_emu_dpb(int d, int a, int b, int a_signed, int b_signed)
{
    if (!mk_emu_dp_ok(d, a, b)) return;
    const int kk = mk_emu_amx.colsb[a] / 4, nn = mk_emu_amx.colsb[d] / 4;
    for (int m = 0; m < mk_emu_amx.rows[d]; ++m)
        for (int n = 0; n < nn; ++n) {
            uint32_t c;
            memcpy(&c, mk_emu_amx.data[d] + 64 * m + 4 * n, 4);
            for (int k = 0; k < kk; ++k)
                for (int q = 0; q < 4; ++q) {
                    const uint8_t x = mk_emu_amx.data[a][64 * m + 4 * k + q];
                    const uint8_t y = mk_emu_amx.data[b][64 * k + 4 * n + q];
                    const int32_t xv = a_signed ? (int32_t)(int8_t)x : (int32_t)x;
                    const int32_t yv = b_signed ? (int32_t)(int8_t)y : (int32_t)y;
                    c += (uint32_t)(xv * yv);
                }
            memcpy(mk_emu_amx.data[d] + 64 * m + 4 * n, &c, 4);
        }
}
#define _tile_dpbssd(d, a, b) mk_emu_dpb(d, a, b, 1, 1)
#define _tile_dpbsud(d, a, b) mk_emu_dpb(d, a, b, 1, 0)
#define _tile_dpbusd(d, a, b) mk_emu_dpb(d, a, b, 0, 1)
#define _tile_dpbuud(d, a, b) mk_emu_dpb(d, a, b, 0, 0)

#endif
