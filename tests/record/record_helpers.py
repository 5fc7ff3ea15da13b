"""Helpers of the record tests: record a program through the real CLI, with only the GPU driver faked.

The "program" is Triton's real launch path without a GPU: ktriage/insitu/jitrun.py (the fidelity
harness's JIT side) in a toolchain's interpreter, launching a library's kernel with the values its
host code passes. ``ktriage record`` injects its hook from outside (sitecustomize), as on a GPU host.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ktriage.cli.app import main
from ktriage.compile.compiler import SUPPORT_PACKAGES
from ktriage.fidelity.harness import JITRUN_SCRIPT
from ktriage.fidelity.model import FidelityCase
from ktriage.spec.packages import ensure_package

INSITU = JITRUN_SCRIPT.parent


def jitrun_request(cases: Sequence[FidelityCase], out_dir: Path) -> Path:
    """A jitrun.py request launching each case as its library would (no priming kernel)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    items: list[dict[str, Any]] = []
    for c in cases:
        package = c.launch.package
        sys_path = (
            [str(ensure_package(package)), *(str(ensure_package(r)) for r in SUPPORT_PACKAGES)] if package else []
        )
        items.append(
            {
                "id": c.name,
                "source": c.launch.source,
                "sys_path": sys_path,
                "args": c.launch.encoded_args(),
                "options": c.launch.options() if c.pass_options else {},
                "grid": list(c.launch.grid),
                "autotune_pick": c.autotune_pick,
            }
        )
    request = {"target_cc": 90, "prime": False, "out_dir": str(out_dir), "cases": items}
    path = out_dir / "request.json"
    path.write_text(json.dumps(request))
    return path


def record_cli(output: Path, command: Sequence[str]) -> int:
    return main(["record", "-o", str(output), "--", *command])


def record_cases(python: Path, cases: Sequence[FidelityCase], work: Path) -> tuple[int, Path]:
    request = jitrun_request(cases, work / "jit")
    output = work / "W.json"
    code = record_cli(output, [str(python), str(JITRUN_SCRIPT), str(request), str(work / "jit" / "result.json")])
    return code, output
