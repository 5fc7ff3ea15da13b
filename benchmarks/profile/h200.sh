#!/usr/bin/env bash
# ktriage profile on the GPU host (run from the repo root with .carry/profile carried; see README.md).
# .carry/profile/src: this branch's ktriage package; .carry/profile/bundles: the CPU-built bundles.
# Runs from inside .carry/profile/src: `python -m` puts the working directory first on sys.path, so
# from the repo root the checkout's own ktriage/ (without the profile verb) would shadow PYTHONPATH.
set -u
ROOT=$PWD
export PYTHONPATH=$ROOT/.carry/profile/src:$ROOT/.carry/home/packages/liger-kernel-0.5.10
export KTRIAGE_HOME=$OUT/home PYTHONUNBUFFERED=1
R=$OUT/profile; B=$ROOT/.carry/profile/bundles; mkdir -p $R
cd $ROOT/.carry/profile/src || exit 1
{ date -u +%Y-%m-%dT%H:%MZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu --format=csv
  command -v ncu; ncu --version; id -u; nproc
  python3 -c "import torch, triton, ktriage.profile.run as r; print('torch', torch.__version__, 'triton', triton.__version__, r.__file__)"
  grep -i RmProfilingAdminOnly /proc/driver/nvidia/params; } > $R/env.txt 2>&1
run() {  # name bundle [options]
  local name=$1 bundle=$2; shift 2
  local t0=$SECONDS
  timeout 150 python3 -m ktriage profile --bundle $bundle "$@" \
    --raw-dir $R/$name -o $R/$name/profile.json -o $R/$name/profile.md > $R/$name.txt 2>&1
  echo "exit $? after $((SECONDS - t0)) s" >> $R/$name.txt
}
run layer_norm_bwd_N4608 $B/ln-bwd
run embedding_bwd_input0 $B/emb-bwd
tar czf $OUT/profile.tgz -C $OUT profile
tail -n 30 $R/*.txt; cat $R/env.txt; ls -la $R/*/
