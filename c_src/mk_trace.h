/* mk_trace.h: a timeline of the team's flow (mk_team.h), for bench/flow_trace.py.
 * Part of the one GEMM driver, included by driver.c only, before mk_team.h.
 * Gives MK_TR_T (declare a time, taken now), MK_TR_PUT (an event ending now),
 * MK_TR_MARK / MK_TR_PUT_AT (an event ending at a time taken earlier: a shared item's
 * share ends before its count is published, so that a waiter's start is never before
 * the end it waited for) and MK_TR_CALL_END (the call's event, then the file).
 *
 * Off by default: every macro is then empty and the driver is the same code. A module
 * built with MK_FLOW_TRACE defined ahead of the driver (a kernel variant, e.g.
 * `get_kernel(name, source=F)` where F starts with `#define MK_FLOW_TRACE 1`) records,
 * in each team call, one event per flow item and per thread, with CLOCK_MONOTONIC
 * times in nanoseconds, and at the call's end appends them to the file named by
 * $MICROKERNEL_FLOW_TRACE (read at each call; nothing is written when it is unset or
 * cannot be opened). Each event is 40 bytes, native byte order:
 *
 *   int32 call   the module's team call number (0, 1, ...)
 *   int16 slot   the thread's pool slot or OpenMP thread number (-1: the caller's call event)
 *   int16 kind   MK_TR_PIECE (a piece of B taken and its panels packed by its owner),
 *                MK_TR_UNIT (a unit taken and its slivers run by its owner),
 *                MK_TR_STEAL (slivers of a unit run by another thread, MK_FLOW_STEAL),
 *                MK_TR_PANELS (panels of a piece packed by another thread),
 *                MK_TR_THREAD (a thread's time in mk_loops_flow), MK_TR_CALL (the call)
 *   int32 block  the item's KC x NC block t (THREAD: 0; CALL: the blocks T)
 *   int32 index  the piece's or unit's number in the block (UNIT: + MK_TR_STOLEN when
 *                the unit is not in the thread's home range; STEAL / PANELS: + MK_TR_INWAIT when
 *                run inside a wait of a PIECE or UNIT of the same thread, whose t0..t1
 *                then holds it; THREAD: the team's threads; CALL: the units of a block)
 *   int64 t0, t1, t2  PIECE / UNIT: before its waits, after them, when its owner's
 *                last share was done, taken before that share was counted (a unit or
 *                piece of which others ran a share may end before they do; t2 == t1:
 *                others ran all of it); STEAL / PANELS: its start twice, its end (taken
 *                the same way); THREAD: its entry, 0, its exit; CALL: mk_run_team's
 *                entry, the threads' start (pool or OpenMP), its return
 *
 * Times come from clock_gettime (vDSO, tens of nanoseconds), against items of tens of
 * microseconds or more. At most MK_TR_MAX events are kept per call; past that they are
 * dropped and the CALL event's slot is -2. One buffer per module: two team calls at once
 * (two Python threads) mix their events. A diagnostic build, never a default. */
#ifdef MK_FLOW_TRACE
#include <stdio.h>
#include <time.h>

enum { MK_TR_PIECE = 0, MK_TR_UNIT = 1, MK_TR_THREAD = 2, MK_TR_CALL = 3, MK_TR_STEAL = 4,
       MK_TR_PANELS = 5 };
#define MK_TR_STOLEN (1 << 30)
#define MK_TR_INWAIT (1 << 29)
#ifndef MK_TR_MAX
#define MK_TR_MAX 65536
#endif

typedef struct {
    int32_t call;
    int16_t slot, kind;
    int32_t block, index;
    int64_t t0, t1, t2;
} mk_tr_event;

static mk_tr_event mk_tr_buf[MK_TR_MAX + 1];      /* the last one for the CALL event */
static int64_t mk_tr_len, mk_tr_dropped;
static int32_t mk_tr_calls;

static int64_t mk_tr_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void mk_tr_put(int slot, int kind, int64_t block, int64_t index, int64_t t0, int64_t t1,
                      int64_t t2)
{
    const int64_t i = __atomic_fetch_add(&mk_tr_len, 1, __ATOMIC_RELAXED);
    if (i >= MK_TR_MAX) {
        __atomic_fetch_add(&mk_tr_dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    const mk_tr_event e = {mk_tr_calls, (int16_t)slot, (int16_t)kind, (int32_t)block,
                           (int32_t)index, t0, t1, t2};
    mk_tr_buf[i] = e;
}

/* the call's end (the caller alone, after the team has left): its event, after the
 * items' (always written, a slot of its own), then the file */
static void mk_tr_flush(int64_t t0, int64_t t1, int64_t blocks, int64_t units)
{
    const int64_t n = mk_tr_len < MK_TR_MAX ? mk_tr_len : MK_TR_MAX;
    const mk_tr_event e = {mk_tr_calls, (int16_t)(mk_tr_dropped ? -2 : -1), MK_TR_CALL,
                           (int32_t)blocks, (int32_t)units, t0, t1, mk_tr_now()};
    mk_tr_buf[n] = e;
    const char *path = getenv("MICROKERNEL_FLOW_TRACE");
    FILE *f = path && *path ? fopen(path, "ab") : NULL;
    if (f) {
        fwrite(mk_tr_buf, sizeof mk_tr_buf[0], (size_t)n + 1, f);
        fclose(f);
    }
    mk_tr_len = 0;
    mk_tr_dropped = 0;
    ++mk_tr_calls;
}

#define MK_TR_CALL_END(t0, t1, blocks, units) mk_tr_flush(t0, t1, blocks, units)
#define MK_TR_T(v) int64_t v = mk_tr_now()
#define MK_TR_PUT(slot, kind, block, index, t0, t1) \
    mk_tr_put(slot, kind, block, index, t0, t1, mk_tr_now())
/* an event whose end was taken earlier (MK_TR_MARK(&v) stores the time in v) */
#define MK_TR_PUT_AT(slot, kind, block, index, t0, t1, t2) \
    mk_tr_put(slot, kind, block, index, t0, t1, t2)
#define MK_TR_MARK(p) (*(p) = mk_tr_now())
#else
#define MK_TR_CALL_END(t0, t1, blocks, units) ((void)0)
#define MK_TR_T(v) ((void)0)
#define MK_TR_PUT(slot, kind, block, index, t0, t1) ((void)0)
#define MK_TR_PUT_AT(slot, kind, block, index, t0, t1, t2) ((void)0)
#define MK_TR_MARK(p) ((void)(p))
#endif
