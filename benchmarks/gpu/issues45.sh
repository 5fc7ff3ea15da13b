#!/usr/bin/env bash
# Issues 4 and 5 on the H200, in one device call (repo root; carry .whl and .bundles). Results under $OUT,
# packed into one tarball after every step (the device returns only a few files).
# Bundles are compiled on the CPU machine first (see benchmarks/bisect/timed/README.md, benchmarks/tune/README.md).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
R=/tmp/issues45; rm -rf $R; mkdir -p $R
pack() { tar -C /tmp -czf $OUT/issues45_results.tgz issues45; }
export KTRIAGE_HOME=$R/home PYTHONUNBUFFERED=1
K="python3 -m ktriage"
STEPS=${STEPS:-12834567}
step() { [[ $STEPS == *$1* ]]; }
now() { date +%s.%N; }
run() {  # run NAME LIMIT_S CMD...: one step, its output and wall time kept, never fatal
  local name=$1 limit=$2; shift 2; local t=$(now)
  echo "== $name: $*" | tee -a $R/commands.txt
  timeout $limit "$@" > $R/$name.log 2>&1; local rc=$?
  echo "$name rc=$rc wall_s=$(python3 -c "print(round($(now) - $t, 1))")" | tee -a $R/walls.txt; pack
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee $R/nvidia_smi_before.csv
# Issue 4: timed bisects over bundles (candidates interleaved with both endpoints in this process)
step 1 && run bisect_embedding_ptxas 150 $K bisect --source ptxas --good 12.1.105 --bad 13.0.88 --toolchain triton==3.4.0 \
  --op liger.embedding --bwd --input 15 --metric latency --bundle .bundles/emb-bisect --backend liger_embedding --workers 3 \
  --state $R/bisect_embedding_ptxas.state.json --markdown $R/bisect_embedding_ptxas.md --json $R/bisect_embedding_ptxas.json
step 2 && run bisect_layer_norm_4608 120 $K bisect --source pypi:triton --good 3.2.0 --bad 3.5.1 \
  --op liger.layer_norm --bwd --input 7 --metric latency --bundle .bundles/ln-bisect-4608 --backend liger_layer_norm --workers 2 \
  --state $R/bisect_layer_norm_4608.state.json --markdown $R/bisect_layer_norm_4608.md --json $R/bisect_layer_norm_4608.json
step 3 && run bisect_layer_norm_8704 120 $K bisect --source pypi:triton --good 3.2.0 --bad 3.5.1 \
  --op liger.layer_norm --bwd --input 15 --metric latency --bundle .bundles/ln-bisect-8704 --backend liger_layer_norm --workers 2 \
  --state $R/bisect_layer_norm_8704.state.json --markdown $R/bisect_layer_norm_8704.md --json $R/bisect_layer_norm_8704.json
step 8 && run bisect_layer_norm_4608_to_340 120 $K bisect --source pypi:triton --good 3.2.0 --bad 3.4.0 \
  --op liger.layer_norm --bwd --input 7 --metric latency --bundle .bundles/ln-bisect-4608 --backend liger_layer_norm --workers 2 \
  --state $R/bisect_layer_norm_4608_to_340.state.json --markdown $R/bisect_layer_norm_4608_to_340.md --json $R/bisect_layer_norm_4608_to_340.json
# Issue 5: tuned layer_norm bwd (3.3.1, 3.4.0 default, 3.4.0 + ktriage tune's kept configs, torch), N=4608..8192
step 4 && run bench_layer_norm_tuned 150 $K bench --bundle .bundles/ln-tuned --op layer_norm --bwd --only liger_layer_norm,torch_layer_norm \
  --artifacts-only --artifact-timing kernel --min-samples 50 --max-time 4 --output-json $R/ln_tuned.json
# Issue 5: the embedding bwd relaxed-atomic fix (ptxas 12.4.131, 12.8.93, 12.8.93 + fix, torch), 16 inputs
step 5 && run bench_embedding_fix 150 $K bench --bundle .bundles/emb-fix --op embedding --bwd --only liger_embedding,torch_embedding \
  --artifacts-only --artifact-timing kernel --min-samples 50 --max-time 3 --output-json $R/emb_fix.json
# Issue 5: inductor-style reduction, RBLOCK scaling (host Triton), and the autotune hook vs exhaustive autotuning
step 6 && run rblock_scaling 150 python3 benchmarks/tune/inductor_reduction.py --out $R/rblock
step 7 && run autotune_hook 240 python3 benchmarks/tune/autotune_hook.py --out $R/autotune
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee $R/nvidia_smi_after.csv
rm -rf $R/home/artifacts; pack; cat $R/walls.txt
for f in $R/*.log; do echo "== $f"; tail -n 15 $f; done
