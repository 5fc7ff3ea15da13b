"""One progress helper for the library's long steps (issue 23, point 6): a bundle's compiles (done of
total), bisect rounds, fixes tried go to the CLI's display, and nothing shows where stderr is no
terminal. The display here is a named FAKE (it records what it was told); the steps are real: a real
recorded bundle compiled with Triton 3.4.0, the real search with the search tests' fake predicate."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from ktriage import progress
from ktriage.cli.console import make_progress, show_progress
from ktriage.compile.compiler import Compiler
from ktriage.record.workload import load_workload
from ktriage.workload.recorded.bundle import build_recorded_bundle

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bisect"))
from test_search import FakeStepPredicate

from ktriage.bisect.candidate import Candidate
from ktriage.bisect.search import run_search

WORKLOAD = Path(__file__).resolve().parents[2] / "benchmarks" / "record" / "h200" / "tb_rms_norm_fwd.workload.json.gz"


class FakeDisplay:
    """A FAKE progress display: records the tasks, their totals, advances and descriptions."""

    def __init__(self) -> None:
        self.tasks: dict[int, dict[str, Any]] = {}

    def add_task(self, description: str, *, total: float | None = None) -> int:
        self.tasks[len(self.tasks)] = {
            "description": description,
            "total": total,
            "done": 0,
            "said": [],
            "removed": False,
        }
        return len(self.tasks) - 1

    def advance(self, task_id: int, advance: float = 1) -> None:
        self.tasks[task_id]["done"] += advance

    def update(self, task_id: int, **fields: Any) -> None:
        self.tasks[task_id]["said"].append(fields.get("description"))

    def remove_task(self, task_id: int) -> None:
        self.tasks[task_id]["removed"] = True


def test_a_bundles_compiles_report_done_of_total(toolchain, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    tc = toolchain("triton==3.4.0")
    display = FakeDisplay()
    with progress.showing(display), Compiler(jobs=1, cache_dir=tmp_path / "art") as compiler:
        build_recorded_bundle(load_workload(WORKLOAD), [tc], tmp_path / "b", compiler=compiler, kernels=["K0"])
    (task,) = display.tasks.values()
    assert task["description"].startswith("compiling 1 recorded kernel input x 1 toolchain")
    assert (task["total"], task["done"], task["removed"]) == (1, 1, True)


def test_bisect_rounds_are_reported() -> None:
    cands = [Candidate(i, f"c{i}", f"c{i}") for i in range(9)]
    display = FakeDisplay()
    with progress.showing(display):
        result = run_search(cands, FakeStepPredicate(5))
    (task,) = display.tasks.values()
    assert task["description"] == "bisect 9 candidates" and task["removed"]
    rounds = [s for s in task["said"] if "round" in s]
    assert len(rounds) == result.rounds and "preflight: c0 and c8" in task["said"][0]


def test_no_display_no_cost_and_quiet_off_a_terminal(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    with progress.task("nothing shows this", total=3) as step:  # no display current: a no-op
        step.advance()
        step.say("still nothing")
    pipe = Console(file=io.StringIO(), force_terminal=False)
    monkeypatch.delenv("KTRIAGE_PROGRESS", raising=False)
    assert not show_progress(pipe)
    assert show_progress(Console(file=io.StringIO(), force_terminal=True))
    monkeypatch.setenv("KTRIAGE_PROGRESS", "1")
    assert show_progress(pipe)
    monkeypatch.setenv("KTRIAGE_PROGRESS", "0")
    with make_progress(pipe) as bars:  # the verbs' display is the library's display while entered
        with progress.task("library step", total=2) as step:
            step.advance()
            assert [t.description for t in bars.tasks] == ["library step"] and bars.tasks[0].completed == 1
    assert pipe.file.getvalue() == ""  # type: ignore[attr-defined]
