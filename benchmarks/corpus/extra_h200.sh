#!/usr/bin/env bash
# Issues 23/24/25, third GPU step, in one call (< 600 s):
#   1 the layer_norm bwd sweep for the cost model's cliffs (30 inputs x 3.3.1 / 3.4.0 / 3.6.0, .bundles/ln-sweep)
#     and whether driver 580 loads Triton 3.9.0's cubins (.bundles/corpus39);
#   2 per-line stalls of layer_norm bwd input 7, 3.3.1 vs 3.4.0 (benchmarks/profile/lines_h200.sh);
#   3 the one-command `ktriage triage --run` on a Liger training step (benchmarks/corpus/triage_run_h200.sh);
#   4 the programs the first recording lost (out of memory beside 7 others, timeouts) and those whose kernels read
#     module-level values, recorded again 3 at a time (benchmarks/corpus/rerecord.txt), in the background of
#   5 ncu on a sample of corpus bundles (benchmarks/corpus/profile_sample.txt: one input, every toolchain).
# GPU host, repo root; carried: .whl, .carry (kt = clean export of the commit, corpus-bundles.tgz, tritonbench,
# serving, home/packages/liger-kernel-0.5.10), .bundles (ln-sweep, lines-ln-bwd, corpus39)
#     STEPS=12345 bash benchmarks/corpus/extra_h200.sh   -> $OUT/extra.tgz, $OUT/profile_lines.tgz, $OUT/triage_run.tgz
set -uo pipefail
OUT=${OUT:?set OUT}
STEPS=${STEPS:-12345} END=${END:-560}
step() { [[ $STEPS == *$1* ]]; }
left() { echo $(( END - SECONDS + start )); }
repo=$(pwd) start=$SECONDS
work=/tmp/extra; rm -rf "$work"; mkdir -p "$work"
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" .whl/*.whl > "$work/pip.log" 2>&1
kt=$repo/.carry/kt; [ -d "$kt/ktriage" ] || kt=$repo  # a clean export of the commit when carried, else the tree
export PYTHONPATH="$site:$kt:$repo/.carry/home/packages/liger-kernel-0.5.10" KTRIAGE_HOME="$work/home" \
  PYTHONUNBUFFERED=1 SERVING_SRC="$repo/.carry/serving" KT_SRC="$kt"
pack() { tar czf "$OUT/extra.tgz" -C "$work" --exclude=home --exclude=pip.log --exclude='*.ncu-rep' .; }
mark() { echo "$1 wall_s=$((SECONDS - $2)) at_s=$((SECONDS - start))" | tee -a "$work/walls.txt"; }
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
  command -v ncu; ncu --version | tail -1; } > "$work/env.txt" 2>&1
python3 -c "import torch, triton, scipy.stats" > /dev/null 2>&1
if step 1; then
  t=$SECONDS
  timeout 150 python3 -m ktriage bench --bundle .bundles/ln-sweep --op layer_norm --bwd --only liger_layer_norm \
    --artifact-timing kernel --max-time 1 -o "$work/ln_sweep.json" -o "$work/ln_sweep.md" > "$work/ln_sweep.txt" 2>&1
  mark "ln_sweep exit=$?" $t; pack
  t=$SECONDS
  for b in .bundles/corpus39/*/; do
    timeout 60 python3 -m ktriage bench --bundle "$b" --max-time 0.5 -o "$work/t39_$(basename "$b").json" \
      > "$work/t39_$(basename "$b").txt" 2>&1
  done
  mark "triton_3.9.0_cubins exit=$?" $t; pack
fi
if step 2; then
  t=$SECONDS
  BUNDLE=.bundles/lines-ln-bwd timeout 150 bash benchmarks/profile/lines_h200.sh > "$work/lines.txt" 2>&1
  mark "profile_lines exit=$?" $t; pack
fi
if step 3; then
  t=$SECONDS
  timeout $(( $(left) - 200 )) bash benchmarks/corpus/triage_run_h200.sh > "$work/triage_run.txt" 2>&1
  mark "triage_run exit=$?" $t; pack
fi
if step 4; then
  t=$SECONDS
  mkdir -p "$work/rerecord"
  ( OUT="$work/rerecord" JOBS=3 PER_JOB=150 TOTAL=$(( $(left) - 40 )) ONLY="$(grep -v '^#' benchmarks/corpus/rerecord.txt)" \
      bash benchmarks/corpus/record_h200.sh > "$work/rerecord.txt" 2>&1; echo "rerecord done after $((SECONDS - t)) s" >> "$work/walls.txt" ) &
  rec_pid=$!
fi
if step 5; then
  mkdir -p /tmp/cb "$work/profile" && tar xzf .carry/corpus-bundles.tgz -C /tmp/cb
  for name in $(grep -v '^#' benchmarks/corpus/profile_sample.txt); do
    (( $(left) < 60 )) && { echo "$name not profiled: deadline" >> "$work/walls.txt"; continue; }
    t=$SECONDS
    timeout 50 python3 -m ktriage profile --bundle "/tmp/cb/corpus/$name" --raw-dir "$work/profile/$name" \
      -o "$work/profile/$name.json" -o "$work/profile/$name.md" > "$work/profile/$name.txt" 2>&1
    mark "profile $name exit=$?" $t
    rm -f "$work/profile/$name"/*.ncu-rep
    pack
  done
fi
if step 4; then wait "$rec_pid"; fi
echo "total_s=$((SECONDS - start))" >> "$work/walls.txt"; pack; ls -la "$OUT"; cat "$work/walls.txt"
