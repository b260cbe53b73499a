#!/usr/bin/env bash
# Driver variants against OpenBLAS's sgemm, one thread, round by round in rotating order
# (bench/gemm_vs_openblas.c; variants from bench/driver_variants.py).
#
#   bash bench/gemm_vs_openblas.sh avx2|avx512 ROUNDS "m,n,k ..." "CONFIG ..."
#   CONFIG = VARIANT:MC:NC[:ENV=V,ENV=V]   e.g.  cur:64:4080  al:64:4080:OFFC=4  pc1_2:88:4064
#   VARIANT = cur (C tiles aligned as in gemm(): MK_C_ALIGN 64 for avx512, off for avx2) |
#             al / noal (cur with MK_C_ALIGN forced to 64 / off) | ua (avx2 only) |
#             pfbL (next B micro-panel, locality L) | wsh (workspace on huge pages) |
#             pcD_L (C tile D calls ahead, locality L) | prof[_C][_A][_B] (rdtsc breakdown;
#             _C: C tile in L1, _A/_B: first A/B micro-panel only; these time wrong results)
#
#   ENV = OFFA / OFFB / OFFC: A, B, C start that many floats past a 64-byte boundary
#         (numpy's large arrays: 4); HUGE=1: A, B, C on transparent huge pages whatever
#         their size (numpy madvises its arrays of 4 MiB and more, where THP is "madvise")
# KC is the model's for the tile (avx2_4x24_u8: 256, avx512_8x32_u4: 272); MC, NC as given.
#
# Prints one line per run (to stderr) and, per shape and config, the median ratio OpenBLAS
# time / ours (> 1: ours is faster) with its quartiles and our median GFLOP/s. Binaries are
# rebuilt on every call in $BUILD/ISA (default BUILD=/tmp/gemm_vs_openblas).
# Results: bench/results/*_prof*.txt, *_ab*.txt.
set -euo pipefail
if [ $# -ne 4 ]; then sed -n '2,21p' "$0"; exit 2; fi
ROOT=$(cd "$(dirname "$0")/.." && pwd); PY=${PYTHON:-$ROOT/.venv/bin/python}
[ -x "$PY" ] || PY=python3
ISA=$1; ROUNDS=$2; SHAPES=$3; read -ra CONF <<< "$4"
BUILD=${BUILD:-/tmp/gemm_vs_openblas}/$ISA; rm -rf "$BUILD"; mkdir -p "$BUILD"
OBLAS=$("$PY" -c "import glob, os, numpy; print(glob.glob(os.path.join(os.path.dirname(numpy.__file__), '..', 'numpy.libs', '*openblas*'))[0])")
export OBLAS
for c in "${CONF[@]}"; do   # only the offsets the program reads (a typo would time aligned data)
  IFS=: read -r _ _ _ envs <<< "$c"
  for e in ${envs//,/ }; do
    [[ $e =~ ^(OFF[ABC]=[0-9]+|HUGE=[01])$ ]] || { echo "unknown setting '$e' in $c (OFFA=, OFFB=, OFFC=, HUGE=)" >&2; exit 2; }
  done
done
if [ "$ISA" = avx512 ]; then
  F="-mavx512f -mavx512vl -mavx512dq -mavx512bw -mavx2 -mfma"; T=f32_gemm_8x32_u4_avx512; FN=mk_ukernel_avx512_8x32_u4; MR=8; NR=32; KC=272; ALIGN=64
else
  F="-mavx2 -mfma"; T=f32_gemm_4x24_u8_avx2; FN=mk_ukernel_avx2_4x24_u8; MR=4; NR=24; KC=256; ALIGN=0
fi
"$PY" "$ROOT/bench/driver_variants.py" "$BUILD"
for c in "${CONF[@]}"; do
  v=${c%%:*}; [ -x "$BUILD/ab_$v" ] && continue   # built above for an earlier config
  U="$ROOT/c_src/ukernels/$T.c"; X=(-DMK_C_ALIGN=$ALIGN)
  case $v in
    cur) DRV=drv_cur.c ;;
    al) DRV=drv_cur.c; X=(-DMK_C_ALIGN=64) ;;
    noal) DRV=drv_cur.c; X=(-DMK_C_ALIGN=0) ;;
    ua) DRV=drv_ua.c; U="$BUILD/ua_4x24.c" ;;
    wsh) DRV=drv_wsh.c ;;
    pfb*) DRV=drv_pfb.c; X+=(-DPFLVL="${v#pfb}") ;;
    pc*) DRV=drv_pc.c; d=${v#pc}; X+=(-DPCDIST="${d%_*}" -DPCLVL="${d#*_}") ;;
    prof*) DRV=drv_prof.c
           [[ $v == *_C* ]] && X+=(-DMK_C_IN_L1); [[ $v == *_A* ]] && X+=(-DMK_A_FIRST)
           [[ $v == *_B* ]] && X+=(-DMK_B_FIRST) ;;
    *) echo "unknown variant $v" >&2; exit 2 ;;
  esac
  gcc -O3 $F -fopenmp -fno-math-errno -I"$ROOT/c_src" -I"$BUILD" ${X[@]+"${X[@]}"} \
      -DUKSRC="\"$U\"" -DDRV="\"$DRV\"" -DMK_MR=$MR -DMK_NR=$NR -DMK_UKERNEL=$FN \
      -DMK_UKERNEL_EDGE=${FN}_edge "$ROOT/bench/gemm_vs_openblas.c" -o "$BUILD/ab_$v" -ldl -lm
done
for s in $SHAPES; do
  IFS=, read -r m n k <<< "$s"
  reps=5; [ $((m * n * k)) -lt 300000000 ] && reps=9
  for r in $(seq "$ROUNDS"); do
    for i in $(seq 0 $((${#CONF[@]} - 1))); do
      c=${CONF[$(( (i + r) % ${#CONF[@]} ))]}; IFS=: read -r v mc nc envs <<< "$c"
      nochk=; [[ $v == prof_* ]] && nochk=NOCHECK=1
      echo "${m}x${n}x${k} $c $(env ${envs:+${envs//,/ }} $nochk "$BUILD/ab_$v" "$m" "$n" "$k" $reps $KC "$mc" "$nc")"
    done
  done
done | tee /dev/stderr | "$PY" -c "
import collections, statistics as st, sys
ratio, ours, prof = (collections.defaultdict(list) for _ in range(3))
for line in sys.stdin:
    p = line.split()
    if 'pair' not in p:
        print(line.rstrip()); continue
    ratio[p[0], p[1]].append(float(p[p.index('pair') + 1])); ours[p[0], p[1]].append(float(p[3]))
    if 'cycles' in p:
        prof[p[0], p[1]].append([float(p[i]) for i in (-9, -6, -3, -1)])
for (s, c), v in ratio.items():
    q = st.quantiles(v, n=4) if len(v) > 1 else (v[0], v[0], v[0])
    extra = ''
    if prof[s, c]:
        a, pb, pa, uk = (st.median(x) for x in zip(*prof[s, c]))
        extra = f'  cycles/1000 flops {a:.2f}: pack B {pb:.2f}, pack A {pa:.2f}, micro-kernels {uk:.2f}'
    print(f'{s:15s} {c:28s} median {st.median(v):.3f}  q1-q3 {q[0]:.3f}-{q[2]:.3f}  n={len(v)}  ours {st.median(ours[s, c]):.1f} GFLOP/s{extra}')
"
