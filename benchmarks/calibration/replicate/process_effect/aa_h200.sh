#!/usr/bin/env bash
# A/A on the H200: one TorchInductor kernel (the torch.compile model's triton_poi_fused_add_addmm_1 at 4096x1024,
# 16 us) whose bundle holds Triton 3.6.0 twice (triton==3.6.0 and triton==3.6.0,ptxas==12.8.93: the same cubin,
# loaded as two modules) and 3.3.1, benched in N separate processes. GPU host, repo root, carrying .whl and
# .bundles/aa-addmm (README.md: how it is built). -> $OUT/aa.tgz (aaI.json), the medians printed.
set -u
N=${N:-12}
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD KTRIAGE_HOME=/tmp/kth
for i in $(seq 1 "$N"); do
  timeout 60 python3 -m ktriage bench --bundle .bundles/aa-addmm --max-time 2.0 --min-samples 10 -o "$OUT/aa$i.json" \
    > "/tmp/aa$i.txt" 2>&1 || tail -3 "/tmp/aa$i.txt"
done
python3 - <<'PY'
import json, os, statistics as st
out = os.environ["OUT"]
for i in range(1, int(os.environ.get("N", "12")) + 1):
    d = json.load(open(f"{out}/aa{i}.json"))
    row = [f"{c['key']['toolchain'][7:33]} n={len(c['samples_ms'])} med={st.median(c['samples_ms']) * 1000:.2f} "
           f"min={min(c['samples_ms']) * 1000:.2f}" for c in d["cells"] if c.get("samples_ms")]
    print(i, " | ".join(row))
PY
for i in $(seq 1 "$N"); do python3 -m ktriage compare "$OUT/aa$i.json" --toolchains 2>&1 | grep -E "^triton.*->" ; done
cd "$OUT" && tar czf aa.tgz aa*.json && rm aa*.json
