"""``ktriage explain --lines FILE:LINE[-LINE]``: the SASS and PTX diffs restricted to the instructions
of those source lines (a reproducer-sized excerpt for a compiler bug report), checked against an
independent read of the cubins' line tables (``nvdisasm -g`` parsed here) and of the PTX's ``.loc``;
bad values are errors that name the problem and the fix."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from ktriage.home import expand_portable

pytestmark = pytest.mark.slow

ARGS = [
    "explain",
    "liger.layer_norm",
    "--bwd",
    "--input",
    "N=4608",
    "--arch",
    "sm_90",
    "-t",
    "triton==3.3.1",
    "-t",
    "triton==3.4.0",
    "-f",
    "json",
]


def _instructions_at(nvdisasm: Path, cubin: Path, kernel: str, line: int) -> int:
    text = subprocess.run([str(nvdisasm), "-g", str(cubin)], capture_output=True, text=True, check=True).stdout
    count, inside, here, fresh = 0, False, None, False
    for raw in text.splitlines():
        if m := re.match(r"^\s*\.section\s+\.text\.(\S+?),", raw):
            inside, here = m.group(1) == kernel, None
        elif inside and (m := re.match(r'^\s*//## File "([^"]+)", line (\d+)', raw)):
            if not fresh:
                here, fresh = (m.group(1), int(m.group(2))), True
        elif inside and re.match(r"^\s*/\*[0-9a-f]{4,}\*/\s+\S", raw):
            fresh = False
            count += here is not None and here[0].endswith("liger_kernel/ops/layer_norm.py") and here[1] == line
    return count


def _ptx_at(ptx: str, line: int) -> int:
    """PTX instructions after a ``.loc 1 <line>`` (file 1 is the kernel's file in Triton's PTX)."""
    n, here = 0, None
    for raw in ptx.splitlines():
        if m := re.match(r"^\s*\.loc\s+(\d+)\s+(\d+)", raw):
            here = (m.group(1), int(m.group(2)))
            continue
        t = raw.strip()
        if t and not t.startswith((".", "//", "{", "}", "$")) and t.endswith(";"):
            n += here == ("1", line)
    return n


def test_lines_restrict_both_diffs_to_one_line(run_cli, toolchain) -> None:
    out = run_cli([*ARGS, "--lines", "layer_norm.py:129"])
    assert out.exit_code == 0, out.stderr
    sass = re.search(
        r"=== SASS diff triton==3.3.1 -> triton==3.4.0, layer_norm.py:129 ===\nSASS: \d+ of (\d+) lines removed, "
        r"\d+ of (\d+) added",
        out.stdout,
    )
    ptx = re.search(
        r"=== PTX diff triton==3.3.1 -> triton==3.4.0, layer_norm.py:129 ===\nPTX: \d+ of (\d+) lines removed, "
        r"\d+ of (\d+) added",
        out.stdout,
    )
    assert sass and ptx, out.stdout[-2000:]
    import json

    doc = json.loads(out.stdout[: out.stdout.index("\n=== SASS diff")])
    results = doc["kernels"][0]["results"]
    want_sass, want_ptx = [], []
    for spec in ("triton==3.3.1", "triton==3.4.0"):
        tc = toolchain(spec)
        art = results[tc.id]["artifact"]
        want_sass.append(_instructions_at(tc.nvdisasm, expand_portable(art["cubin"]), art["kernel_name"], 129))
        want_ptx.append(_ptx_at(expand_portable(art["ptx"]).read_text(), 129))
    assert [int(sass.group(1)), int(sass.group(2))] == want_sass and want_sass[1] > want_sass[0] > 0
    assert [int(ptx.group(1)), int(ptx.group(2))] == want_ptx and want_ptx[0] > 0
    # the excerpt holds that line's spill traffic: STL/LDL only in the lines of the SASS diff
    body = out.stdout[sass.end() : out.stdout.index("=== PTX diff")]
    assert re.search(r"^\+(?:@!?P )?STL", body, re.M) and "FFMA" in body


def test_bad_lines_are_errors_with_a_fix(run_cli) -> None:
    out = run_cli([*ARGS, "--lines", "layer_norm.py"])
    assert out.exit_code == 2 and "error: --lines 'layer_norm.py' names no line" in out.stderr and "fix:" in out.stderr
    out = run_cli([*ARGS, "--lines", "nothere.py:3"])
    assert out.exit_code == 2 and "no instruction of this kernel comes from 'nothere.py'" in out.stderr
    assert "liger_kernel/ops/layer_norm.py" in out.stderr  # the fix names the files that exist
    out = run_cli([*ARGS, "--lines", "layer_norm.py:3-5"])
    assert out.exit_code == 2 and "no instruction comes from those lines" in out.stderr and "122-127" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.slow
def test_a_tail_of_lines_moving_both_ways_says_gross_and_net(toolchain) -> None:  # type: ignore[no-untyped-def]
    """The recorded TritonBench layer_norm backward K1, 3.3.1 -> 3.6.0: the main loop's four lines shown
    move +6, -1, -1, +1 of five lines that move +4 in all; the tail said "(4 of 5 lines: +5 of +4)", more
    than all of it. It now says the gross moves and the nets apart; one-way tails keep their words."""
    import ktriage.api as kt

    workload = Path(__file__).resolve().parents[2] / "benchmarks/record/h200/tb_layer_norm_bwd.workload.json.gz"
    toolchain("triton==3.3.1"), toolchain("triton==3.6.0")
    report = kt.explain(target=str(workload), toolchains=["triton==3.3.1", "triton==3.6.0"])
    md = report.to_markdown()
    assert "(4 of 5 lines shown: +7 and -2, net +5; all 5 lines: net +4)" in md
    assert "(4 of 13 lines: +871 of +1161)" in md and "+5 of +4" not in md
