"""``ktriage workload show``: a recorded workload's kernels, inputs, launch counts and what was not captured.

Rendering only (the model is ktriage.record.workload); the rows go through report/records.py, so
the table, markdown and JSON look like the other ``show`` verbs'."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ktriage.mdsafe import markdown_writer, md_text
from ktriage.record.workload import Kernel, Workload
from ktriage.report.records import kv_markdown, markdown_table, print_rows, to_json
from ktriage.schema.jsontypes import JSONObject
from ktriage.wording import plural

if TYPE_CHECKING:
    from rich.console import Console

KERNEL_COLUMNS = (
    "kernel",
    "function",
    "kind",
    "module",
    "inputs",
    "launches",
    "warps",
    "stages",
    "autotune",
    "package",
)
INPUT_COLUMNS = ("kernel", "input", "label", "grid", "launches", "config", "heuristics", "jit check")
MISSED_COLUMNS = ("function", "launches", "why")
BLOCKER_COLUMNS = ("kernel", "function", "input", "why")


def _config(choice: JSONObject | None) -> str:
    if not choice:
        return "-"
    given = choice.get("kwargs")
    kwargs = ", ".join(f"{k}={v}" for k, v in (given.items() if isinstance(given, Mapping) else ()))
    opts = ", ".join(f"{k}={choice[k]}" for k in ("num_warps", "num_stages") if k in choice)
    return "; ".join(p for p in (kwargs, opts) if p)


def kernel_rows(workload: Workload) -> list[JSONObject]:
    return [
        {
            "kernel": k.id,
            "function": k.function,
            "kind": k.kind,
            "module": k.original_module,
            "inputs": len(k.inputs),
            "launches": k.launches,
            "warps": k.inputs[0].spec.num_warps,
            "stages": k.inputs[0].spec.num_stages,
            "autotune": plural(len(k.autotune_configs), "config") if k.autotune_configs else "-",
            "package": k.package,
        }
        for k in workload.kernels
        if k.inputs
    ]


def input_rows(kernels: list[Kernel]) -> list[JSONObject]:
    return [
        {
            "kernel": k.id,
            "input": i.id,
            "label": i.label,
            "grid": "x".join(map(str, i.grid)) if i.grid else "none: cannot bench (see below)",
            "launches": i.count,
            "config": _config(i.autotune_choice),
            "heuristics": ", ".join(f"{n}={v}" for n, v in i.heuristics.items()) or "-",
            "jit check": i.jit_check or "-",
        }
        for k in kernels
        for i in k.inputs
    ]


def missed_rows(workload: Workload) -> list[JSONObject]:
    return [{"function": n.function, "launches": n.launches or "-", "why": n.why} for n in workload.not_captured]


def blocker_rows(workload: Workload) -> list[JSONObject]:
    """The inputs ``bench`` cannot replay, and why (never a silent "-" in the grid column)."""
    from ktriage.workload.recorded.bundle import bench_blockers

    return [
        {"kernel": b.kernel, "function": b.function, "input": b.input, "why": b.why} for b in bench_blockers(workload)
    ]


def summary(workload: Workload) -> JSONObject:
    rec = workload.recorded
    host: JSONObject = {
        k: workload.host[k]
        for k in ("triton", "torch", "target", "gpu", "cuda_driver", "cuda_runtime")
        if k in workload.host
    }
    if rec.get("source") == "tritonparse":  # imported (ktriage workload import), not recorded by running a program
        traces = rec.get("traces")
        origin = {
            "source": f"tritonparse traces: {', '.join(str(t) for t in (traces if isinstance(traces, list) else []))}"
        }
    else:
        command = rec.get("command")
        origin = {
            "command": " ".join(str(c) for c in (command if isinstance(command, list) else [])),
            "program": _exit(rec.get("returncode")),
        }
    return {
        "file": str(workload.path) if workload.path else None,
        **origin,
        **host,
        "kernels": len(workload.kernels),
        "inputs": sum(len(k.inputs) for k in workload.kernels),
        "launches": sum(k.launches for k in workload.kernels),
        "not captured": len(workload.not_captured),
        "cannot bench": len(blocker_rows(workload)),
    }


def _exit(code: Any) -> str:
    if code is None:
        return "unknown (read from the journal)"
    return f"exited {code}" if code >= 0 else f"killed by signal {-code}"


def show_json(workload: Workload) -> str:
    data = workload.to_json()
    data.pop("snapshots", None)
    data["snapshots"] = {d: {"files": sorted(s["files"]), "notes": s["notes"]} for d, s in workload.snapshots.items()}
    data["cannot_bench"] = blocker_rows(workload)
    return to_json(data)


@markdown_writer
def show_markdown(workload: Workload) -> str:
    lines = kv_markdown("Workload", summary(workload))
    lines += ["", "### Kernels", "", *markdown_table(KERNEL_COLUMNS, kernel_rows(workload))]
    lines += ["", "### Inputs", "", *markdown_table(INPUT_COLUMNS, input_rows(workload.kernels))]
    if workload.not_captured:
        lines += ["", "### Not captured", "", *markdown_table(MISSED_COLUMNS, missed_rows(workload))]
    blockers = blocker_rows(workload)
    if blockers:
        lines += ["", "### Cannot bench", "", *markdown_table(BLOCKER_COLUMNS, blockers)]
    notes = [f"- {md_text(k.id)}: {md_text(n)}" for k in workload.kernels for n in k.notes]
    if notes:
        lines += ["", "### Notes", "", *notes]
    return "\n".join(lines) + "\n"


def print_show(workload: Workload, console: Console) -> None:
    print_rows(console, "workload", ("key", "value"), [{"key": k, "value": v} for k, v in summary(workload).items()])
    print_rows(console, "kernels", KERNEL_COLUMNS, kernel_rows(workload), styles={"kernel": "bold"})
    print_rows(console, "inputs", INPUT_COLUMNS, input_rows(workload.kernels))
    if workload.not_captured:
        print_rows(console, "not captured", MISSED_COLUMNS, missed_rows(workload), styles={"why": "red"})
    blockers = blocker_rows(workload)
    if blockers:
        print_rows(console, "cannot bench", BLOCKER_COLUMNS, blockers, styles={"why": "red"})
    for k in workload.kernels:
        for note in k.notes:
            from rich.markup import escape

            console.print(f"note {escape(k.id)}: {escape(note)}")
