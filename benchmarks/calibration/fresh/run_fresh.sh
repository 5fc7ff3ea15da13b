#!/usr/bin/env bash
# Fresh GPU cells for the cost model (not in cells.jsonl, not fitted on): Liger 0.5.10's layer_norm bwd
# and fwd and embedding bwd in bf16 (the calibration holds their fp32 runs), Triton 3.3.1 / 3.4.0 / 3.6.0
# side by side, on the H200. Run from the repo root on the GPU host, carrying .whl and .bundles; the
# bundles are built on the CPU machine first (README.md next to this script has the commands).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
export KTRIAGE_HOME=/tmp/kth PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $OUT/nvidia_smi.csv
run() {  # name, bundle, op, mode, seconds
    timeout $5 python3 -m ktriage bench --bundle .bundles/$2 --op $3 --$4 --only liger_$3 --artifact-timing kernel \
        --max-time 1 -o $OUT/$1.json > $OUT/$1.log 2>&1
    echo "$1: exit $? ($(tail -1 $OUT/$1.log))"
}
run ln_bwd_bf16 fresh-ln-bwd-bf16 layer_norm bwd 250
run ln_fwd_bf16 fresh-ln-fwd-bf16 layer_norm fwd 200
run emb_bwd_bf16 fresh-emb-bwd-bf16 embedding bwd 80
