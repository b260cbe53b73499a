"""Resource use (issue 7, item 5): repeated gemm() calls do not grow memory.

The driver keeps one packing workspace per calling thread, grown to the largest
blocking it has needed and reused (freed when the thread exits). After a warm-up
that starts with the largest shape, 10,000 calls of mixed shapes, layouts, kernels,
alpha/beta and thread counts must not grow the resident set by more than 1 MiB, nor
the workspace at all; and threads that call gemm() and exit must not leave their
workspaces behind.
"""
from __future__ import annotations

import ctypes
import gc
import os
import resource
import threading

import numpy as np
import pytest

import microkernel as mk
from microkernel import validate
from microkernel.blocking import WS_HUGE_MIN

MIB = 1 << 20
CALLS = 10_000


def rss_bytes() -> int:
    """Resident set size now (Linux /proc/self/statm), else the peak from getrusage."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
        "uordblks", "fordblks", "keepcost")]


def _mallinfo2():
    try:
        fn = ctypes.CDLL(None).mallinfo2      # glibc >= 2.33
    except (OSError, AttributeError):
        return None
    fn.restype = _Mallinfo2
    return fn


_MALLINFO2 = _mallinfo2()


def live_heap_bytes() -> int | None:
    """Bytes malloc has handed out and not got back (all arenas, mmapped chunks
    included), or None without glibc's mallinfo2. Unlike the RSS this does not
    move when glibc creates a malloc arena for a new thread or keeps freed memory."""
    if _MALLINFO2 is None:
        return None
    mi = _MALLINFO2()
    return mi.uordblks + mi.hblkhd


def _settle() -> int:
    gc.collect()
    return rss_bytes()


#: (m, n, k, alpha, beta, layout, threads); the first is the largest (warm-up)
SHAPES = [
    (300, 300, 300, 1.0, 0.5, "c", 2),
    (1, 1, 1, 1.0, 0.0, "c", 1),
    (7, 17, 5, -1.0, 1.0, "c", 1),
    (13, 33, 19, 0.5, 0.0, "f", 1),
    (64, 64, 64, 1.0, 1.0, "c", 2),
    (5, 3, 0, 2.0, 0.5, "c", 1),          # K = 0: beta * C
    (9, 9, 9, 0.0, 0.25, "c", 1),         # alpha = 0
    (0, 9, 9, 1.0, 0.0, "c", 1),          # M = 0
    (31, 47, 129, 1.5, -0.5, "n", 1),     # negative strides
    (40, 30, 20, 1.0, 0.0, "s", 2),       # strided views
    (25, 26, 27, 1.0, 0.5, "m", 1),       # misaligned: gemm copies
    (200, 120, 250, 1.0, 0.0, "c", 1),
]


def _operands(shape, rng):
    m, n, k, alpha, beta, lay, threads = shape
    case = validate.Case("res", m, n, k, alpha=alpha, beta=beta, a_layout=lay,
                         b_layout=lay, c_layout=lay, threads=threads)
    A, B, C, C0, _, _ = validate.make_operands(case, rng)
    return A, B, C, C0, alpha, beta, threads


def test_ten_thousand_calls_do_not_grow_memory():
    rng = np.random.default_rng(0)
    kernels = [mk.get_kernel(n) for n in mk.kernels()]
    problems = [_operands(s, rng) for s in SHAPES]
    for kern in kernels:                       # warm-up: largest first, then all
        for A, B, C, C0, alpha, beta, threads in problems:
            mk.gemm(A, B, C, alpha=alpha, beta=beta, kernel=kern, threads=threads)
    for _ in range(2):
        for i in range(len(problems) * len(kernels)):
            A, B, C, C0, alpha, beta, threads = problems[i % len(problems)]
            mk.gemm(A, B, C, alpha=alpha, beta=beta, kernel=kernels[i % len(kernels)],
                    threads=threads)
    order = rng.permutation(np.arange(CALLS) % (len(problems) * len(kernels))).tolist()
    ws_before = {k.name: k.lib.mk_workspace_bytes() for k in kernels}
    before = _settle()
    heap_before = live_heap_bytes()
    for j in order:
        A, B, C, C0, alpha, beta, threads = problems[j % len(problems)]
        mk.gemm(A, B, C, alpha=alpha, beta=beta, kernel=kernels[j // len(problems)],
                threads=threads)
    after = _settle()
    heap_after = live_heap_bytes()
    ws_after = {k.name: k.lib.mk_workspace_bytes() for k in kernels}
    print(f"{CALLS} calls: RSS {before / MIB:.2f} -> {after / MIB:.2f} MiB; live heap "
          f"{heap_before} -> {heap_after} B; workspaces {ws_after}")
    assert ws_after == ws_before
    assert after - before <= MIB, f"RSS grew by {(after - before) / MIB:.2f} MiB"
    if heap_before is not None:
        assert heap_after - heap_before <= 64 * 1024, "malloc'd memory grew"
    # and the answers are still right (beta == 0 problems are idempotent)
    for kern in kernels:
        for A, B, C, C0, alpha, beta, threads in problems:
            if beta == 0.0:
                mk.gemm(A, B, C, alpha=alpha, beta=beta, kernel=kern, threads=threads)
                ref, bound = validate.reference(A, B, C0, alpha, beta)
                assert validate.check(C, ref, bound)[0], (kern.name, A.shape, B.shape)


def test_workspace_is_bounded_by_the_blocking():
    """The workspace of the calling thread stops growing at the blocking's size."""
    from microkernel.gemm import blocking_for
    kern = mk.get_kernel(mk.kernels()[0])
    blk = blocking_for(kern)
    rng = np.random.default_rng(1)
    big = 2 * max(blk.kc, 64)
    A, B, C, C0, alpha, beta, threads = _operands((big, big, big, 1.0, 0.0, "c", 2), rng)
    mk.gemm(A, B, C, kernel=kern, threads=2)
    ws = kern.lib.mk_workspace_bytes()
    limit = 4 * (blk.mc * blk.kc + blk.kc * (blk.nc + kern.nr) + 2 * (kern.mr * kern.nr + 48)) + 64
    if limit >= WS_HUGE_MIN:                   # whole 2 MiB huge pages from there on
        limit = -(-limit // (2 * MIB)) * 2 * MIB
    assert 0 < ws <= limit
    A, B, C, C0, alpha, beta, threads = _operands((big + 37, big + 41, big + 43, 1.0, 0.0, "c", 2), rng)
    mk.gemm(A, B, C, kernel=kern, threads=2)
    assert kern.lib.mk_workspace_bytes() <= limit


def test_a_large_workspace_is_whole_huge_pages():
    """From WS_HUGE_MIN bytes the driver's workspace is whole 2 MiB pages (advised as
    transparent huge pages), below it as many bytes as the blocking needs; the results
    are right either way."""
    kern = mk.get_kernel(mk.kernels()[0])
    rng = np.random.default_rng(5)
    sizes = {}
    # a B block of 0.5 MiB, then 4 MiB; NC (and n) whole NR panels, so that one NC block
    # covers n (4096 columns of an NR = 24 tile are two balanced blocks of 2 MiB each)
    big = -(-4096 // kern.nr) * kern.nr
    for nc in (512, big):
        A, B, C, C0, alpha, beta, threads = _operands((64, nc, 512, 1.0, 0.0, "c", 1), rng)
        sizes[nc] = _workspace_after(kern, A, B, C, {"kc": 256, "mc": 8 * kern.mr, "nc": nc})
        ref, bound = validate.reference(A, B, C0, alpha, beta)
        assert validate.check(C, ref, bound)[0]
    assert sizes[512] < WS_HUGE_MIN and sizes[512] % (2 * MIB) != 0
    assert sizes[big] >= WS_HUGE_MIN and sizes[big] % (2 * MIB) == 0


def test_exited_threads_free_their_workspaces():
    """300 short-lived threads each run a large gemm (a workspace of hundreds of KiB
    each, freed by the thread-exit destructor): malloc'd memory stays flat. (A leak
    would be 300 workspaces, > 30 MiB.) The RSS is checked loosely: glibc may give a
    new thread a new malloc arena, a one-off step of about 1 MiB seen here."""
    kern = mk.get_kernel(mk.kernels()[0])
    rng = np.random.default_rng(2)
    A, B, C, C0, alpha, beta, threads = _operands((300, 300, 300, 1.0, 0.0, "c", 1), rng)
    seen = []

    def once():
        outp = np.empty_like(C)
        mk.gemm(A, B, outp, kernel=kern)
        seen.append(kern.lib.mk_workspace_bytes())

    def run(n):
        for _ in range(n):
            t = threading.Thread(target=once)
            t.start()
            t.join()

    run(30)                                     # warm-up: malloc arenas, thread stacks
    before = _settle()
    heap_before = live_heap_bytes()
    run(300)
    after = _settle()
    heap_after = live_heap_bytes()
    print(f"300 threads: RSS {before / MIB:.2f} -> {after / MIB:.2f} MiB, live heap "
          f"{heap_before} -> {heap_after} B, workspace per thread {seen[-1] / 1024:.0f} KiB")
    assert min(seen) > 100 * 1024                # each thread did get a big workspace
    if heap_before is not None:
        assert heap_after - heap_before <= MIB, "thread workspaces were not freed"
    assert after - before <= 8 * MIB, f"RSS grew by {(after - before) / MIB:.2f} MiB"


def _workspace_after(kern, A, B, C, blocking) -> int:
    """Bytes of the packing workspace of a fresh thread after one gemm() with
    ``blocking`` (the workspace is per thread and grows to the blocking's size)."""
    got = []

    def run():
        mk.gemm(A, B, C, kernel=kern, threads=1, blocking=blocking)
        got.append(kern.lib.mk_workspace_bytes())

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return got[0]


def test_blocking_overrides_reach_the_driver_each_call():
    """gemm(blocking=dict) caches the C blocking per kernel and dict contents: a second
    call with the same dict after a different one gets its own KC/MC/NC back (seen in
    the size of the packing workspace of a fresh thread), and 16.0 is not taken for a
    cached 16."""
    kern = mk.get_kernel(mk.kernels()[0])
    rng = np.random.default_rng(3)
    A, B, C, C0, alpha, beta, threads = _operands((200, 200, 200, 1.0, 0.0, "c", 1), rng)
    small = {"kc": 16, "mc": 2 * kern.mr, "nc": kern.nr}
    large = {"kc": 64, "mc": 8 * kern.mr, "nc": 4 * kern.nr}

    def workspace_after(blocking):
        return _workspace_after(kern, A, B, C, blocking)

    ws_small, ws_large, ws_again = (workspace_after(small), workspace_after(large),
                                    workspace_after(dict(small)))
    assert ws_small < ws_large and ws_again == ws_small
    mutated = dict(small)
    assert workspace_after(mutated) == ws_small
    mutated.update(large)                      # the same dict object, changed in place
    assert workspace_after(mutated) == ws_large
    ref, bound = validate.reference(A, B, C0, alpha, beta)
    assert validate.check(C, ref, bound)[0]
    with pytest.raises(ValueError, match="kc must be a positive integer"):
        mk.gemm(A, B, C, kernel=kern, blocking={**small, "kc": 16.0})


def test_a_partial_blocking_override_is_completed_per_kernel():
    """{"kc": 16} through two kernels whose model MC differs gets each kernel's own MC
    and NC: the same workspace as that kernel's full override (a cache keyed without the
    kernel would hand the second kernel the first one's MC)."""
    from microkernel.gemm import blocking_for
    kerns = [mk.get_kernel(n) for n in ("scalar_4x4", "scalar_2x8")]
    models = [blocking_for(k) for k in kerns]
    assert models[0].mc != models[1].mc
    rng = np.random.default_rng(4)
    A, B, C, C0, alpha, beta, threads = _operands((300, 300, 300, 1.0, 0.0, "c", 1), rng)

    partial = {"kc": 16}
    for kern, model in zip(kerns, models):
        full = {"kc": 16, "mc": model.mc, "nc": model.nc}
        assert (_workspace_after(kern, A, B, C, partial)
                == _workspace_after(kern, A, B, C, full)), kern.name

