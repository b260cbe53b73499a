"""Summarise bench/sweep_five.sh: per run, the sweep's verdict, its race and every tile's
speed against the leader; then the 15-round comparison of the leader against the tiles
within 3%, and whether it finds any tile faster than the sweep's interval allows.

    python bench/sweep_five.py OUTDIR > OUTDIR/analysis.txt
"""
from __future__ import annotations

import json
import pathlib
import re
import sys


def pct(x: float) -> str:
    return f"{100 * (x - 1):+.1f}"


def iv(d: dict) -> str:
    return f"{pct(d['point'])} [{pct(d['lo'])},{pct(d['hi'])}]"


def main(out: pathlib.Path) -> int:
    summary = (out / "summary.txt").read_text() if (out / "summary.txt").exists() else ""
    verdicts, breaches = [], 0
    runs = sorted(out.glob("sweep_*.json"), key=lambda p: int(re.findall(r"\d+", p.stem)[0]))
    for p in runs:
        i = re.findall(r"\d+", p.stem)[0]
        r = json.loads(p.read_text())
        v, race = r["verdict"], r["race"]
        kind = f"winner {r['winner']}" if r["winner"] else f"tie {', '.join(r['ties'])}"
        verdicts.append(kind)
        print(f"run {i}: {kind}; {race['rounds']} rounds, stopped: {race['stopped']} after "
              f"{race['seconds']:.0f} s of {race['budget']:.0f}; margin {race['margin']}, "
              f"dropped below -{100 * race.get('drop', race['margin']):g}%")
        rows = [x for x in r["rows"] if x["vs_leader"] and x["status"] != "leader"]
        print("   " + "; ".join(f"{x['name']} {iv(x['vs_leader'])} {x['status']}"
                                + (f"@{x['dropped_after']}" if x["dropped_after"] else "")
                                for x in rows[:6]))
        cp = out / f"compare_{i}.json"
        if not cp.exists():
            continue
        c = json.loads(cp.read_text())
        cv = c["verdict"]
        sweep_iv = {x["name"]: x["vs_leader"] for x in rows}
        lead = r["leader"]
        print(f"   compare, {c['rounds']} rounds, against {lead}:")
        for name, d in cv["vs_leader"].items():
            if name == cv["leader"]:
                continue
            print(f"      {name} {iv(d)}")
        # the compare's view of each tile against the sweep's winner
        if cv["leader"] != lead:
            ahead = cv["vs_leader"][lead]
            print(f"      compare's leader is {cv['leader']}; {lead} against it {iv(ahead)}")
        for name, d in cv["vs_leader"].items():
            if name == lead:
                continue
            # speed of `name` against the sweep's leader, in the compare
            ratio = d["point"] / cv["vs_leader"][lead]["point"]
            hi = sweep_iv.get(name, {}).get("hi")
            if hi is not None and ratio > hi:
                breaches += 1
                print(f"      ** {name} at {pct(ratio)} in the compare, above the sweep's "
                      f"interval's upper end {pct(hi)}")
    same = len(set(verdicts)) == 1
    print(f"\nverdicts: {len(verdicts)} runs, {len(set(verdicts))} distinct: "
          + ("the same in every run" if same else "; ".join(sorted(set(verdicts)))))
    print(f"compares finding a tile faster than the sweep's interval allows: {breaches}")
    if summary:
        print("\nwall time of `bash scripts/sweep.sh` per fresh clone, setup included:")
        for line in summary.splitlines():
            m = re.match(r"run (\d+) start (\S+) load (\S+)", line)
            if m:
                print(f"run {m[1]}: started {m[2]}, load {m[3]}", end="")
            m = re.match(r"run \d+ sweep rc=(\d+) wall=(\d+)s", line)
            if m:
                print(f", exit {m[1]}, {m[2]} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1])))
