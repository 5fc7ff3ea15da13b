"""tritonparse traces as a source of a recorded workload: ``ktriage workload import TRACE... -o W.json``.

Why: users already run tritonparse (PyPI ``tritonparse``; TritonBench's ``--tritonparse`` calls
``tritonparse.structured_logging.init(dir, enable_trace_launch=True)``). Its raw log is NDJSON, one
event per line (plain ``.ndjson``, or ``.bin.ndjson`` made of concatenated gzip members), written by
``TritonTraceHandler``. Two events carry what a workload needs:

- ``compilation`` (``knobs.compilation.listener``, each ``triton.compile``, cache hits included):
  ``payload.metadata`` is the compiled kernel's metadata (``name``, ``hash``, ``target.arch``,
  ``num_warps``/``num_stages``/``num_ctas``/``maxnreg``, ``triton_version``) plus the ASTSource's
  ``src_constants`` (``{"(4,)": 256}``: constexprs by parameter index) and ``src_attrs``
  (``{"(0,)": [["tt.divisibility", 16]]}``); ``payload.file_content`` the IR texts (the TTIR's
  ``tt.func`` gives the types of the parameters that are not constexprs); ``payload.python_source``
  the kernel's source: by default the decorated function only (``code``, ``start_line``), the whole
  file with ``enable_full_python_source=True`` (``start_line`` 1, ``function_start_line``).
- ``launch`` (launch tracing, ``knobs.runtime.launch_enter_hook``): ``name``, ``grid``,
  ``compilation_metadata`` (with the ``hash`` of the compile it ran) and ``extracted_args``: per
  bound argument ``{"type": "tensor", "dtype": "torch.float32", "shape", "stride", "data_ptr"}`` or
  ``{"type": "int", "value": 4096}``.

What becomes of them is the recorder's workload (ktriage/record/workload.py), built by the same rules:
a launch's spec is derived by ``ktriage.spec.specialize`` from its argument values, read against the
snapshot's source, and checked against what the JIT compiled (the compilation event of the launch's
hash: the ``jit_check`` of the input). A compilation that no launch event names (a trace without
launch tracing) is an input of its own, built from the compile-time specialization. The source
snapshot is what the trace carries: the whole file, or the function alone under a synthesized
``import triton`` / ``import triton.language as tl`` header; helpers from other modules (and, for a
function alone, everything else of its module) are missing, which a kernel note says.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import textwrap
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ktriage.errors import FormatError, KtriageError, SpecError
from ktriage.insitu.fakedriver import TORCH_DTYPE
from ktriage.record.snapshot import materialize, module_file, requirement, snapshot_digest
from ktriage.record.workload import (
    JOURNAL_KIND,
    WORKLOAD_KIND,
    Input,
    Kernel,
    NotCaptured,
    SnapshotFiles,
    Workload,
    jit_check,
    json_lines,
    launch_label,
    with_launch_facts,
)
from ktriage.schema.jsontypes import JSONObject, JSONValue
from ktriage.schema.workload import MAX_SOURCE_LINE
from ktriage.spec.launch import SpecOptions, named_args, spec_options
from ktriage.spec.model import KNOWN_TARGETS, ConstexprValue, KernelSpec
from ktriage.spec.packages import snapshot_dir
from ktriage.spec.source import ParamInfo, read_params
from ktriage.spec.specialize import specialize_launch

FIX = "give the raw trace tritonparse wrote (its trace folder's .ndjson or .bin.ndjson files), undamaged"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_TRITON_OF_TORCH = {torch: triton for triton, torch in TORCH_DTYPE.items()}
_MLIR_SCALAR = {
    "f32": "fp32",
    "f16": "fp16",
    "bf16": "bf16",
    "f64": "fp64",
    "f8E4M3FN": "fp8e4nv",
    "f8E5M2": "fp8e5",
    "i1": "i1",
    "i8": "i8",
    "i16": "i16",
    "i32": "i32",
    "i64": "i64",
}
# tl.dtype's name -> its attribute in triton.language (the recorder's {"tl": ...} description)
_TL_DTYPE = {
    "fp32": "float32",
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp64": "float64",
    "fp8e4nv": "float8e4nv",
    "fp8e5": "float8e5",
    "i1": "int1",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
}
_TTIR_FUNC = re.compile(r"tt\.func\s+(?:public\s+|private\s+)?@([\w$.]+)\((.*)\)\s*(?:attributes|\{)")
_TTIR_ARG = re.compile(r"%[\w$.-]+\s*:\s*(!tt\.ptr<[^>]+>|[\w]+)")
FUNCTION_ONLY_NOTE = (
    "source: tritonparse recorded this function's definition only (its default); the snapshot is that "
    "function under `import triton` and `import triton.language as tl`, so everything else of its module "
    "(other @triton.jit helpers, module-level constants, imports) and helpers from other modules are "
    "missing: such a kernel may not compile. Trace with tritonparse's init(..., enable_full_python_source=True) "
    "(or TRITON_FULL_PYTHON_SOURCE=1) to carry the whole file"
)
FULL_FILE_NOTE = (
    "source: the whole kernel file, as tritonparse recorded it (enable_full_python_source); "
    "modules it imports are not in the trace: a helper from another module is missing and such a "
    "kernel may not compile"
)


# ------------------------------------------------------------------------------------------ reading
def read_trace(path: Path) -> list[JSONObject]:
    """The events of one raw tritonparse trace file (plain NDJSON or concatenated gzip members).

    A damaged or foreign file is a FormatError naming it; a torn last line (the program killed while
    tritonparse wrote it) is dropped, as for ktriage's own journal."""
    from ktriage.schema.core import GZIP_MAGIC, MAX_INPUT_ENV, gunzip, gzip_damage, read_bytes, size_limit
    from ktriage.schema.workload import MAX_TRACE_MB

    limit = size_limit(MAX_TRACE_MB)
    raw = read_bytes(path, what="tritonparse trace", limit=limit, fix=FIX)
    if raw.startswith(_ZSTD_MAGIC):
        raise FormatError(
            f"tritonparse trace {path} is zstd-compressed (TRITON_TRACE_COMPRESSION=zstd)",
            f"decompress it first (zstd -d -c {path} > trace.ndjson) or trace with compression gzip/none",
        )
    if raw.startswith(GZIP_MAGIC):
        try:
            unpacked = gunzip(raw, limit)
        except (OSError, EOFError, zlib.error) as exc:
            raise gzip_damage(f"tritonparse trace {path}", exc, FIX) from exc
        if unpacked is None:
            raise FormatError(
                f"tritonparse trace {path} is over the limit of {limit >> 20} MB once decompressed",
                f"check that it is the right file, or raise the limit with {MAX_INPUT_ENV}=<MB>",
            )
        raw = unpacked
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{path} is not a tritonparse trace (not UTF-8 text, nor gzip)", FIX) from exc
    events: list[JSONObject] = []
    try:
        for number, item in json_lines(text.splitlines(), f"tritonparse trace {path}", FIX, torn_alone=False):
            if not isinstance(item, dict) or not isinstance(item.get("event_type"), str):
                raise FormatError(
                    f'{path} line {number} is no tritonparse event (no "event_type")',
                    "give a raw trace tritonparse's structured_logging wrote",
                )
            events.append(item)
    except FormatError:
        _refuse_document(path, text)
        raise
    if not events:
        raise FormatError(f"tritonparse trace {path} holds no event", FIX)
    return events


def _refuse_document(path: Path, text: str) -> None:
    """A whole JSON document given as a trace (a ktriage workload, a results file) was "line 1 is not
    JSON ... give the raw trace, undamaged", as if it were a damaged trace: say what it is. Only on the
    failure path, so a trace is parsed once."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):  # not one document, or one nested too deep to be either
        return
    if not isinstance(doc, dict):
        return
    if doc.get("kind") in (WORKLOAD_KIND, JOURNAL_KIND):
        raise FormatError(
            f"{path} is already a ktriage workload: there is nothing to import",
            f"use it as it is: ktriage workload show {path}; ktriage explain {path} -t OLD -t NEW",
        )
    raise FormatError(
        f"{path} is one JSON document, not a tritonparse trace (one JSON event a line, from "
        "tritonparse's structured_logging)",
        "give the raw trace files of the run (its trace folder's .ndjson or .bin.ndjson files)",
    )


# ------------------------------------------------------------------------------------------ events
@dataclass(frozen=True)
class Compilation:
    """One compiled kernel as the trace tells it (the first event of its hash)."""

    hash: str
    name: str
    pid: int | None
    metadata: Mapping[str, Any]
    source: Mapping[str, Any]
    ttir: str | None
    events: int  # how many compilation events (cache hits, other processes) named this hash

    @property
    def target(self) -> str:
        target = self.metadata.get("target")
        arch = target.get("arch") if isinstance(target, Mapping) else None
        if not isinstance(arch, int):
            raise SpecError(
                f"the compilation of {self.name} names no CUDA target (target: {target!r})",
                f"ktriage compiles for {', '.join(KNOWN_TARGETS)}",
            )
        return f"sm_{arch}"

    def options(self) -> SpecOptions:
        """The spec's option fields: what the kernel was compiled with (not only what was passed)."""
        return spec_options({k: self.metadata.get(k) for k in ("num_warps", "num_stages", "num_ctas", "maxnreg")})

    def by_index(self, key: str) -> dict[int, Any]:
        """``src_constants``/``src_attrs`` keyed by parameter index (the trace writes ``"(4,)"``)."""
        out: dict[int, Any] = {}
        found = self.metadata.get(key)
        for k, v in found.items() if isinstance(found, Mapping) else ():
            try:
                index = ast.literal_eval(str(k))
            except (ValueError, SyntaxError):
                continue
            if isinstance(index, tuple) and len(index) == 1 and isinstance(index[0], int):
                out[index[0]] = v
        return out

    def divisible(self) -> list[int]:
        return sorted(
            i
            for i, attrs in self.by_index("src_attrs").items()
            if any(isinstance(a, list) and a[:1] == ["tt.divisibility"] for a in attrs or [])
        )

    def ttir_types(self) -> list[str] | None:
        """The Triton types of the non-constexpr parameters, in order, from the TTIR's ``tt.func``."""
        if not self.ttir:
            return None
        for line in self.ttir.splitlines():
            m = _TTIR_FUNC.search(line)
            if m and m.group(1) == self.name:
                return [_triton_type(t) for t in _TTIR_ARG.findall(m.group(2))]
        return None

    def view(self, params: Sequence[ParamInfo]) -> JSONObject | None:
        """What the JIT passed to ``triton.compile``, in the shape of the recorder's compile view
        (for :func:`ktriage.record.workload.jit_check`); None where the trace lacks the TTIR."""
        types = self.ttir_types()
        constants = self.by_index("src_constants")
        runtime = [i for i in range(len(params)) if i not in constants]
        if types is None or len(types) != len(runtime):
            return None
        signature = {p.name: "constexpr" for p in params}
        for i, t in zip(runtime, types):
            signature[params[i].name] = t
        return {
            "signature": signature,
            "divisible": self.divisible(),
            "options": {
                k: self.metadata[k]
                for k in ("num_warps", "num_stages", "num_ctas")
                if isinstance(self.metadata.get(k), int)
            },
        }


def _triton_type(mlir: str) -> str:
    if mlir.startswith("!tt.ptr<"):
        return "*" + _MLIR_SCALAR.get(mlir[len("!tt.ptr<") : -1].split(",")[0].strip(), mlir)
    scalar = _MLIR_SCALAR.get(mlir, mlir)
    return "u1" if scalar == "i1" else scalar  # the JIT's bool (3.4+), int1 in the TTIR


def _compilations(events: Iterable[Mapping[str, Any]]) -> dict[str, Compilation]:
    out: dict[str, Compilation] = {}
    for ev in events:
        if ev.get("event_type") != "compilation":
            continue
        payload = ev.get("payload")
        if not isinstance(payload, Mapping) or not isinstance(payload.get("metadata"), Mapping):
            raise FormatError("a tritonparse compilation event has no payload.metadata", FIX)
        meta = payload["metadata"]
        digest, name = str(meta.get("hash") or ""), meta.get("name")
        if not digest or not isinstance(name, str):
            raise FormatError("a tritonparse compilation event names no kernel (metadata.name, metadata.hash)", FIX)
        if digest in out:
            out[digest] = dataclasses.replace(out[digest], events=out[digest].events + 1)
            continue
        found = payload.get("file_content")
        contents = found if isinstance(found, Mapping) else {}
        ttir = next((str(v) for k, v in contents.items() if str(k).endswith(".ttir")), None)
        source = payload.get("python_source") if isinstance(payload.get("python_source"), Mapping) else {}
        pid = ev.get("pid")
        out[digest] = Compilation(digest, name, pid if isinstance(pid, int) else None, meta, source or {}, ttir, 1)
    return out


# ------------------------------------------------------------------------------------------ snapshots
@dataclass(frozen=True)
class Snapshot:
    digest: str
    module: str
    notes: list[str]


def _dim(value: JSONValue) -> int:
    """A grid dimension of a launch event (a number)."""
    if isinstance(value, (int, float, str)):
        return int(value)
    raise TypeError(f"grid dimension {value!r} is not a number")


def _snapshot(comp: Compilation, snapshots: dict[str, SnapshotFiles]) -> Snapshot:
    """The kernel's source as the trace carries it, as a one-module snapshot (named by its content:
    two traced files with the same name must not shadow each other in one compile worker)."""
    code = comp.source.get("code")
    if not isinstance(code, str) or not code.strip():
        raise SpecError(
            "the trace carries no Python source for it (tritonparse records none for an IRSource compile)",
            "trace the program from its Python kernels",
        )
    path = str(comp.source.get("file_path") or f"{comp.name}.py")
    whole = comp.source.get("start_line") == 1 and "function_start_line" in comp.source
    if whole:
        text, notes = code, [FULL_FILE_NOTE]
    else:
        text, notes = _function_module(textwrap.dedent(code), comp.source.get("start_line"), comp.name)
    stem = re.sub(r"\W", "_", Path(path).stem) or "kernel"
    module = f"ktr_{stem}_{snapshot_digest({path: text})[:12]}"
    files = {f"{module}.py": text}
    digest = snapshot_digest(files)
    notes = [*notes, f"traced file: {path}"]
    snapshots[digest] = {"files": files, "notes": notes}
    materialize(digest, files)
    return Snapshot(digest, module, notes)


def _is_jit(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Name) and target.id == "jit") or (
        isinstance(target, ast.Attribute) and target.attr == "jit"
    )


def _function_module(code: str, start: Any, name: str) -> tuple[str, list[str]]:
    """A module for a function recorded alone: ``import triton`` and ``triton.language as tl``, then
    the function with its ``@triton.jit`` (``do_not_specialize`` matters to the specialization) and
    without its other decorators. Those (``@triton.autotune``, ``@triton.heuristics``, inductor's
    ``@triton_heuristics.pointwise``) name things of the module that is not in the trace, and a spec
    carries what they decided (the config's values are constexprs, its num_warps an option). The
    ``def`` stays on its original line, so line info in the compiled kernel matches the user's file."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as exc:
        raise SpecError(f"the source tritonparse recorded for {name} does not parse: {exc}", FIX) from exc
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if fn is None:
        raise SpecError(f"the source tritonparse recorded has no function {name}", FIX)
    lines = code.splitlines(keepends=True)
    jit = [d for d in fn.decorator_list if _is_jit(d)]
    dropped = [ast.get_source_segment(code, d) or "?" for d in fn.decorator_list if not _is_jit(d)]
    kept = "".join(f"@{ast.get_source_segment(code, d)}\n" for d in jit) or "@triton.jit\n"
    body = "".join(lines[fn.lineno - 1 :])
    header = "import triton\nimport triton.language as tl\nfrom triton import jit\n"
    if isinstance(start, int) and not 0 <= start <= MAX_SOURCE_LINE:
        raise SpecError(
            f"the trace says {name} starts at line {start}, which no source file has",
            "give a trace tritonparse wrote (python_source.start_line is a line number)",
        )
    def_line = start + fn.lineno - 1 if isinstance(start, int) and not isinstance(start, bool) else 0
    used = header.count("\n") + kept.count("\n")
    text = header + "\n" * max(0, def_line - 1 - used) + kept + body
    notes = [FUNCTION_ONLY_NOTE]
    if dropped:
        notes.append(
            "decorators left out of the snapshot (they name the module's own objects; the spec carries "
            "what they chose): " + ", ".join("@" + d.split("(")[0] for d in dropped)
        )
    return text, notes


# ------------------------------------------------------------------------------------------ launches
def describe_arg(name: str, info: Any) -> Any:
    """One of tritonparse's ``extracted_args`` entries as the recorder's argument description."""
    if not isinstance(info, Mapping):
        raise SpecError(f"argument {name}: tritonparse recorded {info!r}, no description", FIX)
    kind = info.get("type")
    if kind == "tensor":
        torch_name = str(info.get("dtype", "")).split(".")[-1]
        dtype = _TRITON_OF_TORCH.get(torch_name)
        if dtype is None:
            raise SpecError(
                f"argument {name}: tensor dtype {info.get('dtype')!r} has no Triton type ktriage knows",
                "report the dtype",
            )
        ptr = info.get("data_ptr")
        if not isinstance(ptr, str):
            raise SpecError(
                f"argument {name}: the trace has no data_ptr, so its 16-byte alignment is unknown",
                "trace with a tritonparse that records data_ptr (0.6 does)",
            )
        out: JSONObject = {
            "tensor": dtype,
            "aligned": int(ptr, 16) % 16 == 0,
            "shape": [int(s) for s in info.get("shape") or []],
        }
        if isinstance(info.get("stride"), list):
            out["strides"] = [int(s) for s in info["stride"]]
        return out
    if kind in ("int", "float", "bool", "str"):
        return info.get("value")
    if kind == "NoneType":
        return None
    if kind == "dtype" and str(info.get("repr")) in _TL_DTYPE:  # a tl.dtype passed as a constexpr: repr "fp32"
        return {"tl": _TL_DTYPE[str(info["repr"])]}
    raise SpecError(
        f"a launch argument ktriage cannot describe: {name} is {kind}",
        "such kernels cannot be compiled from a spec yet; report the argument type",
    )


def is_benchmark_launch(launch: Mapping[str, Any]) -> bool:
    """A launch made while ``@triton.autotune`` times its configs (a frame of the autotuner's ``_bench``)."""
    stack = launch.get("stack")
    return isinstance(stack, list) and any(
        isinstance(f, Mapping)
        and f.get("name") == "_bench"
        and str(f.get("filename", "")).endswith("runtime/autotuner.py")
        for f in stack
    )


def _launch_args(launch: Mapping[str, Any]) -> list[list[Any]]:
    extracted = launch.get("extracted_args")
    if not isinstance(extracted, Mapping):
        raise SpecError("the launch event has no extracted_args", FIX)
    if "_note" in extracted:
        raise SpecError(
            f"tritonparse did not record its arguments: {extracted['_note']}",
            "trace launches outside a CUDA graph capture",
        )
    return [[str(name), describe_arg(str(name), info)] for name, info in extracted.items()]


# ------------------------------------------------------------------------------------------ conversion
@dataclass
class _Member:
    comp: Compilation
    snap: Snapshot
    launch_id: str
    args: list[list[Any]]
    grid: list[int] | None
    spec: KernelSpec
    count: int
    check: str | None
    traced_launch: bool


def _refuse_repeats(paths: Sequence[Path]) -> None:
    """One file given twice (the same path, or two names of one file: a symlink, a shell glob that
    overlaps another) was read twice, so every launch it holds was counted twice in the workload."""
    seen: dict[tuple[int, int], Path] = {}
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            continue  # read_trace names a missing or unreadable file
        first = seen.get((st.st_dev, st.st_ino))
        seen.setdefault((st.st_dev, st.st_ino), path)
        if first is not None:
            same = f"{path} is given twice" if str(first) == str(path) else f"{first} and {path} are the same file"
            raise KtriageError(f"{same}: its launches would be counted twice", "give each trace file of the run once")


def _refuse_mixed_runs(path: Path, events: Sequence[Mapping[str, Any]]) -> None:
    """Launches of several processes in one file: tritonparse's handler writes one file per process
    (its ``pid`` on every event), so such a file is traces of several runs concatenated (``cat`` of two
    recordings), and their launches were merged into one workload, counts summed, without a word.
    Only launches count: a process forked by the run (a compile worker) inherits the open file and
    writes its compilation events there under its own pid, but launches are the program's. Several
    files (ranks, processes of one run) stay one run: nothing in a trace tells their run apart."""
    launches: dict[str, int] = {}
    for ev in events:
        if ev.get("event_type") == "launch":
            pid = str(ev.get("pid"))
            launches[pid] = launches.get(pid, 0) + 1
    if len(launches) < 2:
        return
    counts = ", ".join(f"pid {pid}: {n}" for pid, n in launches.items())
    first = next(iter(launches))
    raise FormatError(
        f"{path} holds the launches of {len(launches)} processes ({counts}): tritonparse writes one file per "
        "process, so this is several runs' traces in one file, and their launches would be merged into one workload",
        f"import each run on its own: keep one process's events (e.g. zcat -f {path} | jq -c 'select(.pid == {first})' "
        "> run.ndjson), or give the trace files tritonparse wrote (one per process; the files of one run's ranks go together)",
    )


def convert(paths: Sequence[Path]) -> Workload:
    """The workload of one or more raw tritonparse traces (the files of one run: ranks, processes)."""
    if not paths:
        raise KtriageError("no tritonparse trace given", "ktriage workload import TRACE.ndjson [...] -o W.json")
    _refuse_repeats([Path(p) for p in paths])
    events: list[JSONObject] = []
    for path in paths:
        read = read_trace(Path(path))
        _refuse_mixed_runs(Path(path), read)
        events.extend(read)
    comps = _compilations(events)
    launches = [ev for ev in events if ev.get("event_type") == "launch"]
    if not comps and not launches:
        kinds = sorted({str(ev.get("event_type")) for ev in events})
        raise FormatError(
            f"the trace holds no compilation or launch event (only {', '.join(kinds)})",
            "give the raw trace of a program that compiled Triton kernels",
        )
    snapshots: dict[str, SnapshotFiles] = {}
    snaps: dict[str, Snapshot | str] = {}  # hash -> its snapshot, or why there is none
    not_captured: list[NotCaptured] = []
    members: dict[str, dict[str, _Member]] = {}

    def snapshot_of(comp: Compilation) -> Snapshot:
        if comp.hash not in snaps:
            try:
                snaps[comp.hash] = _snapshot(comp, snapshots)
            except KtriageError as exc:
                snaps[comp.hash] = exc.problem
            except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a field of another shape
                snaps[comp.hash] = f"the trace's source of {comp.name} is damaged ({type(exc).__name__}: {exc})"
        found = snaps[comp.hash]
        if isinstance(found, str):
            raise SpecError(f"no source snapshot: {found}")
        return found

    def add(member: _Member) -> None:
        ident = json.dumps(
            {**member.spec.to_json(), "name": None, "grid": None, "meta": None}, sort_keys=True, default=str
        )
        described = json.dumps([member.args, member.grid], sort_keys=True, default=str)
        group = members.setdefault(ident, {})
        if described in group:
            group[described].count += member.count
        else:
            group[described] = member

    launched: set[str] = set()
    benchmarked: dict[str, int] = {}
    for n, ev in enumerate(launches):
        name = str(ev.get("name") or "?")
        meta = ev.get("compilation_metadata")
        comp = comps.get(str(meta.get("hash") or "") if isinstance(meta, Mapping) else "")
        if is_benchmark_launch(ev):  # the autotuner timing a config: not the program's launch (as the recorder)
            benchmarked[name] = benchmarked.get(name, 0) + 1
            if comp is not None:
                launched.add(comp.hash)
            continue
        if comp is None:
            not_captured.append(
                NotCaptured(
                    name,
                    "its compilation event is not in the trace (the source is only there): "
                    "give every trace file of the run, traced from the program's start",
                    1,
                )
            )
            continue
        launched.add(comp.hash)
        try:
            snap = snapshot_of(comp)
            args = _launch_args(ev)
            params = read_params(module_file(snapshot_dir(requirement(snap.digest)), snap.module), comp.name)
            sp = specialize_launch(params, named_args(args))
            raw_grid = ev.get("grid")
            grid = [_dim(g) for g in raw_grid] if isinstance(raw_grid, list) else None
            spec = KernelSpec(
                name=comp.name,
                source=f"{snap.module}:{comp.name}",
                package=requirement(snap.digest),
                signature=sp.signature,
                constexprs=sp.constexprs,
                divisible_by_16=sp.divisible_by_16,
                equal_to_1=sp.equal_to_1,
                target=_known(comp.target),
                grid=tuple(grid) if grid else None,
                **comp.options(),
            ).validate()
        except (KtriageError, KeyError, TypeError, ValueError) as exc:
            why = exc.problem if isinstance(exc, KtriageError) else f"{type(exc).__name__}: {exc}"
            not_captured.append(NotCaptured(name, why, 1))
            continue
        view = comp.view(params)
        check = (
            jit_check(spec, view) if view else "unchecked: the trace carries no TTIR to read the JIT's signature from"
        )
        add(_Member(comp, snap, f"{ev.get('pid')}:L{n + 1}", args, grid, spec, 1, check, True))
    for comp in comps.values():
        if comp.hash in launched:
            continue
        try:
            snap = snapshot_of(comp)
            params = read_params(module_file(snapshot_dir(requirement(snap.digest)), snap.module), comp.name)
            spec, args = _compile_time_spec(comp, snap, params)
        except (KtriageError, KeyError, TypeError, ValueError) as exc:
            why = exc.problem if isinstance(exc, KtriageError) else f"{type(exc).__name__}: {exc}"
            not_captured.append(NotCaptured(comp.name, why, 0))
            continue
        add(
            _Member(
                comp,
                snap,
                f"{comp.pid}:C{comp.hash[:12]}",
                args,
                None,
                spec,
                0,
                "unchecked: the spec is the compilation's own (no launch event to derive it from)",
                False,
            )
        )
    kernels = [_kernel(f"K{n}", list(group.values()), benchmarked) for n, group in enumerate(members.values())]
    versions = sorted(
        {str(c.metadata.get("triton_version")) for c in comps.values() if c.metadata.get("triton_version")}
    )
    targets = sorted({t for c in comps.values() for t in [_target_or_none(c)] if t})
    host: JSONObject = {"triton": ", ".join(versions) or None, "target": targets[0] if len(targets) == 1 else None}
    recorded: JSONObject = {
        "source": "tritonparse",
        "traces": [str(p) for p in paths],
        "events": {"compilation": sum(c.events for c in comps.values()), "launch": len(launches)},
    }
    return Workload(kernels, not_captured, host, snapshots, recorded)


def _target_or_none(comp: Compilation) -> str | None:
    try:
        return comp.target
    except KtriageError:
        return None


def _known(target: str) -> str:
    if target not in KNOWN_TARGETS:
        raise SpecError(
            f"the trace's target {target} is not one ktriage compiles for", f"ktriage knows {', '.join(KNOWN_TARGETS)}"
        )
    return target


def _compile_time_spec(
    comp: Compilation, snap: Snapshot, params: Sequence[ParamInfo]
) -> tuple[KernelSpec, list[list[Any]]]:
    """The spec of a compilation no launch event names, from what the JIT compiled: the TTIR's types,
    the constants and the divisibility. Its arguments are described as far as that tells (pointers:
    dtype and alignment; scalars: type and divisibility), with no shapes or values."""
    types = comp.ttir_types()
    constants = comp.by_index("src_constants")
    runtime = [i for i in range(len(params)) if i not in constants]
    if types is None or len(types) != len(runtime):
        raise SpecError(
            "no launch event, and no TTIR to read the compiled signature from",
            "trace with launch tracing (init(..., enable_trace_launch=True))",
        )
    divisible = set(comp.divisible())
    signature: dict[str, str] = {}
    constexprs: dict[str, ConstexprValue] = {}
    args: list[list[Any]] = []
    equal_to_1: list[str] = []
    typed = dict(zip(runtime, types))
    for i, p in enumerate(params):
        if i in constants:
            signature[p.name], constexprs[p.name] = "constexpr", constants[i]
            if constants[i] == 1 and not p.is_constexpr and not isinstance(constants[i], bool):
                equal_to_1.append(p.name)
            args.append([p.name, constants[i]])
        else:
            signature[p.name] = typed[i]
            if typed[i].startswith("*"):
                args.append([p.name, {"tensor": typed[i][1:], "aligned": i in divisible}])
            else:
                args.append([p.name, {"unknown": typed[i], "divisible_by_16": i in divisible}])
    spec = KernelSpec(
        name=comp.name,
        source=f"{snap.module}:{comp.name}",
        package=requirement(snap.digest),
        signature=signature,
        constexprs=constexprs,
        divisible_by_16=tuple(params[i].name for i in sorted(divisible) if i in typed),
        equal_to_1=tuple(equal_to_1),
        target=_known(comp.target),
        **comp.options(),
    ).validate()
    return spec, args


def _kernel(kid: str, members: list[_Member], benchmarked: Mapping[str, int]) -> Kernel:
    first = members[0]
    inputs: list[Input] = []
    for index, m in enumerate(members):
        label = launch_label({"args": m.args, "id": m.launch_id}) if m.traced_launch else f"compiled {m.comp.hash[:12]}"
        meta = {
            "recorded": True,
            "workload_kernel": kid,
            "input_id": index,
            "input_label": label,
            "launches": m.count,
            "function": m.comp.name,
            "original_module": None,
            "tritonparse_hash": m.comp.hash,
        }
        spec = with_launch_facts(m.spec.replace(name=f"{m.comp.name}.{kid}[{label}]", meta=meta), m.args, None)
        inputs.append(
            Input(
                index,
                m.launch_id,
                label,
                m.args,
                {k: v for k, v in m.spec.to_json().items() if k in ("num_warps", "num_stages")},
                m.grid,
                m.count,
                spec,
                jit_check=m.check,
            )
        )
    notes = list(first.snap.notes)
    if benchmarked.get(first.comp.name):
        notes.append(
            f"{benchmarked[first.comp.name]} launches of {first.comp.name} made by @triton.autotune's "
            "benchmarking were dropped; its config list is not in the trace's launch events"
        )
    if any(not m.traced_launch for m in members):
        notes.append(
            "no launch event names some compilations (launch tracing off, or compiled and not launched): "
            "those inputs come from the compile-time specialization, with no shapes, values or grid, "
            "and a launch count of 0"
        )
    differs = [f"input {i.id}: {i.jit_check}" for i in inputs if (i.jit_check or "").startswith("differs")]
    if differs:
        notes.append(
            "the spec is not what the JIT compiled (report it: a specialization rule drifted): " + "; ".join(differs)
        )
    path = str(first.comp.source.get("file_path") or "") or None
    return Kernel(
        kid,
        first.comp.name,
        "jit",
        first.snap.module,
        first.snap.module,
        path,
        None,
        first.snap.digest,
        inputs,
        None,
        notes,
    )
