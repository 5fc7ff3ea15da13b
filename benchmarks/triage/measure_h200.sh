#!/usr/bin/env bash
# triage's GPU step on real pairs (issue 12 step 3): the flagged cells of the triages re-measured with
# both toolchains side by side on the H200, then read back into measured verdicts.
#
#   1. build  (CPU machine, repo root):  bash benchmarks/triage/measure_h200.sh build
#        .bundles/tri-aa-<op>  the H200 A/A TritonBench pairs (tritonbench_aa/<op>_bwd_run{1,2}.csv, same software
#                              both sides: triton==3.6.0 twice), one per op with flagged cells (layer_norm,
#                              embedding: catalog kernels; rms_norm, cross_entropy: kernels from the recorded
#                              TritonBench workloads, --workload); swiglu and geglu flag no cell, nothing to bundle
#        .bundles/tri-ln331    the H200 ktriage bench run of benchmarks/gpu/issue3 split into its 3.3.1 and
#                              3.4.0 halves (as e2e_h200_runs.py splits it; sides/ keeps them), with the verified
#                              fix bundled as a third variant (3.4.0+fix)
#        .bundles/tri-emb      the same for the embedding ptxas pair (12.4.131 -> 12.8.93, Triton 3.4.0)
#      (BUNDLES=DIR puts them elsewhere; PYTHON the interpreter, default python3; KTRIAGE the ktriage command,
#      default $PYTHON -m ktriage)
#   2. gpu    (the H200, repo root, .bundles carried):  bash benchmarks/triage/measure_h200.sh gpu $OUT
#        runs each bundle's measure.sh (ktriage bench --bundle ..., <= 5 s of sampling per input), packs
#        $OUT/triage_measure.tgz (every bundle's results/ and triage-measure.json, plus gpu.log)
#   3. report (CPU machine, repo root):  bash benchmarks/triage/measure_h200.sh report triage_measure.tgz
#        unpacks the results into the bundles and runs `ktriage triage ... --measured` on every pair:
#        benchmarks/triage/measured/<pair>.{md,json,html} and summary.txt (exit code and wall time per pair)
set -uo pipefail
step=${1:?usage: measure_h200.sh build | gpu OUTDIR | report TGZ}
repo=$(pwd)
bundles=${BUNDLES:-$repo/.bundles}
PY=${PYTHON:-python3}
KT=${KTRIAGE:-$PY -m ktriage}
TB=benchmarks/triage/tritonbench_aa
AA_OPS=(layer_norm embedding rms_norm cross_entropy swiglu geglu)
# the A/A pair of one op: both runs, the same toolchain on both sides, its recorded workload when there is one
aa_args() {
  local op=$1
  echo "$TB/${op}_bwd_run1.csv $TB/${op}_bwd_run2.csv --old-toolchain triton==3.6.0 --new-toolchain triton==3.6.0 --no-bisect"
  [ -f "benchmarks/record/h200/tb_${op}_bwd.workload.json.gz" ] && [ "$op" != layer_norm ] && \
    echo "--workload benchmarks/record/h200/tb_${op}_bwd.workload.json.gz"
}
# the ktriage pairs, split from the issue3 runs: name, sides folder, old, new (fixes on: the fix is bundled)
PAIRS=("tri-ln331 layer_norm_bwd_3.3.1_vs_3.4.0 side-triton-3.3.1.json side-triton-3.4.0.json"
       "tri-emb embedding_bwd_ptxas_12.4.131_vs_12.8.93 side-triton-3.4.0_ptxas-12.4.131.json side-triton-3.4.0.json")
# the GPU test's cell (tests/triage/test_triage_measure.py): the test data's A/A pair, its worst cell, --measure in-process
T1=(tests/data/tritonbench/layer_norm_bwd_run1.csv tests/data/tritonbench/layer_norm_bwd_run2.csv --old-toolchain triton==3.4.0
    --new-toolchain triton==3.4.0 --op layer_norm --mode bwd --limit 1)

case "$step" in
build)
  for pair in "${PAIRS[@]}"; do
    read -r dir name old new <<< "$pair"
    rm -rf "${bundles:?}/$dir"; mkdir -p "$bundles/$dir/sides"
    $PY - "$bundles/$dir/sides" "$name" <<'EOF2'
import sys
from pathlib import Path
sys.path.insert(0, "benchmarks/triage")
from e2e_h200_runs import COMPARISONS, split  # the same split as the committed h200_e2e reports
name, results, old, new = next(c for c in COMPARISONS if c[0] == sys.argv[2])
print(name, [str(p) for p in split(results, old, new, Path(sys.argv[1]))])
EOF2
    $KT triage "$bundles/$dir/sides/$old" "$bundles/$dir/sides/$new" --bundle "$bundles/$dir" --format markdown > "$bundles/$dir.before.md"
    echo "$dir: exit $? (1: regressions)"
  done
  for op in "${AA_OPS[@]}"; do
    rm -rf "${bundles:?}/tri-aa-$op"
    # shellcheck disable=SC2046  # aa_args prints whitespace-free words
    $KT triage $(aa_args "$op") --bundle "$bundles/tri-aa-$op" --format markdown > "$bundles/tri-aa-$op.before.md"
    echo "tri-aa-$op: exit $? ($(sed -n 3p "$bundles/tri-aa-$op.before.md"))"
    [ -f "$bundles/tri-aa-$op/measure.sh" ] || rm -rf "${bundles:?}/tri-aa-$op"  # no flagged cell: nothing to re-measure
  done
  $KT triage "${T1[@]}" --bundle "$bundles/tri-gpu-test" --format json > /dev/null
  echo "tri-gpu-test: exit $?"
  du -sh "$bundles"/tri-*/
  ;;
gpu)
  out=${2:?usage: measure_h200.sh gpu OUTDIR}
  mkdir -p "$out"
  start=$(date +%s)
  {
    date -u +%FT%TZ
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
    for d in "$bundles"/tri-aa-* "$bundles"/tri-ln331 "$bundles"/tri-emb; do
      [ -f "$d/measure.sh" ] || continue
      t0=$(date +%s)
      KTRIAGE="$KT" timeout 200 bash "$d/measure.sh"
      echo "$(basename "$d"): rc=$? $(( $(date +%s) - t0 )) s"
    done
    # --measure in-process (the library path) on the prebuilt test bundle: no toolchain needed here
    t0=$(date +%s)
    $KT triage "${T1[@]}" --measure --bundle "$bundles/tri-gpu-test" --max-time 3 -o "$bundles/tri-gpu-test/inprocess.json" \
        --format markdown > "$bundles/tri-gpu-test/inprocess.md"
    echo "tri-gpu-test --measure: rc=$? (expect 0: noise) $(( $(date +%s) - t0 )) s"
    if $PY -c "import pytest" 2>/dev/null; then
      KTRIAGE_TEST_HOME="${KTRIAGE_HOME:-$repo/.ktriage-home}" KTRIAGE_TRIAGE_BUNDLE="$bundles/tri-gpu-test" $PY -m pytest -q -p no:cacheprovider -m gpu tests/triage/test_triage_measure.py
      echo "pytest -m gpu tests/triage/test_triage_measure.py: rc=$?"
    else
      echo "pytest not importable: the GPU test is the --measure run above"
    fi
    echo "total $(( $(date +%s) - start )) s"
  } > "$out/gpu.log" 2>&1
  tail -15 "$out/gpu.log"
  cp "$out/gpu.log" "$bundles/gpu.log"
  (cd "$bundles" && tar czf "$out/triage_measure.tgz" gpu.log tri-*/results tri-*/triage-measure.json \
      tri-gpu-test/inprocess.json tri-gpu-test/inprocess.md)
  ls -la "$out"
  ;;
report)
  tgz=${2:?usage: measure_h200.sh report TGZ}
  tar xzf "$tgz" -C "$bundles"
  dest=benchmarks/triage/measured
  rm -rf "$dest"; mkdir -p "$dest"
  cp "$bundles/gpu.log" "$dest/gpu.log"
  : > "$dest/summary.txt"
  for op in "${AA_OPS[@]}"; do
    measured=(); [ -d "$bundles/tri-aa-$op" ] && measured=(--measured "$bundles/tri-aa-$op")
    t0=$(date +%s.%N)
    # shellcheck disable=SC2046
    $KT triage $(aa_args "$op") "${measured[@]}" -o "$dest/${op}_bwd_aa.md" -o "$dest/${op}_bwd_aa.json" \
        -o "$dest/${op}_bwd_aa.html" --format markdown > /dev/null
    echo "${op}_bwd_aa: exit $? (expect 0: no regression of the software) wall $($PY -c "import time; print(round(time.time() - $t0, 1))") s" | tee -a "$dest/summary.txt"
  done
  for pair in "${PAIRS[@]}"; do
    read -r dir name old new <<< "$pair"
    t0=$(date +%s.%N)
    $KT triage "$bundles/$dir/sides/$old" "$bundles/$dir/sides/$new" --measured "$bundles/$dir" -o "$dest/$name.md" \
        -o "$dest/$name.json" -o "$dest/$name.html" --format markdown > /dev/null
    echo "$name: exit $? (expect 1: measured regressions) wall $($PY -c "import time; print(round(time.time() - $t0, 1))") s" | tee -a "$dest/summary.txt"
  done
  $PY - "$dest" <<'EOF2' | tee -a "$dest/summary.txt"
import json, sys
from pathlib import Path
for p in sorted(Path(sys.argv[1]).glob("*.json")):
    r = json.loads(p.read_text())
    print(p.name, "|", r["headline"])
    for c in r["cells"]:
        m = c.get("measured") or {}
        print(f"  {c['input']:>14} {c['backend']:<24} {c['change_pct']:+7.1f}% -> {c['verdict']:<20} {m.get('verdict')} "
              f"{m.get('ratio') or 0:.3f}x [{m.get('ci_low') or 0:.3f}, {m.get('ci_high') or 0:.3f}] n={m.get('n_old')}/{m.get('n_new')}")
EOF2
  ;;
*)
  echo "usage: measure_h200.sh build | gpu OUTDIR | report TGZ" >&2
  exit 2
  ;;
esac
