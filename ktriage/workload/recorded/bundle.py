"""A bundle of a recorded workload (``ktriage record``): every (kernel, input) compiled by every toolchain.

Why a bundle: the GPU host measures from cubins alone (no toolchain, no Triton compile, no kernel
source: ``ktriage.workload.bundles.format``). The workload's specs are compiled HERE, from its source
snapshots, and only the cubins, their launch ABI and what a replay needs of each recorded input
travel: the argument descriptions (dtype, shape, strides, storage size, small integer values,
scalars) and the grid. The format is the op bundles' (one loader, cubin hashes and ABIs checked);
``mode`` is ``"recorded"`` and ``inputs`` lists the entries below instead of an op's input cases.

An entry is one (kernel, recorded input), numbered across the workload in its order (``id``): the
number is the cells' ``input_id``, so the labels of different kernels never collide in
``ktriage compare``, and the same workload file gives the same numbers on every run.
"""

from __future__ import annotations

import datetime as _dt
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ktriage import progress
from ktriage.errors import FormatError, KtriageError, SpecError, joined, run_as, spelled, worded
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.model import KernelSpec
from ktriage.spec.select import KERNELS, RecordedInput, select_recorded, select_recorded_kernels
from ktriage.wording import plural
from ktriage.workload.bundles.format import (
    FORMAT,
    Bundle,
    artifact_entry,
    check_bundle_folder,
    load_bundle,
    write_manifest,
)
from ktriage.workload.recorded.args import LaunchPlan, plan_launch, short_label

if TYPE_CHECKING:
    from ktriage.compile.compiler import Compiler
    from ktriage.record.workload import Kernel, Workload
    from ktriage.toolchain.manager import Toolchain

RECORDED_MODE = "recorded"


@dataclass(frozen=True)
class Entry:
    """One (kernel, recorded input) of a recorded bundle."""

    id: int
    kernel: str  # "K3"
    function: str
    input: int  # the recorded input's id within its kernel
    label: str  # short (args.short_label)
    recorded_label: str
    count: int  # launches the program made with it
    spec_key: str
    args: list[list[Any]]
    grid: list[int] | None

    @property
    def backend(self) -> str:
        """The cells' backend: the kernel id and function, e.g. ``K3:_rms_norm_backward_kernel``."""
        return f"{self.kernel}:{self.function}"

    def plan(self, spec: KernelSpec) -> LaunchPlan:
        return plan_launch(
            self.args, spec.signature, self.grid, where=f"{self.backend} input {self.input}", constexprs=spec.constexprs
        )

    def to_json(self) -> JSONObject:
        return {
            "id": self.id,
            "kernel": self.kernel,
            "function": self.function,
            "input": self.input,
            "label": self.label,
            "recorded_label": self.recorded_label,
            "count": self.count,
            "spec": self.spec_key,
            "args": self.args,
            "grid": self.grid,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Entry:
        return cls(
            int(data["id"]),
            str(data["kernel"]),
            str(data["function"]),
            int(data["input"]),
            str(data["label"]),
            str(data.get("recorded_label", "")),
            int(data.get("count", 1)),
            str(data["spec"]),
            list(data["args"]),
            data.get("grid"),
        )


def workload_name(path: Path | str) -> str:
    """The cells' op: the file name without ``.gz``, ``.json`` and a ``.workload`` suffix (``tb_rms_norm_bwd``):
    a gzipped workload names the same cells as the plain one."""
    name = Path(path).name
    for suffix in (".gz", ".journal", ".json", ".workload"):
        name = name.removesuffix(suffix)
    return name or "workload"


# The step that lists a workload's kernels and inputs, as each reader runs it (errors.run_as).
_WORKLOAD_SHOW = run_as("kt.workload_show(path='W.json')", "ktriage workload show W.json")


def select_kernels(
    workload: Workload, kernels: Sequence[str] | None, inputs: Sequence[str] | None
) -> list[tuple[Kernel, list[int]]]:
    """The kernels ``--kernel`` names (an id such as K3, a function name, or K3:function as the reports
    print it: ``ktriage.spec.select.select_recorded_kernels``) and of each the inputs
    ``--input`` names (one rule: ``ktriage.spec.select.select_recorded``: a recorded input id, its label,
    the label bench's and compare's reports print, the short label or range explain prints); an unknown
    name is an error listing the choices, a short label that several inputs have is refused."""
    chosen = list(workload.kernels)
    if kernels:
        positions = select_recorded_kernels(kernels, [(k.id, k.function) for k in chosen], "the workload")
        chosen = [chosen[n] for n in positions]
    pairs = [(k, i) for k in chosen for i in k.inputs]
    if not inputs:
        out = [(k, [i.id for i in k.inputs]) for k in chosen if k.inputs]
        if not out:
            raise SpecError(
                "the chosen kernels have no recorded input",
                worded(
                    lambda o: (
                        f"choose {spelled(KERNELS, o)} among the kernels with inputs that "
                        f"{spelled(_WORKLOAD_SHOW, o)} lists"
                    )
                ),
            )
        return out
    recorded = [RecordedInput(k.id, k.function, i.id, i.label, short_label(i.args, i.spec.signature)) for k, i in pairs]
    where = "the workload" + (worded(lambda o: f"'s {o('kernels', '--kernel', list(kernels))}") if kernels else "")
    named = {(pairs[n][0].id, pairs[n][1].id) for n in select_recorded(inputs, recorded, where)}
    out = [(k, [i.id for i in k.inputs if (k.id, i.id) in named]) for k in chosen]
    return [(k, ids) for k, ids in out if ids]


def workload_entries(
    workload: Workload, kernels: Sequence[str] | None = None, inputs: Sequence[str] | None = None
) -> list[tuple[Entry, KernelSpec]]:
    """Every selected (kernel, input) as an entry and its spec, numbered in the workload's order
    (numbers count all the workload's inputs, so a selection keeps each entry's number)."""
    selected = {k.id: set(ids) for k, ids in select_kernels(workload, kernels, inputs)}
    workload.materialize()  # the spec keys hash the snapshot's source
    out: list[tuple[Entry, KernelSpec]] = []
    number = 0
    for k in workload.kernels:
        labels: dict[str, int] = {}
        for i in k.inputs:
            if i.id in selected.get(k.id, ()):
                label = short_label(i.args, i.spec.signature)
                labels[label] = labels.get(label, 0) + 1
                if labels[label] > 1:
                    label = f"{label} #{i.id}"
                out.append(
                    (
                        Entry(number, k.id, k.function, i.id, label, i.label, i.count, i.spec.key(), i.args, i.grid),
                        i.spec,
                    )
                )
            number += 1
    return out


def build_recorded_bundle(
    workload: Workload,
    toolchains: Sequence[Toolchain],
    out_dir: Path,
    *,
    compiler: Compiler,
    kernels: Sequence[str] | None = None,
    inputs: Sequence[str] | None = None,
) -> Path:
    """Compile the selected entries of ``workload`` with every toolchain into a bundle at ``out_dir``
    (for the recording host's target, which each spec carries). A failed compile is recorded for its
    (spec, toolchain), and its cells report it on the GPU host."""
    from ktriage.compile.compiler import Artifact

    if not toolchains:
        raise SpecError(
            "no toolchain given for the bundle",
            worded(
                lambda o: (
                    f"pass the toolchains to compare, e.g. {o('toolchains', '-t', ['triton==3.3.1', 'triton==3.4.0'])}"
                )
            ),
        )
    pairs = workload_entries(workload, kernels, inputs)
    specs: dict[str, KernelSpec] = {}
    for entry, spec in pairs:
        specs.setdefault(entry.spec_key, spec)
    entries = [e for e, _ in pairs]
    out_dir = Path(out_dir)
    name = workload_name(workload.path or "workload")
    # before the compile: a manifest.json of someone else's, or another workload's bundle, is kept
    check_bundle_folder(out_dir, replacing=(name, RECORDED_MODE))
    (out_dir / "cubins").mkdir(parents=True, exist_ok=True)
    with progress.task(
        f"compiling {plural(len(specs), 'recorded kernel input')} x {plural(len(toolchains), 'toolchain')}",
        total=len(specs) * len(toolchains),
    ) as step:
        outcomes = compiler.compile_many(
            list(specs.values()), list(toolchains), on_done=step.callback
        )  # (spec, toolchain) order
    artifacts: dict[str, JSONObject] = {}
    for (key, tc), outcome in zip([(k, t) for k in specs for t in toolchains], outcomes, strict=True):
        if isinstance(outcome, Artifact):
            artifacts.setdefault(key, {})[tc.id] = artifact_entry(outcome, out_dir)
        else:
            artifacts.setdefault(key, {})[tc.id] = {
                "status": "failed",
                "stage": outcome.stage,
                "kind": outcome.kind,
                "message": outcome.message,
            }
    targets = sorted({s.target for s in specs.values()})
    manifest = {
        "format_version": FORMAT,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "op": name,
        "mode": RECORDED_MODE,
        "precision": "",
        "target": ",".join(targets),
        "sm_count": 0,
        "backends": sorted({e.backend for e in entries}, key=[e.backend for e in entries].index),
        "inputs": [e.to_json() for e in entries],
        "toolchains": {tc.id: (tc.to_json_for(targets[0]) if len(targets) == 1 else tc.to_json()) for tc in toolchains},
        "specs": {k: s.to_json() for k, s in specs.items()},
        "artifacts": artifacts,
        "extra": {
            "workload": {
                "name": name,
                "path": str(workload.path) if workload.path else None,
                "host": workload.host,
                "recorded": workload.recorded,
            }
        },
    }
    write_manifest(out_dir, manifest)
    return out_dir


# ------------------------------------------------------------------------------------ reading
@dataclass(frozen=True)
class RecordedBundle:
    """A loaded recorded bundle: the bundle (artifacts, specs, toolchains) and its entries."""

    bundle: Bundle
    entries: list[Entry]

    @property
    def name(self) -> str:
        return self.bundle.op

    def workload_path(self) -> str:
        """The workload file the bundle was built from, as its builder named it (its manifest's
        ``extra.workload.path``), or ``NAME.workload.json`` for a bundle that did not keep it. Why: the
        GPU host's fixes named ``NAME.json``, a file that never existed (the corpus's are
        ``NAME.workload.json.gz``)."""
        extra = self.bundle.extra.get("workload") if isinstance(self.bundle.extra, dict) else None
        path = extra.get("path") if isinstance(extra, dict) else None
        return path if isinstance(path, str) and path else f"{self.name}.workload.json"

    def entry(self, entry_id: int) -> Entry:
        for e in self.entries:
            if e.id == entry_id:
                return e
        raise FormatError(
            f"bundle {self.bundle.path} has no entry {entry_id}", f"entries: {[e.id for e in self.entries]}"
        )

    def select(self, kernels: Sequence[str] | None, inputs: Sequence[str] | None) -> list[Entry]:
        """Entries of the kernels ``--kernel`` names and the inputs ``--input`` names (as when building:
        ``ktriage.spec.select.select_recorded``)."""
        chosen = self.entries
        if kernels:
            known = sorted(
                {(e.kernel, e.function) for e in self.entries},
                key=lambda kf: int(kf[0][1:]) if kf[0][1:].isdigit() else 0,
            )
            named = {known[n] for n in select_recorded_kernels(kernels, known, f"bundle {self.bundle.path}")}
            chosen = [e for e in chosen if (e.kernel, e.function) in named]
        if inputs:
            recorded = [
                RecordedInput(e.kernel, e.function, e.input, e.recorded_label, e.label.removesuffix(f" #{e.input}"))
                for e in chosen
            ]
            # the bundle's own inputs are listed when one names nothing: the GPU host measuring a bundle
            # often does not have the workload file
            chosen = [chosen[n] for n in select_recorded(inputs, recorded, f"bundle {self.bundle.path}", bundle=True)]
        return chosen


@dataclass(frozen=True)
class BenchBlocker:
    """A recorded input that ``bench`` cannot replay, and why (said at record time and by ``workload show``)."""

    kernel: str
    function: str
    input: int
    why: str


def bench_blockers(workload: Workload) -> list[BenchBlocker]:
    """Every recorded input whose launch ``bench`` cannot rebuild: no recorded grid (the hook's note
    says why), or arguments the replay cannot allocate (``plan_launch``'s error). Checked from the file
    alone, as the GPU host's bench would check it, so record's summary can say it first."""
    out: list[BenchBlocker] = []
    for k in workload.kernels:
        for i in k.inputs:
            if not i.grid:
                prefix = f"input {i.id}: no recorded grid ("
                note = next((n for n in k.notes if n.startswith(prefix)), None)
                why = (
                    note[len(prefix) :].split("): `bench`", 1)[0]
                    if note
                    else "the recording has none (a compile-only trace, or recorded before ktriage kept why)"
                )
                out.append(BenchBlocker(k.id, k.function, i.id, f"no recorded grid: {why}"))
                continue
            try:
                plan_launch(
                    i.args, i.spec.signature, i.grid, where=f"{k.id} input {i.id}", constexprs=i.spec.constexprs
                )
            except KtriageError as exc:
                out.append(BenchBlocker(k.id, k.function, i.id, exc.problem))
    return out


def is_recorded_bundle(bundle: Bundle) -> bool:
    return bundle.mode == RECORDED_MODE


def load_recorded_bundle(path: Path | str) -> RecordedBundle:
    """A recorded bundle (hashes and ABIs checked by ``load_bundle``); an op bundle is an error."""
    bundle = load_bundle(path)
    return recorded_view(bundle)


def recorded_view(bundle: Bundle) -> RecordedBundle:
    if not is_recorded_bundle(bundle):
        raise FormatError(
            f"bundle {bundle.path} holds the op {bundle.op} ({bundle.mode}), not a recorded workload",
            joined(
                "bench it as an op bundle: ",
                run_as(
                    f"kt.bench(bundle={str(bundle.path)!r}, op={bundle.op!r})",
                    f"ktriage bench --bundle {shlex.quote(str(bundle.path))} --op {bundle.op}",
                ),
            ),
        )
    try:
        entries = [Entry.from_json(row) for row in bundle.inputs]
    except (KeyError, TypeError, ValueError) as exc:
        raise FormatError(
            f"bundle {bundle.path}: a recorded entry is damaged ({type(exc).__name__}: {exc})",
            joined(
                "rebuild it: ",
                run_as(
                    "kt.bench_recorded(workload='W.json', toolchains=['A', 'B'], compile_only=True, bundle='DIR')",
                    "ktriage bench W.json -t A -t B --compile-only --bundle DIR",
                ),
            ),
        ) from exc
    missing = sorted({e.spec_key for e in entries} - set(bundle.specs))
    if missing:
        raise FormatError(
            f"bundle {bundle.path}: entries name specs it lacks ({missing[0]})", "copy the whole bundle folder again"
        )
    return RecordedBundle(bundle, entries)
