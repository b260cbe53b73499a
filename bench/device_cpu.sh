#!/usr/bin/env bash
# One call on the lent GPU machine's host CPU (x86-64, 16-core Sapphire Rapids: AVX-512,
# AVX512-BF16/FP16, AMX), which runs what this project's own 2-core AMD machine cannot.
# Every tile list comes from the registry (`python3 -m microkernel list --names`).
#
#   bash bench/device_cpu.sh           probe, validate every runnable kernel under each
#                                      MICROKERNEL_ISA, the gemm tests, bench, an avx512
#                                      sweep, `asm` of the AVX-512 default
#   bash bench/device_cpu.sh compare   the registry's AVX-512 race set (registry.DEVICE_AVX512)
#                                      validated, then interleaved with numpy and PyTorch
#                                      (`microkernel compare`) on squares and DeepBench
#   bash bench/device_cpu.sh types     issue 21: the x86 typed tiles (registry.DEVICE_TYPED:
#                                      AMX, AVX512-BF16/FP16, VNNI) -- bench/device_types.sh
#   bash bench/device_cpu.sh blocking  the MC/KC of the f32 default at 16 and 4 threads and of
#                                      amx_bf16_32x32 at one thread, n = 4096, interleaved
#                                      with numpy and PyTorch (`compare` NAME:kc=,mc=)
#   bash bench/device_cpu.sh l1amx     issue 21: bench/l1_cores.py (the FP16 tile's L1 figure on
#                                      every CPU, fp32 / AVX512-BF16 tiles as controls) and
#                                      the AMX bf16 prefetch variants and KC/MC raced at
#                                      2048 and 4096 beside PyTorch on CPUs 2 and 9
#   bash bench/device_cpu.sh amxdiag   issue 21: bench/amx_breakdown.py (where AMX gemm()
#                                      spends its time) on CPUs 2 and 5, AMX NC/KC at 4096
#   bash bench/device_cpu.sh amxpeak   issue 21: `bench` of amx_bf16_32x32 at 2048 and 4096 with
#                                      the tdpbf16ps loop timed beside each shape (% of peak
#                                      paired by round), on four CPUs
#   bash bench/device_cpu.sh amxt1     issue 21: the AMX bf16 kernel with TILELOADDT1 (streaming
#                                      hint) for the A / B panels (bench/amx_breakdown.py
#                                      --write-only) at the default blocking and at KC 384-512
#                                      with MC 1024 (a B micro-panel that could stay in L1),
#                                      raced at 2048 and 4096 on CPUs 9 and 13; `bench` of three
#                                      of them (% of peak paired by round) on CPU 9
#   bash bench/device_cpu.sh cstat     issue 21: the AMX tiles' C-stationary loops (MK_C_STATIONARY):
#                                      edge catalogue and tests, raced against the BLIS loops
#                                      beside PyTorch, `bench` on two CPUs
#   bash bench/device_cpu.sh cstattyped the same for the AVX512-BF16 and VNNI tiles (catalogue, raced
#                                      against their BLIS loops on CPU 9)
#   bash bench/device_cpu.sh stream    issue 21: the C-stationary loops' non-temporal C raced
#                                      against the modules without it; catalogue, tests, bench
#   bash bench/device_cpu.sh overhead  issue 21: the AMX bf16 gemm()'s time outside the micro-kernel
#                                      (amx_breakdown.py nop) with driver variants; bench
#   bash bench/device_cpu.sh driverab [REV] this tree's driver raced against REV's (bench/driver_ab.py)
#                                      on the AMX bf16, AVX512-BF16 and VNNI tiles, and the f32
#                                      default at 16 threads
#   bash bench/device_cpu.sh flow [REV] issue 24: the team's flow (no barrier per block) checked at
#                                      16 threads, then raced against REV's driver at 16 and 4
#   bash bench/device_cpu.sh threads   issue 24: bench/threads.py at 1 and 16 threads, ours,
#                                      numpy and PyTorch alone (3 processes each, in turn),
#                                      then interleaved: with a pause, back to back, and back to
#                                      back with the other runtimes' spin cut
#   bash bench/device_cpu.sh nc        the f32 default's NC (the B block a 16-thread team shares)
#                                      raced at 16 threads with numpy and PyTorch (`compare`
#                                      NAME:nc=N, pause 0.3)
#   bash bench/device_cpu.sh parts     issue 24: the team's units split into parts of each B
#                                      block's columns (`compare` NAME:parts=N,chunks=4, and
#                                      the default) at 16 threads with numpy and PyTorch,
#                                      paused and back to back
#   bash bench/device_cpu.sh scaling   issue 24: bench/threads.py at 1 and 16 threads for the
#                                      team, its old units (parts=1 chunks=4), bound threads,
#                                      numpy and PyTorch alone (2 processes each), interleaved
#   bash bench/device_cpu.sh scaling3  the same alone at 1, 4 and 16 threads, 3 processes each
#   bash bench/device_cpu.sh scaling5  issue 24's scaling bar once more: bench/threads.py at 1 and
#                                      16 threads, n = 4096, 5 processes per library in turn
#   bash bench/device_cpu.sh flowtyped [REV] the catalogue of every typed and native kernel (its
#                                      3-thread cases run the flow), typed and thread tests, AMX
#                                      bf16 and AVX512-BF16 at 16 threads against REV's driver
#   bash bench/device_cpu.sh small     issue 24: bench/threads.py at 16 threads on 256 and 512, alone
#                                      (3 processes each) and interleaved
#   bash bench/device_cpu.sh pool      issue 24: the flow on the pool's own threads (c_src/mk_pool.h):
#                                      team_check and the thread tests at 16 threads, then
#                                      raced against the same module without the pool
#                                      (MK_NO_POOL: OpenMP's team) beside numpy and PyTorch,
#                                      back to back and paused, 256-4096
#   bash bench/device_cpu.sh template  `microkernel template` of every x86 typed tile and the
#                                      AVX-512 default, each validated with its ISA's flags on
#                                      this CPU (the catalogue), and the template / source tests
#   bash bench/device_cpu.sh teamcheck bench/team_check.py at 16 threads (the team's units against
#                                      the float64 reference, and against the old units bit
#                                      for bit), tests/test_threads.py and test_blocking.py
#   bash bench/device_cpu.sh teamnc    the team's NC past NC_CAP and 16 units per thread, raced
#                                      at 16 threads on 4096 and 6144
#   bash bench/device_cpu.sh units     the units' NC / chunks / parts raced at 16 threads, then
#                                      the scaling at 4096 alone (default and NC = 4096)
#   bash bench/device_cpu.sh recheck [REV] after a driver change made off this host: the catalogue of
#                                      every typed tile and every AVX-512 kernel, the typed /
#                                      thread / C-stationary / fuzz tests, this tree's driver
#                                      raced against REV's (AMX bf16 on CPU 9, the f32 default
#                                      at 16 threads), `bench` of AMX bf16 at 4096 beside torch
#   bash bench/device_cpu.sh contention issue 24: bench/contention.py (gemm()'s default thread count
#                                      against MICROKERNEL_CONTENTION=1, alone and beside numpy
#                                      and PyTorch back to back and paused), the thread tests;
#                                      issue 21: `bench` of
#                                      AMX bf16 at 4096 beside the tdpbf16ps loop, 15 rounds;
#                                      contention 2: the gate, then bench/contention.py only
#                                      (256-4096, 9 rounds)
#   bash bench/device_cpu.sh whose     issue 24: whose spinning workers cost our back-to-back calls what:
#                                      the gate, then bench/contention.py at 1024-4096 back to
#                                      back beside numpy and PyTorch, numpy only, PyTorch only
#                                      (the CPUs each side's threads held, from schedstat), two
#                                      processes; on a calm host each library alone at 1 and 16
#                                      threads (2 processes each)
#   bash bench/device_cpu.sh alone2    issue 24: the gate, then on a calm host only each library alone
#                                      at 1 and 16 threads (2 processes each, bench/threads.py)
#   bash bench/device_cpu.sh scan      issue 24: bench/contention.py at 128-1024 with explicit counts
#                                      1-16 beside the default, alone and back to back with numpy
#                                      and PyTorch (what count a small problem should get)
#   bash bench/device_cpu.sh roofline  issue 21: bench/amx_roofline.py (the AMX tile's k loop with its
#                                      panels in L1 / L2 / L3, the tile loads alone, the peak
#                                      loop with random operands, the ir loop without the driver,
#                                      its C tiles' traffic, gemm() at 4096) on CPUs 5 and 13
#   bash bench/device_cpu.sh amxsmall  issue 21: the one-thread AMX default (KC = 256 bf16 / 512 int8 and the
#                                      whole-ir-loop entry point) against the kernel before it
#                                      (its source carried in .amxold/, which also gives it the
#                                      old blocking) at 512-4096, bf16 and s8s8, beside PyTorch
#                                      on CPUs 13 and 5; `bench` of bf16 at 1024-4096 on CPU 13
#   bash bench/device_cpu.sh lastpf    issue 21: the AMX ir loop's L2 prefetches in each tile's last
#                                      k step too, raced against the bf16 module before it (carry
#                                      .amxvar/old_amx_bf16_32x32.c from `git show
#                                      ae0c4c1:c_src/ukernels/amx_bf16_32x32.c`); catalogue, bench at 4096, then
#                                      bench/contention.py at 256-4096 three times (issue 24's interleaving)
#   bash bench/device_cpu.sh calm      issue 24: numpy's 16-thread GFLOP/s at 4096 first; on a calm host
#                                      (>= 2,000) the f32 default's units (chunks, parts, KC) raced
#                                      at 16 threads beside numpy and PyTorch, paused
#   bash bench/device_cpu.sh onet      issue 24: the one-thread f32 path on this host: the default's
#                                      MC / KC and three larger AVX-512 tiles raced on CPU 9
#                                      beside numpy and PyTorch; on a calm host at 16 threads too
#   bash bench/device_cpu.sh onepath   issue 24: bench/nop_share.py (gemm()'s time outside the f32
#                                      micro-kernel) on CPU 9, then NC 1024 / 2048, MC 352 and an A
#                                      micro-panel prefetch raced at one thread on CPUs 9 and 5
#   bash bench/device_cpu.sh l2nc      issue 24: the one-thread NC rule (the B block in the L2) against
#                                      the L3 rule's NC and two others, one thread on CPUs 9
#                                      and 5, squares and DeepBench; catalogue, blocking tests
#   bash bench/device_cpu.sh rulecheck [CPU] the blocking tests; on a calm host bench/threads.py alone
#                                      at 1 and 16 threads; the one-thread NC rule raced on CPU
#                                      CPU (default 13)
#   bash bench/device_cpu.sh calmalone on a calm host only: bench/threads.py alone at 1 and 16 threads,
#                                      one process per library; the team's parts picked against 4 and MC 176
#   bash bench/device_cpu.sh autoparts [2|typed|mc] issue 24: the team's parts picked per shape
#                                      (parts = 0, the fewest whose units get MC rows) against 4, 2
#                                      and 1 fixed at 16 threads beside numpy and PyTorch, paused,
#                                      with the thread and blocking tests and bench/team_check.py
#                                      (2: against 4 only; typed: the bf16 tiles against 4; mc:
#                                      MC 128 and 176); on a calm host each library alone at 1 and
#                                      16 threads first
#   bash bench/device_cpu.sh slab [CPU] issue 24: one thread's A slab (each KC block's A packed once
#                                      for all NC blocks) against the loops before, one thread
#                                      on CPUs CPU (default 5) and 9 beside numpy and PyTorch
#   bash bench/device_cpu.sh home [2|check|verify] issue 24 at 16 threads: the flow's units taken by their
#                                      home thread first (the default, MK_FLOW_HOME 1 in
#                                      c_src/mk_team.h) against one counter (MK_FLOW_HOME=0)
#                                      beside numpy and PyTorch, paused; on a calm host each
#                                      library alone at 1 and 16 threads first (2: 11 rounds;
#                                      check: the thread tests, bench/team_check.py, the bf16
#                                      tiles against their counter builds too; verify: the
#                                      tests and team check only)
#   bash bench/device_cpu.sh trace     issue 24 at 16 threads: bench/flow_trace.py (where a team call's
#                                      time goes: the threads' join, units, pieces, waits) at
#                                      1024-4096 alone, then after numpy and after PyTorch at
#                                      1024; on a calm host each library alone at 1 and 16
#                                      threads first
#   bash bench/device_cpu.sh hpieces [2] issue 24 at 16 threads: thread s packing piece s of each B
#                                      block first (the default, MK_FLOW_HOME_PIECES 1) against
#                                      pieces in arrival order (=0): bench/flow_trace.py of each
#                                      at 1024-4096, raced beside numpy and PyTorch, paused; on a
#                                      calm host each library alone at 1 and 16 threads first
#                                      (2: the race at 1024 and 2048, 11 rounds, then alone
#                                      and on a calm host the trace at 1024-4096)
#   bash bench/device_cpu.sh steal     issue 24 at 16 threads: slivers of a unit run by threads that
#                                      would wait (the default, MK_FLOW_STEAL 1) against whole units
#                                      (=0): the thread tests and team check, the trace, raced
#                                      beside numpy and PyTorch paused and back to back; on a
#                                      calm host each library alone at 1 and 16 threads first
#   bash bench/device_cpu.sh bars [check] issue 24's bars on this tree: on a calm host (or any, with
#                                      BARS_ANY=1) each library alone at 1 and 16 threads, then
#                                      interleaved (paused, back to back, the others' spin cut;
#                                      bench/threads.py, BARS_REPEATS processes each, default 2),
#                                      and on a calm host the team's trace at 1024-4096; check:
#                                      then the thread tests, bench/team_check.py and this driver
#                                      raced against badcb44's at 16 threads (carry
#                                      .amxvar/driver_badcb44 from `python bench/driver_ab.py
#                                      --rev badcb44 --write .amxvar/driver_badcb44`)
#   bash bench/device_cpu.sh amxfinal  issue 21: the four AMX 32 x 32 tiles' catalogue, the C-stationary and
#                                      typed x86 tests, then `bench` of bf16 at 1024-4096 (% of
#                                      the tdpbf16ps peak paired by round, PyTorch) on CPUs 13, 5; the 16 x 32 and 32 x 16
#                                      shapes raced against 32 x 32 at 2048, 4096 (their blocking) on CPU 9
#   bash bench/device_cpu.sh waits     issue 24: the flow's waits (mk_wait_step: yield, spin on, a
#                                      20 us sleep) raced at 16 threads beside numpy and
#                                      PyTorch, back to back and paused; the thread tests
#   bash bench/device_cpu.sh chunks    the team's units per thread raced at 16 and 4 threads
#                                      (`compare` NAME:chunks=N, with numpy and PyTorch) and
#                                      bench/host_cores.py
#
# Writes into $OUT (or out/ when OUT is unset). cffi and pyperf are not on that image:
# carry wheels in .whl/ (see the device tool's README); they are installed into /tmp/site.
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"   # .whl/ wheels, PYTHONPATH, threads
mk() { python3 -m microkernel "$@"; }
run() { echo "\$ $*"; "$@"; echo "[exit $?]"; }
# variant DEFINES NAME TILE: .amxvar/NAME_TILE.c, the tile's generated module with each
# of the comma-separated DEFINES first, `#define D 1` for D and `#define D V` for D=V
# (a contender NAME@.amxvar/NAME_TILE.c for compare / bench)
variant() {
  mkdir -p .amxvar
  (IFS=,; for d in $1; do case $d in *=*) echo "#define ${d%%=*} ${d#*=}";; *) echo "#define $d 1";; esac; done
   cat "c_src/ukernels/$3.c") > ".amxvar/$2_$3.c"
}
f32() { python3 -c 'from microkernel import registry; print(registry.DEFAULTS["avx512"])'; }
# race16 JSON SIZES ROUNDS PAUSE CONTENDERS: `microkernel compare` of blocking variants at
# 16 threads, numpy and PyTorch (16 threads each) in the same rounds
race16() {
  run env OMP_NUM_THREADS=16 OPENBLAS_NUM_THREADS=16 python3 -m microkernel compare \
      --kernels "$5" --threads 16 --sizes "$2" --rounds "$3" --pause "$4" --json "$OUT/$1"
}
# trace16 ARGS: bench/flow_trace.py (the team's timeline) at 16 threads, numpy and
# PyTorch at 16 threads too where --after brings them in
trace16() {
  run env OMP_NUM_THREADS=16 OPENBLAS_NUM_THREADS=16 python3 bench/flow_trace.py --calls 9 "$@"
}
# gate: numpy's GFLOP/s at 16 threads and n = 4096 (5 calls) printed, and calm=1 where
# it reads at least 2,000 (a calm host: 2,417-2,505 in sessions 55-56; a busy one
# 836-1,262), else calm=0; then the host's CPU model and caches (two models come, their
# numpy figures not comparable). Run it first, before this call loads the host itself.
gate() {
  local g
  g=$(OMP_NUM_THREADS=16 OPENBLAS_NUM_THREADS=16 python3 -c 'import numpy as np, time
a = np.ones((4096, 4096), np.float32); c = np.empty_like(a); np.matmul(a, a, out=c)
t = time.perf_counter(); [np.matmul(a, a, out=c) for _ in range(5)]
print(int(5 * 2 * 4096 ** 3 / (time.perf_counter() - t) / 1e9))')
  echo "numpy 16 threads at 4096: $g GFLOP/s"
  if [ "$g" -ge 2000 ]; then calm=1; else calm=0; echo "a busy host: the calm-host steps are skipped"; fi
  lscpu | grep -E '^Model|cache'
}
# team_checks: the blocking and thread tests, then bench/team_check.py at 16 threads
team_checks() {
  run python3 -m pytest -q -p no:cacheprovider tests/test_blocking.py tests/test_threads.py
  run python3 bench/team_check.py --threads 16
}
# alone [PROCESSES]: on a calm host (after gate), each library alone in its own process
# at 1 and 16 threads, n = 1024-4096 (bench/threads.py), PROCESSES per library in turn
# (default 1): issue 24's alone bars
alone() {
  [ "$calm" = 1 ] || return 0
  run python3 bench/threads.py --threads 1,16 --sizes 1024,2048,4096 --repeats "${1:-1}" \
      --interleaved 0 --libs "microkernel team,numpy,torch" --out "$OUT/alone"
}
# race1 CPU JSON SIZES ROUNDS CONTENDERS: `microkernel compare` of f32 contenders at one
# thread pinned to CPU, numpy and PyTorch (one thread each) in the same rounds
race1() {
  run taskset -c "$1" python3 -m microkernel compare --sizes "$3" --rounds "$4" \
      --kernels "$5" --json "$OUT/$2"
}
if [ "${1:-}" = types ]; then
  exec bash "$(dirname "$0")/device_types.sh"
fi
if [ "${1:-}" = l1amx ]; then
  # issue 21's two open bars: the FP16 tile's L1 figure on every CPU (against the fp32
  # and AVX512-BF16 tiles as controls), and the AMX bf16 kernel's blocking and L1
  # prefetch variants (bench/amx_breakdown.py writes them into .amxvar/) at 2048 and
  # 4096 beside PyTorch, on two CPUs
  python3 bench/amx_breakdown.py --write-only --dir .amxvar
  var="amx_bf16_32x32;amx_bf16_32x32:kc=512,mc=256;amx_bf16_32x32:kc=320,mc=512"
  for f in .amxvar/pf*.c; do [ -f "$f" ] && var="$var;amx_bf16_32x32@$f"; done
  {
    run lscpu -e
    run mk probe
    for kc in 256 128; do
      run python3 bench/l1_cores.py --kernel avx512fp16_8x64 --kernel avx512fp16_8x64_u4 \
          --kernel avx512_8x32_u4 --kernel avx512bf16_8x32 --kc $kc --rounds 5 \
          --json "$OUT/l1_cores_kc$kc.json"
    done
    for cpu in 2 9; do
      run taskset -c $cpu python3 -m microkernel compare --dtype bf16 --sizes 2048,4096 \
          --rounds 7 --peers torch --kernels "$var" --json "$OUT/amx_variants_cpu$cpu.json"
    done
  } 2>&1 | tee "$OUT/device_l1amx.log"
  exit 0
fi
if [ "${1:-}" = amxdiag ]; then
  # where the AMX bf16 gemm() spends its time (bench/amx_breakdown.py and its diagnostic
  # micro-kernels), then NC / KC blockings that pack A once at n = 4096 (NC >= n) or
  # pass over C once (KC = K)
  d=amx_bf16_32x32
  {
    for cpu in 2 5; do
      run taskset -c $cpu python3 bench/amx_breakdown.py --sizes 2048,4096 --rounds 5 \
          --json "$OUT/amx_breakdown_cpu$cpu.json"
    done
    run taskset -c 5 python3 -m microkernel compare --dtype bf16 --sizes 4096 --rounds 7 \
        --peers torch --json "$OUT/amx_blocking_4096.json" --kernels \
        "$d;$d:nc=4096;$d:kc=4096,mc=128;$d:kc=4096,mc=128,nc=4096;$d:kc=1024,mc=512,nc=4096"
  } 2>&1 | tee "$OUT/device_amxdiag.log"
  exit 0
fi
if [ "${1:-}" = blocking ]; then
  k=$(f32)
  v="$k;$k:mc=176;$k:mc=352;$k:kc=384,mc=480"
  {
    race16 blocking_f32_16t.json 2048,4096 5 0.3 "$v"
    run env OMP_NUM_THREADS=4 OPENBLAS_NUM_THREADS=4 taskset -c 0-3 python3 -m microkernel \
        compare --kernels "$v" --sizes 4096 --threads 4 --rounds 3 --pause 0.3 \
        --json "$OUT/blocking_f32_4t.json"
    run taskset -c 2 python3 -m microkernel compare --dtype bf16 --sizes 4096 --rounds 5 \
        --kernels "amx_bf16_32x32;amx_bf16_32x32:kc=704;amx_bf16_32x32:kc=1024;amx_bf16_32x32:kc=704,mc=256;amx_bf16_32x32:kc=1024,mc=512" \
        --json "$OUT/blocking_amx_bf16_4096.json"
  } 2>&1 | tee "$OUT/device_blocking.log"
  exit 0
fi
if [ "${1:-}" = amxpeak ]; then
  {
    for cpu in 2 5 9 13; do
      run taskset -c $cpu python3 -m microkernel bench --dtype bf16 --kernel amx_bf16_32x32 \
          --sizes 2048,4096 --rounds 11 --peers torch --json "$OUT/amx_peak_cpu$cpu.json"
    done
  } 2>&1 | tee "$OUT/device_amxpeak.log"
  exit 0
fi
if [ "${1:-}" = amxt1 ]; then
  python3 bench/amx_breakdown.py --write-only --dir .amxvar
  d=amx_bf16_32x32; t="$d@.amxvar/t1a.c"
  var="$d;$d:kc=512,mc=1024;$t;$t:kc=512,mc=1024;$t:kc=384,mc=1024;$d@.amxvar/t1b.c"
  var="$var;$d@.amxvar/t1ab.c;$d@.amxvar/t1b.c:kc=512,mc=1024"
  {
    for cpu in 9 13; do
      run taskset -c $cpu python3 -m microkernel compare --dtype bf16 --sizes 2048,4096 \
          --rounds 7 --peers torch --kernels "$var" --json "$OUT/amx_t1_cpu$cpu.json"
    done
    for k in "$d" "$t --blocking kc=512,mc=1024" "$t"; do
      run taskset -c 9 python3 -m microkernel bench --dtype bf16 --kernel $k --sizes 4096 \
          --rounds 9 --peers torch --json "$OUT/amx_t1_bench_$(echo "$k" | tr -c 'a-z0-9' _).json"
    done
  } 2>&1 | tee "$OUT/device_amxt1.log"
  exit 0
fi
if [ "${1:-}" = cstat ]; then
  # issue 21: the AMX tiles' C-stationary loops (c_src/mk_cstat.h, MK_C_STATIONARY: at one thread
  # with K over several KC blocks, B packed whole once and each MC x NC block of C
  # accumulated in compact tiles, written to C once, row by row): every AMX tile's edge
  # catalogue and the tests, then raced against the same module with the BLIS loops
  # (MK_BLIS_LOOPS) beside PyTorch, then `bench` (% of the tdpbf16ps peak paired by
  # round, gemm() against torch at 1024-4096) on two CPUs
  for t in amx_bf16_32x32 amx_s8s8_32x32; do variant MK_BLIS_LOOPS blis $t; done
  d=amx_bf16_32x32; s=amx_s8s8_32x32
  amx=$(python3 -c "from microkernel import registry; print(' '.join(x.name for x in registry.DEVICE_TYPED if x.isa == 'amx'))")
  {
    for t in $amx; do
      run mk validate --kernel $t
    done
    run python3 -m pytest -q -p no:cacheprovider tests/test_cstat.py tests/test_types.py \
        tests/test_x86_typed.py tests/test_resources.py
    for cpu in 9 13; do
      run taskset -c $cpu python3 -m microkernel compare --dtype bf16 --sizes 2048,3072,4096 \
          --rounds 7 --peers torch --json "$OUT/cstat_bf16_cpu$cpu.json" \
          --kernels "$d;$d@.amxvar/blis_$d.c"
    done
    for cpu in 9 13; do
      run taskset -c $cpu python3 -m microkernel bench --dtype bf16 --kernel $d \
          --sizes 1024,2048,4096 --rounds 9 --peers torch --json "$OUT/cstat_bench_cpu$cpu.json"
    done
    run taskset -c 9 python3 -m microkernel compare --dtype s8s8 --sizes 4096 \
        --rounds 5 --peers torch --json "$OUT/cstat_s8s8_cpu9.json" \
        --kernels "$s;$s@.amxvar/blis_$s.c"
  } 2>&1 | tee "$OUT/device_cstat.log"
  exit 0
fi
if [ "${1:-}" = stream ]; then
  # issue 21: the C-stationary loops' non-temporal C (MK_CSTAT_NT_MIN): the edge
  # catalogue of every x86 typed tile and the tests, then raced against the same modules
  # without it (old_*) beside PyTorch, then `bench` (% of the tdpbf16ps peak) on two CPUs
  d=amx_bf16_32x32; s=amx_s8s8_32x32; b=avx512bf16_8x32
  for t in $d $s $b; do variant MK_CSTAT_NT_MIN=0 old $t; done
  typed=$(python3 -c "from microkernel import registry; print(' '.join(x.name for x in registry.DEVICE_TYPED))")
  {
    run lscpu -e
    for t in $typed; do run mk validate --kernel $t; done
    run python3 -m pytest -q -p no:cacheprovider tests/test_cstat.py tests/test_types.py \
        tests/test_x86_typed.py
    for cpu in 9 5; do
      run taskset -c $cpu python3 -m microkernel compare --dtype bf16 --sizes 2048,3072,4096 \
          --rounds 9 --peers torch --json "$OUT/stream_bf16_cpu$cpu.json" --kernels "$d;$d@.amxvar/old_$d.c"
    done
    for cpu in 9 5; do
      run taskset -c $cpu python3 -m microkernel bench --dtype bf16 --kernel $d --sizes 4096 \
          --rounds 9 --peers torch --json "$OUT/stream_bench_cpu$cpu.json"
    done
    run taskset -c 13 python3 -m microkernel compare --dtype s8s8 --sizes 3072,4096 --rounds 5 \
        --peers torch --json "$OUT/stream_s8s8_cpu13.json" --kernels "$s;$s@.amxvar/old_$s.c"
    run taskset -c 13 python3 -m microkernel compare --dtype bf16 --sizes 1024,2048,4096 --rounds 5 \
        --peers torch --json "$OUT/stream_avx512bf16_cpu13.json" --kernels "$b;$b@.amxvar/old_$b.c"
  } 2>&1 | tee "$OUT/device_stream.log"
  exit 0
fi
if [ "${1:-}" = overhead ]; then
  # issue 21: the AMX bf16 gemm()'s time outside the micro-kernel (bench/amx_breakdown.py's
  # nop: packing, the loops, the pass that writes C) with the driver's defaults and
  # without the non-temporal C (nont), each beside the real kernel built the same way, on
  # two CPUs; then `bench` (% of the tdpbf16ps peak). The run of 2026-12-04 also had
  # B packed 8 panels at a time (g8: MK_PACK_B_GROUP=8, not kept)
  d=amx_bf16_32x32
  {
    for cpu in 9 5; do
      run taskset -c $cpu python3 bench/amx_breakdown.py --dir .amxvar --sizes 4096 --rounds 7 \
          --define nont:MK_CSTAT_NT_MIN=0 --json "$OUT/overhead_cpu$cpu.json"
    done
    run taskset -c 9 python3 -m microkernel bench --dtype bf16 --kernel $d --sizes 4096 \
        --rounds 9 --peers torch --json "$OUT/overhead_bench_cpu9.json"
  } 2>&1 | tee "$OUT/device_overhead.log"
  exit 0
fi
if [ "${1:-}" = recheck ]; then
  # the driver split into its parts (b754086) and the bad-input checks were made on a
  # machine without AVX-512 or AMX: every kernel this host runs through the catalogue and
  # the tests, then the split driver raced against REV's (default d7376d4, the one file;
  # carry what `python bench/driver_ab.py --rev REV --write .amxvar/driver_REV` writes)
  rev=${2:-d7376d4}
  typed=$(python3 -c "from microkernel import registry; print(' '.join(x.name for x in registry.DEVICE_TYPED))")
  {
    run mk probe
    for t in $typed; do run mk validate --kernel $t; done
    MICROKERNEL_ISA=avx512 run mk validate
    run python3 -m pytest -q -p no:cacheprovider tests/test_types.py tests/test_x86_typed.py \
        tests/test_threads.py tests/test_cstat.py tests/test_fuzz.py
    run taskset -c 9 python3 bench/driver_ab.py --rev $rev --c-src .amxvar/driver_$rev \
        --kernel amx_bf16_32x32 --sizes 2048,4096 --rounds 5 --json "$OUT/split_amx_bf16_cpu9.json"
    run env OMP_NUM_THREADS=16 python3 bench/driver_ab.py --rev $rev --c-src .amxvar/driver_$rev \
        --kernel "$(f32)" --threads 16 --sizes 1024,2048,4096 --rounds 5 --json "$OUT/split_f32_16t.json"
    run taskset -c 9 python3 -m microkernel bench --dtype bf16 --kernel amx_bf16_32x32 \
        --sizes 4096 --rounds 7 --peers torch --json "$OUT/split_bench_cpu9.json"
  } 2>&1 | tee "$OUT/device_recheck.log"
  exit 0
fi
if [ "${1:-}" = driverab ]; then
  # this tree's driver against revision ${2:-fbb3a17}'s (bench/driver_ab.py; carry the
  # files that `python bench/driver_ab.py --rev REV --write .amxvar/driver_REV` writes),
  # one thread on CPU 9: the typed tiles whose packing or C pass changed; then the f32
  # default at 16 threads (the team, its workspace past MK_WS_HUGE_MIN)
  rev=${2:-fbb3a17}
  {
    for t in amx_bf16_32x32 avx512bf16_8x32 avx512vnni_u8s8_8x32; do
      run taskset -c 9 python3 bench/driver_ab.py --rev $rev --c-src .amxvar/driver_$rev \
          --kernel $t --sizes 1024,2048,4096 --rounds 7 --json "$OUT/driverab_${t}_cpu9.json"
    done
    run env OMP_NUM_THREADS=16 python3 bench/driver_ab.py --rev $rev --c-src .amxvar/driver_$rev \
        --kernel "$(f32)" --threads 16 --sizes 2048,4096 --rounds 7 --json "$OUT/driverab_f32_16t.json"
  } 2>&1 | tee "$OUT/device_driverab.log"
  exit 0
fi
if [ "${1:-}" = flow ]; then
  # issue 24: the team's flow of dynamic units (no barrier per block; c_src/mk_team.h,
  # mk_loops_flow) checked at 16 threads (bench/team_check.py: bit for bit against the
  # old units and the fixed shares between barriers; tests/test_threads.py), then raced
  # against revision ${2:-8a2f1fb}'s driver (the units between two barriers per block;
  # carry .amxvar/driver_REV from `python bench/driver_ab.py --rev REV --write
  # .amxvar/driver_REV`) at 16 and 4 threads
  rev=${2:-8a2f1fb}
  {
    team_checks
    run env OMP_NUM_THREADS=16 python3 bench/driver_ab.py --rev $rev --c-src .amxvar/driver_$rev \
        --kernel "$(f32)" --threads 16 --sizes 1024,2048,4096 --rounds 9 --json "$OUT/flow_f32_16t.json"
    run env OMP_NUM_THREADS=4 python3 bench/driver_ab.py --rev $rev --c-src .amxvar/driver_$rev \
        --kernel "$(f32)" --threads 4 --sizes 2048,4096 --rounds 7 --json "$OUT/flow_f32_4t.json"
  } 2>&1 | tee "$OUT/device_flow.log"
  exit 0
fi
if [ "${1:-}" = cstattyped ]; then
  # the AVX512-BF16 and VNNI tiles with and without the C-stationary loops (each module
  # with MK_C_STATIONARY and with MK_BLIS_LOOPS added: one of the two is the default, see
  # codegen/x86_typed.py C_STATIONARY): their edge catalogue, then raced at one thread on
  # CPU 9 (the run of 2026-12-04 had both tiles define it and raced default against blis_)
  for t in avx512bf16_8x32 avx512vnni_u8s8_8x32; do
    variant MK_BLIS_LOOPS blis $t
    variant MK_C_STATIONARY cs $t
    run mk validate --kernel $t
  done 2>&1 | tee "$OUT/device_cstattyped.log"
  {
    b=avx512bf16_8x32; v=avx512vnni_u8s8_8x32
    run taskset -c 9 python3 -m microkernel compare --dtype bf16 --sizes 1024,2048,4096 \
        --rounds 5 --peers torch --json "$OUT/cstat_avx512bf16_cpu9.json" \
        --kernels "$b@.amxvar/cs_$b.c;$b@.amxvar/blis_$b.c"
    run taskset -c 9 python3 -m microkernel compare --dtype u8s8 --sizes 1024,2048,4096 \
        --rounds 5 --peers numpy --json "$OUT/cstat_avx512vnni_cpu9.json" \
        --kernels "$v@.amxvar/cs_$v.c;$v@.amxvar/blis_$v.c"
  } 2>&1 | tee -a "$OUT/device_cstattyped.log"
  exit 0
fi
if [ "${1:-}" = threads ]; then
  {
    run env OMP_NUM_THREADS=16 OPENBLAS_NUM_THREADS=16 python3 bench/threads.py --threads 1,16 \
        --sizes 1024,2048,4096 --rounds 9 --repeats 3 --libs "microkernel team,numpy,torch" \
        --out "$OUT"
  } 2>&1 | tee "$OUT/device_threads.log"
  exit 0
fi
if [ "${1:-}" = nc ]; then
  k=$(f32)
  {
    race16 nc_16t.json 1024,2048,4096 7 0.3 "$k;$k:nc=512;$k:nc=1024;$k:nc=2048"
  } 2>&1 | tee "$OUT/device_nc.log"
  exit 0
fi
if [ "${1:-}" = parts ]; then
  k=$(f32)
  {
    for p in pause:0.3 b2b:0; do
      race16 "parts_16t_${p%%:*}.json" 1024,2048,4096 7 "${p#*:}" \
          "$k:parts=1,chunks=4;$k:parts=2,chunks=4;$k:parts=4,chunks=4;$k:parts=8,chunks=4;$k"
    done
  } 2>&1 | tee "$OUT/device_parts.log"
  exit 0
fi
if [ "${1:-}" = scaling ]; then
  {
    run python3 bench/threads.py --threads 1,16 --sizes 1024,2048,4096 --rounds 7 --repeats 2 \
        --libs "microkernel team,microkernel team parts=1 chunks=4,microkernel team bind,numpy,torch" \
        --out "$OUT"
  } 2>&1 | tee "$OUT/device_scaling.log"
  exit 0
fi
if [ "${1:-}" = units ]; then
  # the new units' blocking at 16 threads: one B block at n = 4096 (NC 4096 instead of two
  # of 2048: half the barriers and tails), finer units, then the scaling alone
  k=$(f32)
  {
    run python3 -c "import microkernel as mk; from microkernel.gemm import blocking_for; print(blocking_for(mk.get_kernel('$k')))"
    race16 units_16t.json 2048,4096 7 0.3 \
        "$k;$k:nc=4096;$k:nc=4096,chunks=16;$k:chunks=16;$k:nc=4096,parts=8"
    run python3 bench/threads.py --threads 1,16 --sizes 4096 --repeats 3 --interleaved 0 \
        --libs "microkernel team,microkernel team nc=4096,numpy,torch" --out "$OUT"
  } 2>&1 | tee "$OUT/device_units.log"
  exit 0
fi
if [ "${1:-}" = scaling5 ]; then
  {
    run python3 bench/threads.py --threads 1,16 --sizes 4096 --repeats 5 --interleaved 0 \
        --libs "microkernel team,numpy,torch" --out "$OUT"
  } 2>&1 | tee "$OUT/device_scaling5.log"
  exit 0
fi
if [ "${1:-}" = flowtyped ]; then
  # the flow with every typed tile: the edge catalogue (its 3-thread cases run the flow)
  # of the typed tiles and of every native ISA's kernels, the typed and thread tests, then
  # AMX bf16 and the AVX512-BF16 tile at 16 threads against revision ${2:-8a2f1fb}'s driver
  rev=${2:-8a2f1fb}
  typed=$(python3 -c "from microkernel import registry; print(' '.join(x.name for x in registry.DEVICE_TYPED))")
  {
    for t in $typed; do run mk validate --kernel $t; done
    for isa in avx512 avx2 scalar; do MICROKERNEL_ISA=$isa run mk validate; done
    run python3 -m pytest -q -p no:cacheprovider tests/test_types.py tests/test_x86_typed.py \
        tests/test_threads.py
    for t in amx_bf16_32x32 avx512bf16_8x32; do
      run env OMP_NUM_THREADS=16 python3 bench/driver_ab.py --rev $rev --c-src .amxvar/driver_$rev \
          --kernel $t --threads 16 --sizes 2048,4096 --rounds 7 --json "$OUT/flow_${t}_16t.json"
    done
  } 2>&1 | tee "$OUT/device_flowtyped.log"
  exit 0
fi
if [ "${1:-}" = small ]; then
  # issue 24's interleaved bar on the small squares (the issue's example was 256^3): each
  # library alone at 16 threads, 3 processes each, then interleaved (pause, back to back,
  # spin cut)
  {
    run env OMP_NUM_THREADS=16 OPENBLAS_NUM_THREADS=16 python3 bench/threads.py --threads 16 \
        --sizes 256,512 --rounds 9 --repeats 3 --libs "microkernel team,numpy,torch" --out "$OUT"
  } 2>&1 | tee "$OUT/device_small.log"
  exit 0
fi
if [ "${1:-}" = pool ]; then
  # issue 24: the flow on the pool's threads against OpenMP's team, in the same rounds
  # as numpy and PyTorch (16 threads each): back to back (their workers still spinning)
  # and with a 0.3 s pause, on the small squares of the interleaving bar and 1024-4096
  k=$(f32)
  variant MK_NO_POOL nopool $k
  {
    run python3 bench/team_check.py --threads 16
    run python3 -m pytest -q -p no:cacheprovider tests/test_threads.py
    race16 pool_b2b.json 256,512,1024,2048,4096 9 0 "$k;$k@.amxvar/nopool_$k.c"
    race16 pool_pause.json 256,512,1024,2048,4096 9 0.3 "$k;$k@.amxvar/nopool_$k.c"
  } 2>&1 | tee "$OUT/device_pool.log"
  exit 0
fi
if [ "${1:-}" = template ]; then
  # the templates compiled with their ISA's flags (AMX, AVX512-FP16 / BF16 / VNNI) and run
  # through the edge catalogue on the hardware
  {
    for t in $(f32) avx512_8x16 $(python3 -m microkernel list --names --isa avx512bf16) \
             $(python3 -m microkernel list --names --isa avx512fp16) \
             $(python3 -m microkernel list --names --isa avx512vnni) \
             $(python3 -m microkernel list --names --isa amx) avx512_s8s8_8x32; do
      run python3 -m microkernel template "$t" -o "/tmp/tpl_$t.c" --force
      run python3 -m microkernel validate --kernel "$t" --source "/tmp/tpl_$t.c"
    done
    run python3 -m pytest -q -p no:cacheprovider tests/test_template.py tests/test_source_variant.py
  } 2>&1 | tee "$OUT/device_template.log"
  exit 0
fi
if [ "${1:-}" = trace ]; then
  # issue 24: the flow's timeline (bench/flow_trace.py, the MK_FLOW_TRACE build) alone and
  # back to back after the peers, 16 threads each. (Session 60's first call also traced
  # and raced MK_FLOW_READY, a thread past its own units stealing a unit whose C tiles
  # were ready first: a tie, +0.5 [-2.0, +9.0] %, removed; its second, a `rows` mode, the
  # B pieces as ranges of the block's rows read along their length instead of ranges of
  # its panels: a tie, +0.0 [-0.2, +0.4] %, removed.)
  {
    gate
    alone
    trace16 --sizes 1024,2048,4096 --json "$OUT/trace_alone.json"
    for lib in numpy torch; do
      trace16 --sizes 1024 --after $lib --json "$OUT/trace_after_$lib.json"
    done
  } 2>&1 | tee "$OUT/device_trace.log"
  exit 0
fi
if [ "${1:-}" = hpieces ]; then
  # issue 24: thread s packs piece s of each B block first (MK_FLOW_HOME_PIECES 1 in
  # c_src/mk_team.h, the default since session 60) against the pieces from one counter
  # in arrival order (MK_FLOW_HOME_PIECES=0, before). (none): each traced
  # (bench/flow_trace.py) at 1024-4096, then raced at 16 threads beside numpy and
  # PyTorch, paused, 9 rounds (session 60's call 3, when the build with =1 was the
  # variant). 2: the race at 1024 and 2048 only, 11 rounds, then on a calm host each
  # library alone at 1 and 16 threads and the default's trace at 1024-4096
  k=$(f32)
  variant MK_FLOW_HOME_PIECES=0 counterpieces "$k"
  {
    gate
    if [ "${2:-}" = 2 ]; then
      race16 "hpieces2_16t_calm$calm.json" 1024,2048 11 0.3 "$k;$k@.amxvar/counterpieces_$k.c"
      alone
      [ "$calm" = 1 ] && trace16 --sizes 1024,2048,4096 --json "$OUT/trace_calm.json"
    else
      alone
      trace16 --sizes 1024,2048,4096 --json "$OUT/trace_default.json"
      trace16 --sizes 1024,2048,4096 --define MK_FLOW_HOME_PIECES=0 --json "$OUT/trace_counterpieces.json"
      race16 "hpieces_16t_calm$calm.json" 1024,2048,3072,4096 9 0.3 "$k;$k@.amxvar/counterpieces_$k.c"
    fi
  } 2>&1 | tee "$OUT/device_hpieces.log"
  exit 0
fi
if [ "${1:-}" = steal ]; then
  # issue 24: threads that would wait run the free slivers of others' units
  # (MK_FLOW_STEAL 1 in c_src/mk_team.h, the default since session 61) against units
  # run whole by their owner (MK_FLOW_STEAL=0, before): on a calm host each library
  # alone first; the thread tests and bench/team_check.py at 16 threads; the default's
  # trace at 1024-4096; raced at 16 threads beside numpy and PyTorch, paused (1024-4096)
  # and back to back (256, 1024, 2048: the others' workers still spinning)
  k=$(f32)
  variant MK_FLOW_STEAL=0 nosteal "$k"
  {
    gate
    alone
    team_checks
    trace16 --sizes 1024,2048,4096 --json "$OUT/trace_steal.json"
    race16 "steal_16t_pause_calm$calm.json" 1024,2048,4096 9 0.3 "$k;$k@.amxvar/nosteal_$k.c"
    race16 "steal_16t_b2b_calm$calm.json" 256,1024,2048 15 0 "$k;$k@.amxvar/nosteal_$k.c"
  } 2>&1 | tee "$OUT/device_steal.log"
  exit 0
fi
if [ "${1:-}" = bars ]; then
  # issue 24's bars measured on this tree where the host allows it (session 62: call 1
  # ran the calm-host steps on a calm host, call 2 `BARS_ANY=1 BARS_REPEATS=3 ... bars
  # check` the rest on the same machine, busy by then). check: the tests and team
  # check on the host, and the later changes of session 61 (a last KC block's unit
  # without a done mark, the helpers' scans) raced against badcb44's flow, the last one
  # timed there
  {
    gate
    if [ "$calm" = 1 ] || [ "${BARS_ANY:-0}" = 1 ]; then
      run env OMP_NUM_THREADS=16 OPENBLAS_NUM_THREADS=16 python3 bench/threads.py --threads 1,16 \
          --sizes 1024,2048,4096 --rounds 9 --repeats "${BARS_REPEATS:-2}" \
          --libs "microkernel team,numpy,torch" --out "$OUT/bars"
    fi
    [ "$calm" = 1 ] && trace16 --sizes 1024,2048,4096 --json "$OUT/trace_calm.json"
    if [ "${2:-}" = check ]; then
      team_checks
      run env OMP_NUM_THREADS=16 python3 bench/driver_ab.py --rev badcb44 \
          --c-src .amxvar/driver_badcb44 --kernel "$(f32)" --threads 16 --sizes 1024,2048,4096 \
          --rounds 9 --json "$OUT/later_16t.json"
    fi
  } 2>&1 | tee "$OUT/device_bars.log"
  exit 0
fi
if [ "${1:-}" = teamcheck ]; then
  # correctness of the team's units with the AVX-512 default at 16 threads
  {
    team_checks
  } 2>&1 | tee "$OUT/device_teamcheck.log"
  exit 0
fi
if [ "${1:-}" = teamnc ]; then
  # the team's B block past NC_CAP (one block of up to 8192 columns: fewer barriers and
  # tails, A packed once per block) and 16 units per thread, 11 paused rounds
  k=$(f32)
  {
    race16 teamnc_16t.json 4096,6144 11 0.3 "$k;$k:nc=8192;$k:nc=8192,chunks=16;$k:chunks=16"
  } 2>&1 | tee "$OUT/device_teamnc.log"
  exit 0
fi
if [ "${1:-}" = scaling3 ]; then
  # the same alone, at 1, 4 and 16 threads, 3 processes each, no interleaved runs
  {
    run python3 bench/threads.py --threads 1,4,16 --sizes 1024,2048,4096 --repeats 3 \
        --libs "microkernel team,microkernel team parts=1 chunks=4,numpy,torch" --interleaved 0 \
        --out "$OUT"
  } 2>&1 | tee "$OUT/device_scaling3.log"
  exit 0
fi
if [ "${1:-}" = scan ]; then
  {
    run python3 bench/contention.py --sizes 128,192,256,384,512,768,1024 --counts 1,2,4,8,16 \
        --rounds 25 --pause 0 --alone-pause 0 --out "$OUT/small"
  } 2>&1 | tee "$OUT/device_small.log"
  exit 0
fi
if [ "${1:-}" = whose ]; then
  {
    gate
    for r in 1 2; do
      run python3 bench/contention.py --sizes 1024,2048,4096 --rounds 11 --pause 0 \
          --peers "numpy,torch;numpy;torch" --out "$OUT/whose$r"
    done
    alone 2
  } 2>&1 | tee "$OUT/device_whose.log"
  exit 0
fi
if [ "${1:-}" = alone2 ]; then
  { gate; alone 2; } 2>&1 | tee "$OUT/device_alone2.log"
  exit 0
fi
if [ "${1:-}" = contention ]; then
  if [ "${2:-}" = 2 ]; then
    {
      gate
      run python3 bench/contention.py --sizes 256,1024,2048,4096 --rounds 9 --contention \
          --out "$OUT/contention"
    } 2>&1 | tee "$OUT/device_contention.log"
    exit 0
  fi
  {
    run python3 -m pytest -q -p no:cacheprovider tests/test_threads.py
    run python3 bench/contention.py --sizes 256,512,1024,2048,4096 --rounds 7 --contention \
        --out "$OUT/contention"
    run taskset -c 9 python3 -m microkernel bench --dtype bf16 --kernel amx_bf16_32x32 \
        --sizes 4096 --rounds 15 --peers torch --json "$OUT/amx_bench4096_cpu9.json"
  } 2>&1 | tee "$OUT/device_contention.log"
  exit 0
fi
if [ "${1:-}" = roofline ]; then
  # issue 21: what the 2 x 2 AMX tile's k loop reaches with its panels in L1 / L2 / L3,
  # the tile loads alone, the peak loop with random operands, and gemm() in the same rounds
  {
    run python3 bench/amx_roofline.py --cpus 5,13 --rounds 15 --sizes 4096 --json "$OUT/roofline.json"
  } 2>&1 | tee "$OUT/device_roofline.log"
  exit 0
fi
if [ "${1:-}" = amxsmall ]; then
  {
    for t in bf16 s8s8; do
      k=amx_${t}_32x32
      for cpu in 13 5; do
        run taskset -c $cpu python3 -m microkernel compare --dtype $t --sizes 512,1024,2048,4096 \
            --rounds 9 --peers torch --kernels "$k;$k@.amxold/$k.c" --json "$OUT/amxsmall_${t}_cpu$cpu.json"
      done
    done
    run taskset -c 13 python3 -m microkernel bench --dtype bf16 --kernel amx_bf16_32x32 \
        --sizes 1024,2048,4096 --rounds 9 --peers torch --json "$OUT/amxsmall_bench_cpu13.json"
  } 2>&1 | tee "$OUT/device_amxsmall.log"
  exit 0
fi
if [ "${1:-}" = lastpf ]; then
  d=amx_bf16_32x32; s=amx_s8s8_32x32
  {
    for t in $d $s; do run mk validate --kernel $t; done
    for cpu in 13 5; do
      run taskset -c $cpu python3 -m microkernel compare --dtype bf16 --sizes 2048,4096 --rounds 9 \
          --peers torch --json "$OUT/lastpf_bf16_cpu$cpu.json" --kernels "$d;$d@.amxvar/old_$d.c"
    done
    for cpu in 13 5; do
      run taskset -c $cpu python3 -m microkernel bench --dtype bf16 --kernel $d --sizes 4096 \
          --rounds 11 --peers torch --json "$OUT/lastpf_bench_cpu$cpu.json"
    done
    for r in 1 2 3; do
      run python3 bench/contention.py --sizes 256,512,1024,2048,4096 --rounds 9 --out "$OUT/contention_r$r"
    done
  } 2>&1 | tee "$OUT/device_lastpf.log"
  exit 0
fi
if [ "${1:-}" = calm ]; then
  # issue 24 on a calm host: numpy at 16 threads and 4096 first; only where it reads at
  # least 2,000 GFLOP/s (a calm host: 2,479 in session 55; a busy one 1,020-1,250) the f32
  # default's units raced at 16 threads beside numpy and PyTorch (paused)
  k=$(f32)
  {
    gate
    if [ "$calm" = 1 ]; then
      race16 calm_units.json 1024,2048,4096 7 0.3 \
          "$k;$k:chunks=2;$k:chunks=4;$k:parts=2;$k:parts=1,chunks=4;$k:parts=1,chunks=2;$k:kc=512"
    fi
  } 2>&1 | tee "$OUT/device_calm.log"
  exit 0
fi
if [ "${1:-}" = onet ]; then
  # issue 24's one-thread gap (ours 158 against numpy's 167 GFLOP/s at 4096 on a calm
  # host, session 56): the f32 default's MC / KC, OpenBLAS SkylakeX's P = Q = 448 among
  # them, and three larger AVX-512 tiles at their model blocking, one thread on CPU 9
  # beside numpy and PyTorch; on a calm host the same at 16 threads, paused
  k=$(f32)
  big="avx512_12x32;avx512_14x32;avx512_9x48"
  {
    gate
    for t in ${big//;/ }; do run mk validate --kernel "$t"; done
    race1 9 onet_1t_cpu9.json 1024,2048,4096 7 \
        "$k;$k:mc=176;$k:mc=352;$k:kc=384,mc=264;$k:kc=448,mc=448;$k:kc=192,mc=128;$big"
    if [ "$calm" = 1 ]; then
      race16 onet_16t.json 1024,2048,4096 7 0.3 "$k;$k:kc=384,mc=264;$k:kc=448,mc=448;$big"
    fi
  } 2>&1 | tee "$OUT/device_onet.log"
  exit 0
fi
if [ "${1:-}" = onepath ]; then
  # issue 24's one-thread gap, after onet found no blocking or larger tile ahead: the share
  # of gemm() outside the micro-kernel (bench/nop_share.py), then on CPUs 9 and 5 a B block
  # that fits the 2 MiB L2 (NC 1024: at n = 1024 ours tied numpy, at 2048 and 4096 it
  # trailed by 5%), NC 2048, MC 352, and the default with the A micro-panel prefetched
  # 512 B ahead in its K loop (pfa); on a calm host the same at 16 threads, paused
  k=$(f32)
  mkdir -p .amxvar
  sed 's|^        a += 32;$|        __builtin_prefetch(a + 128);\n        __builtin_prefetch(a + 144);\n        a += 32;|' \
      "c_src/ukernels/$k.c" > ".amxvar/pfa_$k.c"
  set1="$k;$k:nc=1024;$k:nc=2048;$k:mc=352;$k@.amxvar/pfa_$k.c"
  {
    gate
    grep -c __builtin_prefetch ".amxvar/pfa_$k.c"
    run taskset -c 9 python3 bench/nop_share.py --kernel "$k" --sizes 1024,2048,4096 --rounds 5 \
        --json "$OUT/nop_share_cpu9.json"
    for cpu in 9 5; do race1 $cpu "onepath_1t_cpu$cpu.json" 2048,4096 7 "$set1"; done
    if [ "$calm" = 1 ]; then
      race16 onepath_16t.json 1024,2048,4096 7 0.3 "$set1"
    fi
  } 2>&1 | tee "$OUT/device_onepath.log"
  exit 0
fi
if [ "${1:-}" = l2nc ]; then
  # issue 24's one-thread gap: the one-thread NC rule (blocking.L2_B_SHARE: the B block in
  # the L2, NC 1184 on this host's 2 MiB L2 for the f32 default) against the L3 rule's
  # 4064 it replaces and two NCs either side, on CPUs 9 and 5 beside numpy and PyTorch,
  # squares and DeepBench; the catalogue and the blocking tests first
  k=$(f32)
  set1="$k;$k:nc=4064;$k:nc=768;$k:nc=1536"
  {
    gate
    run mk validate --kernel "$k"
    run python3 -m pytest -q -p no:cacheprovider tests/test_blocking.py
    for cpu in 9 5; do race1 $cpu "l2nc_square_cpu$cpu.json" 1024,2048,3072,4096 7 "$set1"; done
    run taskset -c 9 python3 -m microkernel compare --workload deepbench --rounds 7 \
        --kernels "$k;$k:nc=4064" --json "$OUT/l2nc_deepbench_cpu9.json"
  } 2>&1 | tee "$OUT/device_l2nc.log"
  exit 0
fi
if [ "${1:-}" = rulecheck ]; then
  # after the one-thread NC rule: the blocking tests; on a calm host each library alone at
  # 1 and 16 threads (issue 24's alone bars, as in threads_calm/), on any host the rule
  # raced once more against the L3 rule's NC at one thread on CPU ${2:-13}
  k=$(f32); cpu=${2:-13}
  {
    gate
    run python3 -m pytest -q -p no:cacheprovider tests/test_blocking.py
    if [ "$calm" = 1 ]; then
      run python3 bench/threads.py --threads 1,16 --sizes 1024,2048,4096 --repeats 2 \
          --interleaved 0 --libs "microkernel team,numpy,torch" --out "$OUT/alone"
    fi
    race1 $cpu "l2nc_square_cpu$cpu.json" 2048,3072,4096 9 "$k;$k:nc=4064"
  } 2>&1 | tee "$OUT/device_rulecheck.log"
  exit 0
fi
if [ "${1:-}" = calmalone ]; then
  # issue 24's alone bars, short: autoparts' calm-host steps only (each library alone at
  # 1 and 16 threads, the team's picked parts against 4 and MC 176), nothing on a busy host
  set -- autoparts calm
fi
if [ "${1:-}" = autoparts ]; then
  # issue 24 at 16 threads: the parts the driver picks (c_src/mk_team.h, mk_team_parts)
  # against fixed counts; on a calm host each library alone and the picked parts
  # against 4 and MC 176 first. Then by $2: (none) the checks and parts 4 / 2 / 1;
  # 2: 4 only, 9 rounds; typed: AMX bf16 and AVX512-BF16 against 4 beside PyTorch;
  # mc: MC 128 and 176 (units of more rows) at 16 threads
  k=$(f32)
  {
    gate
    alone
    [ "$calm" = 1 ] && race16 parts_16t_calm.json 1024,2048,3072,4096 9 0.3 "$k;$k:parts=4;$k:mc=176"
    case "${2:-}" in
      2) race16 parts_16t_run2.json 1024,2048,3072,4096 9 0.3 "$k;$k:parts=4" ;;
      typed)
        for t in amx_bf16_32x32 avx512bf16_8x32; do
          run env OMP_NUM_THREADS=16 python3 -m microkernel compare --dtype bf16 --threads 16 \
              --kernels "$t;$t:parts=4" --sizes 1024,2048,4096 --rounds 7 --pause 0.3 \
              --peers torch --json "$OUT/parts_16t_$t.json"
        done ;;
      mc) race16 mc_16t.json 1024,2048,3072,4096 9 0.3 "$k;$k:mc=128;$k:mc=176" ;;
      calm) ;;                                      # calmalone: the calm-host steps only
      *)
        team_checks
        race16 parts_16t.json 1024,2048,3072,4096 7 0.3 "$k;$k:parts=4;$k:parts=2;$k:parts=1" ;;
    esac
  } 2>&1 | tee "$OUT/device_autoparts.log"
  exit 0
fi
if [ "${1:-}" = slab ]; then
  # issue 24's one-thread gap: A packed once per KC block for all the NC blocks (the A
  # slab, c_src/mk_loops.h mk_loops_slab) against each A block packed once per NC block
  # (MK_A_SLAB_MAX=0, the loops before), one thread on CPUs ${2:-5} and 9 beside numpy
  # and PyTorch; the blocking tests (the slab's own among them) first
  k=$(f32)
  variant MK_A_SLAB_MAX=0 noslab "$k"
  {
    gate
    run python3 -m pytest -q -p no:cacheprovider tests/test_blocking.py
    for cpu in ${2:-5} 9; do
      race1 $cpu "slab_1t_cpu$cpu.json" 2048,3072,4096 9 "$k;$k@.amxvar/noslab_$k.c"
    done
  } 2>&1 | tee "$OUT/device_slab.log"
  exit 0
fi
if [ "${1:-}" = home ]; then
  # issue 24 at 16 threads: the flow's units taken by their home thread first (the default
  # since session 59, MK_FLOW_HOME 1 in c_src/mk_team.h: a unit's C tiles stay in one L2
  # across the KC blocks) against one counter handing them out in order (MK_FLOW_HOME=0,
  # the flow before). Its first form (session 59's first two calls, the tree's default
  # then the counter) raced the home variant and a prefetchw one against it; a `ranges`
  # form (calls 4-5, when the home units were a stride, u = slot + i x threads) raced
  # today's contiguous ranges, as MK_FLOW_HOME=2, against that stride and the counter.
  # (none): on a calm host each library alone at 1 and 16 threads; f32 9 rounds.
  # 2: f32 11 rounds. verify: the thread and blocking tests, bench/team_check.py at 16
  # threads. check: those, then AMX bf16 and AVX512-BF16 against their counter builds
  # beside PyTorch, then f32.
  k=$(f32)
  variant MK_FLOW_HOME=0 counter "$k"
  {
    gate
    alone
    case "${2:-}" in
      2) race16 "home2_16t_calm$calm.json" 1024,2048,3072,4096 11 0.3 "$k;$k@.amxvar/counter_$k.c" ;;
      check|verify)
        team_checks
        [ "$2" = verify ] && exit 0
        for t in amx_bf16_32x32 avx512bf16_8x32; do
          variant MK_FLOW_HOME=0 counter "$t"
          run env OMP_NUM_THREADS=16 python3 -m microkernel compare --dtype bf16 --threads 16 \
              --kernels "$t;$t@.amxvar/counter_$t.c" --sizes 1024,2048,4096 --rounds 7 \
              --pause 0.3 --peers torch --json "$OUT/home_16t_$t.json"
        done
        race16 "home3_16t_calm$calm.json" 1024,2048,3072,4096 9 0.3 "$k;$k@.amxvar/counter_$k.c" ;;
      *) race16 "home_16t_calm$calm.json" 1024,2048,3072,4096 9 0.3 "$k;$k@.amxvar/counter_$k.c" ;;
    esac
  } 2>&1 | tee "$OUT/device_home.log"
  exit 0
fi
if [ "${1:-}" = amxfinal ]; then
  {
    for t in bf16 s8s8 u8s8 u8u8; do run mk validate --kernel amx_${t}_32x32; done
    run python3 -m pytest -q -p no:cacheprovider tests/test_cstat.py tests/test_x86_typed.py
    for cpu in 13 5; do
      run taskset -c $cpu python3 -m microkernel bench --dtype bf16 --kernel amx_bf16_32x32 \
          --sizes 1024,2048,4096 --rounds 11 --peers torch --json "$OUT/amxfinal_bench_cpu$cpu.json"
    done
    run taskset -c 9 python3 -m microkernel compare --dtype bf16 --sizes 2048,4096 --rounds 7 \
        --peers torch --kernels "amx_bf16_32x32;amx_bf16_16x32;amx_bf16_32x16" \
        --json "$OUT/amxfinal_shapes_cpu9.json"
  } 2>&1 | tee "$OUT/device_amxfinal.log"
  exit 0
fi
if [ "${1:-}" = waits ]; then
  # issue 24: how the flow's and the pool's waits give their core away after
  # MK_SPIN_BEFORE_YIELD spins (c_src/mk_pool.h, mk_wait_step): sched_yield (the
  # default), never (spin on), or a 20 us sleep; raced at 16 threads beside numpy and
  # PyTorch back to back (their workers still spinning) and paused, then alone
  k=$(f32)
  variant MK_SPIN_BEFORE_YIELD=0xFFFFFFFFu noyield $k
  variant MK_WAIT_SLEEP_NS=20000 sleep $k
  {
    run python3 -m pytest -q -p no:cacheprovider tests/test_threads.py
    race16 waits_b2b.json 256,512,1024,2048,4096 41 0 "$k;$k@.amxvar/noyield_$k.c;$k@.amxvar/sleep_$k.c"
    race16 waits_pause.json 256,512,1024,2048,4096 9 0.3 "$k;$k@.amxvar/noyield_$k.c;$k@.amxvar/sleep_$k.c"
    # ours alone (no peer in the process's rounds): does the wait matter without others?
    run env OMP_NUM_THREADS=16 python3 -m microkernel compare --peers "" --threads 16 \
        --kernels "$k;$k@.amxvar/noyield_$k.c;$k@.amxvar/sleep_$k.c" --sizes 256,512,1024,2048,4096 \
        --rounds 21 --pause 0 --json "$OUT/waits_alone.json"
  } 2>&1 | tee "$OUT/device_waits.log"
  exit 0
fi
if [ "${1:-}" = chunks ]; then
  k=$(f32)
  {
    run python3 bench/host_cores.py --kernel "$k" --amx amx_bf16_32x32 --json "$OUT/host_cores.json"
    for p in pause:0.3 b2b:0; do
      race16 "chunks_16t_${p%%:*}.json" 1024,2048,4096 9 "${p#*:}" \
          "$k;$k:chunks=0;$k:chunks=2;$k:chunks=4;$k:chunks=16"
    done
    run env OMP_NUM_THREADS=4 OPENBLAS_NUM_THREADS=4 taskset -c 0-3 python3 -m microkernel compare \
        --kernels "$k;$k:chunks=0;$k:chunks=4" --threads 4 --sizes 2048,4096 --rounds 5 \
        --pause 0.3 --json "$OUT/chunks_4t.json"
  } 2>&1 | tee "$OUT/device_chunks.log"
  exit 0
fi
if [ "${1:-}" = compare ]; then
  tiles=$(python3 -c "from microkernel import registry; print(';'.join(s.name for s in registry.DEVICE_AVX512))")
  {
    run lscpu
    run mk probe
    for k in ${tiles//;/ }; do run mk validate --kernel "$k"; done
    run taskset -c 2 python3 -m microkernel compare --kernels "$tiles" --sizes 512,1024,2048 \
        --rounds 15 --json "$OUT/sapphire_compare_square_1t.json"
    run taskset -c 2 python3 -m microkernel compare --kernels "$tiles" --workload deepbench \
        --rounds 9 --json "$OUT/sapphire_compare_deepbench_1t.json"
  } 2>&1 | tee "$OUT/device_compare.log"
  exit 0
fi
{
  run lscpu
  run mk probe
  for isa in avx512 avx2 scalar; do MICROKERNEL_ISA=$isa run mk validate; done
  run python3 -m pytest -q -p no:cacheprovider tests/test_gemm.py tests/test_probe.py tests/test_build.py
  run taskset -c 2 python3 -m microkernel bench --sizes 256,512,1024 --json "$OUT/bench_avx512.json"
  run taskset -c 2 python3 -m microkernel sweep --isa avx512 --max-shapes 14 --json "$OUT/sweep_avx512.json"
  run mk asm "$(f32)" --no-measure
} 2>&1 | tee "$OUT/device_cpu.log"
