"""Per-line stalls (ktriage/profile/source.py): ncu's source page per SASS instruction, put on source
lines with the profiled cubin's line table, diffed between toolchains next to the compile-side line
diff, in the profile document and its markdown.

No GPU here: the source pages are synthetic (written by these tests in the layout ``ncu --import R
--csv --page source --print-source sass`` prints, as fakes of ncu's output), the cubins are real
(Liger layer_norm bwd N=4608 compiled by Triton 3.3.1 and 3.4.0) and so is nvdisasm. The H200 run of
the real thing: benchmarks/profile/lines_h200.sh.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from ktriage.profile.source import parse_source_csv

FAKE_PAGE = """"Kernel Name","_layer_norm_backward_kernel"
"# Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)","smsp__pcsamp_warps_issue_stalled_long_scoreboard","smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued","smsp__pcsamp_warps_issue_stalled_wait"
"0x7f3a00001000","LDC R1, c[0x0][0x28]","3","1","0","0","3"
"0x7f3a00001010","LDL.LU R4, [R1+0x10]","1,204","17","1,200","5","4"
"0x7f3a00001020","EXIT","0","0","0","0","0"
"""


def test_a_fake_source_page_parses_into_offsets_and_stall_reasons() -> None:
    (block,) = parse_source_csv("==PROF== Connected\n" + FAKE_PAGE)
    assert [r.offset for r in block] == [0x0, 0x10, 0x20]  # offsets from the function's first instruction
    ldl = block[1]
    assert ldl.source.startswith("LDL.LU") and ldl.samples == 1204
    assert ldl.stalls == {"long_scoreboard": 1200, "wait": 4}  # the *_not_issued column is not a reason
    # another ncu's spelling (stall_<reason>, decimal addresses), two launches
    other = "\n".join(
        [
            '"Address","Source","stall_long_sb","stall_math"',
            '"4096","FFMA R1, R2, R3, R4","5","1"',
            '"Address","Source","stall_long_sb","stall_math"',
            '"8192","LDL R1, [R1]","7","0"',
        ]
    )
    blocks = parse_source_csv(other)
    assert len(blocks) == 2 and blocks[0][0].samples == 6 and blocks[1][0].stalls == {"long_sb": 7}
    # an older ncu: a kernel-name banner, samples over "All Cycles", a leading "#" column, no reason columns
    older = "\n".join(
        [
            '"Kernel Name","k(float *)",',
            '"#","Address","Source","Warp Stall Sampling (All Cycles)",'
            '"Warp Stall Sampling (Not-issued Cycles)","Instructions Executed"',
            '"1","0x00007f00a0000100","MOV R1, c[0x0][0x28]","2","0","128"',
            '"2","0x00007f00a0000110","LDG.E R2, desc[UR4][R2.64]","40","38","128"',
        ]
    )
    (block,) = parse_source_csv(older)
    assert [(r.offset, r.samples, r.stalls) for r in block] == [(0, 2, {}), (0x10, 40, {})]


def _fake_page(cubin: Path, kernel: str, nvdisasm: Path) -> str:
    """A source page for a real cubin: every instruction at a load address, LDL/STL sampled once as
    long_scoreboard, everything else once as 'selected'."""
    import subprocess

    from ktriage.analyze.sass import parse_sass

    listing = subprocess.run([str(nvdisasm), "-c", str(cubin)], capture_output=True, text=True, check=True).stdout
    fn = parse_sass(listing)[kernel]
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL)
    w.writerow(
        [
            "# Address",
            "Source",
            "Warp Stall Sampling (All Samples)",
            "smsp__pcsamp_warps_issue_stalled_long_scoreboard",
            "smsp__pcsamp_warps_issue_stalled_selected",
        ]
    )
    base = 0x7F0000000000
    for inst in fn.instructions:
        spill = inst.base_opcode in ("LDL", "STL")
        w.writerow([hex(base + inst.address), inst.text, "1", "1" if spill else "0", "0" if spill else "1"])
    return out.getvalue()


@pytest.mark.slow
def test_per_line_stalls_of_real_cubins_land_on_their_lines_next_to_the_compile_side(
    toolchain, shared_compiler
) -> None:
    from ktriage.catalog import expand_op
    from ktriage.explain.engine import Explainer
    from ktriage.profile.diff import document, to_markdown
    from ktriage.profile.ncu import Launch
    from ktriage.profile.source import toolchain_lines

    specs = expand_op("liger.layer_norm", mode="bwd", target="sm_90", inputs=["7"])
    tcs = [toolchain("triton==3.3.1"), toolchain("triton==3.4.0")]
    result = Explainer(shared_compiler).run(specs, tcs)
    comparison = result.specs[0].comparisons[0]
    side, profiles = {}, []
    for r in (comparison.ref, comparison.new):
        art = r.artifact
        page = _fake_page(art.cubin.cubin_path, art.kernel_name, r.toolchain.nvdisasm)
        entries = toolchain_lines(page, [art.kernel_name], lambda _k, a=art: a.cubin.cubin_path, r.toolchain.nvdisasm)
        assert entries[0]["error"] is None and entries[0]["unmapped_samples"] == 0
        # the samples of a line are its instructions; its long_scoreboard samples its LDL/STL (explain's line map)
        per_line = entries[0]["lines"]
        mine = {(s.file, s.line): s for s in r.resources.source_lines if not s.file.startswith("triton/")}
        for (file, line), item in per_line.items():
            if (file, line) in mine:
                assert item.samples == mine[(file, line)].instructions
                assert item.stalls.get("long_scoreboard", 0) == mine[(file, line)].local
        side[r.toolchain.id] = entries
        profiles.append(
            {
                "toolchain": r.toolchain.id,
                "launches": [Launch(0, art.kernel_name, "", "", {})],
                "error": None,
                "files": {},
                "command": [],
            }
        )
    ref_id, new_id = comparison.ref.toolchain.id, comparison.new.toolchain.id
    doc = document(
        op="layer_norm",
        mode="bwd",
        input_id=7,
        backend="liger_layer_norm",
        reference=ref_id,
        profiles=profiles,
        compile_side={},
        ncu_version="fake",
        lines_side=side,
    )
    lines = doc["diffs"][0]["lines"]
    # expected from explain's line maps: a line's share of the samples is its share of the instructions,
    # its long_scoreboard share its share of LDL/STL
    from ktriage.analyze.lines import pair_lines

    a_res, b_res = comparison.ref.resources, comparison.new.resources
    total_a, total_b = a_res.sass_instructions, b_res.sass_instructions

    def points(pair, count) -> float:
        a, b = pair
        return (100.0 * (getattr(b, count) if b else 0) / total_b) - (100.0 * (getattr(a, count) if a else 0) / total_a)

    pairs = pair_lines(a_res.source_lines, b_res.source_lines)
    want_top = max(pairs, key=lambda p: abs(points(p, "instructions")))
    shown = want_top[1] or want_top[0]
    top = lines["stalls"][0]
    assert (top["file"], top["line"]) == (shown.file, shown.line)
    assert top["points"] == pytest.approx(points(want_top, "instructions"))
    want_stall = max(pairs, key=lambda p: points(p, "local"))
    stall_line = want_stall[1] or want_stall[0]
    sentence = lines["finding"]
    assert (
        f"stall 'long_scoreboard' {points(want_stall, 'local'):+.0f} points at {stall_line.file}:{stall_line.line}"
        in sentence
    )
    local = (want_stall[1].local if want_stall[1] else 0) - (want_stall[0].local if want_stall[0] else 0)
    assert local > 200 and f"where the compiler changed {local:+d} LDL/STL" in sentence  # that line's compile side
    assert lines["compile"][0]["line"] == 126 and lines["compile"][0]["delta"]["local_loads"] == 193
    assert sentence in doc["findings"]
    assert doc["toolchains"][new_id]["source_lines"][0]["lines"][0]["samples"] > 0
    md = to_markdown(doc)
    assert "## Per line: _layer_norm_backward_kernel" in md and "| liger_kernel/ops/layer_norm.py:126 |" in md
    assert "LDL/STL +283" in md


def test_without_a_source_page_or_nvdisasm_the_reason_is_said(tmp_path: Path) -> None:
    from ktriage.profile.source import toolchain_lines

    assert toolchain_lines(None, ["k"], lambda _k: None, None)[0]["error"].startswith("no ncu source page")
    (entry,) = toolchain_lines(FAKE_PAGE, ["_layer_norm_backward_kernel"], lambda _k: tmp_path / "k.cubin", None)
    assert "no nvdisasm on this host" in entry["error"]


def _listing(triton: str, library_line: int) -> str:
    """A two-instruction nvdisasm listing (a fake of its ``-gi`` layout) compiled on another machine: a line
    of Triton's ``standard.py`` (its number moves between releases) inlined into the kernel's line 12."""
    env = f"/build-host/envs/triton-{triton}/lib/python3.11/site-packages/triton/language/standard.py"
    kernel = "/build-host/snapshots/0123456789abcdef0123/kernel.py"
    return "\n".join(
        [
            '\t.section\t.text.k,"ax",@progbits',
            f'        //## File "{env}", line {library_line} inlined at "{kernel}", line 12',
            f'        //## File "{kernel}", line 12',
            "        /*0000*/                   FADD R3, R3, R4 ;",
            f'        //## File "{kernel}", line 14',
            "        /*0010*/                   LDG.E R2, desc[UR4][R2.64] ;",
        ]
    )


def test_a_bundles_carried_source_text_names_and_matches_lines_the_gpu_host_cannot_read() -> None:
    """The GPU host profiles a bundle without the recorded program's files or the compiling Triton's: the
    lines' text comes from the bundle (``BundleArtifact.source_text``), so a line of Triton's library is
    matched by its text across releases (3.3.1's line 163 is 3.6.0's line 170). Without it the per-line diff
    showed one line twice, -24 points at one number and +21 at the other (the H200's Liger cross-entropy)."""
    from ktriage.analyze.lines import line_map_of_listing
    from ktriage.analyze.sass import parse_sass
    from ktriage.profile.source import SassSamples, diff_line_samples, line_samples

    code = "return core.reduce(input, axis, _sum_combine, keep_dims=keep_dims)"
    sides = {}
    for triton, number, samples in (("3.6.0", 170, 30.0), ("3.3.1", 163, 10.0)):
        listing = _listing(triton, number)
        fn = parse_sass(listing)["k"]
        rows = [SassSamples(0, "FADD", samples, {"long_scoreboard": samples}), SassSamples(16, "LDG", 5.0)]
        library = next(
            li.loc.path for li in line_map_of_listing(listing, fn).instructions if li.loc and li.loc.line > 100
        )
        carried = {
            library: {number: code},
            "/build-host/snapshots/0123456789abcdef0123/kernel.py": {14: "x = tl.load(p)"},
        }
        with_text, _ = line_samples(rows, line_map_of_listing(listing, fn), carried)
        without, _ = line_samples(rows, line_map_of_listing(listing, fn))
        assert {s.text for s in with_text.values()} == {code, "x = tl.load(p)"}
        assert {s.text for s in without.values()} == {""}  # not readable here, nothing carried
        sides[triton] = (with_text, without)
    matched = diff_line_samples(sides["3.6.0"][0], sides["3.3.1"][0])
    library_rows = [r for r in matched if r["file"] == "triton/language/standard.py"]
    assert len(library_rows) == 1 and library_rows[0]["text"] == code  # one line, compared with itself
    unmatched = diff_line_samples(sides["3.6.0"][1], sides["3.3.1"][1])
    assert len([r for r in unmatched if r["file"] == "triton/language/standard.py"]) == 2


def _fake_line_doc(snippet: str) -> dict:
    """A profile document as ``diff.document`` writes it, with one launch pair's per-line diff (a fake: the
    rows the JSON keeps, no GPU), whose hottest line quotes ``snippet``."""
    from ktriage.profile.source import line_sentence

    stalls = [
        {
            "file": "liger_kernel/ops/layer_norm.py",
            "line": 126,
            "text": snippet,
            "points": 41.0,
            "stall_points": {"long_scoreboard": 41.0},
            "ref": None,
            "new": None,
        }
    ]
    compile_rows = [{"file": "liger_kernel/ops/layer_norm.py", "line": 126, "delta": {"local_loads": 193}}]
    finding = line_sentence("_layer_norm_backward_kernel", "triton==3.4.0", "triton==3.3.1", stalls, compile_rows)
    assert finding is not None
    lines = {"stalls": stalls, "compile": compile_rows, "finding": finding}
    diff = {"kernel": "_layer_norm_backward_kernel", "launch": 0, "toolchain": "triton==3.4.0"}
    diff |= {"reference": "triton==3.3.1", "deltas": {}, "finding": "counters", "lines": lines}
    return {
        "op": "layer_norm",
        "mode": "bwd",
        "input_id": 7,
        "backend": "liger_layer_norm",
        "reference": "triton==3.3.1",
        "ncu_version": "fake",
        "notes": [],
        "findings": ["counters", finding],
        "toolchains": {},
        "diffs": [diff],
    }


@pytest.mark.parametrize("snippet", ["dx = (w * x_hat) - c1", "s = '`' + name"])
def test_the_per_line_finding_quotes_its_source_line_as_code_in_markdown(snippet: str) -> None:
    """The markdown's per-line finding (Findings and the Per line section) shows the quoted source line
    as a code span (``mdsafe.md_code_span``, as explain's line evidence does): written with plain backticks,
    a line holding one closed the quote early and its tail read as text (CommonMark, as GitHub renders)."""
    from html import unescape

    from markdown_it import MarkdownIt

    from ktriage.profile.diff import to_markdown

    html = unescape(MarkdownIt("commonmark").render(to_markdown(_fake_line_doc(snippet))))  # type: ignore[arg-type]
    assert html.count(f"(<code>{snippet}</code>)") == 2, html
    assert "stall 'long_scoreboard' +41 points at liger_kernel/ops/layer_norm.py:126 (" in html
