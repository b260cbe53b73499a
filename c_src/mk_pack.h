/* Packing: A and B into MR- and NR-wide micro-panels, fp32 and typed (driver.c).
 * Part of the one GEMM driver, included by driver.c only, in its order (not a header
 * of its own).
 * Uses: the type macros MK_SA/SB, MK_TA/TB, MK_GA/GB, MK_CVT_A/B, MK_B_COLSUM and
 * mk_min (driver.c). Gives mk_pack_a, mk_pack_b (and mk_load8 and the 8 x 8 transposes
 * the GEMV reuses), MK_PACK_SLACK. */

/*
 * Both operands are packed by the same code. A micro-panel is `w` lines of kc floats
 * (w = MR rows of A, or NR columns of B) stored k-major: dst[k*w + l] = X(line l, k),
 * with lines past wcur zero-padded. For A, a line is a row (s_l = rs_a between lines,
 * s_k = cs_a along K); for B, a line is a column (s_l = cs_b, s_k = rs_b).
 *
 * Two hot cases: s_l == 1 (row-major B, column-major A) is a copy of w floats per k;
 * s_k == 1 (row-major A, column-major B) is a transpose, done 8 x 8 at a time in
 * registers with GCC vector extensions (portable C: the ISA's shuffles where the
 * module's flags have them), or 4 x 8 for a full panel of w = 4 lines (MR = 4, or
 * NR = 4), which writes exactly its panel. The 8 x 8 transpose stores 8 floats per k
 * at dst + k*w + l0, so a group narrower than 8 writes past its end into positions
 * that are written again later in the same pass; MK_PACK_SLACK floats after the last
 * panel absorb the final overrun. The typed packing (below) moves 4-byte K groups
 * (bf16 pairs, int8 quads) through the same 8 x 8 transposes, which move bits.
 */
enum { MK_PACK_SLACK = 8 };

typedef float mk_v8 __attribute__((vector_size(32)));
typedef int32_t mk_v8i __attribute__((vector_size(32)));

static inline mk_v8 mk_load8(const float *p)
{
    mk_v8 v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}

static inline void mk_store8(float *p, mk_v8 v) { __builtin_memcpy(p, &v, sizeof v); }

/* __builtin_shuffle index vectors (lanes 0-7 of the first operand, 8-15 of the
 * second) shared by the transposes and the GEMV reduction: mk_lo/mk_hi interleave
 * single lanes, mk_l2/mk_h2 pairs of lanes, mk_l4/mk_h4 128-bit halves
 * (unpcklps/unpckhps, shufps, vperm2f128 on AVX). */
static const mk_v8i mk_lo = {0, 8, 1, 9, 4, 12, 5, 13}, mk_hi = {2, 10, 3, 11, 6, 14, 7, 15};
static const mk_v8i mk_l2 = {0, 1, 8, 9, 4, 5, 12, 13}, mk_h2 = {2, 3, 10, 11, 6, 7, 14, 15};
static const mk_v8i mk_l4 = {0, 1, 2, 3, 8, 9, 10, 11}, mk_h4 = {4, 5, 6, 7, 12, 13, 14, 15};

/* 8 lines x 8 k: line l is p[l][0..8); stores d[k*w + l] for k, l < 8 in increasing k
 * (the 8 stores of 8 floats may overlap when w < 8: each overwrites the previous
 * one's tail). The in-register transpose is the AVX unpack/shuffle/permute2f128
 * sequence (Intel 64 and IA-32 Architectures Optimization Reference Manual, 8x8
 * matrix transpose), written with GCC vector extensions. */
static inline void mk_transpose8(const float *const p[8], float *d, int64_t w)
{
    const mk_v8 r0 = mk_load8(p[0]), r1 = mk_load8(p[1]), r2 = mk_load8(p[2]),
                r3 = mk_load8(p[3]), r4 = mk_load8(p[4]), r5 = mk_load8(p[5]),
                r6 = mk_load8(p[6]), r7 = mk_load8(p[7]);
    const mk_v8 t0 = __builtin_shuffle(r0, r1, mk_lo), t1 = __builtin_shuffle(r0, r1, mk_hi),
                t2 = __builtin_shuffle(r2, r3, mk_lo), t3 = __builtin_shuffle(r2, r3, mk_hi),
                t4 = __builtin_shuffle(r4, r5, mk_lo), t5 = __builtin_shuffle(r4, r5, mk_hi),
                t6 = __builtin_shuffle(r6, r7, mk_lo), t7 = __builtin_shuffle(r6, r7, mk_hi);
    const mk_v8 u0 = __builtin_shuffle(t0, t2, mk_l2), u1 = __builtin_shuffle(t0, t2, mk_h2),
                u2 = __builtin_shuffle(t1, t3, mk_l2), u3 = __builtin_shuffle(t1, t3, mk_h2),
                u4 = __builtin_shuffle(t4, t6, mk_l2), u5 = __builtin_shuffle(t4, t6, mk_h2),
                u6 = __builtin_shuffle(t5, t7, mk_l2), u7 = __builtin_shuffle(t5, t7, mk_h2);
    mk_store8(d + 0 * w, __builtin_shuffle(u0, u4, mk_l4));
    mk_store8(d + 1 * w, __builtin_shuffle(u1, u5, mk_l4));
    mk_store8(d + 2 * w, __builtin_shuffle(u2, u6, mk_l4));
    mk_store8(d + 3 * w, __builtin_shuffle(u3, u7, mk_l4));
    mk_store8(d + 4 * w, __builtin_shuffle(u0, u4, mk_h4));
    mk_store8(d + 5 * w, __builtin_shuffle(u1, u5, mk_h4));
    mk_store8(d + 6 * w, __builtin_shuffle(u2, u6, mk_h4));
    mk_store8(d + 7 * w, __builtin_shuffle(u3, u7, mk_h4));
}

#if !MK_TYPED

static const float mk_zero8[8] __attribute__((aligned(32)));

/* w floats from s to d (w % 8 == 0: whole vectors). */
static inline void mk_copy_line(float *restrict d, const float *restrict s, int64_t w)
{
    if (w % 8 == 0)
        for (int64_t l = 0; l < w; l += 8)
            mk_store8(d + l, mk_load8(s + l));
    else
        for (int64_t l = 0; l < w; ++l)
            d[l] = s[l];
}

/* 4 lines x 8 k: line l is p[l][0..8); stores the 32 floats d[k*4 + l], k < 8, l < 4:
 * a full 4-line micro-panel (w = 4: MR or NR) with no padding lines and no
 * overlapping stores (half the shuffles of mk_transpose8 on 4 real and 4 zero lines). */
static inline void mk_transpose4x8(const float *const p[4], float *d)
{
    const mk_v8 r0 = mk_load8(p[0]), r1 = mk_load8(p[1]), r2 = mk_load8(p[2]),
                r3 = mk_load8(p[3]);
    const mk_v8 t0 = __builtin_shuffle(r0, r1, mk_lo), t1 = __builtin_shuffle(r0, r1, mk_hi),
                t2 = __builtin_shuffle(r2, r3, mk_lo), t3 = __builtin_shuffle(r2, r3, mk_hi);
    /* u0 holds k = 0 and 4 (4 lines each), u1 k = 1 and 5, u2 k = 2 and 6, u3 k = 3 and 7 */
    const mk_v8 u0 = __builtin_shuffle(t0, t2, mk_l2), u1 = __builtin_shuffle(t0, t2, mk_h2),
                u2 = __builtin_shuffle(t1, t3, mk_l2), u3 = __builtin_shuffle(t1, t3, mk_h2);
    mk_store8(d + 0, __builtin_shuffle(u0, u1, mk_l4));
    mk_store8(d + 8, __builtin_shuffle(u2, u3, mk_l4));
    mk_store8(d + 16, __builtin_shuffle(u0, u1, mk_h4));
    mk_store8(d + 24, __builtin_shuffle(u2, u3, mk_h4));
}

/* One micro-panel that mk_pack_block does not copy (its full panels with s_l == 1 are
 * swept there): wcur <= w lines of kc floats (see above), zero-padded to w lines.
 * Writes up to MK_PACK_SLACK floats past dst + kc*w (s_k == 1 case only). */
static void mk_pack_panel(int64_t wcur, int64_t kc, const float *x, int64_t s_l,
                          int64_t s_k, int64_t w, float *restrict dst)
{
    const int64_t kv = s_k == 1 ? kc - kc % 8 : 0;
    /* lines contiguous along K, a full panel of w = 4 lines: 4 x 8 transposes */
    const int quad = w == 4 && wcur == 4;
    if (quad && kv > 0) {
        const float *p[4] = {x, x + s_l, x + 2 * s_l, x + 3 * s_l};
        for (int64_t k = 0; k < kv; k += 8) {
            mk_transpose4x8(p, dst + k * 4);
            for (int l = 0; l < 4; ++l)
                p[l] += 8;
        }
    }
    /* lines contiguous along K, other panels: 8 x 8 transposes. Groups of 8 lines go
     * last to first, so that a narrow last group's overrun into the next k is
     * rewritten by group 0. */
    for (int64_t l0 = (w - 1) / 8 * 8; kv > 0 && !quad && l0 >= 0; l0 -= 8) {
        const float *p[8];
        int64_t step[8];
        for (int l = 0; l < 8; ++l) {
            const int real = l0 + l < wcur;
            p[l] = real ? x + (l0 + l) * s_l : mk_zero8;
            step[l] = real ? 8 : 0;
        }
        for (int64_t k = 0; k < kv; k += 8) {
            mk_transpose8(p, dst + k * w + l0, w);
            for (int l = 0; l < 8; ++l)
                p[l] += step[l];
        }
    }
    for (int64_t k = kv; k < kc; ++k)           /* the rest, any strides */
        for (int64_t l = 0; l < w; ++l)
            dst[k * w + l] = l < wcur ? x[l * s_l + k * s_k] : 0.0f;
}

/* A block of `width` lines as consecutive micro-panels of w lines (the last one
 * zero-padded). When the lines are unit-stride (s_l == 1), the block is swept 8 k at
 * a time across all panels, so that the source is read along its rows as hardware
 * prefetchers expect, rather than down a column with a whole row between reads. */
static void mk_pack_block(int64_t width, int64_t kc, const float *x, int64_t s_l,
                          int64_t s_k, int64_t w, float *restrict dst)
{
    const int64_t full = s_l == 1 ? width / w : 0;
    for (int64_t k0 = 0; k0 < kc; k0 += 8) {
        const int64_t k1 = mk_min(kc, k0 + 8);
        for (int64_t p = 0; p < full; ++p)
            for (int64_t k = k0; k < k1; ++k)
                mk_copy_line(dst + p * w * kc + k * w, x + k * s_k + p * w, w);
    }
    for (int64_t l = full * w; l < width; l += w)
        mk_pack_panel(mk_min(w, width - l), kc, x + l * s_l, s_l, s_k, w, dst + l * kc);
}
#endif

#if !MK_TYPED
/* fp32 panels are kc deep: kcp (MK_KCP(kc)) is kc, no K group and no trailer. */
#if MK_G != 1 || MK_B_TRAILER != 0
#error "an fp32 module (MK_TYPED 0) packs no K groups and no trailer: define MK_TYPED 1"
#endif
static inline void mk_pack_f32(int64_t width, int64_t kc, int64_t kcp, const float *x,
                               int64_t s_l, int64_t s_k, int64_t w, float *restrict dst)
{
    (void)kcp;
    mk_pack_block(width, kc, x, s_l, s_k, w, dst);
}
#define mk_pack_a mk_pack_f32
#define mk_pack_b mk_pack_f32
#else
/* Typed panels: a block of `width` lines (w per micro-panel, the last zero-padded) of
 * kc k-steps, converted element by element (MK_CVT_*), in K groups of g:
 * dst[(k/g)*w*g + l*g + k%g] = X(line l, k), with zeros past kc up to kcp (a multiple
 * of g) and past the last line. The loops read the source along its contiguous axis
 * (K when s_k == 1, the lines when s_l == 1). No overrun: MK_PACK_SLACK is unused. */
#define MK_DEFINE_PACK(name, SRC, DST, G, CVT, FAST, TRAILER)                            \
static void name(int64_t width, int64_t kc, int64_t kcp, const SRC *x, int64_t s_l,     \
                 int64_t s_k, int64_t w, DST *restrict dst)                             \
{                                                                                        \
    for (int64_t l0 = 0; l0 < width; l0 += w) {                                          \
        const int64_t wcur = mk_min(w, width - l0);                                      \
        DST *restrict d = dst + l0 * kcp;                                                \
        const SRC *xs = x + l0 * s_l;                                                    \
        /* whole groups of K by the fast paths (0 when none applies), the rest here */  \
        const int64_t k0 = FAST(wcur, kc, xs, s_l, s_k, w, d);                           \
        if (s_k == 1) {                                                                  \
            for (int64_t l = 0; l < wcur; ++l)                                           \
                for (int64_t k = k0; k < kc; ++k)                                        \
                    d[(k / (G)) * w * (G) + l * (G) + k % (G)] = CVT(xs[l * s_l + k]);   \
        } else {                                                                         \
            for (int64_t k = k0; k < kc; ++k)                                            \
                for (int64_t l = 0; l < wcur; ++l)                                       \
                    d[(k / (G)) * w * (G) + l * (G) + k % (G)] = CVT(xs[l * s_l + k * s_k]); \
        }                                                                                \
        for (int64_t k = wcur < w ? 0 : kc; k < kcp; ++k)   /* the zero padding */       \
            for (int64_t l = (k < kc ? wcur : 0); l < w; ++l)                            \
                d[(k / (G)) * w * (G) + l * (G) + k % (G)] = (DST)0;                     \
        TRAILER(d, w, kcp);                                                              \
    }                                                                                    \
}

/* Fast paths of typed packing on whole groups of K; each returns the k where the
 * generic loops take over (a multiple of the group), 0 when it does not apply.
 *   K contiguous (s_k == 1), a group of 4 bytes (a bf16 pair or an int8 quad of a
 *     row-major A for AVX512-BF16 or VNNI; an int16 pair or a widened fp32 element,
 *     converted by CVT, for the vpmaddwd and widening tiles) and full panels of a
 *     multiple of 8 lines: the fp32 path's 8 x 8 transposes on those 4-byte groups,
 *     8 groups of 8 lines at a time (converted first into a small buffer where the
 *     panel's type is not the source's). The VNNI tile's whole GEMM ran 13-20% faster
 *     on the Zen 4 and 8-39% on Sapphire Rapids than through the generic loops'
 *     element by element index arithmetic (docs/design-notes.md, typed A).
 * The others only re-lay elements (no conversion: MK_COPY_A / MK_COPY_B, set below when
 * the panel's type is the source's and the conversion is the identity):
 *   K contiguous, any other group of g > 1 elements: line l's group is one copy of g
 *     elements (AMX's A, rows of 64 bytes of K, 32 bf16 or 64 int8: a 64-byte vector
 *     move with the module's flags);
 *   lines contiguous (s_l == 1), a group of g <= 4 (pairs along K for bf16, vpmaddwd and
 *     AMX's B; quads for VNNI and AMX int8): the interleave of g source rows of wcur
 *     elements (row k of B is columns l0.. of B's k-th row), d[(k/g)*w*g + l*g + k%g],
 *     which GCC vectorises into unpacks/permutes. */
#define MK_DEFINE_FAST(name, SRC, DST, G, COPY, CVT)                                     \
static inline int64_t name(int64_t wcur, int64_t kc, const SRC *xs, int64_t s_l,        \
                           int64_t s_k, int64_t w, DST *restrict d)                     \
{                                                                                        \
    const int64_t kv = kc - kc % (G);                                                    \
    if (s_k == 1 && (G) * sizeof(DST) == 4 && w % 8 == 0 && wcur == w && kv >= 8 * (G)) { \
        const int64_t kq = kv - kv % (8 * (G));                                          \
        for (int64_t l0 = 0; l0 < w; l0 += 8)                                            \
            for (int64_t k = 0; k < kq; k += 8 * (G)) {                                  \
                DST t[8][8 * (G)];                                                       \
                const float *p[8];                                                       \
                for (int l = 0; l < 8; ++l) {                                            \
                    const SRC *r = xs + (l0 + l) * s_l + k;                              \
                    if (COPY) {                                                          \
                        p[l] = (const float *)(const void *)r;                           \
                        continue;                                                        \
                    }                                                                    \
                    for (int j = 0; j < 8 * (G); ++j)                                    \
                        t[l][j] = CVT(r[j]);                                             \
                    p[l] = (const float *)(const void *)t[l];                            \
                }                                                                        \
                mk_transpose8(p, (float *)(void *)d + k / (G) * w + l0, w);              \
            }                                                                            \
        return kq;                                                                       \
    }                                                                                    \
    if (!(COPY) || kv == 0)                                                              \
        return 0;                                                                        \
    if (s_k == 1 && (G) > 1) {                                                           \
        for (int64_t l = 0; l < wcur; ++l)                                               \
            for (int64_t k = 0; k < kv; k += (G))                                        \
                memcpy(d + k * w + l * (G), xs + l * s_l + k, (G) * sizeof(DST));        \
        return kv;                                                                       \
    }                                                                                    \
    if (s_l == 1 && (G) <= 4 && (G) > 1) {                                               \
        for (int64_t k = 0; k < kv; k += (G)) {                                          \
            DST *restrict dk = d + k * w;                                                \
            const SRC *r0 = xs + k * s_k;                                                \
            for (int64_t l = 0; l < wcur; ++l)                                           \
                for (int g = 0; g < (G); ++g)                                            \
                    dk[l * (G) + g] = (DST)r0[g * s_k + l];                              \
        }                                                                                \
        return kv;                                                                       \
    }                                                                                    \
    return 0;                                                                            \
}
#ifndef MK_COPY_A
#define MK_COPY_A 0
#endif
#ifndef MK_COPY_B
#define MK_COPY_B 0
#endif
MK_DEFINE_FAST(mk_pack_a_fast, MK_SA, MK_TA, MK_GA, MK_COPY_A, MK_CVT_A)
MK_DEFINE_FAST(mk_pack_b_fast, MK_SB, MK_TB, MK_GB, MK_COPY_B, MK_CVT_B)
#define MK_NO_TRAILER(d, w, kcp) ((void)0)
#ifdef MK_B_COLSUM
_Static_assert(MK_GB == MK_G && MK_G * sizeof(MK_TB) == 4,
               "MK_B_COLSUM: a B panel's K group must be 4 bytes, one uint32 per column");
/* B's trailer (above): per column, the sum of its kcp - MK_B_TRAILER packed values (the
 * zero padding adds nothing), as MK_B_COLSUM of it, in the last K group */
static void mk_b_colsums(MK_TB *restrict d, int64_t w, int64_t kcp)
{
    const int64_t kd = kcp - MK_B_TRAILER;
    uint32_t s[w];
    for (int64_t l = 0; l < w; ++l)
        s[l] = 0;
    for (int64_t k = 0; k < kd; k += MK_G)     /* a K group of w lines: d + k * w */
        for (int64_t l = 0; l < w; ++l)
            for (int g = 0; g < MK_G; ++g)
                s[l] += (uint32_t)(int32_t)d[k * w + l * MK_G + g];
    for (int64_t l = 0; l < w; ++l) {
        const uint32_t v = MK_B_COLSUM(s[l]);
        memcpy(d + kd * w + l * MK_G, &v, 4);
    }
}
#define MK_B_PANEL_TRAILER(d, w, kcp) mk_b_colsums((d), (w), (kcp))
#else
#define MK_B_PANEL_TRAILER MK_NO_TRAILER
#endif
MK_DEFINE_PACK(mk_pack_a, MK_SA, MK_TA, MK_GA, MK_CVT_A, mk_pack_a_fast, MK_NO_TRAILER)
MK_DEFINE_PACK(mk_pack_b, MK_SB, MK_TB, MK_GB, MK_CVT_B, mk_pack_b_fast, MK_B_PANEL_TRAILER)
#undef MK_DEFINE_PACK
#undef MK_DEFINE_FAST
#endif
