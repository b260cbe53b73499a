/*
 * @NAME@.c: a micro-kernel of your own for the @MR@ x @NR@ register tile
 * @NAME@, @TYPES@,
 * written by `microkernel template @NAME@` from c_src/template/ukernel_template_typed.c.
 *
 * The reference form for a typed tile, plain C with loops like ukernel_template.c
 * (the fp32 one): it compiles as it is (with the ISA's flags), passes the edge
 * catalogue, and is the starting point for intrinsics. The contract is
 * c_src/mk_ukernel.h. The tile's module defines the element types before this file
 * and includes c_src/mk_convert.h (the bf16 and fp16 decoders):
 *
 *   MK_TA, MK_TB   the packed panels' elements: @TA@, @TB@
 *   MK_TC          C, alpha and beta: @TC@
 *
 *   C(MR x NR) := alpha * A_panel * B_panel + beta * C
 *
 *   a   packed micro-panel of A, MR rows, K in groups of GA = @GA@ (what the
 *       instruction reads per lane; 1: one k per step as in the fp32 contract):
 *       A(i, k) at a[(k / GA) * MR * GA + i * GA + k % GA], as TILE_A_VALUE reads it
 *       (the s8s8 and u8u8 VNNI tiles store A + 128 or A - 128 there)
 *   b   packed micro-panel of B, NR columns, K in groups of GB = @GB@:
 *       B(k, j) at b[(k / GB) * NR * GB + j * GB + k % GB]
 *   kc  a multiple of both groups (the driver pads K, and the edges, with zeros; where
 *       the module defines MK_B_COLSUM, one group more: see tile_product)
 *   c   the tile of C: element (i, j) at c[i*rs_c + j*cs_c]; strides in elements, any
 *       sign; beta == 0: C is written, never read (NaN or Inf in C must not survive)
 *
 * @ACCUMULATE@
 *
 * Four steps to your own kernel:
 *   1. microkernel template @NAME@ -o my_kernel.c        (this file)
 *   2. replace the K loop with the instruction's: `microkernel asm @NAME@` shows what
 *      the generated kernel of this tile does, c_src/ukernels/ holds the built-ins
 *   3. microkernel validate --kernel @NAME@ --source my_kernel.c
 *   4. microkernel compare --kernels "@NAME@;@NAME@@my_kernel.c" --sizes 512,1024
 *
 * The file is compiled in one translation unit ahead of the driver, with only this
 * ISA's flags: it may include system headers only, and its file-scope names must not
 * start with mk_ (the driver's) other than the functions it defines.
 */
#include <stdint.h>

#define TILE_MR @MR@
#define TILE_NR @NR@
#define TILE_GA @GA@
#define TILE_GB @GB@
/* one panel element as the value it multiplies by */
#define TILE_A_VALUE(x) @A_VALUE@
#define TILE_B_VALUE(x) @B_VALUE@
#define TILE_INT_C @INT_C@               /* 1: integer C, arithmetic modulo 2^32 */
#if TILE_INT_C
typedef uint32_t tile_acc;               /* wraps like the int32 of the instructions */
#else
typedef float tile_acc;
#endif

/* acc := A_panel(:, 0:kc) * B_panel(0:kc, :) */
static inline __attribute__((always_inline)) void
tile_product(int64_t kc, const MK_TA *restrict a, const MK_TB *restrict b,
             tile_acc acc[TILE_MR][TILE_NR])
{
#ifdef MK_B_COLSUM
    /* the panels' last K group holds B's column sums for the generated kernel's
     * correction (c_src/driver.c, MK_B_COLSUM); TILE_A_VALUE unshifts A instead */
    kc -= TILE_GB;
#endif
    for (int i = 0; i < TILE_MR; ++i)
        for (int j = 0; j < TILE_NR; ++j)
            acc[i][j] = 0;
    for (int64_t k = 0; k < kc; ++k) {            /* one rank-1 update per k */
        const MK_TA *ak = a + (k / TILE_GA) * TILE_MR * TILE_GA + k % TILE_GA;
        const MK_TB *bk = b + (k / TILE_GB) * TILE_NR * TILE_GB + k % TILE_GB;
        for (int i = 0; i < TILE_MR; ++i)
            for (int j = 0; j < TILE_NR; ++j)
                acc[i][j] += (tile_acc)(TILE_A_VALUE(ak[i * TILE_GA]) *
                                        TILE_B_VALUE(bk[j * TILE_GB]));
    }
}

/* c(i, j) := alpha * acc + beta * c(i, j) on the top-left m x n corner */
static inline __attribute__((always_inline)) void
tile_store(int64_t m, int64_t n, const MK_TC *alpha, const MK_TC *beta,
           tile_acc acc[TILE_MR][TILE_NR], MK_TC *c, int64_t rs_c, int64_t cs_c)
{
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            MK_TC *p = c + i * rs_c + j * cs_c;
#if TILE_INT_C
            const uint32_t v = (uint32_t)*alpha * acc[i][j];
            *p = (MK_TC)(*beta == 0 ? v : v + (uint32_t)*beta * (uint32_t)*p);
#else
            const float v = *alpha * acc[i][j];
            *p = *beta == 0.0f ? v : v + *beta * *p;   /* beta == 0: never read C */
#endif
        }
}

/* The micro-kernel: the full MR x NR tile. */
void mk_ukernel_@NAME@(int64_t kc, const MK_TC *restrict alpha,
        const MK_TA *restrict a, const MK_TB *restrict b,
        const MK_TC *restrict beta, MK_TC *restrict c, int64_t rs_c, int64_t cs_c)
{
    tile_acc acc[TILE_MR][TILE_NR];               /* the register tile */
    tile_product(kc, a, b, acc);
    tile_store(TILE_MR, TILE_NR, alpha, beta, acc, c, rs_c, cs_c);
}
@EDGE@
