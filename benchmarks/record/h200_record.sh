#!/usr/bin/env bash
# ktriage record on the H200 (issue 17, first GPU step): real programs recorded with the launch hook
# injected from outside, and the hook's overhead on a program of 10,000+ launches.
#   (device, repo root; .carry/tritonbench = ../shared/thirdparty/tritonbench, .carry/home = the
#    test home's packages, .whl = pure-Python wheels + msgspec wheels per CPython)
#   bash benchmarks/record/h200_record.sh $OUT/rec
set -uo pipefail
out=${1:?usage: h200_record.sh OUTDIR}
repo=$(pwd)
mkdir -p "$out"
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --target "$site" .whl/*.whl .whl/msgspec/*.whl > "$out/pip.log" 2>&1 \
  || python3 -m pip install -q --no-index --no-deps --target "$site" .whl/*.whl $(python3 - <<'PY'
import glob, sys
tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
print(" ".join(glob.glob(f".whl/msgspec/*-{tag}-*.whl")))
PY
) >> "$out/pip.log" 2>&1
export PYTHONPATH="$site:$repo:$repo/.carry/home/packages/liger-kernel-0.5.10"
export KTRIAGE_HOME="$repo/.carry/home"
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import sys, torch, triton, msgspec; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'msgspec', msgspec.__version__)"
} > "$out/env.txt" 2>&1
kt() { python3 -m ktriage "$@"; }

# 1. TritonBench (the ../shared snapshot) under ktriage record: Liger backends, fwd and bwd.
cd "$repo/.carry/tritonbench"
for spec in "rms_norm liger_rms" "swiglu liger_swiglu" "cross_entropy liger_cross_entropy_loss" "layer_norm liger_layer_norm"; do
  set -- $spec
  for mode in fwd bwd; do
    base="$out/tb_${1}_${mode}"
    start=$(date +%s.%N)
    timeout 240 python3 run.py --op "$1" --$mode --metrics latency --only "$2" --csv --output "$base.plain.csv" > "$base.plain.log" 2>&1
    mid=$(date +%s.%N)
    timeout 300 python3 -m ktriage record -o "$base.workload.json" -- \
      python3 run.py --op "$1" --$mode --metrics latency --only "$2" --csv --output "$base.recorded.csv" > "$base.record.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    echo "$1 $mode record_rc=$rc plain_s=$(python3 -c "print(round($mid-$start,1))") recorded_s=$(python3 -c "print(round($end-$mid,1))")" | tee -a "$out/summary.txt"
    (cd "$repo" && kt workload show "$base.workload.json" --format json > "$base.show.json" 2> "$base.show.err")
  done
done
cd "$repo"

# 2. Overhead: 20,000 launches of a small kernel on real tensors, with and without the hook.
cp benchmarks/record/h200/many_launches.py "$out/many_launches.py"  # the committed program
for rep in 1 2 3; do
  python3 "$out/many_launches.py" >> "$out/overhead_plain.txt" 2>&1
  python3 -m ktriage record -o "$out/many_launches.workload.json" -- python3 "$out/many_launches.py" >> "$out/overhead_recorded.txt" 2>&1
done
kt workload show "$out/many_launches.workload.json" --format json > "$out/many_launches.show.json" 2>&1
cd "$out" && tar czf ../rec.tgz . && cd .. && rm -rf "$out"
