"""Hardening corpus (issue 27): `ktriage profile` with bad options, unwritable outputs, damaged
bundles and an ncu that is missing, fails or gives nothing; through the real ``main(argv)``.

The bundle is real (the H200's recorded TritonBench rms_norm forward, compiled here with Triton 3.4.0
by `bench --compile-only`), built once for the module. No counters can be collected on this host:
every run that gets as far as ncu must exit 4 with the reason and write no profile.json."""

from __future__ import annotations

import json
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from surface_cases import Case, clean_env, distinct, run_case  # noqa: F401 (fixture)

from ktriage.cli.app import main

WORKLOAD = Path(__file__).resolve().parents[2] / "benchmarks" / "record" / "h200" / "tb_rms_norm_fwd.workload.json.gz"
BUNDLE: list[Path] = []


@pytest.fixture(scope="module", autouse=True)
def built_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("profile") / "bundle"
    code = main(
        ["bench", str(WORKLOAD), "-t", "triton==3.4.0", "--kernel", "K0", "--compile-only", "--bundle", str(path)]
    )
    assert code == 0
    BUNDLE[:] = [path]
    return path


def _copy(d: Path) -> None:
    shutil.copytree(BUNDLE[0], d / "b")
    script = d / "ncu-garbage"
    script.write_text("#!/bin/sh\necho 'not,a,csv'\nexit 0\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    (d / "afile").write_text("x")
    (d / "adir").mkdir(exist_ok=True)


def _damage(fn: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        _copy(d)
        fn(d / "b")

    return setup


def _no_counters(code: int, out: str, err: str, d: Path) -> None:
    assert code == 4, f"exit {code}\n{err}"
    assert "no counters were collected" in err and "ncu" in err, err
    assert not list(d.rglob("profile.json")), "a profile.json was written although nothing was profiled"


BASE = ["profile", "--bundle", "{d}/b"]
USAGE: dict[str, list[str]] = {
    "backend-nosuch": ["--backend", "nosuch"],
    "backend-empty": ["--backend", ""],
    "backend-prefix": ["--backend", "K0"],
    "input-999": ["--input-id", "999"],
    "input-negative": ["--input-id", "-1"],
    "input-text": ["--input-id", "abc"],
    "warmup-negative": ["--warmup", "-1"],
    "warmup-huge": ["--warmup", "99999999"],
    "warmup-text": ["--warmup", "x"],
    "raw-dir-proc": ["--raw-dir", "/proc/ktriage-raw"],
    "raw-dir-a-file": ["--raw-dir", "{d}/afile"],
    "raw-dir-under-a-file": ["--raw-dir", "{d}/afile/raw"],
    "raw-dir-long-name": ["--raw-dir", "{d}/" + "r" * 300],
    "raw-dir-long-path": ["--raw-dir", "{d}/" + "/".join(["p" * 200] * 25)],
    "ncu-nonexistent": ["--ncu", "/nonexistent/ncu"],
    "ncu-a-folder": ["--ncu", "{d}/adir"],
    "ncu-not-executable": ["--ncu", "{d}/afile"],
    "output-folder": ["-o", "{d}/adir"],
    "output-no-writer": ["-o", "{d}/p.txt"],
    "output-under-a-file": ["-o", "{d}/afile/p.json"],
    "output-proc": ["-o", "/proc/p.json"],
    "output-long-name": ["-o", "{d}/" + "o" * 300 + ".json"],
    "results-missing": ["--results", "{d}/nope.json"],
    "results-not-json": ["--results", "{d}/afile"],
    "format-csv": ["-f", "csv"],
    "format-table": ["-f", "table"],
    "db-garbage": ["--db", "nope"],
}
INCOMPLETE: dict[str, tuple[list[str], tuple[tuple[str, str], ...]]] = {
    "ncu-false": (["--ncu", "/bin/false"], ()),
    "ncu-true": (["--ncu", "/bin/true"], ()),
    "ncu-garbage-csv": (["--ncu", "{d}/ncu-garbage"], ()),
    "no-ncu-on-path": ([], (("PATH", "/usr/bin:/bin"),)),
    "no-ncu-markdown": (["-f", "markdown"], (("PATH", "/usr/bin:/bin"),)),
    "no-ncu-raw-dir": (["--raw-dir", "{d}/raw"], (("PATH", "/usr/bin:/bin"),)),
    "no-ncu-backend-given": (["--backend", "K0:_rms_norm_forward_kernel"], (("PATH", "/usr/bin:/bin"),)),
    "no-ncu-input-given": (["--input-id", "0"], (("PATH", "/usr/bin:/bin"),)),
}
BUNDLES: dict[str, Callable[[Path], None]] = {
    "manifest-missing": lambda b: (b / "manifest.json").unlink(),
    "manifest-not-json": lambda b: (b / "manifest.json").write_text("{"),
    "manifest-deep": lambda b: (b / "manifest.json").write_text("[" * 100_000 + "]" * 100_000),
    "manifest-array": lambda b: (b / "manifest.json").write_text("[]"),
    "manifest-binary": lambda b: (b / "manifest.json").write_bytes(bytes(range(256))),
    "manifest-format-9": lambda b: (b / "manifest.json").write_text(
        json.dumps({**json.loads((b / "manifest.json").read_text()), "format_version": 9})
    ),
    "cubins-removed": lambda b: shutil.rmtree(b / "cubins"),
    "bundle-is-a-file": lambda b: (shutil.rmtree(b), b.write_text("x")),
}


def _expand(argv: list[str], d: Path) -> list[str]:
    return [a.replace("{d}", str(d)) for a in argv]


def profile_cases() -> list[Case]:
    cases = []
    for name, extra in USAGE.items():
        cases.append(
            Case(
                f"usage:{name}",
                lambda d, e=extra: _expand([*BASE, *e], d),
                setup=_copy,
                env=(("PATH", "/usr/bin:/bin"),),
            )
        )
    for name, (extra, env) in INCOMPLETE.items():
        cases.append(
            Case(
                f"incomplete:{name}",
                lambda d, e=extra: _expand([*BASE, *e], d),
                env=env,
                setup=_copy,
                check=_no_counters,
            )
        )
    for name, damage in BUNDLES.items():
        cases.append(
            Case(f"bundle:{name}", lambda d: _expand(BASE, d), setup=_damage(damage), env=(("PATH", "/usr/bin:/bin"),))
        )
    cases.append(Case("bundle:missing", lambda d: ["profile", "--bundle", str(d / "nope")]))
    return cases


CASES = distinct(profile_cases())


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_profile_input_is_handled(
    case: Case, tmp_path: Path, clean_env: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_case(case, tmp_path, monkeypatch, capsys)
