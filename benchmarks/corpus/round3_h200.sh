#!/usr/bin/env bash
# Issue 23, third round on the H200, one device call (<= 540 s), the most valuable step first:
#   b  bench: the bundles of R3_TGZ side by side (3.6.0 = the recording host's Triton, the reference; 3.3.1; 3.4.0),
#      one process per bundle, with differential correctness; call 1: the re-recorded workloads never benched
#      (jsd fwd/bwd, kl_div fwd, fp8_gemm, serving_kernels_rerecorded), call 2: what step c of call 1 recorded;
#   e  triage: the one-command `ktriage triage --run` on a Liger training step (triage_run_h200.sh), each step's wall;
#   c  record: the programs of RECORD (default: those recorded before the module-values fix, fla_ops, and grouped_gemm
#      and embedding bwd: the recorder now names pointer tables and samples large index tensors), with this
#      checkout's recorder, in the background of
#   d  profile: ncu on corpus bundles not profiled yet (profile_sample.txt, PROFILED_SKIP), one input, --warmup 1,
#      PROFILE_JOBS (2) at a time (one's start and CSV exports overlap the other's counters).
# GPU host, repo root; carried: .whl (ktriage's pure-Python dependencies + liger-kernel 0.8.5 + fla-core 0.6.0),
# .carry (kt = a clean export of the commit, round3-bundles.tgz, corpus-bundles.tgz, tritonbench, serving); made on
# the CPU machine by `bash benchmarks/corpus/round3_prep.sh`.
#     bash benchmarks/corpus/round3_h200.sh                                   (call 1: STEPS=becd)
#     STEPS=bd R3_TGZ=.carry/round3b-bundles.tgz bash benchmarks/corpus/round3_h200.sh     (call 2)
#   -> $OUT/round3.tgz (walls.txt: each step's exit and wall; env.txt; bench/NAME.{json,md,txt,compare.md};
#      profile/NAME.{json,md,txt}), $OUT/triage_run.tgz, $OUT/workloads.tgz + $OUT/record_logs.tgz (step c).
# Every step is bounded with timeout and packs what it has, so a call cut by its time limit loses nothing finished.
set -uo pipefail
OUT=${OUT:?set OUT to the folder the results go to}
STEPS=${STEPS:-becd} END=${END:-530} MAX_TIME=${MAX_TIME:-0.6}
R3_TGZ=${R3_TGZ:-.carry/round3-bundles.tgz}
RECORD=${RECORD:-"py fla_ops benchmarks/corpus/programs/fla_ops.py
tb vector_exp fwd
tb jagged_sum fwd
tb flash_attention fwd
tb fp8_attention fwd
tb grouped_gemm fwd
tb embedding bwd
py serving_kernels benchmarks/corpus/programs/serving_kernels.py"}
# profiled already: the five of the last round, and what `round3_prep.sh import` lists from call 1 (.carry/profiled.txt,
# one name a line: joined with spaces here, as the skip test below matches " NAME ")
PROFILED_SKIP=${PROFILED_SKIP:-"tb_softmax_fwd tb_int4_gemm_fwd tb_rms_norm_bwd tb_swiglu_bwd tb_geglu_bwd $(tr "\n" " " < .carry/profiled.txt 2>/dev/null)"}
step() { [[ $STEPS == *$1* ]]; }
repo=$(pwd) start=$SECONDS
left() { echo $(( END - (SECONDS - start) )); }
work=${WORK:-/tmp/round3} site=${SITE:-/tmp/site}; rm -rf "$work"; mkdir -p "$work/bench" "$work/profile"
mark() { echo "$1 wall_s=$((SECONDS - $2)) at_s=$((SECONDS - start))" | tee -a "$work/walls.txt"; }
pack() { tar czf "$OUT/round3.tgz" -C "$work" --exclude=./home --exclude='*.ncu-rep' --exclude=./rerecord --exclude=./cb \
  --exclude=./cb0 --exclude=./tr .; }

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl \
  > "$work/pip.log" 2>&1 || echo "pip install failed: see pip.log" >> "$work/walls.txt"
kt=$repo/.carry/kt; [ -d "$kt/ktriage" ] || kt=$repo  # a clean export of the commit when carried, else the tree
export PYTHONPATH="$site:$kt" KTRIAGE_HOME="$work/home" PYTHONUNBUFFERED=1 SERVING_SRC="$repo/.carry/serving" \
  KT_SRC="$kt"
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
  python3 -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
  git -C "$repo" log --oneline -1 2>/dev/null; command -v ncu; ncu --version 2>/dev/null | tail -1; echo "STEPS=$STEPS R3_TGZ=$R3_TGZ"
} > "$work/env.txt" 2>&1
R3_TGZ=$(realpath "$R3_TGZ")
# `python3 -m ktriage` puts its working folder first on sys.path: from the repo root it would import the tree's
# ktriage (others' edits in flight included), not the export. So the ktriage commands run from $work.
cd "$work" || exit 1
python3 -c "import ktriage, sys; print('ktriage from', ktriage.__file__)" >> "$work/env.txt" 2>&1
python3 -c "import torch, triton, scipy.stats" > /dev/null 2>&1  # warm the page cache once, untimed
mark "setup" 0; pack

if step b; then  # bench, smallest bundle first; none starts after 200 s
  t=$SECONDS
  mkdir -p "$work/cb" && tar xzf "$R3_TGZ" -C "$work/cb"
  for b in $(du -s "$work"/cb/*/*/ | sort -n | awk '{print $2}'); do
    name=$(basename "$b")
    [ -f "$b/manifest.json" ] || continue
    if (( SECONDS - start > 200 )); then echo "bench $name not started: deadline" >> "$work/walls.txt"; continue; fi
    t1=$SECONDS
    timeout -k 5 90 python3 -m ktriage bench --bundle "$b" --max-time "$MAX_TIME" --min-samples 10 \
      -o "$work/bench/$name.json" -o "$work/bench/$name.md" > "$work/bench/$name.txt" 2>&1
    rc=$?
    timeout 60 python3 -m ktriage compare "$work/bench/$name.json" --toolchains -o "$work/bench/$name.compare.md" \
      > /dev/null 2>&1
    mark "bench $name exit=$rc" $t1; pack
  done
  mark "step_b" $t; pack
fi

if step e; then  # the one-command flow; its script packs $work/tr/triage_run.tgz
  t=$SECONDS
  budget=$(( $(left) - 150 )); (( budget > 240 )) && budget=240
  if (( budget < 90 )); then echo "triage_run not started: deadline" >> "$work/walls.txt"; else
    mkdir -p "$work/tr"
    (cd "$repo" && OUT="$work/tr" TRIAGE_TIMEOUT=$(( budget - 30 )) timeout -k 10 "$budget" \
      bash benchmarks/corpus/triage_run_h200.sh > "$work/triage_run.txt" 2>&1)
    mark "triage_run exit=$?" $t
    cp "$work/tr/triage_run.tgz" "$OUT/" 2>/dev/null || tar czf "$OUT/triage_run.tgz" -C "$work/tr" .
    cp "$work/tr/triage_run/steps.txt" "$work/triage_steps.txt" 2>/dev/null
  fi
  pack
fi

rec_pid=
if step c; then  # record in the background; its own TOTAL ends it 25 s before ours
  t=$SECONDS
  mkdir -p "$work/rerecord"
  ( cd "$repo" && OUT="$work/rerecord" JOBS=4 PER_JOB=170 TOTAL=$(( $(left) - 25 )) ONLY="$RECORD" \
      bash benchmarks/corpus/record_h200.sh > "$work/record.txt" 2>&1
    cp "$work/rerecord/workloads.tgz" "$work/rerecord/logs.tgz" "$OUT/" 2>/dev/null
    mv "$OUT/logs.tgz" "$OUT/record_logs.tgz" 2>/dev/null
    echo "record done wall_s=$((SECONDS - t)) at_s=$((SECONDS - start))" >> "$work/walls.txt" ) &
  rec_pid=$!
fi

if step d; then
  mkdir -p "$work/cb0" && tar xzf "$repo/.carry/corpus-bundles.tgz" -C "$work/cb0"
  profile_one() {
    local name=$1 t1=$SECONDS
    timeout -k 5 75 python3 -m ktriage profile --bundle "$work/cb0/corpus/$name" --warmup 1 \
      --raw-dir "$work/profile/$name" -o "$work/profile/$name.json" -o "$work/profile/$name.md" \
      > "$work/profile/$name.txt" 2>&1
    mark "profile $name exit=$?" $t1
    rm -f "$work/profile/$name"/*.ncu-rep
  }
  todo=()
  for name in $(grep -v '^#' "$repo/benchmarks/corpus/profile_sample.txt" | grep .); do
    [[ " $PROFILED_SKIP " == *" $name "* ]] && continue
    [ -d "$work/cb0/corpus/$name" ] || { echo "profile $name: no bundle" >> "$work/walls.txt"; continue; }
    todo+=("$name")
  done
  jobs_=${PROFILE_JOBS:-2}  # ncu serializes the profiled kernels across processes (its lock file); the rest overlaps
  for ((i = 0; i < ${#todo[@]}; i += jobs_)); do  # a batch at a time, all waited for (the recorder runs beside)
    if (( $(left) < 85 )); then echo "profile ${todo[*]:i} not started: deadline" >> "$work/walls.txt"; break; fi
    pids=()
    for name in "${todo[@]:i:jobs_}"; do profile_one "$name" & pids+=($!); done
    wait "${pids[@]}"; pack
  done
fi

[ -n "$rec_pid" ] && wait "$rec_pid"
echo "total_s=$((SECONDS - start))" >> "$work/walls.txt"
pack; ls -la "$OUT"; cat "$work/walls.txt"
