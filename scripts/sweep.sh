#!/usr/bin/env bash
# The main job: set up, then sweep tile shapes for the best ISA of this CPU on the
# DeepBench inference GEMM shapes and print the ranked table and the winning tile.
# Extra arguments go to `microkernel sweep` (e.g. --isa avx2 --json out/sweep.json).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p out
.venv/bin/microkernel probe
exec .venv/bin/microkernel sweep --json out/sweep.json --plot out/sweep.png "$@"
