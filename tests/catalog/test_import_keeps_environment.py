"""Importing a ktriage module changes nothing in the process's environment.

Why: the test suite imports every module (tests/hardening/test_markdown_writers.py scans the package),
and a module that set variables at import leaked them into every later test of that pytest worker:
``ktriage.catalog.jit_probe`` set KTRIAGE_REAL_DRIVER=1 (compile workers then installed no fake driver,
so kernels whose modules touch the driver at import, inductor's and fla's, failed or compiled from an
extracted copy), TRITON_ALWAYS_COMPILE and its own TRITON_CACHE_DIR. Checked in a fresh interpreter,
so that what this process imported before does not hide a change."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import importlib, json, os, pkgutil
import ktriage
before = dict(os.environ)
changed = {}
for info in pkgutil.walk_packages(ktriage.__path__, "ktriage."):
    if info.name.endswith("__main__"):
        continue
    try:
        importlib.import_module(info.name)
    except ModuleNotFoundError as exc:
        if exc.name not in ("triton", "torch"):
            raise
    now = dict(os.environ)
    diff = sorted(k for k in set(now) | set(before) if now.get(k) != before.get(k))
    if diff:
        changed[info.name] = diff
        before = now
print(json.dumps(changed))
"""


def test_importing_every_module_leaves_the_environment_alone() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=300).stdout
    assert json.loads(out.strip().splitlines()[-1]) == {}
