"""The timeline of the team's flow: where a multi-threaded gemm() call's time goes.

The team's flow (c_src/mk_team.h, ``mk_loops_flow``: by default three or more threads,
or two on C of 256 rows or more) hands out items: pieces (a share of a KC x NC block of
B, packed into a shared buffer) and units (a chunk of A's rows times one part of a B
block, run through the macro-kernel). A kernel module built with ``MK_FLOW_TRACE``
(c_src/mk_trace.h; :func:`traced_kernel` builds one) records, in each team call, one
event per item and per thread with CLOCK_MONOTONIC nanoseconds, and appends them to the
file named by ``$MICROKERNEL_FLOW_TRACE``. :func:`read` loads that file as a numpy
structured array (:data:`EVENT`), :func:`breakdown` splits one call's time into shares,
and ``bench/flow_trace.py`` runs it on squares and prints them.

Event kinds (field ``kind``) and the meaning of ``t0, t1, t2``:

* :data:`PIECE`, :data:`UNIT`: taken (before its waits), its waits over, its owner's
  share done (taken before that share is counted; others may still run the rest; t2 ==
  t1: others ran all of it); a unit's ``index`` has :data:`STOLEN` added when it was not
  in its thread's home range;
* :data:`STEAL`: slivers of a unit (``block``, ``index``) run by a thread other than its
  owner (``MK_FLOW_STEAL``), :data:`PANELS`: panels of a piece packed by a thread other
  than its owner: its start, the same, its end; ``index`` has :data:`INWAIT` added when
  it ran inside a wait of one of that thread's pieces or units;
* :data:`THREAD`: the thread's entry into the flow, 0, its exit (``index``: the team's
  threads);
* :data:`CALL`: ``mk_run_team``'s entry, the threads' start (pool or OpenMP), its end
  (``block``: the blocks T; ``index``: the units of a block; ``slot`` -2 when events
  were dropped past MK_TR_MAX).
"""
from __future__ import annotations

import os
import tempfile

import numpy as np

__all__ = ["EVENT", "PIECE", "UNIT", "THREAD", "CALL", "STEAL", "PANELS", "STOLEN", "INWAIT",
           "SHARES", "traced_kernel", "read", "ends", "breakdown"]

#: one event, 40 bytes, as c_src/mk_trace.h writes it (native byte order: little on the
#: x86-64 and aarch64 machines this project runs on)
EVENT = np.dtype([("call", "<i4"), ("slot", "<i2"), ("kind", "<i2"), ("block", "<i4"),
                  ("index", "<i4"), ("t0", "<i8"), ("t1", "<i8"), ("t2", "<i8")])
PIECE, UNIT, THREAD, CALL, STEAL, PANELS = 0, 1, 2, 3, 4, 5
STOLEN = 1 << 30
INWAIT = 1 << 29
#: the shares :func:`breakdown` splits threads x the call's time into (they add up to 1)
SHARES = ("setup", "join", "units", "pieces", "wait", "between", "after")


def traced_kernel(name: str | None = None, directory: str | os.PathLike | None = None,
                  defines: tuple[str, ...] = ()):
    """The fp32 tile ``name`` (default: this machine's) built with MK_FLOW_TRACE: a
    kernel variant (``get_kernel(name, source=)``) whose team calls write their
    timeline to ``$MICROKERNEL_FLOW_TRACE``. ``defines``: more of the driver's macros,
    ``"NAME"`` or ``"NAME=VALUE"`` (e.g. ``"MK_FLOW_HOME=0"``), defined ahead of it. Its
    source goes into ``directory`` (made if missing; a new temporary one by default).
    Raises TileError (not an fp32 tile; a define that is not NAME or NAME=VALUE), and
    what :func:`microkernel.get_kernel` raises."""
    from .codegen import generate
    from .dispatch import get_kernel
    from .tile import TileError, TileSpec
    spec = TileSpec.from_name(get_kernel(name).name)
    if spec.types != "f32":
        raise TileError(f"{spec.name} is not an fp32 tile: the flow's timeline is built "
                        "from the fp32 generator")
    head = ["#define MK_FLOW_TRACE 1"]
    for d in defines:
        key, _, value = d.partition("=")
        if not key.isidentifier():
            raise TileError(f"define {d!r}: expected NAME or NAME=VALUE")
        head.append(f"#define {key} {value or 1}")
    directory = directory or tempfile.mkdtemp(prefix="flow_trace_")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(os.fspath(directory), f"trace_{spec.name}.c")
    with open(path, "w") as fh:
        fh.write("\n".join(head) + "\n" + generate(spec))
    return get_kernel(spec.name, source=path)


def read(path: str | os.PathLike) -> np.ndarray:
    """The events in ``path`` (a structured array of :data:`EVENT`). Raises ValueError
    when the file's size is not a whole number of events."""
    size = os.path.getsize(path)
    if size % EVENT.itemsize:
        raise ValueError(f"{path}: {size} bytes is not a whole number of "
                         f"{EVENT.itemsize}-byte events")
    return np.fromfile(path, dtype=EVENT)


def ends(events: np.ndarray, kind: int) -> dict:
    """One call's units' (``kind`` :data:`UNIT`) or pieces' (:data:`PIECE`) ends:
    {(block, index): ns}, the latest end of the item's owner and of any thread that ran
    a share of it (:data:`STEAL` slivers of a unit, :data:`PANELS` of a piece), i.e.
    when its C tiles were all written or its B panels all packed. An owner whose share
    others ran entirely (its event ends where its waits did, t2 == t1) does not count:
    it ended after the item. Raises ValueError for another kind."""
    if kind not in (UNIT, PIECE):
        raise ValueError(f"kind {kind}: ends are those of UNIT ({UNIT}) or PIECE ({PIECE})")
    share = STEAL if kind == UNIT else PANELS
    out: dict = {}
    for k, flag in ((kind, STOLEN), (share, INWAIT)):
        for e in events[events["kind"] == k]:
            if k == kind and e["t2"] == e["t1"]:
                continue
            key = (int(e["block"]), int(e["index"]) % flag)
            out[key] = max(out.get(key, 0), int(e["t2"]))
    return out


def breakdown(events: np.ndarray, flops: float) -> dict:
    """One call's events (those of one ``call`` number) as shares of threads x the
    call's time, each in [0, 1], adding up to 1 (:data:`SHARES`):

    setup (the call's entry to the threads' start), join (that to each thread's entry),
    units and pieces (inside their work), wait (inside their waits), between (in the
    flow, in no item), after (a thread's exit to the call's end); and ``call_us``,
    ``gflops`` (``flops`` over the call's time), ``unit_gflops_per_thread`` (``flops``
    over the units' summed time: one core's rate inside the macro-kernels), ``stolen``
    (the share of units run away from their home thread), ``steal`` (the share of the
    units' time spent on slivers run by a thread other than the unit's owner), ``join_max_us``,
    ``unit_time_spread`` (the largest thread's unit time over the mean), ``blocks`` and
    ``units_per_block``. Raises ValueError when the call has no single CALL event, or
    when its events overflowed the traced build's buffer (the CALL event's slot -2)."""
    call = events[events["kind"] == CALL]
    if len(call) != 1:
        raise ValueError(f"{len(call)} call events in one call's events")
    if call["slot"][0] == -2:
        raise ValueError("the call recorded more events than the traced build keeps "
                         "(MK_TR_MAX, c_src/mk_trace.h): some were dropped; build it "
                         "with a larger MK_TR_MAX (a define)")
    c0, c1, c2 = (int(call[f][0]) for f in ("t0", "t1", "t2"))
    th = events[events["kind"] == THREAD]
    units, pieces = events[events["kind"] == UNIT], events[events["kind"] == PIECE]
    steals, panels = events[events["kind"] == STEAL], events[events["kind"] == PANELS]
    span = float((c2 - c0) * len(th))
    steal_t = float((steals["t2"] - steals["t0"]).sum())
    unit_t = float((units["t2"] - units["t1"]).sum()) + steal_t
    piece_t = float((pieces["t2"] - pieces["t1"]).sum() + (panels["t2"] - panels["t0"]).sum())
    helped = np.concatenate([steals, panels])
    in_wait = helped["index"] >= INWAIT          # held inside a piece's or unit's wait
    wait_t = float((units["t1"] - units["t0"]).sum() + (pieces["t1"] - pieces["t0"]).sum()
                   - (helped["t2"] - helped["t0"])[in_wait].sum())
    in_flow = float((th["t2"] - th["t0"]).sum())
    per_thread = np.array([float((units["t2"] - units["t1"])[units["slot"] == s].sum()
                                 + (steals["t2"] - steals["t0"])[steals["slot"] == s].sum())
                           for s in th["slot"]])
    return {
        "threads": int(len(th)),
        "call_us": (c2 - c0) / 1e3,
        "gflops": flops / (c2 - c0),
        "setup": (c1 - c0) * len(th) / span,
        "join": float((th["t0"] - c1).sum()) / span,
        "units": unit_t / span,
        "pieces": piece_t / span,
        "wait": wait_t / span,
        "between": (in_flow - unit_t - piece_t - wait_t) / span,
        "after": float((c2 - th["t2"]).sum()) / span,
        "unit_gflops_per_thread": flops / unit_t if unit_t else float("nan"),
        "stolen": float((units["index"] >= STOLEN).mean()) if len(units) else 0.0,
        "steal": steal_t / unit_t if unit_t else 0.0,
        "join_max_us": float((th["t0"] - c1).max()) / 1e3,
        "unit_time_spread": float(per_thread.max() / per_thread.mean())
        if per_thread.mean() else 1.0,
        "blocks": int(call["block"][0]),
        "units_per_block": int(call["index"][0]),
    }
