/* The C updates, the macro-kernel and the five loops of BLIS around the micro-kernel
 * (driver.c).
 * Part of the one GEMM driver, included by driver.c only, in its order (not a header
 * of its own).
 * Uses: mk_pack_a / mk_pack_b (mk_pack.h); MK_CALL_UKERNEL, MK_TILE_MR/NR,
 * MK_PREFETCH_B, MK_THREAD_SETUP, MK_C_ALIGN, MK_KCP, mk_balance (driver.c). Gives mk_tile,
 * mk_scale_c, mk_macro, mk_loops and what every thread path shares: mk_call,
 * mk_team_pos / mk_alone, mk_lead, mk_team_b_stride, mk_pack_b_panel. */

/* e + beta * c in C's type: fp32 arithmetic, or int32 arithmetic that wraps (done in
 * uint32_t, so a result past int32 wraps as two's complement with no UB). */
#ifndef MK_INT_C
#define MK_INT_C 0      /* 1: C is int32_t (a typed module of an integer tile says so) */
#endif
#if MK_INT_C
#define MK_AXPBY(e, beta, c) ((MK_TC)((uint32_t)(e) + (uint32_t)(beta) * (uint32_t)(c)))
#define MK_SCALE(alpha, e) ((MK_TC)((uint32_t)(alpha) * (uint32_t)(e)))
#else
#define MK_AXPBY(e, beta, c) ((e) + (beta) * (c))
#define MK_SCALE(alpha, e) ((alpha) * (e))
#endif

/* C := beta * C (beta == 0 writes zeros without reading C). */
static void mk_scale_c(int64_t m, int64_t n, MK_TC beta, MK_TC *c, int64_t rs_c, int64_t cs_c)
{
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            MK_TC *p = c + i * rs_c + j * cs_c;
            *p = beta == 0 ? (MK_TC)0 : MK_AXPBY(0, beta, *p);
        }
}

/* One register tile: the micro-kernel straight into C when the tile is full; an edge
 * tile through the micro-kernel's edge entry point when it has one (SVE, x86 tiles of
 * several vectors per row), else into the MR x NR edge buffer, merged into the
 * mcur x ncur corner of C. */
static void mk_tile(const mk_ukernel_desc *uk, int64_t mcur, int64_t ncur, int64_t kc,
                    const MK_TC *alpha, const MK_TA *ap, const MK_TB *bp,
                    const MK_TC *beta, MK_TC *c, int64_t rs_c, int64_t cs_c, MK_TC *edge)
{
    const int64_t nr = MK_TILE_NR(uk);
    if (mcur == MK_TILE_MR(uk) && ncur == nr) {
        MK_CALL_UKERNEL(uk, kc, alpha, ap, bp, beta, c, rs_c, cs_c);
        return;
    }
    if (uk->edge) {
        uk->edge(mcur, ncur, kc, alpha, ap, bp, beta, c, rs_c, cs_c);
        return;
    }
    const MK_TC zero = 0;
    MK_CALL_UKERNEL(uk, kc, alpha, ap, bp, &zero, edge, nr, 1);
    for (int64_t i = 0; i < mcur; ++i)
        for (int64_t j = 0; j < ncur; ++j) {
            MK_TC *p = c + i * rs_c + j * cs_c;
            *p = *beta == 0 ? edge[i * nr + j] : MK_AXPBY(edge[i * nr + j], *beta, *p);
        }
}

/* Column of panel jp within an NC block whose first panel is w0 wide (w0 > 0: the
 * narrow first panel of MK_C_ALIGN; else every panel is nr wide), and its width in a
 * block of nc columns. */
static inline int64_t mk_panel_col(int64_t jp, int64_t w0, int64_t nr)
{
    return w0 > 0 && jp > 0 ? w0 + (jp - 1) * nr : jp * nr;
}

static inline int64_t mk_panel_width(int64_t jp, int64_t w0, int64_t nr, int64_t nc)
{
    return w0 > 0 && jp == 0 ? w0 : mk_min(nr, nc - mk_panel_col(jp, w0, nr));
}

/* Panel jp of a KC x NC block of B (b: the block's first element; panel 0 w0 wide
 * when w0 > 0) packed into dst: kc k-steps, padded to kcp with zeros for typed panels. */
static inline void mk_pack_b_panel(int64_t jp, int64_t w0, int64_t nr, int64_t nc, int64_t kc,
                                   int64_t kcp, const MK_SB *b, int64_t rs_b, int64_t cs_b,
                                   MK_TB *dst)
{
    const int64_t j = mk_panel_col(jp, w0, nr);
    mk_pack_b(mk_panel_width(jp, w0, nr, nc), kc, kcp, b + j * cs_b, cs_b, rs_b, nr, dst);
}

/* One thread's whole KC x NC block of B (b: row pc, column jc) into b_pack, NR panels
 * nr * kcp apart: the narrow first panel of w0 columns (MK_C_ALIGN's lead; 0: none)
 * on its own, then the rest. */
static inline void mk_pack_b_block(int64_t w0, int64_t nc, int64_t kc, int64_t kcp,
                                   const MK_SB *b, int64_t rs_b, int64_t cs_b, int64_t nr,
                                   MK_TB *b_pack)
{
    if (w0 > 0)
        mk_pack_b(w0, kc, kcp, b, cs_b, rs_b, nr, b_pack);
    mk_pack_b(nc - w0, kc, kcp, b + w0 * cs_b, cs_b, rs_b, nr, b_pack + (w0 > 0 ? nr * kcp : 0));
}

/* The macro-kernel of one part of a block: mc rows of A (a: row ic, column pc) packed
 * into a_pack (pack_a = 0: a_pack holds them packed already, a is not read), then the
 * jr loop over the packed B panels u0..u1 (b_stride apart) and the ir loop over the MR
 * panels of those rows, into C (c: row ic, column jc). MK_PREFETCH_B gets each jr
 * step's next panel; the last step's is u_wrap (the loops: u0, a guess at the next
 * part; the flow's slivers: the part's next sliver). */
static inline void mk_macro(const mk_ukernel_desc *uk, int64_t mc, int64_t kc, int64_t kcp,
                            MK_TC alpha, const MK_SA *a, int64_t rs_a, int64_t cs_a,
                            const MK_TB *b_pack, int64_t b_stride, int64_t u0, int64_t u1,
                            int64_t u_wrap, int64_t w0, int64_t nc, const MK_TC *beta_p, MK_TC *c,
                            int64_t rs_c, int64_t cs_c, MK_TA *a_pack, MK_TC *edge, int pack_a)
{
    const int64_t mr = MK_TILE_MR(uk), nr = MK_TILE_NR(uk);
    const int64_t mpanels = (mc + mr - 1) / mr;
    if (pack_a)
        mk_pack_a(mc, kc, kcp, a, rs_a, cs_a, mr, a_pack);
    for (int64_t jp = u0; jp < u1; ++jp) {
        const int64_t j = mk_panel_col(jp, w0, nr);
        const int64_t ncur = mk_panel_width(jp, w0, nr, nc);
        /* the panel of the next jr step (after the last, u_wrap), its bytes shared
         * among this ir loop's calls */
        const char *next_b = (const char *)(b_pack + (jp + 1 < u1 ? jp + 1 : u_wrap) * b_stride);
        const int64_t next_bytes = nr * kcp * (int64_t)sizeof(MK_TB);
        (void)next_b; (void)next_bytes;
        for (int64_t ip = 0; ip < mpanels; ++ip) {
            const int64_t i = ip * mr;
            MK_PREFETCH_B(next_b + next_bytes * ip / mpanels,
                          next_bytes * (ip + 1) / mpanels - next_bytes * ip / mpanels);
            mk_tile(uk, mk_min(mr, mc - i), ncur, kcp, &alpha, a_pack + i * kcp,
                    b_pack + jp * b_stride, beta_p, c + i * rs_c + j * cs_c, rs_c, cs_c, edge);
        }
    }
}

/* Elements from one packed B panel of a team's shared block to the next: MK_PACK_SLACK
 * floats more than the panel, so that one thread's packing overrun never lands in
 * another's panel. */
static inline int64_t mk_team_b_stride(int64_t nr, int64_t kcp)
{
    return mk_round_up(nr * kcp + MK_PACK_SLACK, 16);
}

/* Where a thread stands in a team (the shared-B decomposition: mk_loops below, mk_team.h): thread t of nt,
 * at row ti of tm and column tj of tn of the team's grid over each C block. A lone
 * thread, or one running its own slice, is {0, 1, 0, 1, 0, 1}. */
typedef struct {
    int t, nt, ti, tm, tj, tn;
} mk_team_pos;

static const mk_team_pos mk_alone = {0, 1, 0, 1, 0, 1};

/* Columns of C before its first MK_C_ALIGN boundary (see MK_C_ALIGN), 0 if none or off:
 * they form a narrow first panel (w0 wide) of the first NC block. */
static int64_t mk_lead(const MK_TC *c, int64_t rs_c, int64_t cs_c, int64_t n, int64_t nr)
{
    int64_t lead = 0;
#if MK_C_ALIGN > 0
    if ((nr * 4) % MK_C_ALIGN == 0 && cs_c == 1 && (uintptr_t)c % 4 == 0
        && (rs_c * 4) % MK_C_ALIGN == 0) {
        lead = (int64_t)((MK_C_ALIGN - (uintptr_t)c % MK_C_ALIGN) % MK_C_ALIGN) / 4;
        if (lead >= n)
            lead = 0;
    }
#else
    (void)c; (void)rs_c; (void)cs_c; (void)n; (void)nr;
#endif
    return lead;
}

/* The five loops of one GEMM, or of one thread's part of it.
 *
 * Alone (tp->nt == 1): serial, with its own packing buffers (also each thread of the
 * slice decomposition, on its slice).
 * In a team (tp->nt > 1; BLIS's jc-pc-shared, ic and jr ways, Smith et al., "Anatomy
 * of High-Performance Many-Threaded Matrix Multiplication", IPDPS 2014): every thread
 * runs the jc and pc loops; the KC x NC block of B is packed by the whole team into
 * the shared b_pack (each thread some of its NR panels, between two barriers: the
 * block is free before it is overwritten, and complete before it is read); then each
 * thread takes its rows (a contiguous range of MR panels, row ti of tm) and its
 * columns (a contiguous range of NR panels of the block, column tj of tn), packs its
 * own A blocks and runs the jr and ir loops on them (fixed shares: blk->chunks = 0, or
 * MICROKERNEL_TEAM_GRID=square; the default dynamic units are mk_loops_flow's, mk_team.h).
 * In a team each B panel is MK_PACK_SLACK floats longer (b_stride), so that one
 * thread's packing overrun never lands in another's panel. */
static void mk_loops(const mk_ukernel_desc *uk, int64_t m, int64_t n, int64_t k,
                     int64_t mc_blk, int64_t nc_blk, int64_t kc_blk, MK_TC alpha,
                     const MK_SA *a, int64_t rs_a, int64_t cs_a,
                     const MK_SB *b, int64_t rs_b, int64_t cs_b, MK_TC beta,
                     MK_TC *c, int64_t rs_c, int64_t cs_c,
                     MK_TA *a_pack, MK_TB *b_pack, MK_TC *edge, const mk_team_pos *tp)
{
    const int64_t mr = MK_TILE_MR(uk), nr = MK_TILE_NR(uk);
    const MK_TC one = 1;
    MK_THREAD_SETUP();
    const int team = tp->nt > 1;
    const int64_t lead = mk_lead(c, rs_c, cs_c, n, nr);
    /* this thread's rows: MR panels [P*ti/tm, P*(ti+1)/tm) of the P of C */
    const int64_t P = (m + mr - 1) / mr;
    const int64_t r0 = mk_min(m, P * tp->ti / tp->tm * mr);
    const int64_t r1 = mk_min(m, P * (tp->ti + 1) / tp->tm * mr);
    const int64_t mcb = team ? mk_balance(r1 - r0 > 0 ? r1 - r0 : 1, mc_blk, mr) : mc_blk;
    for (int64_t jc = 0; jc < n;) {
        const int64_t w0 = jc == 0 ? lead : 0;
        const int64_t nc = mk_min(w0 + nc_blk, n - jc);
        const int64_t npanels = (w0 > 0) + (nc - w0 + nr - 1) / nr;
        const int64_t q0 = npanels * tp->tj / tp->tn, q1 = npanels * (tp->tj + 1) / tp->tn;
        for (int64_t pc = 0; pc < k; pc += kc_blk) {
            const int64_t kc = mk_min(kc_blk, k - pc);
            const MK_TC *beta_p = pc == 0 ? &beta : &one;
            /* the micro-kernel's depth: kc padded to the K group with zeros (and the
             * trailer, MK_B_COLSUM; kc itself for fp32) */
            const int64_t kcp = MK_KCP(kc);
            const int64_t b_stride = team ? mk_team_b_stride(nr, kcp) : nr * kcp;
            if (team) {
                /* the team packs the block: thread t its share of the panels */
#pragma omp barrier
                for (int64_t jp = npanels * tp->t / tp->nt; jp < npanels * (tp->t + 1) / tp->nt; ++jp)
                    mk_pack_b_panel(jp, w0, nr, nc, kc, kcp, b + pc * rs_b + jc * cs_b, rs_b, cs_b,
                                    b_pack + jp * b_stride);
#pragma omp barrier
            } else {
                mk_pack_b_block(w0, nc, kc, kcp, b + pc * rs_b + jc * cs_b, rs_b, cs_b, nr, b_pack);
            }
            for (int64_t ic = r0; ic < r1; ic += mcb)
                mk_macro(uk, mk_min(mcb, r1 - ic), kc, kcp, alpha, a + ic * rs_a + pc * cs_a,
                         rs_a, cs_a, b_pack, b_stride, q0, q1, q0, w0, nc, beta_p,
                         c + ic * rs_c + jc * cs_c, rs_c, cs_c, a_pack, edge, 1);
        }
        jc += nc;
    }
    MK_PREFETCH_B(NULL, 0);
    MK_THREAD_TEARDOWN();
}

/* Bytes of the A slab of mk_loops_slab for m rows and KC blocks of at most kc_blk: every
 * MR panel of the rows, kcp deep, and the packing's slack, 64-byte rounded. */
static inline size_t mk_slab_bytes(int64_t m, int64_t mr, int64_t kc_blk)
{
    return (size_t)mk_round_up(
        (mk_round_up(m, mr) * MK_KCP(kc_blk) + MK_PACK_SLACK) * (int64_t)sizeof(MK_TA), 64);
}

/* One thread's loops (alone, or a slice's) when N spans two NC blocks or more: the pc
 * loop outside the jc loop, and each KC block's rows of A packed once, into the A slab
 * (mk_slab_bytes), while the first NC block's ic loop runs; the later NC blocks read
 * the slab. mk_loops instead packs every A block again for each NC block, N / NC times,
 * which the one-thread NC that keeps the B block in the L2 makes 4 at n = 4096 on
 * the Sapphire Rapids host (blocking.L2_B_SHARE). Each C tile still gets its KC blocks
 * in order from the same packed panels, so C is bit-identical to mk_loops'. The A
 * blocks sit ic * kcp apart: each one's packing overrun (MK_PACK_SLACK) lands in the
 * next block's space before that block is packed, and past the last in the slab's
 * slack. */
static void mk_loops_slab(const mk_ukernel_desc *uk, int64_t m, int64_t n, int64_t k,
                          int64_t mc_blk, int64_t nc_blk, int64_t kc_blk, MK_TC alpha,
                          const MK_SA *a, int64_t rs_a, int64_t cs_a,
                          const MK_SB *b, int64_t rs_b, int64_t cs_b, MK_TC beta,
                          MK_TC *c, int64_t rs_c, int64_t cs_c,
                          MK_TA *slab, MK_TB *b_pack, MK_TC *edge)
{
    const int64_t nr = MK_TILE_NR(uk);
    const MK_TC one = 1;
    MK_THREAD_SETUP();
    const int64_t lead = mk_lead(c, rs_c, cs_c, n, nr);
    for (int64_t pc = 0; pc < k; pc += kc_blk) {
        const int64_t kc = mk_min(kc_blk, k - pc);
        const MK_TC *beta_p = pc == 0 ? &beta : &one;
        const int64_t kcp = MK_KCP(kc);
        for (int64_t jc = 0; jc < n;) {
            const int64_t w0 = jc == 0 ? lead : 0;
            const int64_t nc = mk_min(w0 + nc_blk, n - jc);
            const int64_t npanels = (w0 > 0) + (nc - w0 + nr - 1) / nr;
            mk_pack_b_block(w0, nc, kc, kcp, b + pc * rs_b + jc * cs_b, rs_b, cs_b, nr, b_pack);
            for (int64_t ic = 0; ic < m; ic += mc_blk)
                mk_macro(uk, mk_min(mc_blk, m - ic), kc, kcp, alpha, a + ic * rs_a + pc * cs_a,
                         rs_a, cs_a, b_pack, nr * kcp, 0, npanels, 0, w0, nc, beta_p,
                         c + ic * rs_c + jc * cs_c, rs_c, cs_c, slab + ic * kcp, edge, jc == 0);
            jc += nc;
        }
    }
    MK_PREFETCH_B(NULL, 0);
    MK_THREAD_TEARDOWN();
}

/* One GEMM call's operands and blocking, as the pool's jobs carry them. */
typedef struct {
    const mk_ukernel_desc *uk;
    int64_t m, n, k, mc_blk, nc_blk, kc_blk;
    MK_TC alpha;
    const MK_SA *a;
    int64_t rs_a, cs_a;
    const MK_SB *b;
    int64_t rs_b, cs_b;
    MK_TC beta;
    MK_TC *c;
    int64_t rs_c, cs_c;
} mk_call;
