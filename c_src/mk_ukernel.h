/*
 * The micro-kernel contract (BLIS style; see BLIS docs/KernelsHowTo.md, gemm
 * micro-kernel). Every generated micro-kernel, whatever its ISA, has this signature:
 *
 *   void mk_ukernel_<name>(int64_t kc, const float *alpha,
 *                          const float *a, const float *b,
 *                          const float *beta,
 *                          float *c, int64_t rs_c, int64_t cs_c);
 *
 *   kc     depth of the update, kc >= 0 (kc == 0 gives C := beta*C, with alpha*0).
 *   a      packed micro-panel of A: kc steps of MR consecutive floats
 *          (a[k*MR + i] = A(i, k)); rows past the edge are zero-padded by packing.
 *   b      packed micro-panel of B: kc steps of NR consecutive floats
 *          (b[k*NR + j] = B(k, j)); columns past the edge are zero-padded.
 *   c      the MR x NR tile of C, element (i, j) at c[i*rs_c + j*cs_c]; strides are
 *          in elements and may be any sign. cs_c == 1 is the fast path.
 *   alpha, beta: C := alpha * A*B + beta * C. beta == 0 means C is written, never
 *          read (NaN/Inf already in C do not survive).
 *
 * Panels are read with unaligned loads (the driver 64-byte aligns them anyway).
 * The micro-kernel always computes a full MR x NR tile. Edge tiles go through the
 * optional edge entry point below (SVE: predicates; x86 fp32 and bf16/fp16-widening
 * tiles of several vectors per row: only the vectors the edge needs) or else the driver's MR x NR buffer. NR may
 * be a run-time value (SVE: NR = nv * svcntw()), so the driver reads it from the
 * descriptor.
 */
#ifndef MK_UKERNEL_H
#define MK_UKERNEL_H
#include <stdint.h>

/* Element types of a typed tile (microkernel.dtypes; docs/naming.md): the packed panels
 * of A and B (MK_TA, MK_TB) and C with alpha and beta (MK_TC). A typed kernel module
 * defines them before including this header; the default is fp32 throughout. A typed
 * micro-kernel reads K in groups (MK_GA, MK_GB in driver.c): element (line l, k) of a
 * panel of w lines at [(k / g) * w * g + l * g + k % g], kc a multiple of the group.
 * Where the module defines MK_B_COLSUM (the s8s8 and u8u8 VNNI tiles), the last group of
 * kc is not data: B's panel holds there, per column, MK_B_COLSUM of its sum (driver.c). */
#ifndef MK_TA
#define MK_TA float
#endif
#ifndef MK_TB
#define MK_TB float
#endif
#ifndef MK_TC
#define MK_TC float
#endif

typedef void (*mk_ukernel_fn)(int64_t kc, const MK_TC *alpha, const MK_TA *a,
                              const MK_TB *b, const MK_TC *beta, MK_TC *c,
                              int64_t rs_c, int64_t cs_c);

/* Optional edge micro-kernel: the same update on the top-left m x n corner only
 * (1 <= m <= MR, 1 <= n <= NR), e.g. with SVE predicates, or on x86 computing only
 * ceil(n / lanes) vectors per row; the panels are still full MR/NR wide
 * (zero-padded). NULL: the driver goes through its MR x NR buffer instead. */
typedef void (*mk_ukernel_edge_fn)(int64_t m, int64_t n, int64_t kc, const MK_TC *alpha,
                                   const MK_TA *a, const MK_TB *b, const MK_TC *beta,
                                   MK_TC *c, int64_t rs_c, int64_t cs_c);

typedef struct {
    int64_t mr;             /* rows of the register tile */
    int64_t nr;             /* columns of the register tile (lanes) */
    mk_ukernel_fn ukernel;
    mk_ukernel_edge_fn edge; /* may be NULL */
} mk_ukernel_desc;

/* Cache blocking in elements: KC (depth of a packed panel, sized for L1),
 * MC (rows of the packed A block, L2), NC (columns of the packed B block, L3); and how
 * a team of threads shares each block of C (mk_team.h, mk_loops_flow): chunks > 0, dynamic
 * units (from a counter, about that many per thread); 0, a fixed share per thread;
 * parts >= 1, the dynamic units split the block's NR panels into that many parts
 * (BLIS's jr ways, taken dynamically; 1: each unit is a chunk of whole rows). */
typedef struct {
    int64_t kc, mc, nc;
    int64_t chunks;
    int64_t parts;
} mk_blocking;

/* The model's chunks and parts (microkernel.blocking.TEAM_CHUNKS, TEAM_PARTS; a test
 * checks they agree), for the C mains that build an mk_blocking themselves (the
 * sanitizer and aarch64 harnesses); parts = 0: the driver picks them (mk_team.h,
 * mk_team_parts), at most MK_TEAM_PARTS_MAX (microkernel.blocking.TEAM_PARTS_MAX). */
#define MK_TEAM_CHUNKS 2
#define MK_TEAM_PARTS 0
#define MK_TEAM_PARTS_MAX 4

#endif
