#!/usr/bin/env bash
# Smoke check of the bench path on the GPU host (run from the repo root with .whl and .bundles carried).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
export KTRIAGE_HOME=$OUT/home PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
KTRIAGE_WORKLOAD_BUNDLES=.bundles/gpu-test-layer_norm-bwd:.bundles/gpu-test-embedding-bwd \
  timeout 240 python3 -m pytest -q tests/gpu/test_workload_gpu.py -k "not torch_compile" 2>&1 | tee $OUT/workload_gpu.txt | tail -25
timeout 200 python3 -m ktriage bench --bundle .bundles/ln-bwd-all --op layer_norm --bwd \
  --only liger_layer_norm,torch_layer_norm --input-id 6 --num-inputs 2 --max-time 2 \
  --output-json $OUT/smoke.json 2>&1 | tee $OUT/smoke.txt | tail -40
