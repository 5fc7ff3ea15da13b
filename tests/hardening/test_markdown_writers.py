"""Every markdown writer renders hostile text inert (issue 27).

The writers are not listed here: the test imports every module of the package and finds them,
(a) by name (a function or method whose name says ``markdown`` and that returns ``str``) and
(b) by content (a function returning ``str`` whose code holds markdown table or ``<details>``
syntax), and each must be a registered :func:`ktriage.mdsafe.markdown_writer`, whose output goes
through :func:`ktriage.mdsafe.inert`. Then every registered writer is fed a hostile document
(``<script>``, ``<img onerror>``, a remote image, a ``javascript:`` link, ``@everyone``, a link
reference definition, a backtick that closes a code span early) and must give it back inert.
A new writer that is not registered fails the first test; one registered fails neither, and is safe.

End to end, through the real ``main(argv)``: a hostile TritonBench file (op labels, x_vals, error
messages) through ``triage`` (stdout, ``-o F.md`` and ``$GITHUB_STEP_SUMMARY``) and ``compare``,
and the writers of the other surfaces the issue names with hostile fields: a bisect report whose
first bad commit has a hostile subject, a history report, a workload whose notes carry a hostile
trace path, a profile document with hostile toolchain ids and ncu output.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pkgutil
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import ktriage
from ktriage.cli.app import main
from ktriage.mdsafe import TRUSTED, WRITERS, inert

# what must never reach a rendered summary: HTML tags (but ktriage's own details/summary/br),
# images, javascript: links, link reference definitions, live mentions
HOSTILE = (
    "<script>alert(1)</script> <img src=x onerror=alert(1)> ![t](http://tracker.example/x.png) "
    '[click](javascript:alert(1)) [y][r] @everyone @here <!-- c --> <a href="javascript:x">a</a> '
    "x` <iframe src=//evil> `y <http://evil.example> [ok](javascript&#58;alert(2))"
)
HOSTILE_DOC = "\n".join(
    [
        f"# {HOSTILE}",
        "",
        f"| a | {HOSTILE} |",
        "|---|---|",
        f"- {HOSTILE}",
        "[r]: javascript:alert(3)",
        f"<details><summary>{HOSTILE}</summary>",
        "",
        "</details>",
        f"`{HOSTILE}`",
    ]
)
_TAG = re.compile(r"<(?!/?(?:details|summary)>|br ?/?>)[A-Za-z!/?]", re.I)


def _outside_code(doc: str) -> str:
    """The text GitHub renders as markdown: fenced blocks and code spans taken out."""
    out, fence = [], False
    for line in doc.split("\n"):
        if re.match(r"^ {0,3}(```|~~~)", line):
            fence = not fence
            continue
        if not fence:
            out.append(re.sub(r"(?<!\\)(`+)(?!`)(.+?)(?<!`)\1(?!`)", " ", line))
    return "\n".join(out)


def assert_inert(doc: str, where: str) -> None:
    text = _outside_code(doc)
    assert not _TAG.search(text), f"{where}: raw HTML survives: {_TAG.search(text)}\n{doc[:2000]}"
    assert "![" not in text.replace("!\\[", ""), f"{where}: an image survives\n{doc[:2000]}"
    assert not re.search(r"(?<!\\)\]\(\s*(javascript|data|vbscript)", text, re.I), (
        f"{where}: a javascript: link survives"
    )
    assert not re.search(r"(?<![A-Za-z0-9_`])@(everyone|here)\b", text), f"{where}: a live mention survives"
    assert not re.search(r"^ {0,3}\[[^\]]*\]:", text, re.M), f"{where}: a link reference definition survives"


# ---------------------------------------------------------------------------------- enumeration
# modules that only a toolchain's interpreter imports (they need triton or torch)
NOT_HERE: list[str] = []


def _modules() -> Iterator[ModuleType]:
    for info in pkgutil.walk_packages(ktriage.__path__, "ktriage."):
        if info.name.endswith("__main__"):
            continue
        try:
            yield importlib.import_module(info.name)
        except ModuleNotFoundError as exc:
            if exc.name not in ("triton", "torch"):
                raise
            NOT_HERE.append(info.name)


MODULES = list(_modules())


def test_modules_that_cannot_be_imported_here_write_no_markdown() -> None:
    """The kernels' sources and insitu need triton or torch: the scan reads their text instead."""
    for name in NOT_HERE:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None
        text = Path(spec.origin).read_text()
        assert "markdown" not in text and "|---" not in text, name


def _functions(module: ModuleType) -> Iterator[tuple[str, Any]]:
    for name, obj in vars(module).items():
        if inspect.isfunction(obj) and obj.__module__ == module.__name__:
            yield name, obj
        elif inspect.isclass(obj) and obj.__module__ == module.__name__:
            for attr, member in vars(obj).items():
                if inspect.isfunction(member):
                    yield f"{name}.{attr}", member


def _writes_markdown(fn: Any) -> bool:
    """By content: returns ``str`` and its code holds markdown table or folded-section syntax."""
    raw = inspect.unwrap(fn)
    if getattr(raw, "__annotations__", {}).get("return") not in ("str", str):
        return False
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(raw)))
    except (OSError, TypeError, SyntaxError):
        return False
    texts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return any("|---" in t or "<details>" in t or t.startswith("# ") for t in texts)


def _candidates() -> dict[str, Any]:
    found = {}
    for module in MODULES:
        for name, fn in _functions(module):
            by_name = "markdown" in name.rsplit(".", 1)[-1] and inspect.unwrap(fn).__annotations__.get("return") in (
                "str",
                str,
            )
            if by_name or _writes_markdown(fn):
                found[f"{module.__name__}.{name}"] = fn
    return found


CANDIDATES = _candidates()


def test_the_scan_finds_the_writers() -> None:
    """The scan is not vacuous: it finds the writers of the surfaces the issue names."""
    for name in (
        "ktriage.report.triage.to_markdown",
        "ktriage.report.markdown.to_markdown",
        "ktriage.report.history.to_markdown",
        "ktriage.report.bisect.to_markdown",
        "ktriage.report.workload.show_markdown",
        "ktriage.profile.diff.to_markdown",
        "ktriage.report.explain.to_markdown",
    ):
        assert name in CANDIDATES, sorted(CANDIDATES)
    assert len(CANDIDATES) >= 20


@pytest.mark.parametrize("name", sorted(CANDIDATES))
def test_every_markdown_writer_is_registered(name: str) -> None:
    fn = CANDIDATES[name]
    if getattr(fn, "__trusted_markdown__", ""):  # ktriage's own text only, and it says why
        assert name in TRUSTED
        return
    assert getattr(fn, "__markdown_writer__", False), (
        f"{name} writes markdown but is not a @markdown_writer (ktriage.mdsafe): its output would not go through inert()"
    )
    assert name in WRITERS


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_every_registered_writer_gives_hostile_text_back_inert(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = WRITERS[name]
    monkeypatch.setattr(writer, "__wrapped__", lambda *_a, **_k: HOSTILE_DOC)
    out = writer()
    assert_inert(out, name)
    assert "alert(1)" in out and "everyone" in out  # shown as text, not dropped
    assert inert(out) == out  # idempotent: writers that compose writers stay right


# ---------------------------------------------------------------------------------- end to end
BAD = "<img src=x onerror=alert(1)>"
HOSTILE_CSV = (
    "x_val;torch_layer_norm-latency;liger_layer_norm-latency;<script>s</script>-latency\n"
    f"1024;0.05;0.18;{BAD} @everyone\n"
    f"![i](http://tracker.example/p.png);0.07;0.19;[c](javascript:alert(1))\naverage;;;\n"
)
NEW_CSV = (
    "x_val;torch_layer_norm-latency;liger_layer_norm-latency;<script>s</script>-latency\n"
    "1024;0.05;0.40;0.3\n![i](http://tracker.example/p.png);0.07;0.50;0.3\naverage;;;\n"
)


def _hostile_pair(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "layer_norm_fwd_@everyone.csv", tmp_path / "layer_norm_fwd_<b>new<b>.csv"
    a.write_text(HOSTILE_CSV)
    b.write_text(NEW_CSV)
    return a, b


@pytest.mark.parametrize("verb", ["triage", "compare"])
def test_a_hostile_results_file_renders_inert_everywhere(
    verb: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _hostile_pair(tmp_path)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    extra = ["--old-toolchain", "triton==3.4.0", "--new-toolchain", "triton==3.4.0"] if verb == "triage" else []
    code = main([verb, str(a), str(b), *extra, "--format", "markdown", "-o", str(tmp_path / "r.md")])
    out = capsys.readouterr().out
    assert code in ((1, 4) if verb == "triage" else (0, 1, 4)), (
        code
    )  # triage: a regression or cells not compared, never 0
    for where, doc in (
        ("stdout", out),
        ("-o r.md", (tmp_path / "r.md").read_text()),
        ("$GITHUB_STEP_SUMMARY", summary.read_text()),
    ):
        assert "onerror" in doc  # the hostile text is there, as text
        assert_inert(doc, f"{verb} {where}")


def test_a_hostile_commit_subject_in_bisect_first_bad_line() -> None:
    """Bisect's "first bad" line carries a commit subject: a real report of a found culprit."""
    from ktriage.bisect.candidate import Candidate, Observation
    from ktriage.bisect.run import BisectOptions, BisectReport
    from ktriage.bisect.search import StageResult
    from ktriage.report.bisect import to_markdown

    subject = f"3f2a1c9 Fix {BAD} @everyone ![x](http://t/x.png) [c](javascript:alert(1))"
    cands = [Candidate(0, "a", "1111111 good"), Candidate(1, "b", subject)]
    obs = [Observation(cands[0], "good", f"ok {BAD}"), Observation(cands[1], "bad", f"spills {BAD}")]
    stage = StageResult("culprit", 0, 1, cands, obs, rounds=1, tested=0, non_monotonic=[1])
    report = BisectReport(
        BisectOptions(source="git:/x", good="a", bad="b"), [stage], ["commits"], notes=[f"note {BAD}"]
    )
    out = to_markdown(report)
    assert "first bad" in out and "onerror" in out
    assert_inert(out, "bisect")


def test_a_hostile_toolchain_id_and_ncu_output_in_profile() -> None:
    from ktriage.profile.diff import to_markdown as profile_md

    tc = f"triton==3.4.0 {BAD}`<script>x</script>`@everyone"
    doc = {
        "op": "layer_norm",
        "mode": "fwd",
        "input_id": 0,
        "backend": f"liger {BAD}",
        "ncu_version": f"2025.1 {BAD}",
        "reference": tc,
        "notes": [f"{tc}: ncu said {BAD}"],
        "findings": [f"![x](http://t/x.png) {BAD}"],
        "toolchains": {tc: {"launches": [{"registers_per_thread": 40, "stall_share_pct": {f"{BAD}": 50.0}}]}},
    }
    assert_inert(profile_md(doc), "profile")


def test_a_hostile_trace_path_in_workload_show(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``workload show`` of a tritonparse trace imported under a hostile file name (the path is in
    the workload's notes), through the real command line, markdown to stdout and -o."""
    data = Path(__file__).resolve().parents[1] / "data" / "tritonparse"
    trace = tmp_path / "<img src=x onerror=alert(1)> @everyone ![i](http:⁄⁄t⁄x.png).ndjson"
    trace.write_bytes((data / "add_scale.compile_only.full_source.bin.ndjson").read_bytes())
    monkeypatch.chdir(tmp_path)
    assert main(["workload", "import", str(trace), "-o", str(tmp_path / "W.json")]) == 0
    capsys.readouterr()
    assert (
        main(["workload", "show", str(tmp_path / "W.json"), "--format", "markdown", "-o", str(tmp_path / "w.md")]) == 0
    )
    out = capsys.readouterr().out
    for where, doc in (("stdout", out), ("-o w.md", (tmp_path / "w.md").read_text())):
        assert "onerror" in doc, doc[:3000]
        assert_inert(doc, f"workload show {where}")


@pytest.mark.parametrize(
    ("line", "spans"),
    [
        ("`a` <b>", ["`a`"]),
        ("``a`b`` <c>", ["``a`b``"]),
        ("`a <d>", []),
        ("\\`<b>` <i>", []),  # a run after a backslash may be escaped: taken as text, so escaped more, never less
        (
            "a" + "a".join("`" * i for i in range(1, 400)),
            [],
        ),  # runs of growing lengths: none closes (linear, was cubic)
        ("` x ` `` y `` `", ["` x `", "`` y ``"]),
    ],
)
def test_code_spans_are_found_as_commonmark_does(line: str, spans: list[str]) -> None:
    from ktriage.mdsafe import _code_spans

    assert [line[a:b] for a, b in _code_spans(line)] == spans
