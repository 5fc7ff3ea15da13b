"""tests/tune/test_one_model.py imports its helper by the module's name before the tests tree
(``from test_tune_autotune import run_in_toolchain``): that file is edited on another branch, so it is
moved unchanged and the old name is an alias of tests/tune/test_autotune.py until the import is updated
(then delete this file)."""

from __future__ import annotations

import importlib
import sys

sys.modules.setdefault("test_tune_autotune", importlib.import_module("tests.tune.test_autotune"))
