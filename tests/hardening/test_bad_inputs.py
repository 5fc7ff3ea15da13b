"""The bad-input corpus (issue 11): every case is a distinct bad input given to the real
``ktriage.cli.app.main(argv)``, and each must end as a user error: exit code 2, an ``error:`` line
and a ``fix:`` line on stderr, and no traceback. Never 3 (an internal error, i.e. a traceback
folded into one line) and never 0 with a result that looks fine.

The cases are generated from tables, one family per reader: spec files (TOML: types of every key,
option ranges, file encoding, size, nesting), results files (JSON: every field of the schema, raw
bytes, size, nesting), command-line values, store URLs, bundle manifests. A spec file that passed
validation would go on to build toolchains: the tests replace that step by a sentinel that raises,
so an accepted bad spec shows up as exit 3 (and never builds anything).
"""

from __future__ import annotations

import copy
import json
import sqlite3
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ktriage.cli import exit_codes
from ktriage.cli.app import main

KERNEL = textwrap.dedent(
    """
    import triton
    import triton.language as tl

    @triton.jit
    def my_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr = True):
        pass
    """
)
HEAD = '[kernel]\nsource = "kernels/k.py:my_kernel"\n'
SIG = '[kernel.signature]\nx_ptr = "*fp32"\nout_ptr = "*fp32"\nn = "i32"\nBLOCK = "constexpr"\nEVEN = "constexpr"\n'
CONST = "[kernel.constexprs]\nBLOCK = 1024\n"
GOOD_SPEC = HEAD + SIG + CONST
TOOLCHAINS = ["-t", "triton==3.4.0", "-t", "triton==3.3.1"]


@dataclass(frozen=True)
class Case:
    id: str
    argv: Callable[[Path], list[str]]  # from the case's folder (files written there) to the arguments
    files: dict[str, bytes]
    env: tuple[tuple[str, str], ...] = ()


def _b(text: str) -> bytes:
    return text.encode()


# ------------------------------------------------------------------------------------------ spec files
def spec_case(
    id: str,
    text: str | bytes,
    *,
    extra: tuple[str, ...] = (),
    name: str = "spec.toml",
    files: dict[str, bytes] | None = None,
    env: tuple[tuple[str, str], ...] = (),
) -> Case:
    data = text if isinstance(text, bytes) else _b(text)
    all_files = {"kernels/k.py": _b(KERNEL), name: data, **(files or {})}
    return Case(f"spec-{id}", lambda d: ["explain", str(d / name), *TOOLCHAINS, *extra], all_files, env)


def _kernel_key(key: str, value: str) -> str:
    return HEAD + f"{key} = {value}\n" + SIG + CONST


KERNEL_KEY_VALUES: dict[str, list[str]] = {
    "name": ["1", '""', "[]", "{ a = 1 }", "true"],
    "package": ["1", "true", '""', "[]"],
    "target": ["1", '"sm_9"', '"sm_1000"', '""', '"SM90"', "[]"],
    "grid": ['"x"', "[0]", "[1, 2, 3, 4]", "[]", "-1", "0", "[true]", "[1.5]", "1099511627776", "{ x = 1 }", "[[1]]"],
    "meta": ["1", '"x"', "[1]", "true"],
    "constexprs": ["1", '"x"', "[]", "true"],
    "options": ["1", '"x"', "[]", "true"],
    "specialize": ["1", '"x"', "[]"],
    "foo": ["1"],
    "sources": ['"x"'],
    "num_warps": ["4"],
}
SOURCE_VALUES = [
    "1",
    "true",
    "[]",
    '""',
    '"nofunc"',
    '"kernels/missing.py:my_kernel"',
    '"kernels/k.py:nope"',
    '"kernels/k.py:"',
    '":my_kernel"',
    '"kernels/latin1.py:my_kernel"',
    '"kernels/nul.py:my_kernel"',
    '"kernels/syntax.py:my_kernel"',
    '"kernels/binary.py:my_kernel"',
    '"kernels:my_kernel"',
    '"no_such_package_xyz.mod:my_kernel"',
]
BAD_KERNEL_FILES = {
    "kernels/latin1.py": KERNEL.replace("pass", "# caf\xe9\n        pass").encode("latin-1"),
    "kernels/nul.py": _b(KERNEL) + b"\x00\x00",
    "kernels/syntax.py": _b("def my_kernel(:\n"),
    "kernels/binary.py": bytes(range(256)) * 4,
}
OPTION_VALUES: dict[str, list[str]] = {
    "num_warps": [
        "64",
        "1180591620717411303424",
        "0",
        "-1",
        "3",
        "33",
        '"4"',
        "true",
        "4.0",
        "[4]",
        "128",
        "{ a = 1 }",
    ],
    "num_stages": ["0", "-1", "100", '"3"', "true", "2.5"],
    "num_ctas": ["0", "99", '"1"', "[]"],
    "maxnreg": ["8", "300", '"x"', "true", "-1"],
    "num_warp": ["4"],
    "warps": ["4"],
}
SIGNATURE_LINES = [
    "x_ptr = 1",
    'x_ptr = "*fp99"',
    'x_ptr = ""',
    "x_ptr = true",
    "x_ptr = []",
    'x_ptr = "ptr"',
    "x_ptr = { a = 1 }",
    'extra = "i32"',
    '"1x" = "i32"',
    '"a b" = "i32"',
]
CONSTEXPR_LINES = [
    "BLOCK = [1]",
    "BLOCK = { a = 1 }",
    "BLOCK = { none = false }",
    "BLOCK = { none = true, x = 1 }",
    "BLOCK = 1180591620717411303424",
    "BLOCK = 1979-05-27",
    "BLOCK = 07:32:00",
    "NOTPARAM = 1",
    "n = 3",
    f'BLOCK = "{"x" * 5000}"',
    '"1x" = 1',
]
SPECIALIZE_LINES = [
    'divisible_by_16 = "x_ptr"',
    "divisible_by_16 = [1]",
    'divisible_by_16 = ["nope"]',
    'divisible_by_16 = ["BLOCK"]',
    'equal_to_1 = ["BLOCK"]',
    'equal_to_1 = ["nope"]',
    "foo = []",
    'equal_to_1 = "n"',
    "divisible_by_16 = [[]]",
]


def _deep_toml(depth: int) -> str:
    return GOOD_SPEC + "[kernel.meta]\nx = " + "[" * depth + "]" * depth + "\n"


def spec_cases() -> list[Case]:
    cases: list[Case] = []
    for key, values in KERNEL_KEY_VALUES.items():
        cases += [spec_case(f"kernel.{key}={v[:20]}", _kernel_key(key, v)) for v in values]
    for v in SOURCE_VALUES:
        cases.append(
            spec_case(f"source={v[:40]}", GOOD_SPEC.replace('"kernels/k.py:my_kernel"', v), files=BAD_KERNEL_FILES)
        )
    for key, values in OPTION_VALUES.items():
        cases += [spec_case(f"options.{key}={v[:20]}", GOOD_SPEC + f"[kernel.options]\n{key} = {v}\n") for v in values]
    cases += [
        spec_case(f"signature:{line[:20]}", GOOD_SPEC.replace(SIG, SIG + line + "\n")) for line in SIGNATURE_LINES
    ]
    cases += [
        spec_case("signature-missing", HEAD + CONST),
        spec_case("signature-empty", HEAD + "[kernel.signature]\n" + CONST),
        spec_case("signature-short", GOOD_SPEC.replace('n = "i32"\n', "")),
        spec_case("signature-dup-key", GOOD_SPEC.replace('n = "i32"\n', 'n = "i32"\nn = "i64"\n')),
        spec_case("signature-constexpr-no-value", GOOD_SPEC.replace(CONST, "")),
    ]
    cases += [spec_case(f"constexprs:{line[:24]}", GOOD_SPEC + line + "\n") for line in CONSTEXPR_LINES]
    cases += [
        spec_case(f"specialize:{line[:24]}", GOOD_SPEC + f"[kernel.specialize]\n{line}\n") for line in SPECIALIZE_LINES
    ]
    top = {
        "empty": "",
        "comment-only": "# nothing\n",
        "no-kernel": "x = 1\n",
        "kernal": GOOD_SPEC.replace("[kernel]", "[kernal]"),
        "extra-top-key": "y = 2\n" + GOOD_SPEC,
        "kernel=[]": "kernel = []\n",
        "kernel=[1]": "kernel = [1]\n",
        "kernel=1": "kernel = 1\n",
        "kernel=str": 'kernel = "x"\n',
        "kernel=true": "kernel = true\n",
        "kernel=1.5": "kernel = 1.5\n",
        "kernel=date": "kernel = 1979-05-27\n",
        "kernel=[[]]": "kernel = [[]]\n",
        "kernel=[{}]": "kernel = [{}]\n",
        "array-second-bad": GOOD_SPEC.replace("[kernel", "[[kernel]]", 1).replace("[kernel.", "[kernel.")
        + "\n[[kernel]]\nsource = 1\n",
        "unclosed-table": "[kernel\n",
        "no-value": "[kernel]\nsource = \n",
        "dup-key": HEAD + 'source = "x:y"\n' + SIG,
        "no-key": "= 1\n",
        "unclosed-string": '[kernel]\nsource = "abc\n',
        "deep-100": _deep_toml(100),
        "deep-5000": _deep_toml(5000),
        "table-redefined": GOOD_SPEC + "[kernel]\n",
    }
    cases += [spec_case(f"file:{k}", v) for k, v in top.items()]
    raw = {
        "binary": bytes(range(256)) * 8,
        "latin1": _b("# caf") + b"\xe9\n" + _b(GOOD_SPEC),
        "utf16": GOOD_SPEC.encode("utf-16"),
        "nul-bytes": _b(GOOD_SPEC) + b"\x00",
        "gzip-magic": b"\x1f\x8b\x08" + b"\x00" * 40,
        "lone-continuation": b"\x80" + _b(GOOD_SPEC),
    }
    cases += [spec_case(f"bytes:{k}", v) for k, v in raw.items()]
    cases.append(spec_case("too-large", _b(GOOD_SPEC) + b"#" * (2 * 1024 * 1024), env=(("KTRIAGE_MAX_INPUT_MB", "1"),)))
    cases.append(Case("spec-missing-path", lambda d: ["explain", str(d / "nope.toml"), *TOOLCHAINS], {}))
    cases.append(
        Case("spec-is-a-folder", lambda d: ["explain", str(d / "dir.toml"), *TOOLCHAINS], {"dir.toml/keep": b""})
    )
    # options that do not apply to a spec file are refused, not ignored
    for opt in (
        ["--precision", "fp16"],
        ["--dtype", "bf16"],
        ["--sm-count", "132"],
        ["--mode", "bwd"],
        ["--fwd"],
        ["--arch", "sm_1"],
        ["--arch", "banana"],
    ):
        cases.append(spec_case(f"option{'='.join(opt)}", GOOD_SPEC, extra=tuple(opt)))
    return cases


# ------------------------------------------------------------------------------------------ results files
def _good_results() -> dict[str, Any]:
    from ktriage.measure.results_file import results_to_json
    from ktriage.testing import fake_sweep_run

    run, cells = fake_sweep_run(seed=1, n_inputs=2, samples=5, toolchains=("triton-3.4.0",))
    return results_to_json(run, cells)


GOOD = _good_results()
MISSING = object()


def _set(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    target: Any = doc
    for p in path[:-1]:
        target = target[p]
    if value is MISSING:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


def _nested(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth):
        value = {"x": value}
    return value


RESULT_EDITS: list[tuple[tuple[Any, ...], Any]] = [
    (("format_version",), 2),
    (("format_version",), "1"),
    (("format_version",), True),
    (("format_version",), 0),
    (("run",), []),
    (("run",), 1),
    (("run",), "x"),
    (("run",), None),
    (("run",), MISSING),
    (("cells",), MISSING),
    (("run", "run_id"), 1),
    (("run", "run_id"), ""),
    (("run", "run_id"), "../x"),
    (("run", "run_id"), None),
    (("run", "run_id"), MISSING),
    (("run", "toolchains"), "x"),
    (("run", "toolchains"), [1]),
    (("run", "toolchains"), {"a": 1}),
    (("run", "toolchains"), [[]]),
    (("run", "toolchains"), [{"id": 1}]),
    (("run", "toolchains"), [{"id": ["a"]}]),
    (("run", "settings"), {"baseline": 1}),
    (("run", "settings"), {"baseline": ""}),
    (("run", "gpu"), []),
    (("run", "gpu"), "x"),
    (("run", "settings"), []),
    (("run", "packages"), {"torch": 1}),
    (("run", "status"), 1),
    (("run", "created"), 1),
    (("run", "command"), ["a"]),
    (("run", "gpu"), _nested(100)),
    (("cells",), {}),
    (("cells",), "x"),
    (("cells",), 1),
    (("cells",), None),
    (("cells",), [1]),
    (("cells",), [[]]),
    (("cells",), [None]),
    (("cells", 0, "key"), MISSING),
    (("cells", 0, "key"), []),
    (("cells", 0, "key"), "x"),
    (("cells", 0, "key", "op"), 1),
    (("cells", 0, "key", "op"), ""),
    (("cells", 0, "key", "op"), MISSING),
    (("cells", 0, "key", "mode"), None),
    (("cells", 0, "key", "input_id"), "1"),
    (("cells", 0, "key", "input_id"), -1),
    (("cells", 0, "key", "input_id"), True),
    (("cells", 0, "key", "input_id"), 1.5),
    (("cells", 0, "key", "input_id"), None),
    (("cells", 0, "key", "input_id"), 2**70),
    (("cells", 0, "key", "backend"), 1),
    (("cells", 0, "key", "toolchain"), 1),
    (("cells", 0, "key", "toolchain"), []),
    (("cells", 0, "key", "extra_field"), 1),
    (("cells", 0, "key", "input_label"), 5),
    (("cells", 0, "status"), "bogus"),
    (("cells", 0, "status"), 1),
    (("cells", 0, "status"), None),
    (("cells", 0, "status"), MISSING),
    (("cells", 0, "samples_ms"), "x"),
    (("cells", 0, "samples_ms"), [True]),
    (("cells", 0, "samples_ms"), [False, 1.0]),
    (("cells", 0, "samples_ms"), ["1"]),
    (("cells", 0, "samples_ms"), [-1.0]),
    (("cells", 0, "samples_ms"), [None]),
    (("cells", 0, "samples_ms"), {"a": 1}),
    (("cells", 0, "samples_ms"), 1),
    (("cells", 0, "samples_ms"), [[1]]),
    (("cells", 0, "samples_ms"), [1e10]),
    (("cells", 0, "samples_ms"), [float("nan")]),
    (("cells", 0, "samples_ms"), [float("inf")]),
    (("cells", 0, "error"), 1),
    (("cells", 0, "accuracy"), []),
    (("cells", 0, "accuracy"), "x"),
    (("cells", 0, "bytes_moved"), -1),
    (("cells", 0, "bytes_moved"), "x"),
    (("cells", 0, "bytes_moved"), 1.5),
    (("cells", 0, "flops"), True),
    (("cells", 0, "extra"), []),
    (("cells", 0, "samples"), []),
    (("cells", 0, "extra"), _nested(100)),
    (("cells", 1, "accuracy"), _nested(70)),
]


def _edit_id(path: tuple[Any, ...], value: Any) -> str:
    shown = "MISSING" if value is MISSING else json.dumps(value, default=str)[:24]
    return ".".join(str(p) for p in path) + "=" + shown


def results_case(
    id: str, data: bytes, *, name: str = "bad.json", verb: str = "compare", env: tuple[tuple[str, str], ...] = ()
) -> Case:
    good = json.dumps(GOOD).encode()
    if verb == "compare":
        return Case(
            f"results-{id}",
            lambda d: ["compare", str(d / name), str(d / "good.json")],
            {name: data, "good.json": good},
            env,
        )
    return Case(
        f"import-{id}",
        lambda d: ["runs", "import", str(d / name), "--db", f"sqlite:///{d / 'store.db'}"],
        {name: data},
        env,
    )


def results_cases() -> list[Case]:
    cases = [results_case(_edit_id(p, v), json.dumps(_set(GOOD, p, v)).encode()) for p, v in RESULT_EDITS]
    deep = b'{"run": {"run_id": "a"}, "cells": [], "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    deep_cells = (
        b'{"run": {"run_id": "a"}, "cells": [{"key": {"op": "a", "mode": "fwd", "input_id": 0, "input_label": "", '
        b'"backend": "b"}, "status": "ok", "extra": {"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}]}"
    )
    whole = {
        "array": b"[]",
        "number": b"1",
        "null": b"null",
        "string": b'"x"',
        "true": b"true",
        "empty-object": b"{}",
        "run-only": b'{"run": {}}',
        "cells-only": b'{"cells": []}',
        "not-json": b"hello",
        "empty": b"",
        "truncated": json.dumps(GOOD).encode()[:-7],
        "trailing-garbage": json.dumps(GOOD).encode() + b" }{",
        "binary": bytes(range(256)) * 16,
        "latin1": json.dumps(GOOD).encode().replace(b'"synthetic"', b'"synth\xe9tic"'),
        "utf16": json.dumps(GOOD).encode("utf-16"),
        "bom": b"\xef\xbb\xbf" + json.dumps(GOOD).encode(),
        "nul": json.dumps(GOOD).encode() + b"\x00",
        "deep-100000": deep,
        "deep-cells-100000": deep_cells,
        "single-quotes": b"{'run': {}}",
        "nan-run-id": b'{"run": {"run_id": NaN}, "cells": []}',
        "zero-cells": json.dumps(_set(GOOD, ("cells",), [])).encode(),
    }
    cases += [results_case(f"bytes:{k}", v) for k, v in whole.items()]
    cases.append(
        results_case(
            "too-large", json.dumps(GOOD).encode() + b" " * (2 * 1024 * 1024), env=(("KTRIAGE_MAX_INPUT_MB", "1"),)
        )
    )
    cases.append(
        Case(
            "results-missing-path",
            lambda d: ["compare", str(d / "nope.json"), str(d / "good.json")],
            {"good.json": json.dumps(GOOD).encode()},
        )
    )
    cases.append(
        Case(
            "results-is-a-folder",
            lambda d: ["compare", str(d / "dir.json"), str(d / "good.json")],
            {"dir.json/keep": b"", "good.json": json.dumps(GOOD).encode()},
        )
    )
    # the same readers behind `runs import` (which must also leave no half-imported run: test_failed_import_leaves_no_run)
    for p, v in RESULT_EDITS[::4]:
        cases.append(results_case(_edit_id(p, v), json.dumps(_set(GOOD, p, v)).encode(), verb="import"))
    for k in ("binary", "latin1", "deep-100000", "truncated", "zero-cells"):
        if k != "zero-cells":
            cases.append(results_case(f"bytes:{k}", whole[k], verb="import"))
    return cases


# ------------------------------------------------------------------------------------------ command-line values
def _good_pair(extra: list[str]) -> Case:
    good = json.dumps(GOOD).encode()
    return Case(
        "cli-compare" + "=".join(extra),
        lambda d: ["compare", str(d / "a.json"), str(d / "b.json"), *extra],
        {"a.json": good, "b.json": good},
    )


def cli_cases() -> list[Case]:
    cases = [
        _good_pair(x)
        for x in (
            ["--threshold", "0"],
            ["--threshold", "-1"],
            ["--threshold", "100"],
            ["--threshold", "x"],
            ["--confidence", "1.5"],
            ["--confidence", "0.2"],
            ["--baseline", "no_such_backend"],
            ["--format", "toml"],
            ["--format", "yaml"],
            ["-o", "out.txt"],
            ["--bogus-option"],
            ["--toolchains"],
            ["-o", "/proc/ktriage-no-such-dir/out.md"],
            ["-o", "/dev/full/x.md"],
        )
    ]
    cases.append(
        Case(
            "cli-compare-output-is-folder",
            lambda d: ["compare", str(d / "a.json"), str(d / "b.json"), "-o", str(d / "dir.md")],
            {"a.json": json.dumps(GOOD).encode(), "b.json": json.dumps(GOOD).encode(), "dir.md/keep": b""},
        )
    )
    cases.append(
        Case("cli-compare-one-side", lambda d: ["compare", str(d / "a.json")], {"a.json": json.dumps(GOOD).encode()})
    )
    cases.append(Case("cli-compare-no-args", lambda d: ["compare"], {}))
    spec = {"kernels/k.py": _b(KERNEL), "spec.toml": _b(GOOD_SPEC)}
    for extra in (
        ["-o", "/proc/ktriage-no-such/r.md"],
        ["--report", "/proc/ktriage-no-such/r.md"],
        ["-o", "/dev/null/r.json"],
        ["-j", "-1"],
        ["-j", "0"],
        ["-j", "x"],
        ["--compile-timeout", "0"],
        ["--compile-timeout", "-5"],
        ["--compile-timeout", "soon"],
        ["--format", "csv"],
        ["-o", "report.txt"],
        ["--input", "nope"],
    ):
        cases.append(
            Case(
                "cli-explain" + "=".join(extra),
                lambda d, e=extra: ["explain", str(d / "spec.toml"), *TOOLCHAINS, *e],
                spec,
            )
        )
    cases.append(Case("cli-explain-no-toolchain", lambda d: ["explain", str(d / "spec.toml")], spec))
    cases.append(Case("cli-explain-unknown-op", lambda d: ["explain", "no_such_op", *TOOLCHAINS], {}))
    cases.append(
        Case("cli-tune-j-1", lambda d: ["tune", str(d / "spec.toml"), "-t", "triton==3.4.0", "-j", "-1"], spec)
    )
    cases.append(
        Case(
            "cli-tune-dtype",
            lambda d: ["tune", str(d / "spec.toml"), "-t", "triton==3.4.0", "--precision", "fp16"],
            spec,
        )
    )
    for extra in (
        ["--registers", "300", "--warps", "4"],
        ["--registers", "32", "--warps", "64"],
        ["--registers", "32", "--warps", "0"],
        ["--registers", "32", "--warps", "4", "--shared", "-1"],
        ["--registers", "32", "--warps", "4", "--arch", "sm_1"],
        ["--registers", "-1", "--warps", "4"],
    ):
        cases.append(Case("cli-occupancy" + "=".join(extra), lambda d, e=extra: ["occupancy", *e], {}))
    cases += [
        Case("cli-catalog-show-nope", lambda d: ["catalog", "show", "no.such.kernel"], {}),
        Case("cli-toolchain-show-nope", lambda d: ["toolchain", "show", "no-such-toolchain-id"], {}),
        Case("cli-unknown-verb", lambda d: ["explian"], {}),
    ]
    return cases


# ------------------------------------------------------------------------------------------ store URLs
def store_cases() -> list[Case]:
    urls: dict[str, Callable[[Path], str]] = {
        "not-a-url": lambda d: "not a url",
        "memory": lambda d: "sqlite://",
        "memory-named": lambda d: "sqlite:///:memory:",
        "text-file": lambda d: f"sqlite:///{d / 'notes.txt'}",
        "folder": lambda d: f"sqlite:///{d}",
        "unwritable-folder": lambda d: "sqlite:////proc/ktriage-no/such/k.db",
        "no-driver": lambda d: "nosuchdriver://x/y",
        "binary-file": lambda d: f"sqlite:///{d / 'blob.bin'}",
        "json-file": lambda d: f"sqlite:///{d / 'good.json'}",
        "under-a-file": lambda d: f"sqlite:///{d / 'notes.txt' / 'k.db'}",
    }
    files = {
        "notes.txt": b"just some notes\n" * 100,
        "blob.bin": bytes(range(256)) * 64,
        "good.json": json.dumps(GOOD).encode(),
    }
    cases = [Case(f"db-list-{k}", lambda d, u=u: ["runs", "list", "--db", u(d)], files) for k, u in urls.items()]
    cases += [
        Case(f"db-import-{k}", lambda d, u=u: ["runs", "import", str(d / "good.json"), "--db", u(d)], files)
        for k, u in list(urls.items())[:5]
    ]
    cases.append(Case("db-show-no-run", lambda d: ["runs", "show", "nope", "--db", f"sqlite:///{d / 'fresh.db'}"], {}))
    cases.append(
        Case("db-compare-no-run", lambda d: ["compare", "run1", "run2", "--db", f"sqlite:///{d / 'fresh.db'}"], {})
    )
    return cases


# ------------------------------------------------------------------------------------------ bundles
def _manifest(**edit: Any) -> bytes:
    base: dict[str, Any] = {
        "format_version": 1,
        "op": "layer_norm",
        "mode": "fwd",
        "precision": "fp32",
        "target": "sm_90",
        "sm_count": 132,
        "backends": ["liger_layer_norm"],
        "inputs": [],
        "toolchains": {},
        "specs": {},
        "artifacts": {},
    }
    base.update(edit)
    return json.dumps({k: v for k, v in base.items() if v is not MISSING}).encode()


def bundle_cases() -> list[Case]:
    manifests = {
        "not-json": b"nope",
        "binary": bytes(range(256)),
        "array": b"[]",
        "latin1": b'{"op": "caf\xe9"}',
        "format-2": _manifest(format_version=2),
        "no-op": _manifest(op=MISSING),
        "op-int": _manifest(op=1),
        "sm_count-str": _manifest(sm_count="many"),
        "specs-list": _manifest(specs=[]),
        "artifacts-str": _manifest(artifacts="x"),
        "backends-str": _manifest(backends="liger"),
        "spec-bad": _manifest(specs={"k": {"name": 1}}),
        "artifact-entry-bad": _manifest(artifacts={"k": {"tc": {"status": "ok"}}}),
        "deep": b'{"op": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    }
    return [
        Case(
            f"bundle-{k}",
            lambda d: ["bench", "--op", "layer_norm", "--bundle", str(d / "bundle")],
            {"bundle/manifest.json": v},
        )
        for k, v in manifests.items()
    ]


# ------------------------------------------------------------------------------------------ the ktriage home
def home_cases() -> list[Case]:
    homes = {"under-proc": "/proc/ktriage-no-such-home", "under-a-file": "{d}/afile/home"}
    verbs = {
        "toolchain-list": ["toolchain", "list"],
        "runs-list": ["runs", "list"],
        "toolchain-show": ["toolchain", "show", "x"],
    }
    return [
        Case(f"home-{h}-{v}", lambda d, a=argv: list(a), {"afile": b"not a folder"}, (("KTRIAGE_HOME", home),))
        for h, home in homes.items()
        for v, argv in verbs.items()
    ]


# ------------------------------------------------------------------------------------------ TritonBench files
TB_GOOD_CSV = b"x_val;torch_layer_norm-latency;liger_layer_norm-latency\n1024;0.05;0.18\n2048;0.07;0.19\naverage;;\n"
TB_GOOD_JSON = json.dumps(
    {
        "tritonbench_layer_norm_bwd[x_1024-liger_layer_norm]_latency": "0.18",
        "tritonbench_layer_norm_bwd[x_2048-liger_layer_norm]_latency": "0.19",
    }
).encode()


def tritonbench_case(id: str, name: str, data: bytes, *, verb: str = "compare", extra: tuple[str, ...] = ()) -> Case:
    """A bad TritonBench file next to a good one, through compare or triage (the readers both use)."""
    good = "good_layer_norm_bwd.csv"
    files = {name: data, good: TB_GOOD_CSV}
    if verb == "triage":
        return Case(
            f"tritonbench-triage-{id}",
            lambda d: [
                "triage",
                str(d / name),
                str(d / good),
                "--old-toolchain",
                "triton==3.4.0",
                "--new-toolchain",
                "triton==3.4.0",
                *extra,
            ],
            files,
        )
    return Case(f"tritonbench-{id}", lambda d: ["compare", str(d / name), str(d / good), *extra], files)


def tritonbench_cases() -> list[Case]:
    csv_name, json_name = "bad_layer_norm_bwd.csv", "bad_layer_norm_bwd.json"
    bad_csv = {
        "csv-empty": b"",
        "csv-header-only-input": b"x_val\n1024\n",
        "csv-no-latency-column": b"x_val;liger_layer_norm-speedup\n1024;1.0\n",
        "csv-header-is-a-metric": b"liger_layer_norm-latency;x\n1;2\n",
        "csv-binary": bytes(range(256)) * 8,
        "csv-latin1": TB_GOOD_CSV.replace(b"liger", b"lig\xe9r"),
        "csv-utf16": TB_GOOD_CSV.decode().encode("utf-16"),
        "csv-comma-separated": TB_GOOD_CSV.replace(b";", b","),
    }
    cases = [tritonbench_case(k, csv_name, v) for k, v in bad_csv.items()]
    cases.append(
        tritonbench_case("csv-no-op-in-name", "run1.csv", TB_GOOD_CSV)
    )  # op/mode: neither the name nor --op says
    cases.append(
        tritonbench_case(
            "csv-unknown-mode-flag", "run1.csv", TB_GOOD_CSV, extra=("--op", "layer_norm", "--mode", "sideways")
        )
    )
    bad_json = {
        "json-not-json": b"hello",
        "json-truncated": TB_GOOD_JSON[:-5],
        "json-deep": b'{"tritonbench_x_fwd[x_1-b]_latency": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "json-binary": bytes(range(256)) * 8,
        "json-array": b"[]",
    }
    cases += [tritonbench_case(k, json_name, v) for k, v in bad_json.items()]
    for k in ("csv-empty", "csv-no-latency-column", "csv-binary", "csv-latin1"):
        cases.append(tritonbench_case(k, csv_name, bad_csv[k], verb="triage"))
    for k in ("json-truncated", "json-deep"):
        cases.append(tritonbench_case(k, json_name, bad_json[k], verb="triage"))
    cases.append(
        tritonbench_case(
            "threshold-zero", "a_layer_norm_bwd.csv", TB_GOOD_CSV, verb="triage", extra=("--threshold", "0")
        )
    )
    cases.append(
        tritonbench_case(
            "threshold-negative", "a_layer_norm_bwd.csv", TB_GOOD_CSV, verb="triage", extra=("--threshold", "-5")
        )
    )
    return cases


CASES = (
    spec_cases() + results_cases() + tritonbench_cases() + cli_cases() + store_cases() + bundle_cases() + home_cases()
)


def _assert_user_error(code: int, out: str, err: str, case: Case) -> None:
    assert "Traceback" not in out + err, f"{case.id}: a traceback\n{err}"
    assert code != exit_codes.INTERNAL, f"{case.id}: internal error (a bug)\n{err}"
    assert code != exit_codes.OK, f"{case.id}: exit 0 on bad input (a silent result)\n{out}\n{err}"
    assert code == exit_codes.USAGE, f"{case.id}: exit {code}, not 2\n{err}"
    lines = err.splitlines()
    assert any(line.startswith("error:") for line in lines), f"{case.id}: no error: line\n{err}"
    assert any(line.startswith("fix:") for line in lines), f"{case.id}: no fix: line\n{err}"


class _Refused(Exception):
    pass


@pytest.fixture()
def no_toolchain_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad input that got as far as building toolchains was accepted: make that an internal error."""
    import ktriage.api._explain
    import ktriage.api._tune

    def refuse(*_a: object, **_k: object) -> None:
        raise _Refused("the bad input was accepted: toolchains would be built now")

    monkeypatch.setattr(ktriage.api._explain, "resolve_toolchains", refuse)
    monkeypatch.setattr(ktriage.api._tune, "resolve_toolchains", refuse)
    monkeypatch.delenv("KTRIAGE_DEBUG", raising=False)
    monkeypatch.delenv("KTRIAGE_DB", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def test_the_corpus_is_large_and_distinct() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    assert len(CASES) >= 200


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_a_user_error(
    case: Case,
    tmp_path: Path,
    no_toolchain_builds: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, data in case.files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not name.endswith("/keep"):
            path.write_bytes(data)
    for key, value in case.env:
        monkeypatch.setenv(key, value.format(d=tmp_path))
    monkeypatch.chdir(tmp_path)
    code = main(case.argv(tmp_path))
    captured = capsys.readouterr()
    _assert_user_error(code, captured.out, captured.err, case)


def test_failed_import_leaves_no_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`runs import` is one transaction: a file that fails part way leaves no run, so the good file
    with the same run id imports afterwards. The failure is the database's own: a trigger that refuses
    the run's second cell (the import writes the run's row, then its cells, in one transaction)."""
    url = f"sqlite:///{tmp_path / 'k.db'}"
    good = tmp_path / "good.json"
    good.write_text(json.dumps(GOOD))
    other = tmp_path / "other.json"  # another run first: the store and its tables exist before the trigger
    other.write_text(json.dumps({**GOOD, "run": {**GOOD["run"], "run_id": "0ther0run0id"}}))
    assert main(["runs", "import", str(other), "--db", url]) == exit_codes.OK
    with sqlite3.connect(tmp_path / "k.db") as con:
        con.execute(
            "CREATE TRIGGER refuse_second_cell BEFORE INSERT ON ktriage_cells WHEN NEW.ordinal = 1 "
            "BEGIN SELECT RAISE(ABORT, 'disk full (simulated) on the second cell'); END"
        )
    capsys.readouterr()
    assert main(["runs", "import", str(good), "--db", url]) == exit_codes.USAGE
    err = capsys.readouterr().err
    # not "already in the store": the run was new, the database refused one of its cells
    assert "refused a cell" in err and "disk full (simulated)" in err and "already" not in err, err
    with sqlite3.connect(tmp_path / "k.db") as con:
        con.execute("DROP TRIGGER refuse_second_cell")
    con = sqlite3.connect(tmp_path / "k.db")
    assert con.execute("select count(*) from ktriage_runs").fetchone() == (1,)  # the other run only
    con.close()
    capsys.readouterr()
    assert main(["runs", "import", str(good), "--db", url]) == exit_codes.OK
    assert f"imported run {GOOD['run']['run_id']} ({len(GOOD['cells'])} cells)" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------ bisect state (library level)
STATE_EDITS: dict[str, bytes] = {
    "not-json": b"{",
    "binary": bytes(range(256)),
    "latin1": b'{"fingerprint": {"q": "caf\xe9"}}',
    "array": b"[]",
    "fingerprint-list": b'{"format_version": 1, "fingerprint": [], "stages": []}',
    "stages-dict": b'{"format_version": 1, "fingerprint": {"q": 1}, "stages": {}}',
    "stage-no-candidates": b'{"format_version": 1, "fingerprint": {"q": 1}, "stages": [{"name": "s"}]}',
    "candidate-no-id": b'{"format_version": 1, "fingerprint": {"q": 1}, "stages": [{"name": "s", "candidates": [{}]}]}',
    "deep": b'{"format_version": 1, "fingerprint": {"q": 1}, "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "format-9": b'{"format_version": 9, "fingerprint": {"q": 1}, "stages": []}',
}


@pytest.mark.parametrize("name", list(STATE_EDITS))
def test_bad_bisect_state_is_a_format_error(name: str, tmp_path: Path) -> None:
    """``bisect --resume`` reads its state through the schema: a broken one is a FormatError."""
    from ktriage.bisect.search import StateFile
    from ktriage.errors import FormatError

    path = tmp_path / "state.json"
    path.write_bytes(STATE_EDITS[name])
    with pytest.raises(FormatError) as info:
        StateFile.resume(path, {"q": 1})
    assert str(path) in info.value.problem and info.value.fix


RECORDINGS: dict[str, bytes] = {
    "binary": bytes(range(256)),
    "not-json": b"[",
    "number": b"1",
    "spec-not-object": b"[1]",
    "spec-no-source": b'[{"name": "k", "signature": {"x": "i32"}}]',
    "num_warps-str": b'{"format_version": 1, "specs": '
    b'[{"name": "k", "source": "a.py:k", "signature": {"x": "i32"}, "num_warps": "4"}]}',
    "specs-dict": b'{"format_version": 1, "specs": {}}',
    "deep": b"[" * 100_000 + b"]" * 100_000,
}


@pytest.mark.parametrize("name", list(RECORDINGS))
def test_bad_recording_is_a_format_error(name: str, tmp_path: Path) -> None:
    """Recorded specs (``workload.recorded.in_process.load_specs``) are read through the spec JSON schema."""
    from ktriage.errors import FormatError
    from ktriage.workload.recorded.in_process import load_specs

    path = tmp_path / "rec.json"
    path.write_bytes(RECORDINGS[name])
    with pytest.raises(FormatError) as info:
        load_specs(path)
    assert str(path) in info.value.problem and info.value.fix
