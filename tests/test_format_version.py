"""Files that cross machines carry one ``format_version`` and are refused when unknown (issue 10, point 7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ktriage.errors import KtriageError, check_format_version
from ktriage.measure.results_file import FORMAT_VERSION, parse_results, read_results, results_to_json
from ktriage.spec.model import KernelSpec
from ktriage.workload.recorded.in_process import load_specs, save_specs

REPO = Path(__file__).resolve().parent.parent
COMMITTED = REPO / "benchmarks" / "gpu" / "issue3" / "run2_layer_norm_aa" / "ln_bwd.json"


def test_results_files_carry_their_version_and_old_ones_still_read() -> None:
    run, cells = read_results(COMMITTED)  # written before the key existed: version 1
    doc = results_to_json(run, cells)
    assert doc["format_version"] == FORMAT_VERSION
    again_run, again = parse_results(json.dumps(doc))
    assert again_run == run and len(again) == len(cells)
    doc["format_version"] = 7
    with pytest.raises(KtriageError, match=r"format_version 7, newer than this ktriage reads \(up to 1\)") as info:
        parse_results(json.dumps(doc), origin="x.json")
    assert info.value.fix is not None and info.value.fix.startswith("upgrade ktriage")
    doc["format_version"] = 0
    with pytest.raises(KtriageError, match="format_version 0; this ktriage reads 1"):
        parse_results(json.dumps(doc), origin="x.json")


def test_a_newer_version_is_named_before_the_fields_it_may_have_changed() -> None:
    """`{"format_version": 999}`: upgrade ktriage, not "missing key 'run'"."""
    with pytest.raises(KtriageError) as info:
        parse_results(json.dumps({"format_version": 999}), origin="x.json")
    assert info.value.problem == "x.json has format_version 999, newer than this ktriage reads (up to 1)"
    assert info.value.fix is not None and info.value.fix.startswith("upgrade ktriage")


def test_a_json_object_that_is_no_results_file_gets_the_fix_of_what_one_is() -> None:
    with pytest.raises(KtriageError) as info:
        parse_results("{}", origin="x.json")
    assert info.value.problem == "x.json is not a ktriage results file: it has no 'run' and no 'cells'"
    assert info.value.fix is not None and "ktriage bench --output-json" in info.value.fix


def test_recordings_carry_their_version(tmp_path: Path) -> None:
    spec = KernelSpec(name="k", source="a.py:k", signature={"x": "*fp32"})
    path = save_specs([spec], tmp_path / "rec.json")
    assert json.loads(path.read_text())["format_version"] == 1
    assert load_specs(path) == [spec]
    path.write_text(json.dumps([spec.to_json()]))  # the bare list of older recordings
    assert load_specs(path) == [spec]
    path.write_text(json.dumps({"format_version": 2, "specs": []}))
    with pytest.raises(KtriageError, match="format_version 2"):
        load_specs(path)


@pytest.mark.parametrize("data", [{"format_version": True}, {"format_version": "1"}, {}, []])
def test_the_check_refuses_what_it_cannot_read(data: object) -> None:
    with pytest.raises(KtriageError):
        check_format_version(data, 1, what="f", fix="redo")
