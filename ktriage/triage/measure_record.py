"""The GPU step's own recordings: flagged cells of a TritonBench operator that ktriage has no replay for
and no recorded workload of (``--workload``) get one, recorded on the GPU host from the operator's own
TritonBench run.

Why: ktriage benches a cell side by side only through a replay (layer_norm, embedding) or a recorded
workload (``ktriage record``: any operator). Asking the user to record first is one step too many on a
GPU host that has TritonBench: the triage runs ``ktriage record -o W.json -- python run.py --op X
--bwd --only BACKEND --input-id I --num-inputs N`` itself, per (op, pass, backend) of the flagged
cells, and matches each cell to the recorded kernels by shape (``recorded_match``), as for a
``--workload``. Where TritonBench is not found, the cells say how to give it.

TritonBench is found by ``KTRIAGE_TRITONBENCH`` (its checkout: the folder with ``run.py``), else by
the importable ``tritonbench`` package's checkout.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ktriage import progress
from ktriage.errors import joined
from ktriage.triage.measure_plan import WORKLOAD_GIVEN
from ktriage.triage.model import CellTriage, TriageReport
from ktriage.triage.recorded_match import Loaded, describe, load_workloads, match_cell

ENV_TRITONBENCH = "KTRIAGE_TRITONBENCH"
RECORD_TIMEOUT_S = 1800
TRITONBENCH_MODES = {"fwd": [], "bwd": ["--bwd"], "fwd_bwd": ["--fwd-bwd"], "fwd_no_grad": ["--fwd-no-grad"]}

Say = Callable[[str], None]


def tritonbench_dir() -> Path | None:
    """The TritonBench checkout (the folder holding ``run.py``), or None."""
    given = os.environ.get(ENV_TRITONBENCH)
    if given:
        return Path(given) if (Path(given) / "run.py").is_file() else None
    try:
        spec = importlib.util.find_spec("tritonbench")
    except (ImportError, ValueError):
        spec = None
    origin = getattr(spec, "origin", None) if spec is not None else None
    if not origin:
        return None
    root = Path(origin).resolve().parent.parent
    return root if (root / "run.py").is_file() else None


@dataclass
class Recording:
    """One TritonBench run to record: the flagged cells of one (op, pass, backend)."""

    op: str
    mode: str
    backend: str
    cells: list[int]  # indexes into report.cells
    input_ids: list[int]

    @property
    def name(self) -> str:
        return f"tb-{self.op}-{self.mode}-{self.backend}"

    def argv(self, python: str = sys.executable) -> list[str]:
        """TritonBench's own command for these cells: the backend alone, over the flagged inputs' range."""
        first, last = min(self.input_ids), max(self.input_ids)
        return [
            python,
            "run.py",
            "--op",
            self.op,
            *TRITONBENCH_MODES.get(self.mode, [f"--mode={self.mode}"]),
            "--metrics",
            "latency",
            "--only",
            self.backend,
            "--input-id",
            str(first),
            "--num-inputs",
            str(last - first + 1),
        ]


def recordings(report: TriageReport, unplanned: Sequence[int], baselines: Mapping[str, str]) -> list[Recording]:
    """The TritonBench runs that would give kernels to the cells ``unplanned`` (no replay, no recorded
    kernels): one per (op, pass, backend); an op's baseline is not recorded (its kernels are the host's,
    one copy for both toolchains)."""
    out: dict[tuple[str, str, str], Recording] = {}
    for i in unplanned:
        c: CellTriage = report.cells[i]
        if c.recorded is not None or c.backend == baselines.get(c.op) or c.mode not in TRITONBENCH_MODES:
            continue
        r = out.setdefault((c.op, c.mode, c.backend), Recording(c.op, c.mode, c.backend, [], []))
        r.cells.append(i)
        if c.input_id not in r.input_ids:
            r.input_ids.append(c.input_id)
    return list(out.values())


def record_missing(report: TriageReport, unplanned: Sequence[int], out_dir: Path, say: Say) -> list[str]:
    """Record the TritonBench runs of :func:`recordings` into ``out_dir`` (a GPU host) and give their
    cells the matched kernels; returns the workload files written. A run that fails is a note on its
    cells and a line of ``report.failures``; the others go on."""
    from ktriage.ops.registry import default_baselines

    todo = recordings(report, unplanned, default_baselines())
    if not todo:
        return []
    root = tritonbench_dir()
    if root is None:
        for r in todo:
            for i in r.cells:
                report.cells[i].notes.append(
                    joined(
                        f"not recorded: no TritonBench checkout found to record {r.op} {r.mode} from (set "
                        f"{ENV_TRITONBENCH} to the folder with run.py, or give ",
                        WORKLOAD_GIVEN,
                        f" from `ktriage record -- {' '.join(r.argv('python'))}`)",
                    )
                )
        return []
    written: list[str] = []
    out_dir.mkdir(parents=True, exist_ok=True)
    with progress.task("recording TritonBench runs", total=len(todo)) as step:
        for r in todo:
            _record_one(report, r, root, out_dir, say, written)
            step.advance()
    return written


def _record_one(report: TriageReport, r: Recording, root: Path, out_dir: Path, say: Say, written: list[str]) -> None:
    """One recording and the matching of its cells (see :func:`record_missing`)."""
    path = out_dir / f"{r.name}.workload.json"
    argv = [sys.executable, "-m", "ktriage", "record", "-o", str(path), "--", *r.argv()]
    say(
        f"recording TritonBench {r.op} {r.mode} --only {r.backend} (inputs {min(r.input_ids)}-{max(r.input_ids)}) "
        f"for the GPU re-run: {' '.join(r.argv('python'))}"
    )
    why = _run(argv, root)
    if why is None and not path.is_file():
        why = "it wrote no workload"
    if why is not None:
        report.failures.append(f"recording {r.op} {r.mode} {r.backend} for the GPU re-run: {why}")
        for i in r.cells:
            report.cells[i].notes.append(
                f"not recorded: `ktriage record -- {' '.join(r.argv('python'))}` failed: {why}"
            )
        return
    written.append(str(path))
    loaded: list[Loaded] = load_workloads([str(path)])
    for i in r.cells:
        c = report.cells[i]
        match, notes = match_cell(c, None, loaded)
        c.notes += notes
        if match is not None:
            c.recorded = match
            c.notes.append("recorded by the triage on this GPU host: " + describe(match))


def _run(argv: list[str], cwd: Path) -> str | None:
    """Run one recording; None when it exited 0, else why (its last output line)."""
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=RECORD_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return f"it ran past {RECORD_TIMEOUT_S} s"
    except OSError as exc:
        return f"it could not start: {exc}"
    if proc.returncode == 0:
        return None
    lines = [ln.strip() for ln in (proc.stdout + "\n" + proc.stderr).splitlines() if ln.strip()]
    # record refused (no GPU here, a bad -o): its error, after the program's own last words, which may say why
    refused = next((i for i, ln in enumerate(lines) if ln.startswith("error: ")), None)
    if refused is not None:
        before = f"{lines[refused - 1]}; " if refused > 0 else ""
        return f"exit {proc.returncode}: {before}{lines[refused].removeprefix('error: ')}"
    # record's summary ("recorded N kernels ... (the program exited 1)") follows the program's own last words
    summary = next((i for i, ln in enumerate(lines) if ln.startswith("recorded ") and " kernels" in ln), None)
    last = lines[summary - 1] if summary else (lines[-1] if lines else "no output")
    tail = f"; {lines[summary]}" if summary is not None else ""
    return f"exit {proc.returncode}: {last}{tail}"
