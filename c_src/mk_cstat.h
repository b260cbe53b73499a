/* The C-stationary loops of one thread (a module that defines MK_C_STATIONARY;
 * driver.c).
 * Part of the one GEMM driver, included by driver.c only, in its order (not a header
 * of its own).
 * Uses: mk_tile (mk_loops.h), mk_pack_a / mk_pack_b (mk_pack.h), mk_ws_get
 * (mk_workspace.h). Gives mk_cstat_kp, mk_cstat_bytes and mk_loops_cstat. */

#ifdef MK_C_STATIONARY
/* ---- C-stationary loops (one thread; a module that defines MK_C_STATIONARY) --------
 *
 *   pack all of B: for jc, for pc: the KC x NC block as NR micro-panels, in that order
 *   for ic in 0..M step MC          pack A[ic:ic+MC, 0:K]: one MC x KC sub-block per pc
 *     for jc in 0..N step NC
 *       for pc in 0..K step KC
 *         for jr, for ir            micro-kernel(KC, 1, A panel, B panel, beta', tile)
 *                                   (the whole ir loop in one MK_UKERNEL_IRLOOP call where
 *                                   the module has it, below)
 *       C[ic.., jc..] := alpha * tiles + beta * C, row by row
 *
 * The MC x NC block of C is accumulated across the KC blocks in a buffer of whole
 * tiles (beta' = 0 in the first KC block, 1 after), tile-major ([jr][ir][MR][NR]: each
 * tile compact, the ir loop's next tile next in memory), rather than in C, whose rows
 * lie a row stride apart; C itself is written once, row by row along its rows. B's
 * micro-panels are read in memory order, so the next one is the one MK_PREFETCH_B
 * hands out. Measured on the AMX tiles (Sapphire Rapids, one thread, n = 3072-4096):
 * 2.0-8.6% faster than the five loops (mk_loops.h); with one KC block 6-10% slower (hence
 * only for several); storing each tile straight to C in the last KC block instead of
 * row by row was no faster (docs/design-notes.md, AMX: C stays in compact tiles). With
 * the whole-ir-loop entry point and gemm()'s one-thread blocking for it (KC = 256 bf16:
 * a B micro-panel that L1 keeps across the ir loop), over n = 2048 and 4096: +7.3%
 * [+3.9, +11.5] on one CPU, +6.8 and +4.8% on two others (intervals crossing 0), as a
 * variant of the tree before it (docs/design-notes.md, AMX: a small KC at one thread). */

/* The C-stationary loops' packed depth of all K (each KC block padded, with its trailer)
 * and where block pc starts in it (every block but the last is whole K groups). */
static inline int64_t mk_cstat_kp(int64_t k, int64_t kc_blk)
{
    return mk_round_up(k, MK_G) + (k + kc_blk - 1) / kc_blk * MK_B_TRAILER;
}

static inline int64_t mk_cstat_kpos(int64_t pc, int64_t kc_blk)
{
    return pc + pc / kc_blk * MK_B_TRAILER;
}

/* Bytes of the C-stationary workspace (the whole packed B, one A row block of all K,
 * the tiles of one MC x NC block of C); *b_bytes, *a_bytes: the first two parts. */
static size_t mk_cstat_bytes(int64_t n, int64_t kp, int64_t mc_blk, int64_t nc_blk,
                             int64_t mr, int64_t nr, size_t *b_bytes, size_t *a_bytes)
{
    const int64_t mp = (mc_blk + mr - 1) / mr, np_blk = (nc_blk + nr - 1) / nr;
    *b_bytes = (size_t)mk_round_up(((n + nr - 1) / nr * nr * kp + MK_PACK_SLACK) * (int64_t)sizeof(MK_TB), 64);
    *a_bytes = (size_t)mk_round_up((mp * mr * kp + MK_PACK_SLACK) * (int64_t)sizeof(MK_TA), 64);
    return *b_bytes + *a_bytes + (size_t)mk_round_up(mp * np_blk * mr * nr * (int64_t)sizeof(MK_TC), 64);
}

/* The driver takes these loops when the whole packed B is at most this many bytes. */
#ifndef MK_CSTAT_MAX_B
#define MK_CSTAT_MAX_B ((size_t)1 << 30)
#endif

/* With beta = 0 and C of at least MK_CSTAT_NT_MIN bytes, the pass that writes C stores
 * it non-temporally (MOVNTDQ, SDM vol. 2B; x86-64 only): C is written once and read by
 * no later step of the call, so its lines are not read for ownership first nor kept
 * in the caches (docs/design-notes.md, AMX: C stays in compact tiles). 0: never. */
#ifndef MK_CSTAT_NT_MIN
#define MK_CSTAT_NT_MIN ((size_t)16 << 20)
#endif
#if defined(__x86_64__) && defined(__SSE2__)
typedef long long mk_v2di __attribute__((vector_size(16)));
/* dst[0:w] := alpha * t[0:w] by 16-byte non-temporal stores; 0 (nothing stored) when
 * dst is not 16-byte aligned or w elements are not whole 16-byte pieces */
static int mk_store_nt(MK_TC *dst, const MK_TC *t, int64_t w, MK_TC alpha)
{
    enum { V = 16 / sizeof(MK_TC) };
    if (((uintptr_t)dst & 15) != 0 || w % V != 0)
        return 0;
    for (int64_t j = 0; j < w; j += V) {
        MK_TC v[V];
        for (int q = 0; q < V; ++q)
            v[q] = MK_SCALE(alpha, t[j + q]);
        mk_v2di x;
        memcpy(&x, v, sizeof x);
        __builtin_ia32_movntdq((mk_v2di *)(dst + j), x);
    }
    return 1;
}
#define MK_SFENCE() __builtin_ia32_sfence()
#else
static int mk_store_nt(MK_TC *dst, const MK_TC *t, int64_t w, MK_TC alpha)
{
    (void)dst; (void)t; (void)w; (void)alpha;
    return 0;
}
#define MK_SFENCE() ((void)0)
#endif

/* A module that defines MK_UKERNEL_IRLOOP (AMX: codegen/amx.py) gets its whole ir loop
 * called once per jr step: it stores each C tile right after its last product and loads
 * the next tile's into that register, so the next tile's products start on loaded tiles,
 * and it prefetches into L2 its share of the A sub-block read next (the next KC block's,
 * or the next NC block's first), which the small KC of these loops (gemm.blocking_for at
 * one thread) otherwise reads from L3 in its first jr step. 0: one micro-kernel call per
 * tile (to race them). */
#ifndef MK_CSTAT_IRLOOP
#define MK_CSTAT_IRLOOP 1
#endif

static int mk_loops_cstat(const mk_ukernel_desc *uk, int64_t m, int64_t n, int64_t k,
                          int64_t mc_blk, int64_t nc_blk, int64_t kc_blk, MK_TC alpha,
                          const MK_SA *a, int64_t rs_a, int64_t cs_a,
                          const MK_SB *b, int64_t rs_b, int64_t cs_b, MK_TC beta,
                          MK_TC *c, int64_t rs_c, int64_t cs_c)
{
    const int64_t mr = MK_TILE_MR(uk), nr = MK_TILE_NR(uk);
    const MK_TC one = 1, zero = 0;
    (void)uk;
    const int64_t kp = mk_cstat_kp(k, kc_blk);
    size_t b_bytes, a_bytes;
    char *ws = (char *)mk_ws_get(mk_cstat_bytes(n, kp, mc_blk, nc_blk, mr, nr, &b_bytes, &a_bytes));
    if (!ws)
        return MK_ENOMEM;
    MK_TB *bpk = (MK_TB *)ws;
    MK_TA *apk = (MK_TA *)(ws + b_bytes);
    MK_TC *acc = (MK_TC *)(ws + b_bytes + a_bytes);
    MK_THREAD_SETUP();
    /* B, whole: block jc at bpk + jc * kp, its KC sub-block pc at + mk_cstat_kpos(pc) *
     * (its panels x NR) (every KC block but the last is a whole number of K groups:
     * mk_balance) */
    for (int64_t jc = 0; jc < n; jc += nc_blk) {
        const int64_t nc = mk_min(nc_blk, n - jc), ncr = (nc + nr - 1) / nr * nr;
        for (int64_t pc = 0; pc < k; pc += kc_blk) {
            const int64_t kc = mk_min(kc_blk, k - pc);
            mk_pack_b(nc, kc, MK_KCP(kc), b + pc * rs_b + jc * cs_b, cs_b, rs_b, nr,
                      bpk + jc * kp + mk_cstat_kpos(pc, kc_blk) * ncr);
        }
    }
    const char *const b_end = (const char *)(bpk + (n + nr - 1) / nr * nr * kp);
    const int nt = MK_CSTAT_NT_MIN > 0 && beta == 0 && cs_c == 1
                   && (size_t)m * (size_t)n * sizeof(MK_TC) >= (size_t)MK_CSTAT_NT_MIN;
    for (int64_t ic = 0; ic < m; ic += mc_blk) {
        const int64_t mc = mk_min(mc_blk, m - ic), mpanels = (mc + mr - 1) / mr;
        const int64_t mcr = mpanels * mr;
        for (int64_t pc = 0; pc < k; pc += kc_blk) {
            const int64_t kc = mk_min(kc_blk, k - pc);
            mk_pack_a(mc, kc, MK_KCP(kc), a + ic * rs_a + pc * cs_a, rs_a, cs_a, mr,
                      apk + mk_cstat_kpos(pc, kc_blk) * mcr);
        }
        for (int64_t jc = 0; jc < n; jc += nc_blk) {
            const int64_t nc = mk_min(nc_blk, n - jc), npanels = (nc + nr - 1) / nr;
            for (int64_t pc = 0; pc < k; pc += kc_blk) {
                const int64_t kcp = MK_KCP(mk_min(kc_blk, k - pc));
                const MK_TA *asub = apk + mk_cstat_kpos(pc, kc_blk) * mcr;
                const MK_TB *bsub = bpk + jc * kp + mk_cstat_kpos(pc, kc_blk) * npanels * nr;
                const int64_t pbytes = nr * kcp * (int64_t)sizeof(MK_TB);
#if defined(MK_UKERNEL_IRLOOP)
                /* the A sub-block read next: the next KC block's, or the first of the next
                 * NC block (the same rows); each jr step's ir loop prefetches its share */
                const char *next_a = NULL;
                int64_t next_a_bytes = 0;
                const int64_t npc = pc + kc_blk < k ? pc + kc_blk : 0;
                if (npc > 0 || jc + nc_blk < n) {
                    next_a = (const char *)(apk + mk_cstat_kpos(npc, kc_blk) * mcr);
                    next_a_bytes = mcr * MK_KCP(mk_min(kc_blk, k - npc)) * (int64_t)sizeof(MK_TA);
                }
#endif
                for (int64_t jp = 0; jp < npanels; ++jp) {
                    const MK_TB *bp = bsub + jp * nr * kcp;
                    /* the next micro-panel in memory is the next one read */
                    const char *next_b = (const char *)(bp + nr * kcp);
                    const int64_t next_bytes = next_b + pbytes <= b_end ? pbytes : 0;
                    (void)next_b; (void)next_bytes;
#if defined(MK_UKERNEL_IRLOOP)
                    if (MK_CSTAT_IRLOOP) {
                        const int64_t a0 = next_a_bytes * jp / npanels & ~(int64_t)63;
                        MK_UKERNEL_IRLOOP(kcp, mpanels, asub, mr * kcp, bp, pc != 0,
                                          acc + jp * mpanels * mr * nr, next_b, next_bytes,
                                          next_a ? next_a + a0 : (const char *)apk,
                                          next_a_bytes * (jp + 1) / npanels - a0);
                        continue;
                    }
#endif
                    for (int64_t ip = 0; ip < mpanels; ++ip) {
                        MK_PREFETCH_B(next_b + next_bytes * ip / mpanels,
                                      next_bytes * (ip + 1) / mpanels - next_bytes * ip / mpanels);
                        MK_CALL_UKERNEL(uk, kcp, &one, asub + ip * mr * kcp, bp,
                                        pc == 0 ? &zero : &one,
                                        acc + (jp * mpanels + ip) * mr * nr, nr, 1);
                    }
                }
            }
            for (int64_t i = 0; i < mc; ++i) {   /* C := alpha * tiles + beta * C */
                MK_TC *ci = c + (ic + i) * rs_c + jc * cs_c;
                const MK_TC *ti = acc + (i / mr) * mr * nr + (i % mr) * nr;
                for (int64_t jp = 0; jp < npanels; ++jp) {
                    const MK_TC *t = ti + jp * mpanels * mr * nr;
                    MK_TC *cp = ci + jp * nr * cs_c;
                    const int64_t w = mk_min(nr, nc - jp * nr);
                    if (nt && mk_store_nt(cp, t, w, alpha))
                        continue;
                    if (cs_c == 1 && beta == 0)
                        for (int64_t j = 0; j < w; ++j)
                            cp[j] = MK_SCALE(alpha, t[j]);
                    else if (cs_c == 1)
                        for (int64_t j = 0; j < w; ++j)
                            cp[j] = MK_AXPBY(MK_SCALE(alpha, t[j]), beta, cp[j]);
                    else
                        for (int64_t j = 0; j < w; ++j)
                            cp[j * cs_c] = beta == 0 ? MK_SCALE(alpha, t[j])
                                : MK_AXPBY(MK_SCALE(alpha, t[j]), beta, cp[j * cs_c]);
                }
            }
        }
    }
    if (nt)
        MK_SFENCE();   /* the non-temporal stores ordered before the call returns */
    MK_PREFETCH_B(NULL, 0);
    MK_THREAD_TEARDOWN();
    return MK_OK;
}
#endif
