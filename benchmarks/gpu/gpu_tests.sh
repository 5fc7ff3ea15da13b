#!/usr/bin/env bash
# The GPU-marked tests on the GPU host (repo root; carry .whl, .bundles and .gpu-artifacts).
# Bundles: .bundles/gpu-test-{layer_norm,embedding}-bwd (tests/gpu/test_workload_gpu.py docstring) and
# .gpu-artifacts/runner (benchmarks/gpu/make_runner_fixtures.py), compiled on the CPU machine.
# The JIT-equivalence tests also need the catalog's Liger packages: carry .ktriage-home/packages and set JIT=1.
# .whl: ktriage's dependencies the image lacks, typer's pydantic among them (results/2026-12-04/README.md lists them).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
export KTRIAGE_HOME=/tmp/kth PYTHONUNBUFFERED=1 KTRIAGE_GPU_OUT=$OUT
export KTRIAGE_WORKLOAD_BUNDLES=.bundles/gpu-test-layer_norm-bwd:.bundles/gpu-test-embedding-bwd
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $OUT/nvidia_smi.csv
timeout ${LIMIT:-500} python3 -m pytest -q -m gpu tests/gpu -k "${K:-not torch_compile$([[ ${JIT:-0} == 1 ]] || echo ' and not jit_equivalence')}" -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -40
