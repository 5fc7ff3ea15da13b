#!/usr/bin/env bash
# Set up and run the test suite (CPU only: GPU tests are marked `gpu` and skipped here).
# Real Triton wheels (3.3.1, 3.4.0) and ptxas releases are installed into the test home on first run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
# Typed code is part of the contract: the type check runs with the tests.
# One format and one lint for the tree ([tool.ruff] in pyproject.toml; .pre-commit-config.yaml runs the same).
.venv/bin/ruff format --check .
.venv/bin/ruff check .
.venv/bin/python -m mypy  # strict, configured in pyproject.toml ([tool.mypy])
# So is the layering: a package imports only the packages below it (docs/architecture.md).
.venv/bin/lint-imports
set +e
# --dist loadgroup: the cluster tests (xdist_group "ray_cluster") share one worker and one Ray cluster.
.venv/bin/python -m pytest -m "not gpu" -n "${KTRIAGE_TEST_JOBS:-2}" --dist loadgroup "$@"
rc=$?
set -e
# pytest exits 5 when nothing was collected: that is a failure of the suite, not a pass.
exit $rc
