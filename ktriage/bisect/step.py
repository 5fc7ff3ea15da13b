"""``ktriage bisect-step``: one candidate (the current checkout) against a stored baseline, as a
``git bisect run`` script.

Record the baseline at a good commit (``--record-baseline FILE``) and, optionally, at a bad one
(``--record-baseline FILE --as bad``); then ``git bisect run ktriage bisect-step --baseline FILE``
compiles the checked-out kernels and exits 0 (good), 1 (bad), 125 (cannot tell or cannot compile:
skip) or 128 (ktriage itself failed: abort). The decision is the compile-only rule of
``ktriage.bisect.predicates`` (closer to the bad value than to the good one); with no bad value
recorded, any change from the good value is bad.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple, TypedDict, TypeVar

from ktriage.atomic import write_atomic
from ktriage.bisect.candidate import Candidate
from ktriage.bisect.predicates import (
    KernelMeasurer,
    KernelSource,
    check_metric,
    decide_values,
    left_out_here,
    metric_values,
    no_value,
)
from ktriage.bisect.workspace import CandidateFailed, Prepared
from ktriage.compile.compiler import Compiler
from ktriage.errors import CompileError, FormatError, KtriageError, joined, option, worded
from ktriage.schema.bisect_state import BASELINE_FIX, BaselineSchema
from ktriage.schema.core import check_depth, convert, parse_json, read_text, size_limit
from ktriage.schema.jsontypes import JSONObject
from ktriage.wording import agree

EXIT_GOOD, EXIT_BAD, EXIT_SKIP, EXIT_ABORT = 0, 1, 125, 128
MAX_BASELINE_MB = 64  # a value per kernel: kilobytes in practice; KTRIAGE_MAX_INPUT_MB sets it
log = logging.getLogger("ktriage.bisect")
T = TypeVar("T")


@dataclass
class StepConfig:
    """What a step measures; stored in the baseline so that ``bisect-step --baseline FILE`` needs no more."""

    metric: str
    toolchain: str
    spec: str | None = None
    op: str | None = None
    mode: str = "bwd"
    inputs: tuple[str, ...] = ()
    arch: str = "sm_90"

    def to_json(self) -> JSONObject:
        return {
            "metric": self.metric,
            "toolchain": self.toolchain,
            "spec": self.spec,
            "op": self.op,
            "mode": self.mode,
            "inputs": list(self.inputs),
            "arch": self.arch,
        }


def _head(cwd: Path) -> str:
    proc = subprocess.run(["git", "-C", str(cwd), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else "working-tree"


class Here(NamedTuple):
    """The checkout's metric values by kernel, and why each kernel left out has none (``failed``:
    :class:`~ktriage.bisect.predicates.Measured`'s, one line naming the kernel), so that a skip or a
    baseline says which error cost a kernel instead of only that it is missing."""

    values: dict[str, float]
    failed: dict[str, str]


def measure_here(cfg: StepConfig, *, cwd: Path | None = None, cache_dir: Path | None = None) -> Here:
    """The metric of every selected kernel in the current checkout. A kernel that does not load or
    compile, or whose analysis gives no value for the metric, has none, and why is in ``failed`` (:attr:`KernelSource.each_kernel_bisected`);
    CandidateFailed if none compiles, or if one that ``inputs`` selects in the checkout's spec file
    does not."""
    here = cwd or Path(os.getcwd())
    check_metric(cfg.metric, timed=False)
    if cfg.op:
        from ktriage.catalog import expand_op

        source = KernelSource(specs=expand_op(cfg.op, mode=cfg.mode, target=cfg.arch, inputs=list(cfg.inputs) or None))
    elif cfg.spec:
        source = KernelSource(repo_spec=cfg.spec, inputs=cfg.inputs)
    else:
        raise KtriageError(
            "bisect-step needs kernels",
            worded(
                lambda o: (
                    f"give {o('spec', '--spec', 'path/in/repo.toml')} or {o('op', '--op', 'NAME')} "
                    "(or a baseline that records them)"
                )
            ),
        )
    sha = _head(here)
    prepared = Prepared(Candidate(0, sha, sha[:12]), toolchain=cfg.toolchain, checkout=here)
    compiler = Compiler(jobs=1, cache_dir=cache_dir)
    try:
        results, failed, _ = KernelMeasurer(source, compiler).measure(prepared)
    finally:
        compiler.close()
    values, no_metric = metric_values(results, cfg.metric)
    return Here(values, {**failed, **no_metric})


class _Measured(TypedDict):
    values: dict[str, float]
    commit: str


class BaselineSide(_Measured, total=False):
    """One endpoint of a baseline file: the metric values per kernel and the commit they were measured at;
    ``left_out``: the kernels of the spec file with no value there and why (written only when some are;
    a base class because ``NotRequired`` needs Python 3.11)."""

    left_out: dict[str, str]


class BaselineFile(TypedDict, total=False):
    """``bisect-step --record-baseline FILE``: the options (``StepConfig.to_json``) and each endpoint."""

    config: JSONObject
    good: BaselineSide
    bad: BaselineSide


def record_baseline(
    path: Path, cfg: StepConfig, role: Literal["good", "bad"], *, cwd: Path | None = None, cache_dir: Path | None = None
) -> BaselineFile:
    """Measure here and store the values as the ``role`` endpoint (keeps the other endpoint's values).

    A kernel of the spec file (without ``inputs``) that does not load or compile here has no value, so
    later commits are not judged on it. It is recorded anyway, with a warning naming each such kernel and
    its error and the endpoint's ``left_out`` in the file, rather than refused. Why: ``bisect`` judges a
    commit on the kernels that differ between its endpoints and notes, without stopping, a kernel that
    fails at an endpoint; a step follows the same rule. And refusing could not be fixed where it is met:
    the baseline is a past good commit, whose kernel cannot be fixed without recording another commit.
    Why not silently: the user would believe every kernel of the file is judged. With ``inputs`` a
    kernel that fails refuses the recording (CompileError): it was chosen by name."""
    here = cwd or Path(os.getcwd())
    data: BaselineFile = {}
    if path.is_file() and path.stat().st_size:  # an empty file (mktemp's) holds nothing to keep
        try:
            data, _ = read_baseline(path)
        except FormatError as exc:  # it replaced a results file measured on a GPU without a word
            raise FormatError(
                joined(
                    option("record_baseline", "--record-baseline"),
                    f" {path} exists and is not a bisect-step baseline (",
                    exc.problem,
                    "): recording would replace it",
                ),
                f"give a new file name, or remove {path} first",
            ) from None
    if data and data.get("config") != cfg.to_json():
        if role == "good":
            data = {}  # a new baseline for another question
        else:
            raise FormatError(
                f"baseline {path} was recorded for other options ({data.get('config')})",
                worded(
                    lambda o: (
                        f"record the bad value with the same {o('spec', '--spec')}, {o('op', '--op')}, "
                        f"{o('metric', '--metric')} and {o('toolchain', '--toolchain')} as the good one"
                    )
                ),
            )
    try:
        values, failed = measure_here(cfg, cwd=here, cache_dir=cache_dir)
    except CandidateFailed as exc:  # its log (each kernel's whole error and fix) as the details
        raise CompileError(
            f"cannot record the {role} baseline here: {exc.reason}",
            "record it at a commit that compiles",
            exc.log or None,
        ) from None
    if failed and cfg.inputs:  # a kernel of the catalog op chosen by --input (the spec file's: measure_here)
        raise CompileError(
            f"cannot record the {role} baseline here: {'; '.join(failed.values())}",
            worded(
                lambda o: (
                    f"record it at a commit where it compiles, or use another {o('metric', '--metric')} if it has no value"
                )
            ),
        )
    data["config"] = cfg.to_json()
    data[role] = {"values": values, "commit": _head(here)}
    _check_endpoints_differ(data, cfg.metric, role)
    if failed:
        data[role]["left_out"] = dict(failed)
        them, they = (
            agree(len(failed), "it", "them"),
            agree(len(failed), "it loads and compiles", "they load and compile"),
        )
        log.warning(
            worded(
                lambda o: (
                    f"the {role} baseline in {path} leaves out {', '.join(failed)}: no value at this commit "
                    f"({'; '.join(failed.values())}); later commits are not judged on {them}. To judge {them}, record "
                    f"the {role} baseline at a commit where {they} (one with no {cfg.metric} value: another "
                    f"{o('metric', '--metric')}); to judge chosen kernels only, name them with {o('inputs', '--input')}"
                )
            )
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, indent=1))
    return data


def _check_endpoints_differ(data: BaselineFile, metric: str, role: str) -> None:
    """Refuse (nothing written) a baseline whose good and bad endpoints give every kernel the same value,
    as ``bisect``'s preflight refuses such a range. Why: the file was written, and every commit of
    ``git bisect run`` then skipped with "no kernel differs between the endpoints" until git gave up
    ("We cannot bisect more!"), never saying that the two recorded endpoints do not differ."""
    good, bad = data.get("good"), data.get("bad")
    if good is None or bad is None:
        return
    g, b = good["values"], bad["values"]
    if any(k in b and b[k] != v for k, v in g.items()):
        return
    shown = ", ".join(f"{k}={v:g}" for k, v in list(g.items())[:4])
    other = "bad" if role == "good" else "good"
    raise KtriageError(
        f"endpoints do not differ: {metric} is the same at the good commit {str(good.get('commit', ''))[:12]} and "
        f"the bad commit {str(bad.get('commit', ''))[:12]} ({shown}); nothing recorded",
        worded(
            lambda o: (
                f"record the {role} baseline at a commit that shows the change (the {other} one is kept), or pick another "
                f"{o('metric', '--metric')} (e.g. {'registers' if metric != 'registers' else 'stack_bytes'}) "
                "for both endpoints"
            )
        ),
    )


def read_baseline(path: Path) -> tuple[BaselineFile, BaselineSchema]:
    """The baseline at ``path`` as written (to keep whole when an endpoint is added) and its fields
    checked (:class:`~ktriage.schema.bisect_state.BaselineSchema`): not UTF-8, not JSON, or another file
    (a results file) is a FormatError naming the field, never a UnicodeDecodeError or KeyError that
    ``git bisect run`` would get as exit 3."""
    origin = f"baseline {path}"
    text = read_text(path, what="baseline", limit=size_limit(MAX_BASELINE_MB), fix=BASELINE_FIX)
    data: BaselineFile = parse_json(text, origin=origin, fix=BASELINE_FIX)
    check_depth(data, origin=origin)
    return data, convert(data, BaselineSchema, origin=origin, fix=BASELINE_FIX)


class Baseline(NamedTuple):
    """A baseline file as a step judges with it: the options, each endpoint's values (``bad`` None when
    only the good one was recorded), and ``left_out``: each kernel either endpoint recorded without a
    value, and why (the good endpoint's error first), so that a step does not judge it and says so."""

    config: StepConfig
    good: dict[str, float]
    bad: dict[str, float] | None
    left_out: dict[str, str]


def load_baseline(path: Path) -> Baseline:
    _, data = read_baseline(path)
    if data.good is None:
        raise FormatError(
            f"baseline {path} has no good values",
            worded(lambda o: f"record them with {o('record_baseline', '--record-baseline', 'FILE')} at a good commit"),
        )
    c = data.config
    cfg = StepConfig(c.metric, c.toolchain, c.spec, c.op, c.mode, tuple(c.inputs), c.arch)
    left_out = {**(data.bad.left_out if data.bad else {}), **data.good.left_out}
    return Baseline(cfg, data.good.values, data.bad.values if data.bad else None, left_out)


def decide_step(
    values: dict[str, float],
    good: dict[str, float],
    bad: dict[str, float] | None,
    failed: dict[str, str] | None = None,
    left_out: Mapping[str, str] | None = None,
) -> tuple[int, str]:
    """(git-bisect exit code, reason) for measured values against the baseline. ``failed`` (from
    :func:`measure_here`): why a kernel has no value here; a skip it causes gives its error, as
    ``bisect``'s observation does (:func:`~ktriage.bisect.predicates.no_value`), and a verdict taken
    without it says it failed (:func:`~ktriage.bisect.predicates.decide_values`). ``left_out``
    (:attr:`Baseline.left_out`): kernels the baseline has no value for; they are not judged, whether
    they compile here or not, and the reason says so once, with the error recorded for each (not
    "did not compile here", which would name the wrong cause)."""
    left_out = left_out or {}
    if left_out:
        values, good, failed = _without(values, left_out), _without(good, left_out), _without(failed or {}, left_out)
        bad = _without(bad, left_out) if bad is not None else None
    code, reason = _decide_step(values, good, bad, failed or {})
    if left_out:
        them = agree(len(left_out), "it", "them")
        reason += (
            f"; {', '.join(left_out)} not judged: the baseline has no value for {them} ({'; '.join(left_out.values())})"
        )
    return code, reason


def _without(values: Mapping[str, T], kernels: Mapping[str, str]) -> dict[str, T]:
    return {k: v for k, v in values.items() if k not in kernels}


def _decide_step(
    values: dict[str, float], good: dict[str, float], bad: dict[str, float] | None, failed: dict[str, str]
) -> tuple[int, str]:
    if bad is None:
        changed = [k for k, g in good.items() if k in values and values[k] != g]
        missing = [k for k in good if k not in values]
        if missing:
            return EXIT_SKIP, "; ".join(no_value(k, failed) for k in missing)
        them = agree(len(failed), "it", "them")
        note = f"; {left_out_here(failed)} (not judged: the good baseline has no value for {them})" if failed else ""
        if changed:
            return EXIT_BAD, "changed from the good baseline: " + ", ".join(
                f"{k} {good[k]:g} -> {values[k]:g}" for k in changed
            ) + note
        return EXIT_GOOD, "equal to the good baseline" + note
    outcome, reason, _ = decide_values(values, good, bad, failed)
    code = {"good": EXIT_GOOD, "bad": EXIT_BAD}.get(outcome, EXIT_SKIP)
    return code, reason
