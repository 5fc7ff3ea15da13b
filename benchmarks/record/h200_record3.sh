#!/usr/bin/env bash
# ktriage record on the H200, third step (issue 17): the recordings the second step got wrong, again
# with the fixed hook (torch.compile: the generated module's host-side imports stubbed; fla: the
# backends its @dispatch imports carried; TritonBench's fused_linear_cross_entropy forward: no --fwd flag
# in that op; many_launches.py: a __main__ guard), and the overhead A/B inside one process.
#   bash benchmarks/record/h200_record3.sh $OUT/rec3      -> $OUT/rec3.tgz
set -uo pipefail
out=${1:?usage: h200_record3.sh OUTDIR}
repo=$(pwd)
mkdir -p "$out"
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --target "$site" .whl/*.whl .whl/msgspec/*cp312*.whl > "$out/pip.log" 2>&1
P=$repo/.carry/home/packages
export PYTHONPATH="$site:$repo:$P/liger-kernel-0.5.10:$P/fla-core-0.6.0:$P/einops-0.8.1"
export KTRIAGE_HOME="$repo/.carry/home" PYTHONUNBUFFERED=1
date -u +%FT%TZ > "$out/env.txt"
kt() { python3 -m ktriage "$@"; }
pack() { (cd "$out" && tar czf "$out.tgz" .); }
now() { date +%s.%N; }
secs() { python3 -c "print(round($2 - $1, 1))"; }
for prog in compiled_model fla_gated_delta; do
  rm -rf "/tmp/torchinductor_$(whoami)"
  t0=$(now)
  timeout 200 python3 -m ktriage record -o "$out/$prog.workload.json" -- python3 benchmarks/record/programs/$prog.py \
    > "$out/$prog.recorded.txt" 2>&1
  echo "$prog recorded_rc=$? recorded_s=$(secs "$t0" "$(now)")" | tee -a "$out/summary.txt"
  kt workload show "$out/$prog.workload.json" > "$out/$prog.show.txt" 2>&1
  pack
done
cd "$repo/.carry/tritonbench" || exit 1
t0=$(now)
timeout 200 python3 -m ktriage record -o "$out/tb_flce_fwd.workload.json" -- \
  python3 run.py --op fused_linear_cross_entropy --metrics latency,accuracy --only liger_lm_head_ce,torch_lm_head_ce --csv \
  --output "$out/tb_flce_fwd.csv" > "$out/tb_flce_fwd.record.log" 2>&1
echo "tb_flce fwd record_rc=$? recorded_s=$(secs "$t0" "$(now)")" | tee -a "$out/summary.txt"
cd "$repo" || exit 1
pack
timeout 120 python3 benchmarks/record/programs/overhead_inprocess.py 9 > "$out/overhead_inprocess.txt" 2>&1
for _ in 1 2 3; do
  python3 benchmarks/record/h200/many_launches.py >> "$out/overhead_plain.txt" 2>&1
  python3 -m ktriage record -o "$out/many_launches.workload.json" -- python3 benchmarks/record/h200/many_launches.py \
    >> "$out/overhead_recorded.txt" 2>&1
done
pack
