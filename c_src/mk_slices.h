/* The slice decomposition (by default one thread, or two on C of fewer than 256 rows:
 * driver.c, mk_threading).
 * Part of the one GEMM driver, included by driver.c only, in its order (not a header
 * of its own).
 * Uses: mk_call, mk_loops, mk_loops_slab, mk_slab_bytes, mk_alone (mk_loops.h),
 * mk_ws_get (mk_workspace.h), mk_pool_run (mk_pool.h). Gives mk_run_slices. */

/* A slice job: slice i of `slices` is units [units * i / slices, units * (i + 1) /
 * slices) of whole NR panels of N (split_n) or MR panels of M. */
typedef struct {
    mk_call g;
    char *ws;                       /* per thread: its A block, B block, edge tile, A slab */
    size_t per_thread, a_bytes, b_bytes, edge_bytes;
    int64_t units, slices, next;    /* next: the next slice to take */
    int split_n;
    int slab;                       /* a slice over two NC blocks or more: mk_loops_slab */
} mk_slices_job;

/* The most bytes of one thread's A slab (mk_loops_slab: a KC block's rows of A packed
 * once for all the NC blocks); a larger one, or 0 here, and the thread packs each A
 * block once per NC block (mk_loops). 16 MiB: m up to about 15,000 rows at KC = 272
 * (fp32); not tuned. */
#ifndef MK_A_SLAB_MAX
#define MK_A_SLAB_MAX (16 << 20)
#endif

/* Take slices from the job's counter until none is left, each run by the serial loops
 * on the buffers of `slot` (an OpenMP thread number or the pool's slot). Any subset of
 * the threads finishes them (the pool returns when those that joined have left), and
 * each slice's C is the same whoever takes it. */
static void mk_slices_take(void *arg, int slot)
{
    mk_slices_job *j = (mk_slices_job *)arg;
    const mk_call *g = &j->g;
    const int64_t mr = MK_TILE_MR(g->uk), nr = MK_TILE_NR(g->uk);
    char *mine = j->ws + j->per_thread * (size_t)slot;
    MK_TA *a_pack = (MK_TA *)mine;
    MK_TB *b_pack = (MK_TB *)(mine + j->a_bytes);
    MK_TC *edge = (MK_TC *)(mine + j->a_bytes + j->b_bytes);
    MK_TA *slab = (MK_TA *)(mine + j->a_bytes + j->b_bytes + j->edge_bytes);
    for (int64_t i; (i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < j->slices;) {
        const int64_t lo = j->units * i / j->slices, hi = j->units * (i + 1) / j->slices;
        int64_t i0 = 0, i1 = g->m, j0 = 0, j1 = g->n;
        if (j->split_n) {
            j0 = lo * nr;
            j1 = mk_min(g->n, hi * nr);
        } else {
            i0 = lo * mr;
            i1 = mk_min(g->m, hi * mr);
        }
        if (i1 <= i0 || j1 <= j0)
            continue;
        if (j->slab && j1 - j0 > g->nc_blk)
            mk_loops_slab(g->uk, i1 - i0, j1 - j0, g->k, g->mc_blk, g->nc_blk, g->kc_blk, g->alpha,
                          g->a + i0 * g->rs_a, g->rs_a, g->cs_a, g->b + j0 * g->cs_b, g->rs_b,
                          g->cs_b, g->beta, g->c + i0 * g->rs_c + j0 * g->cs_c, g->rs_c, g->cs_c,
                          slab, b_pack, edge);
        else
            mk_loops(g->uk, i1 - i0, j1 - j0, g->k, g->mc_blk, g->nc_blk, g->kc_blk, g->alpha,
                     g->a + i0 * g->rs_a, g->rs_a, g->cs_a, g->b + j0 * g->cs_b, g->rs_b, g->cs_b,
                     g->beta, g->c + i0 * g->rs_c + j0 * g->cs_c, g->rs_c, g->cs_c, a_pack, b_pack,
                     edge, &mk_alone);
    }
}

/* The slice decomposition's call (BLIS's JC/IC ways; one thread, or two on few rows):
 * one contiguous slice of N (in whole NR panels), or of M when N is too narrow, per
 * thread, each run by the serial loops with its own packing buffers: no barrier inside
 * the GEMM. The slices are taken from a counter (mk_slices_take) on the pool's threads
 * (mk_pool.h), so a thread that another runtime's spinner keeps off its core holds no
 * slice: the threads that did join take its slice. Without the pool, OpenMP's team
 * takes them. Returns MK_OK or MK_ENOMEM. */
static int mk_run_slices(const mk_call *g, int nthreads)
{
    const int64_t m = g->m, n = g->n, mc_blk = g->mc_blk, nc_blk = g->nc_blk,
                  kc_blk = g->kc_blk, mr = g->uk->mr, nr = g->uk->nr;
    int split_n = 1;
    int64_t units = (n + nr - 1) / nr;
    if (units < nthreads && (m + mr - 1) / mr > units) {
        split_n = 0;
        units = (m + mr - 1) / mr;
    }
    if (nthreads > units)
        nthreads = (int)units;
    /* each packed block (bytes) is followed by the packing's slack, rounded to keep
     * 64-byte alignment; MK_C_ALIGN's narrow first panel takes one more panel of B */
    const int64_t kcp_blk = MK_KCP(kc_blk);      /* kc_blk, and the trailer of MK_B_COLSUM */
    const size_t a_bytes = (size_t)mk_round_up(
        (mc_blk * kcp_blk + MK_PACK_SLACK) * (int64_t)sizeof(MK_TA), 64);
    const size_t b_bytes = (size_t)mk_round_up(
        (kcp_blk * (nc_blk + (MK_C_ALIGN > 0 ? nr : 0)) + MK_PACK_SLACK) * (int64_t)sizeof(MK_TB), 64);
    const size_t edge_bytes = (size_t)mk_round_up(mr * nr * (int64_t)sizeof(MK_TC), 64);
    /* the A slab, where the widest slice spans two NC blocks or more */
    const int64_t per_slice = (units + nthreads - 1) / nthreads;
    const int64_t slice_n = split_n ? mk_min(n, per_slice * nr) : n;
    const int64_t slice_m = split_n ? m : mk_min(m, per_slice * mr);
    const size_t slab_bytes = slice_n > nc_blk ? mk_slab_bytes(slice_m, mr, kc_blk) : 0;
    const int slab = slab_bytes > 0 && slab_bytes <= (size_t)(MK_A_SLAB_MAX);
    const size_t per_thread = a_bytes + b_bytes + edge_bytes + (slab ? slab_bytes : 0);
    char *ws = (char *)mk_ws_get(per_thread * (size_t)nthreads);
    if (!ws)
        return MK_ENOMEM;
    mk_slices_job job = {*g, ws, per_thread, a_bytes, b_bytes, edge_bytes, units, nthreads, 0,
                         split_n, slab};
    int pooled = -1;
#if MK_HAVE_POOL
    pooled = mk_pool_run(mk_slices_take, (void *)&job, nthreads);  /* -1 for one thread */
#endif
    if (pooled != 0)
#pragma omp parallel num_threads(nthreads) if (nthreads > 1)
    {
#ifdef _OPENMP
        mk_slices_take(&job, omp_get_thread_num());
#else
        mk_slices_take(&job, 0);
#endif
    }
    return MK_OK;
}
