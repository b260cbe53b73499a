#!/usr/bin/env bash
# Issue 18's reproducibility check: five fresh clones of this repository, each running
# the README's main command (`bash scripts/sweep.sh`), then a 15-round interleaved
# `microkernel compare` of its leader against every tile the sweep ranked within 3%.
#   bash bench/sweep_five.sh OUTDIR [RUNS]
# OUTDIR gets sweep_<i>.json, compare_<i>.json, the logs and summary.txt (start time,
# load average, wall time with setup, verdict); bench/sweep_five.py summarises them.
set -u
out=$(realpath -m "${1:?usage: bench/sweep_five.sh OUTDIR [RUNS]}"); runs=${2:-5}
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
for i in $(seq 1 "$runs"); do
  d=$(mktemp -d); git clone -q "$repo" "$d/clone"; cd "$d/clone" || exit 1
  echo "run $i start $(date -Is) load $(cut -d' ' -f1-3 /proc/loadavg) commit $(git rev-parse --short HEAD)" >> "$out/summary.txt"
  s=$SECONDS
  bash scripts/sweep.sh > "$out/sweep_$i.log" 2>&1; rc=$?
  echo "run $i sweep rc=$rc wall=$((SECONDS-s))s: $(grep -E '^(winner|tie)' "$out/sweep_$i.log" | head -1 | cut -c1-200)" >> "$out/summary.txt"
  cp out/sweep.json "$out/sweep_$i.json" 2>/dev/null
  close=$(.venv/bin/python - <<'PY'
import json
from microkernel.commands.sweep import NEXT_WITHIN   # the sweep's printed next step
r = json.load(open("out/sweep.json"))
near = [x["name"] for x in r["rows"] if x["vs_leader"] and x["status"] != "leader"
        and x["vs_leader"]["point"] >= 1 - NEXT_WITHIN]
print(",".join([r["leader"]] + near))
PY
)
  s=$SECONDS
  .venv/bin/microkernel compare --kernels "$close" --workload deepbench --rounds 15 \
      --json "$out/compare_$i.json" > "$out/compare_$i.log" 2>&1
  echo "run $i compare of $close rc=$? wall=$((SECONDS-s))s" >> "$out/summary.txt"
  cd "$repo" && rm -rf "$d"
done
