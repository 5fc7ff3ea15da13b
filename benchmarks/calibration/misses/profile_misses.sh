#!/usr/bin/env bash
# Nsight Compute on the cost model's biggest misses (benchmarks/calibration/misses/README.md): each a kernel
# input whose measured change the model does not predict, the three toolchains of the corpus side by side.
# Run from the repo root on the GPU host, carrying .whl and .bundles/prof-miss (built on the CPU machine:
#   BUNDLES=.bundles/prof-miss bash benchmarks/corpus/build.sh bundles tb_rms_norm_bwd tb_layer_norm_bwd \
#     tb_gather_gemv_fwd serving_kernels_rerecorded tb_cross_entropy_fwd tb_welford_fwd).
# Writes $OUT/misses.tgz (each profile's md/json/txt and ncu's raw CSVs, not its .ncu-rep) and $OUT/nvidia_smi.csv.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
export KTRIAGE_HOME=/tmp/kth PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$OUT/nvidia_smi.csv"
work=/tmp/misses; rm -rf "$work"; mkdir -p "$work"
one() {  # workload, recorded input id
    local t0; t0=$(date +%s)
    timeout -k 5 120 python3 -m ktriage profile --bundle ".bundles/prof-miss/$1" -i "$2" --warmup 3 \
        --raw-dir "$work/$1-$2" -o "$work/$1-$2.json" -o "$work/$1-$2.md" > "$work/$1-$2.txt" 2>&1
    echo "$1 -i $2: exit $? after $(( $(date +%s) - t0 )) s" | tee -a "$work/walls.txt"
    rm -f "$work/$1-$2"/*.ncu-rep
}
# two at a time: ncu serializes the profiled kernels across processes, the rest overlaps
one tb_rms_norm_bwd 13 & one tb_rms_norm_bwd 3 & wait
one tb_layer_norm_bwd 17 & one tb_gather_gemv_fwd 0 & wait
one serving_kernels_rerecorded 7 & one serving_kernels_rerecorded 6 & wait
one tb_cross_entropy_fwd 6 & one tb_welford_fwd 0 & wait
tar czf "$OUT/misses.tgz" -C /tmp misses
du -sh "$OUT/misses.tgz"
