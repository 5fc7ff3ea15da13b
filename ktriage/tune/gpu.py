"""The GPU half of ``ktriage tune``: the kept candidates timed side by side through a bench bundle.

Why a bundle and not a new runner: ``ktriage bench --bundle`` already times artifacts of several
toolchains in ONE GPU process, interleaved, with correctness checked against the reference and
the results stored. A tune candidate is the same kernel with another config, launched with the
same arguments, so each candidate enters the bundle as a *variant* of the toolchain
(``<toolchain id>+tune<i>``) whose cubin replaces the library's for that kernel. The replay computes
the grid as the library does, so only candidates with the library's grid can be timed this way
(a different XBLOCK means a different grid); the others are listed as not timed, with the reason.

Only catalog ops with a bench workload can be timed: kernels with a replay, at the release it is
written for, on the bench op's own sweep (``ktriage.ops.registry.bench_target``: Liger layer_norm and
embedding today).
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ktriage.errors import SpecError, joined, run_as, worded
from ktriage.measure.cells import Cell
from ktriage.ops import registry
from ktriage.schema.jsontypes import JSONObject
from ktriage.tune.results_match import CONFIG_KEY, DEFAULT_VARIANT, match_variants
from ktriage.tune.screen import ScreenResult
from ktriage.tune.space import TuneConfig
from ktriage.workload.recorded.bundle import RECORDED_MODE


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
    native: str | None = None  # the op's native baseline backend (e.g. torch_layer_norm)
    compare_with: dict[str, str] = field(default_factory=dict)  # other toolchains' library config: id -> spec

    def bench_command(self, budget_s: float, results: Path) -> list[str]:
        """The `ktriage bench` invocation that times the variants (plus the op's native baseline):
        kernel-only timing, as toolchain comparisons are timed (the library's host work is the same
        for every config and only adds noise). A recorded kernel's bundle is benched as recorded
        workloads are: every variant replayed on the recorded arguments, its results checked against
        the library's config."""
        if self.mode == RECORDED_MODE:
            return [
                "ktriage",
                "bench",
                "--bundle",
                str(self.path),
                "--max-time",
                f"{budget_s:g}",
                "--output-json",
                str(results),
            ]
        only = ",".join([self.backend, *([self.native] if self.native else [])])
        return [
            "ktriage",
            "bench",
            "--bundle",
            str(self.path),
            "--op",
            self.op,
            f"--{self.mode.replace('_', '-')}",
            "--only",
            only,
            "--artifact-timing",
            "kernel",
            "--max-time",
            f"{budget_s:g}",
            "--output-json",
            str(results),
        ]

    def to_json(self) -> JSONObject:
        return {
            "path": str(self.path),
            "op": self.op,
            "mode": self.mode,
            "backend": self.backend,
            "input_id": self.input_id,
            "variants": self.variants,
            "not_timed": [list(x) for x in self.not_timed],
            "native": self.native,
            "compare_with": self.compare_with,
        }


def bench_target(result: ScreenResult) -> tuple[str, str, str, int]:
    """(bench op, backend, mode, input id) of the screened spec, or a KtriageError saying why it cannot be timed."""
    meta = result.space.spec.meta
    target = registry.bench_target(str(meta.get("op", "")))
    if target is None or not target[1].backend or meta.get("input_id") is None:
        timed = [e for e in registry.CATALOG if registry.bench_target(e) is not None]
        raise SpecError(
            f"{result.space.spec.name} has no bench workload, so its candidates cannot be timed on a GPU",
            worded(
                lambda o: (
                    f"use {o('compile_only', '--compile-only', True)}, or tune a catalog op with a workload "
                    f"({', '.join(timed)})"
                )
            ),
        )
    op, kernels = target
    assert kernels.backend is not None
    return op.name, kernels.backend, str(meta.get("mode", "bwd")), int(meta["input_id"])


def write_tune_bundle(
    result: ScreenResult,
    out_dir: Path,
    compiler: Any,
    *,
    sm_count: int | None = None,
    compare_with: Sequence[Any] = (),
    workload: Path | None = None,
    numbering: Mapping[TuneConfig, int] | None = None,
) -> TuneBundle:
    """Build the op's bundle for the screened input (the library's config, also with the
    ``compare_with`` toolchains, e.g. the Triton release before a regression) and add every kept
    candidate with the library's grid as a variant of the tuned toolchain. A recorded kernel (its
    spec from ``workload``, a file of ``ktriage record``) gets a recorded bundle of its one input.

    Each variant's toolchain record carries its config (``tune_config``), which the bench copies into
    its results file: ``--results`` then attaches each time to its config, not to a rank that a later
    screening may give another config. ``numbering``: config -> the ``i`` of ``+tune<i>`` (shared by
    the parts of a merged bundle, so that one id is one config in every input); default: the rank."""
    from ktriage.workload.bundles.format import MANIFEST, write_manifest
    from ktriage.workload.bundles.merge import add_variant

    spec = result.space.spec
    if spec.meta.get("recorded"):
        tb, key = _recorded_tune_bundle(result, Path(out_dir), compiler, compare_with, workload)
    else:
        tb, key = _op_tune_bundle(result, Path(out_dir), compiler, sm_count, compare_with)
    tc = result.toolchain
    numbering = numbering or config_numbering([result])
    for cand in result.kept:
        if cand.is_default or cand.artifact is None:
            continue
        if cand.spec.grid != spec.grid:
            tb.not_timed.append(
                (
                    cand.config.label(),
                    (f"its grid {cand.spec.grid} differs from the library's {spec.grid}, which the replay launches"),
                )
            )
            continue
        vid = f"{tc.id}+tune{numbering[cand.config]}"
        add_variant(
            Path(out_dir),
            tc.id,
            vid,
            cand.config.label(),
            {key: cand.artifact},
            extra={CONFIG_KEY: cand.config.to_json()},
        )
        tb.variants[vid] = cand.config.label()
    manifest_path = Path(out_dir) / MANIFEST
    manifest = json.loads(manifest_path.read_text())
    manifest["tune"] = tb.to_json()
    write_manifest(Path(out_dir), manifest)
    return tb


def _recorded_tune_bundle(
    result: ScreenResult, out_dir: Path, compiler: Any, compare_with: Sequence[Any], workload: Path | None
) -> tuple[TuneBundle, str]:
    """The recorded bundle of the tuned kernel's one recorded input (``ktriage bench W.json --kernel K
    --input I --compile-only`` builds the same), with the library's config as the reference."""
    from ktriage.record.workload import load_workload
    from ktriage.workload.recorded.bundle import build_recorded_bundle, load_recorded_bundle

    spec = result.space.spec
    if workload is None:
        raise SpecError(
            f"{spec.name} is a recorded kernel, but the workload file it came from is not known here",
            joined(
                "tune it with the workload file as the target: ",
                run_as("kt.tune(target='W.json', inputs=[...])", "ktriage tune W.json --input ..."),
            ),
        )
    kernel, input_id = str(spec.meta.get("workload_kernel")), int(spec.meta.get("input_id", 0))
    tc = result.toolchain
    others = [t for t in compare_with if t.id != tc.id]
    build_recorded_bundle(
        load_workload(workload), [tc, *others], out_dir, compiler=compiler, kernels=[kernel], inputs=[str(input_id)]
    )
    (entry,) = load_recorded_bundle(out_dir).entries
    if entry.spec_key != spec.key():
        raise SpecError(
            f"the recorded bundle holds another kernel than the tuned spec ({entry.spec_key} vs {spec.key()})",
            worded(lambda o: f"tune the workload's kernel as recorded (the same {o('arch', '--arch')})"),
        )
    return TuneBundle(
        out_dir,
        entry_op(out_dir),
        RECORDED_MODE,
        entry.backend,
        entry.id,
        {tc.id: DEFAULT_VARIANT},
        compare_with={t.id: str(t.spec) for t in others},
    ), entry.spec_key


def entry_op(bundle_dir: Path) -> str:
    """The cells' op of a recorded bundle (the workload's name)."""
    from ktriage.workload.recorded.bundle import load_recorded_bundle

    return load_recorded_bundle(bundle_dir).name


def _op_tune_bundle(
    result: ScreenResult, out_dir: Path, compiler: Any, sm_count: int | None, compare_with: Sequence[Any]
) -> tuple[TuneBundle, str]:
    """The catalog op's bench bundle of the tuned input, with the library's config as the reference."""
    from ktriage.workload.bundles.build import build_bundle
    from ktriage.workload.bundles.format import MANIFEST

    bench_op, backend, mode, input_id = bench_target(result)
    found = registry.operator(bench_op)
    native = found.baseline if found is not None and found.baseline else None
    spec = result.space.spec
    tc = result.toolchain
    others = [t for t in compare_with if t.id != tc.id]
    build_bundle(
        bench_op,
        mode,
        [input_id],
        [tc, *others],
        out_dir,
        target=spec.target,
        sm_count=sm_count or spec.meta.get("sm_count"),
        compiler=compiler,
        precision=str(spec.meta.get("dtype") or "fp32"),
        backends=[backend],
    )
    manifest_path = Path(out_dir) / MANIFEST
    key = json.loads(manifest_path.read_text())["inputs"][0]["kernels"][backend][mode]
    if key != spec.key():
        raise SpecError(
            f"the bench workload launches another kernel than the tuned spec ({key} vs {spec.key()})",
            worded(
                lambda o: (
                    f"tune the catalog op with the bench's defaults (the same {o('arch', '--arch')}, "
                    f"{o('sm_count', '--sm-count')} and {o('precision', '--precision')})"
                )
            ),
        )
    tb = TuneBundle(
        Path(out_dir),
        bench_op,
        mode,
        backend,
        input_id,
        {tc.id: DEFAULT_VARIANT},
        native=native,
        compare_with={t.id: str(t.spec) for t in others},
    )
    return tb, key


def write_tune_bundles(
    results: Sequence[ScreenResult],
    out_dir: Path,
    compiler: Any,
    *,
    sm_count: int | None = None,
    compare_with: Sequence[Any] = (),
    workload: Path | None = None,
) -> list[TuneBundle]:
    """One bundle for several tuned inputs (one tune bundle per input under ``out_dir/parts``,
    merged into ``out_dir``), so ONE GPU process times every input; each TuneBundle reads its own
    input's cells from that run. A single input is written straight to ``out_dir``."""
    from ktriage.workload.bundles.merge import merge_bundles

    out_dir = Path(out_dir)
    if len(results) == 1:
        return [
            write_tune_bundle(
                results[0], out_dir, compiler, sm_count=sm_count, compare_with=compare_with, workload=workload
            )
        ]
    if any(r.space.spec.meta.get("recorded") for r in results):
        raise SpecError(
            "tuning several recorded inputs in one GPU run is not supported yet",
            worded(lambda o: f"tune one recorded input at a time: one item in {o('inputs', '--input')}"),
        )
    numbering = config_numbering(results)
    parts = [
        write_tune_bundle(
            r,
            part_folder(out_dir, bench_target(r)[3]),
            compiler,
            sm_count=sm_count,
            compare_with=compare_with,
            numbering=numbering,
        )
        for r in results
    ]
    merge_bundles([tb.path for tb in parts], out_dir)
    for tb in parts:
        tb.path = out_dir
    return parts


PARTS = "parts"  # out_dir/parts/input-<id>: one tune bundle per input, merged into out_dir
_PART_NAME = re.compile(r"input-\d+")


def part_folder(out_dir: Path, input_id: int) -> Path:
    """Where ``write_tune_bundles`` writes the tune bundle of one input of several."""
    return Path(out_dir) / PARTS / f"input-{input_id}"


@dataclass(frozen=True)
class PartsRemoved:
    """The part folders of earlier runs that ``remove_unused_parts`` removed, and those it could not (why)."""

    removed: list[Path] = field(default_factory=list)
    failed: list[tuple[Path, str]] = field(default_factory=list)


def remove_unused_parts(out_dir: Path, bundles: Sequence[TuneBundle]) -> PartsRemoved:
    """Remove the part folders of ``out_dir`` that this run's ``bundles`` do not use: those of inputs an
    earlier run tuned and this one does not, and every one when this run tuned a single input (written
    straight to ``out_dir``). Why: they stayed in the bundle folder, and the copy to the GPU host carried
    them with the bundle. Only ktriage's own are touched: a folder named ``input-<id>`` under ``parts/``
    that holds a ktriage bundle's manifest (a symlink, another name or another file is left alone), and
    ``parts/`` itself when that leaves it empty. One that cannot be removed is named, not fatal: the bundle
    is written and timed all the same."""
    import shutil

    from ktriage.workload.bundles.format import MANIFEST, is_bundle_manifest

    parts = Path(out_dir) / PARTS
    if parts.is_symlink() or not parts.is_dir():
        return PartsRemoved()
    used = {part_folder(out_dir, tb.input_id).name for tb in bundles} if len(bundles) > 1 else set()
    out = PartsRemoved()
    for folder in sorted(parts.iterdir()):
        if folder.name in used or not _PART_NAME.fullmatch(folder.name) or folder.is_symlink() or not folder.is_dir():
            continue
        manifest = folder / MANIFEST
        if manifest.is_symlink() or not manifest.is_file() or not is_bundle_manifest(manifest):
            continue
        try:
            shutil.rmtree(folder)
        except OSError as exc:
            out.failed.append((folder, exc.strerror or str(exc)))
        else:
            out.removed.append(folder)
    if out.removed and not any(parts.iterdir()):
        parts.rmdir()
    return out


def config_numbering(results: Sequence[ScreenResult]) -> dict[TuneConfig, int]:
    """The ``i`` of each kept config's ``+tune<i>``: its rank among the tuned configs (the library's own,
    which the bundle holds as the reference, is not one) in the first input that keeps it, counted
    across inputs, so that a merged bundle never gives one variant id two configs."""
    numbering: dict[TuneConfig, int] = {}
    for result in results:
        for cand in result.kept:
            if not cand.is_default:
                numbering.setdefault(cand.config, len(numbering) + 1)
    return numbering


@dataclass(frozen=True)
class Timed:
    """The GPU verdict: each variant's median, the winner and its speedup over the library's config.
    ``by_rank``: configs whose times were read by rank (the results record no config for them);
    ``not_candidates_ms``: configs the results timed that are no candidate of this tune (median, None
    where it failed), named rather than dropped or read as another config."""

    medians_ms: dict[str, float]  # config label -> median ms
    failed: dict[str, str]  # config label -> status/error
    winner: str | None
    speedup_over_default: float | None
    baselines_ms: dict[str, float] = field(
        default_factory=dict
    )  # compare-with toolchain spec / native backend -> median ms
    by_rank: tuple[str, ...] = ()
    not_candidates_ms: dict[str, float | None] = field(default_factory=dict)

    def to_json(self) -> JSONObject:
        return {
            "medians_ms": self.medians_ms,
            "failed": self.failed,
            "winner": self.winner,
            "speedup_over_default": None if self.speedup_over_default is None else round(self.speedup_over_default, 4),
            "baselines_ms": self.baselines_ms,
            "winner_vs_baselines": {k: round(v / self.medians_ms[self.winner], 4) for k, v in self.baselines_ms.items()}
            if self.winner
            else {},
            "read_by_rank": list(self.by_rank),
            "not_candidates_ms": self.not_candidates_ms,
        }


def pick_winner(cells: list[Cell], tb: TuneBundle, recorded: Mapping[str, TuneConfig | None] | None = None) -> Timed:
    """Read a bench run of a tune bundle: a variant counts only if it ran and passed the accuracy check.
    ``recorded``: each variant's config as the results file records it
    (:func:`~ktriage.tune.results_match.recorded_configs`), by which its time is attached to this
    tune's candidate of the same config; a variant it does not cover is read by rank."""
    mine = [c for c in cells if c.key.input_id == tb.input_id]  # a merged bundle's run holds other inputs too
    matching = match_variants(
        {str(c.key.toolchain) for c in mine if c.key.backend == tb.backend}, tb.variants, recorded or {}
    )
    medians: dict[str, float] = {}
    failed: dict[str, str] = {}
    baselines: dict[str, float] = {}
    others: dict[str, float | None] = {}
    for cell in mine:
        ok = cell.status == "ok" and bool(cell.samples_ms) and cell.accuracy.get("passed") is not False
        if ok and cell.key.backend == tb.native and cell.key.toolchain is None:
            baselines[cell.key.backend] = statistics.median(cell.samples_ms)
        if ok and cell.key.backend == tb.backend and cell.key.toolchain in tb.compare_with:
            baselines[tb.compare_with[cell.key.toolchain]] = statistics.median(cell.samples_ms)
        if cell.key.backend != tb.backend or cell.key.toolchain is None:
            continue
        if cell.key.toolchain in matching.not_candidates:
            others[matching.not_candidates[cell.key.toolchain]] = statistics.median(cell.samples_ms) if ok else None
        if cell.key.toolchain not in matching.labels:
            continue
        label = matching.labels[cell.key.toolchain]
        if not ok:
            failed[label] = cell.error or (cell.status if cell.status != "ok" else "accuracy check failed")
            continue
        medians[label] = statistics.median(cell.samples_ms)
    by_rank = tuple(matching.labels[t] for t in matching.by_rank)
    if not medians:
        return Timed(medians, failed, None, None, baselines, by_rank, others)
    winner = min(medians, key=lambda k: medians[k])
    base = medians.get(DEFAULT_VARIANT)
    return Timed(medians, failed, winner, base / medians[winner] if base else None, baselines, by_rank, others)


def gpu_available() -> bool:
    """True when torch sees a CUDA GPU here (then tune runs the bench itself)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
