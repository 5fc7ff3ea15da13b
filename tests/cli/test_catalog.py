"""`ktriage catalog list|show` through typer's CliRunner on the module's own app."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ktriage.cli.catalog_cmd import app
from ktriage.spec.model import KernelSpec

runner = CliRunner()


def test_list_shows_every_op() -> None:
    result = runner.invoke(app, ["list"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    for name in ("liger.layer_norm", "liger.embedding@0.8.5", "liger.layer_norm@latest", "tutorial.matmul"):
        assert name in result.output
    assert "liger-kernel==0.5.10" in result.output


def test_show_table_and_json() -> None:
    result = runner.invoke(app, ["show", "liger.layer_norm", "--input", "N=4608"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "liger.layer_norm.bwd[N=4608]" in result.output and "(132,)" in result.output
    assert "rows_per_program=32" in result.output and "BLOCK_SIZE=8192" in result.output
    result = runner.invoke(app, ["show", "liger.embedding", "--mode", "fwd", "--input", "0", "--input", "8", "--format", "json"])
    assert result.exit_code == 0, result.output
    specs = [KernelSpec.from_json(d) for d in json.loads(result.output)]
    assert [s.grid for s in specs] == [(128, 6), (128, 32)]
    assert specs[0].source.endswith(":embedding_forward_kernel")


def test_show_toml_loads_back(tmp_path) -> None:
    from ktriage.spec.toml_file import load_spec_file

    result = runner.invoke(app, ["show", "tutorial.matmul", "--target", "sm_80", "--format", "toml"])
    assert result.exit_code == 0, result.output
    path = tmp_path / "mm.toml"
    path.write_text(result.output)
    specs = load_spec_file(path)
    assert len(specs) == 4 and all(s.target == "sm_80" for s in specs)


def test_show_errors_are_user_errors() -> None:
    result = runner.invoke(app, ["show", "liger.layernorm"])
    assert result.exit_code != 0
    assert "did you mean liger.layer_norm" in str(result.exception.fix)
