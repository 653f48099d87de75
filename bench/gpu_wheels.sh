#!/usr/bin/env bash
# Build the folder that bench/gpu_suite.sh installs on the GPU machine, which reaches no package
# index (docs/gpu-suite.md). Run HERE, from any directory, with the project's virtualenv active:
#
#   bash bench/gpu_wheels.sh [DEST]          # DEST defaults to .gpu-suite (git-ignored)
#
# DEST then holds:
#   * the project's own wheel, built from this checkout (pure Python: py3-none-any);
#   * the wheels of the packages the GPU image lacks (MISSING below), at the versions installed
#     in this virtualenv, the ones the test suite passes with; pure-Python wheels, so this
#     machine's Python version does not matter;
#   * shared/models/: the genuine configs and tokenizers (no weights) from ../shared/models that
#     the benches read (bert-base-uncased for the probe, llava-1.5-7b-hf for the multimodal LLM):
#     ../shared does not travel to the GPU machine, the suite copies these beside the checkout;
#   * MANIFEST.json: the commit and the hash of spatialprobe/*.py the wheel was built from (the
#     suite's env stage says whether the installed wheel matches the checkout it runs in), every
#     file's size and sha256.
# It fails if DEST would exceed 60 MiB (the device tool carries at most 64 MiB, checkout included).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dest=$(realpath -m "${1:-$repo/.gpu-suite}")
shared="$repo/../shared/models"

# The project's install_requires and the extras the GPU benches use (synthesis, judge, vl,
# multigpu), checked against the GPU image's package list (the device tool's KINDS.md,
# 2026-11-17): the image has torch, transformers, huggingface-hub, safetensors, typer, rich,
# scikit-learn, scipy, matplotlib, numpy, pillow, pyyaml and accelerate; it lacks these two.
# (ray, of the synthesis and ray extras, is not carried: see docs/gpu-suite.md.)
MISSING=(diffusers sacremoses)
MODELS=(bert-base-uncased llava-1.5-7b-hf)

for model in "${MODELS[@]}"; do
  [ -d "$shared/$model" ] || { echo "gpu_wheels: $shared/$model is missing (../shared/models)" >&2; exit 1; }
done
rm -rf "$dest"
mkdir -p "$dest/shared/models"
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT

# The project's wheel, built from a copy of what it is made of (no build/ or egg-info left in the
# checkout), without build isolation: setuptools and wheel come from this virtualenv, no index.
(cd "$repo" && cp -r setup.cfg pyproject.toml README.md spatialprobe "$build")
find "$build" -name __pycache__ -prune -exec rm -rf {} +
python3 -m pip wheel -q --no-deps --no-build-isolation -w "$dest" "$build"

for name in "${MISSING[@]}"; do
  version=$(python3 -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$name")
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$dest" "$name==$version"
done

for model in "${MODELS[@]}"; do
  cp -r "$shared/$model" "$dest/shared/models/"
done

python3 - "$repo" "$dest" <<'EOF'
import hashlib, json, subprocess, sys
from pathlib import Path

repo, dest = Path(sys.argv[1]), Path(sys.argv[2])
sys.path.insert(0, str(repo / "bench"))
from gpu_suite import source_hash  # the hash the suite's env stage compares

commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
dirty = bool(subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "spatialprobe"],
                            capture_output=True, text=True).stdout.strip())
files = {str(p.relative_to(dest)): {"bytes": p.stat().st_size, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
         for p in sorted(dest.rglob("*")) if p.is_file()}
manifest = {"commit": commit, "spatialprobe_modified_since_commit": dirty,
            "spatialprobe_source_hash": source_hash(repo / "spatialprobe"), "files": files}
(dest / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
total = sum(f["bytes"] for f in files.values())
print(f"{dest}: {len(files)} files, {total / 2**20:.1f} MiB; wheels: "
      + ", ".join(name for name in files if name.endswith(".whl")))
if total > 60 * 2**20:
    sys.exit(f"gpu_wheels: {total / 2**20:.1f} MiB is over 60 MiB: the device tool carries 64 MiB in all")
EOF
