"""`ktriage catalog list|show` through the real ``main(argv)``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ktriage.catalog.registry import catalog_op, expand_op
from ktriage.cli import exit_codes
from ktriage.spec.model import KernelSpec
from tests.conftest import REPO, RunCli


def test_list_shows_every_op(run_cli: RunCli) -> None:
    result = run_cli(["catalog", "list"])
    assert result.exit_code == exit_codes.OK, result.output
    for name in ("liger.layer_norm", "liger.embedding@0.8.5", "liger.layer_norm@latest", "tutorial.matmul"):
        assert name in result.stdout
    assert "liger-kernel==0.5.10" in result.stdout


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_list_table_reads_at_80_to_120_columns(columns: int, run_cli: RunCli) -> None:
    """At 120 columns the seven-column table left the description a word per line and broke names
    (``liger.layer_norm@0`` over ``.8.5``). Now: no line wider than the terminal, every name, alias,
    package and description word whole, and each op a block of at most 5 lines (blank between ops)."""
    from ktriage.catalog import list_ops

    result = run_cli(["catalog", "list"], env={"KTRIAGE_COLUMNS": str(columns)})
    assert result.exit_code == exit_codes.OK, result.output
    text = result.stdout
    lines = text.splitlines()
    assert all(len(line.rstrip()) <= columns for line in lines), text
    tokens = {token for line in lines for token in line.split()}
    for op in list_ops():
        package = op.package or "(ktriage)"
        shown = op.description.removesuffix(f", {package.replace('==', ' ')}")
        whole = {op.name, *op.aliases, package, *shown.split()}
        assert whole <= tokens, (whole - tokens, text)
    rule = next(i for i, line in enumerate(lines) if line.lstrip().startswith("─"))
    body = "\n".join(line if line.strip() else "" for line in lines[rule + 1 :])
    blocks = [block for block in body.split("\n\n") if block.strip()]
    assert len(blocks) >= len(list_ops()) and max(len(b.splitlines()) for b in blocks) <= 5, text


def test_show_table_and_json(run_cli: RunCli) -> None:
    result = run_cli(["catalog", "show", "liger.layer_norm", "--input", "N=4608"])
    assert result.exit_code == exit_codes.OK, result.output
    assert "liger.layer_norm.bwd[N=4608]" in result.stdout and "(132,)" in result.stdout
    assert "rows_per_program=32" in result.stdout and "BLOCK_SIZE=8192" in result.stdout
    result = run_cli(
        ["catalog", "show", "liger.embedding", "--mode", "fwd", "--input", "0", "--input", "8", "--format", "json"]
    )
    assert result.exit_code == exit_codes.OK, result.output
    specs = [KernelSpec.from_json(d) for d in json.loads(result.stdout)]
    assert [s.grid for s in specs] == [(128, 6), (128, 32)]
    assert specs[0].source.endswith(":embedding_forward_kernel")


def test_show_toml_loads_back(tmp_path, run_cli: RunCli) -> None:
    from ktriage.spec.toml_file import load_spec_file

    result = run_cli(["catalog", "show", "tutorial.matmul", "--target", "sm_80", "--format", "toml"])
    assert result.exit_code == exit_codes.OK, result.output
    path = tmp_path / "mm.toml"
    path.write_text(result.stdout)
    specs = load_spec_file(path)
    assert len(specs) == 4 and all(s.target == "sm_80" for s in specs)


def test_show_toml_is_portable_and_reads_back_without_warnings(
    tmp_path, run_cli: RunCli, caplog: pytest.LogCaptureFixture
) -> None:
    """The export names ktriage's kernel by module (no absolute path of this installation), and its
    [kernel.specialize] states the divisibility, so loading it warns of no int "given without a value"."""
    from ktriage.spec.toml_file import load_spec_file

    result = run_cli(["catalog", "show", "tutorial.matmul", "--input", "1", "--format", "toml"])
    assert result.exit_code == exit_codes.OK, result.output
    assert 'source = "ktriage.catalog.kernels.matmul:matmul_kernel"' in result.stdout
    assert str(REPO) not in result.stdout
    (tmp_path / "elsewhere").mkdir()
    path = tmp_path / "elsewhere" / "mm.toml"
    path.write_text(result.stdout)
    with caplog.at_level("WARNING", logger="ktriage"):
        (spec,) = load_spec_file(path)
    assert not [m for m in caplog.messages if "given without a value" in m], caplog.messages
    (original,) = expand_op("tutorial.matmul", inputs=["1"])
    assert spec.replace(source=original.source) == original


def test_show_toml_loads_to_the_catalogs_own_kernel_file_in_any_process(tmp_path, run_cli: RunCli) -> None:
    """`explain mm.toml` of the export failed: in a process whose sys.path has no folder holding ktriage
    (the editable install of scripts/setup.sh, the `ktriage` command run anywhere) "cannot find module
    'ktriage.catalog.kernels.matmul'"; and a spec that kept the module name does not compile, since a
    toolchain's worker has no ktriage to import ("not a @triton.jit function (found _Inert)"). The file
    loads to the catalog's spec itself: this installation's kernel file."""
    result = run_cli(["catalog", "show", "tutorial.matmul", "--input", "1", "--format", "toml"])
    assert result.exit_code == exit_codes.OK, result.output
    path = tmp_path / "mm.toml"
    path.write_text(result.stdout)
    code = "import sys; from ktriage.spec.toml_file import load_spec_file; print(load_spec_file(sys.argv[1])[0].source)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    loaded = subprocess.run(
        [sys.executable, "-c", code, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert loaded.returncode == 0, loaded.stderr
    (original,) = expand_op("tutorial.matmul", inputs=["1"])
    assert loaded.stdout.strip() == original.source


def test_show_errors_are_user_errors(run_cli: RunCli) -> None:
    result = run_cli(["catalog", "show", "liger.layernorm"])
    assert result.exit_code == exit_codes.USAGE, result.output
    assert "did you mean liger.layer_norm" in (result.fix or "")


def test_rms_norm_is_in_the_catalog_list(run_cli: RunCli) -> None:
    result = run_cli(["catalog", "list"])
    assert result.exit_code == exit_codes.OK, result.output
    assert "liger.rms_norm " in result.stdout and "liger.rms_norm@0.8.5" in result.stdout
    info = catalog_op("liger.rms_norm@latest")
    assert info.name == "liger.rms_norm@0.8.5" and info.default_mode == "bwd" and info.default_dtype == "fp32"
    assert info.kernels["bwd"] == "liger_kernel.ops.rms_norm:_rms_norm_backward_kernel"
