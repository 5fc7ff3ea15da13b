"""Run Nsight Compute on each toolchain's kernels of a bundle input and export the raw counters.

For each toolchain: ``ncu --clock-control none --profile-from-start off --section ... --metrics ...
-o REP python -m ktriage.profile.target ...`` (one profiled call after warm-up, see
:mod:`ktriage.profile.target`), then ``ncu --import REP --csv --page raw`` (parsed by
:mod:`ktriage.profile.ncu`), ``--page details`` (for people) and ``--page source --print-source sass``
(the SourceCounters per SASS instruction: per-line stalls, :mod:`ktriage.profile.source`). ``--clock-control none`` keeps the
GPU's own clocks (ncu locks them to base by default, which is not what the bench measured).

If an explicit metric is unknown to this ncu, the run is repeated with the sections alone. If ncu
cannot profile at all (no permission to the GPU performance counters, no ncu, no GPU), the
toolchain's entry says why in one line and the others are still tried.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ktriage.errors import Worded, spelled, worded
from ktriage.profile.ncu import Launch, parse_raw_csv
from ktriage.profile.target import TARGET_ERROR

if TYPE_CHECKING:
    from ktriage.profile.diff import ProfileReport

SECTIONS = (
    "LaunchStats",
    "Occupancy",
    "SpeedOfLight",
    "MemoryWorkloadAnalysis",
    "MemoryWorkloadAnalysis_Tables",
    "WarpStateStats",
    "SourceCounters",
)
BASIC_SECTIONS = ("LaunchStats", "Occupancy", "MemoryWorkloadAnalysis", "WarpStateStats", "SourceCounters")
METRICS = (
    "l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_local_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
    "lts__t_sectors_op_atom.sum",
    "lts__t_sectors_op_red.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_bytes.sum",
    "smsp__inst_executed.sum",
    "gpu__time_duration.sum",
)
PERMISSION = ("ERR_NVGPUCTRPERM", "permission to access NVIDIA GPU Performance Counters")
_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b")


@dataclass
class ToolchainProfile:
    """What ncu gave for one toolchain: its launches, or why there are none."""

    toolchain: str
    launches: list[Launch] = field(default_factory=list)
    error: str | None = None
    files: dict[str, str] = field(default_factory=dict)  # raw_csv, details_csv, log, report
    command: list[str] = field(default_factory=list)


def find_ncu(ncu: str | None = None) -> str | None:
    if ncu:
        return ncu
    found = shutil.which("ncu")
    if found:
        return found
    for root in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu"):
        if os.path.exists(root):
            return root
    return None


def ncu_version(ncu: str) -> str:
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown ({exc})"
    return out.strip().splitlines()[-1] if out.strip() else "unknown"


def _one_line(text: str) -> str:
    """The reason in ncu's output, on one line: the profiled program's own error (``TARGET_ERROR``),
    else ncu's error (not its "the application returned an error code", which says nothing), else the
    exception a traceback ended with, else the last line that is not one of ncu's notes. A warning
    such as "Running with unmodified GPU clocks" is never the reason."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    own = [ln[len(TARGET_ERROR) :] for ln in lines if ln.startswith(TARGET_ERROR)]
    if own:
        return own[-1][:300]
    errors = [ln for ln in lines if ln.startswith("==ERROR==") and "returned an error code" not in ln]
    if errors:
        return errors[0][:300]
    raised = [ln for ln in lines if _RAISED.match(ln)]
    if raised:
        return raised[-1][:300]
    rest = [ln for ln in lines if not ln.startswith(("==WARNING==", "==PROF==", "=="))]
    return (rest or lines or ["no output"])[-1][:300]


def profile_toolchain(
    ncu: str,
    bundle: Path,
    toolchain: str,
    input_id: int,
    backend: str,
    out_dir: Path,
    *,
    warmup: int = 3,
    timeout_s: float = 600,
) -> ToolchainProfile:
    """Profile one toolchain (see the module docstring); raw files go to ``out_dir/<name>.*``."""
    name = toolchain.replace("/", "_")
    rep = out_dir / f"{name}.ncu-rep"
    result = ToolchainProfile(toolchain)
    target = [
        sys.executable,
        "-m",
        "ktriage.profile.target",
        str(bundle),
        toolchain,
        str(input_id),
        backend,
        str(warmup),
    ]
    attempts = [(SECTIONS, METRICS), (SECTIONS, ()), (BASIC_SECTIONS, ())]
    log_parts: list[str] = []
    for sections, metrics in attempts:
        cmd = [
            ncu,
            "--clock-control",
            "none",
            "--profile-from-start",
            "off",
            "--target-processes",
            "all",
            "-f",
            "-o",
            str(rep),
        ]
        for s in sections:
            cmd += ["--section", s]
        if metrics:
            cmd += ["--metrics", ",".join(metrics)]
        cmd += target
        result.command = cmd
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except (OSError, subprocess.SubprocessError) as exc:
            result.error = f"ncu could not run: {exc}"
            break
        output = proc.stdout + proc.stderr
        log_parts.append(f"$ {' '.join(cmd)}\n{output}\n[exit {proc.returncode}]\n")
        if any(p in output for p in PERMISSION):
            result.error = (
                "ncu could not run: no permission to the GPU performance counters (ERR_NVGPUCTRPERM): "
                "run as root or set NVreg_RestrictProfilingToAdminUsers=0"
            )
            break
        if proc.returncode == 0 and rep.exists():
            result.error = None
            break
        if TARGET_ERROR in output:  # the program failed, not ncu's sections: fewer of them would not help
            result.error = f"the profiled program failed: {_one_line(output)}"
            break
        if proc.returncode == 0:  # ncu ran and profiled nothing (no launch in the range): not "failed (exit 0)"
            result.error = f"ncu exited 0 but wrote no report: {_one_line(output)}"
        else:
            result.error = f"ncu failed (exit {proc.returncode}): {_one_line(output)}"
    log = out_dir / f"{name}.log"
    log.write_text("".join(log_parts))
    result.files["log"] = log.name
    if result.error is not None or not rep.exists():
        return result
    result.files["report"] = rep.name
    for page in ("raw", "details"):
        exported = subprocess.run(
            [ncu, "--import", str(rep), "--csv", "--page", page, "--print-units", "base"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if exported.returncode != 0:  # an ncu without --print-units
            exported = subprocess.run(
                [ncu, "--import", str(rep), "--csv", "--page", page], capture_output=True, text=True, timeout=timeout_s
            )
        path = out_dir / f"{name}.{page}.csv"
        path.write_text(exported.stdout)
        result.files[f"{page}_csv"] = path.name
        if page == "raw":
            if exported.returncode != 0:
                result.error = f"ncu --import failed: {_one_line(exported.stderr + exported.stdout)}"
                return result
            try:
                result.launches = parse_raw_csv(exported.stdout)
            except ValueError as exc:
                result.error = str(exc)
                return result
    if not result.launches:
        result.error = "ncu profiled no kernel launch (no counters, or the profiled range was empty)"
        return result
    # SourceCounters per SASS instruction (per-line stalls: profile/source.py); its absence costs nothing else
    try:
        source = subprocess.run(
            [ncu, "--import", str(rep), "--csv", "--page", "source", "--print-source", "sass"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except (OSError, subprocess.SubprocessError):
        return result
    if source.returncode == 0 and source.stdout.strip():
        path = out_dir / f"{name}.source.csv"
        path.write_text(source.stdout)
        result.files["source_csv"] = path.name
    return result


def input_ids(bundle: Any) -> list[int]:
    """The input ids of a bundle: an op bundle's input cases, a recorded bundle's entries (one per
    recorded (kernel, input); their rows carry no op facts)."""
    return [int(i["id"]) for i in bundle.inputs]


def default_input(bundle: Any) -> int:
    ids = input_ids(bundle)
    if not ids:
        from ktriage.errors import KtriageError

        raise KtriageError(f"bundle {bundle.path} has no input to profile", "build it again with at least one input")
    return ids[0]


def _input(value: str | None = None) -> Worded:
    """``input='N=4608' (--input N=4608)``: kt.profile's keyword is ``input`` (one input), where bench's and
    explain's are ``inputs``; a refusal naming ``--input`` alone told a library caller of a flag."""
    from ktriage.errors import option

    return option("input", "--input", value)


def select_input(bundle: Any, selector: str) -> int:
    """The one input of ``bundle`` that ``selector`` names. An op bundle's: an input id ("7"), shape facts
    ("N=4608", "M=4096,N=4608"), as bench's ``--input`` (``ops.inputs.select_inputs``).
    A recorded bundle's: an entry's number ("3", as ``--input-id`` and the bundle's ``inputs[].id``), else
    what ``bench --bundle -i`` takes (:func:`_recorded_entry`). Profile runs ncu on one input, so a selector
    that matches several is refused with their ids rather than silently taking the first."""
    from ktriage.errors import KtriageError
    from ktriage.ops.inputs import InputCase, select_inputs
    from ktriage.workload.recorded.bundle import is_recorded_bundle

    text = str(selector).strip()
    if text.isdigit():
        return int(text)
    if is_recorded_bundle(bundle):
        return _recorded_entry(bundle, text)
    cases = [InputCase(int(i["id"]), {k: int(v) for k, v in (i.get("facts") or {}).items()}) for i in bundle.inputs]
    if not cases or not cases[0].facts:
        raise KtriageError(
            worded(lambda o: f"{spelled(_input(text), o)}: bundle {bundle.path} records no shape facts for its inputs"),
            worded(
                lambda o: (
                    f"give one of its input ids as {spelled(_input(), o)} or {o('input_id', '--input-id')}: {input_ids(bundle)}"
                )
            ),
        )
    chosen = select_inputs(str(getattr(bundle, "op", "") or "the bundle"), cases, [text], flag=_input())
    if len(chosen) > 1:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{spelled(_input(text), o)} matches {len(chosen)} inputs of bundle {bundle.path}: profile runs one"
                )
            ),
            "add a fact or give one id: " + "; ".join(f"{c.id} ({c.label()})" for c in chosen[:12]),
        )
    return chosen[0].id


def _recorded_entry(bundle: Any, text: str) -> int:
    """The entry of a recorded bundle that ``text`` names as ``bench --bundle -i`` names its inputs
    (``RecordedBundle.select``: a recorded kernel as the reports print it, ``K3`` or ``K3:fn``; an
    input's label, its report label, or a short label alone or inside its kernel's name; a range), so that
    what bench's and explain's reports print selects here too; it was "chosen by entry id, not by shape
    facts" for every one of them. A digit is the entry's number (:func:`select_input`), not bench's input
    id within each kernel. The refusals keep the selector's own problem and give profile's fix: it has no
    ``--kernel`` to narrow with, and its numbers are the entries'."""
    from ktriage.errors import KtriageError, Worded, in_flags
    from ktriage.spec.ranges import INPUTS
    from ktriage.workload.recorded.bundle import recorded_view

    view = recorded_view(bundle)
    entries = view.entries
    try:
        chosen = view.select(None, [text])
    except KtriageError as exc:  # the selector names bench's inputs (--input); profile's keyword is input
        # the library's keyword swapped; the command line's flag (--input) is the same for both verbs
        problem = Worded(str(exc.problem).replace(INPUTS, _input()), in_flags(exc.problem))
        raise KtriageError(problem, _entry_fix(entries, entries)) from None
    if len(chosen) != 1:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{spelled(_input(text), o)} names {len(chosen)} entries of bundle {bundle.path}, and profile runs one"
                )
            ),
            _entry_fix(chosen, entries),
        )
    return chosen[0].id


def _entry_fix(shown: Sequence[Any], entries: Sequence[Any]) -> str:
    """What a recorded bundle's ``--input`` takes, each form with an example from the bundle's own
    entries, and ``shown``'s entries as the choices (all of them, or those a selector of several named)."""
    if not entries:
        return "the bundle has no entry: build it again with at least one recorded input"
    first = entries[0]

    forms: list[str] = [
        worded(
            lambda o: (
                f"its entry number ({spelled(_input(str(first.id)), o)} or {o('input_id', '--input-id', first.id)})"
            )
        )
    ]
    alone = next((e for e in entries if sum(o.kernel == e.kernel for o in entries) == 1), None)
    if alone is not None:  # a kernel names one entry only where it has one input
        forms.append(f"its kernel where that has one input ({alone.kernel} or {alone.backend})")
    forms.append(f"its label as bench's report prints it ({first.label})")
    forms.append(f"some of its arguments inside its kernel's name, as explain prints it ({first.kernel}[name=value])")
    listed = "; ".join(f"{e.id}: {e.backend} {e.label}" for e in shown[:12]) + ("; ..." if len(shown) > 12 else "")
    return "give one entry: " + ", ".join(forms[:-1]) + f" or {forms[-1]}; the entries: {listed}"


def input_backends(bundle: Any, input_id: int) -> list[str]:
    """The backends of one bundle input: an op bundle's artifact backends, or a recorded entry's
    ``K3:function`` (the backend its bench cells have)."""
    from ktriage.errors import KtriageError
    from ktriage.workload.recorded.bundle import is_recorded_bundle, recorded_view

    if is_recorded_bundle(bundle):
        entries = recorded_view(bundle).entries
        entry = next((e for e in entries if e.id == input_id), None)
        if entry is None:
            raise KtriageError(
                f"bundle {bundle.path} has no recorded entry {input_id}",
                f"entries: {', '.join(f'{e.id} ({e.backend} {e.label})' for e in entries[:20])}",
            )
        return [entry.backend]
    row = next((i for i in bundle.inputs if int(i["id"]) == input_id), None)
    if row is None:
        raise KtriageError(f"bundle {bundle.path} has no input {input_id}", f"inputs: {input_ids(bundle)}")
    return list(row["kernels"])


def input_spec_keys(bundle: Any, input_id: int, backend: str) -> list[str]:
    """The kernels (spec keys) one toolchain runs for this input and backend: a recorded entry's one
    kernel, or an op input's kernels of that backend (one per role)."""
    from ktriage.workload.recorded.bundle import is_recorded_bundle, recorded_view

    if is_recorded_bundle(bundle):
        return [recorded_view(bundle).entry(input_id).spec_key]
    row = next((i for i in bundle.inputs if int(i["id"]) == input_id), None)
    kernels = (row or {}).get("kernels", {}).get(backend, {})
    return [str(k) for k in kernels.values()]


def _no_ncu_reason() -> str:
    """Why nothing was profiled when ncu is not on PATH. On a machine with no GPU either (the one a bundle
    was compiled on), installing ncu would not help: that is said too (the CUDA driver is asked in a
    child process, as ``ktriage record`` asks it; a probe that cannot tell says nothing more)."""
    from ktriage.record.run import gpu_problem

    reason = "ncu (Nsight Compute) is not on PATH: nothing profiled"
    problem = gpu_problem()
    if problem:
        reason += f"; this machine cannot run kernels either ({problem}): profile the bundle on the GPU machine"
    return reason


def profile_bundle(
    bundle_path: Path,
    *,
    input_id: int | None,
    backend: str | None,
    out_dir: Path,
    ncu: str | None = None,
    warmup: int = 3,
) -> ProfileReport:
    """Profile every toolchain of a bundle on one input; returns the profile document (see diff.py)."""
    from ktriage.profile.diff import profile_document
    from ktriage.workload.bundles.format import load_bundle

    bundle = load_bundle(bundle_path)
    case_id = default_input(bundle) if input_id is None else input_id
    names = input_backends(bundle, case_id)
    chosen = backend or names[0]
    out_dir.mkdir(parents=True, exist_ok=True)
    exe = find_ncu(ncu)
    profiles: list[ToolchainProfile] = []
    version = ncu_version(exe) if exe else None
    kernels = input_spec_keys(bundle, case_id, chosen)
    no_ncu = _no_ncu_reason() if exe is None else ""
    for tc in bundle.toolchain_ids():
        if exe is None:
            profiles.append(ToolchainProfile(tc, error=no_ncu))
            continue
        unbuilt = bundle.failure_of(kernels, tc)
        if unbuilt is not None:  # known from the bundle: no ncu start (three, with its retries) to find out
            profiles.append(ToolchainProfile(tc, error=f"not run: {unbuilt}"))
            continue
        profiles.append(profile_toolchain(exe, Path(bundle.path), tc, case_id, chosen, out_dir, warmup=warmup))
    return profile_document(bundle, case_id, chosen, profiles, ncu_version=version, raw_dir=out_dir)
