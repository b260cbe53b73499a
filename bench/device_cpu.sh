#!/usr/bin/env bash
# One call on the lent GPU machine's host CPU (x86-64, 16 cores): the AVX-512 path that
# this project's own 2-core AMD machine cannot execute. Probe, validate every kernel under
# each MICROKERNEL_ISA, the gemm tests, bench, an avx512 sweep and `asm avx512_8x16`.
# Usage there: bash bench/device_cpu.sh        (writes into $OUT, or out/ when OUT is unset)
#             bash bench/device_cpu.sh gemm   (only full gemm() vs numpy, issue 6: the
#             gemm tests, then squares and DeepBench at 1 and 2 threads on cores 2-3)
#             bash bench/device_cpu.sh tiles  (the edge catalogue on AVX-512 tiles of several
#             vectors per row, whose edge entry point this AMD machine cannot run, and on
#             avx512_8x16 (one vector per row, no edge entry point) as the baseline; then
#             squares at one thread for each, alternated against numpy)
#             bash bench/device_cpu.sh ab     (gemm()'s AVX-512 default: candidate tiles
#             validated, then interleaved round by round with numpy, bench/kernel_ab.py)
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export MICROKERNEL_CACHE_DIR=/tmp/mkcache OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
run() { echo "\$ $*"; "$@"; echo "[exit $?]"; }
TILES="avx512_8x16 avx512_6x32 avx512_8x32 avx512_12x32 avx512_6x64"
if [ "${1:-}" = tiles ]; then
  {
    run python3 -m microkernel.cli probe
    for k in $TILES; do run python3 -m microkernel.cli validate --kernel $k; done
    for k in $TILES; do
      run taskset -c 2 python3 -m microkernel.cli bench --kernel $k --vs numpy \
          --sizes 512,1024,2048 --threads 1 --repeats 7 --json "$OUT/xeon_tiles_$k.json"
    done
  } 2>&1 | tee "$OUT/device_tiles.log"
  exit 0
fi
if [ "${1:-}" = ab ]; then
  # choose gemm()'s AVX-512 default: candidates interleaved round by round with numpy
  AB="avx512_8x16 avx512_8x16_u4 avx512_6x32 avx512_6x32_u4 avx512_8x32_u4 avx512_12x32 avx512_14x32 avx512_6x48 avx512_6x64"
  {
    run lscpu
    run python3 -m microkernel.cli probe
    for k in $AB; do   # a tile that fails the edge catalogue is not timed
      echo "\$ python3 -m microkernel.cli validate --kernel $k"
      python3 -m microkernel.cli validate --kernel $k; rc=$?; echo "[exit $rc]"
      [ $rc -eq 0 ] || exit 1
    done
    must() { echo "\$ $*"; "$@"; rc=$?; echo "[exit $rc]"; [ $rc -eq 0 ] || exit 1; }
    must taskset -c 2 python3 bench/kernel_ab.py --kernels "${AB// /,}" --sizes 512,1024,2048 \
        --rounds 15 --json "$OUT/xeon_ab_square_1t.json"
    must taskset -c 2 python3 bench/kernel_ab.py --kernels "${AB// /,}" --sizes "" \
        --workload deepbench --rounds 7 --json "$OUT/xeon_ab_deepbench_1t.json"
    must taskset -c 2,3 python3 bench/kernel_ab.py --kernels "${AB// /,}" --sizes 512,1024,2048 \
        --threads 2 --rounds 7 --json "$OUT/xeon_ab_square_2t.json"
  } 2>&1 | tee "$OUT/device_ab.log"
  exit "${PIPESTATUS[0]}"
fi
if [ "${1:-}" = gemm ]; then
  {
    run lscpu
    run python3 -m microkernel.cli probe
    run python3 -m pytest -q -p no:cacheprovider tests/test_gemm.py tests/test_build.py
    for k in avx512_8x32_u4 avx512_8x16; do   # the AVX-512 default, then the 8x16 tile
      run taskset -c 2,3 python3 -m microkernel.cli bench --kernel $k --vs numpy \
          --sizes 512,1024,2048 --threads 1,2 --repeats 7 --json "$OUT/xeon_gemm_square_$k.json"
    done
    run taskset -c 2,3 python3 -m microkernel.cli bench --vs numpy \
        --workload deepbench --threads 1,2 --repeats 5 --json "$OUT/xeon_gemm_deepbench.json"
  } 2>&1 | tee "$OUT/device_gemm.log"
  exit 0
fi
{
  run lscpu
  run python3 -m microkernel.cli probe
  for isa in avx512 avx2 scalar; do MICROKERNEL_ISA=$isa run python3 -m microkernel.cli validate; done
  run python3 -m pytest -q -p no:cacheprovider tests/test_gemm.py tests/test_probe.py tests/test_build.py
  run taskset -c 2 python3 -m microkernel.cli bench --sizes 256,512,1024 --json "$OUT/bench_avx512.json"
  run taskset -c 2 python3 -m microkernel.cli sweep --isa avx512 --max-shapes 14 --json "$OUT/sweep_avx512.json"
  run python3 -m microkernel.cli asm avx512_8x16
} 2>&1 | tee "$OUT/device_cpu.log"
