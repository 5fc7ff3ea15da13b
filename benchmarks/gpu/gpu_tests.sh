#!/usr/bin/env bash
# The GPU-marked tests on the GPU host (repo root; carry .whl, .bundles and .gpu-artifacts).
# Bundles: .bundles/gpu-test-{layer_norm,embedding}-bwd (tests/gpu/test_workload_gpu.py docstring) and
# .gpu-artifacts/runner (benchmarks/gpu/make_runner_fixtures.py), compiled on the CPU machine.
# The JIT-equivalence tests also need the catalog's Liger packages under /tmp/kth/packages, then JIT=1. The tree
# allows 64 MiB, so carry them packed: tar -C .ktriage-home -czf .jitpkgs.tgz packages/liger-kernel-{0.5.10,0.8.5}
# (add .jitpkgs.tgz to .git/info/exclude), and on the host: mkdir -p /tmp/kth && tar -C /tmp/kth -xzf .jitpkgs.tgz
# .whl: ktriage's dependencies the image lacks (results/2026-12-05/README.md lists them).
set -u
python3 -m pip install -q --upgrade --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
# tests/conftest.py points KTRIAGE_HOME at KTRIAGE_TEST_HOME (default: the repo's .ktriage-home), so set both.
export KTRIAGE_HOME=/tmp/kth KTRIAGE_TEST_HOME=/tmp/kth PYTHONUNBUFFERED=1 KTRIAGE_GPU_OUT=$OUT
export KTRIAGE_WORKLOAD_BUNDLES=.bundles/gpu-test-layer_norm-bwd:.bundles/gpu-test-embedding-bwd
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $OUT/nvidia_smi.csv
timeout ${LIMIT:-500} python3 -m pytest -q -m gpu tests/gpu -k "${K:-not torch_compile$([[ ${JIT:-0} == 1 ]] || echo ' and not jit_equivalence')}" -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -40
