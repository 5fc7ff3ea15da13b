#!/usr/bin/env bash
# Issue 23's corpus, step 3 (GPU host): every corpus bundle benched side by side (3.6.0 = reference, 3.3.1, 3.4.0),
# one process per bundle, with differential correctness (each toolchain's results against the reference's).
#   GPU host, repo root; carried: .whl (ktriage's pure-Python dependencies), .carry/kt (a clean export of the
#   commit: git archive HEAD ktriage), .carry/corpus-bundles.tgz (build.sh bundles)
#     bash benchmarks/corpus/bench_h200.sh         -> $OUT/bench.tgz: NAME.json (results file), NAME.md, NAME.txt,
#                                                     NAME.compare.md (compare --toolchains), env.txt, walls.txt
# Bundles run smallest first; none starts after DEADLINE seconds, so what ran always comes back.
set -uo pipefail
OUT=${OUT:?set OUT to the folder the tarball goes to}
DEADLINE=${DEADLINE:-500} MAX_TIME=${MAX_TIME:-0.6}
repo=$(pwd) start=$SECONDS
work=/tmp/corpus-bench; rm -rf "$work"; mkdir -p "$work"
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" .whl/*.whl > "$work/pip.log" 2>&1
export PYTHONPATH="$site:${KT_SRC:-$repo/.carry/kt}" KTRIAGE_HOME="$work/home" PYTHONUNBUFFERED=1
rm -rf /tmp/cb; mkdir -p /tmp/cb && tar xzf .carry/corpus-bundles.tgz -C /tmp/cb
# (emptied first: a warm machine keeps /tmp between calls, and an earlier call's bundles would run again)
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
  python3 -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
} > "$work/env.txt" 2>&1
python3 -c "import torch, triton, scipy.stats" > /dev/null 2>&1  # warm the page cache once, untimed
pack() { tar czf "$OUT/bench.tgz" -C "$work" --exclude=home --exclude=pip.log .; }
for b in $(du -s /tmp/cb/corpus/*/ | sort -n | awk '{print $2}') /tmp/cb/corpus39/*/; do  # corpus39: does driver 580 load Triton 3.9.0 cubins?
  name=$(basename "$b")
  [ -f "$b/manifest.json" ] || continue
  if (( SECONDS - start > DEADLINE )); then echo "$name not started: deadline" >> "$work/walls.txt"; continue; fi
  t0=$SECONDS
  timeout -k 5 150 python3 -m ktriage bench --bundle "$b" --max-time "$MAX_TIME" --min-samples 10 \
    -o "$work/$name.json" -o "$work/$name.md" > "$work/$name.txt" 2>&1
  rc=$?
  timeout 60 python3 -m ktriage compare "$work/$name.json" --toolchains -o "$work/$name.compare.md" > /dev/null 2>&1
  echo "$name exit=$rc wall_s=$((SECONDS - t0))" | tee -a "$work/walls.txt"
  pack
done
echo "total_s=$((SECONDS - start))" >> "$work/walls.txt"
pack; ls -la "$OUT"
