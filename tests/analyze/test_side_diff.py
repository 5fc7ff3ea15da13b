"""The side-by-side aligned diff of the explain HTML report (no toolchain, no browser)."""

from __future__ import annotations

from ktriage.analyze.side_diff import DiffLine, align, ptx_lines, sass_lines

SASS = """
        code for sm_90
                Function : k
        .headerflags    @"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   STL [R1+0x4], R5 ;
        /*0020*/                   LDG.E R2, desc[UR4][R2.64] ;
        /*0030*/              @!P0 BRA 0x10 ;
        /*0040*/                   EXIT ;
        /*0050*/                   BRA 0x50;
"""


def _lines(keys: list[str]) -> list[DiffLine]:
    return [DiffLine(i + 1, k, k) for i, k in enumerate(keys)]


def test_unchanged_runs_collapse_and_changes_stay() -> None:
    a = _lines([f"x{i}" for i in range(50)])
    b = [*a[:20], DiffLine(99, "y", "y"), *a[21:]]
    d = align(a, b, kind="ptx", context=3)
    assert [r.tag for r in d.rows] == ["skip", "equal", "equal", "equal", "replace", "equal", "equal", "equal", "skip"]
    assert (d.rows[0].skipped, d.rows[-1].skipped) == (17, 26)
    assert (d.removed, d.added, d.hunks) == (1, 1, 1)


def test_long_changed_runs_are_cut_with_a_count() -> None:
    d = align(_lines(["a"] * 3), _lines([f"n{i}" for i in range(1000)]), kind="sass", max_run=400)
    cut = [r for r in d.rows if r.tag == "skip"]
    assert len(cut) == 1 and cut[0].changed_skipped and cut[0].skipped == 600
    assert len(d.rows) == 401 and d.added == 1000


def test_sass_lines_mark_spills_classes_and_the_main_loop() -> None:
    lines = sass_lines(SASS, main_loop=(0x10, 0x30))
    assert [ln.opcode for ln in lines] == ["LDC", "STL", "LDG", "BRA", "EXIT"]
    stl, ldg = lines[1], lines[2]
    assert stl.spill and stl.cls == "local" and stl.main_loop and not lines[0].main_loop
    assert ldg.cls == "global" and ldg.key == "LDG.E R, desc[UR][R.64]" and "R2" in ldg.text


def test_ptx_register_declarations_are_kept_apart() -> None:
    lines, decls = ptx_lines(
        ".reg .f32 %f<1317>;\n.reg .b32 %r<20>; // c\nadd.f32 %f1, %f2, %f3;\nst.local.b32 [%rd1], %r4;\n"
    )
    assert decls == [".reg .f32 %f<1317>;", ".reg .b32 %r<20>;"]
    assert [ln.key for ln in lines] == ["add.f32 %f, %f, %f;", "st.local.b32 [%rd], %r;"]
    assert lines[1].spill and not lines[0].spill
