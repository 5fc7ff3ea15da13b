"""Hardening corpus (issue 27): `ktriage record` with outputs it cannot write (checked before the
program runs: the program must not have run), commands it cannot run, a second recording of the same
-o, and programs that fail, die or record nothing; through the real ``main(argv)``.

Each program of the output cases would leave a marker file: a refused output must leave none."""

from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path

import pytest
from surface_cases import Case, assert_user_error, clean_env, distinct, run_case  # noqa: F401 (fixture)

from ktriage.cli import exit_codes

MARK = "open('ran', 'w').write('x')"
PY = sys.executable
OUTPUTS = {
    "a-folder": "{d}/adir",
    "a-folder-named-json": "{d}/dir.json",
    "under-a-file": "{d}/afile/W.json",
    "read-only-proc": "/proc/W.json",
    "long-name": "{d}/" + "w" * 300 + ".json",
    "long-path-5000": "{d}/" + "/".join(["p" * 200] * 25) + "/W.json",
    "not-json-suffix": "{d}/W.txt",
    "no-suffix": "{d}/W",
    "journal-suffix": "{d}/W.json.journal",
    "empty": "",
    "dev-null": "/dev/null",
    "root": "/",
    "dot": ".",
}
COMMANDS = {
    "missing": ["/nonexistent/program"],
    "a-folder": ["{d}/adir"],
    "not-executable": ["{d}/afile"],
    "empty-name": [""],
    "relative-missing": ["./nope.sh"],
    "dev-null": ["/dev/null"],
}
HELD: list[int] = []  # lock fds held for the concurrent-writer cases (closed at the end of the module)


def _expand(argv: list[str], d: Path) -> list[str]:
    return [a.replace("{d}", str(d)) for a in argv]


def _dirs(d: Path) -> None:
    (d / "adir").mkdir(exist_ok=True)
    (d / "dir.json").mkdir(exist_ok=True)
    (d / "afile").write_text("x")


def _refused_before_running(code: int, out: str, err: str, d: Path) -> None:
    assert_user_error(code, out, err, "record output")
    assert not (d / "ran").exists(), "the program ran although its output cannot be written"


def _hold_lock(d: Path) -> None:
    """Another `ktriage record -o W.json` is running: it holds W.json.lock."""
    _dirs(d)
    fd = os.open(d / "W.json.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.write(fd, b"4242")
    HELD.append(fd)


def _exit(expected: int, *needles: str, workload: bool = True) -> object:
    def check(code: int, out: str, err: str, d: Path) -> None:
        assert code == expected, f"exit {code}, expected {expected}\n{err}"
        for needle in needles:
            assert needle in err, f"{needle!r} not in\n{err}"
        if workload:
            from ktriage.record.workload import load_workload

            w = load_workload(d / "W.json")
            assert w.recorded["command"], w.recorded

    return check


PROGRAMS: dict[str, tuple[str, object]] = {
    "exit-0": ("pass", _exit(exit_codes.OK, "recorded 0 kernels", "exited 0")),
    "exit-1": ("raise SystemExit(1)", _exit(exit_codes.INCOMPLETE, "recorded 0 kernels", "exited 1")),
    "exit-255": ("raise SystemExit(255)", _exit(exit_codes.INCOMPLETE, "exited 255")),
    "exception": ("raise RuntimeError('boom')", _exit(exit_codes.INCOMPLETE, "exited 1")),
    "sigkill-self": (
        "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
        _exit(exit_codes.INCOMPLETE, "killed by SIGKILL"),
    ),
    "sigsegv-self": (
        "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)",
        _exit(exit_codes.INCOMPLETE, "killed by SIGSEGV"),
    ),
    "no-gpu-driver-message": (
        "import sys; sys.stderr.write('RuntimeError: 0 active drivers\\n'); sys.exit(1)",
        _exit(exit_codes.INCOMPLETE, "recorded 0 kernels"),
    ),
    "closes-stdout": ("import os; os.close(1); os.close(2)", _exit(exit_codes.OK, "exited 0")),
    "imports-triton-stub": (
        "import sys, types; sys.modules['triton'] = types.ModuleType('triton')",
        _exit(exit_codes.OK),
    ),
    "unicode-args": ("import sys; print(sys.argv)", _exit(exit_codes.OK)),
    "chdir-elsewhere": ("import os; os.chdir('/')", _exit(exit_codes.OK)),
    "bad-sitecustomize-env": ("pass", _exit(exit_codes.OK)),
}


def record_cases() -> list[Case]:
    cases = []
    for name, out in OUTPUTS.items():
        cases.append(
            Case(
                f"output:{name}",
                lambda d, o=out: ["record", "-o", o.replace("{d}", str(d)), "--", PY, "-c", MARK],
                setup=_dirs,
                check=_refused_before_running,
            )
        )
    for name, command in COMMANDS.items():
        cases.append(
            Case(
                f"command:{name}",
                lambda d, c=command: ["record", "-o", str(d / "W.json"), "--", *_expand(c, d)],
                setup=_dirs,
            )
        )
    cases.append(Case("command:none", lambda d: ["record", "-o", str(d / "W.json")], setup=_dirs))
    cases.append(Case("command:none-after-dashes", lambda d: ["record", "-o", str(d / "W.json"), "--"], setup=_dirs))
    cases.append(
        Case(
            "output:missing-option",
            lambda d: ["record", "--", PY, "-c", MARK],
            setup=_dirs,
            check=_refused_before_running,
        )
    )
    cases.append(
        Case(
            "concurrent-writer",
            lambda d: ["record", "-o", str(d / "W.json"), "--", PY, "-c", MARK],
            setup=_hold_lock,
            check=_refused_before_running,
        )
    )
    for name, (code, check) in PROGRAMS.items():
        env: tuple[tuple[str, str], ...] = (
            (("PYTHONPATH", "{d}/nonexistent"),) if name == "bad-sitecustomize-env" else ()
        )
        argv = [PY, "-c", code] + (["caf\u00e9", "\u2192"] if name == "unicode-args" else [])
        cases.append(
            Case(
                f"program:{name}",
                lambda d, a=argv: ["record", "-o", str(d / "W.json"), "--", *a],
                setup=_dirs,
                env=env,
                check=check,
            )
        )  # type: ignore[arg-type]
    cases.append(
        Case(
            "output:an-existing-results-file",
            lambda d: ["record", "-o", str(d / "results.json"), "--", PY, "-c", MARK],
            {"results.json": b'{"format_version": 1, "run": {"run_id": "r1"}, "cells": []}'},
            setup=_dirs,
            check=_refused_before_running,
        )
    )
    cases.append(
        Case(
            "output:an-existing-empty-file",
            lambda d: ["record", "-o", str(d / "e.json"), "--", PY, "-c", MARK],
            {"e.json": b""},
            setup=_dirs,
            check=_refused_before_running,
        )
    )
    cases.append(
        Case(
            "output:an-existing-workload-is-replaced",
            lambda d: ["record", "-o", str(d / "W.json"), "--", PY, "-c", "pass"],
            {"W.json": b'{\n "format_version": 1,\n "kind": "ktriage-workload", "kernels": []}'},
            setup=_dirs,
            check=_exit(exit_codes.OK, "exited 0"),
        )
    )  # type: ignore[arg-type]
    cases.append(
        Case(
            "output:missing-parents-are-made",
            lambda d: ["record", "-o", str(d / "new" / "sub" / "W.json"), "--", PY, "-c", "pass"],
            setup=_dirs,
            check=lambda c, o, e, d: (
                None if c == 0 and (d / "new" / "sub" / "W.json").is_file() else pytest.fail(f"exit {c}: {e}")
            ),
        )
    )
    return cases


CASES = distinct(record_cases())


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_record_input_is_handled(
    case: Case,
    tmp_path: Path,
    clean_env: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    probe_sees_a_gpu: None,
) -> None:
    """As on a GPU host (the driver probe faked): these programs launch no kernel, and on a host
    without a GPU record refuses every one of them alike (tests/record/test_record_process.py)."""
    try:
        run_case(case, tmp_path, monkeypatch, capsys)
    finally:
        while HELD:
            os.close(HELD.pop())
