#!/usr/bin/env bash
# Per-line stalls on the H200 (issue 25): `ktriage profile` of Liger 0.5.10 layer_norm bwd, TritonBench input 7
# (N=4608), Triton 3.3.1 vs 3.4.0, with ncu's SourceCounters put on source lines (profile/source.py) next to the
# compile-side line diff. Builds nothing; about 1 minute.
# Repo root, after the device prefix (pip install of .whl, PYTHONPATH=$site:$PWD, KTRIAGE_HOME=$PWD/.carry/home);
# the CPU-built bundle (README.md, "Per-line stalls") travels as $BUNDLE (default .bundles/lines-ln-bwd: carry it,
# .bundles/ is git-ignored). nvdisasm: the host's (PATH, /usr/local/cuda/bin) or the one in Triton's wheel.
# Writes $OUT/profile_lines.tgz (profile_lines/: env.txt, profile.txt, profile.json, profile.md, the ncu files
# {*.raw.csv, *.details.csv, *.source.csv, *.log, *.ncu-rep.gz} and bundle/ (the profiled cubins and manifest, so
# that the per-line document can be re-derived on the CPU: benchmarks/profile/rederive.py)).
set -u
R=$OUT/profile_lines; rm -rf $R; mkdir -p $R
B=${BUNDLE:-.bundles/lines-ln-bwd}
export PYTHONUNBUFFERED=1
cp -r "$B" $R/bundle || exit 1  # ncu's files go next to the bundle's copy, under $OUT
{ date -u +%Y-%m-%dT%H:%MZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  command -v ncu; ncu --version; id -u; grep -i RmProfilingAdminOnly /proc/driver/nvidia/params
  python3 -c "import torch, ktriage.profile.source as s; print('torch', torch.__version__, s.__file__); print('nvdisasm', s.find_nvdisasm())"
} > $R/env.txt 2>&1
t0=$SECONDS
timeout 300 python3 -m ktriage profile --bundle $R/bundle --input-id 7 --backend liger_layer_norm --raw-dir $R \
  -o $R/profile.json -o $R/profile.md > $R/profile.txt 2>&1
echo "profile exit $? after $((SECONDS - t0)) s" >> $R/profile.txt
for f in $R/*.ncu-rep; do [ -f "$f" ] && gzip "$f"; done  # the reports, compressed (ncu --import takes them unzipped)
tar czf $OUT/profile_lines.tgz -C $OUT profile_lines
cat $R/profile.txt; tail -n 40 $R/profile.md; cat $R/env.txt; ls -la $R; head -c 1500 $R/*.source.csv
