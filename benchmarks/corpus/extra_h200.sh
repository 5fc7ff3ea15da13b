#!/usr/bin/env bash
# Issue 23/24/25, third GPU step: (1) the layer_norm bwd sweep for the cost model's cliffs (30 inputs x 3.3.1 /
# 3.4.0 / 3.6.0), (2) per-line stalls of layer_norm bwd input 7 (benchmarks/profile/lines_h200.sh), (3) ncu on a
# sample of corpus bundles (one input each, every toolchain), (4) the programs that the first recording lost
# (out of memory beside 7 others, timeouts) recorded again, 3 at a time, (5) the one-command triage --run.
#   GPU host, repo root; carried: .whl, .carry (kt = clean export of the commit, corpus-bundles.tgz, tritonbench,
#   serving), .bundles (ln-sweep, lines-ln-bwd)
#     STEPS=12345 bash benchmarks/corpus/extra_h200.sh   -> $OUT/extra.tgz (+ what lines_h200.sh and triage_run write)
set -uo pipefail
OUT=${OUT:?set OUT}
STEPS=${STEPS:-12345} PROFILE_SAMPLE=${PROFILE_SAMPLE:-}
step() { [[ $STEPS == *$1* ]]; }
repo=$(pwd) start=$SECONDS
work=/tmp/extra; rm -rf "$work"; mkdir -p "$work"
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" .whl/*.whl > "$work/pip.log" 2>&1
export PYTHONPATH="$site:$repo/.carry/kt" KTRIAGE_HOME="$work/home" PYTHONUNBUFFERED=1 SERVING_SRC="$repo/.carry/serving"
export KT_SRC="$repo/.carry/kt"
pack() { tar czf "$OUT/extra.tgz" -C "$work" --exclude=home --exclude=pip.log --exclude='*.ncu-rep' .; }
mark() { echo "$1 wall_s=$((SECONDS - $2))" | tee -a "$work/walls.txt"; }
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
  command -v ncu; ncu --version | tail -1; } > "$work/env.txt" 2>&1
if step 1; then
  t=$SECONDS
  timeout 150 python3 -m ktriage bench --bundle .bundles/ln-sweep --op layer_norm --bwd --only liger_layer_norm \
    --artifact-timing kernel --max-time 1 -o "$work/ln_sweep.json" -o "$work/ln_sweep.md" > "$work/ln_sweep.txt" 2>&1
  mark "ln_sweep exit=$?" $t; pack
fi
if step 2; then
  t=$SECONDS
  BUNDLE=.bundles/lines-ln-bwd timeout 200 bash benchmarks/profile/lines_h200.sh > "$work/lines.txt" 2>&1
  mark "profile_lines exit=$?" $t; pack
fi
if step 4; then  # in the background: recording does not time anything; ncu's counters (step 3) are per kernel replay
  t=$SECONDS
  mkdir -p "$work/rerecord"
  ( OUT="$work/rerecord" JOBS=3 PER_JOB=200 TOTAL=330 ONLY="$(cat benchmarks/corpus/rerecord.txt)" \
      bash benchmarks/corpus/record_h200.sh > "$work/rerecord.txt" 2>&1; echo "rerecord done after $((SECONDS - t)) s" >> "$work/walls.txt" ) &
  rec_pid=$!
fi
if step 3; then
  mkdir -p /tmp/cb && tar xzf .carry/corpus-bundles.tgz -C /tmp/cb
  mkdir -p "$work/profile"
  for name in ${PROFILE_SAMPLE:-$(cat benchmarks/corpus/profile_sample.txt)}; do
    (( SECONDS - start > 420 )) && { echo "$name not profiled: deadline" >> "$work/walls.txt"; continue; }
    t=$SECONDS
    timeout 60 python3 -m ktriage profile --bundle "/tmp/cb/corpus/$name" --raw-dir "$work/profile/$name" \
      -o "$work/profile/$name.json" -o "$work/profile/$name.md" > "$work/profile/$name.txt" 2>&1
    mark "profile $name exit=$?" $t
    rm -f "$work/profile/$name"/*.ncu-rep
    pack
  done
fi
if step 4; then wait "$rec_pid"; cp "$work"/rerecord/*.tgz "$work/" 2>/dev/null; pack; fi
if step 5 && [ -f benchmarks/corpus/triage_run_h200.sh ]; then
  t=$SECONDS
  timeout 200 bash benchmarks/corpus/triage_run_h200.sh > "$work/triage_run.txt" 2>&1
  mark "triage_run exit=$?" $t; pack
fi
echo "total_s=$((SECONDS - start))" >> "$work/walls.txt"; pack; ls -la "$OUT"; cat "$work/walls.txt"
