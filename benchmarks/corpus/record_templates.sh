#!/usr/bin/env bash
# H200 (issue 23, point 2): record torch.compile's template kernels (max-autotune mm, flex attention fwd+bwd,
# a user-defined Triton kernel under torch.compile) and check that every inductor kernel has its grid.
# Runs from the repo root on a GPU host with torch 2.11 + Triton 3.6 (no network); writes under $OUT
# (or the first argument). Then, on the CPU machine: ktriage bench $OUT/templates.workload.json -t ... --compile-only.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/templates}}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
KT="$PY -m ktriage"
start=$(date +%s)
$PY benchmarks/corpus/programs/inductor_templates.py > "$OUT/templates.plain.txt" 2>&1
echo "plain exit $? ($(( $(date +%s) - start )) s)" | tee -a "$OUT/templates.log"
start=$(date +%s)
$KT record -o "$OUT/templates.workload.json" -- $PY benchmarks/corpus/programs/inductor_templates.py \
    > "$OUT/templates.recorded.txt" 2> "$OUT/templates.record.log"
echo "record exit $? ($(( $(date +%s) - start )) s)" | tee -a "$OUT/templates.log"
$KT workload show "$OUT/templates.workload.json" > "$OUT/templates.show.txt" 2>&1
$KT workload show "$OUT/templates.workload.json" -f json > "$OUT/templates.show.json" 2>&1
$PY - "$OUT/templates.show.json" <<'PY' | tee -a "$OUT/templates.log"
import json, sys
doc = json.load(open(sys.argv[1]))
kernels = doc["kernels"]
inputs = [(k["id"], k["function"], i["id"], i.get("grid")) for k in kernels for i in k["inputs"]]
templates = [x for x in inputs if x[1].startswith("triton_tem_")]
print(f"kernels {len(kernels)} inputs {len(inputs)} templates {len(templates)} "
      f"without grid {sum(1 for x in inputs if not x[3])} cannot_bench {len(doc.get('cannot_bench', []))}")
for b in doc.get("cannot_bench", []):
    print("cannot bench:", b)
PY
cat "$OUT/templates.record.log" | tail -20
