#!/usr/bin/env bash
# bench --profile on the H200 (issue 16): time layer_norm bwd N=4608 (liger 0.5.10's kernel, triton 3.3.1
# vs 3.4.0, kernel-only) from the CPU-built bundle, run ncu on both toolchains, put the counters into the
# results file and the store, and show `ktriage compare` quoting them. Builds nothing.
# Repo root, after the device prefix (pip install of .whl, PYTHONPATH=$site:$PWD, KTRIAGE_HOME=$PWD/.carry/home);
# the bundle .bundles/prof-ln-bwd travels with the tree (carry it if it is git-ignored). About 1-2 minutes.
# Writes $OUT/profile_results.tgz (profile_results/: env.txt, bench.txt, results.json, results.md, compare.md,
# compare.json, store_check.txt, bundle/profile-input7-liger_layer_norm/{*.raw.csv,*.log,profile.json}).
set -u
R=$OUT/profile_results; rm -rf $R; mkdir -p $R
B=${BUNDLE:-.bundles/prof-ln-bwd}
export PYTHONUNBUFFERED=1
cp -r "$B" $R/bundle || exit 1  # ncu's raw files go into the bundle folder: a copy under $OUT
{ date -u +%Y-%m-%dT%H:%MZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  command -v ncu; ncu --version; id -u; grep -i RmProfilingAdminOnly /proc/driver/nvidia/params
  python3 -c "import torch, ktriage.profile.attach as a; print('torch', torch.__version__, a.__file__)"; } > $R/env.txt 2>&1
t0=$SECONDS
timeout 240 python3 -m ktriage bench --bundle $R/bundle --only liger_layer_norm,torch_layer_norm --artifacts-only \
  --artifact-timing kernel --max-time 5 --profile -o $R/results.json -o $R/results.md --db sqlite:///$R/store.db > $R/bench.txt 2>&1
echo "bench exit $? after $((SECONDS - t0)) s" >> $R/bench.txt
python3 -m ktriage compare $R/results.json --toolchains --format markdown > $R/compare.md 2>&1; echo "compare exit $? (1: a regression)" >> $R/compare.md
python3 -m ktriage compare $R/results.json --toolchains --format json > $R/compare.json 2>/dev/null
python3 - $R > $R/store_check.txt 2>&1 <<'PY'
import sys
from ktriage.measure.results_file import cell_profile, read_results
from ktriage.store import open_store
r = sys.argv[1]
run, cells = read_results(f"{r}/results.json")
with open_store(f"sqlite:///{r}/store.db") as store:
    _, stored = store.load_run(run.run_id)
for c in stored:
    p = cell_profile(c)
    print(c.key.label(), "->", "no profile" if p is None else f"{p['status']} {p.get('error') or ''} launches={len(p['launches'])}")
print("store == results file:", {c.key.label(): cell_profile(c) for c in stored} == {c.key.label(): cell_profile(c) for c in cells})
print("notes:", run.settings.get("profile", {}).get("notes"))
PY
rm -f $R/bundle/*/*.ncu-rep; rm -rf $R/bundle/cubins $R/store.db
tar czf $OUT/profile_results.tgz -C $OUT profile_results
tail -n 15 $R/bench.txt; cat $R/store_check.txt; grep -A4 "Counters (Nsight Compute)" $R/compare.md; tail -n 1 $R/compare.md
