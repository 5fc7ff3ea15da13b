"""Hardening corpus (issue 27): `workload show` of damaged workload files and journals, and
`workload import` of damaged or hostile tritonparse traces and unwritable outputs, through the real
``main(argv)`` (tests/hardening/surface_cases.py says what each case must give)."""

from __future__ import annotations

import copy
import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest
from surface_cases import Case, clean_env, distinct, run_case  # noqa: F401 (fixture)

from ktriage.record.snapshot import snapshot_digest

KERNEL = (
    "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n"
)
FILES = {"kmod.py": KERNEL}
DIGEST = snapshot_digest(FILES)
SPEC = {
    "name": "k",
    "source": "kmod:k",
    "signature": {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
    "constexprs": {"BLOCK": 128},
    "divisible_by_16": ["x_ptr"],
    "equal_to_1": [],
    "num_warps": 4,
    "num_stages": 3,
    "num_ctas": 1,
    "maxnreg": None,
    "target": "sm_90",
    "grid": [8],
    "package": f"snapshot:{DIGEST}",
    "meta": {},
}
GOOD: dict[str, Any] = {
    "format_version": 1,
    "kind": "ktriage-workload",
    "recorded": {"command": ["python", "t.py"]},
    "host": {"triton": "3.4.0"},
    "kernels": [
        {
            "id": "K0",
            "function": "k",
            "kind": "jit",
            "module": "kmod",
            "original_module": "kmod",
            "file": "kmod.py",
            "package": None,
            "snapshot": DIGEST,
            "launches": 1,
            "autotune_configs": None,
            "notes": [],
            "inputs": [
                {
                    "id": 0,
                    "launch": "1:L1",
                    "label": "n=1024",
                    "args": [["x_ptr", {"dtype": "fp32"}], ["n", 1024]],
                    "options": {},
                    "grid": [8],
                    "count": 1,
                    "autotune_choice": None,
                    "heuristics": {},
                    "jit_check": "same",
                    "spec": SPEC,
                }
            ],
        }
    ],
    "not_captured": [],
    "snapshots": {DIGEST: {"files": FILES, "notes": []}},
}
MISSING = object()


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    doc = copy.deepcopy(doc)
    target = doc
    for p in path[:-1]:
        target = target[p]
    if value is MISSING:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


def _nested(depth: int) -> str:
    """A marker that :func:`_dump` writes as ``depth`` nested lists (Python's json cannot write them)."""
    return f"@@DEEP{depth}@@"


def _dump(value: Any) -> bytes:
    text = json.dumps(value)
    while "@@DEEP" in text:
        start = text.index('"@@DEEP')
        end = text.index('@@"', start + 7)
        depth = int(text[start + 7 : end])
        text = text[:start] + "[" * depth + "]" * depth + text[end + 3 :]
    return text.encode()


K = ("kernels", 0)
INP = ("kernels", 0, "inputs", 0)
S = ("kernels", 0, "inputs", 0, "spec")
EDITS: list[tuple[tuple[Any, ...], Any]] = [
    (("format_version",), 2),
    (("format_version",), "1"),
    (("format_version",), True),
    (("format_version",), MISSING),
    (("kind",), "other"),
    (("kind",), 1),
    (("kind",), MISSING),
    (("kernels",), MISSING),
    (("kernels",), {}),
    (("kernels",), "x"),
    (("kernels",), [1]),
    (("kernels",), [None]),
    (("kernels",), [[]]),
    (("snapshots",), MISSING),
    (("snapshots",), []),
    (("snapshots",), {DIGEST: []}),
    (("snapshots",), {DIGEST: {"files": []}}),
    (("snapshots",), {DIGEST: {"files": {"kmod.py": 1}}}),
    (("snapshots",), {DIGEST: {"files": {"../evil.py": KERNEL}}}),
    (("snapshots",), {DIGEST: {"files": {"/abs.py": KERNEL}}}),
    (("snapshots",), {DIGEST: {"files": {"kmod.py": KERNEL + "#"}}}),
    (("snapshots",), {"zz": {"files": FILES}}),
    (("not_captured",), "x"),
    (("not_captured",), [1]),
    (("not_captured",), [{"function": "f"}]),
    (("host",), []),
    (("recorded",), "x"),
    (("recorded",), _nested(200)),
    (("host",), {"x": _nested(5000)}),
    (K + ("id",), MISSING),
    (K + ("snapshot",), "nope"),
    (K + ("snapshot",), 1),
    (K + ("inputs",), MISSING),
    (K + ("inputs",), {}),
    (K + ("inputs",), "x"),
    (K + ("inputs",), [1]),
    (K + ("function",), MISSING),
    (K + ("module",), MISSING),
    (K + ("notes",), 5),
    (K + ("autotune_configs",), "x"),
    (INP + ("id",), "x"),
    (INP + ("id",), MISSING),
    (INP + ("count",), "x"),
    (INP + ("count",), -1),
    (INP + ("count",), 2**80),
    (INP + ("count",), MISSING),
    (INP + ("args",), "x"),
    (INP + ("args",), MISSING),
    (INP + ("args",), [[1]]),
    (INP + ("options",), []),
    (INP + ("grid",), "x"),
    (INP + ("grid",), [-1]),
    (INP + ("heuristics",), []),
    (INP + ("spec",), MISSING),
    (INP + ("spec",), "x"),
    (INP + ("spec",), []),
    (S + ("signature",), MISSING),
    (S + ("signature",), {"x_ptr": "*fp99"}),
    (S + ("signature",), []),
    (S + ("num_warps",), 3),
    (S + ("num_warps",), "4"),
    (S + ("num_warps",), 2**70),
    (S + ("target",), "sm_1"),
    (S + ("target",), 90),
    (S + ("constexprs",), {"BLOCK": [1]}),
    (S + ("constexprs",), {"NOPE": 1}),
    (S + ("divisible_by_16",), ["nope"]),
    (S + ("grid",), [0]),
    (S + ("grid",), "x"),
    (S + ("source",), 1),
    (S + ("name",), None),
    (S + ("meta",), _nested(3000)),
]


def _edit_id(path: tuple[Any, ...], value: Any) -> str:
    shown = "MISSING" if value is MISSING else json.dumps(value).replace(DIGEST, "D")[:40]
    return ".".join(str(p) for p in path) + "=" + shown


def show(
    id: str, data: bytes, *, name: str = "W.json", extra: tuple[str, ...] = (), env: tuple[tuple[str, str], ...] = ()
) -> Case:
    return Case(f"show-{id}", lambda d: ["workload", "show", str(d / name), *extra], {name: data}, env)


JOURNAL_HEAD = json.dumps({"type": "header", "format_version": 1, "kind": "ktriage-record-journal"}) + "\n"


def show_cases() -> list[Case]:
    cases = [show(_edit_id(p, v), _dump(_set(GOOD, p, v))) for p, v in EDITS]
    good = json.dumps(GOOD).encode()
    raw = {
        "empty": b"",
        "not-json": b"hello",
        "array": b"[]",
        "number": b"1",
        "null": b"null",
        "binary": bytes(range(256)) * 4,
        "latin1": good.replace(b'"n=1024"', b'"n=10\xe924"'),
        "utf16": json.dumps(GOOD).encode("utf-16"),
        "nul": good + b"\x00",
        "truncated": good[:-9],
        "deep-100000": b"[" * 100_000 + b"]" * 100_000,
        "deep-in-object": b'{"kind": "ktriage-workload", "format_version": 1, "x": '
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}",
        # A gzipped workload is read as the plain one (docs/record.md: told by its first bytes, whatever
        # the name; show-gzip-reads-as-plain below), so only a damaged or foreign gzip stream is refused.
        "gzip-cut": gzip.compress(good)[:-20],
        "gzip-garbage": b"\x1f\x8b\x08" + b"\x00" * 40,
        "gzip-not-json": gzip.compress(b"hello"),
        "gzip-array": gzip.compress(b"[]"),
        "gzip-truncated-json": gzip.compress(good[:-9]),
        "trailing": good + b"}{",
    }
    cases += [show(f"bytes:{k}", v) for k, v in raw.items()]
    cases.append(show("too-large", good + b" " * (2 << 20), env=(("KTRIAGE_MAX_INPUT_MB", "1"),)))
    # the size limit applies after decompression: a small gzip of a too-large workload is refused
    cases.append(show("gzip-too-large", gzip.compress(good + b" " * (2 << 20)), env=(("KTRIAGE_MAX_INPUT_MB", "1"),)))
    cases.append(
        Case(
            "show-gzip-reads-as-plain",
            lambda d: ["workload", "show", str(d / "W.json")],
            {"W.json": gzip.compress(good)},
            check=_shown_as_plain,
        )
    )
    cases.append(Case("show-missing", lambda d: ["workload", "show", str(d / "nope.json")]))
    cases.append(Case("show-folder", lambda d: ["workload", "show", str(d / "dir.json")], {"dir.json/keep": b""}))
    journals = {
        "no-header": json.dumps({"type": "launch"}) + "\n",
        "header-only-bad-version": JOURNAL_HEAD.replace('"format_version": 1', '"format_version": 9'),
        "not-json-middle": JOURNAL_HEAD + "{oops\n" + json.dumps({"type": "counts"}) + "\n",
        "array-line": JOURNAL_HEAD + "[1]\n" + "{}\n",
        "deep-line": JOURNAL_HEAD + "[" * 100_000 + "]" * 100_000 + "\n{}\n",
        "binary": "\udcff",
        "kernel-no-fields": JOURNAL_HEAD + json.dumps({"type": "kernel"}) + "\n",
    }
    for k, v in journals.items():
        data = v.encode("utf-8", "surrogateescape")
        cases.append(show(f"journal:{k}", data, name="W.json.journal"))
    cases.append(
        Case(
            "show-journal:launch-of-no-kernel-is-listed",
            lambda d: ["workload", "show", str(d / "W.json.journal")],
            {
                "W.json.journal": (
                    JOURNAL_HEAD + json.dumps({"type": "launch", "function": "f", "key": 1}) + "\n"
                ).encode()
            },
            check=_listed_not_captured,
        )
    )
    # -o of show: bad outputs are refused before anything is shown
    for k, argv in _bad_outputs().items():
        cases.append(show(f"output:{k}", good, extra=tuple(argv)))
    return cases


def _shown_as_plain(code: int, out: str, err: str, d: Path) -> None:
    """The gzip bytes of a good workload (under a plain .json name): shown as the plain file is, its
    kernel and its input listed."""
    assert code == 0 and not err, out + err
    assert re.search(r"K0\s+k\s+jit\s+kmod", out) and "n=1024" in out, out


def _listed_not_captured(code: int, out: str, err: str, d: Path) -> None:
    """A journal launch whose kernel record is missing: shown, and listed as not captured (never dropped)."""
    assert code == 0 and "not captured   1" in out and "which the journal lacks" in out, out + err


def _bad_outputs(option: str = "-o", name: str = "out.json") -> dict[str, list[str]]:
    return {
        "folder": [option, "{d}/adir"],
        "under-a-file": [option, "{d}/afile/" + name],
        "long-name": [option, "{d}/" + "n" * 300 + ".json"],
        "long-path": [option, "{d}/" + "/".join(["p" * 200] * 25) + "/" + name],
        "read-only": [option, "/proc/" + name],
    }


def _expand(argv: list[str], d: Path) -> list[str]:
    return [a.replace("{d}", str(d)) for a in argv]


# ------------------------------------------------------------------------------------------ traces
TRACE = Path(__file__).resolve().parent.parent / "data" / "tritonparse" / "add_scale.launches.ndjson.gz"
EVENTS: list[dict[str, Any]] = [
    json.loads(line) for line in gzip.decompress(TRACE.read_bytes()).decode().splitlines() if line.strip()
]
C = (0, "payload")
PS = C + ("python_source",)
L = (1,)
TRACE_EDITS: list[tuple[tuple[Any, ...], Any]] = [
    (PS + ("start_line",), 10**10),
    (PS + ("start_line",), -5),
    (PS + ("start_line",), "7"),
    (PS + ("start_line",), 2**70),
    (PS + ("start_line",), None),
    (PS + ("start_line",), 1.5),
    (PS + ("code",), 1),
    (PS + ("code",), ""),
    (PS + ("code",), "def (:"),
    (PS + ("code",), "x = 1\n"),
    (PS + ("code",), "\x00"),
    (PS,),
    (PS + ("file_path",), "../../../etc/passwd"),
    (C + ("metadata",), "x"),
    (C + ("metadata",), []),
    (C + ("metadata", "hash"), 1),
    (C + ("metadata", "hash"), None),
    (C + ("metadata", "name"), 1),
    (C + ("metadata", "target"), "sm_90"),
    (C + ("metadata", "target"), {"arch": "90"}),
    (C + ("metadata", "num_warps"), "4"),
    (C + ("metadata", "num_warps"), 3),
    (C + ("metadata", "num_warps"), 2**70),
    (C + ("metadata", "src_constants"), "x"),
    (C + ("metadata", "src_attrs"), "x"),
    (C,),
    (C + ("file_content",), 1),
    (C + ("file_content",), {"a.py": _nested(5000)}),
    (C, "payload"),
    (L + ("grid",), "x"),
    (L + ("grid",), [-1]),
    (L + ("grid",), [2**70]),
    (L + ("grid",), [[1]]),
    (L + ("grid",), ["a"]),
    (L + ("extracted_args",), "x"),
    (L + ("extracted_args",), []),
    (L + ("extracted_args",), {"x_ptr": 1}),
    (L + ("extracted_args", "x_ptr", "shape"), "x"),
    (L + ("extracted_args", "x_ptr", "dtype"), "torch.nope"),
    (L + ("extracted_args", "x_ptr", "stride"), [-1]),
    (L + ("compilation_metadata",), "x"),
    (L + ("compilation_metadata",), None),
    (L + ("compilation_metadata", "hash"), "0" * 64),
    (L + ("name",), 1),
    (L + ("name",), _nested(3000)),
    ((0, "event_type"), 1),
    ((0, "event_type"), None),
    ((1, "event_type"), "compilation"),
    ((0,), _nested(3000)),
]


def _trace_edit(path: tuple[Any, ...], value: Any = MISSING) -> list[dict[str, Any]]:
    events = copy.deepcopy(EVENTS)
    if len(path) == 1 and value is not MISSING:
        events[path[0]] = value
        return events
    return _set(events, path, value)


def _ndjson(events: list[Any]) -> bytes:
    return b"".join(_dump(e) + b"\n" for e in events)


def trace(
    id: str,
    data: bytes,
    *,
    name: str = "t.ndjson",
    out: str = "W.json",
    check: Any = None,
    env: tuple[tuple[str, str], ...] = (),
) -> Case:
    return Case(
        f"import-{id}",
        lambda d: ["workload", "import", str(d / name), "-o", str(d / out)],
        {name: data},
        env,
        check=check,
    )


def _imported_or_refused(code: int, out: str, err: str, d: Path) -> None:
    """A trace the converter may keep what it can of: exit 0 with the damaged kernel listed as not
    captured (never a silent loss), or a user error."""
    if code == 2:
        assert "error:" in err and "fix:" in err, err
        return
    assert code == 0, err
    from ktriage.record.workload import load_workload

    w = load_workload(d / "W.json")
    assert w.not_captured or len(w.kernels) == 4, err  # the good trace gives 4 kernels: anything lost is listed


def trace_cases() -> list[Case]:
    cases = []
    for p, *v in TRACE_EDITS:
        value = v[0] if v else MISSING
        cases.append(trace(_edit_id(p, value), _ndjson(_trace_edit(p, value)), check=_imported_or_refused))
    good = _ndjson(EVENTS)
    raw = {
        "empty": b"",
        "blank-lines": b"\n\n\n",
        "not-json": b"hello\n",
        "array-lines": b"[1]\n[2]\n",
        "binary": bytes(range(256)) * 8,
        "gzip-cut": gzip.compress(good)[:-20],
        "gzip-garbage": b"\x1f\x8b\x08" + b"\x00" * 40,
        "zstd": b"\x28\xb5\x2f\xfd" + b"\x00" * 20,
        "deep-line": b"[" * 100_000 + b"]" * 100_000 + b"\n",
        "deep-event": b'{"event_type": "launch", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
        "latin1": good.replace(b"add_kernel", b"add_k\xe9rnel", 1),
        "utf16": good.decode().encode("utf-16"),
        "no-events-of-use": b'{"event_type": "other"}\n',
        "torn-only": good[:50],
        "gzip-bomb-ish": gzip.compress(b" " * (3 << 20)),
    }
    cases += [trace(f"bytes:{k}", v) for k, v in raw.items()]
    cases.append(trace("too-large", good + b"\n" * (2 << 20), env=(("KTRIAGE_MAX_INPUT_MB", "1"),)))
    cases.append(
        trace(
            "gzip-too-large",
            gzip.compress(good + b"\n" * (3 << 20)),
            name="t.ndjson.gz",
            env=(("KTRIAGE_MAX_INPUT_MB", "1"),),
        )
    )
    cases.append(
        Case("import-missing", lambda d: ["workload", "import", str(d / "nope.ndjson"), "-o", str(d / "W.json")])
    )
    cases.append(
        Case(
            "import-folder",
            lambda d: ["workload", "import", str(d / "dir"), "-o", str(d / "W.json")],
            {"dir/keep": b""},
        )
    )
    cases.append(
        Case(
            "import-not-json-output",
            lambda d: ["workload", "import", str(d / "t.ndjson"), "-o", str(d / "W.txt")],
            {"t.ndjson": good},
        )
    )
    cases.append(
        Case(
            "import-output:an-existing-results-file",
            lambda d: ["workload", "import", str(d / "t.ndjson"), "-o", str(d / "results.json")],
            {"t.ndjson": good, "results.json": b'{"run": {"run_id": "r"}, "cells": []}'},
        )
    )
    for k, argv in _bad_outputs(name="W.json").items():
        cases.append(
            Case(
                f"import-output:{k}",
                lambda d, a=argv: ["workload", "import", str(d / "t.ndjson"), *_expand(a, d)],
                {"t.ndjson": good, "afile": b"x", "adir/keep": b""},
            )
        )
    return cases


for_show = show_cases()
for c in for_show:  # the show outputs need the folder and the file they name
    c.files.update({"afile": b"x", "adir/keep": b""})
CASES = distinct(for_show + trace_cases())


def _with_dirs(case: Case) -> Case:
    return case


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_workload_input_is_handled(
    case: Case, tmp_path: Path, clean_env: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = case.argv
    run_case(
        Case(case.id, lambda d: _expand(argv(d), d), case.files, case.env, case.setup, case.check),
        tmp_path,
        monkeypatch,
        capsys,
    )
