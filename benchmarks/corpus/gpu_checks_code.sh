#!/usr/bin/env bash
# Issue 23's code points on the H200 (points 2, 3, 7), from the repo root.
#   1. build (CPU machine):  bash benchmarks/corpus/gpu_checks_code.sh build
#        .carry/code23/rms_bwd   a recorded bundle of the H200's TritonBench rms_norm bwd recording (K0, Triton 3.6.0 and 3.4.0)
#   2. gpu (the H200; carry .carry, which holds tritonbench, the liger package and code23; ncu on PATH):
#        bash benchmarks/corpus/gpu_checks_code.sh gpu $OUT
#        a. record_templates.sh: torch.compile's template launchers recorded, every input's grid counted
#        b. ktriage profile of the recorded bundle (was: internal error KeyError 'facts')
#        c. triage --measure of the rms_norm bwd A/A pair WITHOUT --workload: the triage records TritonBench's run
#           itself (KTRIAGE_TRITONBENCH) and re-measures the flagged cells (needs the triton==3.6.0 toolchain in the
#           ktriage home; where it cannot be had, the report's cells say why)
#      writes $OUT/templates/*, $OUT/profile_recorded.{json,md}, $OUT/triage_selfrecord.{md,json}, $OUT/code23.log
set -uo pipefail
step=${1:?usage: gpu_checks_code.sh build | gpu OUTDIR}
PY=${PYTHON:-python3}
KT=${KTRIAGE:-$PY -m ktriage}
case "$step" in
build)
  rm -rf .carry/code23 && mkdir -p .carry/code23
  $KT bench benchmarks/record/h200/tb_rms_norm_bwd.workload.json.gz -t triton==3.6.0 -t triton==3.4.0 --kernel K0 \
    --compile-only --bundle .carry/code23/rms_bwd
  ;;
gpu)
  out=${2:?usage: gpu_checks_code.sh gpu OUTDIR}
  mkdir -p "$out"
  log="$out/code23.log"
  export PYTHONPATH="$(pwd)/.carry/home/packages/liger-kernel-0.5.10${PYTHONPATH:+:$PYTHONPATH}"
  t=$(date +%s); bash benchmarks/corpus/record_templates.sh "$out/templates" >> "$log" 2>&1
  echo "templates rc=$? $(( $(date +%s) - t )) s" | tee -a "$log"
  t=$(date +%s); $KT profile --bundle .carry/code23/rms_bwd -o "$out/profile_recorded.json" -o "$out/profile_recorded.md" >> "$log" 2>&1
  echo "profile recorded bundle rc=$? $(( $(date +%s) - t )) s" | tee -a "$log"
  t=$(date +%s)
  KTRIAGE_TRITONBENCH="$(pwd)/.carry/tritonbench" $KT triage benchmarks/triage/tritonbench_aa/rms_norm_bwd_run1.csv \
    benchmarks/triage/tritonbench_aa/rms_norm_bwd_run2.csv --old-toolchain triton==3.6.0 --new-toolchain triton==3.6.0 \
    --no-bisect --no-fixes --measure --limit 2 -o "$out/triage_selfrecord.md" -o "$out/triage_selfrecord.json" >> "$log" 2>&1
  echo "triage self-record rc=$? $(( $(date +%s) - t )) s" | tee -a "$log"
  ;;
esac
