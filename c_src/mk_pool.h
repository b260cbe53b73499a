/* mk_pool.h: the threads of the team's flow (mk_team.h, mk_loops_flow), a pool of our
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
 * A worker that took part in the last job spins MK_POOL_SPIN_US microseconds after it
 * (a back-to-back call finds it awake; one that found no free slot does not spin),
 * then sleeps on the futex word; after MK_POOL_IDLE_S seconds asleep it exits (a
 * process that loads many kernel modules keeps no threads for those it stopped using;
 * the worker count has its own mutex, so an exit never turns a caller away). Workers
 * block the asynchronous signals (a fault in one still reaches its handler: ASan's,
 * faulthandler's) and are named MK_POOL_NAME. A forked child starts with no workers and
 * a free pool (pthread_atfork).
 * Linux only (futex(2)); elsewhere, or in a module that defines MK_NO_POOL, the driver
 * runs the flow on OpenMP's team as before 2026-12-04, and so it does in a process
 * started with $MICROKERNEL_POOL=0 (read once). */
/* One iteration of a spin wait: PAUSE on x86 (SDM vol. 2B), YIELD on aarch64 (the pool's
 * workers after a job, and mk_wait_step below, which the driver's waits use too). */
static inline void mk_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* One step of a wait on another thread (the flow's items, the caller's wait for the
 * pool's joiners): MK_SPIN_BEFORE_YIELD spins, then the core is given away each step,
 * by sched_yield or, with MK_WAIT_SLEEP_NS defined, a sleep of that many nanoseconds
 * (an experiment: under EEVDF a yield moves the thread's deadline a whole slice on, a
 * sleeper is placed with its lag when it wakes). */
#ifndef MK_SPIN_BEFORE_YIELD
#define MK_SPIN_BEFORE_YIELD 4096u
#endif
#include <sched.h>
#include <time.h>
static inline void mk_wait_step(unsigned spins)
{
    if (spins < (unsigned)(MK_SPIN_BEFORE_YIELD)) {
        mk_cpu_relax();
        return;
    }
#ifdef MK_WAIT_SLEEP_NS
    const struct timespec nap = {0, MK_WAIT_SLEEP_NS};
    nanosleep(&nap, NULL);
#else
    sched_yield();
#endif
}

#if defined(__linux__) && !defined(MK_NO_POOL)
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#define MK_HAVE_POOL 1
#ifndef MK_POOL_SPIN_US
#define MK_POOL_SPIN_US 100
#endif
#ifndef MK_POOL_IDLE_S
#define MK_POOL_IDLE_S 2
#endif
/* every worker's thread name (PR_SET_NAME, prctl(2): at most 15 bytes), so that `top -H`,
 * `ps -L` and /proc/<pid>/task/<tid>/comm tell ours from other runtimes' workers */
#define MK_POOL_NAME "mk-pool"
#define MK_FUTEX_WAIT_PRIVATE 128       /* FUTEX_WAIT | FUTEX_PRIVATE_FLAG (futex(2)) */
#define MK_FUTEX_WAKE_PRIVATE 129
#define MK_POOL_CLOSED ((uint64_t)1 << 31)
#define MK_POOL_IN ((uint64_t)1 << 16)                    /* one worker inside */
#define MK_POOL_JOINED(s) ((int)((s) & 0xffffu))            /* slots handed out */
#define MK_POOL_INSIDE(s) ((int)(((s) >> 16) & 0x7fffu))    /* joiners not yet left */

typedef void (*mk_pool_fn)(void *arg, int slot);

static struct {
    pthread_mutex_t lock;   /* the caller's, for a whole job */
    pthread_mutex_t count;  /* guards workers */
    int workers;            /* alive */
    uint32_t gen;           /* futex word: the latest job's generation */
    uint32_t sleepers;      /* workers in futex_wait or about to be */
    int waking;             /* woken by a caller's FUTEX_WAKE, not yet back on a CPU */
    uint64_t state;         /* gen << 32 | MK_POOL_CLOSED | inside << 16 | joined */
    mk_pool_fn fn;          /* the job (atomics: read by workers, see above) */
    void *arg;
    int slots;
} mk_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, MK_POOL_CLOSED,
             NULL, NULL, 0};

static double mk_pool_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Join job gen if it is open with a free slot: run it, leave. Returns whether it ran.
 * fn and arg are read after the CAS: while this worker is inside, the job stays. */
static int mk_pool_join(uint32_t gen)
{
    uint64_t s = __atomic_load_n(&mk_pool.state, __ATOMIC_ACQUIRE);
    for (;;) {
        if ((uint32_t)(s >> 32) != gen || (s & MK_POOL_CLOSED) ||
            MK_POOL_JOINED(s) >= __atomic_load_n(&mk_pool.slots, __ATOMIC_RELAXED))
            return 0;
        if (__atomic_compare_exchange_n(&mk_pool.state, &s, s + MK_POOL_IN + 1, 0,
                                        __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE))
            break;
    }
    const int slot = MK_POOL_JOINED(s) + 1;
    const int ok = slot <= __atomic_load_n(&mk_pool.slots, __ATOMIC_RELAXED);
    if (ok)
        __atomic_load_n(&mk_pool.fn, __ATOMIC_RELAXED)(
            __atomic_load_n(&mk_pool.arg, __ATOMIC_RELAXED), slot);
    __atomic_fetch_sub(&mk_pool.state, MK_POOL_IN, __ATOMIC_RELEASE);
    return ok;
}

static void *mk_pool_worker(void *start)
{
    uint32_t seen = (uint32_t)(uintptr_t)start;      /* gen when this worker was made */
    int spin = 0;                                    /* took part in the last job */
    prctl(PR_SET_NAME, MK_POOL_NAME, 0, 0, 0);       /* top -H, /proc/<pid>/task/<tid>/comm */
    for (;;) {
        uint32_t gen = __atomic_load_n(&mk_pool.gen, __ATOMIC_ACQUIRE);
        const double until = mk_pool_now() + 1e-6 * MK_POOL_SPIN_US;
        for (unsigned i = 1; spin && gen == seen; ++i) {
            mk_cpu_relax();
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
            if (r == 0)                              /* a caller's wake (counted there) */
                __atomic_fetch_sub(&mk_pool.waking, 1, __ATOMIC_RELAXED);
            spin = 0;
            if (r != 0 && __atomic_load_n(&mk_pool.gen, __ATOMIC_ACQUIRE) == seen) {
                /* idle MK_POOL_IDLE_S: exit (a job published meanwhile runs without it) */
                pthread_mutex_lock(&mk_pool.count);
                --mk_pool.workers;
                pthread_mutex_unlock(&mk_pool.count);
                return NULL;
            }
            continue;
        }
        seen = gen;
        spin = mk_pool_join(gen);
    }
}

/* A forked child has none of the parent's workers, and a lock held by another of the
 * parent's threads would stay held. */
static void mk_pool_atfork_child(void)
{
    pthread_mutex_init(&mk_pool.lock, NULL);
    pthread_mutex_init(&mk_pool.count, NULL);
    mk_pool.workers = 0;
    mk_pool.sleepers = 0;
    mk_pool.waking = 0;
    mk_pool.state = MK_POOL_CLOSED | (uint64_t)mk_pool.gen << 32;
}

static void mk_pool_once(void) { pthread_atfork(NULL, NULL, mk_pool_atfork_child); }

/* Make workers until there are `want`; returns how many there are. */
static int mk_pool_grow(int want)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, mk_pool_once);
    pthread_mutex_lock(&mk_pool.count);
    if (mk_pool.workers < want) {
        pthread_attr_t attr;
        sigset_t block, old;
        if (pthread_attr_init(&attr) == 0) {
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            sigfillset(&block);              /* the asynchronous signals only */
            const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT};
            for (size_t i = 0; i < sizeof faults / sizeof *faults; ++i)
                sigdelset(&block, faults[i]);
            pthread_sigmask(SIG_SETMASK, &block, &old);
            while (mk_pool.workers < want) {
                pthread_t th;
                if (pthread_create(&th, &attr, mk_pool_worker, (void *)(uintptr_t)mk_pool.gen) != 0)
                    break;
                ++mk_pool.workers;
            }
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            pthread_attr_destroy(&attr);
        }
    }
    const int have = mk_pool.workers;
    pthread_mutex_unlock(&mk_pool.count);
    return have;
}

static int mk_pool_enabled(void)
{
    static int on = -1;                              /* -1: not read yet */
    int v = __atomic_load_n(&on, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *e = getenv("MICROKERNEL_POOL");
        v = !(e && e[0] == '0' && e[1] == '\0');
        __atomic_store_n(&on, v, __ATOMIC_RELAXED);
    }
    return v;
}

/* Run fn(arg, slot) on this thread (slot 0) and on up to threads - 1 workers (slots
 * 1..threads - 1) that join in time; returns 0 once every joiner has left, or -1
 * (nothing run) when the pool is off, busy or has no workers. */
static int mk_pool_run(mk_pool_fn fn, void *arg, int threads)
{
    if (threads < 2 || threads > 0x7fff || !mk_pool_enabled() ||
        pthread_mutex_trylock(&mk_pool.lock) != 0)
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
    if (__atomic_load_n(&mk_pool.sleepers, __ATOMIC_SEQ_CST) > 0) {
        const long woke = syscall(SYS_futex, &mk_pool.gen, MK_FUTEX_WAKE_PRIVATE, threads - 1,
                                  NULL, NULL, 0);
        if (woke > 0)
            __atomic_fetch_add(&mk_pool.waking, (int)woke, __ATOMIC_RELAXED);
    }
    fn(arg, 0);
    uint64_t s = __atomic_fetch_or(&mk_pool.state, MK_POOL_CLOSED, __ATOMIC_SEQ_CST);
    for (unsigned spins = 0; MK_POOL_INSIDE(s) > 0; ++spins) {
        mk_wait_step(spins);                         /* a joiner may be descheduled here */
        s = __atomic_load_n(&mk_pool.state, __ATOMIC_ACQUIRE);
    }
    pthread_mutex_unlock(&mk_pool.lock);
    return 0;
}

/* The pool's workers, alive (awake = 0) or runnable now (awake = 1: in a job, spinning
 * after one, or woken by a call's FUTEX_WAKE and not yet running: the kernel counts
 * those as runnable, and a job that ended before they ran leaves them so): threads of
 * ours, which the caller's count of the other threads that hold the CPUs leaves out
 * (microkernel.threads.contended). */
#define MK_HAVE_POOL_THREADS 1
static inline int mk_pool_threads(int awake)
{
    int n = __atomic_load_n(&mk_pool.workers, __ATOMIC_RELAXED);
    if (awake) {
        const int waking = __atomic_load_n(&mk_pool.waking, __ATOMIC_RELAXED);
        n += (waking > 0 ? waking : 0) - (int)__atomic_load_n(&mk_pool.sleepers, __ATOMIC_RELAXED);
    }
    return n > 0 ? n : 0;
}
#else
#define MK_HAVE_POOL 0
#define MK_HAVE_POOL_THREADS 1
static inline int mk_pool_threads(int awake) { (void)awake; return 0; }
#endif
