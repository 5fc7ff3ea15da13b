"""`ktriage explain` through the real ``main(argv)``, with real Triton wheels, real ptxas and real cuobjdump:
the JSON keys, the table's attribution, errors that keep their brackets, ``--fixes``, and failures as
findings.

Failures are findings: a cell that could not be compiled is shown as such, never as "no change". Real
toolchains (triton==3.3.1, triton==3.4.0 with its ptxas 12.8.93 and with ptxas 12.4.131). The kernel
(tests/kernels_for_tests.py:tensor_descriptor_kernel) uses `tl.make_tensor_descriptor`, which Triton 3.3.1
does not have: with 3.3.1 as the reference, explain must say so and compare the rest against 3.4.0
(issue 9, point 4; issue 11, point 1).
"""

from __future__ import annotations

import json
import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from ktriage.cli import exit_codes
from tests.conftest import CliResult, RunCli

KERNELS = Path(__file__).resolve().parents[1] / "kernels_for_tests.py"
NO_TMA = "AttributeError: module 'triton.language' has no attribute 'make_tensor_descriptor'"
SIGNATURE = """[kernel.signature]
x_ptr = "*fp32"
y_ptr = "*fp32"
M = "i32"
N = "i32"
BM = "constexpr"
BN = "constexpr"
"""


# ----------------------------------------------------------------------------- the report and the table


@pytest.mark.slow
def test_cli_json_has_the_documented_keys(tmp_path: Path, run_cli: RunCli) -> None:
    report = tmp_path / "r.md"
    out = run_cli(
        [
            "explain",
            "liger.layer_norm",
            "--bwd",
            "--input",
            "N=4608",
            "--arch",
            "sm_90",
            "-t",
            "triton==3.3.1",
            "-t",
            "triton==3.4.0",
            "--format",
            "json",
            "--report",
            str(report),
        ]
    )
    assert out.exit_code == exit_codes.OK, out.output
    data = json.loads(out.stdout[out.stdout.index("{") : out.stdout.rindex("}") + 1])
    kernel = data["kernels"][0]
    for result in kernel["results"].values():
        for key in (
            "registers",
            "stack_bytes",
            "spill_store_bytes",
            "spill_load_bytes",
            "shared_bytes",
            "sass_opcodes",
        ):
            assert key in result
        assert {"ctas_per_sm", "warps_per_sm", "limiter"} <= set(result["occupancy"])
    changes = kernel["comparisons"][0]["changes"]
    assert {c["attribution"] for c in changes} <= {"frontend", "ptxas", "both", "none", "unknown"}
    assert report.exists() and report.with_suffix(".json").exists()


def test_cli_bad_input_names_the_fix(run_cli: RunCli) -> None:
    out = run_cli(["explain", "liger.layer_nrom", "-t", "triton==3.4.0"])
    assert out.exit_code == exit_codes.USAGE, out.output
    assert "layer_norm" in out.err_text and out.fix


@pytest.mark.slow
def test_what_explain_prints_for_a_catalog_op_selects_its_inputs_back(tmp_path: Path, run_cli: RunCli) -> None:
    """explain's JSON names each input of a catalog op as its spec (``liger.layer_norm.bwd[N=4608]``, as its
    fixes, ``catalog show`` and bisect do), and a report of several kernels puts a range inside that kernel's
    name (``liger.layer_norm.bwd[N=4608..5632]``). Copied into ``-i`` both were refused ("neither an id nor
    K=V facts"), where a workload's ``K7[...]`` selects back; now they select what the report named, and a
    kernel of the other pass is refused naming ``--mode``. Real compiles, toolchains of the test home."""
    from ktriage.spec.ranges import input_place

    def explain(selector: str, name: str) -> dict[str, Any]:
        report = tmp_path / f"{name}.md"
        toolchains = ["-t", "triton==3.3.1", "-t", "triton==3.4.0"]
        out = run_cli(["explain", "liger.layer_norm", "--bwd", "-i", selector, *toolchains, "--report", str(report)])
        assert out.exit_code == exit_codes.OK, out.output
        data: dict[str, Any] = json.loads(report.with_suffix(".json").read_text())
        return data

    first = explain("N=4608..5632", "first")
    names = [k["name"] for k in first["kernels"]]
    assert names == [f"liger.layer_norm.bwd[N={n}]" for n in (4608, 5120, 5632)]
    assert [k["name"] for k in explain(names[1], "one")["kernels"]] == names[1:2]
    finding = first["findings"][0]
    kernel = names[0].split("[", 1)[0]
    printed = input_place(kernel, finding["inputs"])  # how a report of several kernels names the finding
    assert printed == f"{kernel}[{finding['range']}]" == "liger.layer_norm.bwd[N=4608..5632]"
    assert [k["name"] for k in explain(printed, "range")["kernels"]] == names
    refused = run_cli(["explain", "liger.layer_norm", "--fwd", "-i", names[0], "-t", "triton==3.4.0"])
    assert refused.exit_code == exit_codes.USAGE, refused.output
    assert "names liger.layer_norm's bwd kernel" in refused.err_text
    assert refused.fix is not None and "--mode bwd" in refused.fix and "liger.layer_norm.fwd[N=4608]" in refused.fix


@pytest.mark.slow
def test_cli_table_shows_the_attribution_and_errors_keep_brackets(tmp_path: Path, run_cli: RunCli) -> None:
    """Rich markup must not swallow '[ptxas]' or a spec file's '[kernel]' in messages, nor the
    '[attribution]' of the column those '[ptxas]' are in (the header read "changes")."""
    out = run_cli(
        [
            "explain",
            "liger.embedding",
            "--bwd",
            "-i",
            "0",
            "--no-report",
            "-t",
            "triton==3.4.0,ptxas==12.4.131",
            "-t",
            "triton==3.4.0",
        ]
    )
    assert out.exit_code == exit_codes.OK, out.output
    assert "[ptxas] ATOMG +32" in out.output and "ptxas is responsible" in out.output
    assert "changes [attribution]" in out.stdout, out.stdout
    (tmp_path / "k.py").write_text("import triton\n\n@triton.jit\ndef k(x_ptr, n):\n    pass\n")
    (tmp_path / "k.toml").write_text('[kernel]\nsource = "k.py:k"\n[kernel.signature]\nx_ptr = "*fp32"\n')
    bad = run_cli(["explain", str(tmp_path / "k.toml"), "-t", "triton==3.4.0"])
    assert bad.exit_code == exit_codes.USAGE, bad.output
    assert "[kernel]" in bad.stderr and "add `n`" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_the_table_says_what_each_toolchain_assembled_with(run_cli: RunCli) -> None:
    """The markdown listed each toolchain's Triton and ptxas; the terminal's columns named the specs
    alone, so "ptxas is responsible" under "triton==3.4.0" did not say which ptxas (12.8.93, its own)."""
    out = run_cli(
        ["explain", "liger.embedding", "--bwd", "-i", "0", "-t", "triton==3.4.0,ptxas==12.4.131", "-t", "triton==3.4.0"]
    )
    assert out.exit_code == exit_codes.OK, out.output
    assert "Toolchains (the first is the reference):" in out.stdout
    assert "triton==3.4.0,ptxas==12.4.131: Triton 3.4.0, ptxas 12.4.131 (triton-3.4.0.ptxas-12.4.131." in out.stdout
    assert "triton==3.4.0: Triton 3.4.0, ptxas 12.8.93 (triton-3.4.0.ptxas-12.8.93." in out.stdout


# explain of one embedding bwd input, ptxas 12.4 -> 12.8 under Triton 3.4.0: the atomic regression
EMBEDDING_PTXAS = [
    "explain",
    "liger.embedding",
    "--bwd",
    "--input",
    "0",
    "--arch",
    "sm_90",
    "-t",
    "triton==3.4.0,ptxas==12.4.131",
    "-t",
    "triton==3.4.0",
]
# the same with --fixes (a relaxed-atomic fix)
EMBEDDING_FIXES = [*EMBEDDING_PTXAS, "--fixes"]


@pytest.mark.slow
def test_the_html_says_what_each_toolchain_assembled_with_and_the_gate_as_given(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """The terminal and the markdown listed each toolchain's Triton and ptxas; the HTML named the specs
    alone, so "ptxas is responsible" under "triton==3.4.0" did not say which ptxas (12.8.93, its own).
    And the gate --threshold 0.025 read "+-2%" in every report."""
    page = tmp_path / "r.html"
    out = run_cli([*EMBEDDING_PTXAS, "--threshold", "0.025", "--report", str(page)])
    assert out.exit_code == exit_codes.OK, out.output
    html = unescape(page.read_text())
    assert (
        "triton==3.4.0,ptxas==12.4.131</code>: Triton 3.4.0, ptxas 12.4.131 (<code>triton-3.4.0.ptxas-12.4.131." in html
    )
    assert "triton==3.4.0</code>: Triton 3.4.0, ptxas 12.8.93 (<code>triton-3.4.0.ptxas-12.8.93." in html
    assert "Gate: ±2.5% (--threshold)" in html and "Gate: ±2.5% (--threshold)" in out.stdout


class _PageText(HTMLParser):
    """The text a browser shows of a page (its <style> left out), as one line per block."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._style = tag == "style"
        self.parts.append("\n" if tag in {"p", "li", "h1", "h2", "tr", "br"} else "")

    def handle_endtag(self, tag: str) -> None:
        self._style = False

    def handle_data(self, data: str) -> None:
        if not self._style:
            self.parts.append(data)

    def lines(self) -> list[str]:
        return [" ".join(line.split()) for line in "".join(self.parts).splitlines() if line.strip()]


@pytest.mark.slow
def test_every_report_names_the_gate_as_given_and_each_toolchains_versions(tmp_path: Path, run_cli: RunCli) -> None:
    """--threshold 0.025 read "+-2%" wherever a report named the gate (its line and a finding predicted within
    it), and the HTML named the toolchain specs without the Triton and ptxas they resolved to. Layer norm bwd
    at N=1024 and 1536, Triton 3.3.1 -> 3.4.0: one neutral finding, "within the +-2.5% gate"; the terminal, the
    markdown and the HTML (as parsed text) each say the gate as given and each toolchain's versions."""
    md, page = tmp_path / "r.md", tmp_path / "r.html"
    argv = ["explain", "liger.layer_norm", "--bwd", "-i", "N=1024", "-i", "N=1536", "--arch", "sm_90"]
    out = run_cli(
        [*argv, "-t", "triton==3.3.1", "-t", "triton==3.4.0", "--threshold", "0.025", "-o", str(md), "-o", str(page)]
    )
    assert out.exit_code == exit_codes.OK, out.output
    parser = _PageText()
    parser.feed(page.read_text())
    surfaces = {"terminal": " ".join(out.stdout.split()), "markdown": md.read_text(), "html": "\n".join(parser.lines())}
    for where, text in surfaces.items():
        assert "Gate: ±2.5% (--threshold)" in text and "within the ±2.5% gate" in text, f"{where}:\n{text}"
        assert not re.search(r"\+-[0-9]+% gate|Gate: \+-[0-9]+%", text), f"{where}:\n{text}"
        text = text.replace("`", "")  # the markdown's code spans
        assert "triton==3.3.1: Triton 3.3.1, ptxas 12.4.99 (triton-3.3.1.ptxas-12.4.99." in text, f"{where}:\n{text}"
        assert "triton==3.4.0: Triton 3.4.0, ptxas 12.8.93 (triton-3.4.0.ptxas-12.8.93." in text, f"{where}:\n{text}"


@pytest.mark.slow
def test_cli_fixes_flag_adds_the_fixes_key(tmp_path: Path, run_cli: RunCli) -> None:
    out = run_cli(
        [
            *EMBEDDING_FIXES,
            "--format",
            "json",
            "--report",
            str(tmp_path / "r.md"),
        ]
    )
    assert out.exit_code == exit_codes.OK, out.output
    data = json.loads(out.stdout[out.stdout.index("{") : out.stdout.rindex("}") + 1])
    kinds = {f["kind"]: f for f in data["fixes"]}
    assert kinds["relaxed-atomic"]["verified"] is True
    assert "## Fixes" in (tmp_path / "r.md").read_text()
    assert "fixes" in json.loads((tmp_path / "r.json").read_text())


@pytest.mark.slow
def test_cli_fixes_in_the_terminal_are_not_raw_markdown(run_cli: RunCli) -> None:
    """The table format prints the fixes in the findings' style: the markdown report's ``**kind**``,
    backticks and ``## `` heading printed as they are read as noise in a terminal."""
    out = run_cli(EMBEDDING_FIXES)
    assert out.exit_code == exit_codes.OK, out.output
    assert in_output("Fixes (verified by compiling, not timed)", out.stdout), out.stdout
    assert in_output("• relaxed-atomic (", out.stdout), out.stdout
    assert "**" not in out.stdout and "## " not in out.stdout and "`triton==" not in out.stdout, out.stdout


# ----------------------------------------------------------------------------- failures are findings


def in_output(text: str, output: str) -> bool:
    """``text`` is in the terminal output, which wraps long lines (long temporary paths in CI):
    compared without whitespace."""
    return "".join(text.split()) in "".join(output.split())


def _spec_file(tmp_path: Path, source: str, blocks: tuple[int, ...] = (64, 128)) -> Path:
    """A spec file with one kernel per BN (a small sweep, so that failures form an input range)."""
    text = "".join(
        f'[[kernel]]\nname = "tdesc[BN={bn}]"\nsource = "{source}"\n{SIGNATURE}'
        f"[kernel.constexprs]\nBM = 64\nBN = {bn}\n\n"
        for bn in blocks
    )
    path = tmp_path / "tdesc.toml"
    path.write_text(text)
    return path


def _explain(
    run_cli: RunCli, tmp_path: Path, spec: Path, *toolchains: str, extra: tuple[str, ...] = ()
) -> tuple[CliResult, dict[str, Any], str]:
    """Run `ktriage explain` (table on stdout) and return the result, the JSON report and the markdown report."""
    report = tmp_path / "report.md"
    args = ["explain", str(spec), "--report", str(report), "-j", "2"]
    for t in toolchains:
        args += ["-t", t]
    out = run_cli(args + list(extra), env={"KTRIAGE_COLUMNS": "600"})  # findings asserted as whole lines: no wrapping
    assert report.exists(), out.output
    return out, json.loads(report.with_suffix(".json").read_text()), report.read_text()


def _ids(toolchain: Any, *specs: str) -> list[str]:
    return [toolchain(s).id for s in specs]


@pytest.mark.slow
def test_reference_that_cannot_compile_falls_back_to_the_next(tmp_path: Path, toolchain: Any, run_cli: RunCli) -> None:
    """Acceptance of issue 9: 3.3.1 as reference says it cannot compile the kernel, the rest is compared
    against 3.4.0, the result is incomplete (exit 4) and nothing claims "no change"."""
    old, new, other = _ids(toolchain, "triton==3.3.1", "triton==3.4.0", "triton==3.4.0,ptxas==12.4.131")
    spec = _spec_file(tmp_path, f"{KERNELS}:tensor_descriptor_kernel")
    out, data, md = _explain(run_cli, tmp_path, spec, "triton==3.3.1", "triton==3.4.0", "triton==3.4.0,ptxas==12.4.131")
    assert out.exit_code == exit_codes.INCOMPLETE == 4, out.output
    text = out.output
    assert f"triton==3.3.1 cannot compile BN=64..128: {NO_TMA}; compared against triton==3.4.0 instead." in text, text
    assert f"error: frontend: {NO_TMA}" in text  # the failed cell: stage and one line
    assert "vs triton==3.4.0: [ptxas] registers" in text  # the changes column names the fallback
    assert "incomplete: 2 of 6 cells failed" in text
    for said in (text, md):
        assert "no resource changes" not in said.lower()
        assert "no change" not in said
    # JSON: which toolchain served as reference and why, the failures apart, complete false
    assert data["complete"] is False
    for kernel in data["kernels"]:
        assert kernel["reference"] == new
        assert kernel["reference_fallback"] == (
            f"triton==3.3.1 could not compile this kernel: frontend: {NO_TMA}; compared against triton==3.4.0 instead"
        )
        assert kernel["failures"] == [
            {
                "toolchain": old,
                "toolchain_spec": "triton==3.3.1",
                "stage": "frontend",
                "kind": "compile",
                "message": NO_TMA,
                "fix": None,
            }
        ]
        assert [(c["reference"], c["toolchain"]) for c in kernel["comparisons"]] == [(new, other)]
        assert "registers" in {c["metric"] for c in kernel["comparisons"][0]["changes"]}
    assert data["findings"] and {f["reference"] for f in data["findings"]} == {"triton==3.4.0"}
    assert [(f["toolchain"], f["range"], f["reference_fallback"]) for f in data["failures"]] == [
        ("triton==3.3.1", "BN=64..128", "triton==3.4.0")
    ]
    assert f"- **failed:** triton==3.3.1 cannot compile BN=64..128: {NO_TMA}" in md


@pytest.mark.slow
def test_a_reference_that_cannot_compile_with_nothing_else_says_nothing_is_compared(
    tmp_path: Path, toolchain: Any, run_cli: RunCli
) -> None:
    """Two toolchains and the first cannot compile: the second is the only one that did, so the failure
    line says nothing is compared (it said "compared against triton==3.4.0 instead" next to a row that
    said "not compared")."""
    _ids(toolchain, "triton==3.3.1", "triton==3.4.0")
    spec = _spec_file(tmp_path, f"{KERNELS}:tensor_descriptor_kernel")
    out, data, _md = _explain(run_cli, tmp_path, spec, "triton==3.3.1", "triton==3.4.0")
    assert out.exit_code == exit_codes.INCOMPLETE, out.output
    assert f"{NO_TMA}; only triton==3.4.0 compiled it: nothing is compared." in out.output
    assert "instead" not in out.output and "not compared: only triton==3.4.0 compiled it" in out.output


@pytest.mark.slow
def test_no_change_among_the_rest_is_not_called_no_change(tmp_path: Path, toolchain: Any, run_cli: RunCli) -> None:
    """The issue's case: the reference failed and the others agree. Neither the rows nor the findings
    may say "no change" as if every toolchain had been compared."""
    spec = _spec_file(tmp_path, f"{KERNELS}:tensor_descriptor_kernel")
    out, data, md = _explain(
        run_cli,
        tmp_path,
        spec,
        "triton==3.3.1",
        "triton==3.4.0",
        "triton==3.4.0,ptxas-options=--register-usage-level=10",
    )
    assert out.exit_code == exit_codes.INCOMPLETE, out.output
    assert data["findings"] == [] and data["complete"] is False
    line = "No resource changes among the toolchains that compiled; 2 of 6 cells failed (listed below)."
    assert line in md and in_output(line, out.output)
    assert md.count("| vs triton==3.4.0: same resources (1 failed) |") == 2
    for said in (out.output, md):
        assert "no change" not in said and "No resource changes between" not in said
    assert "triton==3.3.1 cannot compile BN=64..128" in out.output


@pytest.mark.slow
def test_allow_failures_gives_the_code_of_the_rest(tmp_path: Path, toolchain: Any, run_cli: RunCli) -> None:
    spec = _spec_file(tmp_path, f"{KERNELS}:tensor_descriptor_kernel")
    out, data, _ = _explain(
        run_cli,
        tmp_path,
        spec,
        "triton==3.3.1",
        "triton==3.4.0",
        "triton==3.4.0,ptxas==12.4.131",
        extra=("--allow-failures",),
    )
    assert out.exit_code == exit_codes.OK, out.output
    assert data["complete"] is False
    assert "triton==3.3.1 cannot compile BN=64..128" in out.output  # still listed, only the code changes
    assert "exit code 0 (--allow-failures)" in out.output


@pytest.mark.slow
def test_failing_assembler_is_incomplete_and_listed(tmp_path: Path, toolchain: Any, run_cli: RunCli) -> None:
    """issue 11: an assembler that rejects its options is a failure, not "no change" with exit 0."""
    bogus = "triton==3.4.0,ptxas-options=--bogus-flag"
    spec = _spec_file(tmp_path, f"{KERNELS}:tensor_descriptor_kernel")
    out, data, md = _explain(run_cli, tmp_path, spec, "triton==3.4.0", bogus)
    assert out.exit_code == exit_codes.INCOMPLETE, out.output
    assert data["complete"] is False and data["findings"] == []
    kernel = data["kernels"][0]
    assert kernel["reference"] == toolchain("triton==3.4.0").id and kernel["reference_fallback"] is None
    (failure,) = kernel["failures"]
    assert failure["stage"] == "assemble" and "Unknown option '-bogus-flag'" in failure["message"]
    assert "\n" not in failure["message"] and failure["fix"]
    (summary,) = [f["summary"] for f in data["failures"]]
    assert summary.startswith(f"{bogus} cannot assemble BN=64..128: ptxas ")
    assert "No resource changes among the toolchains that compiled; 2 of 4 cells failed (listed below)." in md
    assert "No resource changes between" not in md and "| no change |" not in md
    assert "not compared: only triton==3.4.0 compiled it" in out.output
    assert in_output(f"{bogus} cannot assemble BN=64..128", out.output)


@pytest.mark.slow
def test_import_failure_is_one_line_with_the_fix(tmp_path: Path, toolchain: Any, run_cli: RunCli) -> None:
    """A kernel whose module fails to import in the compile worker, and whose own source fails too (the
    module-level value it reads needs a file the worker lacks): one line, naming the module and the
    exception, plus a fix (the full text stays in the JSON results). A missing package alone no longer
    fails (issue 23: the worker stands in for it and the kernel compiles from its own source)."""
    kernel = tmp_path / "needs_dep.py"
    kernel.write_text(
        "import triton\nimport triton.language as tl\nimport ktriage_missing_dep  # noqa: F401\n"
        "SCALE = tl.constexpr(float(open('/nonexistent/ktriage-scale').read()))\n\n"
        "@triton.jit\ndef k(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):\n"
        "    tl.store(x_ptr + tl.arange(0, BN), tl.zeros([BN], tl.float32) + SCALE)\n"
    )
    spec = _spec_file(tmp_path, f"{kernel}:k", blocks=(64,))
    out, data, _ = _explain(run_cli, tmp_path, spec, "triton==3.4.0")
    assert out.exit_code == exit_codes.INCOMPLETE, out.output
    (failure,) = data["kernels"][0]["failures"]
    assert failure["kind"] == "import"
    assert failure["message"].startswith(f"importing {kernel} failed: FileNotFoundError: ")
    assert "`source`" in failure["fix"] and "so does line 4 `SCALE = " in failure["fix"]
    full = next(iter(data["kernels"][0]["results"].values()))["error"]  # the JSON keeps the whole message
    assert "compiling k from its own source failed too: line 4 `SCALE = " in full
    (summary,) = [f["summary"] for f in data["failures"]]
    assert summary.startswith(f"triton==3.4.0 cannot compile BN=64: importing {kernel} failed: FileNotFoundError")
    assert " — fix: " in summary and "\n" not in summary and summary.endswith("; no toolchain compiled it.")
    # the terminal wraps long lines (a long temporary path): compare without the wrapping's whitespace
    assert in_output(summary, out.output)
    assert data["kernels"][0]["reference"] is None
    assert data["kernels"][0]["reference_fallback"].endswith("; no toolchain compiled it, nothing is compared")
    assert "not compared: no toolchain compiled it" in out.output


# ----------------------------------------------------------------------------- toolchains without a finding

SCALED_ROWS = Path(__file__).resolve().parents[2] / "examples" / "specs" / "scaled_rows.toml"


@pytest.mark.slow
def test_a_toolchain_without_a_finding_is_still_answered(tmp_path: Path, run_cli: RunCli) -> None:
    """The example spec: Triton 3.4.0's PTX differs from 3.3.1's but ptxas assembles the same instruction counts;
    3.6.0 moves a few address instructions. Neither makes a finding, and before this both vanished from the
    report behind "No resource changes": the user who asked "does 3.6.0 change anything?" got no answer."""
    report = tmp_path / "r.md"
    argv = ["explain", str(SCALED_ROWS), "-t", "triton==3.3.1", "-t", "triton==3.4.0", "-t", "triton==3.6.0"]
    out = run_cli([*argv, "-o", str(report)])
    assert out.exit_code == exit_codes.OK, out.output
    same = (
        "triton==3.4.0 vs triton==3.3.1: the same registers, occupancy and SASS instruction counts on every input "
        "(only the PTX and the source lines of some instructions differ): no change predicted."
    )
    moved = "triton==3.6.0 vs triton==3.3.1, M=N=4096,bf16: below what a finding reports (SASS "
    neutral = "change predicted neutral (+0.0% ["
    md = report.read_text()
    assert "- No resource changes between the toolchains.\n- " + same in md
    assert moved in md and neutral in md.split(moved)[1].splitlines()[0]
    html = tmp_path / "r.html"
    assert run_cli([*argv, "-o", str(html)]).exit_code == exit_codes.OK
    page = html.read_text()
    assert '<p class="ok">No resource changes between the toolchains.</p>' in page
    assert page.count('<li class="finding change">') == 2 and "no change predicted." in page


@pytest.mark.slow
def test_every_line_of_a_report_of_several_kernels_names_the_kernel(tmp_path: Path, run_cli: RunCli) -> None:
    """A spec file of two kernels (the example's scaled_rows, and one whose module cannot be imported): the
    failures, the line of a toolchain without a finding and the per-input tables name each input inside its
    kernel's name, as the bullets do; before, they said ``BN=64`` and ``M=N=4096,bf16`` alone, which in a
    recorded workload (inputs named by their launch's arguments) do not say which kernel failed."""
    broken = tmp_path / "broken.py"
    broken.write_text(
        "import triton\nimport triton.language as tl\n"
        "SCALE = tl.constexpr(float(open('/nonexistent/ktriage-scale').read()))\n\n"
        "@triton.jit\ndef k(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):\n"
        "    tl.store(x_ptr + tl.arange(0, BN), tl.zeros([BN], tl.float32) + SCALE)\n"
    )
    example = SCALED_ROWS.read_text().replace("[kernel]\n", "[[kernel]]\n", 1)
    example = example.replace('source = "scaled_rows.py:', f'source = "{SCALED_ROWS.parent / "scaled_rows.py"}:')
    spec = tmp_path / "two.toml"
    spec.write_text(
        example
        + f'\n[[kernel]]\nname = "broken[BN=64]"\nsource = "{broken}:k"\n{SIGNATURE}'
        + "[kernel.constexprs]\nBM = 64\nBN = 64\n"
    )
    out, data, md = _explain(run_cli, tmp_path, spec, "triton==3.3.1", "triton==3.6.0")
    assert out.exit_code == exit_codes.INCOMPLETE, out.output
    moved = "triton==3.6.0 vs triton==3.3.1, scaled_rows[M=N=4096,bf16]: below what a finding reports (SASS "
    assert moved in md and in_output(moved, out.output)
    failed = "triton==3.3.1 cannot compile broken[BN=64]: importing "
    assert failed in md and in_output(failed, out.output)
    assert [f["kernel"] for f in data["failures"]] == ["broken", "broken"]
    assert "| scaled_rows[M=N=4096,bf16] | " in md and "| broken[BN=64] | " in md
    assert in_output("│ scaled_rows[M=N=4096,bf16] │", out.output)


@pytest.mark.slow
def test_a_kernel_that_does_not_load_leaves_the_others_explained(tmp_path: Path, run_cli: RunCli) -> None:
    """A spec file of two kernels, the second with a typo in its function's name: the first is explained
    as usual, the second is a failed kernel named with the problem and the fix (table, findings, markdown,
    JSON) and the exit is INCOMPLETE. Before, the typo refused the whole file (exit 2, no result at all)."""
    example = SCALED_ROWS.read_text().replace("[kernel]\n", "[[kernel]]\n", 1)
    example = example.replace('source = "scaled_rows.py:', f'source = "{SCALED_ROWS.parent / "scaled_rows.py"}:')
    table = example[example.index("[[kernel]]") :]
    typo = table.replace('name = "scaled_rows[M=N=4096,bf16]"', 'name = "typo"').replace(
        ":scaled_rows_kernel", ":scaled_row_kernel"
    )
    spec = tmp_path / "two.toml"
    spec.write_text(example + "\n" + typo)
    out, data, md = _explain(run_cli, tmp_path, spec, "triton==3.3.1", "triton==3.4.0")
    assert out.exit_code == exit_codes.INCOMPLETE, out.output
    good, bad = data["kernels"]
    assert good["name"] == "scaled_rows[M=N=4096,bf16]" and not good["failures"]
    assert all("registers" in r for r in good["results"].values())
    problem = f"{spec}: [[kernel]] #2: {SCALED_ROWS.parent / 'scaled_rows.py'} defines no function 'scaled_row_kernel'"
    assert bad["name"] == "typo" and [f["stage"] for f in bad["failures"]] == ["spec", "spec"]
    assert {(f["message"], f["fix"]) for f in data["failures"]} == {(problem, "did you mean scaled_rows_kernel?")}
    assert data["complete"] is False
    failed = f"typo[typo]: not loaded: {problem} — fix: did you mean scaled_rows_kernel?"
    assert failed in md and in_output(failed, out.output)
    assert in_output("│ scaled_rows[M=N=4096,bf16] │", out.output)
    allowed = run_cli(["explain", str(spec), "-t", "triton==3.3.1", "-t", "triton==3.4.0", "--allow-failures"])
    assert allowed.exit_code == exit_codes.OK, allowed.output


def _typo_first(tmp_path: Path) -> tuple[Path, str]:
    """The scaled_rows example as a file of two kernels, the FIRST ("typo") with a typo in its function's
    name, and the problem its loader names."""
    example = SCALED_ROWS.read_text().replace("[kernel]\n", "[[kernel]]\n", 1)
    example = example.replace('source = "scaled_rows.py:', f'source = "{SCALED_ROWS.parent / "scaled_rows.py"}:')
    table = example[example.index("[[kernel]]") :]
    typo = table.replace('name = "scaled_rows[M=N=4096,bf16]"', 'name = "typo"').replace(
        ":scaled_rows_kernel", ":scaled_row_kernel"
    )
    spec = tmp_path / "typo_first.toml"
    spec.write_text(typo + "\n" + example)
    return (
        spec,
        f"{spec}: [[kernel]] #1: {SCALED_ROWS.parent / 'scaled_rows.py'} defines no function 'scaled_row_kernel'",
    )


@pytest.mark.slow
def test_a_kernel_that_does_not_load_keeps_its_place_and_its_error_is_said_once(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """A bad kernel first in its file, three toolchains: the table, markdown, HTML and JSON list it first,
    as the file does, and every Failures section says its error once, not as a toolchain's failure
    ("typo[typo]: not loaded: ... — fix: ..."). Before, it was listed after the good kernel and the
    Failures said "<toolchain> cannot compile typo[typo]: ..." three times, one line per toolchain. Each
    of its cells still says the error (JSON kernels[].failures: one per toolchain, as its results)."""
    spec, problem = _typo_first(tmp_path)
    toolchains = ("triton==3.3.1", "triton==3.4.0", "triton==3.4.0,ptxas==12.4.131")
    html = tmp_path / "report.html"
    out, data, md = _explain(run_cli, tmp_path, spec, *toolchains, extra=("-o", str(html)))
    assert out.exit_code == exit_codes.INCOMPLETE, out.output
    assert [k["name"] for k in data["kernels"]] == ["typo", "scaled_rows[M=N=4096,bf16]"]
    bad = data["kernels"][0]
    assert [f["stage"] for f in bad["failures"]] == ["spec"] * 3 and bad["reference"] is None
    said = f"typo[typo]: not loaded: {problem} — fix: did you mean scaled_rows_kernel?"
    (failure,) = data["failures"]
    assert failure["toolchain"] is None and failure["stage"] == "spec" and failure["summary"] == said
    assert (failure["message"], failure["fix"]) == (problem, "did you mean scaled_rows_kernel?")
    assert "cannot compile typo" not in md + out.output + html.read_text()
    assert md.count(said) == 1 and "".join(out.output.split()).count("".join(said.split())) == 1
    failures = md[md.index("## Failures") : md.index("## Per input")]
    assert failures.count("defines no function") == 1 and "- typo: not loaded: " in failures
    rows = md[md.index("## Per input") :]
    assert rows.index("| typo[typo] |") < rows.index("| scaled_rows[M=N=4096,bf16] |")
    assert out.output.index("│ typo[typo]") < out.output.index("│ scaled_rows[M=N=4096,bf16] │")
    assert unescape(html.read_text()).count(said) == 1


def test_one_toolchain_is_not_reported_as_no_change(tmp_path: Path, run_cli: RunCli) -> None:
    """One -t has nothing to compare against: its resources are shown, and the report says how to compare
    instead of "No resource changes between the toolchains", which reads as an answer."""
    report = tmp_path / "r.md"
    out = run_cli(
        ["explain", str(SCALED_ROWS), "-t", "triton==3.4.0", "-o", str(report)], env={"KTRIAGE_COLUMNS": "600"}
    )
    assert out.exit_code == exit_codes.OK, out.output
    for text in (out.output, report.read_text()):
        assert "One toolchain: nothing to compare" in text and "-t triton==3.3.1 -t triton==3.4.0" in text
        assert "No resource changes" not in text
    assert "nothing to compare" in out.output.split("Findings")[0]  # the table's changes column
