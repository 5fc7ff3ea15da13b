"""The recorded workload file: what ``ktriage record`` captured from a real program, portable and versioned.

Why its own format: it crosses machines (GPU host -> CPU machine), so it carries everything a
compile needs (the KernelSpecs and the source snapshots) and one ``format_version`` key, checked on
read (``ktriage.errors.check_format_version``); a damaged or foreign file is a FormatError naming
the file and the fix, never a traceback.

Two shapes, one reader (:func:`load_workload`):

- the **journal** the hook appends to while the program runs (``W.json.journal``, JSON lines: a
  header, ``host``, ``kernel`` (per function: its snapshot), ``launch`` (per distinct launch),
  ``counts`` and ``not_captured`` records). A program killed by SIGKILL leaves every line written
  before it.
- the **workload** (``W.json``), compacted from the journal by :func:`compact` when the program
  ends: kernels, each one function + specialization + options (one KernelSpec identity), with its
  inputs (the distinct launches: argument descriptions, grid, count, autotune choice, heuristics
  values, the spec), the snapshots by digest, what was not captured and why, the host's versions.

Specs are derived here, on the host, from the recorded argument values by ``ktriage.spec.specialize``
(the rules the fidelity harness proves byte-identical to the JIT's), read against the snapshot's
source, so a spec never depends on the original file still existing.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from ktriage.atomic import atomic_open
from ktriage.errors import FormatError, KtriageError, SpecError, check_format_version
from ktriage.record.snapshot import materialize, module_file, requirement, snapshot_digest
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.launch import named_args, spec_options
from ktriage.spec.model import KNOWN_TARGETS, ConstexprValue, KernelSpec
from ktriage.spec.sms import SM_COUNT, given_sm_count
from ktriage.spec.source import read_params
from ktriage.spec.specialize import specialize_launch
from ktriage.wording import agree, plural

WORKLOAD_FORMAT = 1
WORKLOAD_KIND = "ktriage-workload"
JOURNAL_FORMAT = 1  # ktriage/insitu/launch_hook.py JOURNAL_FORMAT
JOURNAL_KIND = "ktriage-record-journal"
JOURNAL_SUFFIX = ".journal"
FIX = "record it again with this ktriage (ktriage record -o W.json -- COMMAND)"
# Launch keywords that are no compile option the spec carries, and change nothing Triton compiles.
HARMLESS_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "stream", "grid", "warmup", "debug")


class SnapshotFiles(TypedDict):
    """One recorded source tree: its files (path -> text) and what the recorder noted about it."""

    files: dict[str, str]
    notes: list[str]


@dataclass(frozen=True)
class Input:
    """One distinct launch of a kernel: what it was called with, how often, and the spec."""

    id: int
    launch: str
    label: str
    args: list[list[Any]]
    options: JSONObject
    grid: list[int] | None
    count: int
    spec: KernelSpec
    autotune_choice: JSONObject | None = None
    heuristics: JSONObject = field(default_factory=dict)
    # the spec against the JIT's own compile inputs (recorded where this process compiled it):
    # "same", "differs: ...", "unchecked: ..." or None (no compile seen: the JIT's cache served it)
    jit_check: str | None = None

    def to_json(self) -> JSONObject:
        return {
            "id": self.id,
            "launch": self.launch,
            "label": self.label,
            "args": self.args,
            "options": self.options,
            "grid": self.grid,
            "count": self.count,
            "autotune_choice": self.autotune_choice,
            "heuristics": self.heuristics,
            "jit_check": self.jit_check,
            "spec": self.spec.to_json(),
        }


@dataclass(frozen=True)
class Kernel:
    """One function + specialization + options, and the inputs it was launched with."""

    id: str
    function: str
    kind: str  # "jit" (JITFunction.run) or "inductor" (CachingAutotuner.run)
    module: str  # its module name inside the snapshot
    original_module: str
    file: str | None
    package: str | None  # the distribution it came from on the recording host ("liger-kernel==0.5.10")
    snapshot: str
    inputs: list[Input]
    autotune_configs: list[JSONObject] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def launches(self) -> int:
        return sum(i.count for i in self.inputs)

    def to_json(self) -> JSONObject:
        return {
            "id": self.id,
            "function": self.function,
            "kind": self.kind,
            "module": self.module,
            "original_module": self.original_module,
            "file": self.file,
            "package": self.package,
            "snapshot": self.snapshot,
            "launches": self.launches,
            "autotune_configs": self.autotune_configs,
            "notes": self.notes,
            "inputs": [i.to_json() for i in self.inputs],
        }


@dataclass(frozen=True)
class NotCaptured:
    function: str
    why: str
    launches: int = 0

    def to_json(self) -> JSONObject:
        return {"function": self.function, "why": self.why, "launches": self.launches}


@dataclass(frozen=True)
class Workload:
    kernels: list[Kernel]
    not_captured: list[NotCaptured]
    host: JSONObject
    snapshots: dict[str, SnapshotFiles]
    recorded: JSONObject = field(default_factory=dict)
    path: Path | None = None

    def specs(self) -> list[KernelSpec]:
        """Every input of every kernel as its spec (the snapshots materialized on this machine)."""
        self.materialize()
        return [i.spec for k in self.kernels for i in k.inputs]

    def require_kernels(self, origin: str) -> Workload:
        """This workload, or a ``SpecError`` when it has no kernel to compile: a workload of 0 kernels
        is never explained or benched as "no change". The error says why nothing was captured."""
        if self.kernels:
            return self
        if self.not_captured:
            whys = "; ".join(f"{n.function}: {n.why}" for n in self.not_captured[:5])
            more = f" (and {len(self.not_captured) - 5} more)" if len(self.not_captured) > 5 else ""
            raise SpecError(
                f"workload {origin} has no kernel to compile: {plural(len(self.not_captured), 'launch', 'launches')} "
                f"{agree(len(self.not_captured), 'was', 'were')} "
                f"not captured: {whys}{more}",
                f"see `ktriage workload show {origin}`; fix what the reasons name and record again",
            )
        raise SpecError(
            f"workload {origin} has no kernel to compile: the program launched no Triton kernel "
            "through JITFunction.run or inductor's launcher while it was recorded",
            "record a run that launches the kernels (not one that only reads them from a cache, and "
            "not with python -S/-E/-I, which skip the hook)",
        )

    def materialize(self) -> None:
        for digest, snap in self.snapshots.items():
            materialize(digest, snap["files"])

    def to_json(self) -> JSONObject:
        return {
            "format_version": WORKLOAD_FORMAT,
            "kind": WORKLOAD_KIND,
            "recorded": self.recorded,
            "host": self.host,
            "kernels": [k.to_json() for k in self.kernels],
            "not_captured": [n.to_json() for n in self.not_captured],
            "snapshots": {d: {"files": s["files"], "notes": s["notes"]} for d, s in self.snapshots.items()},
        }


# ------------------------------------------------------------------------------------------ journal
def json_lines(lines: Sequence[str], what: str, fix: str, *, torn_alone: bool = True) -> list[tuple[int, Any]]:
    """The JSON value of each non-empty line of a JSON-lines file (``what`` names it in errors), with
    its 1-based line number. A torn last line (the program killed mid-write) is dropped; when it is
    the only line, only if ``torn_alone``. Any other line that is not JSON is a FormatError."""
    out: list[tuple[int, Any]] = []
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except RecursionError:
            raise FormatError(f"{what} line {number + 1} nests lists/objects too deep", fix) from None
        except json.JSONDecodeError as exc:
            if number == len(lines) - 1 and (out or torn_alone):
                break  # the line being written when the program died
            raise FormatError(f"{what} line {number + 1} is not JSON ({exc.msg})", fix) from exc
        out.append((number + 1, item))
    return out


def read_journal(path: Path) -> list[JSONObject]:
    """The journal's records; a torn last line (the program killed mid-write) is dropped."""
    from ktriage.schema.core import read_text, size_limit
    from ktriage.schema.workload import MAX_TRACE_MB

    lines = read_text(path, what="record journal", limit=size_limit(MAX_TRACE_MB), fix=FIX).splitlines()
    records: list[JSONObject] = []
    for number, item in json_lines(lines, f"record journal {path}", FIX):
        if not isinstance(item, dict):
            raise FormatError(f"record journal {path} line {number} is not a JSON object", FIX)
        records.append(item)
    if not records or records[0].get("kind") != JOURNAL_KIND:
        raise FormatError(f"{path} is not a ktriage record journal", FIX)
    check_format_version(records[0], JOURNAL_FORMAT, what=f"record journal {path}", fix=FIX)
    return records


def compact(records: Sequence[Mapping[str, Any]], *, recorded: Mapping[str, Any] | None = None) -> Workload:
    """The workload of a journal: specs derived, launches grouped into kernels, snapshots deduplicated."""
    host: JSONObject = {}
    fn_records: dict[str, Mapping[str, Any]] = {}
    launches: list[Mapping[str, Any]] = []
    counts: dict[str, int] = {}
    not_captured: list[NotCaptured] = []
    views: dict[str, JSONObject] = {}
    header: Mapping[str, Any] = records[0] if records else {}
    for rec in records:
        kind = rec.get("type")
        if kind == "host":
            host = {k: v for k, v in rec.items() if k != "type"}
        elif kind == "kernel":
            fn_records[str(rec["id"])] = rec
        elif kind == "launch":
            launches.append(rec)
        elif kind == "counts":
            counts.update({str(k): int(v) for k, v in dict(rec.get("counts") or {}).items()})
        elif kind == "jit_compile":
            views[str(rec.get("launch"))] = dict(rec.get("view") or {})
        elif kind == "not_captured":
            not_captured.append(NotCaptured(str(rec.get("function")), str(rec.get("why"))))
    target = str(host.get("target") or "sm_90")
    snapshots: dict[str, SnapshotFiles] = {}
    digests: dict[str, str] = {}
    failed: dict[str, str] = {}
    for fid, rec in fn_records.items():
        snap = rec.get("snapshot")
        if not isinstance(snap, Mapping) or not snap.get("files"):
            failed[fid] = str(rec.get("snapshot_error") or "its source file could not be read")
            continue
        files = {str(k): str(v) for k, v in dict(snap["files"]).items()}
        digest = snapshot_digest(files)
        snapshots[digest] = {"files": files, "notes": list(snap.get("notes") or [])}
        digests[fid] = digest
        materialize(digest, files)
    # One kernel per spec identity (the spec names its function and its snapshot), whichever process
    # launched it; one input per distinct launch description, its counts summed over processes.
    groups: dict[str, dict[str, tuple[str, Mapping[str, Any], KernelSpec, int]]] = {}
    for launch in launches:
        fid = str(launch.get("kernel"))
        rec = fn_records.get(fid, {})
        function = str(rec.get("function", "?"))
        count = counts.get(str(launch.get("id")), 1)
        if fid not in fn_records:
            not_captured.append(
                NotCaptured(function, f"launch {launch.get('id')} names kernel {fid}, which the journal lacks", count)
            )
            continue
        if fid in failed:
            not_captured.append(NotCaptured(function, f"no source snapshot: {failed[fid]}", count))
            continue
        try:
            spec = _spec(rec, launch, digests[fid], target)
        except (KtriageError, KeyError, TypeError, ValueError) as exc:
            why = exc.problem if isinstance(exc, KtriageError) else f"{type(exc).__name__}: {exc}"
            not_captured.append(NotCaptured(function, why, count))
            continue
        ident = json.dumps({**spec.to_json(), "name": None, "grid": None, "meta": None}, sort_keys=True, default=str)
        described = json.dumps(
            [launch.get("args"), launch.get("options"), launch.get("grid"), launch.get("inductor_config")],
            sort_keys=True,
            default=str,
        )
        members = groups.setdefault(ident, {})
        if described in members:
            first_fid, first, first_spec, seen = members[described]
            members[described] = (first_fid, first, first_spec, seen + count)
        else:
            members[described] = (fid, launch, spec, count)
    kernels: list[Kernel] = []
    for n, members in enumerate(groups.values()):
        kid = f"K{n}"
        inputs: list[Input] = []
        fid = next(iter(members.values()))[0]
        rec = fn_records[fid]
        for index, (_, launch, spec, count) in enumerate(members.values()):
            label = launch_label(launch)
            meta = {
                "recorded": True,
                "workload_kernel": kid,
                "input_id": index,
                "input_label": label,
                "launches": count,
                "function": rec.get("function"),
                "original_module": rec.get("original_module"),
            }
            if given_sm_count(host) is not None:  # the recording GPU's SMs: what the cost model prices for
                meta[SM_COUNT] = given_sm_count(host)
            sampled = sampled_ints(launch.get("args") or [])
            if sampled:  # replayed from their recorded values, not zeros (predict.facts.uniform_indices reads it)
                meta["sampled_ints"] = sampled
            spec = with_launch_facts(
                spec.replace(name=f"{rec.get('function')}.{kid}[{label}]", meta=meta),
                list(launch.get("args") or []),
                None,
            )
            autotune = launch.get("autotune") if isinstance(launch.get("autotune"), Mapping) else None
            inputs.append(
                Input(
                    index,
                    str(launch.get("id")),
                    label,
                    list(launch.get("args") or []),
                    dict(launch.get("options") or {}),
                    launch.get("grid"),
                    count,
                    spec,
                    autotune_choice=(autotune or {}).get("chosen") or launch.get("inductor_config"),
                    heuristics=dict(launch.get("heuristics") or {}),
                    jit_check=jit_check(spec, views.get(str(launch.get("id")))),
                )
            )
        first = next(iter(members.values()))[1]
        configs = (first.get("autotune") or {}).get("configs") if isinstance(first.get("autotune"), Mapping) else None
        if configs is None and rec.get("kind") == "inductor":
            configs = rec.get("configs")
        if configs:
            inputs = [dataclasses.replace(i, spec=with_launch_facts(i.spec, i.args, configs)) for i in inputs]
        notes = list(snapshots[digests[fid]]["notes"])
        differs = [f"input {i.id}: {i.jit_check}" for i in inputs if (i.jit_check or "").startswith("differs")]
        if differs:
            notes.append(
                "the spec is not what the JIT compiled (report it: a specialization rule drifted): "
                + "; ".join(differs)
            )
        for index, (_, launch, _, _) in enumerate(members.values()):
            if launch.get("grid") is None:  # said at record time: bench cannot replay an input without its grid
                why = launch.get("grid_error") or "the launch's grid could not be read"
                notes.append(f"input {index}: no recorded grid ({why}): `bench` cannot replay it (`explain` can)")
            for name, table in pointer_tables(launch.get("args") or []):  # said at record time, as bench would
                notes.append(
                    f"input {index}: cannot bench: pointer table: argument {name} holds device addresses ({table}); "
                    "the replay cannot rebuild them (fix: time it on its own launch path, `ktriage triage --run`; "
                    "`explain` needs no replay)"
                )
        ignored = sorted({k for i in inputs for k in i.options if k not in HARMLESS_OPTIONS})
        if ignored:
            notes.append(f"launch options the spec does not carry: {', '.join(ignored)}")
        kernels.append(
            Kernel(
                kid,
                str(rec.get("function")),
                str(rec.get("kind", "jit")),
                str(rec.get("module")),
                str(rec.get("original_module")),
                rec.get("file"),
                rec.get("package"),
                digests[fid],
                inputs,
                configs,
                notes,
            )
        )
    info = {"command": header.get("argv"), "started": header.get("started"), **dict(recorded or {})}
    return Workload(kernels, not_captured, host, snapshots, info)


def _spec(rec: Mapping[str, Any], launch: Mapping[str, Any], digest: str, target: str) -> KernelSpec:
    """The spec the JIT compiled for one recorded launch, read against the snapshot's source."""
    if target not in KNOWN_TARGETS:
        raise SpecError(
            f"the recording host's target {target} is not one ktriage compiles for",
            f"ktriage knows {', '.join(KNOWN_TARGETS)}",
        )
    from ktriage.spec.packages import snapshot_dir

    module, function = str(rec["module"]), str(rec["function"])
    path = module_file(snapshot_dir(requirement(digest)), module)
    source = f"{module}:{function}"
    if rec.get("kind") == "inductor":
        return _inductor_spec(rec, launch, source, digest, target)
    params = read_params(path, function)
    sp = specialize_launch(params, named_args(launch.get("args") or []))
    options = spec_options({k: v for k, v in dict(launch.get("options") or {}).items() if isinstance(v, int)})
    grid = launch.get("grid")
    return KernelSpec(
        name=function,
        source=source,
        package=requirement(digest),
        signature=sp.signature,
        constexprs=sp.constexprs,
        divisible_by_16=sp.divisible_by_16,
        equal_to_1=sp.equal_to_1,
        target=target,
        grid=tuple(grid) if grid else None,
        **options,
    ).validate()


def _inductor_spec(
    rec: Mapping[str, Any], launch: Mapping[str, Any], source: str, digest: str, target: str
) -> KernelSpec:
    """inductor's own compile inputs (triton_meta: signature, constants, divisibility) plus the
    launcher's config: inductor specializes itself and passes these to ``triton.compile``."""
    meta = dict(rec.get("triton_meta") or {})
    signature = {str(k): str(v) for k, v in dict(meta.get("signature") or {}).items()}
    names = list(signature)
    config = dict(launch.get("inductor_config") or {})
    constexprs: dict[str, ConstexprValue] = {}
    for name, value in {**dict(meta.get("constants") or {}), **dict(config.get("kwargs") or {})}.items():
        if name in signature:
            signature[name] = "constexpr"
            constexprs[name] = value
    divisible = []
    for entry in meta.get("divisible_by_16") or []:
        index = entry[0] if isinstance(entry, list) and entry else entry
        if isinstance(index, int) and index < len(names) and signature[names[index]] != "constexpr":
            divisible.append(names[index])
    options = spec_options({k: config.get(k) for k in ("num_warps", "num_stages", "num_ctas", "maxnreg")})
    grid = launch.get("grid")
    return KernelSpec(
        name=str(rec.get("function")),
        source=source,
        package=requirement(digest),
        signature=signature,
        constexprs=constexprs,
        divisible_by_16=tuple(divisible),
        target=target,
        # the grid inductor's launcher computed: the cost model's CTA count (waves, the data a CTA streams)
        grid=tuple(grid) if grid else None,
        **options,
    ).validate()


def _same_type(a: str, b: str) -> bool:
    return a == b or {a, b} == {"i1", "u1"}  # bools: "u1" from 3.4 on, "i1" in 3.3 (both int1)


def jit_check(spec: KernelSpec, view: Mapping[str, Any] | None) -> str | None:
    """Compare a derived spec with what the JIT passed to ``triton.compile`` for the same launch."""
    if view is None:
        return None
    if "divisible" not in view:
        return "unchecked: Triton 3.2's AttrsDescriptor is not compared"
    names = list(spec.signature)
    jit_sig = {str(k): str(v) for k, v in dict(view.get("signature") or {}).items()}
    if list(jit_sig) != names:
        return f"differs: the JIT's signature lists {list(jit_sig)}, the spec {names}"
    types = [f"{n}: JIT {jit_sig[n]}, spec {t}" for n, t in spec.signature.items() if not _same_type(jit_sig[n], t)]
    if types:
        return "differs: " + "; ".join(types)
    jit_div = {names[i] for i in view.get("divisible") or [] if isinstance(i, int) and i < len(names)}
    if jit_div != set(spec.divisible_by_16):
        return f"differs: divisible by 16: JIT {sorted(jit_div)}, spec {sorted(spec.divisible_by_16)}"
    options = dict(view.get("options") or {})
    for name in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
        if name in options and options[name] != getattr(spec, name):
            return f"differs: {name}: JIT {options[name]}, spec {getattr(spec, name)}"
    return "same"


def pointer_tables(args: Sequence[Any]) -> list[tuple[str, str]]:
    """The arguments the hook marked as pointer tables (``insitu.launch_hook.describe_args``): (name, why)."""
    from ktriage.insitu.launch_hook import POINTER_TABLE

    return [
        (str(a[0]), str(a[1][POINTER_TABLE]))
        for a in args
        if isinstance(a, (list, tuple)) and len(a) == 2 and isinstance(a[1], Mapping) and a[1].get(POINTER_TABLE)
    ]


def sampled_ints(args: Sequence[Any]) -> list[str]:
    """The integer tensor arguments recorded with a ``value_sample`` of more than one distinct value: their
    replay draws real values (``workload.recorded.args``), so the kernel's indices are not all one value."""
    return [
        str(a[0])
        for a in args
        if isinstance(a, (list, tuple))
        and len(a) == 2
        and isinstance(a[1], Mapping)
        and isinstance(a[1].get("value_sample"), list)
        and len({v for v in a[1]["value_sample"] if isinstance(v, int)}) > 1
    ]


def launch_label(launch: Mapping[str, Any]) -> str:
    """A short name of a launch among its kernel's inputs: the tensors' shapes and the int scalars."""
    parts: list[str] = []
    for name, value in launch.get("args") or []:
        if isinstance(value, Mapping) and "shape" in value and len(parts) < 6:
            parts.append(f"{name}=" + "x".join(str(s) for s in value["shape"]))
        elif isinstance(value, int) and not isinstance(value, bool) and len(parts) < 8:
            parts.append(f"{name}={value}")
    return ",".join(parts) or str(launch.get("id"))


# ------------------------------------------------------------------------------------------ files
def journal_path(output: Path) -> Path:
    return output.with_name(output.name + JOURNAL_SUFFIX)


def save_workload(workload: Workload, path: Path) -> Path:
    """Write atomically (``ktriage.atomic``): a reader sees the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path) as fh:
        json.dump(workload.to_json(), fh, indent=1)
    return path


def is_workload_path(target: str | os.PathLike[str]) -> bool:
    """What ``explain``/``tune``/``bisect`` take as a recorded workload: a .json file (or one gzipped,
    ``W.json.gz``: how the corpus commits them) or a journal. A ``Path`` is read by its name, as a str
    (``ktriage.api.is_workload_path(Path("W.json"))`` was an AttributeError)."""
    return os.fspath(target).endswith((".json", ".json.gz", JOURNAL_SUFFIX))


def load_workload(path: Path | str) -> Workload:
    """A workload file (plain or gzipped: ``W.json.gz`` reads as ``W.json``), or a journal (compacted
    on the fly; also when W.json is missing but its journal is there: ``ktriage record`` itself was
    killed). Read through the schema layer (size limit after decompression, UTF-8, JSON, nesting
    depth, ``ktriage.schema.workload``); snapshots materialized."""
    from ktriage.schema.core import check_depth, parse_json, read_text_gz, size_limit
    from ktriage.schema.workload import MAX_WORKLOAD_MB

    path = Path(path)
    if path.name.endswith(JOURNAL_SUFFIX):
        return _with_path(_compact_journal(path), path)
    if not path.exists():
        if journal_path(path).exists():
            return _with_path(_compact_journal(journal_path(path)), path)
        raise FormatError(f"workload file {path} does not exist", "check the path (ktriage record -o writes it)")
    what = f"workload file {path}"
    text = read_text_gz(path, what="workload file", limit=size_limit(MAX_WORKLOAD_MB), fix=FIX)
    try:
        data = parse_json(text, origin=what, fix=FIX)
    except FormatError:
        refuse_trace(path, text)
        raise
    check_depth(data, origin=what)
    if not isinstance(data, dict) or data.get("kind") != WORKLOAD_KIND:
        refuse_trace(path, text)
        raise FormatError(
            f'{path} is not a ktriage workload (no "kind": "{WORKLOAD_KIND}")',
            "give a file written by `ktriage record -o W.json`",
        )
    if "cannot_bench" in data:  # only `workload show` writes it: read as a workload, it was "damaged, record it again"
        raise FormatError(
            f"{path} is the JSON of `ktriage workload show` (a summary: its snapshots name their files "
            "only), not the workload",
            "give the workload file itself: the one `ktriage record -o W.json` wrote and `workload show` read",
        )
    check_format_version(data, WORKLOAD_FORMAT, what=what, fix=FIX)
    check_workload(data, what)
    try:
        return _with_path(_from_json(data), path)
    except FormatError:
        raise
    except (KtriageError, KeyError, TypeError, ValueError, AttributeError) as exc:
        detail = exc.problem if isinstance(exc, KtriageError) else f"{type(exc).__name__}: {exc}"
        raise FormatError(f"{what} is damaged: {detail}", FIX) from exc


def refuse_trace(path: Path, text: str) -> None:
    """A tritonparse trace given where a workload goes (``workload show``, ``explain``, ``bench``) was
    "not valid JSON: Extra data ... record it again", as if the workload were damaged: name it for
    what it is and give the import that makes a workload of it. Only on the failure path, and only
    the first line is read (a trace is one JSON event a line, each with its ``event_type``)."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        event = json.loads(first)
    except (ValueError, RecursionError):
        return
    if isinstance(event, dict) and isinstance(event.get("event_type"), str):
        raise FormatError(f"{path} is a tritonparse trace, not a ktriage workload", _import_fix(path))


TRACE_SUFFIXES = (".ndjson", ".ndjson.gz")  # tritonparse's raw traces: .ndjson, .bin.ndjson (gzip)


def refuse_trace_name(target: str) -> None:
    """A path named as tritonparse names its traces, given where a spec file or a workload goes
    (``explain``, ``bench``): it was "a file, not a spec file or a workload", which does not say that
    one command makes a workload of it. Decided by the name: a trace may be hundreds of MB."""
    if target.endswith(TRACE_SUFFIXES):
        raise FormatError(
            f"{target} is a tritonparse trace (.ndjson), not a spec file or a recorded workload",
            _import_fix(target),
        )


def _import_fix(path: Path | str) -> str:
    return (
        f"import it into a workload first: ktriage workload import {path} -o W.json (with the run's other "
        "trace files), then give W.json"
    )


def check_workload(data: Any, what: str) -> None:
    """Refuse a workload document (read, or about to be written from a foreign trace) that does not
    fit the schema (``ktriage.schema.workload``), naming the field."""
    from ktriage.schema.core import convert
    from ktriage.schema.workload import FIXES, WorkloadSchema

    convert(data, WorkloadSchema, origin=what, fix=FIX, fixes=FIXES, headline=" is damaged")


def _compact_journal(path: Path) -> Workload:
    """The workload of a journal read as a file (not the one ``record`` just wrote): a journal whose
    records lack what the hook writes is a FormatError, never a KeyError."""
    records = read_journal(path)
    try:
        return compact(records)
    except KtriageError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise FormatError(f"record journal {path} is damaged: {type(exc).__name__}: {exc}", FIX) from exc


def _with_path(workload: Workload, path: Path) -> Workload:
    object.__setattr__(workload, "path", path)
    return workload


def with_launch_facts(
    spec: KernelSpec, args: Sequence[Any], autotune_configs: Any, grid: Sequence[int] | None = None
) -> KernelSpec:
    """``spec`` with what tune's models read from ``meta`` (never part of the spec's key): the
    launch's integer scalars as its ``shape`` (a matmul's M, N, K: the tile model's problem size), and
    the kernel's ``@triton.autotune`` config list (the space ``ktriage tune`` searches first).

    ``grid``: the input's recorded grid, given to a spec that has none. Workloads recorded before
    inductor's specs carried their launcher's grid have it on the input only; without it explain
    priced those kernels with the fitted trip count, while the calibration (which reads the bench
    run's grid) priced them with the data each CTA streams, so the two disagreed on one cell."""
    if spec.grid is None and grid:
        spec = spec.replace(grid=tuple(int(g) for g in grid))
    meta = dict(spec.meta)
    if "shape" not in meta:
        shape = {
            str(a[0]): a[1]
            for a in args
            if isinstance(a, (list, tuple))
            and len(a) == 2
            and isinstance(a[1], int)
            and not isinstance(a[1], bool)
            and a[0] not in spec.constexprs
        }
        if shape:
            meta["shape"] = shape
    if autotune_configs and "autotune_configs" not in meta:
        meta["autotune_configs"] = list(autotune_configs)
    return spec if meta == spec.meta else spec.replace(meta=meta)


def _source_checked(raw: Any, notes: list[str]) -> KernelSpec:
    """A recorded input's spec, validated; its signature checked against its function in the snapshot.
    A kernel whose function or module the snapshot lacks (a recorder that missed a file, a hand-edited
    workload) keeps its spec and gets a note: that check refused the whole file ("damaged: cannot find
    module ...") and every other kernel with it, where explain and bench report that kernel's cells as
    failed compiles and go on with the rest."""
    spec = KernelSpec.from_json(raw).validate(check_source=False)
    try:
        spec.validate()
    except SpecError as exc:
        note = f"its source does not load from the snapshot ({exc.problem}): its inputs cannot compile; {FIX}"
        if note not in notes:
            notes.append(note)
    return spec


def _from_json(data: Mapping[str, Any]) -> Workload:
    snapshots: dict[str, SnapshotFiles] = {}
    for digest, snap in dict(data["snapshots"]).items():
        files = {str(k): str(v) for k, v in dict(snap["files"]).items()}
        materialize(str(digest), files)
        snapshots[str(digest)] = {"files": files, "notes": list(snap.get("notes") or [])}
    kernels = []
    for k in data["kernels"]:
        if str(k["snapshot"]) not in snapshots:
            raise FormatError(f"kernel {k['id']} names snapshot {str(k['snapshot'])[:12]}, which the file lacks", FIX)
        notes = list(k.get("notes") or [])
        inputs = [
            Input(
                int(i["id"]),
                str(i["launch"]),
                str(i["label"]),
                list(i["args"]),
                dict(i["options"]),
                i.get("grid"),
                int(i["count"]),
                with_launch_facts(
                    _source_checked(i["spec"], notes), list(i["args"]), k.get("autotune_configs"), i.get("grid")
                ),
                i.get("autotune_choice"),
                dict(i.get("heuristics") or {}),
                i.get("jit_check"),
            )
            for i in k["inputs"]
        ]
        kernels.append(
            Kernel(
                str(k["id"]),
                str(k["function"]),
                str(k["kind"]),
                str(k["module"]),
                str(k["original_module"]),
                k.get("file"),
                k.get("package"),
                str(k["snapshot"]),
                inputs,
                k.get("autotune_configs"),
                notes,
            )
        )
    not_captured = [
        NotCaptured(str(n["function"]), str(n["why"]), int(n.get("launches", 0)))
        for n in data.get("not_captured") or []
    ]
    return Workload(kernels, not_captured, dict(data.get("host") or {}), snapshots, dict(data.get("recorded") or {}))
