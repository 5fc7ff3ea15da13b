"""Real toolchains: PyPI Triton wheels in uv virtualenvs, ptxas releases from nvidia-cuda-nvcc wheels.

Built once into the persistent test home (tests/conftest.py), so reruns cost a ``ptxas --version``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from ktriage.errors import KtriageError
from ktriage.toolchain.manager import Toolchain, ensure_toolchain, find_toolchain, list_toolchains
from ktriage.toolchain.ptxas import assemble, ptx_header_version, ptxas_version
from ktriage.toolchain.releases import ensure_ptxas_release

pytestmark = pytest.mark.slow

ELF_MAGIC = b"\x7fELF"

# A tiny vector add, and a kernel that builds TMA descriptors on the device (Triton 3.4 lowers it to
# `tensormap.replace`, an instruction of PTX ISA 8.3: ptxas 12.0 cannot assemble it at any header).
COMPILE_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import triton, triton.language as tl
    from triton.compiler import ASTSource
    from triton.backends.compiler import GPUTarget

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

    @triton.jit
    def desc_copy(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
        d_in = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
        d_out = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
        d_out.store([tl.program_id(0) * BM, 0], d_in.load([tl.program_id(0) * BM, 0]))

    which, cc = sys.argv[1], int(sys.argv[2])
    if which == "add":
        src = ASTSource(add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 1024})
    else:
        src = ASTSource(desc_copy, {"x_ptr": "*fp32", "out_ptr": "*fp32", "M": "i32", "N": "i32", "BM": "constexpr", "BN": "constexpr"}, {"BM": 64, "BN": 64})
    k = triton.compile(src, target=GPUTarget("cuda", cc, 32), options={"num_warps": 4})
    json.dump({"ptx": k.asm["ptx"], "n_regs": k.n_regs if hasattr(k, "n_regs") else None}, sys.stdout)
    """
)


def compile_ptx(tc: Toolchain, which: str, cc: int = 90) -> str:
    """PTX of a test kernel, compiled by the toolchain's own Triton (its venv python)."""
    with tempfile.TemporaryDirectory() as tmp:  # triton.jit reads the kernel's source: it needs a file
        script = Path(tmp) / "kernels.py"
        script.write_text(COMPILE_SCRIPT)
        proc = subprocess.run([str(tc.python), str(script), which, str(cc)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return str(json.loads(proc.stdout)["ptx"])


@pytest.fixture(scope="session")
def tc340(ktriage_home: Path) -> Toolchain:
    return ensure_toolchain("triton==3.4.0")


@pytest.fixture(scope="session")
def tc331(ktriage_home: Path) -> Toolchain:
    return ensure_toolchain("triton==3.3.1")


@pytest.fixture(scope="session")
def tc340_ptxas124(ktriage_home: Path) -> Toolchain:
    return ensure_toolchain("triton==3.4.0,ptxas==12.4.131")


TRITON_OPTIONS = ("-lineinfo", "-v")  # what Triton 3.4's make_cubin passes for a default kernel


def test_triton_340_toolchain(tc340: Toolchain) -> None:
    assert tc340.triton_version == "3.4.0"
    assert tc340.ptxas_is_bundled and tc340.ptxas_version == "12.8.93"
    assert "V12.8.93" in tc340.ptxas_version_text
    assert tc340.id.startswith("triton-3.4.0.ptxas-12.8.93.")
    # 3.4 has one ptxas for all archs (read from what Triton ran, not from a table)
    assert tc340.assembler(90).ptxas == tc340.assembler(100).ptxas == tc340.ptxas
    assert tc340.assembler(90).native and tc340.assembler(90).triton_options == ("-lineinfo", "-v")
    assert tc340.cuobjdump.is_file() and tc340.nvdisasm is not None and tc340.nvdisasm.is_file()
    out = subprocess.run(
        [str(tc340.python), "-c", "import triton; print(triton.__version__)"], capture_output=True, text=True
    )
    assert out.stdout.strip() == "3.4.0"


def test_triton_331_toolchain_has_a_blackwell_ptxas(tc331: Toolchain) -> None:
    assert tc331.triton_version == "3.3.1"
    assert tc331.ptxas_version == "12.4.99"
    assert tc331.ptxas_blackwell is not None
    assert tc331.assembler(90).ptxas == tc331.ptxas
    assert tc331.assembler(100).ptxas == tc331.ptxas_blackwell
    assert tc331.assembler(100).version == "12.8.61" == ptxas_version(tc331.assembler(100).ptxas).version
    assert tc331.facts().order_sensitive  # nvptx-short-ptr: the first compile of a process differs


def test_ptxas_release_toolchain_reports_its_version(tc340: Toolchain, tc340_ptxas124: Toolchain) -> None:
    tc = tc340_ptxas124
    assert not tc.ptxas_is_bundled
    assert tc.ptxas_version == "12.4.131" and "V12.4.131" in tc.ptxas_version_text
    assert ptxas_version(tc.ptxas).version == "12.4.131"
    assert tc.assembler(100).ptxas == tc.ptxas  # an explicit ptxas overrides Triton's per-arch choice
    assert not tc.assembler(90).native  # ktriage re-assembles with Triton's recorded command line
    assert tc.python == tc340.python  # the frontend venv is shared
    assert tc.id.startswith("triton-3.4.0.ptxas-12.4.131.") and tc.id != tc340.id


def test_ensure_reuses_and_finds(tc340: Toolchain) -> None:
    again = ensure_toolchain("triton==3.4.0")
    assert again == tc340
    assert find_toolchain(tc340.id) == tc340
    assert find_toolchain("triton==3.4.0") == tc340
    assert find_toolchain(tc340.id[:-1]) == tc340  # a unique prefix is enough
    assert find_toolchain("triton==3.0.0") is None  # find never builds
    assert tc340.id in {t.id for t in list_toolchains()}
    assert Toolchain.from_json(json.loads(json.dumps(tc340.to_json()))) == tc340


def test_options_and_local_ptxas_change_the_id(tc340: Toolchain, tc340_ptxas124: Toolchain) -> None:
    with_opts = ensure_toolchain("triton==3.4.0,ptxas-options=--register-usage-level=4")
    assert with_opts.ptxas_options == ("--register-usage-level=4",)
    assert with_opts.id != tc340.id and with_opts.id.startswith("triton-3.4.0.ptxas-12.8.93.")
    local = ensure_toolchain(f"triton==3.4.0,ptxas={tc340_ptxas124.ptxas}")
    assert local.ptxas == tc340_ptxas124.ptxas and local.ptxas_version == "12.4.131"


def test_assemble_triton_340_ptx_with_ptxas_124_lowers_the_header(tc340: Toolchain, tc340_ptxas124: Toolchain) -> None:
    ptx = compile_ptx(tc340, "add")
    assert ptx_header_version(ptx) == "8.7"
    native = assemble(ptx, tc340.assembler(90).ptxas, "sm_90a", TRITON_OPTIONS)
    assert native.lowered_ptx_version is None
    old = assemble(ptx, tc340_ptxas124.assembler(90).ptxas, "sm_90a", TRITON_OPTIONS)
    assert old.lowered_ptx_version == ("8.7", "8.4")
    assert old.cubin[:4] == ELF_MAGIC and native.cubin[:4] == ELF_MAGIC
    assert "Used " in old.log and "spill stores" in old.log  # the -v resource report the analyzers parse
    assert "--gpu-name=sm_90a" in old.command and "-lineinfo" in old.command and "-v" in old.command


def test_assemble_passes_options_in_triton_order(tc340: Toolchain, tmp_path: Path) -> None:
    ptx = compile_ptx(tc340, "add")
    res = assemble(
        ptx, tc340.ptxas, "sm_90a", ["-lineinfo", "--fmad=false", "-v", "--maxrregcount=32"], workdir=tmp_path
    )
    cmd = list(res.command)
    assert cmd[1:4] == ["-lineinfo", "--fmad=false", "-v"]
    assert cmd.index("--maxrregcount=32") < cmd.index("--gpu-name=sm_90a") < cmd.index("-o")
    assert (tmp_path / "kernel.cubin").read_bytes() == res.cubin


def test_ptx_using_newer_features_fails_clearly_after_lowering(tc340: Toolchain) -> None:
    ptx = compile_ptx(tc340, "desc")
    assert "tensormap.replace" in ptx
    ptxas120 = ensure_ptxas_release("12.0.140")
    with pytest.raises(KtriageError) as info:
        assemble(ptx, ptxas120, "sm_90a", TRITON_OPTIONS)
    err = info.value
    assert "uses features that ptxas 12.0.140 does not support" in err.problem
    assert "lowered to .version 8.0" in err.problem and "tensormap" in err.problem
    assert err.fix is not None and "newer ptxas" in err.fix


def test_unknown_arch_for_old_ptxas_fails_clearly(tc340: Toolchain, tc340_ptxas124: Toolchain) -> None:
    ptx = compile_ptx(tc340, "add", cc=100)
    ok = assemble(ptx, tc340.assembler(100).ptxas, "sm_100a", TRITON_OPTIONS)
    assert ok.cubin[:4] == ELF_MAGIC
    with pytest.raises(KtriageError) as info:
        assemble(ptx, tc340_ptxas124.assembler(100).ptxas, "sm_100a", TRITON_OPTIONS)
    assert "ptxas 12.4.131 does not know sm_100a" in info.value.problem
    assert info.value.fix is not None and "12.8" in info.value.fix


@pytest.mark.network  # asks the package index
def test_unknown_triton_version_names_the_fix(ktriage_home: Path) -> None:
    with pytest.raises(KtriageError) as info:
        ensure_toolchain("triton==9.9.9")
    assert "triton==9.9.9 is not on the package index" in info.value.problem
    assert info.value.fix is not None and "3.4.0" in info.value.fix and "3.3.1" in info.value.fix
    assert not (ktriage_home / "toolchains" / "envs" / "triton-9.9.9").exists()


@pytest.mark.network  # asks the package index
def test_unknown_ptxas_release_names_the_fix(ktriage_home: Path) -> None:
    with pytest.raises(KtriageError) as info:
        ensure_toolchain("triton==3.4.0,ptxas==12.4.999")
    assert "nvidia-cuda-nvcc-cu12==12.4.999 is not on the package index" in info.value.problem
    assert info.value.fix is not None and "12.4.131" in info.value.fix


def test_ptxas_13_release_layout(ktriage_home: Path) -> None:
    exe = ensure_ptxas_release("13.0.88")
    assert exe == ktriage_home / "ptxas" / "13.0.88" / "bin" / "ptxas"
    assert ptxas_version(exe).version == "13.0.88"


# -- concurrency and killed builds, in a fresh home each (the uv cache makes the wheel cheap) -------

RACE_SCRIPT = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path
    barrier = Path(sys.argv[2])
    while not barrier.exists():
        time.sleep(0.005)
    from ktriage.toolchain.manager import ensure_toolchain
    steps = []
    tc = ensure_toolchain(sys.argv[1], progress=steps.append)
    print(json.dumps({"id": tc.id, "steps": steps, "python": str(tc.python)}))
    """
)


@pytest.mark.network  # builds in a fresh home: installs from PyPI
def test_two_processes_build_one_consistent_toolchain(tmp_path: Path, tc340_ptxas124: Toolchain) -> None:
    home = tmp_path / "home"
    barrier = tmp_path / "go"
    spec = f"triton==3.4.0,ptxas={tc340_ptxas124.ptxas},ptxas-options=-O3"
    env = {**_env(), "KTRIAGE_HOME": str(home)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACE_SCRIPT, spec, str(barrier)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    barrier.touch()
    results = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        results.append(json.loads(out))
    assert results[0]["id"] == results[1]["id"]
    builders = [r for r in results if any(s.startswith("creating virtualenv") for s in r["steps"])]
    assert len(builders) == 1, results  # the other one waited on the lock and reused the build
    tc_dirs = [d for d in (home / "toolchains").iterdir() if d.is_dir() and d.name != "envs"]
    assert [d.name for d in tc_dirs] == [results[0]["id"]]
    record = json.loads((tc_dirs[0] / "toolchain.json").read_text())
    assert record["ptxas_version"] == "12.4.131" and record["ptxas_options"] == ["-O3"]
    check = subprocess.run(
        [results[0]["python"], "-c", "import triton; print(triton.__version__)"], capture_output=True, text=True
    )
    assert check.stdout.strip() == "3.4.0"


KILL_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from ktriage.toolchain.manager import ensure_toolchain
    def hang(msg):
        print(msg, flush=True)
        if msg.startswith("installing"):
            time.sleep(600)  # killed here: venv created, triton not installed, no marker
    ensure_toolchain(sys.argv[1], progress=hang)
    """
)


@pytest.mark.network  # builds in a fresh home: installs from PyPI
def test_a_killed_build_is_redone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    env = {**_env(), "KTRIAGE_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_SCRIPT, "triton==3.4.0"], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("installing"):
            break
    proc.kill()
    proc.wait()
    assert proc.stdout is not None
    proc.stdout.close()
    venv = home / "toolchains" / "envs" / "triton-3.4.0"
    assert venv.is_dir() and not (venv / "frontend.json").exists()
    monkeypatch.setenv("KTRIAGE_HOME", str(home))
    steps: list[str] = []
    tc = ensure_toolchain("triton==3.4.0", progress=steps.append)
    assert any(s.startswith("creating virtualenv") for s in steps)  # rebuilt, not trusted
    assert (venv / "frontend.json").exists() and tc.triton_version == "3.4.0"


def _env() -> dict[str, str]:
    return dict(os.environ)


@pytest.fixture(scope="session")
def triton_340_wheel(ktriage_home: Path) -> Path:
    """The real PyPI wheel file, downloaded once into the test home (pip's cache makes it cheap)."""
    dest = ktriage_home / "test-wheels"
    found = sorted(dest.glob("triton-3.4.0-*.whl"))
    if not found:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "-d",
                str(dest),
                "triton==3.4.0",
            ],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        found = sorted(dest.glob("triton-3.4.0-*.whl"))
    return found[0]


def test_local_wheel_frontend(triton_340_wheel: Path, tc340: Toolchain) -> None:
    from ktriage.toolchain.installer import sha256_file

    tc = ensure_toolchain(f"triton={triton_340_wheel}")
    assert tc.spec.triton_wheel == triton_340_wheel
    assert tc.triton_version == "3.4.0" and tc.ptxas_version == "12.8.93"
    assert tc.wheel_sha256 == sha256_file(triton_340_wheel)
    assert tc.python != tc340.python  # its own venv, keyed by the wheel's hash
    assert tc.id.startswith("triton-3.4.0.ptxas-12.8.93.") and tc.id != tc340.id
    assert tc.frontend_id == f"triton-3.4.0-wheel-{tc.wheel_sha256[:12]}" and tc340.frontend_id == "triton-3.4.0"
    with_ptxas = ensure_toolchain(f"triton={triton_340_wheel},ptxas==12.4.131")
    assert with_ptxas.python == tc.python and with_ptxas.ptxas_version == "12.4.131"
