#!/usr/bin/env bash
# Recorded workloads benched on the H200 (issue 17, points 2+3): every recorded kernel replayed from
# each toolchain's cubins side by side in one GPU process, with differential correctness.
#
# 1. CPU machine, repo root (toolchains in the ktriage home): compile the bundles into .bundles/wl-*
#      bash benchmarks/record/bench_workloads_h200.sh build
# 2. GPU host, repo root (.bundles carried, .whl = the pure-Python wheels + msgspec, .carry/home):
#      bash benchmarks/record/bench_workloads_h200.sh
#    writes $OUT/bench_wl.tgz: per bundle NAME.json (the results file), NAME.md (its table),
#    NAME.txt (the console: table + toolchain verdicts), NAME.compare.md (`ktriage compare --toolchains`),
#    gpu_test.txt (tests/gpu/test_recorded_gpu.py), env.txt. About 2-3 minutes.
set -uo pipefail
TOOLCHAINS=(-t triton==3.6.0 -t triton==3.3.1 -t triton==3.4.0)  # the recording host's Triton is the reference
WL=benchmarks/record/h200

if [ "${1:-}" = "build" ]; then
  kt() { ${PYTHON:-python3} -m ktriage "$@"; }
  mkdir -p .bundles
  rm -rf .bundles/wl-*
  kt bench $WL/tb_rms_norm_bwd.workload.json.gz "${TOOLCHAINS[@]}" --compile-only --bundle .bundles/wl-tb_rms_norm_bwd
  kt bench $WL/tb_cross_entropy_bwd.workload.json.gz "${TOOLCHAINS[@]}" --compile-only --bundle .bundles/wl-tb_cross_entropy_bwd
  # layer_norm bwd has 48 kernel inputs: the first input of its largest-N kernels (forward K8, backward K9)
  kt bench $WL/tb_layer_norm_bwd.workload.json.gz --kernel K8 --kernel K9 --input 0 "${TOOLCHAINS[@]}" --compile-only \
    --bundle .bundles/wl-tb_layer_norm_bwd
  # swiglu (bf16): the smallest and the largest input of the forward and the backward kernel
  kt bench $WL/tb_swiglu_bwd.workload.json.gz --input 0 --input 3 "${TOOLCHAINS[@]}" --compile-only \
    --bundle .bundles/wl-tb_swiglu_bwd
  # the second recording step (benchmarks/record/h200b): the autotuned matmul and TritonBench's flce bwd
  kt bench benchmarks/record/h200b/autotuned_matmul.workload.json.gz "${TOOLCHAINS[@]}" --compile-only \
    --bundle .bundles/wl-autotuned_matmul
  kt bench benchmarks/record/h200b/tb_flce_bwd.workload.json.gz "${TOOLCHAINS[@]}" --compile-only \
    --bundle .bundles/wl-tb_flce_bwd
  # the third recording step (benchmarks/record/h200c): torch.compile, flash-linear-attention, flce forward,
  # and many_launches.py with its __main__ guard (the GPU test's workload)
  kt bench benchmarks/record/h200c/compiled_model.workload.json.gz "${TOOLCHAINS[@]}" --compile-only \
    --bundle .bundles/wl-compiled_model
  kt bench benchmarks/record/h200c/fla_gated_delta.workload.json.gz "${TOOLCHAINS[@]}" --compile-only \
    --bundle .bundles/wl-fla_gated_delta
  kt bench benchmarks/record/h200c/tb_flce_fwd.workload.json.gz "${TOOLCHAINS[@]}" --compile-only \
    --bundle .bundles/wl-tb_flce_fwd
  kt bench benchmarks/record/h200c/many_launches.workload.json.gz "${TOOLCHAINS[@]}" --compile-only \
    --bundle .bundles/wl-many_launches
  du -sh .bundles/wl-*
  exit 0
fi

OUT=${OUT:?set OUT to the folder the tarball goes to}
work=$(mktemp -d)
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --target "$site" .whl/*.whl .whl/msgspec/*cp312*.whl > "$work/pip.log" 2>&1
export PYTHONPATH="$site:$PWD" KTRIAGE_HOME="$PWD/.carry/home"
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
  python3 -c "import sys, torch; print(sys.version.split()[0], 'torch', torch.__version__)"
  git log --oneline -1 2>/dev/null
} > "$work/env.txt" 2>&1
start=$(date +%s)
seen=" "
for b in .bundles/wl-compiled_model .bundles/wl-*; do  # the torch.compile model first
  [ -f "$b/manifest.json" ] || continue
  case "$seen" in *" $b "*) continue ;; esac
  seen="$seen$b "
  name=$(basename "$b")
  t0=$(date +%s)
  timeout 170 python3 -m ktriage bench --bundle "$b" --max-time 1.0 --min-samples 10 \
    -o "$work/$name.json" -o "$work/$name.md" --db "sqlite:///$work/store.db" > "$work/$name.txt" 2>&1
  echo "exit $? after $(( $(date +%s) - t0 )) s" >> "$work/$name.txt"
  timeout 60 python3 -m ktriage compare "$work/$name.json" --toolchains -o "$work/$name.compare.md" \
    > "$work/$name.compare.txt" 2>&1
  echo "exit $?" >> "$work/$name.compare.txt"
  tail -n 3 "$work/$name.txt"
  tar czf "$OUT/bench_wl.tgz" --exclude=store.db -C "$work" .  # what is done so far survives a timeout
done
if python3 -c "import pytest" 2>/dev/null; then
  KTRIAGE_TEST_HOME="$PWD/.carry/home" KTRIAGE_RECORDED_BUNDLES=.bundles/wl-many_launches:.bundles/wl-tb_rms_norm_bwd \
    timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_recorded_gpu.py > "$work/gpu_test.txt" 2>&1
  echo "exit $?" >> "$work/gpu_test.txt"
else
  echo "pytest is not installed on this host: GPU test not run" > "$work/gpu_test.txt"
fi
echo "total $(( $(date +%s) - start )) s" >> "$work/env.txt"
rm -f "$work/store.db"
tar czf "$OUT/bench_wl.tgz" -C "$work" .
ls -la "$OUT/bench_wl.tgz"
