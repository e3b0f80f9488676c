#!/usr/bin/env bash
# Remake sample_traces/<model>/ with the real runner on CPU: every built-in model but gpt2, then
# gpt2-ort: gpt2 with the ONNX Runtime backends.
# Compile caches are off so that compile.time_s in run.json is a cold compile. One CPU thread:
# on a small shared machine, multi-threaded (OpenMP) kernels time the neighbours, not the model.
# Usage (from the repository root): sample_traces/make.sh [traceviz executable]
set -euo pipefail
cd "$(dirname "$0")/.."
TRACEVIZ=${1:-.venv/bin/traceviz}
export TORCH_COMPILE_FORCE_DISABLE_CACHES=1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
for model in block pointwise linear-add mlp layernorm-gelu attention conv-bn-relu graph-break; do
  "$TRACEVIZ" run "$model" --device cpu --steps 3 --warmup 3 --iters 30 \
    --out "sample_traces/$model" 2>/dev/null
done
# gpt2 with the ONNX Runtime backends (needs traceviz[onnx,gpt2]). The graphs' weights
# (onnx/*.onnx.data, ~2.5 MB each) are dropped to keep the sample small; the graph structure,
# ORT's profiles and run.json stay (docs/onnxruntime.md).
"$TRACEVIZ" run gpt2 --device cpu --steps 3 --warmup 3 --iters 30 \
  --backends eager,compile,onnxruntime --ort-offline transformers:bert \
  --out sample_traces/gpt2-ort 2>/dev/null
rm -f sample_traces/gpt2-ort/onnx/*.onnx.data
du -sh sample_traces
