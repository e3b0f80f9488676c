#!/usr/bin/env bash
# Remake sample_traces/<model>/ with the real runner on CPU: every built-in model except gpt2.
# Compile caches are off so that compile.time_s in run.json is a cold compile. One CPU thread:
# on a small shared machine, multi-threaded (OpenMP) kernels time the neighbours, not the model.
# Usage (from the repository root): sample_traces/make.sh [traceviz executable]
set -euo pipefail
cd "$(dirname "$0")/.."
TRACEVIZ=${1:-.venv/bin/traceviz}
export TORCH_COMPILE_FORCE_DISABLE_CACHES=1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
for model in pointwise linear-add mlp layernorm-gelu attention conv-bn-relu graph-break; do
  "$TRACEVIZ" run "$model" --device cpu --steps 3 --warmup 3 --iters 30 \
    --out "sample_traces/$model" 2>/dev/null
done
du -sh sample_traces
