"""Too few rounds for a 95% verdict: compare and sweep name no winner and say why, and
the intervals they print say what they can hold (stats.rounds_needed)."""
import json

from microkernel.cli import main


def test_compare_with_two_rounds_names_no_winner(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["compare", "--kernels", "scalar_4x4;scalar_4x4:kc=16", "--sizes", "24",
                 "--rounds", "2", "--min-time", "0.001", "--peers", "numpy",
                 "--json", str(out)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "tie: 2 rounds cannot show a difference at 95% (need >= 6); against" in text
    assert "winner" not in text and "slower at 95% confidence" not in text
    assert ("intervals 95% (bootstrap over rounds; from 2 rounds an interval is about the "
            "range of the rounds and holds the true ratio with at most 50% probability, not "
            "95% (that needs >= 6 rounds))") in text
    d = json.loads(out.read_text())
    assert d["verdict"]["too_few"] and not d["verdict"]["separated"]
    assert d["summary"].startswith("tie: 2 rounds cannot show")


def test_sweep_of_three_rounds_prints_a_tie_for_want_of_rounds(monkeypatch, capsys):
    from test_cli import _result
    from microkernel import sweep as sw
    res = _result([])                       # a winner over 8 rounds ...
    res["race"]["rounds"] = 3               # ... made a race of 3 rounds, all tied
    for c in res["verdict"]["vs_leader"].values():
        c["rounds"] = 3
        c["status"] = "tied" if c["status"] == "behind" else c["status"]
    res["verdict"]["ties"] = res["ties"] = list(res["verdict"]["vs_leader"])
    for r in res["rows"]:
        r["status"] = "tied" if r["status"] == "behind" else r["status"]
        r["dropped_after"] = 3 if r["dropped_after"] else None
    res["verdict"]["behind"], res["verdict"]["separated"], res["winner"] = [], False, None
    monkeypatch.setattr(sw, "sweep", lambda *a, **k: res)
    assert main(["sweep"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "tie: 3 rounds cannot show a difference at 95% (need >= 6); against avx2_4x24_u8:" in text
    assert "holds the true ratio with at most 75% probability" in text
    assert "winner" not in text
    assert "tied@3" in text and "behind@3" not in text   # dropped by the race, not shown behind
