"""``ktriage.api.bisect(source=..., good=..., bad=..., ...) -> BisectReport``: find the first bad
release, ptxas or commit, then explain it against its predecessor (docs/bisect.md).

Why an entry point: the pass's default (the op's own), the check of ``gpus`` (a timed bisect's
only) and the report's rendering were the CLI's; a script bisecting in CI now makes one call and
gets a report that renders itself as ``ktriage bisect`` writes it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ktriage.api import _args as args
from ktriage.api.paths import check_writable
from ktriage.bisect.run import BisectOptions
from ktriage.bisect.run import BisectReport as BisectResult
from ktriage.brief import brief
from ktriage.catalog.resolve import op_default_mode
from ktriage.errors import KtriageError, option, worded
from ktriage.mdsafe import markdown_writer
from ktriage.stats.gate import check_gate

if TYPE_CHECKING:
    from rich.console import Console

    from ktriage.schema.jsontypes import JSONObject


@dataclass(frozen=True)
class BisectReport:
    """What the bisect found (``result``: the stages, the culprit, its explain), with the renderers
    ``ktriage bisect`` writes through."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    result: BisectResult
    title: str

    @property
    def found(self) -> bool:
        """A single culprit was found (the final stage's status is "culprit")."""
        return self.result.found

    @property
    def state_path(self) -> Path | None:
        """The state file: rerun with ``resume=True`` to continue without re-testing."""
        return self.result.state_path

    def to_json(self) -> JSONObject:
        from ktriage.report.bisect import to_json

        return to_json(self.result)

    def json_text(self) -> str:
        import json

        return json.dumps(self.to_json(), indent=1)

    @markdown_writer
    def to_markdown(self) -> str:
        from ktriage.report.bisect import to_markdown

        return to_markdown(self.result, title=self.title)

    def print_table(self, console: Console) -> None:
        from ktriage.report.bisect import print_report

        print_report(self.result, console)


@args.entry_point
def bisect(
    *,
    source: str,
    good: str,
    bad: str,
    metric: str | None = None,
    command: str | None = None,
    op: str | None = None,
    mode: str | None = None,
    inputs: int | Sequence[str | int] = (),
    spec: str | None = None,
    toolchain: str | None = None,
    build: str | None = None,
    first_parent: bool = False,
    pin_file: str | None = None,
    pin_repo: str | Path | None = None,
    workers: int = 1,
    timeout: float | None = None,
    build_timeout: float = 3600.0,
    state: str | Path | None = None,
    resume: bool = False,
    pre: bool = False,
    arch: str = "sm_90",
    dtype: str | None = None,
    jobs: int | None = None,
    explain: bool = True,
    keep_checkouts: bool = False,
    cluster: str | None = None,
    bundle: str | Path | None = None,
    backend: str | None = None,
    artifact_timing: str = "kernel",
    max_samples: int = 200,
    threshold: float = 0.05,
    gpus: str | None = None,
    say: Callable[[str], None] | None = None,
) -> BisectReport:
    """Bisect ``source`` (``pypi:triton``, ``pypi:<package>``, ``ptxas`` or ``git:PATH``) between
    ``good`` and ``bad`` on a compile ``metric`` (``spill_store_bytes``...; ``latency`` times a
    ``bundle`` on this GPU host) or a ``command`` judged like ``git bisect run``. ``mode``: the
    pass (default: the op's own, else bwd). ``gpus``: a timed bisect's GPUs ("0,1", "all").
    ``say``: the progress messages (default: none). A lone str is one input (``inputs="7"``);
    ``arch`` takes every spelling ``--arch`` does (``9.0``, ``90``, ``cuda:90``).

    Raises :class:`~ktriage.errors.KtriageError` for bad arguments; an unsure or ambiguous range is
    not an error: :attr:`BisectReport.found` is False."""
    from ktriage.bisect.run import run_bisect
    from ktriage.execute.select import cluster_address

    say = args.callback(say, "say")
    first_parent = args.switch(first_parent, "first_parent", "--first-parent")
    resume, pre = args.switch(resume, "resume", "--resume"), args.switch(pre, "pre", "--pre")
    explain = args.switch(explain, "explain", "--no-explain")
    keep_checkouts = args.switch(keep_checkouts, "keep_checkouts", "--keep-checkouts")

    source = args.text(source, "source", example="pypi:triton")
    # one-string arguments: cluster=["local"] was AttributeError: 'list' object has no attribute 'strip'
    metric = args.optional_text(metric, "metric", "--metric", example="spill_store_bytes")
    command = args.optional_text(command, "command", "--command", example="python repro.py")
    op = args.optional_text(op, "op", "--op", example="liger.layer_norm")
    mode = args.optional_text(mode, "mode", "--mode", example="bwd")
    spec = args.optional_text(spec, "spec", "--spec", example="spec.toml")
    toolchain = args.optional_text(toolchain, "toolchain", "-t/--toolchain", example="triton==3.4.0")
    build = args.optional_text(build, "build", "--build", example="pip install -e python")
    pin_file = args.optional_text(pin_file, "pin_file", "--pin-file", example="cmake/llvm-hash.txt")
    dtype = args.optional_text(dtype, "dtype", "--precision/--dtype", example="bf16")
    cluster = args.optional_text(cluster, "cluster", "--cluster", example="local")
    backend = args.optional_text(backend, "backend", "--backend", example="liger")
    artifact_timing = args.text(artifact_timing, "artifact_timing", "--artifact-timing", example="kernel")
    gpus = args.optional_text(gpus, "gpus", "--gpus", example="0,1")
    pin_repo = args.optional_path(pin_repo, "pin_repo", "--pin-repo")
    state, bundle = args.optional_path(state, "state", "--state"), args.optional_path(bundle, "bundle", "--bundle")
    good, bad = args.text(good, "good", example="3.3.1"), args.text(bad, "bad", example="3.4.0")
    inputs = args.texts(inputs, "inputs", "--input", numbers=True)
    arch, jobs = args.arch(arch), args.JOBS.optional(jobs)
    workers, max_samples = args.WORKERS(workers), args.MAX_SAMPLES(max_samples)
    timeout, build_timeout = args.TIMEOUT.optional(timeout), args.BUILD_TIMEOUT(build_timeout)
    threshold = args.THRESHOLD(threshold)
    check_gate(threshold)
    if state is not None:  # a folder here failed only at the first save, after the preflight had run
        check_writable(state, option("state", "--state"), example="bisect-state.json")
    opts = BisectOptions(
        source=source,
        good=good,
        bad=bad,
        metric=metric,
        command=command,
        op=op,
        mode=mode or op_default_mode(op) or "bwd",
        inputs=tuple(inputs),
        spec=spec,
        toolchain=toolchain,
        build=build,
        first_parent=first_parent,
        pin_file=pin_file,
        pin_repo=pin_repo.resolve() if pin_repo else None,
        workers=workers,
        timeout_s=timeout,
        build_timeout_s=build_timeout,
        state=state.resolve() if state else None,
        resume=resume,
        pre=pre,
        arch=arch,
        dtype=dtype,
        jobs=jobs,
        explain=explain,
        keep_checkouts=keep_checkouts,
        cluster=cluster,
        bundle=bundle.resolve() if bundle else None,
        backend=backend,
        artifact_timing=artifact_timing,
        max_samples=max_samples,
        threshold=threshold,
        gpus=tuple(_host_gpus(gpus, metric, cluster)),
        cluster_gpus=gpus if cluster_address(cluster) is not None else None,
    )
    return BisectReport(result=run_bisect(opts, say=say), title=f"ktriage bisect {source} {good}..{bad}")


def _host_gpus(spec: str | None, metric: str | None, cluster: str | None) -> list[int]:
    """``gpus`` of a timed bisect on this host, checked before any work (a compile-only bisect has
    nothing to place); on a cluster the run counts the cluster's GPUs instead (``cluster_gpus``)."""
    from ktriage.execute.select import cluster_address

    if spec is None:
        return []
    if metric != "latency":
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('gpus', '--gpus')} applies to a timed bisect ({o('metric', '--metric', 'latency')}), "
                    f"not {o('metric', '--metric', metric)}"
                )
            ),
            worded(
                lambda o: (
                    f"leave {o('gpus', '--gpus')} out: a compile-only bisect uses no GPU "
                    f"({o('workers', '--workers')} parallelizes it)"
                )
            ),
        )
    if cluster_address(cluster) is not None:
        return []
    from ktriage.measure.gpus import host_gpus

    return host_gpus(spec) or []
