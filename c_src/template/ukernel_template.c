/*
 * @NAME@.c: a micro-kernel of your own for the @MR@ x @NR@ register tile @NAME@,
 * written by `microkernel template @NAME@` from c_src/template/ukernel_template.c.
 *
 * This is the reference form, plain C with loops, after BLIS's
 * bli_gemm_template_noopt_mxn.c: it compiles as it is (with the ISA's flags, so the
 * compiler may vectorise it), passes the edge catalogue, and is the starting point
 * for hand-written intrinsics. The contract is c_src/mk_ukernel.h; in short:
 *
 *   C(MR x NR) := alpha * A_panel * B_panel + beta * C
 *
 *   a   packed micro-panel of A: kc steps of MR consecutive floats, a[k*MR + i] = A(i, k)
 *   b   packed micro-panel of B: kc steps of NR consecutive floats, b[k*NR + j] = B(k, j)
 *       (rows or columns past the matrix edge are zero-padded by the driver's packing)
 *   c   the tile of C: element (i, j) at c[i*rs_c + j*cs_c]; strides in elements, any
 *       sign; cs_c == 1 is the common case
 *   beta == 0: C is written, never read (NaN or Inf already in C must not survive)
 *
 * Four steps to your own kernel:
 *   1. microkernel template @NAME@ -o my_kernel.c        (this file)
 *   2. edit the K loop below: keep the MR x NR accumulators in registers (named
 *      vector variables, not an array, once you use intrinsics), load the B row as
 *      NR / lanes vectors, broadcast each A value, FMA; `microkernel asm @NAME@`
 *      shows what the generated kernel of this tile does
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

/* The micro-kernel: the full MR x NR tile. */
void mk_ukernel_@NAME@(int64_t kc, const float *restrict alpha,
        const float *restrict a, const float *restrict b,
        const float *restrict beta, float *restrict c, int64_t rs_c, int64_t cs_c)
{
    float acc[TILE_MR][TILE_NR] = {{0.0f}};       /* the register tile */
    for (int64_t k = 0; k < kc; ++k) {            /* one rank-1 update per k step */
        const float *ak = a + k * TILE_MR;        /* MR values of A: broadcast each */
        const float *bk = b + k * TILE_NR;        /* NR values of B: the vector row */
        for (int i = 0; i < TILE_MR; ++i)
            for (int j = 0; j < TILE_NR; ++j)
                acc[i][j] += ak[i] * bk[j];       /* an FMA per lane */
    }
    for (int i = 0; i < TILE_MR; ++i)             /* epilogue: alpha, beta, store */
        for (int j = 0; j < TILE_NR; ++j) {
            float *p = c + i * rs_c + j * cs_c;
            const float v = *alpha * acc[i][j];
            *p = *beta == 0.0f ? v : v + *beta * *p;   /* beta == 0: never read C */
        }
}
@EDGE@
