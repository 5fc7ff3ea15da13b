#!/usr/bin/env bash
# Nsight Compute on fresh_fla's largest misses (README.md): RWKV6's kernels that Triton 3.4.0 runs 15..33 % slower
# than 3.6.0 where the model predicts +2..4 %, each profiled with the bundle's toolchains side by side
# (3.3.1 cannot compile them: its entry says so).
#   bash benchmarks/calibration/fresh_fla/profile_fla.sh      (GPU host, repo root; carried: .whl and
#   .bundles/fla2/fla2_rwkv6, built by benchmarks/corpus/build.sh bundles as README.md says)
# Writes $OUT/nvidia_smi.csv and, per input, $OUT/rwkv6-K<n>.md and .json (ncu's raw pages are not kept).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
export KTRIAGE_HOME=/tmp/kth PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$OUT/nvidia_smi.csv"
work=/tmp/fla-profile; rm -rf "$work"; mkdir -p "$work"
# K9 chunk_rwkv6_bwd_kernel_intra (+33 %), K1 chunk_fwd_kernel_h (+24 %), K3 ..._fwd_A_kernel_intra_sub_intra (+20 %)
for k in K9 K1 K3; do
    t0=$(date +%s)
    timeout -k 5 150 python3 -m ktriage profile --bundle .bundles/fla2/fla2_rwkv6 -i "$k" --warmup 3 \
        --raw-dir "$work/$k" -o "$OUT/rwkv6-$k.json" -o "$OUT/rwkv6-$k.md" > "$work/$k.txt" 2>&1
    echo "$k: exit $? after $(( $(date +%s) - t0 )) s"; tail -3 "$work/$k.txt"
done
