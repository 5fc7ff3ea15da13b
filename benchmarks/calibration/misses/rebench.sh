#!/usr/bin/env bash
# Do the bench cells of the profiled misses reproduce? (README.md, "Second pass".) The second pass's bundles whose
# ncu durations disagree with their bench cells (int4 gemm, TritonBench layer_norm fwd, sglang's grouped decode: all
# of their recorded inputs, 3.6.0 the reference, 3.3.1, 3.4.0) benched twice, in two processes, with the corpus
# bench's settings (../../corpus/bench_h200.sh). GPU host, repo root, carrying .whl (without liger_kernel: the tree
# that travels is at most 64 MiB) and .bundles/rebench (the three bundles copied from .bundles/prof-miss2):
#   bash benchmarks/calibration/misses/rebench.sh     -> $OUT/rebench.tgz: NAME-run{1,2}.json/.txt, walls.txt
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
export KTRIAGE_HOME=/tmp/kth PYTHONUNBUFFERED=1
work=/tmp/rebench; rm -rf "$work"; mkdir -p "$work"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader > "$work/env.txt"
for run in 1 2; do
  for b in tb_int4_gemm_fwd tb_layer_norm_fwd serving_kernels_rerecorded; do
    t0=$SECONDS
    timeout -k 5 150 python3 -m ktriage bench --bundle ".bundles/rebench/$b" --max-time 0.6 --min-samples 10 \
      -o "$work/$b-run$run.json" > "$work/$b-run$run.txt" 2>&1
    echo "$b run $run: exit $? after $((SECONDS - t0)) s" | tee -a "$work/walls.txt"
  done
done
tar czf "$OUT/rebench.tgz" -C /tmp rebench
