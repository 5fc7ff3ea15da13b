#!/usr/bin/env bash
# Issue 23's corpus, step 1 (GPU host): every program of benchmarks/corpus/ops.txt run under `ktriage record`.
#   GPU host, repo root, carried: .whl (ktriage's pure-Python dependencies + liger-kernel 0.8.5 + fla-core 0.6.0,
#   see README.md), .carry/tritonbench (= ../shared/thirdparty/tritonbench), .carry/serving (vLLM/sglang kernel files)
#     bash benchmarks/corpus/record_h200.sh            -> $OUT/workloads.tgz, $OUT/logs.tgz
#     ONLY="tb softmax fwd" bash benchmarks/corpus/record_h200.sh    (one line of ops.txt)
# JOBS programs run at once (default 8: the host has 16 cores and one GPU; timings are not the point here,
# TritonBench's own numbers are kept only as evidence that it ran). Each is bounded at PER_JOB seconds and
# the whole at TOTAL seconds, so that what finished always comes back.
set -uo pipefail
OUT=${OUT:?set OUT to the folder the tarballs go to}
JOBS=${JOBS:-8} PER_JOB=${PER_JOB:-240} TOTAL=${TOTAL:-470}
repo=$(pwd)
work=$(mktemp -d)
mkdir -p "$work/wl" "$work/log"
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" .whl/*.whl > "$work/log/pip.log" 2>&1
kt_src=${KT_SRC:-$repo}  # the ktriage to run: .carry/kt is a clean export of HEAD (git archive HEAD ktriage)
# `python3 -m ktriage` puts its working folder first on sys.path: run from the repo root it would import the
# tree's ktriage, not KT_SRC. So every ktriage command here runs from a folder without one ($work, TritonBench's).
export PYTHONPATH="$site:$kt_src" KTRIAGE_HOME="$work/home" PYTHONUNBUFFERED=1 SERVING_SRC="$repo/.carry/serving"
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import sys, torch, triton, liger_kernel, fla; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'fla', getattr(fla, '__version__', '?'))"
  python3 -c "import importlib.metadata as m; print('liger-kernel', m.version('liger-kernel'))"
  git -C "$repo" log --oneline -1 2>/dev/null
} > "$work/log/env.txt" 2>&1

job() {  # one line of ops.txt: KIND NAME ARG [TritonBench flags, or the program's arguments...]
  kind=$1 name=$2 arg=$3
  shift 3
  if [ "$kind" = tb ]; then
    id="tb_${name}_${arg}"
    cmd=(python3 run.py --op "$name" --mode "$arg" --metrics latency --num-inputs 3 --csv --output "$work/log/$id.csv" "$@")
    cd "$repo/.carry/tritonbench" || return
  else
    id="$name"
    cmd=(python3 "$repo/$arg" "$@")  # a program's own arguments follow its script
    cd "$work" || return
  fi
  t0=$(date +%s.%N)
  timeout -k 10 "$PER_JOB" python3 -m ktriage record -o "$work/wl/$id.workload.json" -- "${cmd[@]}" > "$work/log/$id.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  (cd "$work" && timeout 60 python3 -m ktriage workload show "$work/wl/$id.workload.json" > "$work/log/$id.show.txt" 2>&1)
  echo "$id record_rc=$rc wall_s=$(python3 -c "print(round($t1-$t0,1))")" >> "$work/log/summary.txt"
}
export -f job
export work repo PER_JOB
if [ -n "${ONLY:-}" ]; then
  lines="$ONLY"
else
  lines=$(grep -v '^#' benchmarks/corpus/ops.txt | grep .)
fi
start=$(date +%s)
echo "$lines" | timeout -k 10 "$TOTAL" xargs -P "$JOBS" -L 1 bash -c 'job "$@"' _
echo "all done after $(( $(date +%s) - start )) s (rc $?)" >> "$work/log/summary.txt"
(cd "$work" && tar czf "$OUT/workloads.tgz" wl && tar czf "$OUT/logs.tgz" log)
ls -la "$OUT"
sort "$work/log/summary.txt"
