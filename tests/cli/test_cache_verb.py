"""`ktriage cache info|verify|gc` through main(), on a private ktriage home."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from ktriage.cli import exit_codes
from ktriage.cli.app import main
from ktriage.compile import cache
from ktriage.compile.cache import ArtifactCache
from tests.triton_compile_for_tests import RED_SIGNATURE

KERNELS = Path(__file__).resolve().parent.parent / "kernels_for_tests.py"


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    monkeypatch.setenv("KTRIAGE_HOME", str(h))
    return h


def _publish(root: Path, key: str) -> Path:
    store = ArtifactCache(root)
    tmp = store.temp_dir("frontend", key)
    (tmp / "kernel.ptx").write_text("// ptx\n")
    (tmp / "result.json").write_text(json.dumps({"cache_format": cache.CACHE_FORMAT}))
    return store.publish("frontend", key, tmp)


def test_info_of_an_empty_cache(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "info", "--format", "json"]) == exit_codes.OK
    data = json.loads(capsys.readouterr().out)
    assert data["path"] == str(home / "artifacts")
    assert data["entries"] == {"frontend": 0, "cubin": 0} and data["size_bytes"] == 0
    assert data["exists"] is False and not home.exists()  # a report: the home is not made by reading it
    assert main(["cache", "info"]) == exit_codes.OK
    assert "does not exist yet" in " ".join(capsys.readouterr().out.split()) and not home.exists()
    (home / "artifacts").mkdir(parents=True)
    assert main(["cache", "info", "--format", "json"]) == exit_codes.OK
    assert json.loads(capsys.readouterr().out)["exists"] is True


def test_verify_and_gc_do_not_make_a_missing_home(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As info: a check of a home that does not exist (a mistyped KTRIAGE_HOME) reports an empty cache
    and leaves no folder behind (verify and gc --dry-run made $KTRIAGE_HOME/artifacts)."""
    for argv in (["cache", "verify"], ["cache", "verify", "--fix"], ["cache", "gc", "--dry-run"], ["cache", "gc"]):
        assert main(argv) == exit_codes.OK, argv
        assert not home.exists(), argv
    assert "0 entries" in capsys.readouterr().out


def test_verify_exits_1_on_damage_and_fix_quarantines(
    home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = home / "artifacts"
    _publish(root, "good")
    bad = _publish(root, "bad")
    (bad / "kernel.ptx").write_text("// PTX\n")  # same size, other bytes
    assert main(["cache", "verify"]) == exit_codes.FINDING
    out = capsys.readouterr().out
    assert "bad" in out and "does not match its sha256" in out and "1 damaged" in out
    assert "Traceback" not in out
    report = tmp_path / "verify.json"
    assert main(["cache", "verify", "--fix", "-f", "json", "-o", str(report)]) == exit_codes.OK
    data = json.loads(capsys.readouterr().out)
    assert data["damaged"] == 1 and data["fixed"] and data["damaged_entries"][0]["key"] == "bad"
    assert json.loads(report.read_text()) == data
    assert not bad.exists() and (root / cache.QUARANTINE).is_dir()
    assert main(["cache", "verify", "-f", "markdown"]) == exit_codes.OK
    assert "1 ok, 0 damaged" in capsys.readouterr().out


def test_gc_reports_bytes_freed_and_dry_run_removes_nothing(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = home / "artifacts"
    keep = _publish(root, "keep")
    old = _publish(root, "old")
    long_ago = time.time() - 10 * 86400
    os.utime(old / cache.MANIFEST, (long_ago, long_ago))
    stale = root / "frontend" / ".tmp-xyz-1a2b3c4d"
    stale.mkdir()
    (stale / "kernel.ptx").write_text("x" * 100)
    os.utime(stale, (long_ago, long_ago))
    assert main(["cache", "gc", "--older-than", "7", "--dry-run", "-f", "json"]) == exit_codes.OK
    plan = json.loads(capsys.readouterr().out)
    assert sorted(i["why"] for i in plan["items"]) == ["temp", "unused"] and plan["freed_bytes"] > 100
    assert old.exists() and stale.exists()
    assert main(["cache", "gc", "--older-than", "7"]) == exit_codes.OK
    out = capsys.readouterr().out
    assert "freed" in out and f"({plan['freed_bytes']} bytes)" in out
    assert not old.exists() and not stale.exists() and keep.exists()
    assert main(["cache", "gc"]) == exit_codes.OK
    assert "0 items removed" in capsys.readouterr().out


@pytest.mark.slow
def test_verify_a_real_compile(home: Path, toolchain, capsys: pytest.CaptureFixture[str]) -> None:
    """Entries made by a real toolchain verify; a truncated Triton cubin is found."""
    from ktriage.compile.compiler import Artifact, Compiler
    from ktriage.spec.model import KernelSpec

    spec = KernelSpec(
        name="red",
        source=f"{KERNELS}:red_kernel",
        signature=dict(RED_SIGNATURE),
        constexprs={"XBLOCK": 64, "RBLOCK": 64},
    )
    with Compiler(jobs=1, cache_dir=home / "artifacts") as compiler:
        art = compiler.compile(spec, toolchain("triton==3.4.0,ptxas==12.4.131"))
    assert isinstance(art, Artifact), art
    assert main(["cache", "verify"]) == exit_codes.OK
    assert "2 entries" in capsys.readouterr().out
    cubin = art.frontend.triton_cubin_path
    cubin.write_bytes(cubin.read_bytes()[:100])
    assert main(["cache", "verify", "-f", "json"]) == exit_codes.FINDING
    [entry] = json.loads(capsys.readouterr().out)["damaged_entries"]
    assert entry["kind"] == "frontend" and "kernel.triton.cubin has 100 bytes" in entry["problem"]
