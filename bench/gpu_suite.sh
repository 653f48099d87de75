#!/usr/bin/env bash
# The GPU goals' measurement in one call: every GPU bench, plain against fast, side by side,
# a torch.profiler summary of one step of each, every figure written under $OUT (docs/gpu-suite.md
# gives the device call to make; bench/gpu_suite.py --help the options).
#
#   bash bench/gpu_suite.sh                  # on the GPU machine: 8 minutes, files under $OUT
#   bash bench/gpu_suite.sh --quick          # 2 minutes: fewer batch sizes and iterations
#   bash bench/gpu_suite.sh --tiny --device cpu --out DIR   # here: tiny models, the CPU test
#
# It installs the wheels of .gpu-suite/ (bench/gpu_wheels.sh builds that folder here), then runs
# each stage as a process of its own with its own time limit; a stage that fails is recorded and
# the next one runs. It needs only Python's standard library to start.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export PYTHONUNBUFFERED=1
exec "${PYTHON:-python3}" bench/gpu_suite.py "$@"
