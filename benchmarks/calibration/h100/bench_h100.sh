#!/usr/bin/env bash
# Issue 24 on a second GPU: the corpus and the layer_norm bwd sweep benched on an H100, to score the model
# fitted on the H200 (`ktriage.predict.params.json`) on measurements it never saw. One device call (< 600 s).
# CPU machine first (the same bundles as the H200's: 3.6.0 the reference, 3.3.1, 3.4.0, sm_90):
#   BUNDLES=.bundles/corpus TGZ=.carry/corpus-bundles.tgz bash benchmarks/corpus/build.sh bundles
#   .venv/bin/ktriage bench --op layer_norm --bwd --only liger_layer_norm -t triton==3.3.1 -t triton==3.4.0 \
#       -t triton==3.6.0 --compile-only --bundle .bundles/ln-sweep
#   mkdir -p .whl-lite && cp .whl/*.whl .whl-lite/ && rm .whl-lite/greenlet-*  # SQLAlchemy stays: bench stores runs
#   tar cf - -C .bundles corpus ln-sweep | xz -T2 -9 > .carry/h100-bundles.tar.xz     # 2.4 MB (gzip: 8.7 MB)
# The tree that travels is at most 64 MiB and this checkout is ~59 MB: with SQLAlchemy's 4.7 MB wheel the whole
# corpus does not fit in one call; put half of the bundle folders in each of two tarballs (two calls).
# GPU host, repo root, carrying .whl-lite and .carry/h100-bundles.tar.xz:
#   bash benchmarks/calibration/h100/bench_h100.sh   -> $OUT/ln_sweep.json, $OUT/bench.tgz (benchmarks/corpus/bench_h200.sh's)
set -uo pipefail
OUT=${OUT:?set OUT}
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" .whl-lite/*.whl > /dev/null 2>&1
export PYTHONPATH="$site:$PWD" KTRIAGE_HOME=/tmp/kth-h100 PYTHONUNBUFFERED=1
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter='data')" \
  .carry/h100-bundles.tar.xz /tmp/h100b
tar czf .carry/corpus-bundles.tgz -C /tmp/h100b corpus  # what bench_h200.sh unpacks
t=$SECONDS
timeout 150 python3 -m ktriage bench --bundle /tmp/h100b/ln-sweep --op layer_norm --bwd --only liger_layer_norm \
  --artifact-timing kernel --max-time 1 -o "$OUT/ln_sweep.json" > "$OUT/ln_sweep.txt" 2>&1
echo "ln_sweep exit=$? wall_s=$((SECONDS - t))" | tee "$OUT/ln_walls.txt"
# the corpus: the H200's script (smallest bundle first, none started after DEADLINE), ktriage from this tree
mkdir -p .whl && cp -n .whl-lite/*.whl .whl/ 2>/dev/null
KT_SRC=$PWD DEADLINE=${DEADLINE:-400} bash benchmarks/corpus/bench_h200.sh > "$OUT/corpus_stdout.txt" 2>&1
tail -3 "$OUT/corpus_stdout.txt"
