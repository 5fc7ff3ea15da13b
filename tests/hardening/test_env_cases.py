"""Hardening corpus (issue 27): environment values (KTRIAGE_COLUMNS, KTRIAGE_MAX_INPUT_MB,
KTRIAGE_IMPORT_TIMEOUT_S, KTRIAGE_PROGRESS, KTRIAGE_HOME, KTRIAGE_DEBUG, KTRIAGE_CLUSTER and
--cluster), terminals and logs that cannot encode Unicode (a C/ASCII locale), and a kernel module
that blocks at import; through the real ``main(argv)``."""

from __future__ import annotations

import io
import json
import sys
import textwrap
from pathlib import Path

import pytest
from surface_cases import CASE_LIMIT_S, Case, SilentServer, assert_user_error, clean_env, distinct, run_case  # noqa: F401

from ktriage.cli.app import main

KERNEL = textwrap.dedent(
    """
    import triton
    import triton.language as tl

    @triton.jit
    def my_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pass
    """
)
SPEC = (
    '[kernel]\nsource = "kernels/k.py:my_kernel"\n[kernel.signature]\nx_ptr = "*fp32"\nout_ptr = "*fp32"\n'
    'n = "i32"\nBLOCK = "constexpr"\n[kernel.constexprs]\nBLOCK = 1024\n'
)
FILES = {"kernels/k.py": KERNEL.encode(), "spec.toml": SPEC.encode(), "afile": b"x"}
VERBS = {
    "cache-info": ["cache", "info"],
    "runs-list": ["runs", "list"],
    "occupancy": ["occupancy", "-r", "64", "-w", "4"],
}
BAD = {
    "KTRIAGE_COLUMNS": ["abc", "0", "-5", "1.5", "19", "100001", "1e9", "80x", " 0x50"],
    "KTRIAGE_MAX_INPUT_MB": ["abc", "-1", "0", "nan", "inf", "1e400"],
    "KTRIAGE_IMPORT_TIMEOUT_S": ["abc", "0", "-1", "nan", "inf"],
    "KTRIAGE_PROGRESS": ["2", "yes", "on"],
    "KTRIAGE_DEBUG": ["abc", "2"],
}
HOMES = {
    "a-file": "{d}/afile",
    "under-a-file": "{d}/afile/home",
    "in-proc": "/proc/ktriage-home",
    "long-name": "{d}/" + "h" * 300,
}
SILENT = SilentServer()  # accepts, never answers: no Ray head
# The case ids name the silent port "SILENT", not its number: each pytest-xdist worker opens its own
# server on a random port, and ids that differ between workers stop the run ("Different tests were collected").
SILENT_IDS = {
    f"127.0.0.1:{SILENT.port}": "127.0.0.1:SILENT",
    f"ray://127.0.0.1:{SILENT.port}": "ray://127.0.0.1:SILENT",
}
CLUSTERS = [
    *SILENT_IDS,
    "127.0.0.1:1",
    "ray://127.0.0.1:1",
    "127.0.0.1:99999",
    "127.0.0.1:0",
    "nohost.invalid:6379",
    "abc",
    "host:",
    ":1",
    "127.0.0.1:abc",
    "local:x",
]


def env_cases() -> list[Case]:
    cases = []
    for var, values in BAD.items():
        for value in values:
            for verb, argv in VERBS.items():
                cases.append(
                    Case(
                        f"{var}={value!r}:{verb}",
                        lambda d, a=argv: list(a),
                        FILES,
                        env=((var, value), ("KTRIAGE_HOME", "{d}/home")),
                    )
                )
    for name, home in HOMES.items():
        for verb, argv in {
            "runs-list": ["runs", "list"],
            "explain": ["explain", "spec.toml", "-t", "triton==3.4.0"],
            "toolchain-list": ["toolchain", "list"],
        }.items():
            cases.append(
                Case(f"KTRIAGE_HOME:{name}:{verb}", lambda d, a=argv: list(a), FILES, env=(("KTRIAGE_HOME", home),))
            )
    for value in CLUSTERS:
        label = SILENT_IDS.get(value, value)
        cases.append(
            Case(
                f"--cluster={label}",
                lambda d, v=value: ["explain", "spec.toml", "-t", "triton==3.4.0", "--cluster", v],
                FILES,
            )
        )
        cases.append(
            Case(
                f"KTRIAGE_CLUSTER={label}",
                lambda d: ["explain", "spec.toml", "-t", "triton==3.4.0"],
                FILES,
                env=(("KTRIAGE_CLUSTER", value),),
            )
        )
    return cases


def _good_columns(code: int, out: str, err: str, d: Path) -> None:
    assert code == 0 and "error:" not in err, err


CASES = distinct(
    env_cases()
    + [
        Case(
            f"KTRIAGE_COLUMNS={v!r}:fine",
            lambda d: ["occupancy", "-r", "64", "-w", "4"],
            env=(("KTRIAGE_COLUMNS", v),),
            check=_good_columns,
        )
        for v in ("", "20", "80", "100000")
    ]
)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_environment_value_is_handled(
    case: Case, tmp_path: Path, clean_env: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path / "home"))
    run_case(case, tmp_path, monkeypatch, capsys)


# ------------------------------------------------------------------------------------------ ASCII terminals
WORKLOAD_NOTE = "source \u2192 snapshot \u00d7 2 \u2014 caf\u00e9 \u2248 \u03bcs"
ASCII_RUNS: dict[str, list[str]] = {
    "occupancy-table": ["occupancy", "-r", "128", "-w", "8"],
    "occupancy-markdown": ["occupancy", "-r", "128", "-w", "8", "-f", "markdown"],
    "occupancy-json": ["occupancy", "-r", "255", "-w", "32", "-s", "100000"],
    "cache-info": ["cache", "info"],
    "runs-list": ["runs", "list"],
    "workload-show": ["workload", "show", "{d}/W.json"],
    "workload-show-md": ["workload", "show", "{d}/W.json", "-f", "markdown"],
    "root-help": ["--help"],
    "explain-help": ["explain", "--help"],
    "record-help": ["record", "--help"],
    "cache-help": ["cache", "verify", "--help"],
    "error-with-unicode-path": ["workload", "show", "{d}/\u2192caf\u00e9.json"],
    "error-unicode-option": ["occupancy", "-r", "\u2192", "-w", "4"],
}


def _workload(d: Path) -> None:
    from ktriage.record.workload import NotCaptured, Workload, save_workload

    save_workload(
        Workload(
            [],
            [NotCaptured("f\u2192g", WORKLOAD_NOTE, 3)],
            {"gpu": "H200 \u2014 SXM"},
            {},
            {"command": ["python", "caf\u00e9.py"]},
        ),
        d / "W.json",
    )


@pytest.mark.parametrize("name", list(ASCII_RUNS))
def test_an_ascii_terminal_gets_ascii_not_a_crash(
    name: str, tmp_path: Path, clean_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """stdout/stderr that encode ASCII only (a C/POSIX locale with Python's UTF-8 mode off, or
    PYTHONIOENCODING=ascii): every character ktriage prints degrades to ASCII (an arrow to ``->``)."""
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path / "home"))
    _workload(tmp_path)
    if name == "runs-list":
        from ktriage.store import open_store

        open_store().close()  # an empty default store: reading one never creates it
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="ascii", errors="strict", write_through=True)
    err = io.TextIOWrapper(err_bytes, encoding="ascii", errors="strict", write_through=True)
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    code = main([a.replace("{d}", str(tmp_path)) for a in ASCII_RUNS[name]])
    out.flush()
    err.flush()
    # markdown/json go through click's echo, which on an ASCII stream writes UTF-8 bytes itself (no crash)
    echoed = "-f" in ASCII_RUNS[name]
    text = out_bytes.getvalue().decode("utf-8" if echoed else "ascii")
    errors = err_bytes.getvalue().decode("ascii")
    assert "Traceback" not in errors and "internal error" not in errors, errors
    if name.startswith("error"):
        assert_user_error(code, text, errors, name)
    else:
        assert code == 0, errors
        assert text.strip()
    if name == "workload-show":
        assert "source -> snapshot x 2 - cafe ~ us" in text, text


def test_an_ascii_terminal_reads_explain(tmp_path: Path, clean_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """explain's findings (arrows, multiplication signs) on an ASCII-only stdout, with real toolchains."""
    for name, data in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    monkeypatch.chdir(tmp_path)
    buf = io.BytesIO()
    out = io.TextIOWrapper(buf, encoding="ascii", errors="strict", write_through=True)
    monkeypatch.setattr(sys, "stdout", out)
    code = main(["explain", "spec.toml", "-t", "triton==3.4.0", "-t", "triton==3.3.1", "-f", "markdown"])
    out.flush()
    text = buf.getvalue().decode("ascii")
    assert code in (0, 1) and "my_kernel" in text, text


def test_a_module_that_blocks_at_import_fails_fast(
    tmp_path: Path, clean_env: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A kernel module that sleeps at import (1000 s) fails its cells after the import timeout with a
    message that says so, instead of holding explain for the 600 s compile timeout."""
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.py").write_text("import time\ntime.sleep(1000)\n" + KERNEL)
    (tmp_path / "spec.toml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KTRIAGE_IMPORT_TIMEOUT_S", "5")
    code = main(["explain", "spec.toml", "-t", "triton==3.4.0", "--compile-timeout", "600", "-f", "json"])
    captured = capsys.readouterr()
    assert code == 4, captured.err
    assert "importing the kernel's module did not finish within 5 s" in captured.out + captured.err
    assert json.loads(captured.out)  # the report is still written, the failure in it
