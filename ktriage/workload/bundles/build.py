"""Build a bundle (``ktriage.workload.bundles.format``) on a CPU machine: compile every kernel an op's artifact
backends launch, for some inputs, with every toolchain."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ktriage import progress
from ktriage.errors import SpecError, worded
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.model import KernelSpec
from ktriage.wording import plural
from ktriage.workload.bundles.format import FORMAT, Selection, artifact_entry, check_bundle_folder, write_manifest
from ktriage.workload.ops.replay import ROLES_BY_MODE

if TYPE_CHECKING:
    from ktriage.compile.compiler import Compiler
    from ktriage.toolchain.manager import Toolchain


def build_bundle(
    op: str,
    mode: str,
    inputs: Sequence[str | int] | None,
    toolchains: Sequence[Toolchain],
    out_dir: Path,
    *,
    target: str = "sm_90",
    sm_count: int | None = None,
    compiler: Compiler,
    precision: str | None = None,
    backends: Sequence[str] | None = None,
    selection: Selection | None = None,
) -> Path:
    """Compile every kernel of ``op``'s artifact backends for ``inputs`` (ids or selectors; None: all)
    with every toolchain and write the bundle to ``out_dir``; returns ``out_dir``. ``selection``: the
    bench's ``--only``/``--baseline``, kept for the run that measures the bundle (``Selection``)."""
    from ktriage.catalog.targets import default_sm_count
    from ktriage.compile.compiler import Artifact
    from ktriage.workload.ops.opdef import (
        bench_op,
        check_mode,
        resolve_precision,
        select_op_inputs,
    )
    from ktriage.workload.ops.replay import REPLAYS, catalog_spec

    opdef = bench_op(op)
    check_mode(opdef, mode)
    prec = resolve_precision(opdef, precision)
    sm = sm_count if sm_count is not None else default_sm_count(target)
    if not toolchains:
        raise SpecError(
            "no toolchain given for the bundle",
            worded(lambda o: f"pass one, e.g. {o('toolchains', '-t', ['triton==3.4.0'])}"),
        )
    chosen = (
        list(backends)
        if backends
        else [b for b in opdef.artifact_backends if not (REPLAYS[b].fwd_only and mode != "fwd")]
    )
    for b in chosen:
        if b not in opdef.artifact_backends:
            raise SpecError(f"{b} is not an artifact backend of {op}", f"use: {', '.join(opdef.artifact_backends)}")
        if REPLAYS[b].fwd_only and mode != "fwd":
            raise SpecError(
                f"{b} has no {mode} kernels (forward only)",
                worded(lambda o: f"bundle it with {o('mode', '--mode', 'fwd')}"),
            )
    cases = select_op_inputs(opdef, selectors=[str(i) for i in inputs] if inputs else None)
    check_bundle_folder(Path(out_dir))  # before the compile: a manifest.json of someone else's is kept

    specs: dict[str, KernelSpec] = {}
    input_rows = []
    for case in cases:
        kernels: dict[str, dict[str, str]] = {}
        for b in chosen:
            for role in ROLES_BY_MODE[mode]:
                spec = catalog_spec(b, case, role, precision=prec, target=target, sm_count=sm)
                key = spec.key()
                specs.setdefault(key, spec)
                kernels.setdefault(b, {})[role] = key
        input_rows.append(
            {"id": case.id, "facts": dict(case.facts), "x_val": list(opdef.x_val(case)), "kernels": kernels}
        )

    out_dir = Path(out_dir)
    (out_dir / "cubins").mkdir(parents=True, exist_ok=True)
    with progress.task(
        f"compiling {plural(len(specs), 'kernel')} x {plural(len(toolchains), 'toolchain')}",
        total=len(specs) * len(toolchains),
    ) as step:
        outcomes = compiler.compile_many(
            list(specs.values()), list(toolchains), on_done=step.callback
        )  # (spec, toolchain) order
    pairs = [(key, tc) for key in specs for tc in toolchains]
    artifacts: dict[str, JSONObject] = {}
    for (key, tc), outcome in zip(pairs, outcomes, strict=True):
        if isinstance(outcome, Artifact):
            entry = artifact_entry(outcome, out_dir)
        else:
            entry = {"status": "failed", "stage": outcome.stage, "kind": outcome.kind, "message": outcome.message}
        artifacts.setdefault(key, {})[tc.id] = entry

    manifest = {
        "format_version": FORMAT,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "op": op,
        "mode": mode,
        "precision": prec,
        "target": target,
        "sm_count": sm,
        "backends": chosen,
        "inputs": input_rows,
        "toolchains": {tc.id: tc.to_json_for(target) for tc in toolchains},
        "specs": {k: s.to_json() for k, s in specs.items()},
        "artifacts": artifacts,
    }
    if selection is not None:
        manifest["selection"] = selection.to_json()
    write_manifest(out_dir, manifest)
    return out_dir
