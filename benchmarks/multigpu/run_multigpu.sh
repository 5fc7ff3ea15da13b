#!/usr/bin/env bash
# Issue 15 on a host with several GPUs (nvidia-h200-x2 or larger): NOT RUN YET (no such machine was
# lent so far). Repo root, .whl/.carry/.bundles carried as for benchmarks/perf/run_h200.sh; the
# bundle is the CPU-built .bundles/perf-ln-bwd-all (30 layer_norm bwd inputs x 3 toolchains).
#   bash benchmarks/multigpu/run_multigpu.sh        -> $OUT/multigpu.tgz
# 1. the sweep on 1 GPU and on all GPUs: wall time, speed-up, verdicts (summarize.py compares them)
# 2. the A/A across GPUs: the same sweep pinned to each GPU alone (--gpus i,), cell by cell ratios
# 3. the timed ptxas bisect of the embedding case (bundle .bundles/emb-bisect, benchmarks/bisect/timed):
#    --workers = the GPU count, on one GPU and with --gpus all: rounds and wall time
set -u
site=$(mktemp -d); python3 -m pip install -q --no-index --no-deps --target "$site" .whl/*.whl .whl/msgspec/*cp312*.whl
export PYTHONPATH="$site:$PWD" KTRIAGE_HOME="$PWD/.carry/home" PYTHONUNBUFFERED=1
R=/tmp/multigpu; rm -rf $R; mkdir -p $R
B=${BUNDLE:-.bundles/perf-ln-bwd-all}
ONLY="liger_layer_norm,torch_layer_norm"
COMMON=(--bundle "$B" --op layer_norm --bwd --only "$ONLY" --artifact-timing kernel --max-time 3)
nvidia-smi -L > $R/gpus.txt; n=$(grep -c "^GPU" $R/gpus.txt)
pack() { tar -C /tmp -czf "$OUT/multigpu.tgz" multigpu; }
t=$SECONDS; python3 -m ktriage bench "${COMMON[@]}" -o $R/one_gpu.json > $R/one_gpu.txt 2>&1
echo "one_gpu wall_s=$((SECONDS - t))" | tee -a $R/walls.txt; pack
t=$SECONDS; python3 -m ktriage bench "${COMMON[@]}" --gpus all -o $R/all_gpus.json > $R/all_gpus.txt 2>&1
echo "all_gpus($n) wall_s=$((SECONDS - t))" | tee -a $R/walls.txt; pack
for i in $(seq 0 $((n - 1))); do
  t=$SECONDS; python3 -m ktriage bench "${COMMON[@]}" --gpus "$i," -o "$R/aa_gpu$i.json" > "$R/aa_gpu$i.txt" 2>&1
  echo "aa_gpu$i wall_s=$((SECONDS - t))" | tee -a $R/walls.txt; pack
done
if [ -d .bundles/emb-bisect ]; then
  BIS=(--source ptxas --good 12.1.105 --bad 13.0.88 --toolchain triton==3.4.0 --op liger.embedding --bwd --input 15
       --metric latency --bundle .bundles/emb-bisect --backend liger_embedding --workers "$n")
  t=$SECONDS; python3 -m ktriage bisect "${BIS[@]}" --state $R/bisect_one.state -o $R/bisect_one_gpu.json > $R/bisect_one_gpu.txt 2>&1
  echo "bisect_one_gpu wall_s=$((SECONDS - t))" | tee -a $R/walls.txt; pack
  t=$SECONDS; python3 -m ktriage bisect "${BIS[@]}" --gpus all --state $R/bisect_all.state -o $R/bisect_all_gpus.json > $R/bisect_all_gpus.txt 2>&1
  echo "bisect_all_gpus($n) wall_s=$((SECONDS - t))" | tee -a $R/walls.txt; pack
fi
python3 benchmarks/multigpu/summarize.py $R > $R/summary.md 2>&1; pack; cat $R/walls.txt; tail -30 $R/summary.md
