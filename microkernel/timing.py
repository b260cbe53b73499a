"""The one timing engine: contenders timed in interleaved rounds, in one process.

Everything that compares kernels (``microkernel sweep``, ``bench``, ``compare``, the
pytest-benchmark suite's figures, the FMA peak and the L1 figure) times through
:class:`Rounds`:

* contenders are grouped by *shape* (a GEMM problem, or "L1" for the micro-kernel
  and peak loops); a contender is one call of the work (``fn()``), with its flop count;
* **calibration** as pyperf does it (pyperf's ``calibrate_loops``: loops doubled
  from 1 until one sample lasts at least ``min_time``), after one untimed warm-up
  call, per contender;
* **rounds**: each round takes one sample of every active contender of every shape;
  the shapes' order and each shape's contenders' order are shuffled every round
  (seeded), so no contender always follows the same one and a slow spell of a shared
  machine falls on the contenders of one round together;
* a sample is ``loops`` back-to-back calls timed by ``clock``; with ``pause`` > 0
  (several threads: OpenBLAS's and libgomp's workers spin for a while after a call)
  the engine sleeps that long, then makes one untimed call, before each sample;
* samples are kept per contender as seconds per call (NaN in rounds where a contender
  was not timed), and exported as pyperf benchmarks (:meth:`Rounds.to_pyperf`) so that
  ``python -m pyperf stats`` / ``compare_to`` read them.

:class:`Race` adds the budget: rounds until a stopping rule or the time budget says
stop, dropping contenders that :func:`microkernel.stats.verdict` finds clearly behind
(after ``min_rounds``). The clock and the sleep are injectable: the tests drive the
engine with a fake clock, never with a real timing.
"""
from __future__ import annotations

import dataclasses
import math
import random
import time
from typing import Callable

import numpy as np

from . import stats

__all__ = ["Contender", "Rounds", "Race", "RaceResult", "DEFAULT_MIN_TIME"]

#: seconds one sample lasts at least (pyperf's default is 0.1 s per value; shorter
#: samples give more rounds in the same time, and it is rounds that the pairing needs)
DEFAULT_MIN_TIME = 0.02
#: calibration never goes past this many loops (pyperf caps at 2**32)
MAX_LOOPS = 2 ** 20


@dataclasses.dataclass
class Contender:
    """One thing to time: ``fn()`` does one call of the work (``flops`` floating-point
    operations, 0 when it is not a flop count) on shape ``shape``. ``reference``
    marks a reference column (numpy, another library): timed in every round, never
    dropped from a race and never the race's leader."""
    name: str
    fn: Callable[[], object]
    flops: float = 0.0
    shape: str = ""
    reference: bool = False


class Rounds:
    """Interleaved rounds over shapes of contenders (see the module docstring).

    ``contenders``: every Contender; (shape, name) must be unique. ``progress``, if
    given, is called as ``progress(text)`` before each round.

    Raises ValueError for duplicate (shape, name) pairs, ``min_time`` <= 0 or
    ``pause`` < 0.
    """

    def __init__(self, contenders, *, min_time: float = DEFAULT_MIN_TIME, pause: float = 0.0,
                 clock: Callable[[], float] = time.perf_counter,
                 sleep: Callable[[float], None] = time.sleep, seed: int = 0,
                 progress: Callable[[str], None] | None = None):
        if not min_time > 0:
            raise ValueError(f"min_time must be > 0 seconds, got {min_time}")
        if pause < 0:
            raise ValueError(f"pause must be >= 0 seconds, got {pause}")
        self.contenders = list(contenders)
        self.shapes: list[str] = list(dict.fromkeys(c.shape for c in self.contenders))
        self.names: list[str] = list(dict.fromkeys(c.name for c in self.contenders))
        self._by_key = {}
        for c in self.contenders:
            key = (c.shape, c.name)
            if key in self._by_key:
                raise ValueError(f"contender {c.name!r} given twice for shape {c.shape!r}")
            self._by_key[key] = c
        self.min_time, self.pause = min_time, pause
        self.clock, self.sleep = clock, sleep
        self.rng = random.Random(seed)
        self.progress = progress
        self.loops: dict[tuple[str, str], int] = {}
        self.times: dict[tuple[str, str], list[float]] = {k: [] for k in self._by_key}
        self.rounds = 0

    # -- one sample ------------------------------------------------------------------
    def _timed(self, fn, loops: int) -> float:
        if self.pause:
            self.sleep(self.pause)
            fn()
        t0 = self.clock()
        for _ in range(loops):
            fn()
        return (self.clock() - t0) / loops

    def calibrate(self) -> None:
        """Warm up each contender once, then double its loops from 1 until a sample
        lasts ``min_time`` (pyperf's rule). Done once, before the first round."""
        for key, c in self._by_key.items():
            if key in self.loops:
                continue
            c.fn()                       # warm-up: first-call costs, caches, pages
            loops = 1
            while True:
                dt = self._timed(c.fn, loops) * loops
                if dt >= self.min_time or loops >= MAX_LOOPS:
                    break
                # pyperf doubles; a sample far too short jumps by the power of two
                # that its shortfall asks for (at most 1024x at once)
                need = self.min_time / max(dt, 1e-12)
                loops *= min(1024, max(2, 2 ** math.ceil(math.log2(need))))
            self.loops[key] = min(loops, MAX_LOOPS)

    def round(self, active=None) -> None:
        """One round: a sample of every active contender (``active``: names, default
        all; references always), shapes and contenders in shuffled order."""
        self.calibrate()
        if self.progress:
            self.progress(f"round {self.rounds + 1}")
        shapes = self.shapes[:]
        self.rng.shuffle(shapes)
        done = set()
        for shape in shapes:
            keys = [k for k in self._by_key if k[0] == shape
                    and (active is None or k[1] in active or self._by_key[k].reference)]
            self.rng.shuffle(keys)
            for key in keys:
                self.times[key].append(self._timed(self._by_key[key].fn, self.loops[key]))
                done.add(key)
        for key in self._by_key:
            if key not in done:
                self.times[key].append(math.nan)
        self.rounds += 1

    # -- results -----------------------------------------------------------------------
    def matrix(self, name: str) -> np.ndarray:
        """Seconds per call of ``name``, shape (shapes, rounds); NaN where not timed
        (or where the contender has no such shape)."""
        out = np.full((len(self.shapes), self.rounds), np.nan)
        for i, shape in enumerate(self.shapes):
            t = self.times.get((shape, name))
            if t is not None:
                out[i, :len(t)] = t
        return out

    def matrices(self, names=None) -> dict[str, np.ndarray]:
        return {n: self.matrix(n) for n in (names or self.names)}

    def contender(self, shape: str, name: str) -> Contender:
        return self._by_key[(shape, name)]

    def gflops(self, shape: str, name: str) -> float:
        """GFLOP/s of the median sample of ``name`` on ``shape``."""
        return stats.gflops(self.contender(shape, name).flops,
                            np.asarray(self.times[(shape, name)], dtype=float))

    def samples(self) -> list[dict]:
        """Every sample, for JSON: shape, contender, loops, flops, seconds per call per
        round (None where not timed)."""
        return [{"shape": s, "contender": n, "loops": self.loops.get((s, n)),
                 "flops": self._by_key[(s, n)].flops,
                 "seconds": [None if math.isnan(t) else t for t in self.times[(s, n)]]}
                for (s, n) in self._by_key]

    def to_pyperf(self):
        """A ``pyperf.BenchmarkSuite``: one benchmark per (shape, contender), named
        ``"<contender> <shape>"``, one run of its samples (seconds per call)."""
        import pyperf
        benches = []
        for (s, n), t in self.times.items():
            vals = [x for x in t if not math.isnan(x)]
            if not vals:
                continue
            md = {"name": f"{n} {s}".strip(), "loops": self.loops.get((s, n), 1),
                  "unit": "second"}
            benches.append(pyperf.Benchmark([pyperf.Run(vals, metadata=md,
                                                        collect_metadata=False)]))
        return pyperf.BenchmarkSuite(benches)


@dataclasses.dataclass
class RaceResult:
    """What a race ends with: the verdict, why it stopped, how many rounds and how long."""
    verdict: stats.Verdict
    stopped: str
    rounds: int
    seconds: float
    dropped: dict          # name -> round after which it was dropped
    revived: dict = dataclasses.field(default_factory=dict)   # name -> rounds it came back


class Race:
    """Rounds until the leader is separated (every challenger behind it at ``margin``,
    :func:`stats.verdict`), every challenger is shown to be within a positive margin,
    ``max_rounds`` are done, or ``budget`` seconds of the injected clock are spent,
    whichever comes first; never fewer than ``min_rounds``, and a separation that
    leaves any challenger still being timed (behind, but not clearly) counts from
    ``2 * min_rounds`` rounds on (a bootstrap over 5 rounds is too narrow to claim an
    order with). Both the separation and the equivalence are checked on the verdict
    of the rounds so far, and neither before :func:`stats.rounds_needed` rounds (6 at
    95%: fewer cannot show a difference, and the verdict then ties every contender).

    Dropping: from ``min_rounds`` on, a contender *clearly* behind the leader (the
    upper end of its interval below ``1 - max(margin, drop)``) is no longer timed.
    Before that, from ``early_rounds`` on, only a contender *far* behind is dropped:
    its interval below ``1 - early_factor * max(margin, drop)`` (with 3 rounds the
    interval is about the range of the per-round ratios, so every round must have put
    it that far behind), which leaves the budget to the rounds that separate the
    leaders. A dropped contender that is no longer clearly behind the leader (the
    leader changed: a slow spell had hit it) is timed again from the next round, so
    a dropped contender is always behind in the final verdict. Before
    :func:`stats.rounds_needed` rounds the nearest challenger is never dropped: a race
    left with the leader alone that early could never show it ahead. References are
    timed every round and never ranked."""

    def __init__(self, rounds: Rounds, *, margin: float = stats.DEFAULT_MARGIN,
                 level: float = stats.DEFAULT_LEVEL, min_rounds: int = 5,
                 max_rounds: int = 60, budget: float | None = None,
                 n_boot: int = 1000, early_rounds: int = 3, early_factor: float = 3.0,
                 drop: float = stats.DROP_MARGIN):
        if min_rounds < 2:
            raise ValueError(f"min_rounds must be >= 2, got {min_rounds}")
        if early_rounds < 2:
            raise ValueError(f"early_rounds must be >= 2, got {early_rounds}")
        if not early_factor >= 1:
            raise ValueError(f"early_factor must be >= 1, got {early_factor}")
        self.early_rounds, self.early_factor = early_rounds, early_factor
        if max_rounds < min_rounds:
            raise ValueError(f"max_rounds ({max_rounds}) < min_rounds ({min_rounds})")
        if budget is not None and not budget > 0:
            raise ValueError(f"budget must be > 0 seconds, got {budget}")
        if not 0 <= drop < 1:
            raise ValueError(f"drop must be in [0, 1), got {drop}")
        self.r = rounds
        self.margin, self.level = margin, level
        #: paired rounds a verdict at ``level`` needs (stats.rounds_needed)
        self.needed = stats.rounds_needed(level)
        #: a contender whose interval lies below 1 - this is dropped
        self.drop = max(margin, drop)
        self.min_rounds, self.max_rounds, self.budget = min_rounds, max_rounds, budget
        self.n_boot = n_boot
        refs = {c.name for c in rounds.contenders if c.reference}
        self.ranked = [n for n in rounds.names if n not in refs]
        if not self.ranked:
            raise ValueError("a race needs at least one contender that is not a reference")
        self.active = list(self.ranked)
        self.dropped: dict[str, int] = {}
        self.revived: dict[str, list[int]] = {}

    def current(self) -> stats.Verdict:
        """The verdict over the rounds so far, the leader among the active contenders;
        a dropped one is compared with it over the rounds both were timed in (tied
        when that does not show it behind: the race then times it again)."""
        return stats.verdict(self.r.matrices(self.ranked), margin=self.margin,
                             level=self.level, n_boot=self.n_boot, eligible=self.active)

    @staticmethod
    def _below(v: stats.Verdict, floor: float) -> set:
        """The contenders whose interval against ``v``'s leader lies wholly below ``floor``."""
        return {n for n, c in v.comparisons.items() if n != v.leader and c.vs_leader.hi < floor}

    def _drop(self, names, v: stats.Verdict) -> None:
        names = [n for n in self.active if n in names]
        if self.r.rounds < self.needed and names and len(self.active) - len(names) < 2:
            # the leader would be left alone before the rounds a verdict needs: the
            # nearest challenger stays
            names.remove(max(names, key=lambda n: v.comparisons[n].vs_leader.point))
        for name in names:
            self.active.remove(name)
            self.dropped[name] = self.r.rounds

    def _drop_far_behind(self) -> None:
        """The early rounds' rule (see the class docstring)."""
        v = self.current()
        self._drop(self._below(v, 1 - self.early_factor * self.drop), v)

    def run(self) -> RaceResult:
        start = self.r.clock()
        stopped = "max_rounds"
        last = 0.0                       # seconds the latest round took
        while self.r.rounds < self.max_rounds:
            t0 = self.r.clock()
            self.r.round(self.active)
            last = self.r.clock() - t0
            if self.r.rounds < self.min_rounds:
                if self.r.rounds >= self.early_rounds:
                    self._drop_far_behind()
                continue
            v = self.current()
            clear = self._below(v, 1 - self.drop)
            self._drop(clear, v)
            for name in [n for n in self.dropped if n not in clear]:
                del self.dropped[name]              # not clearly behind this leader: back in
                self.active.append(name)
                self.revived.setdefault(name, []).append(self.r.rounds)
            if len(self.active) == 1:
                stopped = "separated"
                break
            rest = [v.comparisons[n] for n in self.active if n != v.leader]
            if self.r.rounds >= max(2 * self.min_rounds, self.needed):
                if all(c.status == "behind" for c in rest):
                    stopped = "separated"    # behind at the margin, not clearly
                    break
                if self.margin > 0 and all(c.vs_leader.lo >= 1 - self.margin
                                           and c.vs_leader.hi <= 1 + self.margin for c in rest):
                    stopped = "equivalent"   # every challenger shown to be within the margin
                    break
            # stop when another round like the last would overrun the budget
            if self.budget is not None and self.r.clock() - start + last > self.budget:
                stopped = "budget"
                break
        return RaceResult(self.current(), stopped, self.r.rounds, self.r.clock() - start,
                          dict(self.dropped), {n: list(r) for n, r in self.revived.items()})
