#!/usr/bin/env bash
# Issue 17 on the H200, fourth step: the recording overhead after the faster launch key (flat key,
# fn[grid] without Triton's proxy layer), before/after in one process and whole processes; then every
# recorded workload benched again with the replay fixes (inductor grids, constexprs from the spec,
# the recorded timing protocol), the torch.compile model first.
#   bash benchmarks/record/h200_record4.sh     (repo root; .whl, .carry/home, .carry/old_record_hook.py
#                                               and .bundles/wl-* carried) -> $OUT/overhead4.tgz, $OUT/bench_wl.tgz
set -uo pipefail
OUT=${OUT:?set OUT to the folder the tarballs go to}
repo=$(pwd)
out=$(mktemp -d)
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --target "$site" .whl/*.whl .whl/msgspec/*cp312*.whl > "$out/pip.log" 2>&1
export PYTHONPATH="$site:$repo" KTRIAGE_HOME="$repo/.carry/home" PYTHONUNBUFFERED=1
now() { date +%s.%N; }
secs() { python3 -c "print(round($2 - $1, 3))"; }
pack() { (cd "$out" && tar czf "$OUT/overhead4.tgz" .); }
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
  python3 -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
  nproc
} > "$out/env.txt" 2>&1
# 1. in one process: plain, the new hook, the hook before this change (.carry/old_record_hook.py)
timeout 150 python3 benchmarks/record/programs/overhead_inprocess.py 9 .carry/old_record_hook.py \
  > "$out/overhead_inprocess.txt" 2>&1
echo "exit $?" >> "$out/overhead_inprocess.txt"
pack
# 2. whole processes, alternating: many_launches.py (20,000 launches) plain and under `ktriage record`
for i in 1 2 3 4 5; do
  t0=$(now)
  python3 benchmarks/record/h200/many_launches.py >> "$out/overhead_plain.txt" 2>&1
  echo "run $i plain_process_s=$(secs "$t0" "$(now)")" | tee -a "$out/overhead_wall.txt"
  t0=$(now)
  python3 -m ktriage record -o "$out/many_launches.workload.json" -- python3 benchmarks/record/h200/many_launches.py \
    >> "$out/overhead_recorded.txt" 2>&1
  echo "run $i recorded_process_s=$(secs "$t0" "$(now)")" | tee -a "$out/overhead_wall.txt"
done
pack
# 3. every recorded workload benched side by side (the torch.compile model first)
bash benchmarks/record/bench_workloads_h200.sh
