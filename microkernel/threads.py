"""How many threads gemm() uses, and how its threads behave beside other runtimes.

* **Default**: the CPUs this process may run on (``os.sched_getaffinity``), as numpy's
  BLAS does; ``$MICROKERNEL_NUM_THREADS`` overrides it, and so does a
  ``threadpoolctl`` limit (``threadpool_limits(limits=4, user_api="microkernel")``:
  :class:`MicrokernelController` makes our pool visible to threadpoolctl). A problem
  too small to pay for waking a team (fewer than :data:`MACS_PER_THREAD`
  multiply-adds per thread) gets fewer threads, down to one, when the caller did not
  ask for a number. Any count is at most :func:`max_threads` (8 per CPU, at least 64):
  :func:`check_count` refuses more, and a threadpoolctl limit is clamped to it.
* **Waiting**: libgomp's idle workers spin before they sleep, 300,000 iterations by
  default (GOMP_SPINCOUNT; libgomp manual, "GOMP_SPINCOUNT"), milliseconds of a core
  after every call that another library's threads (OpenBLAS, PyTorch's OpenMP) then
  wait for; fully passive waiting (OMP_WAIT_POLICY=PASSIVE) instead makes every
  barrier of the team decomposition a futex sleep and wake. Before the first kernel
  module loads libgomp, :func:`prepare_runtime` sets ``GOMP_SPINCOUNT`` to
  :data:`SPIN_COUNT` (a short spin: the team's barriers stay cheap, the workers sleep
  well under a millisecond after a call) unless the user set ``OMP_WAIT_POLICY`` or
  ``GOMP_SPINCOUNT``; it takes effect only where libgomp was not loaded earlier in the
  process (then :func:`runtime_note` says so). The team's flow (the default from 3
  threads, and at 2 on C of 256 rows or more) and the slices (2 threads on fewer rows)
  run on the driver's own pool instead
  (c_src/mk_pool.h): a call ends when the threads that joined it have left, so a
  worker that another runtime's spinner keeps off its core does not hold the call; a
  worker that took part spins 100 us after it, then sleeps; ``MICROKERNEL_POOL=0``
  (read once) gives them OpenMP's team.
* **Contention**: our workers sleep after a call, but other runtimes' do not:
  OpenBLAS's spin about 0.1 s after each call (calling ``sched_yield``), PyTorch's
  libgomp workers some milliseconds. The scheduler shares a CPU among its runnable
  threads (CFS / EEVDF: per thread, not per process; a yielding thread keeps its
  share), so 16 of ours right after a numpy call on 16 CPUs held 7-9 of them while
  OpenBLAS's 15 workers held the rest, and ran at about that share of their alone
  speed (docs/performance.md, "whose spin"; ``OPENBLAS_THREAD_TIMEOUT=4`` set before
  Python starts removes it). When the default count
  applies (no ``threads=``, no ``$MICROKERNEL_NUM_THREADS``, no threadpoolctl limit),
  ``$MICROKERNEL_CONTENTION=1`` makes :func:`contended` add one thread per other
  runnable thread of this process counted at the start of the call
  (``/proc/loadavg``, ``/proc/self/stat``), up to 3x: the flow's units go to whichever
  thread is running, so the extra threads take a larger share of the contended CPUs.
  It is off by default: the counts cannot tell other processes' load from this
  process's spinners where numpy's workers sleep in it (see :func:`contended`).
  Measurements: docs/design-notes.md, threads.
"""
from __future__ import annotations

import numbers
import os

from . import envvars

__all__ = ["default_threads", "threads_for", "MACS_PER_THREAD", "prepare_runtime",
           "runtime_note", "SPIN_COUNT", "MicrokernelController", "available_cpus",
           "user_set_wait_policy", "max_threads", "check_count", "contended",
           "runnable_threads", "process_threads", "CONTENTION_MAX", "contention_on"]

#: the least work (multiply-adds) a default thread count gives each thread
MACS_PER_THREAD = 1 << 20
#: libgomp's spin count before an idle worker sleeps (its default: 300,000)
SPIN_COUNT = 20000

_LIMIT: list[int | None] = [None]     # set through threadpoolctl
_ENV: dict = {}
_RUNTIME: dict = {}


def available_cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def max_threads() -> int:
    """The most threads one call may ask for: 8 per CPU this process may run on, at
    least 64. Each is an OS thread of the driver's pool or of OpenMP's team, and
    thousands of them exhaust the process (libgomp aborts, or the stacks run out)."""
    return max(64, 8 * available_cpus())


def check_count(n, what: str = "threads") -> int:
    """``n`` as an int when it is an integer in 1..:func:`max_threads`; else ValueError
    naming ``what`` and the range."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise ValueError(f"{what} must be a positive integer, got {n!r}")
    top = max_threads()
    if not 1 <= n <= top:
        raise ValueError(f"{what} must be between 1 and {top} (8 per CPU this process may "
                         f"run on, at least 64), got {n}")
    return int(n)


def _parse(raw: str) -> int | None:
    env = raw.strip()
    if not env:
        return None
    try:
        n = int(env)
    except ValueError:
        raise ValueError(f"MICROKERNEL_NUM_THREADS={env!r} is not an integer") from None
    return check_count(n, "MICROKERNEL_NUM_THREADS")


def _chosen() -> int | None:
    """The count the user chose: a threadpoolctl limit, else ``$MICROKERNEL_NUM_THREADS``
    (parsed once per value), else None. Raises ValueError for a bad environment value."""
    if _LIMIT[0] is not None:
        return _LIMIT[0]
    raw = envvars.get("MICROKERNEL_NUM_THREADS", "")
    if raw not in _ENV:
        _ENV[raw] = _parse(raw)
    return _ENV[raw]


def default_threads() -> int:
    """Threads for gemm() when the call gives none: a threadpoolctl limit, else
    ``$MICROKERNEL_NUM_THREADS``, else :func:`available_cpus`. Raises ValueError for
    a bad environment value."""
    n = _chosen()
    return n if n is not None else available_cpus()


def contention_on() -> bool:
    """Whether ``$MICROKERNEL_CONTENTION=1`` switches :func:`contended` on."""
    return envvars.get("MICROKERNEL_CONTENTION", "") == "1"


#: the most a contended call multiplies its default thread count by
CONTENTION_MAX = 3
_LOADAVG: list = []      # the open /proc/loadavg (read with pread each call), or None


def runnable_threads() -> int | None:
    """Threads runnable on the whole system at this instant, the caller included: the
    numerator of the fourth field of ``/proc/loadavg`` (proc_loadavg(5): "the number of
    currently runnable kernel scheduling entities"). None where it cannot be read.
    About 2 us (one pread on a descriptor kept open)."""
    if not _LOADAVG:
        try:
            _LOADAVG.append(os.open("/proc/loadavg", os.O_RDONLY))
        except (OSError, AttributeError):
            _LOADAVG.append(None)
    fd = _LOADAVG[0]
    if fd is None:
        return None
    try:
        return int(os.pread(fd, 128, 0).split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return None


def process_threads() -> int | None:
    """Threads of this process: field 20 (num_threads) of ``/proc/self/stat``
    (proc_pid_stat(5)); None where it cannot be read."""
    try:
        with open("/proc/self/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[17])
    except (OSError, ValueError, IndexError):
        return None


def contended(t: int, macs: int, awake: int = 0, ours: int = 0) -> int:
    """The thread count for a call whose default count is ``t`` when other threads of
    this process hold the CPUs now (other runtimes' spinning workers): ``t`` plus one
    per such thread, when they are at least a quarter of ``t``; at most
    :data:`CONTENTION_MAX` x ``t``, one per :data:`MACS_PER_THREAD` multiply-adds
    (``macs``, the default count's own rule) and :func:`max_threads`.

    "Such threads" is the smaller of two counts: the runnable threads of the whole
    system (:func:`runnable_threads`) less the caller and our ``awake`` pool workers
    (:func:`microkernel.kernel.pool_threads` (1) over every loaded kernel module: those
    in or spinning after a job, and those woken but not yet running, whom the kernel
    already counts as runnable), and this process's threads (:func:`process_threads`)
    less the caller and the ``ours`` workers of those pools (``pool_threads(0)``, all of
    them). So other processes' load adds
    nothing when our process has no other threads (several processes of gemm() do not
    outbid each other), and a process whose other threads sleep adds nothing when
    nothing runs.

    Off unless ``$MICROKERNEL_CONTENTION=1``: in a process that has loaded numpy,
    OpenBLAS's sleeping workers pass the second count, so on a machine that other
    processes load it would oversubscribe the CPUs for nothing. ``t`` itself for one
    thread and for an explicit count (``threads=``, ``$MICROKERNEL_NUM_THREADS``, a
    threadpoolctl limit). Why it helps and when: the module docstring; measured:
    docs/design-notes.md, threads."""
    if t < 2 or not contention_on() or _chosen() is not None:
        return t
    r = runnable_threads()
    if r is None or r - 1 - awake < max(1, t // 4):
        return t
    mine = process_threads()
    others = min(r - 1 - awake, 0 if mine is None else mine - 1 - ours)
    if others < max(1, t // 4):
        return t
    return max(t, min(t + others, CONTENTION_MAX * t, macs // MACS_PER_THREAD, max_threads()))


def threads_for(m: int, n: int, k: int, most: int | None = None) -> int:
    """The default thread count for an m x n x k GEMM: ``most`` (default
    :func:`default_threads`), but at most one thread per :data:`MACS_PER_THREAD`
    multiply-adds (n = 1 or m = 1: the GEMV path decides for itself). ``bench`` and
    ``compare`` time gemm() at ``threads_for(m, n, k, most=N)`` for ``--threads N``, as
    numpy's BLAS sizes its own calls under a limit of N. Below 2 x MACS_PER_THREAD
    multiply-adds the answer is 1 whatever the CPUs, so the affinity mask is not read
    (a bad ``$MICROKERNEL_NUM_THREADS`` is still reported)."""
    cap = (m * n * max(k, 1)) // MACS_PER_THREAD
    if most is None:
        if cap < 2:
            _chosen()
            return 1
        most = default_threads()
    return max(1, min(most, cap)) if most > 1 else most


#: environment variables the C driver reads once with getenv, and the values it honours
#: (any other value would be ignored there without a word)
DRIVER_ENV = {"MICROKERNEL_POOL": ("0", "1"), "MICROKERNEL_THREADING": ("slices", "team"),
              "MICROKERNEL_TEAM_GRID": ("rows", "square")}


def check_driver_env() -> None:
    """ValueError naming the variable and its values when one of :data:`DRIVER_ENV` is
    set to something the driver would ignore (``Team``, ``off``, ...); unset or empty is
    the default."""
    for var, values in DRIVER_ENV.items():
        v = os.environ.get(var, "")
        if v and v not in values:
            raise ValueError(f"{var}={v!r} is not one of {', '.join(values)} (the C driver "
                             f"reads exactly these; unset it for the default)")


def prepare_runtime() -> None:
    """Before the first kernel module (and libgomp) loads: GOMP_SPINCOUNT=SPIN_COUNT
    unless the user chose a wait policy (see the module docstring). Raises ValueError
    for a driver variable the driver would ignore (:func:`check_driver_env`)."""
    check_driver_env()
    if _RUNTIME:
        return
    preloaded = _libgomp_loaded()
    user = user_set_wait_policy()       # nothing recorded yet: the environment's own
    if not user and not preloaded:
        os.environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)
    policy = (f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}" if "OMP_WAIT_POLICY" in os.environ
              else f"GOMP_SPINCOUNT={os.environ['GOMP_SPINCOUNT']}" if "GOMP_SPINCOUNT" in os.environ
              else "libgomp's default")
    _RUNTIME.update(preloaded=preloaded, user=user, policy=policy)


def user_set_wait_policy() -> bool:
    """Whether OMP_WAIT_POLICY or GOMP_SPINCOUNT in this process's environment is the
    user's (not the GOMP_SPINCOUNT that :func:`prepare_runtime` set)."""
    if _RUNTIME:
        return _RUNTIME["user"]
    return "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ


def runtime_note() -> str:
    """One line on the OpenMP wait policy in effect for our kernels."""
    if not _RUNTIME:
        return "no kernel module loaded yet"
    if _RUNTIME["preloaded"] and not _RUNTIME["user"]:
        return ("libgomp was loaded before microkernel's first kernel: its wait policy is "
                "whatever it was then (workers may spin after each call)")
    return _RUNTIME["policy"] + (" (set by the user)" if _RUNTIME["user"] else "")


def _libgomp_loaded() -> bool:
    try:
        with open("/proc/self/maps") as f:
            return any("libgomp" in line for line in f)
    except OSError:
        return False


try:
    from threadpoolctl import LibController, register
except ImportError:  # pragma: no cover - threadpoolctl is a dependency
    LibController = object
    register = None


class MicrokernelController(LibController):
    """threadpoolctl's view of gemm()'s default thread count: every loaded kernel
    module (``_mk_*`` shared objects) reports it and sets it, e.g.
    ``with threadpool_limits(limits=1, user_api="microkernel"): ...``."""
    user_api = "microkernel"
    internal_api = "microkernel"
    filename_prefixes = ("_mk_",)

    def get_num_threads(self):
        try:
            return default_threads()
        except ValueError:              # a bad $MICROKERNEL_NUM_THREADS: gemm() says so
            return None

    def set_num_threads(self, num_threads):
        # clamped, not refused: threadpoolctl has set the other libraries already and
        # would not restore them after an exception here
        n = None if num_threads is None else min(max(int(num_threads), 1), max_threads())
        _LIMIT[0] = None
        if n is not None and n != default_threads():
            _LIMIT[0] = n                   # (restoring the unlimited value clears it)

    def get_version(self):
        from . import __version__
        return __version__

    def set_additional_attributes(self):
        self.wait_policy = runtime_note()


if register is not None:
    register(MicrokernelController)
