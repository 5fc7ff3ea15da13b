"""The autotune hook imports only what a user's Triton environment has.

``ktriage.tune.autotune`` is imported inside the environment that runs the user's kernels (a toolchain's
interpreter, a training job's), which has Triton and torch but none of the CLI's or the store's libraries.
The slow tests in test_autotune.py run it in a real toolchain environment; this one fails in seconds when a
new import pulls one of those libraries onto the hook's path (as a range parser that imported the spec file
reader, and with it msgspec, once did).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

# What the CLI, the store and the spec file reader need, and a Triton environment does not have.
NOT_IN_A_TRITON_ENVIRONMENT = ("msgspec", "sqlalchemy", "typer", "click", "rich", "platformdirs")


def test_the_autotune_hook_imports_none_of_the_tools_libraries() -> None:
    code = textwrap.dedent(
        f"""
        import sys
        blocked = {NOT_IN_A_TRITON_ENVIRONMENT!r}

        class Absent:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in blocked:
                    raise ModuleNotFoundError(f"No module named {{name!r}} (absent from a Triton environment)")
                return None

        sys.meta_path.insert(0, Absent())
        import ktriage.tune.autotune
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
