#!/usr/bin/env bash
# Issue 13, GPU side: what a ktriage bench sweep costs on the H200 next to TritonBench, in ONE device
# call (repo root; carry .whl (with a SQLAlchemy cp312 wheel: the image has none), .carry and .bundles). Everything lands in $OUT/perf.tgz (packed after
# every step, so a cut-off call still returns what was measured).
#   bash benchmarks/perf/run_h200.sh            # all steps, ~4.6 min (STEPS=123, then STEPS=456: ~2.3 min each)
#   STEPS=12 bash benchmarks/perf/run_h200.sh   # a subset (1 ln ktriage, 2 ln TritonBench-style,
#                                               # 3 real TritonBench, 4 A/A x5, 5 emb ktriage, 6 emb TritonBench-style)
# The bundles were compiled on the CPU machine (benchmarks/perf/README.md) into $BUNDLES (.bundles).
set -u
B=${BUNDLES:-.bundles}
STEPS=${STEPS:-123456}
step() { [[ $STEPS == *$1* ]]; }
site=$(mktemp -d); python3 -m pip install -q --no-index --no-deps --target $site .whl/*.whl $(ls .whl/msgspec/*cp312*.whl 2>/dev/null); export PYTHONPATH=$site:$PWD KTRIAGE_HOME=$PWD/.carry/home
export PYTHONUNBUFFERED=1
LIGER=$PWD/.carry/home/packages/liger-kernel-0.5.10   # the Liger release the replays follow
R=/tmp/perf; rm -rf $R; mkdir -p $R
python3 -c "import sqlalchemy" 2>/dev/null || echo "no sqlalchemy on this host: put its cp312 wheel into .whl (ktriage's results store needs it); every ktriage step will fail" | tee $R/warnings.txt
pack() { tar -C /tmp -czf $OUT/perf.tgz perf; }
now() { python3 -c 'import time; print(f"{time.time():.3f}")'; }
# wall NAME START [RESULTS_FILE]: process wall time, and (with a file) start -> results file written
wall() {
  local end; end=$(now)
  local extra=""
  [[ -n ${3:-} && -f ${3:-} ]] && extra=" written_s=$(python3 -c "import os; print(round(os.path.getmtime('$3') - $2, 2))")"
  echo "$1 wall_s=$(python3 -c "print(round($end - $2, 2))")$extra" | tee -a $R/walls.txt
}
K="python3 -m ktriage"
COMMON="--artifact-timing kernel --metrics latency,speedup,gbps,accuracy --max-time 3"
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
  python3 -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"; } > $R/env.txt 2>&1
# A fresh device has a cold page cache: whichever step ran first would read torch's files from disk.
# Read them once, untimed, so every step below starts alike (bytecode is not cached: the image's venv
# is read-only, so every process still compiles sympy, which autograd's first backward imports).
python3 -c "import torch, triton, scipy.stats, torch.fx.experimental.symbolic_shapes" > /dev/null 2>&1
cp $B/perf-ln-bwd-all/manifest.json $R/ln_bundle_manifest.json 2>/dev/null
# 1) ktriage: layer_norm bwd, 30 inputs x 3 toolchains + torch baseline, one process
if step 1; then
  t=$(now); $K bench --bundle $B/perf-ln-bwd-all --op layer_norm --bwd --only liger_layer_norm,torch_layer_norm $COMMON \
    -o $R/ln_bwd.json -o $R/ln_bwd.csv > $R/ln_bwd.txt 2>&1
  wall ln_ktriage $t $R/ln_bwd.json; pack
fi
# 2) TritonBench-style: one process per toolchain, sequential, do_bench(warmup=25, rep=100)
if step 2; then
  t=$(now)
  for tc in $(python3 -c "import json;print(' '.join(json.load(open('$B/perf-ln-bwd-all/manifest.json'))['toolchains']))"); do
    python3 benchmarks/gpu/tritonbench_style.py --bundle $B/perf-ln-bwd-all --toolchain $tc >> $R/ln_tritonbench_style.jsonl 2>>$R/ln_tritonbench_style.err
  done
  wall ln_tritonbench_style $t; pack
fi
# 3) the real TritonBench (snapshot carried in .carry/tritonbench), host toolchain (Triton of the image + Liger 0.5.10)
if step 3; then
  t=$(now)
  (cd .carry/tritonbench && PYTHONPATH=$LIGER:$PYTHONPATH timeout 240 python3 run.py --op layer_norm --bwd \
     --only liger_layer_norm,torch_layer_norm --metrics latency --csv > $R/ln_tritonbench_real.csv 2> $R/ln_tritonbench_real.err)
  wall ln_tritonbench_real $t; pack
fi
# 4) A/A: Triton 3.3.1's Liger kernel and the torch baseline, all 30 inputs, 5 separate runs
if step 4; then
  for i in 1 2 3 4 5; do
    t=$(now); $K bench --bundle $B/perf-ln-bwd-331 --op layer_norm --bwd --only liger_layer_norm,torch_layer_norm $COMMON \
      -o $R/aa_$i.json > $R/aa_$i.txt 2>&1
    wall aa_$i $t $R/aa_$i.json
  done; pack
fi
# 5) ktriage: embedding bwd, 16 inputs x 7 toolchains (3 Triton releases, 4 ptxas releases) + torch
if step 5; then
  t=$(now); $K bench --bundle $B/perf-emb-bwd-all --op embedding --bwd --only liger_embedding,torch_embedding $COMMON \
    -o $R/emb_bwd.json -o $R/emb_bwd.csv > $R/emb_bwd.txt 2>&1
  wall emb_ktriage $t $R/emb_bwd.json; pack
fi
# 6) TritonBench-style for the embedding sweep: 7 sequential processes
if step 6; then
  t=$(now)
  for tc in $(python3 -c "import json;print(' '.join(json.load(open('$B/perf-emb-bwd-all/manifest.json'))['toolchains']))"); do
    python3 benchmarks/gpu/tritonbench_style.py --bundle $B/perf-emb-bwd-all --toolchain $tc --backend liger_embedding \
      --baseline torch_embedding >> $R/emb_tritonbench_style.jsonl 2>>$R/emb_tritonbench_style.err
  done
  wall emb_tritonbench_style $t; pack
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $R/env.txt 2>&1
python3 benchmarks/perf/summarize.py $R > $R/summary.md 2> $R/summary.err
pack; cat $R/walls.txt; tail -40 $R/summary.md
