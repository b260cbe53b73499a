#!/usr/bin/env bash
# Set up (package + test/gpu/real extras + aarch64 cross tools and qemu) and run the
# whole test suite: the edge catalogue on every kernel this CPU runs, fuzzing, the
# aarch64 kernels under qemu at every SVE vector length, the GPU kernel in numba's
# CUDA simulator. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test --cross
exec .venv/bin/python -m pytest "$@"
