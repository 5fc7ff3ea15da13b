#!/usr/bin/env bash
# Issue 24 on a second GPU: the corpus and the layer_norm bwd sweep benched on an H100, to score the model
# fitted on the H200 (`ktriage.predict.params.json`) on measurements it never saw. Two device calls (HALF=1, 2).
# CPU machine first (the same bundles as the H200's: 3.6.0 the reference, 3.3.1, 3.4.0, sm_90):
#   BUNDLES=.bundles/corpus TGZ=.carry/corpus-bundles.tgz bash benchmarks/corpus/build.sh bundles
#   .venv/bin/ktriage bench --op layer_norm --bwd --only liger_layer_norm -t triton==3.3.1 -t triton==3.4.0 \
#       -t triton==3.6.0 --compile-only --bundle .bundles/ln-sweep
#   mkdir -p .whl-lite && cp .whl/*.whl .whl-lite/ && rm .whl-lite/greenlet-*  # SQLAlchemy stays: bench stores runs
#   tar cf - -C .bundles corpus ln-sweep | xz -T2 -9 > .carry/h100-bundles.tar.xz     # 2.4 MB (gzip: 8.7 MB)
# The tree that travels is at most 64 MiB (this checkout is ~55 MB of files): .whl-lite (7 MB, SQLAlchemy's wheel
# included) and the xz tarball fit; the time does not (51 bundles at 10..17 s), hence HALF.
# GPU host, repo root, carrying .whl-lite and .carry/h100-bundles.tar.xz (README.md: how it ran on 2026-12-05):
#   HALF=1 DEADLINE=470 bash benchmarks/calibration/h100/bench_h100.sh   -> $OUT/bench.tgz (bench_h200.sh's)
#   HALF=2 DEADLINE=470 bash benchmarks/calibration/h100/bench_h100.sh   (+ $OUT/ln_sweep.json where ln-sweep is packed)
set -uo pipefail
OUT=${OUT:?set OUT}
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" .whl-lite/*.whl > /dev/null 2>&1
export PYTHONPATH="$site:$PWD" KTRIAGE_HOME=/tmp/kth-h100 PYTHONUNBUFFERED=1
rm -rf /tmp/h100b  # a warm machine keeps /tmp between calls
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter='data')" \
  .carry/h100-bundles.tar.xz /tmp/h100b
# HALF=1 or 2: only every other corpus bundle in size order (the first, third, ... or the second, fourth, ...;
# apparent bytes, then name, the same order on any filesystem), so the corpus (51 bundles, 10..17 s each on the
# H200) goes in two calls of about 300 s; unset: all of them. Without ln-sweep in the tarball, no sweep.
if [ -n "${HALF:-}" ]; then
  du -sb /tmp/h100b/corpus/*/ | sort -k1,1n -k2,2 | awk '{print $2}' | awk -v h="$HALF" 'NR % 2 != h % 2' | xargs -r rm -rf
fi
tar czf .carry/corpus-bundles.tgz -C /tmp/h100b corpus  # what bench_h200.sh unpacks
if [ -d /tmp/h100b/ln-sweep ]; then
  t=$SECONDS
  timeout 150 python3 -m ktriage bench --bundle /tmp/h100b/ln-sweep --op layer_norm --bwd --only liger_layer_norm \
    --artifact-timing kernel --max-time 1 -o "$OUT/ln_sweep.json" > "$OUT/ln_sweep.txt" 2>&1
  echo "ln_sweep exit=$? wall_s=$((SECONDS - t))" | tee "$OUT/ln_walls.txt"
fi
# the corpus: the H200's script (smallest bundle first, none started after DEADLINE), ktriage from this tree
mkdir -p .whl && cp -n .whl-lite/*.whl .whl/ 2>/dev/null
KT_SRC=$PWD DEADLINE=${DEADLINE:-400} bash benchmarks/corpus/bench_h200.sh > "$OUT/corpus_stdout.txt" 2>&1
tail -3 "$OUT/corpus_stdout.txt"
