"""Each compile reports the stand-ins and Triton re-exports of its own kernel's module, not the worker's.

One compile worker serves every kernel of a toolchain in an explain run (insitu/worker.py). The
placeholders it made (``torch``) and the library names it bound to Triton (``mypkg.utils.tl``) were
kept for the worker's life and reported with every later compile: a kernel that never imports torch
was reported as needing a torch stand-in, and a plain kernel as compiled with a library's ``tl``. Here
real kernels in separate files compile in one ``kt.explain`` run, in one worker (``jobs=1``) (a real Triton 3.4.0 toolchain, real
ptxas, no GPU), in spec order: each one's JSON lists exactly what its module needed, a second kernel
of a cached module still lists its module's, and a third file importing the already-made torch
placeholder lists it too (an import that no finder sees).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import ktriage.api as kt
from ktriage.report.explain import to_json
from tests.compile.test_library_reexports import UTILS, _package

pytestmark = pytest.mark.slow

BODY = """

@triton.jit
def {name}(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * {factor}, mask=mask)
"""
WITH_TORCH = "import torch\nimport triton\nimport triton.language as tl\n" + BODY
PLAIN = "import triton\nimport triton.language as tl\n" + BODY
ARGS = (
    '[kernel.args]\nx_ptr = { dtype = "fp32", shape = [1024] }\nout_ptr = { dtype = "fp32", shape = [1024] }\n'
    "n = 1024\nBLOCK = {block}\n"
)


def _entry(name: str, source: str, block: int = 256) -> str:
    return f'[[kernel]]\nname = "{name}"\nsource = "{source}"\ngrid = [4]\n' + ARGS.replace("{block}", str(block))


def test_each_kernel_lists_only_its_own_modules_stand_ins_and_reexports(toolchain, tmp_path: Path) -> None:
    torch_file = tmp_path / "uses_torch.py"
    torch_file.write_text(WITH_TORCH.format(name="torch_kernel", factor="2.0"))
    plain_file = tmp_path / "plain.py"
    plain_file.write_text(PLAIN.format(name="plain_kernel", factor="3.0"))
    other_torch = tmp_path / "also_torch.py"
    other_torch.write_text(WITH_TORCH.format(name="other_torch_kernel", factor="4.0"))
    reexporting = _package(tmp_path / "lib", UTILS)  # mypkg/ops/scale.py: `from mypkg.utils import tl, triton`
    spec = tmp_path / "spec.toml"
    spec.write_text(
        "\n".join(
            [
                _entry("torch_first", f"{torch_file}:torch_kernel"),
                _entry("reexporting", f"{reexporting}:scale_kernel"),
                _entry("plain", f"{plain_file}:plain_kernel"),
                _entry("torch_again", f"{torch_file}:torch_kernel", block=128),  # its module is cached
                _entry("other_torch", f"{other_torch}:other_torch_kernel"),  # torch's placeholder exists
            ]
        )
    )
    toolchain("triton==3.4.0")
    # jobs=1: one compile worker for the toolchain, so every kernel compiles in it, in spec order
    report = kt.explain(target=spec, toolchains=["triton==3.4.0"], jobs=1)
    assert not report.result.failures, report.result.failures
    kernels = to_json(report.result, report.findings)["kernels"]
    artifacts = {}
    for kernel in kernels:  # type: ignore[union-attr]
        (cell,) = kernel["results"].values()  # type: ignore[index,union-attr]
        artifacts[kernel["name"]] = cell["artifact"]  # type: ignore[index,call-overload]
    imports = {name: a["placeholder_imports"] for name, a in artifacts.items()}
    assert imports == {
        "torch_first": ["torch"],
        "reexporting": [],
        "plain": [],
        "torch_again": ["torch"],
        "other_torch": ["torch"],
    }, imports
    reexported = {name: a["triton_reexports"] for name, a in artifacts.items()}
    assert reexported == {
        "torch_first": [],
        "reexporting": ["mypkg.utils.tl -> triton.language", "mypkg.utils.triton -> triton"],
        "plain": [],
        "torch_again": [],
        "other_torch": [],
    }, reexported
