#!/usr/bin/env bash
# `bash bench/device_cpu.sh types` (issue 21): the x86 typed tiles on the lent GPU machine's
# Sapphire Rapids host, which has AVX512-BF16/FP16, VNNI and AMX (this project's own Zen 3
# has none of them). Every tile list comes from the registry (registry.DEVICE_TYPED).
#
#   1. versions (gcc: AVX512-FP16 needs GCC >= 12), `microkernel probe` (is the AMX tile
#      state granted?) and gemm()'s kernel per input types;
#   2. `microkernel validate` (the edge catalogue) on every typed tile, one JSON each;
#   3. gemm() per type against PyTorch on the same dtype and numpy on the float32 upcast,
#      one thread, interleaved (`microkernel compare --dtype`), n = 1024, 2048, 4096:
#      bf16 (torch.matmul -> oneDNN), s8s8 (torch._int_mm where it runs on CPU), u8s8
#      (no torch peer), f16 / f16h (torch fp16 matmul); the AMX kernel against
#      the one before its last change (its source carried in .amxold/);
#   4. the L1 figure of every tile against its own instruction's peak (`microkernel bench
#      --dtype`: tdpbf16ps, vdpbf16ps, vfmadd231ph, vpdpbusd, tdpb*d); for bf16 also
#      gemm() at n = 1024, 2048, 4096 against that peak and torch, in the same process;
#   5. pytest: tests/test_types.py (typed edge catalogue on every runnable typed tile and
#      the typed hypothesis fuzzing, whose defaults are now the AMX tiles) and
#      tests/test_x86_typed.py.
# Each step has its own timeout and the run stops starting new steps after STOP_AFTER
# seconds (default 480), so it ends in under 9 minutes and never aborts as a whole; every
# step's exit status and seconds go to $OUT/types_steps.json. Writes into $OUT (or out/).
# cffi and pyperf are not on that image: carry wheels in .whl/ (installed into /tmp/site);
# ml_dtypes (numpy bfloat16) must import there too (a wheel in .whl/ if not).
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT/types_validate"
STOP_AFTER=${STOP_AFTER:-480}
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"   # .whl/ wheels, PYTHONPATH, threads
STEPS="$OUT/types_steps.txt"; : > "$STEPS"
LOG="$OUT/device_types.log"
PIN=""   # one core for the timings, where there is a core 2
if command -v taskset >/dev/null && taskset -c 2 true 2>/dev/null; then PIN="taskset -c 2"; fi
# step NAME TIMEOUT_S CMD...: run CMD (unless the time is up), log it, record rc and seconds
step() {
  local name=$1 limit=$2; shift 2
  if [ "$SECONDS" -ge "$STOP_AFTER" ]; then
    echo "### $name: SKIPPED (${SECONDS}s elapsed >= STOP_AFTER=${STOP_AFTER}s)"
    echo "$name skipped 0" >> "$STEPS"; return 0
  fi
  local t0=$SECONDS
  echo "### $name (timeout ${limit}s, at ${SECONDS}s): $*"
  timeout -k 10 "$limit" "$@"; local rc=$?
  [ "$rc" = 124 ] && echo "### $name: TIMED OUT after ${limit}s"
  echo "### $name: exit $rc in $((SECONDS - t0))s"
  echo "$name $rc $((SECONDS - t0))" >> "$STEPS"
}
tiles() {  # the registry's DEVICE_TYPED tiles of input types $1 (all when empty)
  python3 -c "from microkernel import registry; print(' '.join(s.name for s in registry.DEVICE_TYPED if '$1' in ('', s.types)))"
}
{
  echo "### versions"
  gcc --version | head -1
  python3 -c "import sys, numpy; print('python', sys.version.split()[0], 'numpy', numpy.__version__)"
  python3 -c "import ml_dtypes; print('ml_dtypes', ml_dtypes.__version__)" \
    || echo "ml_dtypes MISSING: bf16 gemm() needs it; carry its wheel in .whl/"
  python3 -c "import torch; print('torch', torch.__version__, 'oneDNN', torch.backends.mkldnn.is_available(), 'threads', torch.get_num_threads())" \
    || echo "torch MISSING: the torch peers are skipped"
  python3 -c "from microkernel import peers; [print('peer torch on', t, ':', peers.typed_why_not('torch', t) or 'yes') for t in ('bf16', 'f16', 's8s8', 'u8s8', 'u8u8')]" \
    || echo "peers: could not ask"
  lscpu | grep -iE 'model name|^flags' | sed 's/\(.\{400\}\).*/\1 .../'
  step probe 60 python3 -m microkernel probe
  python3 -m microkernel probe --json > "$OUT/types_probe.json" 2>/dev/null \
    || echo "probe --json failed"

  for k in $(tiles ""); do
    step "validate_$k" 120 sh -c "python3 -m microkernel validate --kernel $k --json > '$OUT/types_validate/$k.json'"
    python3 -c "import json,sys; r=json.load(open('$OUT/types_validate/$k.json'))[0]; print('   ', r['kernel'], r['cases'], 'cases,', r['failed'], 'failed, max err/bound %.3f' % r['max_err_over_bound'])" 2>/dev/null
  done

  race() {  # race DTYPE SIZES KERNELS: one interleaved race with the peers on that dtype
    step "compare_$1" 150 $PIN python3 -m microkernel compare --dtype "$1" --kernels "$3" \
      --sizes "$2" --rounds 5 --json "$OUT/types_compare_$1.json"
  }
  race bf16 1024,2048,4096 "amx_bf16_32x32;avx512bf16_8x32"
  race s8s8 1024,2048,4096 "amx_s8s8_32x32;avx512vnni_s8s8_8x32;avx512_s8s8_8x32"
  race u8u8 1024,2048 "amx_u8u8_32x32;avx512vnni_u8u8_8x32;avx512_u8u8_8x32"
  for t in bf16 f16h u8s8 s8s8 u8u8; do
    ks=$(tiles "$t" | sed 's/\([^ ]*\)/--kernel \1/g')
    # the widening / vpmaddwd AVX-512 tile of the same inputs beside them (fp32 FMA peak)
    case $t in bf16) ks="$ks --kernel avx512_bf16_8x32_u4";; u8s8|s8s8|u8u8) ks="$ks --kernel avx512_${t}_8x32";; esac
    # bf16: gemm() of the default (AMX) at the issue's sizes, its % of the tdpbf16ps peak
    # measured in the same process, and torch on the same operands
    sizes=512; [ "$t" = bf16 ] && sizes=1024,2048,4096
    step "bench_$t" 150 $PIN python3 -m microkernel bench --dtype "$t" $ks --sizes $sizes \
      --rounds 5 --json "$OUT/types_bench_$t.json"
  done
  step pytest 240 python3 -m pytest -q -p no:cacheprovider --junitxml="$OUT/types_pytest.xml" \
    tests/test_types.py tests/test_x86_typed.py
  race u8s8 1024,2048 "amx_u8s8_32x32;avx512vnni_u8s8_8x32"
  race f16 1024,2048 "avx512fp16_8x64;avx512_f16_8x32_u4"
  # the AMX kernel against the one before its last change (a copy of the kernel before it
  # in .amxold/, when the call carries one: of 2026-12-05, the whole-ir-loop entry point,
  # whose absence also gives the one-thread calls the old blocking, gemm.blocking_for),
  # both at their default blocking, beside PyTorch
  for t in bf16 s8s8; do
    old=""; [ -f .amxold/amx_${t}_32x32.c ] && old=";amx_${t}_32x32@.amxold/amx_${t}_32x32.c"
    step amx_${t}_vs_before 150 $PIN python3 -m microkernel compare --dtype $t --sizes 2048,4096 \
      --rounds 7 --peers torch --json "$OUT/types_amx_${t}_vs_before.json" --kernels "amx_${t}_32x32$old"
  done

  echo "### summary (${SECONDS}s)"
  python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
steps = [dict(zip(("step", "rc", "seconds"), l.split())) for l in open(os.path.join(out, "types_steps.txt"))]
json.dump(steps, open(os.path.join(out, "types_steps.json"), "w"), indent=1)
for s in steps:
    print(f"  {s['step']:<40} {s['rc']:>7} {s['seconds']:>5}s")
for t in ("bf16", "s8s8", "u8s8", "f16"):
    p = os.path.join(out, f"types_compare_{t}.json")
    if not os.path.exists(p):
        continue
    r = json.load(open(p))
    for sh in r["shapes"]:
        row = ", ".join(f"{n} {c['gflops']:.0f}" for n, c in sh["contenders"].items())
        print(f"  {t} {sh['shape']}: GFLOP/s {row}")
for t in ("bf16", "f16h", "u8s8", "s8s8", "u8u8"):
    p = os.path.join(out, f"types_bench_{t}.json")
    if os.path.exists(p):
        for l1 in json.load(open(p))["l1"]:
            print(f"  L1 {t} {l1['kernel']}: {l1['gflops']:.0f} GFLOP/s, {l1['pct_peak']:.0f}% of {l1['peak']}")
PY
} 2>&1 | tee "$LOG"
exit 0
