#!/usr/bin/env bash
# Issue 3's H200 runs, in one device call (repo root; carry .whl and .bundles). Results under $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
# The device returns only a few files: everything goes to $R and is packed into one tarball after each step.
R=/tmp/issue3; rm -rf $R; mkdir -p $R
pack() { tar -C /tmp -czf $OUT/issue3_results.tgz issue3; }
export KTRIAGE_HOME=$R/home PYTHONUNBUFFERED=1
K="python3 -m ktriage"
now() { date +%s.%N; }
STEPS=${STEPS:-1234}  # which steps to run (e.g. STEPS=14)
step() { [[ $STEPS == *$1* ]]; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee $R/nvidia_smi_before.csv
# 1) layer_norm bwd, all 30 TritonBench inputs, Triton 3.3.1 / 3.4.0 / 3.5.1 artifacts + host liger (triton 3.6) + torch baseline
if step 1; then
t=$(now); $K bench --bundle .bundles/ln-bwd-all --op layer_norm --bwd --only liger_layer_norm,torch_layer_norm \
  --artifact-timing kernel --min-samples 50 --metrics latency,speedup,gbps,accuracy --max-time 3 --output-json $R/ln_bwd.json --output $R/ln_bwd.csv > $R/ln_bwd.txt 2>&1
echo "ln_bwd_wall_s $(python3 -c "print(round($(now) - $t, 2))")" | tee -a $R/walls.txt; pack
fi
# 2) TritonBench-style: one process per toolchain, sequential, do_bench(warmup=25, rep=100)
if step 2; then
t=$(now)
for tc in $(python3 -c "import json;print(' '.join(json.load(open('.bundles/ln-bwd-all/manifest.json'))['toolchains']))"); do
  python3 benchmarks/gpu/tritonbench_style.py --bundle .bundles/ln-bwd-all --toolchain $tc >> $R/tritonbench_style.jsonl 2>>$R/tritonbench_style.err
done
echo "tritonbench_style_wall_s $(python3 -c "print(round($(now) - $t, 2))")" | tee -a $R/walls.txt; pack
fi
# 3) embedding bwd, all 16 inputs, 3 Triton versions and 4 ptxas releases with the 3.4.0 frontend
if step 3; then
t=$(now); $K bench --bundle .bundles/emb-bwd-all --op embedding --bwd --only liger_embedding,torch_embedding \
  --artifact-timing kernel --min-samples 50 --metrics latency,speedup,gbps,accuracy --max-time 3 --output-json $R/emb_bwd.json --output $R/emb_bwd.csv > $R/emb_bwd.txt 2>&1
echo "emb_bwd_wall_s $(python3 -c "print(round($(now) - $t, 2))")" | tee -a $R/walls.txt; pack
fi
# 4) A/A: the same toolchain (3.3.1) and torch, all 30 inputs, 5 repeated runs
step 4 && for i in 1 2 3 4 5; do
  t=$(now); $K bench --bundle .bundles/ln-bwd-331 --op layer_norm --bwd --only liger_layer_norm,torch_layer_norm --artifacts-only \
    --artifact-timing kernel --min-samples 50 --max-time 1.5 --output-json $R/aa_$i.json > $R/aa_$i.txt 2>&1
  echo "aa_${i}_wall_s $(python3 -c "print(round($(now) - $t, 2))")" | tee -a $R/walls.txt; pack
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee $R/nvidia_smi_after.csv
pack; cat $R/walls.txt
