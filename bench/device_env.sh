# Sourced (from the repository root) by bench/device_cpu.sh and bench/device_types.sh:
# the environment of the lent GPU machine's host CPU. cffi and pyperf are not on that
# image: wheels carried in .whl/ (see the device tool's README) are installed into
# /tmp/site; the repository root goes on PYTHONPATH; one BLAS/OpenMP thread by default.
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export MICROKERNEL_CACHE_DIR=/tmp/mkcache OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
