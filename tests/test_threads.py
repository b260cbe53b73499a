"""Both thread decompositions of the driver (c_src/mk_slices.h, mk_team.h): the slices and the
shared-B team (its rows dynamic or static, its grid rows or square), forced with
MICROKERNEL_THREADING / _TEAM_GRID (read once per kernel module, so each mode runs in
its own process) and the blocking's ``chunks``, on 2 to 7 threads (more threads than this machine's
cores is fine: only correctness is checked), on shapes with every remainder, strided
and column-major views, the edge catalogue's threaded cases, and a typed kernel."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from microkernel.blocking import TEAM_CHUNKS, TEAM_PARTS

SCRIPT = textwrap.dedent("""
    import json, os, numpy as np, ml_dtypes, microkernel as mk
    from microkernel import validate
    CHUNKS = int(os.environ["CHUNKS"])        # the team's units: 0 fixed shares, else dynamic
    PARTS = int(os.environ.get("PARTS", "1"))  # ... and the parts of a B block's columns
    rng = np.random.default_rng(7)
    bad = []
    kernels = [k for k in (mk.kernels()[0], "scalar_3x5") if k]
    for name in kernels:
        for threads in (2, 3, 4, 7):
            for (m, n, k) in [(1, 50, 9), (37, 1, 11), (5, 700, 33), (301, 67, 129), (64, 64, 300),
                              (17, 3, 2), (130, 259, 70)]:
                A = rng.standard_normal((m, k)).astype(np.float32)
                B = rng.standard_normal((k, n)).astype(np.float32)[::-1]
                C0 = rng.standard_normal((n, m)).astype(np.float32).T      # column-major C
                C = C0.copy(order="F")
                mk.gemm(A, B, C, alpha=1.5, beta=0.5, kernel=name, threads=threads,
                        blocking={"kc": 32, "mc": 24, "nc": 48, "chunks": CHUNKS,
                                  "parts": PARTS})
                ref, bound = validate.reference(A, B, C0, 1.5, 0.5)
                ok, ratio, _, detail = validate.check(C, ref, bound)
                if not ok:
                    bad.append([name, threads, m, n, k, detail])
        k = mk.get_kernel(name)
        for r in validate.run_catalogue(k):
            if not r.ok:
                bad.append([name, "catalogue", r.case.label, r.detail])
    # a typed kernel in the same mode
    A = rng.integers(-128, 128, (99, 201)).astype(np.int8)
    B = rng.integers(-128, 128, (201, 77)).astype(np.int8)
    for threads in (2, 5):
        C = mk.gemm(A, B, threads=threads, blocking={"kc": 64, "mc": 24, "nc": 48, "chunks": CHUNKS,
                                                               "parts": PARTS})
        if not np.array_equal(C.astype(np.int64), A.astype(np.int64) @ B.astype(np.int64)):
            bad.append(["s8s8", threads])
    print("RESULT " + json.dumps(bad))
""")


@pytest.mark.parametrize("mode", ["team", "team static", "team chunks=1", "team chunks=8",
                                  "team parts=1 chunks=4", "team parts=3", "team parts=4",
                                  "team parts=9 chunks=1", "team square", "team limit=1",
                                  "team pool=0", "slices"])
def test_each_thread_decomposition_is_correct(mode, tmp_path):
    # "team": the model's dynamic units (from a counter, TEAM_CHUNKS per thread, each a chunk
    # of rows times one of the parts of the block's panels the driver picks, 1 to 4 over
    # these shapes: 48 columns, 2 panels of 24 or 10 of 5, so fewer panels than parts, or
    # parts of 2 and 3 panels); "team parts=4": four parts whatever the shape (the default
    # until 2026-12-06); "team static":
    # each thread a fixed share; "team chunks=1": one unit per thread (the counter's
    # last-unit edge); "team chunks=8": 8 per thread (the default until session 55);
    # "parts=1 chunks=4": units of whole rows (the team before 2026-12-04); "parts=3":
    # thirds of the panels; "parts=9 chunks=1": more parts than a block has panels; "team
    # square": the grid of MICROKERNEL_TEAM_GRID=square; "team limit=1": OMP_THREAD_LIMIT=1
    # gives the team one thread whatever is asked; "team pool=0": the flow on OpenMP's
    # team instead of the pool's threads (MICROKERNEL_POOL=0, c_src/mk_pool.h)
    words = dict(w.split("=") for w in mode.split()[1:] if "=" in w)
    env = {**os.environ, "MICROKERNEL_THREADING": mode.split()[0],
           "MICROKERNEL_TEAM_GRID": "square" if mode.endswith("square") else "rows",
           "CHUNKS": "0" if mode.endswith("static") else words.get("chunks", str(TEAM_CHUNKS)),
           "PARTS": words.get("parts", str(TEAM_PARTS))}
    if mode.endswith("limit=1"):
        env["OMP_THREAD_LIMIT"] = "1"
    if "pool" in words:
        env["MICROKERNEL_POOL"] = words["pool"]
    res = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         env=env, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    assert json.loads(line[len("RESULT "):]) == []


def test_default_threads_follow_affinity_env_and_threadpoolctl(monkeypatch):
    from threadpoolctl import threadpool_info, threadpool_limits

    import microkernel as mk
    from microkernel import threads
    monkeypatch.delenv("MICROKERNEL_NUM_THREADS", raising=False)
    assert threads.default_threads() == len(os.sched_getaffinity(0))
    monkeypatch.setenv("MICROKERNEL_NUM_THREADS", "3")
    assert threads.default_threads() == 3
    monkeypatch.setenv("MICROKERNEL_NUM_THREADS", "zero")
    with pytest.raises(ValueError, match="MICROKERNEL_NUM_THREADS"):
        threads.default_threads()
    monkeypatch.setenv("MICROKERNEL_NUM_THREADS", "4")
    mk.get_kernel("scalar_4x4")                    # a kernel module is loaded: visible
    info = [i for i in threadpool_info() if i["user_api"] == "microkernel"]
    assert info and info[0]["num_threads"] == 4
    with threadpool_limits(limits=1, user_api="microkernel"):
        assert threads.default_threads() == 1
    assert threads.default_threads() == 4 and threads._LIMIT[0] is None


def test_small_problems_get_fewer_default_threads(monkeypatch):
    from microkernel import threads
    monkeypatch.setenv("MICROKERNEL_NUM_THREADS", "16")
    assert threads.threads_for(64, 64, 64) == 1            # 2^18 multiply-adds
    assert threads.threads_for(128, 128, 128) == 2         # 2^21
    assert threads.threads_for(1024, 1024, 1024) == 16
    # an explicit ceiling instead of the default count
    assert threads.threads_for(64, 64, 64, most=16) == 1
    assert threads.threads_for(128, 128, 128, most=16) == 2
    assert threads.threads_for(1024, 1024, 1024, most=3) == 3
    assert threads.threads_for(1024, 1024, 1024, most=1) == 1


def test_a_tiny_problem_skips_the_affinity_but_not_the_env_check(monkeypatch):
    """Below 2^21 multiply-adds the default is one thread whatever the CPUs, so
    threads_for does not read the affinity mask (0.6 us of an 8 x 8 x 8 call's 15); a
    bad $MICROKERNEL_NUM_THREADS is still reported there, and a larger problem still
    reads the mask."""
    from microkernel import threads
    reads = []
    real = os.sched_getaffinity
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: reads.append(pid) or real(pid))
    monkeypatch.delenv("MICROKERNEL_NUM_THREADS", raising=False)
    assert threads.threads_for(8, 8, 8) == 1 and threads.threads_for(127, 128, 128) == 1
    assert reads == []
    monkeypatch.setenv("MICROKERNEL_NUM_THREADS", "two")
    with pytest.raises(ValueError, match="MICROKERNEL_NUM_THREADS"):
        threads.threads_for(8, 8, 8)
    monkeypatch.delenv("MICROKERNEL_NUM_THREADS")
    assert threads.threads_for(128, 128, 128) == min(2, len(real(0)))
    assert reads == [0]


def test_bench_times_gemm_at_the_count_its_default_would_choose(monkeypatch):
    """bench / compare --threads N: our calls get N threads at most, fewer for a small
    problem (threads_for), as the peers' BLAS sizes its calls under a limit of N."""
    from microkernel import bench, workloads
    gm = sys.modules["microkernel.gemm"]          # the module (the package's gemm is the function)
    seen = []
    monkeypatch.setattr(gm, "gemm", lambda *a, threads=None, **kw: seen.append(threads))
    import microkernel as mk
    cons = bench.gemm_contenders([mk.get_kernel("scalar_4x4")], workloads.square([64, 512]),
                                 threads=4, peers=(), check=False)
    for c in cons:
        c.fn()
    assert seen == [1, 4]                          # 2^18 multiply-adds: 1; 2^27: 4


def test_our_workers_spin_briefly_unless_the_user_chose():
    """A fresh process: GOMP_SPINCOUNT is set to a short spin before libgomp loads; a
    user's own setting stays."""
    code = ("import os, numpy as np, microkernel as mk; mk.get_kernel('scalar_4x4'); "
            "from microkernel import threads; print(os.environ.get('OMP_WAIT_POLICY'), "
            "threads.runtime_note())")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.startswith("None GOMP_SPINCOUNT=20000"), out.stdout + out.stderr
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**env, "OMP_WAIT_POLICY": "ACTIVE"})
    assert out.stdout.startswith("ACTIVE OMP_WAIT_POLICY=ACTIVE (set by the user)"), out.stdout


def test_the_team_flow_adds_each_tiles_kc_blocks_in_order():
    """The team's flow (c_src/mk_team.h, mk_loops_flow) lets a thread start the next KC
    block's units while others finish the last block's, each unit waiting for the same
    C tiles' previous KC block. Over many blocks (kc = 16, nc = 48: 114 of them) on more
    threads than cores, 20 calls must give the float64 reference's answer and the same
    bits every time (a unit that ran ahead of its C tiles' previous KC block would add
    the KC blocks in another order, or race on the tiles)."""
    import numpy as np
    import microkernel as mk
    from microkernel import validate
    if os.environ.get("MICROKERNEL_THREADING", "team") != "team":
        pytest.skip("MICROKERNEL_THREADING forces another decomposition")
    rng = np.random.default_rng(11)
    A = rng.standard_normal((200, 300)).astype(np.float32)
    B = rng.standard_normal((300, 250)).astype(np.float32)
    C0 = rng.standard_normal((200, 250)).astype(np.float32)
    ref, bound = validate.reference(A, B, C0, 1.0, 0.5)
    first = None
    for _ in range(20):
        C = C0.copy()
        mk.gemm(A, B, C, beta=0.5, threads=7, blocking={"kc": 16, "mc": 24, "nc": 48})
        assert validate.check(C, ref, bound)[0]
        if first is None:
            first = C
        assert np.array_equal(C.view(np.uint32), first.view(np.uint32))


def test_home_units_and_one_counter_give_the_same_bits(tmp_path):
    """The flow's units taken by their home thread first (a contiguous range per thread),
    then stolen (MK_FLOW_HOME 1, the default, c_src/mk_team.h), handed out by one
    counter in order (MK_FLOW_HOME 0, the same driver built with it, as a kernel
    variant), and with B's pieces from one counter instead of each thread's own first
    (MK_FLOW_HOME_PIECES 0): on 3-7 threads, more than this machine's cores, each within
    the float64 bound and all bit for bit the same (the units and each tile's KC order do
    not depend on who takes them, nor the packed block on who packs it)."""
    import numpy as np
    import microkernel as mk
    from microkernel import validate
    from microkernel.build import c_src_dir
    if os.environ.get("MICROKERNEL_THREADING", "team") != "team":
        pytest.skip("MICROKERNEL_THREADING forces another decomposition")
    name = mk.kernels()[0]
    body = (c_src_dir() / "ukernels" / f"{name}.c").read_text()
    variants = [mk.get_kernel(name)]
    nc = 4 * variants[0].nr       # 4 NR panels per B block: up to 4 pieces, several parts
    for tag, define in (("counter", "MK_FLOW_HOME 0"), ("pieces", "MK_FLOW_HOME_PIECES 0")):
        src = tmp_path / f"{tag}_{name}.c"
        src.write_text(f"#define {define}\n" + body)
        variants.append(mk.get_kernel(name, source=src))
    rng = np.random.default_rng(13)
    for threads, (m, n, k) in [(3, (200, 250, 300)), (5, (131, 97, 260)), (7, (61, 300, 45)),
                               (4, (300, 40, 129))]:
        A = rng.standard_normal((m, k)).astype(np.float32)
        B = rng.standard_normal((k, n)).astype(np.float32)
        C0 = rng.standard_normal((m, n)).astype(np.float32)
        ref, bound = validate.reference(A, B, C0, 1.0, 0.5)
        outs = []
        for kern in variants:
            C = C0.copy()
            mk.gemm(A, B, C, beta=0.5, threads=threads, kernel=kern,
                    blocking={"kc": 16, "mc": 24, "nc": nc})
            assert validate.check(C, ref, bound)[0], (kern.label, threads, m, n, k)
            outs.append(C.view(np.uint32))
        assert all(np.array_equal(outs[0], o) for o in outs[1:]), (threads, m, n, k)


def _check_timeline(ft, ev, threads, kb):
    """The flow's rules in one call's timeline `ev` (flow_trace events) of a team of
    `threads` with `kb` KC blocks per NC block: each block's units and pieces each run
    once by an owner, numbered 0, 1, ... with none missing (the most units of a block as
    the call says, at most one piece per thread); a unit's work (its owner's after its
    waits, a thief's share) starts only after every panel of its block's B is packed
    and after the same unit of the previous KC block (the same C tiles) is done; a
    piece's packing (its owner's or a helper's) only after every unit of the block
    MK_FLOW_BUFS (3) back, its buffer's last readers, is done (an item is done when its
    owner and every thread that ran a share of it are, flow_trace.ends); every event
    lies inside its thread's time in the flow. Returns the pieces per block."""
    call = ev[ev["kind"] == ft.CALL]
    assert len(call) == 1 and call["slot"][0] == -1, call
    blocks = int(call["block"][0])
    th = ev[ev["kind"] == ft.THREAD]
    assert 1 <= len(th) <= threads and len(set(th["slot"])) == len(th)
    window = {int(s): (int(a), int(b)) for s, a, b in zip(th["slot"], th["t0"], th["t2"])}
    done, packed, count = {}, {}, {}
    for kind, table in ((ft.UNIT, done), (ft.PIECE, packed)):
        items = ev[ev["kind"] == kind]
        for t in range(blocks):
            idx = sorted(int(i) % ft.STOLEN for i in items["index"][items["block"] == t])
            assert idx == list(range(len(idx))) and idx, (kind, t, idx)
            count[kind, t] = len(idx)
        for e in items:
            lo, hi = window[int(e["slot"])]
            assert lo <= e["t0"] <= e["t1"] <= e["t2"] <= hi, e
            table[(int(e["block"]), int(e["index"]) % ft.STOLEN)] = e
    assert max(count[ft.UNIT, t] for t in range(blocks)) == int(call["index"][0])
    pieces = [count[ft.PIECE, t] for t in range(blocks)]
    assert max(pieces) <= threads, pieces
    ends, piece_ends = ft.ends(ev, ft.UNIT), ft.ends(ev, ft.PIECE)
    assert set(ends) == set(done) and set(piece_ends) == set(packed), \
        "a share of an item that has no owner"
    starts = {kind: [(key, int(e["t1"])) for key, e in table.items()]
              for kind, table in ((ft.UNIT, done), (ft.PIECE, packed))}
    for kind, share in ((ft.UNIT, ft.STEAL), (ft.PIECE, ft.PANELS)):
        for e in ev[ev["kind"] == share]:
            lo, hi = window[int(e["slot"])]
            assert lo <= e["t0"] <= e["t2"] <= hi, e
            starts[kind].append(((int(e["block"]), int(e["index"]) % ft.INWAIT), int(e["t0"])))
    for (t, u), start in starts[ft.UNIT]:
        last_piece = max(end for (tp, _), end in piece_ends.items() if tp == t)
        assert start >= last_piece, (t, u)
        if t % kb:
            assert start >= ends[(t - 1, u)], (t, u)
    for (t, p), start in starts[ft.PIECE]:
        if t >= 3:                                          # MK_FLOW_BUFS buffers in turn
            last_reader = max(end for (td, _), end in ends.items() if td == t - 3)
            assert start >= last_reader, (t, p)
    return pieces


def test_the_flow_timeline_shows_each_item_once_and_in_dependency_order(tmp_path, monkeypatch):
    """The MK_FLOW_TRACE build (c_src/mk_trace.h, microkernel.flow_trace) on 3-5 threads,
    more than this machine's cores: its C within the float64 bound and bit for bit that
    of the plain build; its timeline keeps the flow's rules (_check_timeline), several
    pieces in some block; and the breakdown's shares each lie in [0, 1]."""
    import numpy as np
    import microkernel as mk
    from microkernel import flow_trace as ft, validate
    if os.environ.get("MICROKERNEL_THREADING", "team") != "team":
        pytest.skip("MICROKERNEL_THREADING forces another decomposition")
    traced = ft.traced_kernel(None, tmp_path)
    trace = tmp_path / "events.bin"
    rng = np.random.default_rng(17)
    nc = 4 * traced.nr            # 4 NR panels per B block: up to 4 pieces
    most_pieces = 0
    for threads, (m, n, k) in [(3, (200, 250, 70)), (5, (131, 97, 50)), (4, (61, 300, 33))]:
        A = rng.standard_normal((m, k)).astype(np.float32)
        B = rng.standard_normal((k, n)).astype(np.float32)
        blk = {"kc": 16, "mc": 24, "nc": nc}
        plain = mk.gemm(A, B, threads=threads, kernel=traced.name, blocking=blk)
        monkeypatch.setenv("MICROKERNEL_FLOW_TRACE", str(trace))
        got = mk.gemm(A, B, threads=threads, kernel=traced, blocking=blk)
        monkeypatch.delenv("MICROKERNEL_FLOW_TRACE")
        assert validate.check(got, *validate.reference(A, B, None, 1.0, 0.0))[0]
        assert np.array_equal(plain.view(np.uint32), got.view(np.uint32))
        ev = ft.read(trace)
        trace.unlink()
        kb = -(-k // 16)                                    # KC blocks per NC block
        blocks = int(ev[ev["kind"] == ft.CALL]["block"][0])
        assert blocks % kb == 0 and blocks >= kb * -(-n // nc), (blocks, n)
        most_pieces = max(most_pieces, max(_check_timeline(ft, ev, threads, kb)))
        shares = ft.breakdown(ev, 2.0 * m * n * k)
        assert all(-1e-9 <= shares[s] <= 1 + 1e-9 for s in ft.SHARES), shares
    assert most_pieces >= 2, "no block had two pieces: the shapes no longer test them"


def test_two_threads_take_the_team_from_256_rows(tmp_path, monkeypatch):
    """gemm()'s 2-thread decomposition (c_src/driver.c, mk_threading, MK_TEAM2_MIN_M):
    the team's flow, which writes a timeline in the MK_FLOW_TRACE build, where C has 256
    rows or more; the slices, which write none, below. C within the float64 bound either
    way."""
    import numpy as np
    import microkernel as mk
    from microkernel import flow_trace as ft, validate
    monkeypatch.delenv("MICROKERNEL_THREADING", raising=False)
    traced = ft.traced_kernel(None, tmp_path)
    trace = tmp_path / "events.bin"
    rng = np.random.default_rng(23)
    teams = {}
    for m in (255, 256, 600):
        A = rng.standard_normal((m, 96)).astype(np.float32)
        B = rng.standard_normal((96, 130)).astype(np.float32)
        monkeypatch.setenv("MICROKERNEL_FLOW_TRACE", str(trace))
        got = mk.gemm(A, B, threads=2, kernel=traced)
        monkeypatch.delenv("MICROKERNEL_FLOW_TRACE")
        assert validate.check(got, *validate.reference(A, B, None, 1.0, 0.0))[0], m
        teams[m] = trace.exists() and ft.read(trace).size > 0
        if trace.exists():
            trace.unlink()
    assert teams == {255: False, 256: True, 600: True}


@pytest.mark.parametrize("item", ["unit", "last unit", "piece"])
def test_a_stalled_threads_item_is_finished_by_the_others(tmp_path, monkeypatch, item):
    """MK_FLOW_STEAL (c_src/mk_team.h): a traced build in which the thread that runs the
    first sliver of unit 0 of the first block (MK_FLOW_STALL_NS) or of the last block,
    which only the threads done with everything else can help (MK_FLOW_STALL_BLOCK=-1),
    or that packs the first panel of block 1's first piece (MK_FLOW_STALL_PIECE_NS),
    sleeps 30 ms after it, as a thread descheduled inside that item would. Other threads
    run the rest of that item (its UNIT and STEAL, or PIECE and PANELS, events come from
    two threads or more), the timeline keeps the flow's rules (_check_timeline), and C
    is within the float64 bound and bit for bit that of the plain build, and of a build
    whose items are never split (MK_FLOW_STEAL=0)."""
    import numpy as np
    import microkernel as mk
    from microkernel import flow_trace as ft, validate
    if os.environ.get("MICROKERNEL_THREADING", "team") != "team":
        pytest.skip("MICROKERNEL_THREADING forces another decomposition")
    stall = {"unit": ("MK_FLOW_STALL_NS=30000000",),
             "last unit": ("MK_FLOW_STALL_NS=30000000", "MK_FLOW_STALL_BLOCK=-1"),
             "piece": ("MK_FLOW_STALL_PIECE_NS=30000000",)}[item]
    stalled = ft.traced_kernel(None, tmp_path / "stall", stall)
    whole = ft.traced_kernel(None, tmp_path / "whole", ("MK_FLOW_STEAL=0",))
    trace = tmp_path / "events.bin"
    rng = np.random.default_rng(23)
    nr = stalled.nr
    m, n, k = 96, 32 * nr - 3, 64         # 2 NC blocks of 16 panels: units of 4 slivers
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    blk = {"kc": 16, "mc": 24, "nc": 16 * nr}
    plain = mk.gemm(A, B, threads=3, kernel=stalled.name, blocking=blk)
    monkeypatch.setenv("MICROKERNEL_FLOW_TRACE", str(trace))
    got = mk.gemm(A, B, threads=3, kernel=stalled, blocking=blk)
    monkeypatch.delenv("MICROKERNEL_FLOW_TRACE")
    unsplit = mk.gemm(A, B, threads=3, kernel=whole, blocking=blk)
    assert validate.check(got, *validate.reference(A, B, None, 1.0, 0.0))[0]
    assert np.array_equal(plain.view(np.uint32), got.view(np.uint32))
    assert np.array_equal(plain.view(np.uint32), unsplit.view(np.uint32))
    ev = ft.read(trace)
    _check_timeline(ft, ev, 3, 4)
    blocks = int(ev[ev["kind"] == ft.CALL]["block"][0])
    owner, share, block = {"unit": (ft.UNIT, ft.STEAL, 0), "last unit": (ft.UNIT, ft.STEAL, blocks - 1),
                           "piece": (ft.PIECE, ft.PANELS, 1)}[item]
    first = ev[(ev["block"] == block) & (((ev["kind"] == owner) & (ev["index"] % ft.STOLEN == 0))
                                         | ((ev["kind"] == share) & (ev["index"] % ft.INWAIT == 0)))]
    assert len(set(first["slot"])) >= 2, (f"no other thread ran a share of the stalled {item}",
                                          first)


HANG_SCRIPT = textwrap.dedent("""
    import sys, numpy as np, microkernel as mk
    from microkernel import flow_trace as ft, validate
    kern = ft.traced_kernel(None, sys.argv[1], ("MK_FLOW_STALL_DONE_NS=200000000",
                                                "MK_FLOW_STALL_BLOCK=2"))
    rng = np.random.default_rng(3)
    m, n, k = 72, 4 * kern.nr, 48
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    C = mk.gemm(A, B, threads=8, kernel=kern, blocking={"kc": 16, "nc": kern.nr})
    print("ok" if validate.check(C, *validate.reference(A, B, None, 1.0, 0.0))[0] else "wrong")
""")


def test_a_late_unit_of_a_last_kc_block_does_not_hang_the_call(tmp_path):
    """With 3 KC blocks per NC block (as many as the flow's B buffers), unit 0 of the
    first NC block's last KC block (block 2) is held 200 ms inside its last sliver
    (MK_FLOW_STALL_DONE_NS), so that unit 0 of block 6 finishes first. Until session 61
    its late done mark then overwrote block 6's in the ring of marks, and unit 0 of block
    7 waited for ever; the call must end, with C within the float64 bound."""
    if os.environ.get("MICROKERNEL_THREADING", "team") != "team":
        pytest.skip("MICROKERNEL_THREADING forces another decomposition")
    try:
        res = subprocess.run([sys.executable, "-c", HANG_SCRIPT, str(tmp_path)],
                             capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("the call hung: a late done mark overwrote a newer one")
    assert res.returncode == 0 and res.stdout.strip() == "ok", (res.stdout, res.stderr[-2000:])


POOL_SCRIPT = textwrap.dedent("""
    import json, os, sys, threading, numpy as np, microkernel as mk
    from microkernel import validate
    rng = np.random.default_rng(5)
    A = rng.standard_normal((190, 300)).astype(np.float32)
    B = rng.standard_normal((300, 170)).astype(np.float32)
    ref, bound = validate.reference(A, B, np.zeros((190, 170), np.float32), 1.0, 0.0)
    bad = []
    def calls(tag):
        for i in range(25):
            C = np.full((190, 170), np.nan, np.float32)
            mk.gemm(A, B, C, threads=3, blocking={"kc": 32, "nc": 48})
            if not validate.check(C, ref, bound)[0]:
                bad.append([tag, i])
    ts = [threading.Thread(target=calls, args=(t,)) for t in ("a", "b")]
    [t.start() for t in ts]
    [t.join() for t in ts]
    pid = os.fork()
    if pid == 0:                     # the child: one thread, its parent's pool not copied
        C = np.full((190, 170), np.nan, np.float32)
        mk.gemm(A, B, C, threads=3, blocking={"kc": 32, "nc": 48})
        ok = validate.check(C, ref, bound)[0] and len(os.listdir("/proc/self/task")) >= 3
        os._exit(0 if ok else 3)
    _, status = os.waitpid(pid, 0)
    print("RESULT " + json.dumps([bad, os.waitstatus_to_exitcode(status)]))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the pool is Linux's (futex)")
def test_the_flows_pool_serves_two_callers_at_once_and_a_forked_child():
    """The flow's own threads (c_src/mk_pool.h) take one call at a time: two Python
    threads calling gemm() at once (cffi drops the GIL) both get the reference's answer,
    one of them through OpenMP's team while the other has the pool. A child forked
    after the pool has workers has none of them: its first call must make its own (the
    child's thread count grows to the team's) and finish with the right answer."""
    env = {k: v for k, v in os.environ.items() if k != "MICROKERNEL_POOL"}
    env["MICROKERNEL_THREADING"] = "team"
    res = subprocess.run([sys.executable, "-c", POOL_SCRIPT], capture_output=True, text=True,
                         env=env, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    assert json.loads(line[len("RESULT "):]) == [[], 0]


def test_threadpoolctl_limits_are_clamped_and_nest():
    """threadpoolctl sets every library before ours: a limit out of range is clamped
    (an exception would leave the others changed), and an inner limit does not clear the
    outer one."""
    import threadpoolctl
    from microkernel.threads import default_threads, max_threads
    with threadpoolctl.threadpool_limits(1, user_api="microkernel"):
        with threadpoolctl.threadpool_limits(0, user_api="microkernel"):
            assert default_threads() == 1
        assert default_threads() == 1
        with threadpoolctl.threadpool_limits(10 ** 6, user_api="microkernel"):
            assert default_threads() == max_threads()
        assert default_threads() == 1


def test_contended_adds_threads_only_for_the_default_count(monkeypatch):
    """With $MICROKERNEL_CONTENTION=1, contended(t, macs, awake, ours): one more thread
    per other runnable thread of
    this process (the fewer of the system's runnable threads less the caller and our
    awake workers, and the process's threads less the caller and our workers) when they
    are at least t / 4; at most 3t and one per 2^20 multiply-adds; never for an explicit
    count or with the switch off."""
    from microkernel import threads
    monkeypatch.delenv("MICROKERNEL_NUM_THREADS", raising=False)
    monkeypatch.setenv("MICROKERNEL_CONTENTION", "1")
    monkeypatch.setattr(threads, "max_threads", lambda: 128)
    seen, mine = [1], [64]
    monkeypatch.setattr(threads, "runnable_threads", lambda: seen[0])
    monkeypatch.setattr(threads, "process_threads", lambda: mine[0])
    big = 4096 ** 3
    assert threads.contended(16, big) == 16                    # only the caller runs
    seen[0] = 31                                               # 30 spinning workers
    assert threads.contended(16, big) == 46
    assert threads.contended(16, big, awake=15) == 31          # 15 of them are ours
    mine[0] = 1 + 15 + 10                                      # the caller, 15 of ours and 10
    assert threads.contended(16, big, ours=15) == 26           # others: 20 runnable elsewhere
    mine[0] = 16                                               # only ours in this process:
    assert threads.contended(16, big, ours=15) == 16           # other processes' load
    mine[0] = None
    assert threads.contended(16, big) == 16
    mine[0] = 64
    assert threads.contended(1, big) == 1
    seen[0] = 4                                                # 3 others: < 16 / 4
    assert threads.contended(16, big) == 16
    seen[0] = 20
    assert threads.contended(2, big) == 6                      # at most 3x
    assert threads.contended(16, 1 << 24) == 16                # 2^24 / 2^20 = 16 threads
    assert threads.contended(16, 20 << 20) == 20
    seen[0] = None                                             # /proc/loadavg unreadable
    assert threads.contended(16, big) == 16
    seen[0] = 31
    assert threads.contended(16, big) == 46
    monkeypatch.setenv("MICROKERNEL_CONTENTION", "0")
    assert threads.contended(16, big) == 16
    monkeypatch.delenv("MICROKERNEL_CONTENTION")               # off by default
    assert threads.contended(16, big) == 16
    monkeypatch.setenv("MICROKERNEL_CONTENTION", "1")
    monkeypatch.setenv("MICROKERNEL_NUM_THREADS", "16")        # the user's count: kept
    assert threads.contended(16, big) == 16
    monkeypatch.delenv("MICROKERNEL_NUM_THREADS")
    monkeypatch.setattr(threads, "_LIMIT", [16])               # a threadpoolctl limit
    assert threads.contended(16, big) == 16


def test_runnable_and_process_threads_read_proc():
    import threading
    from microkernel import threads
    with open("/proc/loadavg") as f:
        assert "/" in f.read().split()[3]                       # proc_loadavg(5)
    r = threads.runnable_threads()
    assert isinstance(r, int) and r >= 1                        # the caller runs
    before = threads.process_threads()
    stop = threading.Event()
    extra = [threading.Thread(target=stop.wait) for _ in range(3)]
    for th in extra:
        th.start()
    try:       # (a pool worker of an earlier test may exit meanwhile: its 2 s idle)
        assert before + 3 - 2 <= threads.process_threads() <= before + 3
        assert threads.process_threads() - len([t for t in extra if t.is_alive()]) \
            <= before
    finally:
        stop.set()
        for th in extra:
            th.join()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the pool is Linux's (futex)")
def test_pool_threads_counts_the_workers_of_every_loaded_module():
    """contended()'s "ours": the pool workers of every kernel module loaded, not only the
    calling one's (each module has its own pool), and each worker named "mk-pool" in
    /proc (c_src/mk_pool.h, MK_POOL_NAME). Run in a child: the workers retire after 2 s
    asleep, and another test's modules must not enter the count."""
    code = textwrap.dedent("""
        import json, os, numpy as np, microkernel as mk
        from microkernel import kernel
        A = np.ones((256, 256), np.float32)
        ks = [mk.get_kernel(), mk.get_kernel("scalar_3x5")]     # two modules, two pools
        assert ks[0].lib is not ks[1].lib
        for k in ks:
            mk.gemm(A, A, kernel=k, threads=2)              # one worker per module's pool
        each = [k.lib.mk_pool_threads(0) for k in ks]
        names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")]
        print(json.dumps([each, kernel.pool_threads(0), all(k in kernel.LOADED for k in ks),
                          names.count("mk-pool")]))
    """)
    env = {k: v for k, v in os.environ.items() if k != "MICROKERNEL_POOL"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    each, total, loaded, named = json.loads(out.stdout.splitlines()[-1])
    assert loaded and min(each) >= 1, out.stdout
    assert total == sum(each) == named, out.stdout


def test_gemm_takes_more_threads_beside_busy_threads_and_stays_correct():
    """Threads of this process busy on every CPU (numpy ufuncs, which release the GIL),
    $MICROKERNEL_CONTENTION=1: gemm() with the default count uses more threads than the CPUs (the team's flow,
    oversubscribed), and C matches one thread's; an explicit count is kept; busy
    processes outside add at most the process's other threads."""
    code = textwrap.dedent("""
        import json, subprocess, sys, threading, time
        import numpy as np
        import microkernel as mk
        from microkernel import threads as th
        cpus = th.available_cpus()
        gm = sys.modules["microkernel.gemm"]
        used = []
        real = gm.contended
        gm.contended = lambda *a: used.append(real(*a)) or used[-1]
        rng = np.random.default_rng(1)
        A = rng.standard_normal((384, 320), dtype=np.float32)
        B = rng.standard_normal((320, 400), dtype=np.float32)
        one = mk.gemm(A, B, threads=1)
        mk.gemm(A, B, threads=cpus)
        time.sleep(0.1)
        lib = mk.get_kernel().module.lib
        foreign = th.process_threads() - 1 - lib.mk_pool_threads(0)   # numpy's, asleep
        busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(2 * cpus)]
        try:
            time.sleep(0.5)
            outside = mk.gemm(A, B)
        finally:
            for p in busy:
                p.kill()
        stop = threading.Event()
        def spin():
            x = np.ones(1 << 20); y = np.empty_like(x)
            while not stop.is_set():
                np.exp(x, out=y)
        spinners = [threading.Thread(target=spin) for _ in range(2 * cpus)]
        for s in spinners:
            s.start()
        try:
            time.sleep(0.2)
            C = mk.gemm(A, B)
            explicit = mk.gemm(A, B, threads=cpus)
        finally:
            stop.set()
            for s in spinners:
                s.join()
        print(json.dumps([cpus, foreign, used, [float(np.max(np.abs(x - one)))
                                       for x in (outside, C, explicit)]]))
    """)
    env = {k: v for k, v in os.environ.items() if k != "MICROKERNEL_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**env, "MICROKERNEL_CONTENTION": "1"}, timeout=120)
    assert out.returncode == 0, out.stderr
    cpus, foreign, used, errs = json.loads(out.stdout.splitlines()[-1])
    assert len(used) == 2, out.stdout                   # the explicit call: not asked
    # beside busy processes: at most one more per other thread of this process (its
    # sleeping BLAS workers may count: a stated limit of contended()); beside busy
    # threads of its own, more than the CPUs
    assert used[0] <= cpus + foreign and used[1] > cpus, out.stdout
    assert max(errs) < 1e-4
