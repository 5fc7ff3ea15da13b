"""Run the JIT-equivalence check: JIT side in the toolchain (insitu/jitrun.py), ktriage side here.

Why both sides start from the same launch VALUES: the JIT decides the spec from them (decorators,
binder, specialization); ktriage decides it with its own rules (spec.specialize) from the values the
JIT-level launch received. If ktriage's rules, its compile worker or its assembler stage drifted from
a Triton release, the compile inputs or the cubin bytes differ, and the row says which.

Cases are grouped by kernel package: two versions of one library cannot share an interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from ktriage.arch import parse_arch
from ktriage.compile.compiler import SUPPORT_PACKAGES, Artifact, CompileFailure, Compiler
from ktriage.errors import KtriageError
from ktriage.fidelity.model import FidelityCase
from ktriage.insitu.environment import compile_environment
from ktriage.schema.jsontypes import JSONObject, JSONValue
from ktriage.spec.launch import named_args, spec_options
from ktriage.spec.model import KernelSpec
from ktriage.spec.packages import ensure_package
from ktriage.spec.source import read_params, resolve_source_file, split_source
from ktriage.spec.specialize import specialize_launch
from ktriage.toolchain.manager import Toolchain

JITRUN_SCRIPT = Path(__file__).resolve().parent.parent / "insitu" / "jitrun.py"
JIT_TIMEOUT_S = 1800.0


class JitCompile(TypedDict, total=False):
    """One compile the JIT made (insitu/jitrun.py's record): what is compared with ktriage's."""

    index: int
    ast_source: JSONObject  # the compile inputs' view (insitu.worker.ast_source_view)
    options: JSONObject
    cubin: str  # path of the cubin the JIT wrote
    cubin_sha256: str
    ptx_sha256: str
    name: str
    ptxas_runs: list[JSONObject]


class JitLaunch(TypedDict, total=False):
    """One ``JITFunction.run`` of a case (insitu/jitrun.py's ``Launch``, as read back)."""

    function: str
    module: str | None
    file: str | None
    args: list[list[JSONValue]]  # [name, encoded value] pairs
    options: JSONObject
    compiles: list[int]  # indexes into the case's compiles
    kernel_hash: str | None


class JitResult(TypedDict, total=False):
    """One case's result in the JIT harness's result.json (insitu/jitrun.py), or why it has none."""

    id: str
    error: str
    launches: list[JitLaunch]
    compiles: list[JitCompile]
    heuristics: list[str]
    autotune_configs: list[JSONObject] | None


class RowCommon(TypedDict, total=False):
    """The fields of a Row known from the JIT side, whatever the outcome of ktriage's side."""

    kernel: str
    heuristics: tuple[str, ...]
    autotuned: bool
    jit_options: JSONObject


@dataclass(frozen=True)
class Row:
    """One (case, Triton version) outcome.

    status: ``identical`` (same compile inputs, byte-identical cubin), ``differs`` (detail says
    what), ``error`` (a side failed: detail), ``skipped`` (the case needs another Triton: detail)."""

    case: str
    triton_version: str
    status: str
    detail: str = ""
    kernel: str = ""
    cubin_bytes: int = 0
    jit_options: JSONObject = field(default_factory=dict)
    heuristics: tuple[str, ...] = ()
    autotuned: bool = False

    def to_json(self) -> JSONObject:
        return {
            "case": self.case,
            "triton_version": self.triton_version,
            "status": self.status,
            "detail": self.detail,
            "kernel": self.kernel,
            "cubin_bytes": self.cubin_bytes,
            "heuristics": list(self.heuristics),
            "autotuned": self.autotuned,
            "jit_options": self.jit_options,
        }


def run_jit(toolchain: Toolchain, cases: Sequence[FidelityCase], target: str, work: Path) -> dict[str, JitResult]:
    """The JIT side: every case launched through this toolchain's Triton; results by case name."""
    cc = parse_arch(target).cc
    prime = toolchain.facts().order_sensitive
    groups: dict[str | None, list[FidelityCase]] = {}
    for case in cases:
        groups.setdefault(case.launch.package, []).append(case)
    results: dict[str, JitResult] = {}
    for index, (package, members) in enumerate(groups.items()):
        sys_path = (
            [str(ensure_package(package)), *(str(ensure_package(r)) for r in SUPPORT_PACKAGES)] if package else []
        )
        out_dir = work / f"jit-{index}"
        out_dir.mkdir(parents=True, exist_ok=True)
        request = {
            "target_cc": cc,
            "prime": prime,
            "out_dir": str(out_dir),
            "cases": [
                {
                    "id": c.name,
                    "source": c.launch.source,
                    "sys_path": sys_path,
                    "args": c.launch.encoded_args(),
                    "options": c.launch.options() if c.pass_options else {},
                    "grid": list(c.launch.grid),
                    "autotune_pick": c.autotune_pick,
                }
                for c in members
            ],
        }
        req_path, res_path = out_dir / "request.json", out_dir / "result.json"
        req_path.write_text(json.dumps(request))
        env = {**compile_environment(os.environ), "PYTHONUNBUFFERED": "1"}
        try:
            proc = subprocess.run(
                [str(toolchain.python), str(JITRUN_SCRIPT), str(req_path), str(res_path)],
                capture_output=True,
                text=True,
                env=env,
                timeout=JIT_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            proc = None
        done: list[JitResult] = json.loads(res_path.read_text())["cases"] if res_path.exists() else []
        for item in done:
            results[item["id"]] = item
        for case in members:  # a case that killed the process (or never ran) is its own error
            if case.name not in results:
                tail = "timed out" if proc is None else (proc.stderr.strip().splitlines() or ["no output"])[-1]
                results[case.name] = {"id": case.name, "error": f"the JIT process died before this case: {tail}"}
    return results


def spec_from_jit_launch(case: FidelityCase, launch: JitLaunch, target: str) -> KernelSpec:
    """ktriage's spec for what the JIT-level launch received (after the decorators), by ktriage's rules."""
    source_file = resolve_source_file(case.launch.source, case.launch.package)
    params = read_params(source_file, split_source(case.launch.source)[1])
    sp = specialize_launch(params, named_args(launch["args"]))
    options = spec_options(launch.get("options") or {})
    return KernelSpec(
        name=case.name,
        source=case.launch.source,
        package=case.launch.package,
        signature=sp.signature,
        constexprs=sp.constexprs,
        divisible_by_16=sp.divisible_by_16,
        equal_to_1=sp.equal_to_1,
        target=target,
        grid=case.launch.grid,
        meta={"fidelity_case": case.name},
        **options,
    )


def normalized_ast(view: JSONObject) -> JSONObject:
    """Compile inputs with empty attribute lists dropped (an empty list and no entry mean the same)."""
    attrs = view.get("attrs") or {}
    if isinstance(attrs, dict) and "AttrsDescriptor" not in attrs:
        attrs = {k: v for k, v in attrs.items() if v not in ("[]", "()")}
    return {**view, "attrs": attrs}


def check_case(case: FidelityCase, jit: JitResult, toolchain: Toolchain, compiler: Compiler, target: str) -> Row:
    """Compare one case's JIT compile with ktriage's compile of the spec derived from the same launch."""
    version = toolchain.triton_version
    if jit.get("error"):
        return Row(case.name, version, "error", f"JIT: {first_line(jit['error'])}")
    compiles = jit.get("compiles") or []
    launch = next((launch for launch in jit.get("launches", []) if launch.get("compiles")), None)
    if not compiles or launch is None:
        return Row(case.name, version, "error", "the JIT compiled nothing for this launch")
    record = compiles[launch["compiles"][-1]] if len(compiles) > launch["compiles"][-1] else compiles[-1]
    common: RowCommon = {
        "kernel": str(record.get("name", "")),
        "heuristics": tuple(jit.get("heuristics") or ()),
        "autotuned": jit.get("autotune_configs") is not None,
        "jit_options": {k: launch["options"][k] for k in ("num_warps", "num_stages") if k in launch["options"]},
    }
    try:
        spec = spec_from_jit_launch(case, launch, target)
    except KtriageError as exc:
        return Row(case.name, version, "error", f"ktriage spec: {exc.problem}", **common)
    if case.catalog and case.launch.to_spec().key() != spec.key():
        return Row(
            case.name,
            version,
            "differs",
            "the catalog recipe's spec is not the one the JIT launch gives: "
            + spec_difference(case.launch.to_spec(), spec),
            **common,
        )
    outcome = compiler.compile(spec, toolchain)
    if isinstance(outcome, CompileFailure):
        return Row(
            case.name, version, "error", f"ktriage compile ({outcome.stage}): {first_line(outcome.message)}", **common
        )
    return compare_artifact(case.name, outcome, record, common)


def compare_artifact(name: str, artifact: Artifact, record: JitCompile, common: RowCommon) -> Row:
    version = artifact.toolchain.triton_version
    ours, theirs = normalized_ast(artifact.frontend.ast_source), normalized_ast(record["ast_source"])
    if ours != theirs:
        diff = {k: (theirs.get(k), ours.get(k)) for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k)}
        return Row(name, version, "differs", f"compile inputs (JIT, ktriage): {diff}", **common)
    jit_cubin = Path(record["cubin"]).read_bytes()
    our_cubin = artifact.cubin.cubin_path.read_bytes()
    if jit_cubin == our_cubin:
        return Row(name, version, "identical", "", cubin_bytes=len(our_cubin), **common)
    only_paths = debug_paths_only(jit_cubin, our_cubin)
    status = "identical" if only_paths else "differs"
    detail = (
        f"cubins differ only in debug path strings ({only_paths})"
        if only_paths
        else f"cubin bytes differ ({len(jit_cubin)} vs {len(our_cubin)} bytes)"
    )
    return Row(name, version, status, detail, cubin_bytes=len(our_cubin), **common)


def debug_paths_only(a: bytes, b: bytes) -> str:
    """Non-empty when two cubins are equal after blanking the file paths they embed (line info)."""
    import re

    paths = re.compile(rb"/[A-Za-z0-9_./+-]+\.py")
    found = sorted(
        {m.decode(errors="replace") for m in paths.findall(a)} ^ {m.decode(errors="replace") for m in paths.findall(b)}
    )
    if not found:
        return ""

    def blank(data: bytes) -> bytes:
        return paths.sub(b"<path>", data)

    return ", ".join(found[:4]) if blank(a) == blank(b) else ""


def spec_difference(a: KernelSpec, b: KernelSpec) -> str:
    ja, jb = a.to_json(), b.to_json()
    keys = [k for k in ja if k not in ("name", "meta", "grid") and ja[k] != jb.get(k)]
    return "; ".join(f"{k}: recipe {ja[k]!r}, JIT {jb.get(k)!r}" for k in keys) or "key differs"


def first_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return lines[0][:300] if lines else ""


def check(
    toolchains: Sequence[Toolchain],
    cases: Sequence[FidelityCase],
    *,
    target: str = "sm_90",
    compiler: Compiler,
    work: Path | None = None,
    on_row: Callable[[Row], None] | None = None,
) -> list[Row]:
    """Every case with every toolchain's Triton; one Row each (skips for cases a version cannot have).

    Refuses a toolchain with its own ptxas or ptxas options: the JIT side is Triton's own launch path,
    which assembles with the ptxas its wheel bundles, so every such cubin would read "differs" for a
    reason that is no drift of ktriage's (``explain`` is where ptxas releases are compared)."""
    for tc in toolchains:
        if not tc.ptxas_is_bundled or tc.ptxas_options:
            what = "its own ptxas" if not tc.ptxas_is_bundled else "ptxas options"
            raise KtriageError(
                f"fidelity compares ktriage's compile with Triton's own JIT, which assembles with the ptxas its "
                f"wheel bundles: {tc.spec} sets {what}, which the JIT cannot match",
                f"give the Triton release alone (-t triton=={tc.triton_version}); compare ptxas releases with explain",
            )
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="ktriage-fidelity-") as tmp:
        base = work or Path(tmp)
        for tc in toolchains:
            runnable = [c for c in cases if c.supports(tc.triton_version)]
            jit = run_jit(tc, runnable, target, base / tc.id) if runnable else {}
            for case in cases:
                if not case.supports(tc.triton_version):
                    row = Row(case.name, tc.triton_version, "skipped", case.version_note(tc.triton_version))
                else:
                    row = check_case(case, jit[case.name], tc, compiler, target)
                rows.append(row)
                if on_row is not None:
                    on_row(row)
    return rows
