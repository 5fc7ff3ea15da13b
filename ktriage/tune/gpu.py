"""The GPU half of ``ktriage tune``: the kept candidates timed side by side through a bench bundle.

Why a bundle and not a new runner: ``ktriage bench --bundle`` already times artifacts of several
toolchains in ONE GPU process, interleaved, with correctness checked against the reference and
the results stored. A tune candidate is the same kernel with another config, launched with the
same arguments, so each candidate enters the bundle as a *variant* of the toolchain
(``<toolchain id>+tune<i>``) whose cubin replaces the library's for that kernel. The replay computes
the grid as the library does, so only candidates with the library's grid can be timed this way
(a different XBLOCK means a different grid); the others are listed as not timed, with the reason.

Only catalog ops with a bench workload can be timed (Liger layer_norm and embedding today).
"""

from __future__ import annotations

import json
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ktriage.errors import KtriageError
from ktriage.measure.model import Cell
from ktriage.tune.screen import ScreenResult

# catalog op -> (bench op, artifact backend)
BENCH_OPS = {"liger.layer_norm": ("layer_norm", "liger_layer_norm"), "liger.embedding": ("embedding", "liger_embedding")}
DEFAULT_VARIANT = "default"


@dataclass
class TuneBundle:
    """Where the bundle is and which toolchain id stands for which config."""

    path: Path
    op: str
    mode: str
    backend: str
    input_id: int
    variants: dict[str, str]  # toolchain id in the bundle -> config label ("default" for the library's)
    not_timed: list[tuple[str, str]] = field(default_factory=list)  # (config label, why)

    def bench_command(self, budget_s: float, results: Path) -> list[str]:
        """The `ktriage bench` invocation that times the variants (plus the op's native baseline)."""
        return ["ktriage", "bench", "--bundle", str(self.path), "--op", self.op, f"--{self.mode.replace('_', '-')}",
                "--only", self.backend, "--max-time", f"{budget_s:g}", "--output-json", str(results)]

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "op": self.op, "mode": self.mode, "backend": self.backend,
                "input_id": self.input_id, "variants": self.variants, "not_timed": [list(x) for x in self.not_timed]}


def bench_target(result: ScreenResult) -> tuple[str, str, str, int]:
    """(bench op, backend, mode, input id) of the screened spec, or a KtriageError saying why it cannot be timed."""
    meta = result.space.spec.meta
    op = str(meta.get("op", ""))
    if op not in BENCH_OPS or meta.get("input_id") is None:
        raise KtriageError(f"{result.space.spec.name} has no bench workload, so its candidates cannot be timed on a GPU",
                           f"use --compile-only, or tune a catalog op with a workload ({', '.join(BENCH_OPS)})")
    bench_op, backend = BENCH_OPS[op]
    return bench_op, backend, str(meta.get("mode", "bwd")), int(meta["input_id"])


def write_tune_bundle(result: ScreenResult, out_dir: Path, compiler: Any, *, sm_count: int | None = None) -> TuneBundle:
    """Build the op's bundle for the screened input (the library's config) and add every kept
    candidate with the library's grid as a variant of the toolchain."""
    from ktriage.workload.bundle import MANIFEST, _artifact_entry, build_bundle

    bench_op, backend, mode, input_id = bench_target(result)
    spec = result.space.spec
    tc = result.toolchain
    build_bundle(bench_op, mode, [input_id], [tc], out_dir, target=spec.target, sm_count=sm_count or spec.meta.get("sm_count"),
                 compiler=compiler, precision=str(spec.meta.get("dtype") or "fp32"), backends=[backend])
    manifest_path = Path(out_dir) / MANIFEST
    manifest = json.loads(manifest_path.read_text())
    key = manifest["inputs"][0]["kernels"][backend][mode]
    if key != spec.key():
        raise KtriageError(f"the bench workload launches another kernel than the tuned spec ({key} vs {spec.key()})",
                           "tune the catalog op with the bench's defaults (same --arch, --sm-count and dtype)")
    tb = TuneBundle(Path(out_dir), bench_op, mode, backend, input_id, {tc.id: DEFAULT_VARIANT})
    for i, cand in enumerate(result.kept, start=1):
        if cand.is_default or cand.artifact is None:
            continue
        if cand.spec.grid != spec.grid:
            tb.not_timed.append((cand.config.label(), (f"its grid {cand.spec.grid} differs from the library's {spec.grid}, "
                                                      "which the replay launches")))
            continue
        vid = f"{tc.id}+tune{i}"
        record = dict(manifest["toolchains"][tc.id])
        record["id"] = vid
        record["spec"] = f"{tc.spec} [{cand.config.label()}]"
        manifest["toolchains"][vid] = record
        manifest["artifacts"][key][vid] = _artifact_entry(cand.artifact, Path(out_dir))
        tb.variants[vid] = cand.config.label()
    manifest["tune"] = tb.to_json()
    tmp = manifest_path.with_name(f".{MANIFEST}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(manifest, indent=1))
    os.replace(tmp, manifest_path)
    return tb


@dataclass(frozen=True)
class Timed:
    """The GPU verdict: each variant's median, the winner and its speedup over the library's config."""

    medians_ms: dict[str, float]  # config label -> median ms
    failed: dict[str, str]  # config label -> status/error
    winner: str | None
    speedup_over_default: float | None

    def to_json(self) -> dict[str, Any]:
        return {"medians_ms": self.medians_ms, "failed": self.failed, "winner": self.winner,
                "speedup_over_default": None if self.speedup_over_default is None else round(self.speedup_over_default, 4)}


def pick_winner(cells: list[Cell], tb: TuneBundle) -> Timed:
    """Read a bench run of a tune bundle: a variant counts only if it ran and passed the accuracy check."""
    medians: dict[str, float] = {}
    failed: dict[str, str] = {}
    for cell in cells:
        if cell.key.backend != tb.backend or cell.key.toolchain not in tb.variants:
            continue
        label = tb.variants[cell.key.toolchain]
        if cell.status != "ok" or not cell.samples_ms or cell.accuracy.get("passed") is False:
            failed[label] = cell.error or (cell.status if cell.status != "ok" else "accuracy check failed")
            continue
        medians[label] = statistics.median(cell.samples_ms)
    if not medians:
        return Timed(medians, failed, None, None)
    winner = min(medians, key=lambda k: medians[k])
    base = medians.get(DEFAULT_VARIANT)
    return Timed(medians, failed, winner, base / medians[winner] if base else None)


def gpu_available() -> bool:
    """True when torch sees a CUDA GPU here (then tune runs the bench itself)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
