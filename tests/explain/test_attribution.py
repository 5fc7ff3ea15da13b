"""Attribution logic of the cross matrix, on hand-made cells (pure logic; the real matrix is tested in tests/explain/test_engine.py)."""

from ktriage.explain.attribution import CrossCells, attribute, sentence


def test_frontend_change_follows_the_ptx() -> None:
    # new PTX spills 3712 B with either ptxas; old PTX spills 632 B with either.
    # (the real layer_norm numbers: two ptxas releases spill 3712 vs 3728 B for the same PTX)
    cells = CrossCells(ref=632, new=3712, new_ptx_ref_ptxas=3728, ref_ptx_new_ptxas=632)
    assert attribute(cells) == "frontend"
    assert attribute(CrossCells(632, 3712, 3712, 632)) == "frontend"


def test_ptxas_change_follows_the_assembler() -> None:
    assert attribute(CrossCells(ref=0, new=64, new_ptx_ref_ptxas=0, ref_ptx_new_ptxas=64)) == "ptxas"


def test_both_when_only_the_combination_moves() -> None:
    assert attribute(CrossCells(ref=0, new=100, new_ptx_ref_ptxas=0, ref_ptx_new_ptxas=0)) == "both"
    assert attribute(CrossCells(ref=0, new=100, new_ptx_ref_ptxas=50, ref_ptx_new_ptxas=50)) == "both"


def test_none_and_unknown() -> None:
    assert attribute(CrossCells(5, 5, 7, 9)) == "none"
    assert attribute(CrossCells(0, 10, None, None)) == "unknown"


def test_missing_cell_uses_the_other_swap() -> None:
    # an old ptxas cannot assemble the new PTX (new_ptx_ref_ptxas is None); the old PTX through the
    # new ptxas does not move: the frontend is responsible.
    assert attribute(CrossCells(0, 10, None, 0)) == "frontend"
    assert attribute(CrossCells(0, 10, 10, None)) == "frontend"
    assert attribute(CrossCells(0, 10, None, 10)) == "ptxas"


def test_tolerance_for_opcode_counts() -> None:
    assert attribute(CrossCells(ref=100, new=101, new_ptx_ref_ptxas=101, ref_ptx_new_ptxas=100)) == "frontend"
    assert attribute(CrossCells(ref=100, new=101, new_ptx_ref_ptxas=101, ref_ptx_new_ptxas=100), abs_tol=1) == "none"
    cells = CrossCells(ref=100, new=140, new_ptx_ref_ptxas=101, ref_ptx_new_ptxas=139)
    assert attribute(cells, rel_tol=0.05, abs_tol=1) == "ptxas"


def test_partial_shares_are_both() -> None:
    # each swap reproduces half of the change: neither side alone explains it
    assert attribute(CrossCells(ref=0, new=100, new_ptx_ref_ptxas=50, ref_ptx_new_ptxas=50)) == "both"
    assert attribute(CrossCells(ref=0, new=100, new_ptx_ref_ptxas=100, ref_ptx_new_ptxas=100)) == "both"


def test_sentence_names_the_side_and_the_numbers() -> None:
    cells = CrossCells(632, 3712, 3728, 632)
    text = sentence(
        "spill_store_bytes", cells, "frontend", "triton==3.3.1", "triton==3.4.0", "12.4.99", "12.8.93", " B"
    )
    assert "frontend" in text and "3728 B" in text and "12.4.99" in text
