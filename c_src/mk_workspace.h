/* The per-calling-thread workspace that holds the packed panels (driver.c).
 * Part of the one GEMM driver, included by driver.c only, in its order (not a header
 * of its own).
 * Uses: pthread keys; MK_WORKSPACE_BYTES_NAME (driver.c). Gives mk_ws_get. */

typedef struct {
    void *buf;
    size_t bytes;
} mk_workspace;

static pthread_key_t mk_ws_key;
static pthread_once_t mk_ws_once = PTHREAD_ONCE_INIT;

static void mk_ws_destroy(void *p)
{
    mk_workspace *ws = (mk_workspace *)p;
    if (ws) {
        free(ws->buf);
        free(ws);
    }
}

static void mk_ws_key_init(void) { pthread_key_create(&mk_ws_key, mk_ws_destroy); }

/* From MK_WS_HUGE_MIN bytes (0: never) the workspace is 2 MiB-aligned, a whole number
 * of 2 MiB, and asks Linux for transparent huge pages (madvise MADV_HUGEPAGE, which
 * the "madvise" setting of /sys/kernel/mm/transparent_hugepage requires): the packed
 * panels that the micro-kernel streams then take a TLB entry per 2 MiB, not per 4 KiB
 * (an AMX call streams a new 4 KiB page of A or B every 32 cycles). */
#ifndef MK_WS_HUGE_MIN
#define MK_WS_HUGE_MIN ((size_t)4 << 20)
#endif
static void *mk_ws_alloc(size_t *bytes)
{
#if defined(MADV_HUGEPAGE)
    const size_t huge = (size_t)2 << 20;
    if (MK_WS_HUGE_MIN > 0 && *bytes >= (size_t)MK_WS_HUGE_MIN) {
        *bytes = (*bytes + huge - 1) / huge * huge;
        void *p = aligned_alloc(huge, *bytes);
        if (p)
            (void)madvise(p, *bytes, MADV_HUGEPAGE);   /* advice: no error is fatal */
        return p;
    }
#endif
    return aligned_alloc(64, *bytes);
}

/* A 64-byte-aligned buffer of at least `bytes` bytes, reused across calls. */
static void *mk_ws_get(size_t need)
{
    pthread_once(&mk_ws_once, mk_ws_key_init);
    mk_workspace *ws = (mk_workspace *)pthread_getspecific(mk_ws_key);
    if (!ws) {
        ws = (mk_workspace *)calloc(1, sizeof *ws);
        if (!ws || pthread_setspecific(mk_ws_key, ws) != 0) {
            free(ws);
            return NULL;
        }
    }
    size_t bytes = (need + 63) & ~(size_t)63;
    if (bytes > ws->bytes) {
        free(ws->buf);
        ws->buf = mk_ws_alloc(&bytes);
        ws->bytes = ws->buf ? bytes : 0;
    }
    return ws->buf;
}

/* Bytes held by the calling thread's packing workspace (0 before the first call). */
int64_t MK_WORKSPACE_BYTES_NAME(void)
{
    pthread_once(&mk_ws_once, mk_ws_key_init);
    mk_workspace *ws = (mk_workspace *)pthread_getspecific(mk_ws_key);
    return ws ? (int64_t)ws->bytes : 0;
}
