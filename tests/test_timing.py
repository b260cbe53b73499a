"""The timing engine and its statistics on a fake clock: calibration, interleaving,
a clear leader, a tie, a slow spell hitting one contender, the budget. No real timing
is asserted anywhere here."""
import math
import random

import numpy as np
import pytest

from microkernel import stats
from microkernel.timing import Contender, Race, Rounds


class FakeClock:
    """A clock that only moves when a fake contender 'runs'."""

    def __init__(self):
        self.now = 0.0
        self.calls = []

    def __call__(self):
        return self.now

    def sleep(self, s):
        self.now += s


def fake(clock, name, seconds, shape="s", noise=0.0, seed=0, spell=None, reference=False):
    """A contender whose one call lasts ``seconds`` of fake time (times a seeded
    lognormal noise; times ``spell(round)`` when given)."""
    rng = random.Random(f"{name}{shape}{seed}")
    state = {"round": 0}

    def fn():
        f = math.exp(rng.gauss(0, noise)) if noise else 1.0
        if spell is not None:
            f *= spell(clock.round_no)
        clock.now += seconds * f
        clock.calls.append((name, shape))
    return Contender(name, fn, flops=1e9 * seconds, shape=shape, reference=reference)


def rounds(clock, contenders, **kw):
    clock.round_no = 0
    r = Rounds(contenders, clock=clock, sleep=clock.sleep, min_time=0.02, **kw)
    real = r.round

    def counted(active=None):
        real(active)
        clock.round_no += 1
    r.round = counted
    return r


def test_calibration_doubles_loops_to_the_min_time():
    clock = FakeClock()
    r = rounds(clock, [fake(clock, "a", 0.001), fake(clock, "b", 0.05)])
    r.calibrate()
    # pyperf's rule: powers of two until one sample lasts >= 20 ms
    assert r.loops[("s", "a")] == 32 and r.loops[("s", "b")] == 1
    r.round()
    assert r.matrix("a")[0, 0] == pytest.approx(0.001)
    assert r.matrix("b")[0, 0] == pytest.approx(0.05)


def test_every_round_times_every_contender_once_in_a_shuffled_order():
    clock = FakeClock()
    cs = [fake(clock, n, 0.03, shape=s) for s in ("p", "q") for n in "abcd"]
    r = rounds(clock, cs, seed=1)
    r.calibrate()
    orders = []
    for _ in range(6):
        clock.calls.clear()
        r.round()
        orders.append(tuple(clock.calls))
        assert sorted(clock.calls) == sorted((c.name, c.shape) for c in cs)
    assert len(set(orders)) > 1            # the order changes from round to round
    first = {o[0][0] for o in orders}
    assert len(first) > 1                  # no contender always goes first


def test_duplicate_contender_and_bad_settings_are_errors():
    clock = FakeClock()
    with pytest.raises(ValueError, match="given twice"):
        Rounds([fake(clock, "a", 0.01), fake(clock, "a", 0.01)], clock=clock)
    with pytest.raises(ValueError, match="min_time"):
        Rounds([fake(clock, "a", 0.01)], clock=clock, min_time=0)
    r = Rounds([fake(clock, "a", 0.01, reference=True)], clock=clock)
    with pytest.raises(ValueError, match="not a reference"):
        Race(r)
    with pytest.raises(ValueError, match="min_rounds"):
        Race(Rounds([fake(clock, "a", 0.01)], clock=clock), min_rounds=1)


def test_a_clear_leader_is_separated_and_the_rest_dropped():
    clock = FakeClock()
    cs = [fake(clock, n, t, shape=s, noise=0.01)
          for s in ("p", "q", "r") for n, t in (("fast", 0.020), ("mid", 0.022), ("slow", 0.026))]
    race = Race(rounds(clock, cs), margin=0.03, min_rounds=5, max_rounds=30)
    res = race.run()
    assert res.verdict.leader == "fast" and res.verdict.separated
    # 'slow' goes after the early rounds; 'mid', clearly behind from min_rounds = 5, is
    # the last challenger and stays until the 6 rounds a 95% verdict needs
    assert res.stopped == "separated" and res.rounds == 6
    assert res.dropped == {"slow": 3, "mid": 6} and set(res.verdict.behind) == {"mid", "slow"}
    mid = res.verdict.comparisons["mid"].vs_leader
    assert mid.lo < 0.020 / 0.022 < mid.hi          # the true ratio, 0.909, is inside
    assert "winner: fast" in res.verdict.summary()


def test_a_tie_within_the_margin_is_called_a_tie():
    clock = FakeClock()
    cs = [fake(clock, n, t, shape=s, noise=0.01)
          for s in ("p", "q") for n, t in (("a", 0.0200), ("b", 0.0202), ("c", 0.030))]
    race = Race(rounds(clock, cs), margin=0.03, min_rounds=6, max_rounds=40)
    res = race.run()
    v = res.verdict
    assert set(v.ties) == {"a", "b"} and not v.separated
    assert v.behind == ("c",) and res.dropped == {"c": 3}   # 33% behind: dropped early
    assert res.stopped == "equivalent"      # b shown to be within 3% of a ...
    assert res.rounds == 12                 # ... checked from 2 x min_rounds on
    assert v.summary().startswith("tie: ")


def test_a_slow_spell_on_one_contender_does_not_flip_the_ranking():
    """Round 3 runs 'a' (the faster one) at a third of its speed, a neighbour's burst
    that hits it alone: the per-round pairing plus the median over rounds keep it the
    leader. A spell that hits every contender of a round cancels in the ratios."""
    clock = FakeClock()
    one = lambda r: 3.0 if r == 3 else 1.0  # noqa: E731
    everyone = lambda r: 4.0 if r in (5, 6) else 1.0  # noqa: E731
    cs = [fake(clock, "a", 0.020, shape=s, spell=lambda r: one(r) * everyone(r))
          for s in ("p", "q")]
    cs += [fake(clock, "b", 0.021, shape=s, spell=everyone) for s in ("p", "q")]
    r = rounds(clock, cs)
    for _ in range(9):
        r.round()
    v = stats.verdict(r.matrices(), margin=0.0)
    assert v.leader == "a" and v.separated
    b = v.comparisons["b"].vs_leader
    assert b.point == pytest.approx(0.020 / 0.021)
    # the spells did hit: 'a' alone 3x slower in round 3, everyone 4x in rounds 5 and 6
    a_times, b_times = r.matrix("a")[0], r.matrix("b")[0]
    assert a_times[3] / np.median(a_times) == pytest.approx(3.0)
    assert a_times[5] / np.median(a_times) == pytest.approx(4.0)
    assert b_times[5] / np.median(b_times) == pytest.approx(4.0)


def test_early_rounds_drop_only_the_far_behind():
    """From round 3 (early_rounds) to min_rounds, only a contender whose interval lies
    wholly below 1 - 3 x margin (here 0.91) goes: 'far' (0.80 of the leader) after
    round 3; 'near' (0.95: behind, but within 3 margins) stays until min_rounds = 6,
    when the ordinary rule drops it. A race with early_rounds = min_rounds keeps both
    until then."""
    def race(**kw):
        clock = FakeClock()
        cs = [fake(clock, n, t, shape=s, noise=0.005) for s in ("p", "q")
              for n, t in (("lead", 0.0200), ("near", 0.0200 / 0.95), ("far", 0.025))]
        return Race(rounds(clock, cs), margin=0.03, min_rounds=6, max_rounds=20, **kw).run()
    res = race()
    assert res.dropped == {"far": 3, "near": 6}
    assert res.verdict.leader == "lead" and res.stopped == "separated"
    assert race(early_rounds=6).dropped == {"far": 6, "near": 6}
    with pytest.raises(ValueError, match="early_rounds"):
        race(early_rounds=1)
    with pytest.raises(ValueError, match="early_factor"):
        race(early_factor=0.5)


def test_a_tile_dropped_against_a_passing_leader_is_timed_again():
    """'a' is the fastest (0.0190) but noisy and 10% slower in rounds 0-5, so the steady
    'b' (0.0200) leads at first and 'c' (0.0208, 4% behind 'b') is dropped against it.
    Once 'a' leads, the rounds 'c' was timed in (a's slow ones) do not show 'c' behind
    'a': 'c' is timed again until they do, and in the final verdict 'behind' means an
    interval below 1 - margin. (A spell that makes a contender look far behind in all
    of its first rounds still drops it for good: the race cannot see past it.)"""
    clock = FakeClock()
    spell = lambda r: 1.10 if r < 6 else 1.0  # noqa: E731
    cs = [fake(clock, "a", 0.0190, shape=s, noise=0.04, spell=spell) for s in ("p", "q")]
    cs += [fake(clock, n, t, shape=s, noise=0.002) for s in ("p", "q")
           for n, t in (("b", 0.0200), ("c", 0.0208))]
    res = Race(rounds(clock, cs), margin=0.03, min_rounds=5, max_rounds=40).run()
    v = res.verdict
    assert v.leader == "a" and res.revived.get("c")
    assert res.dropped["c"] > res.revived["c"][0] and "c" in v.behind
    assert v.comparisons["c"].vs_leader.rounds > res.revived["c"][0]
    for n, c in v.comparisons.items():
        assert (c.status == "behind") == (n != v.leader and c.vs_leader.hi < 0.97)


def test_by_default_a_leader_one_percent_ahead_is_a_winner_and_the_rest_kept_timed():
    """The default margin is 0: 'b', 1% behind 'a' with 0.2% noise, is not clearly
    behind (its interval does not reach below -2%, stats.DROP_MARGIN), so the race keeps
    timing it; its interval shows it slower, and from 2 x min_rounds the race stops with
    'a' the winner. 'c', 10% behind, is dropped after the early rounds."""
    clock = FakeClock()
    cs = [fake(clock, n, t, shape=s, noise=0.002) for s in ("p", "q")
          for n, t in (("a", 0.0200), ("b", 0.0202), ("c", 0.0222))]
    res = Race(rounds(clock, cs), min_rounds=5, max_rounds=40).run()
    v = res.verdict
    assert v.margin == 0.0 and v.separated and v.leader == "a" and v.behind == ("b", "c")
    assert res.dropped == {"c": 3} and "b" not in res.dropped
    assert res.stopped == "separated" and res.rounds == 10
    b = v.comparisons["b"].vs_leader
    assert 0.98 < b.lo <= b.point <= b.hi < 1.0
    # c's "behind" rests on the 3 rounds after which the race dropped it, and says so
    assert v.summary() == ("winner: a (every other tile slower: at 95% confidence over >= 6 "
                           "rounds, or, for c, clearly behind when the race dropped it after 3 "
                           f"rounds; the nearest, b, {b.pct()})")


def test_by_default_contenders_that_noise_cannot_order_are_a_tie():
    """'a' and 'b' are the same speed (1% noise each): the race never shows either
    slower, times both until the budget, and calls it a tie."""
    clock = FakeClock()
    cs = [fake(clock, n, 0.02, shape=s, noise=0.01, seed=i)
          for s in ("p", "q") for i, n in enumerate("ab")]
    res = Race(rounds(clock, cs), min_rounds=5, max_rounds=30, budget=2.0).run()
    assert res.stopped == "budget" and not res.dropped
    assert set(res.verdict.ties) == {"a", "b"}
    assert res.verdict.summary().startswith("tie: ")
    assert "not shown slower at 95% confidence" in res.verdict.summary()


def test_the_drop_threshold_is_the_larger_of_drop_and_margin():
    clock = FakeClock()
    r = rounds(clock, [fake(clock, "a", 0.02), fake(clock, "b", 0.02)])
    assert Race(r).drop == stats.DROP_MARGIN
    assert Race(r, margin=0.05).drop == 0.05
    assert Race(r, drop=0.04).drop == 0.04
    with pytest.raises(ValueError, match="drop"):
        Race(r, drop=1.0)


def test_the_budget_stops_the_race_after_min_rounds():
    clock = FakeClock()
    cs = [fake(clock, n, 0.02, noise=0.02, shape="p") for n in "ab"]
    res = Race(rounds(clock, cs), margin=0.0, min_rounds=4, max_rounds=100, budget=0.5).run()
    assert res.stopped == "budget" and 4 <= res.rounds < 100
    assert res.seconds <= 0.5 + 1e-9


def test_references_are_timed_every_round_but_never_ranked():
    clock = FakeClock()
    cs = [fake(clock, "numpy", 0.010, reference=True), fake(clock, "a", 0.02),
          fake(clock, "b", 0.03)]
    race = Race(rounds(clock, cs), min_rounds=3)
    res = race.run()
    assert res.verdict.leader == "a" and "numpy" not in res.verdict.comparisons
    assert np.isfinite(race.r.matrix("numpy")).all()          # every round
    # b, clearly behind from round 3, is a's last challenger: timed until the 6 rounds
    # a verdict at 95% needs, then dropped, and a is the winner
    assert res.dropped == {"b": 6} and res.rounds == 6 and res.verdict.separated


# -- the statistics on known numbers ----------------------------------------------------

def test_workload_ratio_is_the_geometric_mean_of_per_shape_medians():
    r = np.array([[2.0, 2.0, 9.0], [0.5, 0.5, 0.1]])   # medians 2 and 0.5
    assert stats.workload_ratio(r) == pytest.approx(1.0)
    iv = stats.bootstrap(np.full((2, 5), 1.1))
    assert (iv.point, iv.lo, iv.hi) == pytest.approx((1.1, 1.1, 1.1))


def test_bootstrap_uses_only_rounds_every_shape_has():
    r = np.array([[1.0, 1.2, np.nan], [1.0, 1.2, 5.0]])
    iv = stats.bootstrap(r)
    assert iv.rounds == 2 and 1.0 <= iv.lo <= iv.point <= iv.hi <= 1.2
    with pytest.raises(ValueError, match="every shape"):
        stats.bootstrap(np.array([[np.nan, 1.0], [1.0, np.nan]]))


def test_verdict_margin():
    base = np.full((1, 8), 1.0) * (1 + 0.001 * np.arange(8))   # a little spread
    times = {"a": base, "b": base * 1.02, "c": base * 1.05}
    v = stats.verdict(times, margin=0.03)
    assert v.leader == "a" and v.ties == ("a", "b") and v.behind == ("c",)
    v0 = stats.verdict(times, margin=0.0)
    assert v0.separated and v0.behind == ("b", "c")
    with pytest.raises(ValueError, match="margin"):
        stats.verdict(times, margin=1.5)


def test_the_leader_is_the_one_no_contender_beats_round_by_round():
    # 1 shape, 5 rounds. a's median time (1.00) is below b's (1.25), but b is faster in
    # 4 of 5 rounds: a slow spell hit rounds 2-4, b hardest in round 2. Paired ratios
    # a/b: 1.02, 1.02, 0.71, 1.04, 1.04 -> median 1.02 > 1, so b leads, and a is the one
    # behind it (0.98 of b).
    a = np.array([[1.00, 1.00, 1.00, 1.30, 1.30]])
    b = np.array([[0.98, 0.98, 1.40, 1.25, 1.25]])
    assert np.median(a) < np.median(b)
    v = stats.verdict({"a": a, "b": b}, margin=0.03)
    assert v.leader == "b"
    assert v.comparisons["a"].vs_leader.point == pytest.approx(0.98)


def test_a_lone_contender_is_not_called_a_winner():
    v = stats.verdict({"a": np.ones((2, 5))})
    assert v.summary().startswith("one contender (a): nothing to rank")


# -- too few rounds for the level -------------------------------------------------------

def test_rounds_needed_for_a_level():
    # the smallest n with 2 x 0.5^n <= 1 - level (the two-sided sign test)
    assert stats.rounds_needed(0.95) == 6 and stats.rounds_needed() == 6
    assert stats.rounds_needed(0.99) == 8 and stats.rounds_needed(0.5) == 2
    assert stats.rounds_needed(0.9) == 5
    assert stats.interval_caveat(6) == "" and stats.interval_caveat(40) == ""
    assert "at most 75% probability, not 95% (that needs >= 6 rounds)" in stats.interval_caveat(3)
    assert "at most 50%" in stats.interval_caveat(2)


def _consistent(n):
    """b 2.3% slower than a in every one of n rounds (a little spread)."""
    a = np.full((1, n), 1.0) * (1 + 0.001 * np.arange(n))
    return {"a": a, "b": a * np.linspace(1.020, 1.026, n)}


@pytest.mark.parametrize("n", [2, 3, 5])
def test_too_few_rounds_name_no_winner(n):
    """Every round puts b behind a, but n < 6 rounds cannot show that at 95%: the
    verdict is a tie that says why, with the intervals still given."""
    v = stats.verdict(_consistent(n))
    assert not v.separated and v.too_few and v.rounds == n and v.needed == 6
    assert v.ties == ("a", "b") and v.behind == ()
    assert v.comparisons["b"].status == "tied" and v.comparisons["b"].vs_leader.hi < 1
    text = v.summary()
    assert text.startswith(f"tie: {n} rounds cannot show a difference at 95% (need >= 6)")
    assert "winner" not in text and "confidence" not in text
    assert f"b {v.comparisons['b'].vs_leader.pct()}" in text
    d = v.as_dict()
    assert d["too_few"] and d["rounds"] == n and d["rounds_needed"] == 6 and not d["separated"]


def test_six_rounds_name_the_winner():
    v = stats.verdict(_consistent(6))
    assert v.separated and not v.too_few and v.behind == ("b",)
    assert v.summary().startswith("winner: a (every other tile slower at 95% confidence")


def test_a_race_shorter_than_the_rounds_needed_ends_in_a_tie():
    clock = FakeClock()
    cs = [fake(clock, n, t, shape="p", noise=0.002) for n, t in (("a", 0.020), ("b", 0.024))]
    res = Race(rounds(clock, cs), min_rounds=3, max_rounds=3).run()
    assert res.stopped == "max_rounds" and res.rounds == 3 and not res.dropped
    assert not res.verdict.separated and res.verdict.too_few
    assert res.verdict.summary().startswith("tie: 3 rounds cannot show a difference")
