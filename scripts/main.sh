#!/usr/bin/env bash
# The main job, offline (no GPU): explain two real Triton regressions on sm_90 (H100/H200).
#  1. Liger-Kernel 0.5.10 layer_norm backward, all 30 TritonBench inputs, Triton 3.3.1 -> 3.4.0
#     (register spills from an LLVM change: the frontend is to blame).
#  2. Liger-Kernel 0.5.10 embedding backward, all 16 TritonBench inputs, Triton 3.4.0 with
#     ptxas 12.4.131 -> its bundled ptxas 12.8.93 (the atomic is lowered differently: ptxas is to blame).
# Toolchains are built once under $KTRIAGE_HOME (default: ~/.cache/ktriage); reports go to ktriage-reports/ (asked for with --report).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ktriage explain liger.layer_norm --bwd --arch sm_90 \
  -t triton==3.3.1 -t triton==3.4.0 --report ktriage-reports/layer_norm_bwd_3.3.1_vs_3.4.0.md "$@"
.venv/bin/ktriage explain liger.embedding --bwd --arch sm_90 \
  -t triton==3.4.0,ptxas==12.4.131 -t triton==3.4.0 --report ktriage-reports/embedding_bwd_ptxas_12.4_vs_12.8.md "$@"
