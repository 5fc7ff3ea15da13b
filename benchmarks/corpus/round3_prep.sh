#!/usr/bin/env bash
# Issue 23, third round: what the CPU machine makes before a device call of round3_h200.sh, and what it does with
# the files that come back.
#   bash benchmarks/corpus/round3_prep.sh call1            .carry/kt (a clean export of HEAD's ktriage), the bundles of
#                                                            the re-recorded workloads never benched ->
#                                                            .carry/round3-bundles.tgz; checks .whl; prints the size
#                                                            that travels (must stay under 64 MiB)
#   bash benchmarks/corpus/round3_prep.sh import DIR       call 1's files (DIR/round3.tgz, workloads.tgz,
#                                                            record_logs.tgz, triage_run.tgz) unpacked into DIR/x,
#                                                            the new workloads gzipped into h200/workloads/ as
#                                                            NAME_r3.workload.json.gz beside the older recording (whose
#                                                            name committed bench results and calibration cells cite;
#                                                            NAME.workload.json.gz for a program not recorded before),
#                                                            their logs into h200/rerecord_logs_r3/, the profiled names
#                                                            into .carry/profiled.txt
#   bash benchmarks/corpus/round3_prep.sh call2 [NAME...]  the bundles of the workloads call 1 recorded ->
#                                                            .carry/round3b-bundles.tgz (then on the device:
#                                                            STEPS=bd R3_TGZ=.carry/round3b-bundles.tgz)
# The bundles are built by the same export the device runs (.carry/kt), not by the shared working tree.
set -uo pipefail
cd "$(dirname "$0")/../.."
WL=benchmarks/corpus/h200/workloads
kt() { PYTHONPATH="$PWD/.carry/kt" .venv/bin/python -m ktriage "$@"; }
export -f kt
export_kt() {
  rm -rf .carry/kt.new && mkdir -p .carry/kt.new && git archive HEAD ktriage | tar -x -C .carry/kt.new
  rm -rf .carry/kt && mv .carry/kt.new .carry/kt
  echo "ktriage exported from $(git log --oneline -1 | cut -c1-80)"
}
travel_size() {  # tracked + untracked-not-ignored + the carried paths
  local t u c
  t=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
  u=$(git ls-files -z --others --exclude-standard | xargs -0 -r du -cb 2>/dev/null | tail -1 | cut -f1)
  c=$(du -sb .whl .carry 2>/dev/null | awk '{s += $1} END {print s}')
  echo "travels: tracked $((t >> 20)) MiB + untracked $((${u:-0} >> 20)) MiB + carried (.whl .carry) $((c >> 20)) MiB" \
    "= $(((t + ${u:-0} + c) >> 20)) MiB (limit 64 MiB)"
}
case "${1:-}" in
  call1)
    export_kt
    for w in liger_kernel-0.8.5 fla_core-0.6.0 msgspec platformdirs sqlalchemy typer; do
      ls .whl/"$w"*.whl > /dev/null 2>&1 || echo "warning: no $w wheel in .whl (see the device README: pip download)"
    done
    KT=kt BUNDLES=.bundles/round3 TGZ=.carry/round3-bundles.tgz \
      bash benchmarks/corpus/build.sh bundles tb_jsd_fwd tb_jsd_bwd tb_kl_div_fwd tb_fp8_gemm_fwd serving_kernels_rerecorded
    travel_size ;;
  import)
    dir=${2:?usage: round3_prep.sh import DIR}
    x="$dir/x"; mkdir -p "$x"
    for f in round3 workloads record_logs triage_run; do
      [ -f "$dir/$f.tgz" ] && mkdir -p "$x/$f" && tar xzf "$dir/$f.tgz" -C "$x/$f"
    done
    for w in "$x"/workloads/wl/*.workload.json; do
      [ -f "$w" ] || continue
      n=$(basename "$w" .workload.json)
      to=$n  # beside an older recording of the program: NAME_r3 (coverage.py counts NAME_r3 over NAME)
      [ -f "$WL/$n.workload.json.gz" ] && ! gzip -9 -n -c "$w" | cmp -s - "$WL/$n.workload.json.gz" && to=${n}_r3
      gzip -9 -n -c "$w" > "$WL/$to.workload.json.gz" && echo "workload $to"
    done
    mkdir -p benchmarks/corpus/h200/rerecord_logs_r3
    for f in "$x"/record_logs/log/*; do [ -f "$f" ] && cp "$f" benchmarks/corpus/h200/rerecord_logs_r3/; done
    ls "$x"/round3/profile/*.json 2>/dev/null | xargs -r -n1 basename | sed 's/\.json$//' > .carry/profiled.txt
    echo "profiled in call 1: $(tr '\n' ' ' < .carry/profiled.txt)" ;;
  call2)
    shift
    names=("$@")
    if [ ${#names[@]} -eq 0 ]; then
      names=(fla_ops tb_vector_exp_fwd tb_jagged_sum_fwd tb_flash_attention_fwd tb_fp8_attention_fwd tb_grouped_gemm_fwd
        tb_embedding_bwd serving_kernels)
    fi
    export_kt
    rm -rf .bundles/round3b
    KT=kt BUNDLES=.bundles/round3b TGZ=.carry/round3b-bundles.tgz bash benchmarks/corpus/build.sh bundles "${names[@]}"
    travel_size ;;
  *) echo "usage: round3_prep.sh call1 | import DIR | call2 [NAME...]" >&2; exit 2 ;;
esac
