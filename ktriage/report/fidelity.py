"""Render JIT-equivalence rows (ktriage/fidelity/harness.py) as a kernels x Triton-versions table."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ktriage.fidelity.harness import Row
from ktriage.mdsafe import markdown_writer

_MARK = {"identical": "=", "differs": "DIFF", "error": "ERR", "skipped": "-"}


def summary(rows: Sequence[Row]) -> dict[str, int]:
    out: dict[str, int] = {}
    for row in rows:
        out[row.status] = out.get(row.status, 0) + 1
    return out


@markdown_writer
def to_markdown(rows: Sequence[Row], *, command: str = "", machine: str = "", date: str = "") -> str:
    """The table (``=`` byte-identical cubin and compile inputs, ``-`` not applicable), then every
    non-identical row with its detail, once for the versions it is the same on (a spec file's kernel
    that did not load has one error, whatever the version)."""
    versions = list(dict.fromkeys(r.triton_version for r in rows))
    cases = list(dict.fromkeys(r.case for r in rows))
    cell = {(r.case, r.triton_version): r for r in rows}
    lines = ["# JIT equivalence: ktriage's cubin vs the JIT's", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    if machine or date:
        lines += [f"Machine: {machine}. Date: {date}.", ""]
    counts = summary(rows)
    lines += [
        "Result: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())),
        "",
        "`=`: same signature, constants and attributes passed to `triton.compile`, and a byte-identical "
        "cubin; `-`: the kernel cannot exist on that Triton (the row's JSON says why); `DIFF`/`ERR`: see below. H = `@triton.heuristics`, "
        "A = `@triton.autotune` (the config the fake benchmarker picked is the one compared).",
        "",
    ]
    lines.append("| kernel | " + " | ".join(versions) + " |")
    lines.append("|---|" + "---|" * len(versions))
    for case in cases:
        ran = [r for r in rows if r.case == case and r.status != "skipped"]
        tags = "".join(
            t for t, on in (("H", any(r.heuristics for r in ran)), ("A", any(r.autotuned for r in ran))) if on
        )
        name = f"`{case}`" + (f" ({tags})" if tags else "")
        lines.append(
            f"| {name} | "
            + " | ".join(_MARK.get(cell[(case, v)].status, "?") if (case, v) in cell else "" for v in versions)
            + " |"
        )
    problems: dict[tuple[str, str, str], list[str]] = {}  # the same outcome on several versions: one line
    for r in rows:
        if r.status in ("differs", "error"):
            problems.setdefault((r.case, r.status, r.detail), []).append(r.triton_version)
    if problems:
        lines += ["", "## Not identical", ""]
        lines += [
            f"- `{case}` on {', '.join(versions)}: {status}: {detail}"
            for (case, status, detail), versions in problems.items()
        ]
    return "\n".join(lines) + "\n"


def to_json(rows: Sequence[Row], **extra: Any) -> str:
    return json.dumps(
        {"format_version": 1, **extra, "summary": summary(rows), "rows": [r.to_json() for r in rows]}, indent=1
    )
