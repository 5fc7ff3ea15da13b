"""``triton=host``: the Triton of the interpreter that runs ktriage, with no virtualenv built.

The test venv has no Triton, so "the current interpreter" of the compile test is a real one that
has it: the Triton 3.6.0 virtualenv of the test home, running ktriage itself (this checkout and
the test venv's packages on PYTHONPATH) in a subprocess. Its ``sys.executable`` is what
``triton=host`` means there, exactly as ``python3 -m ktriage`` on a GPU host whose Python has Triton.
"""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
import textwrap
from pathlib import Path

import pytest

from ktriage.compile.compiler import Artifact, Compiler
from ktriage.errors import ToolchainError
from ktriage.spec.model import KernelSpec
from ktriage.toolchain.manager import ensure_toolchain
from ktriage.toolchain.ptxas import ptxas_version
from ktriage.toolchain.spec import parse_toolchain
from tests.triton_compile_for_tests import RED_SIGNATURE

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "tests" / "kernels_for_tests.py"


def red_spec() -> KernelSpec:
    return KernelSpec(
        name="red[64x64]",
        source=f"{KERNELS}:red_kernel",
        signature=dict(RED_SIGNATURE),
        constexprs={"XBLOCK": 64, "RBLOCK": 64},
        divisible_by_16=("in_ptr", "out_ptr", "xnumel", "rnumel"),
        meta={"input_label": "R=64"},
    )


def test_host_spec_parses_alone_and_with_a_ptxas_and_options(tmp_path: Path) -> None:
    ptxas = tmp_path / "ptxas"
    ptxas.write_text("#!/bin/sh\n")
    ptxas.chmod(0o755)
    host = parse_toolchain("triton=host")
    assert host.triton_host and host.frontend_kind == "host" and not host.is_release
    assert host.triton_version is None and host.triton_wheel is None
    assert str(host) == "triton=host"
    both = parse_toolchain(f"ptxas-options=-O2 --verbose, ptxas={ptxas}, triton=host")
    assert both.triton_host and both.ptxas_path == ptxas and both.ptxas_options == ("-O2", "--verbose")
    assert str(both) == f"triton=host,ptxas={ptxas},ptxas-options=-O2 --verbose"
    assert parse_toolchain(str(both)) == both  # the canonical form reads back
    assert parse_toolchain("triton=host,ptxas==12.8.93").ptxas_version == "12.8.93"
    assert (
        parse_toolchain("triton==3.6.0").is_release and not parse_toolchain(f"triton==3.6.0,ptxas={ptxas}").is_release
    )


def test_an_interpreter_without_triton_is_refused_with_the_fix(run_cli) -> None:
    """The test venv truly has no Triton: triton=host names that, and how to get one, never a traceback."""
    with pytest.raises(ToolchainError) as err:
        ensure_toolchain("triton=host")
    assert "cannot import Triton" in err.value.problem and "triton==VERSION" in (err.value.fix or "")
    res = run_cli(["toolchain", "add", "triton=host"])
    assert res.exit_code == 2 and "cannot import Triton" in res.problem and res.fix


HOST_SCRIPT = textwrap.dedent(
    """
    import hashlib, json, sys
    from ktriage.compile.compiler import Artifact, Compiler
    from ktriage.spec.model import KernelSpec
    from ktriage.toolchain.manager import ensure_toolchain, find_toolchain

    spec = KernelSpec.from_json(json.loads(sys.argv[1]))
    out = {"executable": sys.executable}
    with Compiler(jobs=1) as compiler:
        for text in sys.argv[2:]:
            tc = ensure_toolchain(text)
            again = ensure_toolchain(text)
            art = compiler.compile(spec, tc)
            assert isinstance(art, Artifact), art
            out[text] = {"id": tc.id, "again": again.id, "found": (find_toolchain(tc.id) or tc).id, "spec": str(tc.spec),
                         "python": str(tc.python), "triton_version": tc.triton_version, "ptxas": str(tc.ptxas),
                         "ptxas_version_text": tc.ptxas_version_text, "frontend_id": tc.frontend_id,
                         "cubin": art.cubin.cubin_path.read_bytes().hex(), "log": art.cubin.ptxas_log,
                         "made_by": art.cubin.command[0], "made_by_version": art.cubin.ptxas_version,
                         "native": art.cubin.native}
    print(json.dumps(out))
    """
)


@pytest.mark.slow
def test_host_toolchain_is_identified_and_compiles_the_releases_cubin(toolchain, tmp_path: Path) -> None:
    """The Triton 3.6.0 venv's python runs ktriage; ``triton=host`` there is that interpreter's Triton:
    exact version, its bundled ptxas's --version text, an id kept apart from the PyPI release's, and a
    kernel compiled in that interpreter (no venv built) to the same cubin the release toolchain makes."""
    release = toolchain("triton==3.6.0")
    # a ptxas=PATH that is not the host Triton's own, of another version (12.4.131; the host's bundles 12.8.93)
    other_ptxas = toolchain("triton==3.4.0,ptxas==12.4.131").ptxas
    interpreter = release.python  # "the current interpreter": a real Python whose Triton is 3.6.0
    home = tmp_path / "home"
    env = {
        **os.environ,
        "KTRIAGE_HOME": str(home),
        "PYTHONPATH": os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"]]),
    }
    specs = ["triton=host", f"triton=host,ptxas={other_ptxas}"]
    proc = subprocess.run(
        [str(interpreter), "-c", HOST_SCRIPT, json.dumps(red_spec().to_json()), *specs],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    host, host_path = out["triton=host"], out[specs[1]]

    assert out["executable"] == str(interpreter)
    assert host["python"] == str(interpreter)  # the worker runs in the current interpreter, no venv
    assert not list((home / "toolchains" / "envs").glob("*/bin/python"))  # none was built
    assert host["triton_version"] == "3.6.0" and host["spec"] == "triton=host"
    assert host["ptxas_version_text"].strip() == ptxas_version(release.bundled_ptxas).text.strip()
    assert host["id"] == host["again"] == host["found"]  # stable, and found again by id
    assert host["id"].startswith("triton-3.6.0.ptxas-") and host["id"] != release.id
    assert "-host-" in host["frontend_id"]
    # ptxas=PATH combines: its own --version text in the toolchain and the id
    assert host_path["ptxas"] == str(other_ptxas) and host_path["id"] != host["id"]
    assert host_path["ptxas_version_text"].strip() == ptxas_version(other_ptxas).text.strip()

    with Compiler(jobs=1, cache_dir=tmp_path / "cache") as compiler:
        art = compiler.compile(red_spec(), release)
    assert isinstance(art, Artifact)
    assert bytes.fromhex(host["cubin"]) == art.cubin.cubin_path.read_bytes()  # the host's Triton is that release
    assert "registers" in host_path["log"]
    # ... and that ptxas, not the host Triton's bundled one, made the ptxas=PATH toolchain's cubin (the
    # H200 triage --run of benchmarks/corpus/README.md compared host+ptxas=PATH with host: had the path
    # been ignored, both sides would be Triton's own cubin)
    assert host["native"] and host["made_by"] == str(release.bundled_ptxas)
    assert not host_path["native"] and host_path["made_by"] == str(other_ptxas)
    assert host_path["made_by_version"] == "12.4.131" and host["made_by_version"] == release.ptxas_version
    assert host_path["cubin"] != host["cubin"]  # 12.4.131's cubin, not 12.8.93's
