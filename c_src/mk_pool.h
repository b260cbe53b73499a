/* mk_pool.h: the threads of the team's flow (driver.c, mk_loops_flow), a pool of our
 * own beside OpenMP's. Included by driver.c, so each kernel module has its own pool.
 *
 * Why not OpenMP's team: an OpenMP parallel region ends when the last of its threads
 * arrives, and a thread whose core another runtime's spinning worker holds (OpenBLAS's
 * workers spin 2^28 TSC cycles after each call, libgomp's GOMP_SPINCOUNT iterations)
 * may not run for a whole scheduler slice, milliseconds: the call waits for a thread
 * that has no work left to do. The flow needs no particular thread: its items come
 * from one counter, and any subset of the team, down to the caller alone, finishes
 * them (every wait is on an item taken earlier). So here a job is done when every
 * thread that *joined* it has left, and a thread that wakes too late finds the job
 * closed and goes back to sleep without touching it.
 *
 * The protocol (one job at a time per pool; a caller that finds the pool busy, e.g. a
 * second Python thread, gets -1 and the driver falls back to OpenMP):
 *   - the caller writes the job (fn, arg, slots = threads - 1), opens it (state =
 *     gen << 32: open, no one joined), bumps the futex word gen and wakes the sleepers;
 *   - a worker that sees a new gen joins by a CAS on state that succeeds only while
 *     the job is that gen's, open, and has a free slot (joined < slots; joined and
 *     inside + 1); it runs fn(arg, slot), slot = 1 + joined before it, so 1..threads
 *     - 1, each once (the caller is slot 0), and leaves (inside - 1);
 *   - the caller runs fn(arg, 0), closes the job (bit 31), and waits until inside is
 *     0, every worker that joined has left: the flow's last items are then finished.
 * The job's fields are rewritten only after it is closed and empty, and a worker's
 * CAS succeeds only on an open state of the gen it read them under, so a worker never
 * runs a job with another job's fields.
 *
 * An idle worker spins MK_POOL_SPIN_US microseconds (a back-to-back call finds it
 * awake), then sleeps on the futex word; after MK_POOL_IDLE_S seconds asleep it exits
 * (a process that loads many kernel modules keeps no threads for those it stopped
 * using). Workers block all signals. A forked child starts with no workers.
 * Linux only (futex(2)); elsewhere, or in a module that defines MK_NO_POOL, the driver
 * runs the flow on OpenMP's team as before 2026-12-04, and so it does in a process
 * started with $MICROKERNEL_POOL=0 (read once). */
#if defined(__linux__) && !defined(MK_NO_POOL)
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#define MK_HAVE_POOL 1
#ifndef MK_POOL_SPIN_US
#define MK_POOL_SPIN_US 100
#endif
#ifndef MK_POOL_IDLE_S
#define MK_POOL_IDLE_S 2
#endif
#define MK_FUTEX_WAIT_PRIVATE 128       /* FUTEX_WAIT | FUTEX_PRIVATE_FLAG (futex(2)) */
#define MK_FUTEX_WAKE_PRIVATE 129
#define MK_POOL_CLOSED ((uint64_t)1 << 31)
#define MK_POOL_IN ((uint64_t)1 << 16)                    /* one worker inside */
#define MK_POOL_JOINED(s) ((int)((s) & 0xffffu))            /* slots handed out */
#define MK_POOL_INSIDE(s) ((int)(((s) >> 16) & 0x7fffu))    /* joiners not yet left */

typedef void (*mk_pool_fn)(void *arg, int slot);

static struct {
    pthread_mutex_t lock;   /* the caller's for a whole job; a worker's to exit */
    pid_t pid;              /* the process the workers belong to */
    int workers;            /* alive (under lock) */
    uint32_t gen;           /* futex word: the latest job's generation */
    uint32_t sleepers;      /* workers in futex_wait or about to be */
    uint64_t state;         /* gen << 32 | MK_POOL_CLOSED | inside << 16 | joined */
    mk_pool_fn fn;          /* the job (atomics: read by workers, see above) */
    void *arg;
    int slots;
} mk_pool = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, MK_POOL_CLOSED, NULL, NULL, 0};

static double mk_pool_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void mk_pool_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* Join job gen if it is open with a free slot: run it, leave. */
static void mk_pool_join(uint32_t gen)
{
    uint64_t s = __atomic_load_n(&mk_pool.state, __ATOMIC_ACQUIRE);
    for (;;) {
        if ((uint32_t)(s >> 32) != gen || (s & MK_POOL_CLOSED))
            return;
        const mk_pool_fn fn = __atomic_load_n(&mk_pool.fn, __ATOMIC_RELAXED);
        void *const arg = __atomic_load_n(&mk_pool.arg, __ATOMIC_RELAXED);
        const int slots = __atomic_load_n(&mk_pool.slots, __ATOMIC_RELAXED);
        if (MK_POOL_JOINED(s) >= slots)
            return;
        if (__atomic_compare_exchange_n(&mk_pool.state, &s, s + MK_POOL_IN + 1, 0,
                                        __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE)) {
            fn(arg, MK_POOL_JOINED(s) + 1);
            __atomic_fetch_sub(&mk_pool.state, MK_POOL_IN, __ATOMIC_RELEASE);
            return;
        }
    }
}

static void *mk_pool_worker(void *start)
{
    uint32_t seen = (uint32_t)(uintptr_t)start;      /* gen when this worker was made */
    for (;;) {
        uint32_t gen = __atomic_load_n(&mk_pool.gen, __ATOMIC_ACQUIRE);
        const double until = mk_pool_now() + 1e-6 * MK_POOL_SPIN_US;
        for (unsigned i = 1; gen == seen; ++i) {
            mk_pool_pause();
            gen = __atomic_load_n(&mk_pool.gen, __ATOMIC_ACQUIRE);
            if (gen == seen && i % 64 == 0 && mk_pool_now() > until)
                break;
        }
        if (gen == seen) {                           /* asleep until the next job */
            __atomic_fetch_add(&mk_pool.sleepers, 1, __ATOMIC_SEQ_CST);
            const struct timespec idle = {MK_POOL_IDLE_S, 0};
            const long r = syscall(SYS_futex, &mk_pool.gen, MK_FUTEX_WAIT_PRIVATE, seen, &idle,
                                   NULL, 0);
            __atomic_fetch_sub(&mk_pool.sleepers, 1, __ATOMIC_SEQ_CST);
            gen = __atomic_load_n(&mk_pool.gen, __ATOMIC_ACQUIRE);
            if (r != 0 && gen == seen && pthread_mutex_trylock(&mk_pool.lock) == 0) {
                /* idle MK_POOL_IDLE_S: exit, unless a job came meanwhile */
                const int stay = __atomic_load_n(&mk_pool.gen, __ATOMIC_ACQUIRE) != seen;
                if (!stay)
                    --mk_pool.workers;
                pthread_mutex_unlock(&mk_pool.lock);
                if (!stay)
                    return NULL;
            }
            continue;
        }
        seen = gen;
        mk_pool_join(gen);
    }
}

/* Make workers (under the lock) until there are `want`; returns how many there are. */
static int mk_pool_grow(int want)
{
    if (mk_pool.pid != getpid()) {                   /* a forked child: none of them */
        mk_pool.pid = getpid();
        mk_pool.workers = 0;
    }
    if (mk_pool.workers >= want)
        return mk_pool.workers;
    pthread_attr_t attr;
    sigset_t all, old;
    if (pthread_attr_init(&attr) != 0)
        return mk_pool.workers;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    while (mk_pool.workers < want) {
        pthread_t th;
        if (pthread_create(&th, &attr, mk_pool_worker, (void *)(uintptr_t)mk_pool.gen) != 0)
            break;
        ++mk_pool.workers;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return mk_pool.workers;
}

static int mk_pool_enabled(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("MICROKERNEL_POOL");
        on = !(e && e[0] == '0' && e[1] == '\0');
    }
    return on;
}

/* Run fn(arg, slot) on this thread (slot 0) and on up to threads - 1 workers (slots
 * 1..threads - 1) that join in time; returns 0 once every joiner has left, or -1
 * (nothing run) when the pool is off, busy or has no workers. */
static int mk_pool_run(mk_pool_fn fn, void *arg, int threads)
{
    if (threads < 2 || threads > 0x7fff || !mk_pool_enabled() || pthread_mutex_trylock(&mk_pool.lock) != 0)
        return -1;
    if (mk_pool_grow(threads - 1) < 1) {
        pthread_mutex_unlock(&mk_pool.lock);
        return -1;
    }
    const uint32_t gen = mk_pool.gen + 1;
    __atomic_store_n(&mk_pool.fn, fn, __ATOMIC_RELAXED);
    __atomic_store_n(&mk_pool.arg, arg, __ATOMIC_RELAXED);
    __atomic_store_n(&mk_pool.slots, threads - 1, __ATOMIC_RELAXED);
    __atomic_store_n(&mk_pool.state, (uint64_t)gen << 32, __ATOMIC_SEQ_CST);
    __atomic_store_n(&mk_pool.gen, gen, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&mk_pool.sleepers, __ATOMIC_SEQ_CST) > 0)
        syscall(SYS_futex, &mk_pool.gen, MK_FUTEX_WAKE_PRIVATE, threads - 1, NULL, NULL, 0);
    fn(arg, 0);
    uint64_t s = __atomic_fetch_or(&mk_pool.state, MK_POOL_CLOSED, __ATOMIC_SEQ_CST);
    for (unsigned spins = 0; MK_POOL_INSIDE(s) > 0; ++spins) {
        if (spins < 4096)
            mk_pool_pause();
        else
            sched_yield();                           /* a joiner may be descheduled here */
        s = __atomic_load_n(&mk_pool.state, __ATOMIC_ACQUIRE);
    }
    pthread_mutex_unlock(&mk_pool.lock);
    return 0;
}
#else
#define MK_HAVE_POOL 0
#endif
