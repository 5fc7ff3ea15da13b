"""Line maps and line diffs (ktriage/analyze/lines.py, explain/line_evidence.py).

The acceptance tests compile real kernels with real Triton wheels and ptxas and check ktriage's
per-line counts against an independent read of each cubin's line table: this file runs ``nvdisasm -g``
itself (another option set than ktriage's ``-c -ndf -gi``) and parses its output with its own few
regular expressions, never through ktriage's parser. The first tests are pure logic on a synthetic
listing written here (named as such).
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from ktriage.analyze.lines import (
    LineStats,
    compress_ranges,
    diff_lines,
    display_path,
    line_stats,
    located_instructions,
    parse_line_spec,
    parse_line_table,
)
from ktriage.analyze.sass import parse_sass

REPO = Path(__file__).resolve().parents[2]

# A synthetic nvdisasm -gi listing (the form nvdisasm 12.x prints; fake addresses and paths): a helper
# inlined into line 122, a PTX-line annotation to ignore, a frame of its own for the caller.
SYNTHETIC = """
\t.section\t.text.kern,"ax",@progbits
kern:
.text.kern:
\t//## File "/h/packages/liger-kernel-0.5.10/liger_kernel/ops/layer_norm.py", line 100
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   STL [R1+0x8], RZ ;
\t//## File "/env/lib/python3.11/site-packages/triton/language/standard.py", line 260 inlined at "/h/packages/liger-kernel-0.5.10/liger_kernel/ops/layer_norm.py", line 122
\t//## File "/h/packages/liger-kernel-0.5.10/liger_kernel/ops/layer_norm.py", line 122
\t//## File ".nv_debug_ptx_txt", line 19
        /*0020*/                   FADD R2, R2, R3 ;
        /*0030*/                   LDL R4, [R1+0x8] ;
\t//## File "/h/packages/liger-kernel-0.5.10/liger_kernel/ops/layer_norm.py", line 122
        /*0040*/                   LDS.128 R8, [R0] ;
        /*0050*/                   EXIT ;
.L_x_0:
        /*0060*/                   BRA `(.L_x_0) ;
        /*0070*/                   NOP ;
"""


def test_a_synthetic_listing_maps_each_instruction_and_its_inlining_chain() -> None:
    table = parse_line_table(SYNTHETIC)["kern"]
    assert table[0x0].line == 100 and table[0x10].line == 100
    inlined = table[0x20]
    assert inlined.path.endswith("triton/language/standard.py") and inlined.line == 260
    assert [(display_path(p), n) for p, n in inlined.inlined_at] == [("liger_kernel/ops/layer_norm.py", 122)]
    assert table[0x30] == inlined  # the location holds until the next block of comments
    assert table[0x40].line == 122 and table[0x40].inlined_at == ()
    fn = parse_sass(SYNTHETIC)["kern"]  # padding (the self-branch, the NOP) is not counted
    stats = {
        (s.file, s.line, s.inlined_at): s
        for s in line_stats(located_instructions(fn, table), frozenset({0x20, 0x30}), read_source=False)
    }
    assert sum(s.instructions for s in stats.values()) == fn.instruction_count == 6
    helper = stats[("triton/language/standard.py", 260, ("liger_kernel/ops/layer_norm.py:122",))]
    assert (helper.instructions, helper.local_loads, helper.loop_instructions, helper.loop_local) == (2, 1, 2, 1)
    line122 = stats[("liger_kernel/ops/layer_norm.py", 122, ())]
    assert line122.shared_mem == 1 and line122.opcodes == {"LDS.128": 1} and line122.loop_instructions == 0
    assert stats[("liger_kernel/ops/layer_norm.py", 100, ())].local_stores == 1
    # a cuobjdump -sass listing has no line table: no lines, never a guess
    assert parse_line_table("\tFunction : kern\n        /*0000*/  EXIT ;\n") == {"kern": {}}


def test_cached_line_stats_name_their_files_for_the_directory_that_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's kernel file is named relative to the working directory; the stats are cached next to the
    cubin and read by later runs from other directories. Read back from another directory, they name the
    file as compiled, as the other cubin of the comparison does: the names of the run that cached them
    would name the same file two ways, and the line diff would match none of its lines."""
    kernel = tmp_path / "proj" / "tests" / "k.py"
    listing = SYNTHETIC.replace("/h/packages/liger-kernel-0.5.10/liger_kernel/ops/layer_norm.py", str(kernel))
    table = parse_line_table(listing)["kern"]
    fn = parse_sass(listing)["kern"]
    kernel.parent.mkdir(parents=True)
    (tmp_path / "other").mkdir()
    monkeypatch.chdir(tmp_path / "proj")  # the run that analyzed the cubin and cached its lines
    cached = [s.to_json() for s in line_stats(located_instructions(fn, table), read_source=False)]
    assert {s["file"] for s in cached} == {"tests/k.py", "triton/language/standard.py"}
    monkeypatch.chdir(tmp_path / "other")  # a later run, elsewhere
    read = [LineStats.from_json(s) for s in cached]
    assert {s.file for s in read} == {str(kernel), "triton/language/standard.py"}
    assert {c for s in read for c in s.inlined_at} == {f"{kernel}:122"}
    assert read == list(line_stats(located_instructions(fn, table), read_source=False))  # as analyzed here


def test_lines_diff_by_position_and_library_lines_by_text() -> None:
    from ktriage.analyze.lines import LineStats

    ref = [
        LineStats("k.py", 10, text="a = b", instructions=4, local_loads=0),
        LineStats("triton/language/standard.py", 260, text="return a + b", instructions=3),
    ]
    new = [
        LineStats("k.py", 10, text="a = b", instructions=9, local_loads=3, loop_local=3),
        LineStats("triton/language/standard.py", 262, text="return a + b", instructions=3),  # moved, unchanged
        LineStats("k.py", 11, text="c = d", instructions=1, opcodes={"LDSM.16.M88": 1}, shared_mem=1),
    ]
    moved = diff_lines(ref, new)
    assert [(d.file, d.line) for d in moved] == [("k.py", 10), ("k.py", 11)]  # highest impact first
    assert (
        moved[0].delta("local_loads") == 3
        and moved[1].ref is None
        and moved[1].opcode_delta("shared") == [("LDSM.16.M88", 1)]
    )


def test_line_specs_and_ranges() -> None:
    assert parse_line_spec("layer_norm.py:145-152") == ("layer_norm.py", 145, 152)
    assert parse_line_spec("a/b.py:7") == ("a/b.py", 7, 7)
    for bad in ("layer_norm.py", "x.py:abc", "x.py:9-3", ":4", "x.py:0"):
        with pytest.raises(ValueError):
            parse_line_spec(bad)
    assert compress_ranges([126, 122, 123, 129, 130, 131]) == "122-123, 126, 129-131"
    assert (
        display_path("/h/snapshots/" + "ab" * 32 + "/torch/_inductor/runtime/triton_helpers.py")
        == "torch/_inductor/runtime/triton_helpers.py"
    )


# ------------------------------------------------------------------------ the independent read of a cubin
_IND_LOC = re.compile(r'^\s*//## File "([^"]+)", line (\d+)')
_IND_INST = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Z0-9_]+)*)")
_IND_SECTION = re.compile(r"^\s*\.section\s+\.text\.(\S+?),")
SHARED = {"LDS", "STS", "LDSM", "STSM"}


def _key(path: str, line: int) -> tuple[str, object]:
    """Lines of Triton's own library are known by their text (their numbers move between releases)."""
    if "/triton/language/" in path:
        return ("triton/language/" + path.rsplit("/", 1)[1], Path(path).read_text().splitlines()[line - 1].strip())
    return (path.rsplit("/", 1)[1], line)


def independent_read(nvdisasm: Path, cubin: Path, kernel: str) -> dict[tuple[str, object], Counter[str]]:
    """Per source line of ``kernel``: LDL, STL and full shared-memory opcodes, from ``nvdisasm -g``."""
    text = subprocess.run([str(nvdisasm), "-g", str(cubin)], capture_output=True, text=True, check=True).stdout
    out: dict[tuple[str, object], Counter[str]] = {}
    inside, here = False, None
    for raw in text.splitlines():
        if m := _IND_SECTION.match(raw):
            inside, here = m.group(1) == kernel, None
        elif inside and (m := _IND_LOC.match(raw)):
            if here is None or not here[2]:
                here = (m.group(1), int(m.group(2)), True)  # the first frame of a block of comments
        elif inside and (m := _IND_INST.match(raw)):
            if here is not None:
                here = (here[0], here[1], False)
                base = m.group(1)
                if base in ("LDL", "STL") or base in SHARED:
                    out.setdefault(_key(here[0], here[1]), Counter())[
                        base if base in ("LDL", "STL") else base + m.group(2)
                    ] += 1
    return out


def _moved(
    ref: dict[tuple[str, object], Counter[str]], new: dict[tuple[str, object], Counter[str]], keep: set[str] | None
) -> dict[tuple[str, object], dict[str, int]]:
    out = {}
    for key in set(ref) | set(new):
        a, b = ref.get(key, Counter()), new.get(key, Counter())
        delta = {op: b[op] - a[op] for op in set(a) | set(b) if b[op] != a[op] and (keep is None or op in keep)}
        if delta:
            out[key] = delta
    return out


def _ktriage_key(file: str, line: int, text: str) -> tuple[str, object]:
    name = file.rsplit("/", 1)[-1]
    return ("triton/language/" + name, text) if file.startswith("triton/language/") else (name, line)


@pytest.mark.slow
def test_layer_norm_bwd_names_the_lines_that_carry_the_new_spills(toolchain, shared_compiler) -> None:
    """Liger 0.5.10 layer_norm bwd N=4608, Triton 3.3.1 -> 3.4.0 (LDL 111 -> 940, STL 158 -> 808): the
    comparison's line diff has, per source line, exactly the LDL/STL deltas an independent read of
    both cubins' line tables gives; the report names the line with the largest one."""
    from ktriage.catalog import expand_op
    from ktriage.explain.engine import Explainer
    from ktriage.explain.findings import collect_findings
    from ktriage.report.explain import to_json, to_markdown

    specs = expand_op("liger.layer_norm", mode="bwd", target="sm_90", inputs=["7"])
    tcs = [toolchain("triton==3.3.1"), toolchain("triton==3.4.0")]
    result = Explainer(shared_compiler).run(specs, tcs)
    comparison = result.specs[0].comparisons[0]
    reads = [
        independent_read(r.toolchain.nvdisasm, r.artifact.cubin.cubin_path, r.artifact.kernel_name)
        for r in (comparison.ref, comparison.new)
    ]
    want = {k: sum(d.values()) for k, d in _moved(*reads, keep={"LDL", "STL"}).items()}
    got = {
        _ktriage_key(d.file, d.line, d.text): d.delta("local_loads") + d.delta("local_stores")
        for d in comparison.lines
        if d.delta("local_loads") + d.delta("local_stores")
    }
    assert got == want
    assert sum(want.values()) == (940 - 111) + (808 - 158)  # every added LDL/STL sits at a line
    top = max(want, key=lambda k: abs(want[k]))
    assert top == ("layer_norm.py", 126)  # dx = (wdy - (x_hat * c1 + c2)) * rstd
    # the finding names it, with its delta, under its bullet (terminal and markdown share the text)
    md = to_markdown(result, collect_findings(result))
    evidence = [line for line in md.splitlines() if line.startswith("  - at local memory")]
    assert len(evidence) == 1 and "liger_kernel/ops/layer_norm.py:126 (" in evidence[0]
    named, file = [], ""
    # each line as `file:line (<code span>)`: the span's fence is as many backticks as it needs (mdsafe.md_code_span)
    for m in re.finditer(r"([\w./]+\.py)?:(\d+) \((`+) ?(.+?) ?\3\)", evidence[0]):
        file = m.group(1) or file
        named.append(_ktriage_key(file, int(m.group(2)), m.group(4)))
    assert len(named) == 4 and all(k in want for k in named)  # each named line carries added LDL/STL
    # JSON: a lines list per comparison; the grouped finding carries the same evidence
    doc = to_json(result, collect_findings(result))
    lines = doc["kernels"][0]["comparisons"][0]["lines"]
    assert {(row["file"].rsplit("/", 1)[1], row["line"]) for row in lines} >= {
        k for k in want if k[0] == "layer_norm.py"
    }
    assert doc["grouped_findings"][0]["line_evidence"][0]["lines"][0]["line"] == 126


@pytest.mark.slow
def test_an_inductor_kernel_of_a_recording_names_the_line_of_its_shared_memory_change(
    toolchain, shared_compiler
) -> None:
    """The same check on inductor's generated source (the H200 torch.compile recording, kernel K3
    ``triton_red_fused_sum_0``, Triton 3.3.1 -> 3.6.0: an LDS became an LDSM.16.M88): the line whose
    shared-memory instructions changed is the one the independent read finds, and the finding says it."""
    from ktriage.explain.engine import Explainer
    from ktriage.explain.findings import collect_findings
    from ktriage.record.workload import load_workload
    from ktriage.report.explain import to_markdown

    workload = load_workload(REPO / "benchmarks" / "record" / "h200c" / "compiled_model.workload.json.gz")
    kernel = next(k for k in workload.kernels if k.id == "K3")
    tcs = [toolchain("triton==3.3.1"), toolchain("triton==3.6.0")]
    result = Explainer(shared_compiler).run([kernel.inputs[0].spec], tcs)
    comparison = result.specs[0].comparisons[0]
    reads = [
        independent_read(r.toolchain.nvdisasm, r.artifact.cubin.cubin_path, r.artifact.kernel_name)
        for r in (comparison.ref, comparison.new)
    ]
    for r, read in zip((comparison.ref, comparison.new), reads):  # the map itself, both cubins
        mine = {
            _ktriage_key(s.file, s.line, s.text): Counter(
                {op: n for op, n in s.opcodes.items() if op.split(".", 1)[0] in SHARED}
            )
            for s in r.resources.source_lines
        }
        assert {k: v for k, v in mine.items() if v} == {
            k: Counter({op: n for op, n in c.items() if op not in ("LDL", "STL")})
            for k, c in read.items()
            if any(op not in ("LDL", "STL") for op in c)
        }
    want = _moved(*reads, keep=None)
    assert want, "the recording's K3 changed its shared-memory instructions between 3.3.1 and 3.6.0"
    got = {
        _ktriage_key(d.file, d.line, d.text): dict(d.opcode_delta("shared"))
        for d in comparison.lines
        if d.opcode_delta("shared")
    }
    assert got == want
    ((file, line),) = [k for k in want if isinstance(k[1], int)]
    assert file.startswith("ktr_") and file.endswith(".py")  # inductor's generated module, from the snapshot
    md = to_markdown(result, collect_findings(result))
    evidence = [x for x in md.splitlines() if x.startswith("  - at shared-memory instructions changed")]
    assert evidence and f"{file}:{line} (" in evidence[0]
    assert "LDS -1 -> LDSM.16.M88 +1" in evidence[0]
