#!/usr/bin/env bash
# Issue 23 point 8 on the H200: one command from a program to the report (`ktriage triage --run`).
#   GPU host, repo root; carried: .whl (ktriage's pure-Python dependencies + liger-kernel 0.8.5), .carry/kt (a clean
#   export of the committed ktriage: git archive HEAD ktriage | tar -x -C .carry/kt). No network there: both sides are
#   the host's own Triton 3.6.0 (triton=host), the old one assembled by the CUDA 13.0 toolkit's ptxas, the new one by
#   Triton's bundled ptxas.
#     OUT=/path bash benchmarks/corpus/triage_run_h200.sh     -> $OUT/triage_run/ and $OUT/triage_run.tgz
#   $OUT/triage_run/: report.md, report.json (steps with wall times, every kernel input measured and predicted, the
#   triage), steps.txt (one line per step: name, status, wall s), triage.log (the command's stderr), plain.txt (the
#   program alone, for its own wall time), env.txt, work/ (the workload, the bundle, results.json).
#   TRIAGE_TIMEOUT (default 480 s) bounds the triage; the report of the steps finished by then is kept and packed.
set -uo pipefail
OUT=${OUT:?set OUT to the folder the results go to}
repo=$(pwd)
res="$OUT/triage_run"
rm -rf "$res" && mkdir -p "$res"
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" .whl/*.whl > "$res/pip.log" 2>&1
kt=$repo/.carry/kt; [ -d "$kt/ktriage" ] || kt=$repo  # a clean export of the commit when carried, else the tree
export PYTHONPATH="$site:$kt" KTRIAGE_HOME="$(mktemp -d)" PYTHONUNBUFFERED=1 KTRIAGE_COLUMNS=200
export TRITON_CACHE_DIR="$(mktemp -d)"  # the program's own JIT starts cold, as a first run would
PROGRAM="python3 $repo/benchmarks/corpus/programs/liger_step.py"
cd "$res"  # not the repo root: `python3 -m ktriage` puts its working folder first on sys.path (the tree's ktriage)
OLD="triton=host,ptxas=/usr/local/cuda/bin/ptxas"
NEW="triton=host"
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
  python3 -c "import importlib.metadata as m; print('liger-kernel', m.version('liger-kernel'))"
  /usr/local/cuda/bin/ptxas --version | tail -2
  python3 -c "import os, triton; print('bundled ptxas:', os.path.join(os.path.dirname(triton.__file__), 'backends/nvidia/bin/ptxas'))"
  python3 -c "import ktriage; print('ktriage', ktriage.__version__, ktriage.__file__)"
} > "$res/env.txt" 2>&1

t=$(date +%s.%N)
timeout 120 $PROGRAM > "$res/plain.txt" 2>&1
echo "plain run rc=$? wall $(python3 -c "import time; print(round(time.time() - $t, 1))") s" >> "$res/plain.txt"

export TRITON_CACHE_DIR="$(mktemp -d)"
t=$(date +%s.%N)
timeout "${TRIAGE_TIMEOUT:-480}" python3 -m ktriage triage --run "$PROGRAM" --old-toolchain "$OLD" --new-toolchain "$NEW" \
  --workdir "$res/work" --max-time 2 > "$res/triage.txt" 2> "$res/triage.log"
rc=$?
echo "ktriage triage --run rc=$rc wall $(python3 -c "import time; print(round(time.time() - $t, 1))") s" | tee -a "$res/triage.log"
# the work folder's report is rewritten after each step: a run cut by the time limit keeps the steps it finished
cp "$res/work/report.md" "$res/work/report.json" "$res/" 2>/dev/null
python3 - "$res/report.json" > "$res/steps.txt" 2>&1 <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
for s in r["steps"]:
    wall = "-" if s["wall_s"] is None else f"{s['wall_s']:.1f}"
    print(f"{s['name']:<11} {s['status']:<8} {wall:>7} s  {s['detail'][:160]}")
print(f"{'total':<11} {'':<8} {r['total_s']:>7.1f} s  {r['headline'][:160]}")
EOF
cat "$res/steps.txt"
tar -czf "$OUT/triage_run.tgz" -C "$OUT" triage_run
echo "wrote $OUT/triage_run.tgz ($(du -sh "$OUT/triage_run.tgz" | cut -f1))"
exit $rc
