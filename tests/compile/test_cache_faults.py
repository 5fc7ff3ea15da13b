"""Fault injection on a real artifact cache: real compiles with real toolchains, no mocks of the cache.

Each scenario compiles one small kernel into an empty cache (a native toolchain: Triton's own cubin in
the frontend entry; one with another ptxas: a separate cubin entry), analyzes it (the resources
sidecar), damages the entry on disk, and runs again with a fresh compiler: the damage is detected and
reported once, the entry is quarantined and recompiled, and the result equals the undisturbed run."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ktriage.analyze.artifact import analyze_artifact
from ktriage.compile import cache
from ktriage.compile.compiler import Artifact, Compiler
from ktriage.spec.model import KernelSpec
from tests.triton_compile_for_tests import RED_SIGNATURE

pytestmark = pytest.mark.slow
KERNELS = Path(__file__).resolve().parent.parent / "kernels_for_tests.py"
REPO = Path(__file__).resolve().parents[2]
NATIVE = "triton==3.4.0"
OTHER_PTXAS = "triton==3.4.0,ptxas==12.4.131"


def red_spec(xblock: int = 64, rblock: int = 64, label: str = "R=64") -> KernelSpec:
    return KernelSpec(
        name=f"red[{xblock}x{rblock}]",
        source=f"{KERNELS}:red_kernel",
        signature=dict(RED_SIGNATURE),
        constexprs={"XBLOCK": xblock, "RBLOCK": rblock},
        divisible_by_16=("in_ptr", "out_ptr", "xnumel", "rnumel"),
        meta={"input_label": label},
    )


def facts(root: Path, tc: Any) -> tuple[dict[str, Any], Compiler]:
    """Compile + analyze with a fresh compiler on ``root``: what a run would report."""
    compiler = Compiler(jobs=1, cache_dir=root)
    with compiler:
        art = compiler.compile(red_spec(), tc)
        assert isinstance(art, Artifact), art
        resources, occupancy = analyze_artifact(art)
        return {
            "ptx": art.frontend.text("ptx"),
            "cubin": art.cubin.cubin_path.read_bytes(),
            "resources": resources,
            "occupancy": occupancy,
            "kernel": art.kernel_name,
        }, compiler


@pytest.fixture(scope="module")
def baseline(toolchain, tmp_path_factory) -> dict[str, dict[str, Any]]:
    """The undisturbed run of each toolchain."""
    root = tmp_path_factory.mktemp("undisturbed") / "artifacts"
    return {spec: facts(root, toolchain(spec))[0] for spec in (NATIVE, OTHER_PTXAS)}


def _differences(a: dict[str, Any], b: dict[str, Any]) -> str:
    """What differs between two runs' facts, for the failure message (the cubins by digest and size,
    the resources field by field): enough to tell a line-table change from a code change."""
    out = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if x == y:
            continue
        if isinstance(x, bytes) and isinstance(y, bytes):
            out.append(
                f"{key}: {hashlib.sha256(x).hexdigest()[:12]} ({len(x)} B) != {hashlib.sha256(y).hexdigest()[:12]} ({len(y)} B)"
            )
        elif hasattr(x, "__dataclass_fields__") and hasattr(y, "__dataclass_fields__"):
            fields = [f for f in x.__dataclass_fields__ if getattr(x, f) != getattr(y, f)]
            out.append(
                f"{key}: fields {fields}: "
                + "; ".join(f"{f}={getattr(x, f)!r:.200} != {getattr(y, f)!r:.200}" for f in fields)
            )
        else:
            out.append(f"{key}: {x!r:.200} != {y!r:.200}")
    return "\n".join(out)


def _entry(root: Path, kind: str) -> Path:
    [entry] = [p for p in (root / kind).iterdir() if not p.name.startswith(".")]
    return entry


def _cubin_entry(root: Path, spec: str) -> Path:
    return _entry(root, "frontend" if spec == NATIVE else "cubin")


def _cubin_file(spec: str) -> str:
    return "kernel.triton.cubin" if spec == NATIVE else "kernel.cubin"


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _sidecar(entry: Path) -> Path:
    [path] = [p for p in entry.glob("resources-*.json") if not p.name.startswith("resources-abi-")]  # not the ABI's
    return path


def _edit_resources(entry: Path) -> None:
    path = _sidecar(entry)
    wrapper = json.loads(path.read_text())
    wrapper["data"]["registers"] = 7  # an edit that would read as a regression
    path.write_text(json.dumps(wrapper))


SCENARIOS: dict[str, tuple[Callable[[Path, str], None], bool]] = {
    # name: (damage(root, toolchain spec), is it damage that must be reported)
    "truncated cubin, resources kept": (lambda r, s: _truncate(_cubin_entry(r, s) / _cubin_file(s)), True),
    "truncated cubin, resources deleted": (
        lambda r, s: (_truncate(_cubin_entry(r, s) / _cubin_file(s)), _sidecar(_cubin_entry(r, s)).unlink()),
        True,
    ),
    "resources deleted": (lambda r, s: _sidecar(_cubin_entry(r, s)).unlink(), False),  # a plain miss
    "edited resources": (lambda r, s: _edit_resources(_cubin_entry(r, s)), True),
    "truncated result.json": (lambda r, s: _truncate(_entry(r, "frontend") / "result.json"), True),
    "empty result.json": (lambda r, s: (_entry(r, "frontend") / "result.json").write_text(""), True),
    "no result.json": (lambda r, s: (_entry(r, "frontend") / "result.json").unlink(), True),
    "no manifest": (lambda r, s: (_entry(r, "frontend") / cache.MANIFEST).unlink(), True),
    "edited ptx": (lambda r, s: (_entry(r, "frontend") / "kernel.ptx").write_text("// stale PTX\n"), True),
}


@pytest.mark.parametrize("spec", [NATIVE, OTHER_PTXAS])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_damage_is_detected_quarantined_and_recompiled(
    toolchain, baseline, tmp_path: Path, spec: str, scenario: str, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "artifacts"
    tc = toolchain(spec)
    first, _ = facts(root, tc)
    # The undisturbed run of this test is the reference. Against the module's baseline (another fresh root,
    # compiled earlier in the same worker) (3.4.0, ptxas 12.4.131) differed in 2 of 3 fresh-clone suite runs on
    # 2026-12-03 (cubin and resources, never alone): a nondeterminism between compiles, open, not this test's
    # subject (damage detected, quarantined, recompiled to what was there).
    assert first["kernel"] == baseline[spec]["kernel"]
    damage, reported = SCENARIOS[scenario]
    damage(root, spec)
    with caplog.at_level("WARNING", logger="ktriage.cache"):
        again, compiler = facts(root, tc)
    assert again == first, _differences(first, again)
    warnings = [r.message for r in caplog.records if r.name == "ktriage.cache"]
    if reported:
        assert len(warnings) == 1 and "damaged entry" in warnings[0], warnings
        assert len(list((root / cache.QUARANTINE).iterdir())) >= 1
    else:
        assert warnings == [] and compiler.frontend_compiles == 0
    if scenario == "edited resources":  # the sidecar alone is moved aside (docs/cache.md), its entry kept
        assert compiler.frontend_compiles == 0 and compiler.cache_repairs == []
        assert all(p.is_file() and "-resources-" in p.name for p in (root / cache.QUARANTINE).iterdir())
    # nothing damaged is left to be served, and a third run is a clean hit
    assert [s.problem for s in cache.verify_all(root) if s.problem] == []
    third, compiler = facts(root, tc)
    assert third == first and compiler.frontend_compiles == 0 and compiler.cache_repairs == []


def test_a_kernel_shared_by_many_inputs_compiles_once(toolchain, tmp_path: Path) -> None:
    """Launches that differ only in name/meta share a key: one frontend compile in a parallel sweep."""
    specs = [red_spec(label=f"x{i}") for i in range(6)]
    with Compiler(jobs=4, cache_dir=tmp_path / "artifacts") as compiler:
        outcomes = compiler.compile_many(specs, [toolchain(OTHER_PTXAS)])
    assert all(isinstance(o, Artifact) for o in outcomes)
    assert compiler.frontend_compiles == 1
    assert len({o.cubin.dir for o in outcomes if isinstance(o, Artifact)}) == 1
    assert [o.spec.meta["input_label"] for o in outcomes] == [s.meta["input_label"] for s in specs]


# --- whole runs: the CLI as a subprocess ------------------------------------------------------------------

EXPLAIN = [
    "explain",
    "liger.embedding",
    "--bwd",
    "--num-inputs",
    "3",
    "-t",
    NATIVE,
    "-t",
    OTHER_PTXAS,
    "--format",
    "json",
    "--jobs",
    "2",
]


def _home(tmp_path: Path, ktriage_home: Path, name: str = "home") -> Path:
    """A ktriage home that shares the test home's toolchains and packages but has an empty artifact cache."""
    home = tmp_path / name
    home.mkdir()
    # what a toolchain record points into must be the test home's own: a folder missing there when this
    # runs (a fresh home where no ptxas release was installed yet) would not be linked, and the explain
    # subprocess would install the release into this temporary home and record that path in the shared
    # toolchains folder (a record pointing into a tmp_path, and another ptxas path in the cubin key)
    for shared in ("toolchains", "ptxas", "packages", "snapshots"):
        (ktriage_home / shared).mkdir(parents=True, exist_ok=True)
    for child in ktriage_home.iterdir():
        if child.name not in ("artifacts", "bisect", "fixes"):
            (home / child.name).symlink_to(child)
    return home


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "KTRIAGE_HOME": str(home), "PYTHONPATH": str(REPO), "KTRIAGE_COLUMNS": "200"}


def _explain(home: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ktriage", *EXPLAIN], env=_env(home), capture_output=True, text=True, timeout=timeout
    )


def _findings(stdout: str) -> Any:
    data = json.loads(stdout)
    return _strip_paths(data)


def _strip_paths(value: Any) -> Any:
    """The explain JSON without what names the home (cubin paths, timings)."""
    if isinstance(value, dict):
        return {
            k: _strip_paths(v)
            for k, v in value.items()
            if k not in ("path", "dir", "cubin_path", "elapsed_s", "created")
        }
    if isinstance(value, list):
        return [_strip_paths(v) for v in value]
    if isinstance(value, str) and "/artifacts/" in value:
        return "<path>"
    return value


@pytest.fixture(scope="module")
def undisturbed_explain(ktriage_home: Path, tmp_path_factory) -> Any:
    home = _home(tmp_path_factory.mktemp("explain"), ktriage_home)
    run = _explain(home)
    assert run.returncode == 0, run.stderr
    assert [s.problem for s in cache.verify_all(home / "artifacts") if s.problem] == []
    return _findings(run.stdout)


def _wait_for_entries(root: Path, proc: subprocess.Popen[str], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (root / "frontend").is_dir() and any(not p.name.startswith(".") for p in (root / "frontend").iterdir()):
            return
        if proc.poll() is not None:
            pytest.fail(f"explain ended before the first entry appeared: {proc.returncode}")
        time.sleep(0.05)
    pytest.fail("no cache entry appeared")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "sigint"])
def test_an_interrupted_explain_leaves_nothing_damaged(
    ktriage_home: Path, tmp_path: Path, undisturbed_explain, sig: signal.Signals
) -> None:
    home = _home(tmp_path, ktriage_home)
    root = home / "artifacts"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ktriage", *EXPLAIN],
        env=_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _wait_for_entries(root, proc)
        os.killpg(proc.pid, sig) if sig == signal.SIGKILL else proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if sig == signal.SIGINT:
        assert proc.returncode == 130, err
        assert "Traceback" not in err
        # Ctrl-C said nothing: one line now says what is kept and that the same command resumes (checked below)
        said = " ".join(err.split())
        assert (
            "interrupted: the compiles that finished are kept in the compile cache; run the same command "
            "again to resume from them"
        ) in said, err
    # every published entry verifies; temp folders may be left, and the next run cleans them
    assert [s.problem for s in cache.verify_all(root) if s.problem] == []
    again = _explain(home)
    assert again.returncode == 0, again.stderr
    assert "damaged entry" not in again.stderr
    assert _findings(again.stdout) == undisturbed_explain
    assert [s.problem for s in cache.verify_all(root) if s.problem] == []
    # a writer that was killed leaves its temp folder; it is stale once its pid is dead
    assert list(cache.stale_temps(root)) == []


def test_two_concurrent_explains_into_one_empty_cache(ktriage_home: Path, tmp_path: Path, undisturbed_explain) -> None:
    home = _home(tmp_path, ktriage_home)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "ktriage", *EXPLAIN],
            env=_env(home),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    for proc, (_, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err
        assert "damaged entry" not in err
    assert _findings(outs[0][0]) == _findings(outs[1][0]) == undisturbed_explain
    states = cache.verify_all(home / "artifacts")
    assert states and [s.problem for s in states if s.problem] == []
    assert not (home / "artifacts" / cache.QUARANTINE).exists()


def test_a_damaged_entry_in_a_whole_run_is_one_warning_line(
    ktriage_home: Path, tmp_path: Path, undisturbed_explain
) -> None:
    home = _home(tmp_path, ktriage_home)
    assert _explain(home).returncode == 0
    root = home / "artifacts"
    victim = sorted(p for p in (root / "frontend").iterdir() if not p.name.startswith("."))[0]
    _truncate(victim / "kernel.triton.cubin")
    run = _explain(home)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    lines = [line for line in run.stderr.splitlines() if "damaged entry" in line]
    assert len(lines) == 1 and lines[0].startswith("warning: cache: damaged entry"), run.stderr
    assert _findings(run.stdout) == undisturbed_explain


def test_a_read_only_cache_is_a_clear_error(ktriage_home: Path, tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("running as root: chmod does not stop root from writing, so a read-only cache cannot be made")
    home = _home(tmp_path, ktriage_home)
    root = home / "artifacts"
    root.mkdir()
    root.chmod(0o555)
    try:
        run = _explain(home, timeout=300)
    finally:
        root.chmod(0o755)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr
    assert "is not writable" in run.stderr and "KTRIAGE_HOME" in run.stderr


def test_a_read_only_cache_is_a_clear_error_in_process(toolchain, tmp_path: Path) -> None:
    """The same check without chmod (which root ignores): the cache root is a file's child, so no
    folder can be made in it."""
    from ktriage.errors import CompileError

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with Compiler(jobs=1, cache_dir=blocker / "artifacts") as compiler, pytest.raises(CompileError) as info:
        compiler.compile(red_spec(), toolchain(NATIVE))
    assert "is not writable" in info.value.problem and "KTRIAGE_HOME" in (info.value.fix or "")


def test_stale_parts_inside_entries_are_looked_for_once_an_hour(tmp_path: Path) -> None:
    """Opening the cache lists every entry for stale ``*.tmp`` parts (a sidecar write cut short) only
    when the last such listing is an hour old: a part is stale only after that hour anyway, and the
    listing cost every command tens of milliseconds in a large cache. ``cache gc`` still finds it."""
    root = tmp_path / "artifacts"
    entry = root / "frontend" / "abc"
    entry.mkdir(parents=True)
    now = time.time()
    cache.clean_stale_temps(root, now=now)  # the first open: lists, and marks when
    part = entry / "resources-x.json.tmp"
    part.write_text("{")
    os.utime(part, (now - 2 * cache.STALE_TMP_S, now - 2 * cache.STALE_TMP_S))
    cache.clean_stale_temps(root, now=now + 60)  # a minute later: not looked for
    assert part.exists()
    assert part in list(cache.stale_temps(root, now=now + 60))  # what `cache gc` lists
    cache.clean_stale_temps(root, now=now + cache.STALE_TMP_S + 1)  # an hour later: removed
    assert not part.exists()
