"""Hardening corpus (issue 27): `ktriage cache verify|info|gc` on damaged and hostile cache entries
(an entry folder replaced by a file or a link, manifests that are no manifest, nest 100,000 deep or
name files outside the cache, listed files that are links or folders), a cache whose damage cannot
be moved aside, and a ktriage home that is no folder; through the real ``main(argv)``.

What each must give: `verify` exits 1 and lists the damaged entry by its key (never "ok"), and never
reads or reports a file outside the cache; `verify --fix` moves it aside (exit 0) or says what it
could not move (exit 1); `info` and `gc` work; a home that is no folder is a user error."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from surface_cases import Case, clean_env, distinct, run_case  # noqa: F401 (fixture)

from ktriage.compile import cache
from ktriage.compile.cache import ArtifactCache

SECRET_SIZE = 12_345  # an outside file whose size must never appear in a report


def _root(d: Path) -> Path:
    return d / "home" / "artifacts"


def _publish(root: Path, key: str) -> Path:
    store = ArtifactCache(root)
    tmp = store.temp_dir("frontend", key)
    (tmp / "kernel.ptx").write_text("// ptx\n")
    (tmp / "result.json").write_text(json.dumps({"cache_format": cache.CACHE_FORMAT, "kernel_name": "k"}))
    return store.publish("frontend", key, tmp)


def _manifest(entry: Path, edit: Callable[[dict], object]) -> None:
    data = json.loads((entry / cache.MANIFEST).read_text())
    (entry / cache.MANIFEST).write_text(json.dumps(edit(data)))


def _raw_manifest(text: str) -> Callable[[Path, Path], None]:
    return lambda d, e: (e / cache.MANIFEST).write_text(text)


def _files_edit(fn: Callable[[dict], None]) -> Callable[[Path, Path], None]:
    def damage(d: Path, e: Path) -> None:
        def edit(m: dict) -> dict:
            fn(m["files"])
            return m

        _manifest(e, edit)

    return damage


def _outside_name(name: str) -> Callable[[Path, Path], None]:
    def damage(d: Path, e: Path) -> None:
        def edit(files: dict) -> None:
            files[name.format(d=d)] = {"sha256": "0" * 64, "size": SECRET_SIZE}

        _files_edit(edit)(d, e)

    return damage


def _replace(kind: str) -> Callable[[Path, Path], None]:
    def damage(d: Path, e: Path) -> None:
        import shutil

        shutil.rmtree(e)
        if kind == "file":
            e.write_text("not an entry")
        elif kind == "empty-file":
            e.write_bytes(b"")
        elif kind == "link-to-folder":
            (d / "elsewhere").mkdir(exist_ok=True)
            (d / "elsewhere" / "result.json").write_text("{}")
            e.symlink_to(d / "elsewhere")
        elif kind == "link-to-file":
            e.symlink_to(d / "secret.txt")
        elif kind == "dangling-link":
            e.symlink_to(d / "nowhere")

    return damage


def _listed_is(kind: str) -> Callable[[Path, Path], None]:
    def damage(d: Path, e: Path) -> None:
        (e / "kernel.ptx").unlink()
        if kind == "link":
            (e / "kernel.ptx").symlink_to(d / "secret.txt")
        elif kind == "folder":
            (e / "kernel.ptx").mkdir()
        elif kind == "fifo":
            os.mkfifo(e / "kernel.ptx")

    return damage


DEEP = "[" * 100_000 + "]" * 100_000
DAMAGE: dict[str, Callable[[Path, Path], None]] = {
    "entry-is-a-file": _replace("file"),
    "entry-is-an-empty-file": _replace("empty-file"),
    "entry-is-a-link-to-a-folder": _replace("link-to-folder"),
    "entry-is-a-link-to-a-file": _replace("link-to-file"),
    "entry-is-a-dangling-link": _replace("dangling-link"),
    "manifest-deep": _raw_manifest(DEEP),
    "manifest-deep-object": _raw_manifest('{"format": 2, "files": ' + DEEP + "}"),
    "manifest-not-json": _raw_manifest("{"),
    "manifest-array": _raw_manifest("[]"),
    "manifest-empty": _raw_manifest(""),
    "manifest-binary": lambda d, e: (e / cache.MANIFEST).write_bytes(bytes(range(256))),
    "manifest-format-1": lambda d, e: _manifest(e, lambda m: {**m, "format": 1}),
    "manifest-files-list": lambda d, e: _manifest(e, lambda m: {**m, "files": []}),
    "manifest-no-result": _files_edit(lambda f: f.pop("result.json")),
    "manifest-size-string": _files_edit(lambda f: f["kernel.ptx"].update(size="7")),
    "manifest-sha-number": _files_edit(lambda f: f["kernel.ptx"].update(sha256=1)),
    "manifest-entry-null": _files_edit(lambda f: f.update({"kernel.ptx": None})),
    "manifest-is-a-folder": lambda d, e: ((e / cache.MANIFEST).unlink(), (e / cache.MANIFEST).mkdir()),
    "manifest-is-a-link-outside": lambda d, e: (
        (e / cache.MANIFEST).unlink(),
        (e / cache.MANIFEST).symlink_to(d / "secret.txt"),
    ),
    "manifest-missing": lambda d, e: (e / cache.MANIFEST).unlink(),
    "names-dotdot": _outside_name("../../../secret.txt"),
    "names-absolute": _outside_name("{d}/secret.txt"),
    "names-subfolder": _outside_name("sub/x.txt"),
    "names-empty": _outside_name(""),
    "names-dot": _outside_name("."),
    "names-dotdot-alone": _outside_name(".."),
    "names-backslash": _outside_name("..\\..\\secret.txt"),
    "names-nul": _outside_name("a\x00b"),
    "names-etc-passwd": _outside_name("/etc/passwd"),
    "listed-is-a-link": _listed_is("link"),
    "listed-is-a-folder": _listed_is("folder"),
    "listed-is-a-fifo": _listed_is("fifo"),
    "extra-file": lambda d, e: (e / "extra.bin").write_bytes(b"x"),
    "result-deep": lambda d, e: ((e / "result.json").write_text(DEEP), _rehash(e)),
    "result-array": lambda d, e: ((e / "result.json").write_text("[]"), _rehash(e)),
    "sidecar-deep": lambda d, e: (e / f"{cache.SIDECAR_PREFIX}x.json").write_text(DEEP),
    "sidecar-bad-hash": lambda d, e: (e / f"{cache.SIDECAR_PREFIX}x.json").write_text('{"data": 1, "sha256": "0"}'),
    "ptx-edited": lambda d, e: (e / "kernel.ptx").write_text("// PTX\n"),
}


def _rehash(entry: Path) -> None:
    """Re-seal the manifest after an edit, so that the damage is in the content, not the hash."""
    cache.write_manifest(entry)


def _setup(damage: Callable[[Path, Path], None]) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        (d / "secret.txt").write_bytes(b"s" * SECRET_SIZE)
        root = _root(d)
        _publish(root, "good")
        damage(d, _publish(root, "bad"))

    return setup


def _listed(code: int, out: str, err: str, d: Path) -> None:
    assert code == 1, f"exit {code}\n{out}\n{err}"
    assert "bad" in out and "1 ok, 1 damaged" in out, out
    assert str(SECRET_SIZE) not in out and "12.1 KiB" not in out and "sssss" not in out, out


def _moved(code: int, out: str, err: str, d: Path) -> None:
    assert code == 0, f"exit {code}\n{out}\n{err}"
    entry = _root(d) / "frontend" / "bad"
    assert not entry.exists() and not entry.is_symlink(), "the damaged entry is still in place"
    assert (d / "secret.txt").stat().st_size == SECRET_SIZE  # the outside file is untouched
    assert (_root(d) / "frontend" / "good").is_dir()


def _works(code: int, out: str, err: str, d: Path) -> None:
    assert code == 0 and "error:" not in err, f"exit {code}\n{out}\n{err}"
    assert str(SECRET_SIZE) not in out, out
    assert (d / "secret.txt").stat().st_size == SECRET_SIZE


def _not_moved(code: int, out: str, err: str, d: Path) -> None:
    assert code == 1, f"exit {code}\n{out}\n{err}"
    assert "not moved" in out and "could NOT be moved" in out, out
    assert (_root(d) / "frontend" / "bad").exists() or (_root(d) / "frontend" / "bad").is_symlink()


def _block_quarantine(damage: Callable[[Path, Path], None]) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        _setup(damage)(d)
        (_root(d) / cache.QUARANTINE).write_text("a file where the quarantine folder goes")

    return setup


def _not_made_yet(code: int, out: str, err: str, d: Path) -> None:
    assert code == 0 and "does not exist yet" in " ".join(out.split()), out + err


def _found_nothing(code: int, out: str, err: str, d: Path) -> None:
    assert code == 0 and ("0 entries in" in out or "0 items" in out), out + err


def cache_cases() -> list[Case]:
    env = (("KTRIAGE_HOME", "{d}/home"),)
    cases = []
    for name, damage in DAMAGE.items():
        cases.append(
            Case(f"verify:{name}", lambda d: ["cache", "verify"], env=env, setup=_setup(damage), check=_listed)
        )
        cases.append(
            Case(
                f"verify-fix:{name}",
                lambda d: ["cache", "verify", "--fix"],
                env=env,
                setup=_setup(damage),
                check=_moved,
            )
        )
        cases.append(Case(f"info:{name}", lambda d: ["cache", "info"], env=env, setup=_setup(damage), check=_works))
        cases.append(
            Case(
                f"gc:{name}",
                lambda d: ["cache", "gc", "--older-than", "0"],
                env=env,
                setup=_setup(damage),
                check=_works,
            )
        )
    for name in ("entry-is-a-file", "ptx-edited", "names-dotdot", "manifest-deep"):
        cases.append(
            Case(
                f"verify-fix-blocked:{name}",
                lambda d: ["cache", "verify", "--fix"],
                env=env,
                setup=_block_quarantine(DAMAGE[name]),
                check=_not_moved,
            )
        )
    homes = {
        "home-is-a-file": "{d}/afile",
        "home-under-a-file": "{d}/afile/home",
        "home-in-proc": "/proc/ktriage-home",
        "home-long-name": "{d}/" + "h" * 300,
    }
    for name, home in homes.items():
        for verb in (["cache", "info"], ["cache", "verify"], ["cache", "gc"]):
            # info is a report: a missing home is reported as not made yet, not created (or tried);
            # verify and gc, checks, find nothing in it and do not create it either
            check = None
            if name == "home-in-proc":
                check = _not_made_yet if verb[1] == "info" else _found_nothing
            cases.append(
                Case(
                    f"{name}:{verb[1]}",
                    lambda d, v=verb: v,
                    {"afile": b"x"},
                    env=(("KTRIAGE_HOME", home),),
                    check=check,
                )
            )
    for verb in ("info", "verify", "gc"):
        for name, out in {"folder": "{d}/adir", "under-a-file": "{d}/afile/x.json", "no-writer": "{d}/x.txt"}.items():
            cases.append(
                Case(
                    f"output:{verb}:{name}",
                    lambda d, v=verb, o=out: ["cache", v, "-o", o.format(d=d)],
                    {"afile": b"x", "adir/keep": b""},
                    env=env,
                )
            )
    return cases


CASES = distinct(cache_cases())


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_cache_input_is_handled(
    case: Case, tmp_path: Path, clean_env: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_case(case, tmp_path, monkeypatch, capsys)
