#!/usr/bin/env bash
# Fresh GPU cells for the cost model (not in cells.jsonl, not fitted on): Liger 0.5.10's layer_norm bwd
# and fwd and embedding bwd in 16-bit types (the calibration holds their fp32 runs), Triton 3.3.1 / 3.4.0
# / 3.6.0 side by side, on the H200. Run from the repo root on the GPU host, carrying .whl and .bundles;
# the bundles .bundles/fresh-<op>-<mode>-<dtype> are built on the CPU machine first (README.md here).
# DTYPES picks the sets (default: both).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
export KTRIAGE_HOME=/tmp/kth PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $OUT/nvidia_smi.csv
run() {  # op, mode, dtype, seconds
    local name=$1_$2_$3
    timeout $4 python3 -m ktriage bench --bundle .bundles/fresh-$1-$2-$3 --op $1 --$2 --only liger_$1 --artifact-timing kernel \
        --max-time 1 -o $OUT/$name.json > $OUT/$name.log 2>&1
    echo "$name: exit $? ($(tail -1 $OUT/$name.log))"
}
for dtype in ${DTYPES:-bf16 fp16}; do
    run layer_norm bwd $dtype 250
    run layer_norm fwd $dtype 200
    run embedding bwd $dtype 80
done
