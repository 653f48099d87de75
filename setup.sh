#!/usr/bin/env bash
# Set up spatialprobe in the active Python environment and run the test suite.
#   bash setup.sh            install + tests
#   bash setup.sh --no-tests install only
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}

# torch first, pinned, so that the package's looser "torch>=2.1" is already satisfied and pip
# never swaps in another build (on machines with a local CPU wheel this keeps CUDA out).
if ! "$PY" -c "import torch" 2>/dev/null; then
  "$PY" -m pip install "torch==${SPATIALPROBE_TORCH_VERSION:-2.13.0}"
fi
"$PY" -m pip install -e ".[all,dev]"

if [ "${1:-}" != "--no-tests" ]; then
  "$PY" -m pytest -q -n 2   # two processes (pytest-xdist): see the README for how long it takes
fi
