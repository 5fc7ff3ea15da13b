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
if [ -n "$extras" ]; then
  .venv/bin/python -m pip install -q -e ".[$extras]"
else
  .venv/bin/python -m pip install -q -e .
fi
