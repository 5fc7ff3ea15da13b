#!/usr/bin/env bash
# A second, independent GPU run of the calibration's cells (the replicate): the same bundles benched again
# in new processes, to measure how often the GPU's own verdicts reproduce. Run on the GPU host from the repo
# root, carrying .whl (ktriage's pure-Python wheels) and the bundle tarball TGZ (build_bundles.sh here).
#   TGZ=.carry/rep-a.tgz OUT=... bash benchmarks/calibration/replicate/replicate_h200.sh
# -> $OUT/replicate.tgz: NAME.json (results), NAME.txt (console), walls.txt, env.txt. Bundles run in the
# tarball's list order (list.txt: NAME and its bench options); none starts after DEADLINE seconds, and the
# tarball is re-packed after each bundle, so what ran always comes back. SKIP_FILE: names (one a line) an
# earlier call already benched. LIST: another list (names and options) to run, in its order.
set -uo pipefail
OUT=${OUT:?set OUT} TGZ=${TGZ:?set TGZ to the bundle tarball} DEADLINE=${DEADLINE:-500}
start=$SECONDS work=/tmp/replicate
rm -rf "$work" /tmp/rb && mkdir -p "$work" /tmp/rb
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > "$work/pip.log" 2>&1
export PYTHONPATH="/tmp/site:$PWD" KTRIAGE_HOME=/tmp/kth PYTHONUNBUFFERED=1
tar xzf "$TGZ" -C /tmp/rb
{ date -u +%FT%TZ  # (the device's copy of the tree carries no current git metadata: README.md names the commit)
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
  python3 -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
} > "$work/env.txt" 2>&1
python3 -c "import torch, triton, scipy.stats" > /dev/null 2>&1  # warm the page cache once, untimed
pack() { tar czf "$OUT/replicate.tgz" -C "$work" --exclude=pip.log .; }
while read -r name opts; do
  [ -n "$name" ] || continue
  if [ -n "${SKIP_FILE:-}" ] && grep -qx "$name" "$SKIP_FILE"; then continue; fi  # done by an earlier call
  if (( SECONDS - start > DEADLINE )); then echo "$name not started: deadline" >> "$work/walls.txt"; continue; fi
  t0=$SECONDS
  # shellcheck disable=SC2086  # opts are the bundle's bench options, word-split on purpose
  timeout -k 5 150 python3 -m ktriage bench --bundle "/tmp/rb/$name" $opts -o "$work/$name.json" > "$work/$name.txt" 2>&1
  echo "$name exit=$? wall_s=$((SECONDS - t0)) at_s=$((SECONDS - start))" | tee -a "$work/walls.txt"
  pack
done < "${LIST:-/tmp/rb/list.txt}"
echo "total_s=$((SECONDS - start))" >> "$work/walls.txt"
pack; ls -la "$OUT"
