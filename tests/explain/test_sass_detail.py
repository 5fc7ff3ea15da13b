"""Evidence the base-opcode histogram hides: modifier-level instruction classes and loops.

Recorded real SASS first (tests/data/resources), then real compiles (Triton wheels, bundled ptxas
and cuobjdump/nvdisasm), then explain end to end on the Liger kernels.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ktriage.analyze.resources import SCHEMA_VERSION, Resources
from ktriage.analyze.sass import SassFunction, parse_sass
from ktriage.analyze.sass_loops import find_loops
from ktriage.explain.sass_detail import compare_sass_detail
from tests.triton_compile_for_tests import ATOMIC_SIGNATURE, KERNELS_FILE, CompiledForTest, analyze_compiled

DATA = Path(__file__).resolve().parents[1] / "data" / "resources"


def _sass(name: str, function: str) -> SassFunction:
    return parse_sass((DATA / name).read_text())[function]


def _resources_of_sass(fn: SassFunction) -> Resources:
    """SASS-derived fields from a real listing; the other fields are synthetic (not looked at here)."""
    return Resources(
        kernel_name=fn.name,
        arch=fn.arch,
        registers=32,
        stack_bytes=0,
        spill_store_bytes=None,
        spill_load_bytes=None,
        shared_bytes=0,
        shared_static_bytes=0,
        shared_dynamic_bytes=None,
        local_loads=fn.local_loads,
        local_stores=fn.local_stores,
        sass_opcodes=fn.opcode_histogram(),
        sass_instructions=fn.instruction_count,
        sass_classes=fn.class_histogram(),
        sass_loops=tuple(find_loops(fn)),
    )


# --- instruction classes on recorded SASS ---------------------------------------------------------


def test_classes_keep_modifiers_atomic_3_3_1_vs_3_4_0() -> None:
    old = _sass("atomic-3.3.1.sass", "atomic_kernel").class_histogram()
    new = _sass("atomic-3.4.0.sass", "atomic_kernel").class_histogram()
    assert old["atomic"] == {"REDG.E.ADD.F32.FTZ.RN.STRONG.GPU": 8}
    assert new["atomic"] == {"ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU": 8}
    assert old["global"] == new["global"] == {"LDG.E": 8}
    # the acquire side of the atomic changed too: a CTA membar became an L1 invalidation
    assert old["sync"]["MEMBAR.ALL.CTA"] == 8 and "CCTL.IVALL" not in old["sync"]
    assert new["sync"]["CCTL.IVALL"] == 8 and "MEMBAR.ALL.CTA" not in new["sync"]
    assert "tensor" not in new and list(new) == ["global", "atomic", "sync"]  # table order, present only
    nvdis = _sass("atomic-3.4.0.nvdisasm.sass", "atomic_kernel").class_histogram()
    assert nvdis == new


def test_class_delta_names_redg_to_atomg_with_modifiers_and_who() -> None:
    ref = _resources_of_sass(_sass("atomic-3.3.1.sass", "atomic_kernel"))
    new = _resources_of_sass(_sass("atomic-3.4.0.sass", "atomic_kernel"))
    # The cross matrix of this pair (docs/resources.md): the PTX `atom` instructions are identical, so
    # new PTX + old ptxas gives the old SASS and old PTX + new ptxas the new one.
    detail = compare_sass_detail(ref, new, swap_front=ref, swap_asm=new)
    by_class = {c.name: c for c in detail.classes}
    atomic = by_class["atomic"]
    assert atomic.text() == "REDG.E.ADD.F32.FTZ.RN.STRONG.GPU -8 -> ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU +8"
    assert atomic.attribution == "ptxas"
    assert by_class["sync"].text() == "MEMBAR.ALL.CTA -8 -> CCTL.IVALL +8"
    assert "global" not in by_class  # LDG.E unchanged
    assert detail.main_loop is None  # no loop in this kernel
    data = json.loads(json.dumps(detail.to_json()))
    entry = next(c for c in data["instruction_changes"] if c["class"] == "atomic")
    assert entry["opcodes"] == [
        {"opcode": "ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU", "ref": 0, "new": 8, "delta": 8},
        {"opcode": "REDG.E.ADD.F32.FTZ.RN.STRONG.GPU", "ref": 8, "new": 0, "delta": -8},
    ]
    assert entry["reproduced"] == {"new_ptx_ref_ptxas": 0.0, "ref_ptx_new_ptxas": 1.0}
    # the frontend side would be blamed if the new PTX alone reproduced it
    assert {c.name: c.attribution for c in compare_sass_detail(ref, new, new, ref).classes}["atomic"] == "frontend"


def test_loops_none_in_straight_line_kernels() -> None:
    for name, fn in parse_sass((DATA / "multi-sm90a.sass").read_text()).items():
        assert find_loops(fn) == [], name
    assert find_loops(_sass("atomic-3.4.0.nvdisasm.sass", "atomic_kernel")) == []


SYNTHETIC_NESTED = """
\tcode for sm_90a
\t\tFunction : synthetic_kernel
        /*0000*/                   MOV R0, RZ ;
        /*0010*/                   MOV R1, RZ ;
        /*0020*/                   IADD3 R1, R1, 0x1, RZ ;
        /*0030*/                   MOV R2, RZ ;
        /*0040*/                   LDG.E R3, desc[UR4][R4.64] ;
        /*0050*/                   LDG.E.64 R6, desc[UR4][R8.64] ;
        /*0060*/              @!P1 BRA 0xe0 ;
        /*0070*/                   IADD3 R2, R2, 0x1, RZ ;
        /*0080*/                   ISETP.GE.AND P0, PT, R2, 0x10, PT ;
        /*0090*/              @!P0 BRA 0x40 ;
        /*00a0*/                   STG.E desc[UR4][R4.64], R3 ;
        /*00b0*/                   ISETP.GE.AND P0, PT, R1, 0x10, PT ;
        /*00c0*/              @!P0 BRA 0x20 ;
        /*00d0*/                   EXIT ;
        /*00e0*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR4], R0 ;
        /*00f0*/              @!P1 BRA 0xe0 ;
        /*0100*/                   BRA 0x70 ;
        /*0110*/                   BRA 0x110;
        /*0120*/                   NOP;
"""


def test_synthetic_listing_nested_loops_and_the_main_loop_rule() -> None:
    """A hand-written listing (the shapes ptxas emits: an outer loop, an inner loop with loads, and
    an out-of-line mbarrier spin loop that returns into the inner loop) for the CFG logic."""
    loops = find_loops(parse_sass(SYNTHETIC_NESTED)["synthetic_kernel"])
    assert [(lp.start, lp.end, lp.instructions, lp.depth, lp.innermost, lp.main) for lp in loops] == [
        (0x40, 0x90, 9, 2, False, True),  # inner: 6 in line + the 3 out-of-line instructions
        (0x20, 0xC0, 14, 1, False, False),  # outer: its own 5 + the inner loop's 9
        (0xE0, 0xF0, 2, 3, True, False),  # the spin loop: innermost, but no memory or tensor work
    ]
    assert loops[0].opcodes["LDG"] == 2 and loops[0].span == "0x40..0x90"


# --- real compiles --------------------------------------------------------------------------------


@pytest.mark.slow
def test_reduction_main_loop_holds_the_loads(compiled: dict[str, CompiledForTest]) -> None:
    """red_kernel's `for roffset` loop: XBLOCK*RBLOCK/128 threads loads and adds per iteration."""
    small = analyze_compiled(compiled["red64-3.4.0"])
    big = analyze_compiled(compiled["red256-3.4.0"])
    for res, per_thread in ((small, 64 * 64 // 128), (big, 64 * 256 // 128)):
        loop = res.main_loop
        assert loop is not None and len(res.sass_loops) == 1 and loop.innermost and loop.depth == 1
        assert loop.opcodes["LDG"] == per_thread == res.sass_opcodes["LDG"]
        assert loop.opcodes["FADD"] == per_thread
        assert per_thread < loop.instructions < res.sass_instructions
        assert loop.instructions == (loop.end - loop.start) // 16 + 1  # contiguous body
    assert "LDL" not in small.main_loop.opcodes  # type: ignore[union-attr]
    assert big.main_loop.opcodes["LDL"] > 0 and big.main_loop.opcodes["STL"] > 0  # type: ignore[union-attr]
    data = big.to_json()
    assert data["schema"] == SCHEMA_VERSION == 7 and data["sass_loops"][0]["main"] is True
    assert Resources.from_json(json.dumps(data)) == big


@pytest.mark.slow
def test_atomic_compiles_modifier_delta(compiled: dict[str, CompiledForTest]) -> None:
    old = analyze_compiled(compiled["atomic-3.3.1"])  # ptxas 12.4.99
    new = analyze_compiled(compiled["atomic-3.4.0"])  # ptxas 12.8.93
    atomic = next(c for c in compare_sass_detail(old, new, None, None).classes if c.name == "atomic")
    assert atomic.text() == "REDG.E.ADD.F32.FTZ.RN.STRONG.GPU -8 -> ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU +8"
    assert atomic.attribution == "unknown"  # no cross cells given


@pytest.mark.slow
@pytest.mark.parametrize(
    ("target", "mma", "innermost"), [("sm_80", "HMMA", True), ("sm_90", "HGMMA", True), ("sm_100", "UTCHMMA", False)]
)
def test_matmul_main_loop_is_the_k_loop(target: str, mma: str, innermost: bool, toolchain, shared_compiler) -> None:
    """The tutorial matmul's K loop holds the tensor-core instructions: every mma.sync on sm_80 and
    wgmma on sm_90a; on sm_100a the tcgen05 MMAs of all but the first K step, which ptxas peels, and
    the loop contains an out-of-line mbarrier spin loop, so it is not innermost, and still main)."""
    from ktriage.analyze.artifact import analyze_artifact
    from ktriage.catalog import expand_op
    from ktriage.compile.compiler import Artifact

    spec = expand_op("tutorial.matmul", mode="fwd", target=target, inputs=["0"])[0]
    art = shared_compiler.compile(spec, toolchain("triton==3.4.0"))
    assert isinstance(art, Artifact), art
    res, _ = analyze_artifact(art)
    loop = res.main_loop
    assert loop is not None and loop.innermost is innermost and loop.depth == 1
    total_mma = sum(n for op, n in res.sass_classes["tensor"].items() if op.split(".")[0] == mma)
    if innermost:
        assert loop.opcodes[mma] == total_mma > 0
    else:
        assert 0 < loop.opcodes[mma] < total_mma and any(lp.depth == 2 for lp in res.sass_loops)
    assert loop.opcodes["LDGSTS"] > 0  # the pipelined cp.async loads of the next K tile
    assert 40 < loop.instructions < res.sass_instructions // 2
    assert all(lp.instructions < 20 or lp is loop for lp in res.sass_loops if lp.opcodes.get(mma, 0) == 0)
    # nvdisasm's listing (labels instead of addresses) finds the same loops
    nvdisasm = art.toolchain.cuobjdump.parent / "nvdisasm"
    listing = subprocess.run(
        [str(nvdisasm), "-c", str(art.cubin.cubin_path)], capture_output=True, text=True, check=True
    ).stdout
    assert tuple(find_loops(parse_sass(listing)[art.kernel_name])) == res.sass_loops


@pytest.mark.slow
def test_cached_resources_of_an_older_schema_are_recomputed(toolchain, compiler) -> None:
    from ktriage.analyze.artifact import analyze_artifact
    from ktriage.compile.compiler import Artifact
    from ktriage.spec.model import KernelSpec

    spec = KernelSpec(
        name="atomic_kernel",
        source=f"{KERNELS_FILE}:atomic_kernel",
        signature=ATOMIC_SIGNATURE,
        constexprs={"BLOCK": 1024},
        num_warps=4,
        target="sm_90",
    )
    art = compiler.compile(spec, toolchain("triton==3.4.0"))
    assert isinstance(art, Artifact), art
    fresh, _ = analyze_artifact(art)
    from ktriage.compile.cache import read_sidecar, write_sidecar

    [path] = [p for p in art.cubin.dir.glob("resources-*.json") if not p.name.startswith("resources-abi-")]
    old = read_sidecar(path.parent, path.name)  # a self-hashed cache sidecar (compile/cache.py)
    old = {k: v for k, v in old.items() if k not in ("sass_classes", "sass_loops")} | {"schema": 1}
    write_sidecar(path.parent, path.name, old)
    again, _ = analyze_artifact(art)
    assert again == fresh and again.sass_classes["atomic"] == {"ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU": 8}
    assert read_sidecar(path.parent, path.name)["schema"] == SCHEMA_VERSION


# --- explain end to end ---------------------------------------------------------------------------


@pytest.mark.slow
def test_explain_embedding_names_the_atomic_variants(toolchain, shared_compiler) -> None:
    """Liger 0.5.10 embedding bwd, Triton 3.4.0 frontend: ptxas 12.4.131 REDG vs 12.8.93 ATOMG."""
    from ktriage.catalog import expand_op
    from ktriage.explain.engine import Explainer
    from ktriage.explain.findings import DetailFinding, collect_findings
    from ktriage.report.explain import to_json

    specs = expand_op("liger.embedding", mode="bwd", target="sm_90", inputs=["0"])
    tcs = [toolchain("triton==3.4.0,ptxas==12.4.131"), toolchain("triton==3.4.0")]
    result = Explainer(shared_compiler).run(specs, tcs)
    detail = result.specs[0].comparisons[0].sass_detail
    atomic = next(c for c in detail.classes if c.name == "atomic")
    assert atomic.text() == "REDG.E.ADD.F32x4.FTZ.RN.STRONG.GPU -32 -> ATOMG.E.ADD.F32x4.FTZ.RN.STRONG.GPU +32"
    assert atomic.attribution == "ptxas"
    sync = next(c for c in detail.classes if c.name == "sync")
    assert dict(sync.delta)["MEMBAR.ALL.CTA"] == -32 and dict(sync.delta)["CCTL.IVALL"] == 32
    findings = collect_findings(result)
    [atomic_finding] = [f for f in findings if f.metric == "instructions:atomic"]
    assert isinstance(atomic_finding, DetailFinding) and atomic_finding.direction == "changed"  # a swap
    lines = [f.summary() for f in findings if isinstance(f, DetailFinding)]
    assert any(
        "atomic instructions: REDG.E.ADD.F32x4.FTZ.RN.STRONG.GPU -32 -> ATOMG.E.ADD.F32x4" in s
        and s.endswith("ptxas is responsible.")
        for s in lines
    ), lines
    # the existing findings keep their wording
    assert any(f.summary().startswith("B=32,T=512,D=768,V=1024: ATOMG rises with triton==3.4.0 vs ") for f in findings)
    data = to_json(result, findings)
    comparison = data["kernels"][0]["comparisons"][0]
    assert comparison["sass_detail"]["instruction_changes"][0]["class"] in ("sync", "atomic")
    assert comparison["sass_detail"]["main_loop"] is None  # one program per tile: no loop
    assert data["kernels"][0]["results"][tcs[1].id]["sass_classes"]["atomic"] == {
        "ATOMG.E.ADD.F32x4.FTZ.RN.STRONG.GPU": 32
    }


@pytest.mark.slow
def test_explain_layer_norm_main_loop_grows_with_the_spills(toolchain, shared_compiler) -> None:
    """Liger 0.5.10 layer_norm bwd N=4608: the 3.4.0 frontend's spills land in the row loop."""
    from ktriage.catalog import expand_op
    from ktriage.explain.engine import Explainer
    from ktriage.explain.findings import DetailFinding, collect_findings

    specs = expand_op("liger.layer_norm", mode="bwd", target="sm_90", inputs=["7"])
    result = Explainer(shared_compiler).run(specs, [toolchain("triton==3.3.1"), toolchain("triton==3.4.0")])
    loop = result.specs[0].comparisons[0].sass_detail.main_loop
    assert loop is not None and loop.ref is not None and loop.new is not None
    assert loop.new.instructions > 1.5 * loop.ref.instructions and loop.attribution == "frontend"
    ops = dict(loop.opcode_delta())
    assert ops["LDL"] > 0 and ops["STL"] > 0 and loop.opcode_delta()[0][0] == "LDL"
    assert loop.text().startswith(f"main loop {loop.ref.instructions} -> {loop.new.instructions} instructions (+")
    [finding] = [f for f in collect_findings(result) if f.metric == "main_loop_instructions"]
    assert isinstance(finding, DetailFinding) and finding.direction == "up"
    assert finding.summary().startswith("N=4608: with triton==3.4.0 vs triton==3.3.1, main loop ")
    assert "LDL +" in finding.summary() and finding.summary().endswith("the frontend (Triton/LLVM PTX) is responsible.")
    [local] = [f for f in collect_findings(result) if f.metric == "instructions:local"]
    assert local.direction == "up" and "local memory instructions: LDL.LU +" in local.summary()
