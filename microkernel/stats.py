"""Statistics of interleaved timings: paired ratios, bootstrap intervals, the verdict.

Every comparison here is *paired by round*: contenders are timed in the same rounds
(:mod:`microkernel.timing`), so a slow spell of a shared machine hits the contenders of
one round together, and the ratio of two contenders' times taken in the same round
cancels most of it. For a workload of several shapes:

* per shape, the median over rounds of the per-round ratio ``t_ref / t_x`` (> 1: x is
  faster than the reference);
* over the workload, the geometric mean of the per-shape medians (each shape counts
  once, whatever its size);
* its interval: a percentile bootstrap over rounds (Efron and Tibshirani, "An
  Introduction to the Bootstrap", 1993, ch. 13), resampling whole rounds, the same
  resample for every shape, so that the pairing and the correlation between shapes of
  one round are kept.

The verdict of a race (:func:`verdict`) names a leader and sorts every other
contender against it: *behind* when the whole interval of its speed relative to the
leader lies below ``1 - margin``, else *tied* with the leader. The leader is
*separated* (a winner) when every other contender is behind. Fewer paired rounds than
:func:`rounds_needed` (6 at 95%) cannot show a difference at all: when no challenger
was paired with the leader in that many rounds, every one is tied and the verdict says
that the rounds were too few. (With n rounds the percentile interval is about the
range of the n per-round ratios, and the chance that all n go the same way when two
contenders do not differ is 2 x 0.5^n: 25% for 3 rounds.) The default margin is 0:
a contender is behind when the interval shows it slower at all, and the verdict claims
the order, not a size. That puts the line between "tied" and "behind" at the top edge
of the landscape, at the leader's own speed, where tiles are fewest; a margin of a few
percent cuts through the band of tiles 1-5% behind the leader that every ISA's sweep
shows, and the tiles near that line flip in and out of the tie from run to run
(docs/design-notes.md, "The verdict"). A positive ``margin`` is a tolerance a user may
ask for. Races drop contenders clearly behind (:data:`DROP_MARGIN`) to give their
rounds to the leaders.

Inputs are arrays of seconds per call shaped ``(shapes, rounds)``, NaN where a
contender was not timed in a round (after it was dropped from a race).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

__all__ = ["Interval", "Comparison", "Verdict", "paired_ratios", "workload_ratio",
           "bootstrap", "compare", "verdict", "speed_scores", "rounds_needed",
           "interval_caveat", "DEFAULT_LEVEL", "DEFAULT_MARGIN", "DROP_MARGIN",
           "DEFAULT_BOOT"]

#: confidence level of every interval
DEFAULT_LEVEL = 0.95
#: relative speed difference below which two contenders are called a tie (0: tied
#: unless the interval shows the contender slower)
DEFAULT_MARGIN = 0.0
#: a race stops timing a contender whose interval lies wholly below 1 - this (or below
#: 1 - margin, when the margin is larger): clearly behind, its rounds go to the leaders
DROP_MARGIN = 0.02
#: bootstrap resamples
DEFAULT_BOOT = 2000


def rounds_needed(level: float = DEFAULT_LEVEL) -> int:
    """The fewest paired rounds that can show a difference at confidence ``level``: the
    smallest n with 2 x 0.5^n <= 1 - level (6 at 95%, 8 at 99%). With n rounds, every
    round going the same way is the most a comparison can see, and when the two do not
    differ that happens with probability 2 x 0.5^n (the two-sided sign test); a
    bootstrap interval over n rounds is then about the range of the n ratios, which
    holds the true median ratio with probability at most 1 - 2 x 0.5^n."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    n = 1
    while 2 * 0.5 ** n > (1 - level) * (1 + 1e-9):
        n += 1
    return n


def interval_caveat(rounds: int, level: float = DEFAULT_LEVEL) -> str:
    """'' when ``rounds`` paired rounds can carry intervals at ``level``, else a clause
    for the text that prints them: from 3 rounds an interval is about the range of the
    rounds and holds the true ratio with probability at most 75%."""
    need = rounds_needed(level)
    if rounds >= need:
        return ""
    cover = 100 * (1 - 2 * 0.5 ** rounds) if rounds > 0 else 0.0
    return (f"from {rounds} round{'s' if rounds != 1 else ''} an interval is about the range "
            f"of the rounds and holds the true ratio with at most {cover:g}% probability, "
            f"not {100 * level:g}% (that needs >= {need} rounds)")


@dataclasses.dataclass(frozen=True)
class Interval:
    """A point estimate and its two-sided interval [``lo``, ``hi``] at confidence
    ``level`` (ratios: > 1 faster), from ``rounds`` rounds (those every shape was timed in)."""
    point: float
    lo: float
    hi: float
    level: float = DEFAULT_LEVEL
    rounds: int = 0

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def pct(self) -> str:
        """``+1.2% [-0.3, +2.5]``: the speed difference in percent with its interval."""
        f = lambda x: f"{100 * (x - 1):+.1f}"  # noqa: E731
        return f"{f(self.point)}% [{f(self.lo)}, {f(self.hi)}]"

    def __str__(self) -> str:
        return f"{self.point:.3f} [{self.lo:.3f}, {self.hi:.3f}]"


def paired_ratios(ref: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Per shape and round, ``ref / other`` (times; > 1: ``other`` is faster); NaN
    where either was not timed. Shapes (S, R) in, (S, R) out."""
    ref = np.asarray(ref, dtype=float)
    other = np.asarray(other, dtype=float)
    if ref.shape != other.shape:
        raise ValueError(f"timings of different shapes: {ref.shape} and {other.shape}")
    with np.errstate(invalid="ignore", divide="ignore"):
        return ref / other


def _common_rounds(ratios: np.ndarray) -> np.ndarray:
    """Rounds (columns) where every shape has a ratio."""
    return np.flatnonzero(np.all(np.isfinite(ratios), axis=0))


def workload_ratio(ratios: np.ndarray) -> float:
    """Geometric mean over shapes of the median over rounds of ``ratios`` (S, R)."""
    med = np.nanmedian(ratios, axis=1)
    return float(np.exp(np.mean(np.log(med))))


def bootstrap(ratios: np.ndarray, *, level: float = DEFAULT_LEVEL,
              n_boot: int = DEFAULT_BOOT, seed: int = 0) -> Interval:
    """:func:`workload_ratio` of ``ratios`` (S, R) with a percentile-bootstrap
    interval over rounds. Only rounds where every shape has a ratio are used; with one
    round the interval is the point.

    Raises ValueError when no round has a ratio for every shape.
    """
    ratios = np.asarray(ratios, dtype=float)
    if ratios.ndim == 1:
        ratios = ratios[None, :]
    cols = _common_rounds(ratios)
    if cols.size == 0:
        raise ValueError("no round in which every shape was timed")
    r = ratios[:, cols]
    point = workload_ratio(r)
    n = r.shape[1]
    if n < 2:
        return Interval(point, point, point, level, n)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    # (boot, S, n) -> median over rounds -> geometric mean over shapes
    logmed = np.log(np.median(r[:, idx].transpose(1, 0, 2), axis=2))
    boots = np.exp(logmed.mean(axis=1))
    a = (1 - level) / 2
    lo, hi = np.quantile(boots, [a, 1 - a])
    return Interval(point, float(min(lo, point)), float(max(hi, point)), level, n)


@dataclasses.dataclass(frozen=True)
class Comparison:
    """One contender against the leader: its speed relative to the leader
    (leader's time / its time; < 1: slower) and what the verdict makes of it."""
    name: str
    vs_leader: Interval
    status: str          # "leader", "tied", "behind"


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The outcome of a race. ``ties`` lists the leader first, then every contender
    not shown to be behind it by more than ``margin``; ``separated`` is True when the
    leader is alone. ``rounds``: the most rounds any challenger was paired with the
    leader in; ``too_few``: fewer than :func:`rounds_needed` (then every challenger
    is tied)."""
    leader: str
    ties: tuple[str, ...]
    behind: tuple[str, ...]
    comparisons: dict
    margin: float
    level: float

    @property
    def separated(self) -> bool:
        return len(self.ties) == 1

    @property
    def rounds(self) -> int:
        return max((c.vs_leader.rounds for n, c in self.comparisons.items()
                    if n != self.leader), default=0)

    @property
    def needed(self) -> int:
        return rounds_needed(self.level)

    @property
    def too_few(self) -> bool:
        return len(self.comparisons) > 1 and self.rounds < self.needed

    def as_dict(self) -> dict:
        return {"leader": self.leader, "ties": list(self.ties), "behind": list(self.behind),
                "separated": self.separated, "margin": self.margin, "level": self.level,
                "rounds": self.rounds, "rounds_needed": self.needed, "too_few": self.too_few,
                "vs_leader": {n: {"status": c.status, **c.vs_leader.as_dict()}
                              for n, c in self.comparisons.items()}}

    def summary(self) -> str:
        """One line: the winner, or the tie and its members (a tie for want of rounds
        says so)."""
        if len(self.comparisons) == 1:
            return (f"one contender ({self.leader}): nothing to rank; the peers' columns "
                    f"are its comparison")
        by = f" by more than {100 * self.margin:g}%" if self.margin else ""
        level = f"{100 * self.level:g}%"
        conf = f"{level} confidence"
        if self.too_few:
            rest = ", ".join(f"{n} {c.vs_leader.pct()}" for n, c in self.comparisons.items()
                             if n != self.leader)
            return (f"tie: {self.rounds} round{'s' if self.rounds != 1 else ''} cannot show "
                    f"a difference at {level} (need >= {self.needed}); "
                    f"against {self.leader}: {rest}")
        if self.separated:
            nearest = max(self.behind, key=lambda n: self.comparisons[n].vs_leader.point)
            # a race may drop a contender far behind before the rounds a claim at this
            # level needs: said as such, not as shown at the level
            short = [n for n in self.behind if self.comparisons[n].vs_leader.rounds < self.needed]
            how = f"slower{by} at {conf}"
            if short:
                r = sorted(self.comparisons[n].vs_leader.rounds for n in short)
                span = f"{r[0]}" if r[0] == r[-1] else f"{r[0]}-{r[-1]}"
                who = (f"for {short[0]}, clearly behind when the race dropped it" if len(short) == 1
                       else f"for {len(short)} of them, clearly behind when the race dropped them")
                how = (f"slower{by}: at {conf} over >= {self.needed} rounds, or, {who} after "
                       f"{span} round{'s' if r[-1] != 1 else ''}")
            return (f"winner: {self.leader} (every other tile {how}; the nearest, "
                    f"{nearest}, {self.comparisons[nearest].vs_leader.pct()})")
        rest = ", ".join(f"{n} {self.comparisons[n].vs_leader.pct()}" for n in self.ties[1:])
        return (f"tie: {', '.join(self.ties)} (not shown slower{by} at {conf}; "
                f"against {self.leader}: {rest})")


def speed_scores(times: dict[str, np.ndarray]) -> dict[str, float]:
    """Per contender, the geometric mean over shapes of (best median time on the shape
    / its median time): 1.0 for a contender fastest on every shape. Medians over the
    rounds each contender was timed in."""
    names = list(times)
    med = np.array([np.nanmedian(np.asarray(times[n], dtype=float), axis=1) for n in names])
    best = np.nanmin(med, axis=0)
    scores = np.exp(np.nanmean(np.log(best[None, :] / med), axis=1))
    return dict(zip(names, (float(s) for s in scores)))


def compare(times: dict[str, np.ndarray], ref: str, *, level: float = DEFAULT_LEVEL,
            n_boot: int = DEFAULT_BOOT, seed: int = 0) -> dict[str, Interval]:
    """Every contender's speed relative to ``ref`` (ref's time / its time), paired by
    round, with its bootstrap interval; ``ref`` itself gets 1."""
    out = {}
    for name, t in times.items():
        out[name] = (Interval(1.0, 1.0, 1.0, level, int(np.isfinite(t).all(axis=0).sum()))
                     if name == ref else
                     bootstrap(paired_ratios(times[ref], t), level=level, n_boot=n_boot,
                               seed=seed))
    return out


def verdict(times: dict[str, np.ndarray], *, margin: float = DEFAULT_MARGIN,
            level: float = DEFAULT_LEVEL, n_boot: int = DEFAULT_BOOT, seed: int = 0,
            eligible=None) -> Verdict:
    """Rank contenders by their own times against each other.

    ``times``: name -> seconds per call, shape (shapes, rounds), NaN where not timed.
    The leader is the ``eligible`` contender (default: all) with the best
    :func:`speed_scores`, replaced by any eligible contender that is faster than it
    paired round by round (so no contender shows a positive "vs leader"); every other
    contender is compared with it round by round
    (:func:`compare`) and is *behind* when its interval's upper end is below
    ``1 - margin``, else *tied*; every one is tied when no challenger was paired with
    the leader in :func:`rounds_needed` rounds (:attr:`Verdict.too_few`).

    Raises ValueError for an empty ``times``, a margin outside [0, 1) or a level
    outside (0, 1).
    """
    if not times:
        raise ValueError("verdict: no contenders")
    if not 0 <= margin < 1:
        raise ValueError(f"margin must be in [0, 1), got {margin}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    scores = speed_scores(times)
    pool = [n for n in times if eligible is None or n in eligible] or list(times)
    leader = max(pool, key=lambda n: (scores[n], -list(times).index(n)))
    rel = compare(times, leader, level=level, n_boot=n_boot, seed=seed)
    # the leader by the paired statistic the verdict prints: a contender faster than
    # the median-time leader round by round takes its place (a slow spell can put the
    # medians in a different order); paired ratios are not transitive, so this stops
    # once no contender is ahead or a leader comes back
    seen = {leader}
    while True:
        ahead = max(pool, key=lambda n: rel[n].point)
        if rel[ahead].point <= 1.0 or ahead in seen:
            break
        leader = ahead
        seen.add(leader)
        rel = compare(times, leader, level=level, n_boot=n_boot, seed=seed)
    # too few rounds to show any difference at this level: nobody is behind
    enough = max((rel[n].rounds for n in times if n != leader), default=0) >= rounds_needed(level)
    comps = {}
    ties, behind = [leader], []
    for name in sorted(times, key=lambda n: -rel[n].point):
        if name == leader:
            comps[name] = Comparison(name, rel[name], "leader")
            continue
        status = "behind" if enough and rel[name].hi < 1 - margin else "tied"
        comps[name] = Comparison(name, rel[name], status)
        (behind if status == "behind" else ties).append(name)
    comps = {leader: comps.pop(leader), **comps}
    return Verdict(leader, tuple(ties), tuple(behind), comps, margin, level)


def gflops(flops: float, seconds: np.ndarray) -> float:
    """GFLOP/s of the median of ``seconds`` (NaN ignored)."""
    med = float(np.nanmedian(seconds))
    return flops / med / 1e9 if med > 0 and math.isfinite(med) else float("nan")
