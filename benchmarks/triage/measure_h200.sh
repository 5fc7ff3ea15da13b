#!/usr/bin/env bash
# triage's GPU step on real pairs (issue 12 step 3): the flagged cells of two triages re-measured with
# both toolchains side by side on the H200, then read back into measured verdicts.
#
#   1. build  (CPU machine, repo root):  bash benchmarks/triage/measure_h200.sh build
#        .bundles/tri-aa     the H200 A/A TritonBench pair (tritonbench_aa/layer_norm_bwd_run{1,2}.csv,
#                            same software both sides: triton==3.6.0 twice) -> its flagged layer_norm cells
#        .bundles/tri-ln331  the H200 ktriage bench run of benchmarks/gpu/issue3 split into its 3.3.1 and
#                            3.4.0 halves (as e2e_h200_runs.py splits it; sides/ keeps them) -> its flagged cells
#      (BUNDLES=DIR puts them elsewhere; PYTHON the interpreter, default python3; KTRIAGE the ktriage command,
#      default $PYTHON -m ktriage)
#   2. gpu    (the H200, repo root, .bundles carried):  bash benchmarks/triage/measure_h200.sh gpu $OUT
#        runs each bundle's measure.sh (ktriage bench --bundle ..., <= 5 s of sampling per input), packs
#        $OUT/triage_measure.tgz (every bundle's results/ and triage-measure.json, plus gpu.log)
#   3. report (CPU machine, repo root):  bash benchmarks/triage/measure_h200.sh report triage_measure.tgz
#        unpacks the results into the bundles and runs `ktriage triage ... --measured` on both pairs:
#        benchmarks/triage/measured/{layer_norm_bwd_aa,layer_norm_bwd_3.3.1_vs_3.4.0}.{md,json,html}
set -uo pipefail
step=${1:?usage: measure_h200.sh build | gpu OUTDIR | report TGZ}
repo=$(pwd)
bundles=${BUNDLES:-$repo/.bundles}
PY=${PYTHON:-python3}
KT=${KTRIAGE:-$PY -m ktriage}
AA=(benchmarks/triage/tritonbench_aa/layer_norm_bwd_run1.csv benchmarks/triage/tritonbench_aa/layer_norm_bwd_run2.csv
    --old-toolchain triton==3.6.0 --new-toolchain triton==3.6.0 --no-bisect --no-fixes)
LN=("$bundles/tri-ln331/sides/side-triton-3.3.1.json" "$bundles/tri-ln331/sides/side-triton-3.4.0.json" --no-bisect --no-fixes)
# the GPU test's cell (tests/triage/test_triage_measure.py): the test data's A/A pair, its worst cell, --measure in-process
T1=(tests/data/tritonbench/layer_norm_bwd_run1.csv tests/data/tritonbench/layer_norm_bwd_run2.csv --old-toolchain triton==3.4.0
    --new-toolchain triton==3.4.0 --op layer_norm --mode bwd --limit 1)

case "$step" in
build)
  mkdir -p "$bundles/tri-ln331/sides"
  $PY - "$bundles/tri-ln331/sides" <<'EOF'
import sys
from pathlib import Path
sys.path.insert(0, "benchmarks/triage")
from e2e_h200_runs import COMPARISONS, split  # the same split as the committed h200_e2e reports
name, results, old, new = COMPARISONS[0]
print(name, [str(p) for p in split(results, old, new, Path(sys.argv[1]))])
EOF
  $KT triage "${AA[@]}" --bundle "$bundles/tri-aa" --format markdown > "$bundles/tri-aa.before.md"
  echo "tri-aa: exit $?"
  $KT triage "${LN[@]}" --bundle "$bundles/tri-ln331" --format markdown > "$bundles/tri-ln331.before.md"
  echo "tri-ln331: exit $?"
  $KT triage "${T1[@]}" --bundle "$bundles/tri-gpu-test" --format json > /dev/null
  echo "tri-gpu-test: exit $?"
  du -sh "$bundles"/tri-aa "$bundles"/tri-ln331 "$bundles"/tri-gpu-test
  ;;
gpu)
  out=${2:?usage: measure_h200.sh gpu OUTDIR}
  mkdir -p "$out"
  start=$(date +%s)
  {
    date -u +%FT%TZ
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
    for d in "$bundles"/tri-aa "$bundles"/tri-ln331; do
      t0=$(date +%s)
      KTRIAGE="$KT" bash "$d/measure.sh"
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
  (cd "$bundles" && tar czf "$out/triage_measure.tgz" gpu.log tri-aa/results tri-aa/triage-measure.json \
      tri-ln331/results tri-ln331/triage-measure.json tri-gpu-test/results tri-gpu-test/inprocess.json tri-gpu-test/inprocess.md)
  ls -la "$out"
  ;;
report)
  tgz=${2:?usage: measure_h200.sh report TGZ}
  tar xzf "$tgz" -C "$bundles"
  dest=benchmarks/triage/measured
  mkdir -p "$dest"
  cp "$bundles/gpu.log" "$dest/gpu.log"
  $KT triage "${AA[@]}" --measured "$bundles/tri-aa" -o "$dest/layer_norm_bwd_aa.md" -o "$dest/layer_norm_bwd_aa.json" \
      -o "$dest/layer_norm_bwd_aa.html" --format markdown > /dev/null
  echo "A/A pair (expect 0: every flagged cell noise): exit $?"
  $KT triage "${LN[@]}" --measured "$bundles/tri-ln331" -o "$dest/layer_norm_bwd_3.3.1_vs_3.4.0.md" \
      -o "$dest/layer_norm_bwd_3.3.1_vs_3.4.0.json" -o "$dest/layer_norm_bwd_3.3.1_vs_3.4.0.html" --format markdown > /dev/null
  echo "3.3.1 -> 3.4.0 (expect 1: measured regressions): exit $?"
  $PY - "$dest" <<'EOF'
import json, sys
from pathlib import Path
for p in sorted(Path(sys.argv[1]).glob("*.json")):
    r = json.loads(p.read_text())
    print(p.name, "|", r["headline"])
    for c in r["cells"]:
        m = c.get("measured") or {}
        print(f"  {c['input']:>14} {c['backend']:<17} {c['change_pct']:+7.1f}% -> {c['verdict']:<20} {m.get('verdict')} "
              f"{m.get('ratio') or 0:.3f}x [{m.get('ci_low') or 0:.3f}, {m.get('ci_high') or 0:.3f}] n={m.get('n_old')}/{m.get('n_new')}")
EOF
  ;;
*)
  echo "usage: measure_h200.sh build | gpu OUTDIR | report TGZ" >&2
  exit 2
  ;;
esac
