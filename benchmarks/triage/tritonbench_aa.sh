#!/usr/bin/env bash
# Two real TritonBench runs (an A/A pair: same software, same GPU, minutes apart) of six Liger ops'
# backward passes, as the seed report ran them (`run.py --op X --bwd --metrics latency --only
# <baseline>,<liger backend> --csv --output F`), plus TritonBench's --output-json. Input for
# `ktriage triage` (issue 12): a triage of run1 vs run2 must report 0 regressions of the software.
#
# GPU host (H200 image: host torch + Triton), from the repo root, with the TritonBench snapshot and
# liger-kernel 0.5.10 carried in (nothing can be installed there):
#   mkdir -p .carry && cp -r ../shared/thirdparty/tritonbench .carry/tritonbench   # .carry is git-ignored
#   (device) bash benchmarks/triage/tritonbench_aa.sh $OUT/tb
# Writes DIR/<op>_bwd_run<k>.csv/.json/.log and DIR/env.txt.
set -uo pipefail
out=${1:?usage: tritonbench_aa.sh OUTDIR}
repo=$(pwd)
mkdir -p "$out"
export PYTHONPATH="$repo/.carry/home/packages/liger-kernel-0.5.10${PYTHONPATH:+:$PYTHONPATH}"
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  python3 -c "import torch, triton, liger_kernel, importlib.metadata as m; print('torch', torch.__version__, 'triton', triton.__version__, 'liger-kernel', m.version('liger-kernel'))"
} > "$out/env.txt" 2>&1
declare -A ONLY=(
  [layer_norm]=torch_layer_norm,liger_layer_norm
  [embedding]=torch_embedding,liger_embedding
  [rms_norm]=llama_rms,liger_rms
  [swiglu]=torch_swiglu,liger_swiglu
  [geglu]=torch_geglu,liger_geglu
  [cross_entropy]=cross_entropy_loss,liger_cross_entropy_loss
)
cd "$repo/.carry/tritonbench"
for run in 1 2; do
  for op in layer_norm embedding rms_norm swiglu geglu cross_entropy; do
    base="$out/${op}_bwd_run${run}"
    start=$(date +%s)
    timeout 300 python3 run.py --op "$op" --bwd --metrics latency --only "${ONLY[$op]}" \
      --csv --output "$base.csv" --output-json "$base.json" > "$base.log" 2>&1
    echo "$op run$run rc=$? $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
  done
done
