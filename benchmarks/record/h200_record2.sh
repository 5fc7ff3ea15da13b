#!/usr/bin/env bash
# ktriage record on the H200, second step (issue 17): TritonBench's fused_linear_cross_entropy, a
# torch.compile'd model (inductor kernels, static CUDA launcher), flash-linear-attention's
# chunk_gated_delta_rule, an autotuned tl.dot matmul, and the hook's overhead after the lean hot path.
#   (device, repo root; carry .carry (tritonbench snapshot, home packages) and .whl)
#   bash benchmarks/record/h200_record2.sh $OUT/rec2      -> $OUT/rec2.tgz
set -uo pipefail
out=${1:?usage: h200_record2.sh OUTDIR}
repo=$(pwd)
mkdir -p "$out"
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --target "$site" .whl/*.whl .whl/msgspec/*cp312*.whl > "$out/pip.log" 2>&1
P=$repo/.carry/home/packages
export PYTHONPATH="$site:$repo:$P/liger-kernel-0.5.10:$P/fla-core-0.6.0:$P/einops-0.8.1"
export KTRIAGE_HOME="$repo/.carry/home" PYTHONUNBUFFERED=1
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import sys, torch, triton, typer; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'typer', typer.__version__)"
} > "$out/env.txt" 2>&1
kt() { python3 -m ktriage "$@"; }
pack() { (cd "$out" && tar czf "$out.tgz" .); }
now() { date +%s.%N; }
secs() { python3 -c "print(round($2 - $1, 1))"; }

# 1. Programs: plain, then recorded; each prints a checksum (recording must not change results).
for prog in autotuned_matmul compiled_model fla_gated_delta; do
  t0=$(now)
  timeout 240 python3 benchmarks/record/programs/$prog.py > "$out/$prog.plain.txt" 2>&1; rc_plain=$?
  t1=$(now)
  rm -rf "/tmp/torchinductor_$(whoami)"  # the recorded run compiles too (a warm inductor cache would skip the compile)
  timeout 300 python3 -m ktriage record -o "$out/$prog.workload.json" -- python3 benchmarks/record/programs/$prog.py \
    > "$out/$prog.recorded.txt" 2>&1; rc_rec=$?
  t2=$(now)
  echo "$prog plain_rc=$rc_plain recorded_rc=$rc_rec plain_s=$(secs $t0 $t1) recorded_s=$(secs $t1 $t2)" | tee -a "$out/summary.txt"
  kt workload show "$out/$prog.workload.json" --format json > "$out/$prog.show.json" 2> "$out/$prog.show.err"
  kt workload show "$out/$prog.workload.json" > "$out/$prog.show.txt" 2>&1
  pack
done

# 2. TritonBench (the ../shared snapshot): fused_linear_cross_entropy, Liger backend, fwd and bwd (+ inductor fwd).
cd "$repo/.carry/tritonbench" || exit 1
for mode in fwd bwd; do
  only=liger_lm_head_ce,torch_lm_head_ce; [[ $mode == fwd ]] && only=$only,inductor_fused_linear_cross_entropy
  t0=$(now)
  timeout 300 python3 -m ktriage record -o "$out/tb_flce_$mode.workload.json" -- \
    python3 run.py --op fused_linear_cross_entropy --$mode --metrics latency,accuracy --only $only --csv \
    --output "$out/tb_flce_$mode.csv" > "$out/tb_flce_$mode.record.log" 2>&1; rc=$?
  echo "tb_flce $mode record_rc=$rc recorded_s=$(secs "$t0" "$(now)")" | tee -a "$out/summary.txt"
  (cd "$repo" && kt workload show "$out/tb_flce_$mode.workload.json" --format json > "$out/tb_flce_$mode.show.json" 2>&1)
  pack
done
cd "$repo" || exit 1

# 3. Overhead: 20,000 launches, plain and recorded, 5 runs each, alternating.
for _ in 1 2 3 4 5; do
  python3 benchmarks/record/h200/many_launches.py >> "$out/overhead_plain.txt" 2>&1
  python3 -m ktriage record -o "$out/many_launches.workload.json" -- python3 benchmarks/record/h200/many_launches.py \
    >> "$out/overhead_recorded.txt" 2>&1
done
kt workload show "$out/many_launches.workload.json" --format json > "$out/many_launches.show.json" 2>&1
pack
