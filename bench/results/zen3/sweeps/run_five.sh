#!/usr/bin/env bash
# 5 fresh-clone runs of the README's main command, each followed by the compare it prints
set -u
OUT=/tmp/sweeps; mkdir -p $OUT
for i in 1 2 3 4 5; do
  d=/tmp/sw$i; rm -rf $d; git clone -q /work/main $d
  cd $d
  echo "run $i start $(date -Is) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT/summary.txt
  s=$SECONDS
  bash scripts/sweep.sh > $OUT/sweep_$i.log 2>&1; rc=$?
  echo "run $i sweep rc=$rc wall=$((SECONDS-s))s" >> $OUT/summary.txt
  cp out/sweep.json $OUT/sweep_$i.json 2>/dev/null
  ties=$(.venv/bin/python -c "import json;v=json.load(open('out/sweep.json'))['verdict'];print(','.join(v['ties']))")
  echo "run $i leader/ties $ties" >> $OUT/summary.txt
  s=$SECONDS
  .venv/bin/python -m microkernel compare --kernels "$ties" --workload deepbench --rounds 15 --json $OUT/compare_$i.json > $OUT/compare_$i.log 2>&1
  echo "run $i compare rc=$? wall=$((SECONDS-s))s: $(grep -E '^(winner|tie)' $OUT/compare_$i.log | head -1)" >> $OUT/summary.txt
  cd /tmp
done
echo done >> $OUT/summary.txt
