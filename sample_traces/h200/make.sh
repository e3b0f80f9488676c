#!/usr/bin/env bash
# Remake sample_traces/h200/<run>/ with the real runner on one CUDA GPU (these were made on an
# NVIDIA H200 lent for a session; see README.md here). Compile caches are off so that
# compile.time_s in run.json is a cold compile. Run from anywhere; needs traceviz installed
# beside a CUDA build of torch (and transformers for gpt2).
# Usage: sample_traces/h200/make.sh [traceviz executable] [output folder]
set -euo pipefail
cd "$(dirname "$0")/../.."
TRACEVIZ=${1:-traceviz}
OUT_ROOT=${2:-sample_traces/h200}
export TORCH_COMPILE_FORCE_DISABLE_CACHES=1
failed=()
sample() {  # sample NAME MODEL [run options...]: a failed run is reported at the end
  local name=$1
  shift
  "$TRACEVIZ" run "$@" --device cuda --out "$OUT_ROOT/$name" || failed+=("$name")
}
sample block block
sample pointwise pointwise
sample conv-bn-relu conv-bn-relu
sample graph-break graph-break
sample attention-train attention --train
sample gpt2 gpt2
sample gpt2-reduce-overhead gpt2 --mode reduce-overhead
sample gpt2-bf16 gpt2 --dtype bfloat16
du -sh "$OUT_ROOT"
if ((${#failed[@]})); then
  echo "failed: ${failed[*]}" >&2
  exit 1
fi
