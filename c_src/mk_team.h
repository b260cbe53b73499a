/* The shared-B team (by default 3 or more threads, or 2 on C of 256 rows or more:
 * driver.c, mk_threading): its grid and its flow of dynamic units.
 * Part of the one GEMM driver, included by driver.c only, in its order (not a header
 * of its own).
 * Uses: mk_call, mk_macro, mk_loops, mk_pack_b_panel, mk_lead, mk_team_b_stride
 * (mk_loops.h), mk_ws_get (mk_workspace.h), mk_pool_run and mk_wait_step (mk_pool.h),
 * the MK_TR_* timeline (mk_trace.h; empty unless MK_FLOW_TRACE).
 * Gives mk_team_grid, mk_loops_flow, mk_team_parts and mk_run_team. */

/* The team's grid: tm rows x tn columns of threads. MK_GRID_ROWS: tm the largest
 * divisor of nt that has at least one MR panel of rows each (threads on distinct rows
 * pack distinct A blocks). MK_GRID_SQUARE (BLIS's ic x jr ways): the divisor that makes
 * each thread's part of C most nearly square, so that its share of the B block
 * (KC x NC/tn) is tn times smaller and can stay in its L2 across the ic loop, at the
 * price of tn threads packing the same A block. $MICROKERNEL_TEAM_GRID = rows | square
 * (read once); rows by default. */
enum { MK_GRID_ROWS = 0, MK_GRID_SQUARE = 1 };

static int mk_grid_kind(void)
{
    static int kind = -1;
    if (kind < 0) {
        const char *e = getenv("MICROKERNEL_TEAM_GRID");
        kind = e && !strcmp(e, "square") ? MK_GRID_SQUARE : MK_GRID_ROWS;
    }
    return kind;
}

static void mk_team_grid(int nt, int64_t m, int64_t n, int64_t mr, int64_t nr, int *tm, int *tn)
{
    const int64_t row_panels = (m + mr - 1) / mr, col_panels = (n + nr - 1) / nr;
    int best = 1;
    double best_score = 1e300;
    const int square = mk_grid_kind() == MK_GRID_SQUARE;
    for (int d = 1; d <= nt; ++d) {
        if (nt % d != 0 || d > row_panels)
            continue;
        if (!square) {
            best = d;
            continue;
        }
        if (nt / d > col_panels && d != 1)
            continue;
        /* |log(rows per thread / columns per thread)|, ties to more rows */
        const double r = ((double)m / d) / ((double)n / (nt / d));
        const double score = r >= 1.0 ? r : 1.0 / r;
        if (score <= best_score) {
            best_score = score;
            best = d;
        }
    }
    *tm = best;
    *tn = nt / best;
}

/* ---- the team's flow: dynamic units without a barrier per block ----------------------
 *
 * The default team (a grid of one column, blk->chunks > 0). Its work is a list of
 * items, handed out in order (MK_FLOW_HOME below says how) until none is left:
 *
 *   the pieces of block 0's B;  then for each block t = 0, 1, ..., T - 1 (the KC x NC
 *   blocks in the jc, pc order of the loops):  the pieces of block t + 1's B, then the
 *   units of block t
 *
 * A piece is a share of a block's NR panels (packed into the block's buffer, one of
 * MK_FLOW_BUFS in turn); a unit is a chunk of `chunk` rows (whole MR panels) times one
 * of `parts` parts of the block's panels, taken part-major (the team works through
 * one part of the B block, KC x NC/parts, before the next), whose macro-kernel packs
 * its own rows of A (mk_macro). Each item waits only for what it reads or overwrites,
 * all of it in items taken earlier (spinning, or running a share of what it waits for,
 * MK_FLOW_STEAL):
 *   - a unit of block t for every piece of block t (its B panels), and for the same
 *     unit of block t - 1 when t - 1 is the previous KC block of the same C columns
 *     (the same C tiles, whose KC blocks must add up in order; no unit waits for the
 *     previous NC block's);
 *   - a piece of block t for every unit of block t - MK_FLOW_BUFS, the buffer's last
 *     reader.
 * So no thread waits at a barrier for the tail of a block: a thread without a unit of
 * block t left goes on to the next block's pieces and units, and the next block's
 * packing overlaps the last units of the one before. A unit runs in slivers of its B
 * panels and a piece in single panels, each handed out by the item's own counter, so
 * that a thread that would wait on an item runs the share its owner has not reached
 * (MK_FLOW_STEAL below). Before this (until 2026-12-04)
 * the team packed each block between two barriers. The units and the order of the KC
 * blocks on each C tile are the same on every run whoever takes them, so C is
 * bit-identical from run to run. */
#ifndef MK_FLOW_BUFS
#define MK_FLOW_BUFS 3
#endif
#if MK_FLOW_BUFS < 2
#error "MK_FLOW_BUFS: at least 2 B buffers (3 let a block's packing overlap the tail of the one before the last)"
#endif

/* How the units of a block are handed out. MK_FLOW_HOME 1 (the default since session 59,
 * 2026-12-06): each thread first takes its own units of the block, a contiguous range
 * (units x self / nt up to units x (self + 1) / nt; self is its pool slot or OpenMP
 * thread number), the same ones in every KC block, then any unit still free, from the
 * last (a thread of the call that has not started, or runs slowly, has its units taken
 * that way). So the C tiles a thread adds each KC block to stay in its own L2 instead of
 * moving between cores, and its units, neighbours in the part-major order, mostly read
 * one part of the B block, which its L2 then keeps from one unit to the next where it
 * fits (the parts of n = 1024-2048 at 16 threads). A thread goes on to block t + 1 only
 * when every piece of block t + 1 and every unit of block t has been handed out, so
 * every wait is still on an item handed out earlier. Raced at 16 threads on the lent
 * machines' hosts (bench/results/sapphire-rapids/threads_home/): home units of a stride
 * (u = self, self + nt, ...) against 0, +1.5 [-0.2, +7.5] %, +1.3 [+0.9, +4.9] % and a
 * tie over n = 1024-4096; the ranges against the stride +1.3 [+0.3, +3.5] % and a tie
 * (+0.5 [-0.3, +1.2] %), +1.6 and +1.7 % at 1024 (8 and 9 of 9 rounds), and against 0
 * in the same rounds +0.8 [+0.5, +2.5] % and +0.6 [+0.1, +1.3] %. MK_FLOW_HOME 0:
 * one counter hands out the whole list in its order, whoever comes takes the next item
 * (the flow until then; kept for such races, and tests/test_threads.py checks that both
 * give the same C bit for bit). */
#ifndef MK_FLOW_HOME
#define MK_FLOW_HOME 1
#endif
/* MK_FLOW_HOME_PIECES 1 (the default since session 60; with MK_FLOW_HOME only): thread
 * `self` packs piece `self` of each block first (its panels are about those its home
 * units read, which then come from its own L2, and its write invalidates the copies of
 * the few threads of that part, not of the whole team), and takes the other free pieces
 * of block t + 1 after its own units of block t, instead of taking pieces from one
 * counter in arrival order (0). Every piece of block t + 1 is still handed out before
 * the thread leaves segment t. The flow's timeline (bench/flow_trace.py) showed B's
 * pieces at 4.5-20% of the threads' time at n = 1024 on the lent machines' 16-core
 * hosts. Raced at 16 threads there (`bash bench/device_cpu.sh hpieces`,
 * bench/results/sapphire-rapids/threads_trace/): +3.6 [+0.4, +7.2] % at 1024 (9 of 9
 * rounds), ties at 2048-4096, +1.8 [-1.0, +3.1] % over the four sizes; a second race
 * (session 61, 1024 and 2048) a tie, the counter's pieces -4.0 [-22.1, +17.4] %. */
#ifndef MK_FLOW_HOME_PIECES
#define MK_FLOW_HOME_PIECES 1
#endif

/* MK_FLOW_STEAL 1 (the default since session 61): a unit is run in slivers of
 * MK_FLOW_SLIVER of its B panels, handed out one at a time by the unit's own counter,
 * so that a thread that would otherwise wait (for a unit whose C tiles it adds to next,
 * for the last readers of a buffer it packs into, or at the call's end with nothing
 * left to take) runs the slivers that the unit's owner has not reached yet. Before it,
 * a thread descheduled inside a unit it had taken held every thread that needed that
 * unit, and the call, until the scheduler gave it a core again (the timeline of
 * session 60: 5 of 9 calls at n = 1024 on a busy 16-core host took 2.8-11x the
 * fastest); now the others run the rest of its unit and its other items, and what it
 * holds is the one sliver it is inside, still for as long as it is off its core (the
 * units after it on the same C tiles wait for that sliver). A thief packs the unit's
 * rows of A into its own A block first (the same packing, so C is the same bit for bit
 * whoever runs a sliver). Raced at 16 threads on busy hosts
 * (bench/results/sapphire-rapids/threads_steal/): five ties with the items whole
 * (paused -3.0 [-5.1, +1.1] %, +1.0 [-4.5, +19.1] % and -2.4 [-17.6, +9.9] %, back to
 * back +8.1 and +2.2 % for the whole items), +6.1 [+1.4, +8.7] % at n = 1024 in one
 * race, not repeated. MK_FLOW_STEAL 0: a unit is one sliver and a piece one run of
 * panels, their owner's alone. */
#ifndef MK_FLOW_STEAL
#define MK_FLOW_STEAL 1
#endif
#ifndef MK_FLOW_SLIVER
#define MK_FLOW_SLIVER 2
#endif
#define MK_FLOW_SL_WORDS 8      /* an item's two counters on a 64-byte line of their own */
/* Test builds only (tests/test_threads.py): a thread sleeps, as a descheduled one would,
 * MK_FLOW_STALL_NS after the first sliver of unit 0 of block MK_FLOW_STALL_BLOCK (-1: the
 * last block), MK_FLOW_STALL_DONE_NS inside that unit's last sliver before it counts it,
 * or MK_FLOW_STALL_PIECE_NS after the first panel of block 1's first piece. */
#if defined(MK_FLOW_STALL_NS) || defined(MK_FLOW_STALL_DONE_NS) || defined(MK_FLOW_STALL_PIECE_NS)
#ifndef MK_FLOW_STALL_BLOCK
#define MK_FLOW_STALL_BLOCK 0
#endif
#define MK_FLOW_STALL_AT(fl, t, u) \
    ((u) == 0 && (t) == (MK_FLOW_STALL_BLOCK < 0 ? (fl)->blocks + MK_FLOW_STALL_BLOCK : MK_FLOW_STALL_BLOCK))
static void mk_flow_nap(long long ns)
{
    const struct timespec nap = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    nanosleep(&nap, NULL);
}
#endif

/* Unit u of block t, when finished, writes t into done[t % MK_FLOW_RING][u] (-1
 * before), unless t is the last KC block of its NC block: unit u of block t + 1 (the
 * next NC block's first KC block) does not wait for it, and nothing else reads it. The
 * slot is next written by unit u of block t + MK_FLOW_RING, which runs only after every
 * unit of block t + MK_FLOW_RING - MK_FLOW_BUFS has finished (its B pieces wait for
 * them), the unit of block t + 1 that reads the slot among them. A last KC block's unit
 * is outside that argument: with 3 KC blocks per NC block, unit u of block t + 4 may
 * finish before a descheduled unit u of block t, whose write would then put an older
 * block over it and leave unit u of block t + 5 waiting for ever (it did, until session
 * 61: tests/test_threads.py stalls that write). (A single slot per unit would not do:
 * unit u of the previous NC block could finish last and write an older block over a
 * newer one.) */
#define MK_FLOW_RING (MK_FLOW_BUFS + 1)

typedef struct {
    int64_t next;       /* the next item */
    int64_t *packed;    /* [T] pieces of block t packed */
    int64_t *finished;  /* [T] units of block t finished */
    int64_t *done;      /* [MK_FLOW_RING][units] see above */
    int64_t units;      /* the most units of a block */
    int64_t blocks;     /* T */
    int64_t lead;       /* C's columns before its first MK_C_ALIGN boundary (mk_lead) */
    int64_t *taken;     /* [T] MK_FLOW_HOME: pieces of block t handed out */
    unsigned char *claimed; /* [T][units] MK_FLOW_HOME: unit u of block t handed out */
    unsigned char *pclaimed; /* [T][threads] MK_FLOW_HOME_PIECES: piece p of block t handed out */
    int64_t threads;    /* the team asked for: a block's pieces are at most that many */
    int64_t *sl;        /* [T][units][MK_FLOW_SL_WORDS] a unit's slivers handed out, finished */
    int64_t *ps;        /* [T][threads][MK_FLOW_SL_WORDS] a piece's panels handed out, packed */
} mk_flow;

/* Block t of the flow: its place (jc, nc, w0, pc, kc, kcp) and its item counts. */
typedef struct {
    int64_t jc, nc, w0, npanels, pc, kc, kcp, b_stride, parts, units, pieces;
} mk_flow_block;

static mk_flow_block mk_flow_at(int64_t t, int64_t n, int64_t k, int64_t nc_blk, int64_t kc_blk,
                                int64_t lead, int64_t nr, int64_t row_chunks, int64_t parts,
                                int nt)
{
    mk_flow_block f;
    const int64_t kb = (k + kc_blk - 1) / kc_blk, jb = t / kb;
    const int64_t first = mk_min(lead + nc_blk, n);      /* the first NC block's columns */
    f.jc = jb == 0 ? 0 : first + (jb - 1) * nc_blk;
    f.w0 = jb == 0 ? lead : 0;
    f.nc = jb == 0 ? first : mk_min(nc_blk, n - f.jc);
    f.npanels = (f.w0 > 0) + (f.nc - f.w0 + nr - 1) / nr;
    f.pc = t % kb * kc_blk;
    f.kc = mk_min(kc_blk, k - f.pc);
    f.kcp = MK_KCP(f.kc);
    f.b_stride = mk_team_b_stride(nr, f.kcp);
    f.parts = mk_min(parts, f.npanels);
    f.units = row_chunks * f.parts;
    f.pieces = mk_min(f.npanels, (int64_t)nt);
    return f;
}

static int64_t mk_flow_blocks(int64_t n, int64_t k, int64_t nc_blk, int64_t kc_blk, int64_t lead)
{
    const int64_t first = mk_min(lead + nc_blk, n);
    return (1 + (n - first + nc_blk - 1) / nc_blk) * ((k + kc_blk - 1) / kc_blk);
}

/* MK_FLOW_HOME: whether this thread takes the item whose claimed byte is *p (a plain
 * read first, so that items already taken cost no exclusive cache-line access) */
static inline int mk_flow_claim(unsigned char *p)
{
    return !__atomic_load_n(p, __ATOMIC_RELAXED) && !__atomic_exchange_n(p, 1, __ATOMIC_RELAXED);
}

/* One thread's view of a flow call: the call's operands and shapes, the team's blocking,
 * this thread's A block and edge tile, and the shared state. */
typedef struct {
    const mk_ukernel_desc *uk;
    int64_t m, n, k, nc_blk, kc_blk, nr, chunk, parts, row_chunks;
    MK_TC alpha, beta;
    const MK_SA *a;
    int64_t rs_a, cs_a;
    const MK_SB *b;
    int64_t rs_b, cs_b;
    MK_TC *c;
    int64_t rs_c, cs_c;
    MK_TA *a_pack;
    MK_TB *const *b_bufs;
    MK_TC *edge;
    int nt, self;
    mk_flow *fl;
} mk_flow_ctx;

static mk_flow_block mk_flow_blk(const mk_flow_ctx *x, int64_t t)
{
    return mk_flow_at(t, x->n, x->k, x->nc_blk, x->kc_blk, x->fl->lead, x->nr, x->row_chunks,
                      x->parts, x->nt);
}

/* An item's shares: the B panels j0..j1 it covers (a piece's, a unit's part's), handed
 * out in runs of w (MK_FLOW_STEAL: one panel of a piece, MK_FLOW_SLIVER of a unit; else
 * the whole item), n of them, by its counters ctr[0] (handed out) and ctr[1] (done). */
typedef struct {
    int64_t j0, j1, w, n;
    int64_t *ctr;
} mk_flow_share;

static mk_flow_share mk_flow_shares(int64_t j0, int64_t j1, int64_t w, int64_t *ctr)
{
    const mk_flow_share sh = {j0, j1, w, (j1 - j0 + w - 1) / w, ctr};
    return sh;
}

/* piece p of block tb (described by nb) */
static mk_flow_share mk_flow_piece_shares(const mk_flow_ctx *x, int64_t tb,
                                          const mk_flow_block *nb, int64_t p)
{
    const int64_t j0 = nb->npanels * p / nb->pieces, j1 = nb->npanels * (p + 1) / nb->pieces;
    return mk_flow_shares(j0, j1, MK_FLOW_STEAL ? 1 : j1 - j0,
                          x->fl->ps + (tb * x->fl->threads + p) * MK_FLOW_SL_WORDS);
}

/* unit u of block t (described by cb) */
static mk_flow_share mk_flow_unit_shares(const mk_flow_ctx *x, int64_t t,
                                         const mk_flow_block *cb, int64_t u)
{
    const int64_t part = u / x->row_chunks;
    const int64_t j0 = cb->npanels * part / cb->parts, j1 = cb->npanels * (part + 1) / cb->parts;
    return mk_flow_shares(j0, j1, MK_FLOW_STEAL ? MK_FLOW_SLIVER : j1 - j0,
                          x->fl->sl + (t * x->fl->units + u) * MK_FLOW_SL_WORDS);
}

/* whether the item still has a share to hand out */
static inline int mk_flow_free(const mk_flow_share *sh)
{
    return __atomic_load_n(&sh->ctr[0], __ATOMIC_RELAXED) < sh->n;
}

/* Piece `off` of block tb (described by nb): its share of the block's B panels packed
 * into the block's buffer (mk_flow_panels), once the buffer's last reader, block
 * tb - MK_FLOW_BUFS, is done (while it is not, the thread runs that block's free
 * slivers, mk_flow_help). */
static void mk_flow_piece(mk_flow_ctx *x, int64_t tb, const mk_flow_block *nb, int64_t off);
/* Unit u of block t (described by cb): once its B pieces are packed and its C tiles'
 * previous KC block is added (while they are not, the thread packs free panels of
 * those pieces or runs free slivers of that unit), its slivers until none is left
 * (mk_flow_slivers). */
static void mk_flow_unit(mk_flow_ctx *x, int64_t t, const mk_flow_block *cb, int64_t u,
                         int stolen);

/* The panels of piece `off` of block tb, handed out one at a time (MK_FLOW_STEAL; else
 * all at once) by the piece's counter ctr[0] to its owner and to any thread that would
 * otherwise wait for them (mk_flow_help_pieces); ctr[1] counts those packed, and the
 * thread that packs the last adds the piece to packed[tb]. Returns the panels this
 * thread packed; *t_end (trace builds): when it finished its last, before counting it. */
static int64_t mk_flow_panels(mk_flow_ctx *x, int64_t tb, const mk_flow_block *nb, int64_t off,
                              int64_t *t_end)
{
    const mk_flow_share sh = mk_flow_piece_shares(x, tb, nb, off);
    MK_TB *dst = x->b_bufs[tb % MK_FLOW_BUFS];
    int64_t ran = 0, s;
    while (mk_flow_free(&sh) && (s = __atomic_fetch_add(&sh.ctr[0], 1, __ATOMIC_RELAXED)) < sh.n) {
        for (int64_t jp = sh.j0 + s * sh.w; jp < mk_min(sh.j0 + (s + 1) * sh.w, sh.j1); ++jp)
            mk_pack_b_panel(jp, nb->w0, x->nr, nb->nc, nb->kc, nb->kcp,
                            x->b + nb->pc * x->rs_b + nb->jc * x->cs_b, x->rs_b, x->cs_b,
                            dst + jp * nb->b_stride);
        ++ran;
        MK_TR_MARK(t_end);                      /* before the count others wait on */
        if (__atomic_add_fetch(&sh.ctr[1], 1, __ATOMIC_ACQ_REL) == sh.n)
            __atomic_fetch_add(&x->fl->packed[tb], 1, __ATOMIC_RELEASE);
#ifdef MK_FLOW_STALL_PIECE_NS
        if (tb == 1 && off == 0 && s == 0)
            mk_flow_nap(MK_FLOW_STALL_PIECE_NS);
#endif
    }
    return ran;
}

/* The slivers of unit u of block t: its part's panels p0..p1 in runs of MK_FLOW_SLIVER
 * (MK_FLOW_STEAL; else one run), handed out by the unit's counter ctr[0] to its owner
 * and to any thread that would otherwise wait (mk_flow_help); ctr[1] counts those
 * finished, and the thread that finishes the last marks the unit done. Each thread
 * packs the unit's rows of A into its own A block before its first sliver of the unit
 * (the same packing, so C is the same whoever runs a sliver). Returns the slivers this
 * thread ran; *t_end (trace builds): when it finished its last, before counting it. */
static int64_t mk_flow_slivers(mk_flow_ctx *x, int64_t t, const mk_flow_block *cb, int64_t u,
                               int64_t *t_end)
{
    mk_flow *fl = x->fl;
    const MK_TC one = 1;
    const int64_t ic = u % x->row_chunks * x->chunk;
    const mk_flow_share sh = mk_flow_unit_shares(x, t, cb, u);
    const int64_t p0 = sh.j0, p1 = sh.j1;
    int64_t ran = 0, s;
    while (mk_flow_free(&sh) && (s = __atomic_fetch_add(&sh.ctr[0], 1, __ATOMIC_RELAXED)) < sh.n) {
        const int64_t s0 = p0 + s * sh.w, s1 = mk_min(s0 + sh.w, p1);
        mk_macro(x->uk, mk_min(x->chunk, x->m - ic), cb->kc, cb->kcp, x->alpha,
                 x->a + ic * x->rs_a + cb->pc * x->cs_a, x->rs_a, x->cs_a,
                 x->b_bufs[t % MK_FLOW_BUFS], cb->b_stride, s0, s1, s1 < p1 ? s1 : p0, cb->w0,
                 cb->nc, cb->pc == 0 ? &x->beta : &one, x->c + ic * x->rs_c + cb->jc * x->cs_c,
                 x->rs_c, x->cs_c, x->a_pack, x->edge, ran == 0);
        ++ran;
#ifdef MK_FLOW_STALL_DONE_NS
        if (s == sh.n - 1 && MK_FLOW_STALL_AT(fl, t, u))
            mk_flow_nap(MK_FLOW_STALL_DONE_NS);
#endif
        MK_TR_MARK(t_end);                      /* before the count others wait on */
        /* acq_rel: the last finisher's add reads every earlier one's (their C tiles) */
        if (__atomic_add_fetch(&sh.ctr[1], 1, __ATOMIC_ACQ_REL) == sh.n) {
            if (cb->pc + cb->kc < x->k)         /* the next KC block's unit u reads it */
                __atomic_store_n(&fl->done[t % MK_FLOW_RING * fl->units + u], t, __ATOMIC_RELEASE);
            __atomic_fetch_add(&fl->finished[t], 1, __ATOMIC_RELEASE);
        }
#ifdef MK_FLOW_STALL_NS
        if (s == 0 && MK_FLOW_STALL_AT(fl, t, u))
            mk_flow_nap(MK_FLOW_STALL_NS);
#endif
    }
    return ran;
}

static int64_t mk_flow_help_block(mk_flow_ctx *x, int64_t t, int in_wait);

/* A thread that would wait for block tb's B packs free panels of its pieces
 * (MK_FLOW_STEAL), once the buffer's last readers are done (until then it runs their
 * free slivers). in_wait: called from a wait (the timeline's PANELS event says so).
 * Returns the panels packed or slivers run. */
static int64_t mk_flow_help_pieces(mk_flow_ctx *x, int64_t tb, int in_wait)
{
#if MK_FLOW_STEAL
    mk_flow *fl = x->fl;
    if (tb >= MK_FLOW_BUFS) {
        const mk_flow_block ob = mk_flow_blk(x, tb - MK_FLOW_BUFS);
        if (__atomic_load_n(&fl->finished[tb - MK_FLOW_BUFS], __ATOMIC_ACQUIRE) < ob.units)
            return mk_flow_help_block(x, tb - MK_FLOW_BUFS, in_wait);   /* its readers first */
    }
    const mk_flow_block nb = mk_flow_blk(x, tb);
    for (int64_t p = 0; p < nb.pieces; ++p) {
        const mk_flow_share sh = mk_flow_piece_shares(x, tb, &nb, p);
        if (!mk_flow_free(&sh))
            continue;
        MK_TR_T(h0_);
        int64_t e_ = 0;
        const int64_t ran = mk_flow_panels(x, tb, &nb, p, &e_);
        if (ran) {
            MK_TR_PUT_AT(x->self, MK_TR_PANELS, tb, p + (in_wait ? MK_TR_INWAIT : 0), h0_, h0_, e_);
            return ran;
        }
    }
#else
    (void)x; (void)tb; (void)in_wait;
#endif
    return 0;
}

/* A thread that would wait runs free slivers (MK_FLOW_STEAL): of unit u of block t, or,
 * while that unit still waits for the same unit of the KC block before (the same C
 * tiles), of that one, down the chain; while a unit's B is not packed yet, free panels
 * of its pieces (mk_flow_help_pieces). Only a unit whose B is packed and whose previous
 * KC block is done, the waits its owner makes. in_wait: called from a wait (the
 * timeline's STEAL event says so). Returns the slivers run or panels packed. */
static int64_t mk_flow_help(mk_flow_ctx *x, int64_t t, int64_t u, int in_wait)
{
#if MK_FLOW_STEAL
    mk_flow *fl = x->fl;
    for (; t >= 0; --t) {
        const mk_flow_block cb = mk_flow_blk(x, t);
        if (u >= cb.units)
            return 0;
        const mk_flow_share sh = mk_flow_unit_shares(x, t, &cb, u);
        if (!mk_flow_free(&sh))
            return 0;
        if (__atomic_load_n(&fl->packed[t], __ATOMIC_ACQUIRE) < cb.pieces)
            return mk_flow_help_pieces(x, t, in_wait);
        if (cb.pc > 0 &&
            __atomic_load_n(&fl->done[(t - 1) % MK_FLOW_RING * fl->units + u], __ATOMIC_ACQUIRE) < t - 1)
            continue;                   /* its C tiles' previous KC block first */
        MK_TR_T(h0_);
        int64_t e_ = 0;
        const int64_t ran = mk_flow_slivers(x, t, &cb, u, &e_);
        if (ran)
            MK_TR_PUT_AT(x->self, MK_TR_STEAL, t, u + (in_wait ? MK_TR_INWAIT : 0), h0_, h0_, e_);
        return ran;
    }
#else
    (void)x; (void)t; (void)u; (void)in_wait;
#endif
    return 0;
}

/* mk_flow_help for the first unit of block t that has a free sliver. Returns what that
 * ran (0: none has one, or that one could not start yet). */
static int64_t mk_flow_help_block(mk_flow_ctx *x, int64_t t, int in_wait)
{
#if MK_FLOW_STEAL
    const mk_flow_block cb = mk_flow_blk(x, t);
    for (int64_t u = 0; u < cb.units; ++u) {
        const mk_flow_share sh = mk_flow_unit_shares(x, t, &cb, u);
        if (mk_flow_free(&sh)) {
            const int64_t ran = mk_flow_help(x, t, u, in_wait);
            if (ran)
                return ran;
        }
    }
#else
    (void)x; (void)t; (void)in_wait;
#endif
    return 0;
}

static void mk_flow_piece(mk_flow_ctx *x, int64_t tb, const mk_flow_block *nb, int64_t off)
{
    mk_flow *fl = x->fl;
    MK_TR_T(w0_);
    if (tb >= MK_FLOW_BUFS) {
        const int64_t old = tb - MK_FLOW_BUFS;
        const mk_flow_block ob = mk_flow_blk(x, old);
        for (unsigned spins = 0; __atomic_load_n(&fl->finished[old], __ATOMIC_ACQUIRE) < ob.units; ++spins)
            if (mk_flow_help_block(x, old, 1))
                spins = 0;
            else
                mk_wait_step(spins);   /* its readers may be descheduled on our core */
    }
    MK_TR_T(w1_);
    int64_t e_ = 0;
    mk_flow_panels(x, tb, nb, off, &e_);
    MK_TR_PUT_AT(x->self, MK_TR_PIECE, tb, off, w0_, w1_, e_ ? e_ : w1_);
}

static void mk_flow_unit(mk_flow_ctx *x, int64_t t, const mk_flow_block *cb, int64_t u,
                         int stolen)
{
    mk_flow *fl = x->fl;
    MK_TR_T(w0_);
    for (unsigned spins = 0; __atomic_load_n(&fl->packed[t], __ATOMIC_ACQUIRE) < cb->pieces; ++spins)
        if (mk_flow_help_pieces(x, t, 1))
            spins = 0;
        else
            mk_wait_step(spins);       /* its packers may be descheduled on our core */
    if (cb->pc > 0) {
        const int64_t *d = &fl->done[(t - 1) % MK_FLOW_RING * fl->units + u];
        for (unsigned spins = 0; __atomic_load_n(d, __ATOMIC_ACQUIRE) < t - 1; ++spins)
            if (mk_flow_help(x, t - 1, u, 1))
                spins = 0;
            else
                mk_wait_step(spins);
    }
    MK_TR_T(w1_);
    int64_t e_ = 0;
    mk_flow_slivers(x, t, cb, u, &e_);
    MK_TR_PUT_AT(x->self, MK_TR_UNIT, t, u + (stolen ? MK_TR_STOLEN : 0), w0_, w1_, e_ ? e_ : w1_);
    (void)stolen;
}

static void mk_loops_flow(const mk_ukernel_desc *uk, int64_t m, int64_t n, int64_t k,
                          int64_t nc_blk, int64_t kc_blk, MK_TC alpha,
                          const MK_SA *a, int64_t rs_a, int64_t cs_a,
                          const MK_SB *b, int64_t rs_b, int64_t cs_b, MK_TC beta,
                          MK_TC *c, int64_t rs_c, int64_t cs_c,
                          MK_TA *a_pack, MK_TB *const b_bufs[MK_FLOW_BUFS], MK_TC *edge,
                          int nt, int self, int64_t chunk, int64_t parts, mk_flow *fl)
{
    MK_TR_T(th0_);
    MK_THREAD_SETUP();
    mk_flow_ctx ctx = {uk, m, n, k, nc_blk, kc_blk, MK_TILE_NR(uk), chunk, parts,
                       (m + chunk - 1) / chunk, alpha, beta, a, rs_a, cs_a, b, rs_b, cs_b,
                       c, rs_c, cs_c, a_pack, b_bufs, edge, nt, self, fl};
    mk_flow_ctx *x = &ctx;
    const int64_t T = fl->blocks;
#if MK_FLOW_HOME
    for (int64_t t = -1; t < T; ++t) {
        /* segment t: the pieces of block t + 1, then the units of block t */
#if MK_FLOW_HOME_PIECES
        /* piece `self` of block t + 1 first (its panels are about those of this thread's
         * home units), the others after this thread's own units of block t */
        const mk_flow_block nxt = mk_flow_blk(x, t + 1 < T ? t + 1 : t);
        unsigned char *pcl = fl->pclaimed + (t + 1) * fl->threads;
        if (t + 1 < T && self < nxt.pieces && mk_flow_claim(&pcl[self]))
            mk_flow_piece(x, t + 1, &nxt, (int64_t)self);
#define MK_FLOW_OTHER_PIECES()                                                                  \
        for (int64_t p = 0; t + 1 < T && p < nxt.pieces; ++p)                                   \
            if (mk_flow_claim(&pcl[p]))                                                         \
                mk_flow_piece(x, t + 1, &nxt, p);
        if (t < 0) {
            MK_FLOW_OTHER_PIECES();
            continue;
        }
#else
        if (t + 1 < T) {
            const mk_flow_block nxt = mk_flow_blk(x, t + 1);
            for (int64_t off; (off = __atomic_fetch_add(&fl->taken[t + 1], 1, __ATOMIC_RELAXED)) < nxt.pieces;)
                mk_flow_piece(x, t + 1, &nxt, off);
        }
        if (t < 0)
            continue;
#endif
        const mk_flow_block cur = mk_flow_blk(x, t);
        unsigned char *cl = fl->claimed + t * fl->units;
        /* this thread's own units: a contiguous range, mostly of one part of the B block */
        for (int64_t u = cur.units * self / nt; u < cur.units * (self + 1) / nt; ++u)
            if (mk_flow_claim(&cl[u]))
                mk_flow_unit(x, t, &cur, u, 0);
#if MK_FLOW_HOME_PIECES
        MK_FLOW_OTHER_PIECES();
#undef MK_FLOW_OTHER_PIECES
#endif
        for (int64_t u = cur.units - 1; u >= 0; --u)          /* then any still free */
            if (mk_flow_claim(&cl[u]))
                mk_flow_unit(x, t, &cur, u, 1);
    }
#else
    /* this thread's place in the list: segment t (-1: block 0's pieces) starts at item
     * base; cur is block t, nxt block t + 1 (pieces 0 past the last block) */
    int64_t t = -1, base = 0;
    mk_flow_block cur = mk_flow_blk(x, 0), nxt = cur;
    int64_t seg = nxt.pieces;
    for (;;) {
        const int64_t item = __atomic_fetch_add(&fl->next, 1, __ATOMIC_RELAXED);
        while (item >= base + seg && t < T) {      /* items only grow: move forward */
            base += seg;
            ++t;
            if (t == T)
                break;
            cur = nxt;
            if (t + 1 < T)
                nxt = mk_flow_blk(x, t + 1);
            else
                nxt.pieces = 0;
            seg = nxt.pieces + cur.units;
        }
        if (t == T)
            break;
        const int64_t off = item - base;
        if (off < nxt.pieces)                       /* a piece of block t + 1's B */
            mk_flow_piece(x, t + 1, &nxt, off);
        else                                        /* a unit of block t */
            mk_flow_unit(x, t, &cur, off - nxt.pieces, 0);
    }
#endif
#if MK_FLOW_STEAL
    /* every item handed out: the free slivers of units still running (the call's tail,
     * or a thread descheduled inside its unit), until none is left */
    for (int64_t lo = 0, ran = 1; ran;) {
        ran = 0;
        for (int64_t tb = lo; tb < T; ++tb) {
            const mk_flow_block ob = mk_flow_blk(x, tb);
            if (__atomic_load_n(&fl->finished[tb], __ATOMIC_RELAXED) >= ob.units) {
                if (tb == lo)
                    ++lo;                   /* blocks before lo are all finished */
                continue;
            }
            for (int64_t u = 0; u < ob.units; ++u)
                ran += mk_flow_help(x, tb, u, 0);
        }
    }
#endif
    MK_PREFETCH_B(NULL, 0);
    MK_THREAD_TEARDOWN();
    MK_TR_PUT(self, MK_TR_THREAD, 0, nt, th0_, 0);
}

/* The flow's arguments, for the pool's threads (mk_pool_run): slot s takes the s-th
 * per-thread share of the workspace after the B buffers (its A block, its edge tile). */
typedef struct {
    mk_call g;
    char *per_ws;
    size_t per_thread, a_bytes;
    MK_TB *const *b_bufs;
    int nt;
    int64_t chunk, parts;
    mk_flow *fl;
} mk_flow_job;

#if MK_HAVE_POOL
static void mk_flow_job_run(void *arg, int slot)
{
    const mk_flow_job *j = (const mk_flow_job *)arg;
    char *mine = j->per_ws + j->per_thread * (size_t)slot;
    const mk_call *g = &j->g;
    mk_loops_flow(g->uk, g->m, g->n, g->k, g->nc_blk, g->kc_blk, g->alpha, g->a, g->rs_a, g->cs_a,
                  g->b, g->rs_b, g->cs_b, g->beta, g->c, g->rs_c, g->cs_c, (MK_TA *)mine, j->b_bufs,
                  (MK_TC *)(mine + j->a_bytes), j->nt, slot, j->chunk, j->parts, j->fl);
}
#endif


/* The parts of a B block when mk_blocking.parts is 0 (the default): the fewest, up to
 * MK_TEAM_PARTS_MAX, whose units still get MC rows each (a unit of p parts has about
 * panels x p / ways MR panels of rows, `ways` units of a block's rows being asked for).
 * Fewer parts pack each row of A fewer times (every part's unit packs its own rows)
 * and read more B panels per A block packed; fewer rows than MC shorten the ir loop
 * over each B micro-panel. On the calm Sapphire Rapids host at 16 threads (session
 * 55's race, docs/design-notes.md, threads) units of 88 rows (MC) beat units of 32-64
 * rows by 1-13% at every size, and at 88 rows whole rows beat quarter rows by 8% at
 * 4096, where one part already gives them MC rows. mc_panels: MC / MR; the rows
 * are those of mk_run_team's `chunk`. */
static int64_t mk_team_parts(int64_t panels, int64_t ways, int64_t mc_panels)
{
    int64_t p = 1;
    while (p < MK_TEAM_PARTS_MAX && (panels * p + ways - 1) / ways < mc_panels)
        ++p;
    return p;
}

/* The shared-B team's call (nthreads > 1): B blocks for all (MK_FLOW_BUFS of them in
 * turn for the flow of dynamic units, one for fixed shares), A and the edge buffer per
 * thread; the flow on the pool's threads when the pool is free, else OpenMP's team.
 * Returns MK_OK or MK_ENOMEM. */
static int mk_run_team(const mk_call *g, const mk_blocking *blk, int nthreads)
{
    MK_TR_T(call0_);
    const mk_ukernel_desc *uk = g->uk;
    const int64_t m = g->m, n = g->n, k = g->k, mc_blk = g->mc_blk, nc_blk = g->nc_blk,
                  kc_blk = g->kc_blk, mr = uk->mr, nr = uk->nr;
    int tm, tn;
    mk_team_grid(nthreads, m, n, mr, nr, &tm, &tn);
    const int64_t chunks = blk->chunks;  /* > 0: dynamic units; 0: fixed shares */
    const int flow = chunks > 0 && tn == 1;
    const int64_t max_panels = (nc_blk + (MK_C_ALIGN > 0 ? nr : 0) + nr - 1) / nr + 1;
    const int64_t kcp_max = MK_KCP(kc_blk);
    const size_t b_shared = (size_t)mk_round_up(
        max_panels * mk_team_b_stride(nr, kcp_max) * (int64_t)sizeof(MK_TB), 64);
    const size_t b_total = b_shared * (flow ? MK_FLOW_BUFS : 1);
    const size_t a_bytes = (size_t)mk_round_up(
        (mc_blk * kcp_max + MK_PACK_SLACK) * (int64_t)sizeof(MK_TA), 64);
    const size_t edge_bytes = (size_t)mk_round_up(mr * nr * (int64_t)sizeof(MK_TC), 64);
    const size_t per_thread = a_bytes + edge_bytes;
    char *ws = (char *)mk_ws_get(b_total + per_thread * (size_t)nthreads);
    if (!ws)
        return MK_ENOMEM;
    /* dynamic units: about `chunks` per thread, each whole MR panels of rows times
     * one of `parts` parts of the block's columns; more units per thread than row
     * panels, or more parts than a block has panels (mk_flow_at takes min(parts,
     * its panels)), mean nothing (and would overflow the products below) */
    const int64_t panels = (m + mr - 1) / mr;
    const int64_t ways = (int64_t)nthreads * mk_min(chunks > 0 ? chunks : 1, panels);
    const int64_t want = blk->parts > 0 ? blk->parts : mk_team_parts(panels, ways, mc_blk / mr);
    const int64_t parts = mk_min(want, (mk_min(n, nc_blk) + nr - 1) / nr + (MK_C_ALIGN > 0));
    const int64_t chunk = mk_min(mc_blk, (panels * parts + ways - 1) / ways * mr);
    mk_flow fl = {0, NULL, NULL, NULL, 0, 0, 0, NULL, NULL, NULL, 0, NULL, NULL};
    int64_t *counts = NULL;
    if (flow) {
        fl.lead = mk_lead(g->c, g->rs_c, g->cs_c, n, nr);
        fl.blocks = mk_flow_blocks(n, k, nc_blk, kc_blk, fl.lead);
        const int64_t T = fl.blocks;
        fl.units = (m + chunk - 1) / chunk * parts;
        /* packed, finished, done; with MK_FLOW_HOME taken and the claimed bytes after,
         * then the pieces' claimed bytes; then, from the next 64-byte line, the units'
         * sliver counters (sl) and the pieces' panel counters (ps) */
        const size_t words = (size_t)(2 * T + MK_FLOW_RING * fl.units) +
                             (MK_FLOW_HOME ? (size_t)T + ((size_t)(T * fl.units) + 7) / 8 +
                                                 ((size_t)(T * nthreads) + 7) / 8 : 0);
        const size_t sl_words = (size_t)(T * (fl.units + nthreads)) * MK_FLOW_SL_WORDS;
        counts = (int64_t *)calloc(words + MK_FLOW_SL_WORDS + sl_words, sizeof *counts);
        if (!counts)
            return MK_ENOMEM;
        fl.packed = counts;
        fl.finished = counts + T;
        fl.done = counts + 2 * T;
        if (MK_FLOW_HOME) {
            fl.taken = counts + 2 * T + MK_FLOW_RING * fl.units;
            fl.claimed = (unsigned char *)(fl.taken + T);
            fl.pclaimed = fl.claimed + ((size_t)(T * fl.units) + 7) / 8 * 8;
        }
        fl.sl = (int64_t *)(((uintptr_t)(counts + words) + 63) & ~(uintptr_t)63);
        fl.ps = fl.sl + (size_t)(T * fl.units) * MK_FLOW_SL_WORDS;
        fl.threads = nthreads;
        for (int64_t u = 0; u < MK_FLOW_RING * fl.units; ++u)
            fl.done[u] = -1;
    }
    MK_TB *b_bufs[MK_FLOW_BUFS];
    for (int i = 0; i < MK_FLOW_BUFS; ++i)
        b_bufs[i] = (MK_TB *)(ws + b_shared * (size_t)(flow ? i : 0));
    int pooled = -1;
    MK_TR_T(call1_);
#if MK_HAVE_POOL
    if (flow) {                 /* the flow on our own threads (mk_pool.h says why) */
        const mk_flow_job job = {*g, ws + b_total, per_thread, a_bytes, b_bufs, nthreads, chunk,
                                 parts, &fl};
        pooled = mk_pool_run(mk_flow_job_run, (void *)&job, nthreads);
    }
#endif
    if (pooled != 0)            /* -1: OpenMP's team (the pool is off, busy or absent) */
#pragma omp parallel num_threads(nthreads)
    {
#ifdef _OPENMP
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
        const int t = 0, nt = 1;
#endif
        char *mine = ws + b_total + per_thread * (size_t)t;
        if (flow) {
            mk_loops_flow(uk, m, n, k, nc_blk, kc_blk, g->alpha, g->a, g->rs_a, g->cs_a, g->b,
                          g->rs_b, g->cs_b, g->beta, g->c, g->rs_c, g->cs_c, (MK_TA *)mine, b_bufs,
                          (MK_TC *)(mine + a_bytes), nt, t, chunk, parts, &fl);
        } else {
            /* a team smaller than asked (OMP_THREAD_LIMIT, nesting) gets its own grid */
            int gtm = tm, gtn = tn;
            if (nt != nthreads)
                mk_team_grid(nt, m, n, mr, nr, &gtm, &gtn);
            const mk_team_pos tp = {t, nt, t / gtn, gtm, t % gtn, gtn};
            mk_loops(uk, m, n, k, mc_blk, nc_blk, kc_blk, g->alpha, g->a, g->rs_a, g->cs_a, g->b,
                     g->rs_b, g->cs_b, g->beta, g->c, g->rs_c, g->cs_c, (MK_TA *)mine, b_bufs[0],
                     (MK_TC *)(mine + a_bytes), &tp);
        }
    }
    if (flow)
        MK_TR_CALL_END(call0_, call1_, fl.blocks, fl.units);
    free(counts);
    return MK_OK;
}
