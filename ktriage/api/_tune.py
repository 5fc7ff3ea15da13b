"""``ktriage.api.tune(target=..., toolchains=[...], ...) -> TuneReport``: spill- and occupancy-aware
configs for one kernel launch (docs/tune.md).

Why an entry point: the CLI checked the inputs, built the (cluster) compiler, screened, scaled and
timed each input itself, so a notebook or a CI job had no way to tune but the command line. The
sequence lives here once; ``ktriage tune`` parses its flags (``--warps 4,8`` as a list of ints),
calls :func:`tune` and renders the report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ktriage import progress
from ktriage.api import _args as args
from ktriage.api._toolchains import resolve_toolchains
from ktriage.api.paths import check_writable
from ktriage.brief import brief
from ktriage.errors import KtriageError, Worded, joined, option, spelled, worded
from ktriage.explain.session import DEFAULT_COMPILE_TIMEOUT_S
from ktriage.mdsafe import markdown_writer
from ktriage.schema.jsontypes import JSONObject

if TYPE_CHECKING:
    from rich.console import Console

    from ktriage.predict.model_used import ModelUsed
    from ktriage.tune.scaling import ScaleResult
    from ktriage.tune.screen import ScreenResult

__all__ = ["TuneReport", "tune"]


@dataclass(frozen=True)
class TuneReport:
    """One screening per input (candidates, the kept ones ranked), the block scaling from each
    input's own config, and the GPU timing of the kept candidates (None per input: compile-only).
    ``notes``: what the timing step says to the user, ``(level, text)`` with level ``warn`` or
    ``info`` (no GPU here: the command to run on one), each option named by its keyword and its flag
    (``ktriage tune`` prints the flag alone: ``errors.in_flags``). ``warnings``: how the results were read against the
    configs (``read by rank: ...``, ``not a candidate: ...``), which the table and the markdown carry after the
    GPU winner; the JSON has their facts (``timing.read_by_rank``, ``timing.not_candidates_ms``).
    ``model``: the cost model file that priced the estimates and set the tie tolerance (``model=``,
    ``--model``, ``$KTRIAGE_MODEL`` or the shipped fit), which every rendering names. The renderers are
    ``ktriage tune``'s."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    results: list[ScreenResult]
    scalings: list[ScaleResult[Any]]
    timings: list[JSONObject | None]
    notes: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    model: ModelUsed | None = None

    def json_text(self) -> str:
        from ktriage.report.tune import to_json_text

        return to_json_text(self.results, self.scalings, self.timings, self.model)

    @markdown_writer
    def to_markdown(self, *, show_all: bool = False) -> str:
        from ktriage.report.tune import to_markdown

        return to_markdown(
            self.results, self.scalings, self.timings, show_all=show_all, warnings=self.warnings, model=self.model
        )

    def print_table(self, console: Console, *, show_all: bool = False) -> None:
        from ktriage.report.tune import print_report

        print_report(
            self.results,
            self.scalings,
            self.timings,
            console,
            show_all=show_all,
            warnings=self.warnings,
            model=self.model,
        )

    def print_warnings(self, console: Console) -> None:
        """The ``warnings`` alone, as the table prints them: for a report whose stdout is JSON (its facts only)."""
        from ktriage.report.tune import print_warnings

        print_warnings(self.warnings, console)


@args.entry_point
def tune(
    *,
    target: str | Path,
    toolchains: Sequence[str],
    mode: str | None = None,
    inputs: int | Sequence[str | int] | None = None,
    input_id: int | None = None,
    num_inputs: int | None = None,
    arch: str | None = None,
    precision: str | None = None,
    sm_count: int | None = None,
    compile_only: bool = False,
    top_k: int = 5,
    max_spill_bytes: int = 0,
    budget: float = 10.0,
    warps: int | Sequence[int] | None = None,
    stages: int | Sequence[int] | None = None,
    blocks: Mapping[str, int | Sequence[int]] | None = None,
    bundle: str | Path | None = None,
    results_file: str | Path | None = None,
    jobs: int | None = None,
    cluster: str | None = None,
    compile_timeout: float = DEFAULT_COMPILE_TIMEOUT_S,
    model: str | Path | None = None,
) -> TuneReport:
    """Enumerate num_warps, num_stages and the declared block sizes of each selected input of
    ``target`` (a catalog op, a spec ``.toml`` or a recorded workload ``.json``), compile them all with
    ``toolchains[0]``, screen by spills, occupancy and a roofline estimate, scale the blocks from the
    kernel's own config, then (unless ``compile_only``) time the ``top_k`` kept on the GPU against the
    library's config and the other ``toolchains`` (one bundle for all inputs, ``budget`` GPU seconds;
    ``results_file``: a bench results file of that bundle, timed elsewhere). ``model``: the cost model's
    file (``ktriage calibrate -o FILE``; None: ``$KTRIAGE_MODEL``, else the shipped fit) that prices the
    estimates and says which are ties, named in the report as explain's names it.

    ``warps``/``stages``/``blocks`` narrow the space. A catalog op with several inputs needs them
    chosen (``inputs``, ``input_id`` or ``num_inputs``). Raises :class:`~ktriage.errors.KtriageError`
    (naming the fix) for a bad argument, before any toolchain is built. A lone value where a list goes
    is one item (``warps=4``, ``inputs="7"``, ``toolchains="triton==3.4.0"``); ``arch`` takes every
    spelling ``--arch`` does."""
    from ktriage.catalog.resolve import resolve_specs, select_input_range, spec_input_id
    from ktriage.compile.remote import ClusterCompiler
    from ktriage.execute.base import remote_label
    from ktriage.execute.select import remote_executor
    from ktriage.predict.model import load_params
    from ktriage.predict.model_used import model_used
    from ktriage.record.workload import is_workload_path
    from ktriage.spec.model import input_label
    from ktriage.tune.scaling import scale_blocks
    from ktriage.tune.screen import screen
    from ktriage.tune.space import config_space
    from ktriage.tune.timing_run import time_candidates

    target = args.path_or_name(target, "target", example="liger.layer_norm")
    mode = args.optional_text(mode, "mode", "--mode", example="bwd")
    # a list here reached pathlib after the argument checks: "TypeError: expected str, bytes or os.PathLike"
    bundle = args.optional_path(bundle, "bundle", "--bundle")
    results_file = args.optional_path(results_file, "results_file", "--results")
    precision = args.optional_text(precision, "precision", "--precision", example="bf16")
    cluster = args.optional_text(cluster, "cluster", "--cluster", example="local")
    compile_only = args.switch(compile_only, "compile_only", "--compile-only")
    toolchains = args.texts(toolchains, "toolchains", "-t/--toolchain")
    inputs = args.texts(inputs, "inputs", "--input", numbers=True)
    input_id, num_inputs = args.INPUT_ID.optional(input_id), args.NUM_INPUTS.optional(num_inputs)
    jobs, compile_timeout = args.JOBS.optional(jobs), args.COMPILE_TIMEOUT(compile_timeout)
    budget, sm_count = args.BUDGET(budget), args.SM_COUNT.optional(sm_count)
    top_k, max_spill_bytes = args.TOP_K(top_k), args.MAX_SPILL_BYTES(max_spill_bytes)
    arch = args.arch(arch) if arch is not None else None
    model = args.model(model)  # a file that is no model is refused here, before any toolchain is built
    warps = args.wholes(warps, args.Whole("warps", "--warps", low=1, example=4))
    stages = args.wholes(stages, args.Whole("stages", "--stages", low=0, example=3))
    knobs: dict[str, tuple[int, ...]] | None = None  # blocks checked: a lone int is one value (blocks={"BLOCK": 8192})
    if blocks is not None:
        if not isinstance(blocks, Mapping):
            raise KtriageError(
                joined(option("blocks", "--block"), f" is a {type(blocks).__name__}, not a mapping"),
                "pass e.g. blocks={'BLOCK_SIZE': [8192]}",
            )
        knobs = {
            str(k): args.wholes(v, args.Whole(f"blocks[{k!r}]", "--block", low=1, example=8192)) or ()
            for k, v in blocks.items()
        }
        for k, v in knobs.items():  # an empty knob screened no config: "no config stays within 0 spill store bytes"
            if not k.strip() or not v:
                raise KtriageError(
                    joined(
                        option("blocks", "--block"),
                        f" {k!r}: {'no knob named' if not k.strip() else 'no values given'}",
                    ),
                    Worded(
                        "pass e.g. blocks={'BLOCK_SIZE': [8192, 16384]} (--block BLOCK_SIZE=8192,16384)",
                        "pass e.g. --block BLOCK_SIZE=8192,16384",
                    ),
                )
    screen_only, results_option = option("compile_only", "--compile-only"), option("results_file", "--results")
    if compile_only and results_file is not None:  # the timing step reads it, and compile_only skips that step
        raise KtriageError(
            worded(
                lambda o: (
                    f"{spelled(results_option, o)} reports the GPU winner from a timing of the tune bundle, but "
                    f"{o('compile_only', '--compile-only', True)} stops before timing"
                )
            ),
            worded(
                lambda o: (
                    f"drop {spelled(screen_only, o)} to read the results, or drop {spelled(results_option, o)} to screen only"
                )
            ),
        )
    if results_file is not None and Path(results_file).exists():  # a folder, a report: refused after every compile
        from ktriage.measure.results_file import read_results

        read_results(Path(results_file))  # missing is no error yet: the timing step prints the command that writes it
    if compile_only and len(toolchains) > 1:  # the others are timed on the GPU only: compile_only dropped them unsaid
        raise KtriageError(
            worded(
                lambda o: (
                    f"{', '.join(toolchains[1:])} after the first of {o('toolchains', '-t/--toolchain')}: a further "
                    "toolchain is timed on the GPU with the library's config, "
                    f"and {o('compile_only', '--compile-only', True)} stops before timing"
                )
            ),
            worded(
                lambda o: (
                    f"screen with one toolchain ({o('toolchains', '-t', toolchains[0])}), or drop {spelled(screen_only, o)} to time "
                    "the others too"
                )
            ),
        )
    if bundle is not None and not compile_only:  # a file here failed after every compile: NotADirectoryError
        check_writable(Path(bundle), option("bundle", "--bundle"), folder=True)
        from ktriage.workload.bundles.format import check_bundle_folder

        check_bundle_folder(Path(bundle))  # a manifest.json not a bundle's: refused before the screen compiles
    if not toolchains:
        raise KtriageError(
            worded(lambda o: f"no {o('toolchains', '-t/--toolchain')} given"),
            worded(lambda o: f"pass the toolchain to tune for, e.g. {o('toolchains', '-t', ['triton==3.4.0'])}"),
        )
    specs = resolve_specs(
        target,
        mode=mode,
        inputs=list(inputs) if inputs else None,
        target_arch=arch,
        dtype=precision,
        sm_count=sm_count,
        sm_count_beyond_specs=True,
    )
    specs = select_input_range(specs, input_id, num_inputs, spec_input_id)
    if len(specs) > 1 and not inputs and input_id is None and num_inputs is None:
        raise KtriageError(
            f"{target} has {len(specs)} inputs and tune tunes each one: choose them",
            worded(lambda o: f"pass the inputs to tune as {o('inputs', '--input')}, e.g. ")
            + option("inputs", "--input", [input_label(s.meta, s.name) for s in specs[:2]]),
        )
    spaces = [config_space(spec, warps=warps, stages=stages, blocks=knobs) for spec in specs]
    params = load_params(model)  # every input's estimates and ties priced by one model (--model)
    tc, *others = resolve_toolchains(toolchains)
    timings: list[JSONObject | None] = [None] * len(spaces)
    notes: list[tuple[str, str]] = []
    warnings: list[str] = []
    with progress.task("compiling candidates") as step:
        executor = remote_executor(cluster)
        where = remote_label(executor)
        if where:
            step.say(f"on {where}")
        with ClusterCompiler(jobs=jobs, timeout_s=compile_timeout, executor=executor) as compiler:
            # a spec file's launch by values, as the toolchain's JIT decides it (an @triton.autotune kernel
            # runs its autotuner's config, not Triton's defaults): the space's default and its changes are
            # measured against that (spaces above were built from the preview to refuse bad options early)
            spaces = [
                config_space(compiler.decide(space.spec, tc), warps=warps, stages=stages, blocks=knobs)
                if space.spec.launch is not None
                else space
                for space in spaces
            ]
            results = [
                screen(
                    space,
                    tc,
                    compiler,
                    top_k=top_k,
                    max_spill_bytes=max_spill_bytes,
                    sm_count=sm_count,
                    on_done=step.callback,
                    params=params,
                )
                for space in spaces
            ]
            scalings: list[ScaleResult[Any]] = [
                scale_blocks(space.spec, tc, compiler, space=space, sm_count=sm_count, max_spill_bytes=max_spill_bytes)
                for space in spaces
            ]
            if not compile_only and any(r.kept for r in results):
                recorded = Path(target) if is_workload_path(target) and Path(target).is_file() else None
                run = time_candidates(
                    results,
                    compiler,
                    bundle=bundle,
                    budget=budget,
                    results_file=results_file,
                    sm_count=sm_count,
                    others=others,
                    workload=recorded,
                )
                timings, notes, warnings = list(run.timings), run.notes, run.warnings
    return TuneReport(results, scalings, timings, notes, warnings, model_used(model))
