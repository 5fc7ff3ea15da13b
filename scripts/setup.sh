#!/usr/bin/env bash
# Create .venv (if missing) and install ktriage into it, with the test extras when asked.
# Used by scripts/main.sh and scripts/test.sh; safe to run again (a no-op when up to date).
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
# The test extras include ray (the cluster extra: tests/cluster/ start a real Ray cluster); a user who wants
# only the Ray backend installs `.[cluster]`.
if [ -n "$extras" ]; then
  .venv/bin/python -m pip install -q -e ".[$extras]"
else
  .venv/bin/python -m pip install -q -e .
fi
# [tool.ktriage] no_deps_dependencies: packages whose own pins conflict with ktriage's (pyproject.toml says
# why for each); installed without their dependencies, which ktriage's cover.
mapfile -t no_deps < <(.venv/bin/python - <<'PY'
import sys
try:
    import tomllib
except ImportError:
    import tomli as tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f).get("tool", {}).get("ktriage", {}).get("no_deps_dependencies", [])))
PY
)
if [ "${#no_deps[@]}" -gt 0 ] && [ -n "${no_deps[0]}" ]; then
  .venv/bin/python -m pip install -q --no-deps "${no_deps[@]}"
fi
