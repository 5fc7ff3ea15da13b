"""Resources stage: parsers on recorded real tool output, then `analyze` on fresh real compiles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ktriage.analyze.cuobjdump import parse_elf_flags, parse_resource_usage
from ktriage.analyze.ptxas_log import parse_ptxas_log
from ktriage.analyze.resources import Resources, analyze, driver_static_shared
from ktriage.analyze.sass import parse_instruction, parse_sass
from ktriage.errors import KtriageError
from ktriage.ptx import parse_ptx
from tests.triton_compile_for_tests import CompiledForTest, analyze_compiled

DATA = Path(__file__).resolve().parents[1] / "data" / "resources"


def read(name: str) -> str:
    return (DATA / name).read_text()


# --- ptxas -v log --------------------------------------------------------------------------------


def test_ptxas_log_12_8_spilling_kernel() -> None:
    info = parse_ptxas_log(read("red64x256-3.4.0.ptxas.log")).function("red_kernel")
    assert (info.registers, info.stack_frame_bytes) == (255, 88)
    assert (info.spill_store_bytes, info.spill_load_bytes) == (128, 96)
    assert info.barriers == 1 and info.cumulative_stack_bytes == 88
    assert info.is_entry and info.arch == "sm_90a"


def test_ptxas_log_12_4_has_no_barriers() -> None:
    log = parse_ptxas_log(read("red64x256-3.3.1.ptxas.log"))
    info = log.function("red_kernel")
    assert (info.registers, info.spill_store_bytes, info.spill_load_bytes) == (255, 128, 96)
    assert info.barriers is None  # 12.4 does not print "used N barriers"
    assert log.gmem_bytes == 0


def test_ptxas_log_no_spills() -> None:
    info = parse_ptxas_log(read("red64x64-3.4.0.ptxas.log")).function("red_kernel")
    assert (info.registers, info.stack_frame_bytes, info.spill_store_bytes) == (168, 0, 0)
    assert info.cumulative_stack_bytes is None


@pytest.mark.parametrize("log", ["multi-ptxas12.4.log", "multi-ptxas12.8.log"])
def test_ptxas_log_several_functions(log: str) -> None:
    parsed = parse_ptxas_log(read(log))
    assert set(parsed.functions) == {"shared_kernel", "helper", "local_array_kernel"}
    shared = parsed.function("shared_kernel")
    assert (shared.registers, shared.smem_bytes) == (8, 4096)
    arr = parsed.function("local_array_kernel")
    # a 600-byte local array: stack frame without a single spill byte
    assert (arr.registers, arr.stack_frame_bytes, arr.spill_store_bytes) == (10, 600, 0)
    helper = parsed.function("helper")
    assert not helper.is_entry and helper.registers is None and helper.stack_frame_bytes == 0
    if log.endswith("12.8.log"):
        assert (shared.barriers, arr.barriers) == (1, 0)
    with pytest.raises(KtriageError, match="no function named 'nope'"):
        parsed.function("nope")


def test_ptxas_log_older_cmem_format() -> None:
    # the `Used` line form of older ptxas releases (quoted in csarofeen/pytorch#2317)
    text = (
        "ptxas info    : Compiling entry function 'k' for 'sm_80'\n"
        "ptxas info    : Function properties for k\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 24 registers, 16 bytes smem, 480 bytes cmem[0], 8 bytes cmem[2]\n"
    )
    info = parse_ptxas_log(text).function("k")
    assert (info.registers, info.smem_bytes, info.cmem_bytes) == (24, 16, {0: 480, 2: 8})


# --- cuobjdump -----------------------------------------------------------------------------------


def test_resource_usage_single_and_multi() -> None:
    red = parse_resource_usage(read("red64x256-3.4.0.resusage.txt"))["red_kernel"]
    assert (red.registers, red.stack_bytes, red.shared_bytes, red.local_bytes) == (255, 88, 1024, 0)
    assert red.constant_bytes == {0: 560}
    multi = parse_resource_usage(read("multi-sm90a.resusage.txt"))
    assert set(multi) == {"shared_kernel", "local_array_kernel"}
    assert (multi["shared_kernel"].shared_bytes, multi["local_array_kernel"].stack_bytes) == (5120, 600)


def test_elf_flags_give_barriers_and_smem() -> None:
    flags = parse_elf_flags(read("multi-sm90a.elf.txt"))
    assert (flags["shared_kernel"].barriers, flags["shared_kernel"].smem_bytes) == (1, 5120)
    assert flags["local_array_kernel"].barriers == 0


def test_driver_static_shared_removes_sm90_reservation() -> None:
    # h200_shared_check.json: driver static shared 4096 for SHARED:5120, 0 for Triton's SHARED:1024
    check = json.loads(read("h200_shared_check.json"))
    assert check["multi.cubin"]["static_shared"] == driver_static_shared(5120, "sm_90a") == 4096
    assert check["red64x64-3.4.0.cubin"]["static_shared"] == driver_static_shared(1024, "sm_90a") == 0
    assert driver_static_shared(4096, "sm_80") == 4096


# --- SASS ----------------------------------------------------------------------------------------


def test_parse_instruction_strips_predicate_and_modifiers() -> None:
    inst = parse_instruction(0x130, "@!P0 LDG.E R0, desc[UR4][R4.64]")
    assert (inst.predicate, inst.opcode, inst.base_opcode, inst.operands) == (
        "@!P0",
        "LDG.E",
        "LDG",
        "R0, desc[UR4][R4.64]",
    )
    atom = parse_instruction(0, "ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU PT, RZ, desc[UR4][R6.64], R0")
    assert atom.base_opcode == "ATOMG" and atom.predicate is None


def test_sass_histograms_atomic_3_3_1_vs_3_4_0() -> None:
    old = parse_sass(read("atomic-3.3.1.sass"))["atomic_kernel"]
    new = parse_sass(read("atomic-3.4.0.sass"))["atomic_kernel"]
    assert old.arch == new.arch == "sm_90a"
    assert old.opcode_histogram().get("REDG") == 8 and "ATOMG" not in old.opcode_histogram()
    assert new.opcode_histogram().get("ATOMG") == 8 and "REDG" not in new.opcode_histogram()
    assert new.opcode_histogram(with_modifiers=True)["ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU"] == 8
    # padding: the trailing `BRA <self>` and NOPs are not counted
    assert new.padding > 1 and "NOP" not in new.opcode_histogram()
    assert (old.instruction_count, new.instruction_count) == (112, 118)
    assert new.opcode_histogram()["EXIT"] >= 1


def test_cuobjdump_and_nvdisasm_listings_agree() -> None:
    a = parse_sass(read("atomic-3.4.0.sass"))["atomic_kernel"]
    b = parse_sass(read("atomic-3.4.0.nvdisasm.sass"))["atomic_kernel"]
    # same instructions; only branch targets are spelled differently (`0x3e0` vs `` `(.L_x_0) ``)
    assert [(i.address, i.predicate, i.opcode) for i in a.instructions] == [
        (i.address, i.predicate, i.opcode) for i in b.instructions
    ]
    assert a.padding == b.padding and b.arch == "sm_90a"


def test_sass_local_memory_counts() -> None:
    funcs = parse_sass(read("multi-sm90a.sass"))
    arr = funcs["local_array_kernel"]
    assert (arr.local_loads, arr.local_stores) == (1, 1)
    assert funcs["shared_kernel"].local_loads == 0 and funcs["shared_kernel"].opcode_histogram()["STS"] == 2


# --- PTX -----------------------------------------------------------------------------------------


def test_ptx_header_params_and_registers() -> None:
    mod = parse_ptx(read("atomic-3.4.0.ptx"))
    assert (mod.version, mod.target, mod.address_size) == ("8.7", "sm_90a", 64)
    fn = mod.function("atomic_kernel")
    assert fn.is_entry and fn.reqntid == (128,) and fn.maxnreg is None
    assert [(p.ptx_type, p.is_pointer) for p in fn.params] == [
        ("u64", True),
        ("u64", True),
        ("u32", False),
        ("u64", True),  # Triton's hidden global scratch pointer
    ]
    assert fn.registers == {"pred": 17, "b32": 47, "b64": 23} and fn.registers_total == 87
    assert fn.instructions == 83
    assert parse_ptx(read("atomic-3.3.1.ptx")).function("atomic_kernel").reqntid == (128, 1, 1)


def test_ptx_several_functions_bounds_and_nested_scopes() -> None:
    mod = parse_ptx(read("multi.ptx"))
    assert [f.name for f in mod.functions] == ["helper", "local_array_kernel", "shared_kernel"]
    assert [f.name for f in mod.entries] == ["local_array_kernel", "shared_kernel"]
    sk = mod.function("shared_kernel")
    assert (sk.maxnreg, sk.reqntid) == (64, (256, 1, 1))
    # %ret inside the `{ }` call scope is not a top-level declaration
    assert sk.registers == {"pred": 2, "b32": 10, "f32": 3, "b64": 4}
    assert sk.instructions == 22  # `.param` declarations in the call scope are not instructions
    assert mod.function("local_array_kernel").instructions == 17
    assert mod.function("helper").params[0].name == "x"


# --- Resources JSON ------------------------------------------------------------------------------


def _sample_resources() -> Resources:
    """Synthetic values, only to test the JSON round trip."""
    return Resources(
        kernel_name="k",
        arch="sm_90a",
        registers=255,
        stack_bytes=88,
        spill_store_bytes=128,
        spill_load_bytes=None,
        shared_bytes=1024,
        shared_static_bytes=0,
        shared_dynamic_bytes=1024,
        local_loads=24,
        local_stores=32,
        sass_opcodes={"FADD": 3, "LDL": 24},
        ptx_registers={"b32": 7},
        ptx_registers_total=7,
    )


def test_resources_json_round_trip() -> None:
    r = _sample_resources()
    text = json.dumps(r.to_json())
    assert Resources.from_json(text) == r
    assert Resources.from_json(r.to_json()) == r
    assert r.has_spills is None and r.triton_n_spills == 22
    with pytest.raises(KtriageError, match="schema 99"):
        Resources.from_json({**r.to_json(), "schema": 99})


# --- analyze() on real compiles (Triton wheels + bundled ptxas/cuobjdump) ------------------------


def _analyze(c: CompiledForTest) -> Resources:
    return analyze_compiled(c)


@pytest.mark.slow
def test_analyze_64x256_spills_64x64_does_not(compiled: dict[str, CompiledForTest]) -> None:
    big = _analyze(compiled["red256-3.4.0"])
    small = _analyze(compiled["red64-3.4.0"])
    assert big.registers == 255 and big.spill_store_bytes and big.spill_store_bytes > 0
    assert big.has_spills is True and big.local_stores > 0 and big.local_loads > 0
    assert big.stack_bytes >= big.spill_store_bytes // 2  # spilled values live in the stack frame
    assert small.registers < 255 and small.has_spills is False
    assert (small.stack_bytes, small.local_loads, small.local_stores) == (0, 0, 0)
    assert big.barriers == 1 and big.arch == "sm_90a"
    # shared: Triton's dynamic size; the cubin's SHARED:1024 is the sm_90 reservation
    assert (small.shared_dynamic_bytes, small.shared_static_bytes, small.shared_bytes) == (512, 0, 512)
    assert big.sass_instructions > small.sass_instructions > 100


@pytest.mark.slow
def test_analyze_matches_tritons_own_cubin(compiled: dict[str, CompiledForTest], tmp_path: Path) -> None:
    c = compiled["red256-3.4.0"]
    ours = _analyze(c)
    theirs = analyze(
        c.triton_cubin,
        cuobjdump=c.cuobjdump,
        ptxas_log=None,
        ptx=None,
        kernel_name=c.name,
        triton_shared=c.shared,
    )
    assert (theirs.registers, theirs.stack_bytes, theirs.sass_opcodes) == (
        ours.registers,
        ours.stack_bytes,
        ours.sass_opcodes,
    )
    # without a log, spill bytes are unknown, never guessed
    assert theirs.spill_store_bytes is None and theirs.spill_load_bytes is None and theirs.has_spills is None
    assert theirs.ptx_registers == {} and theirs.ptx_registers_total is None


@pytest.mark.slow
def test_analyze_atomic_opcodes_by_ptxas_version(compiled: dict[str, CompiledForTest]) -> None:
    old = _analyze(compiled["atomic-3.3.1"])  # ptxas 12.4.99
    new = _analyze(compiled["atomic-3.4.0"])  # ptxas 12.8.93
    assert old.sass_opcodes.get("REDG", 0) > 0 and "ATOMG" not in old.sass_opcodes
    assert new.sass_opcodes.get("ATOMG", 0) > 0 and "REDG" not in new.sass_opcodes


@pytest.mark.slow
def test_analyze_ptx_register_classes_3_3_1_vs_3_4_0(compiled: dict[str, CompiledForTest]) -> None:
    old = _analyze(compiled["red256-3.3.1"])
    new = _analyze(compiled["red256-3.4.0"])
    assert old.ptx_registers.get("f32", 0) > 0  # LLVM still had float registers
    assert "f32" not in new.ptx_registers and new.ptx_registers["b32"] > 0
    assert old.ptx_registers_total and old.ptx_registers_total > 255  # virtual, not allocated
    assert old.registers == new.registers == 255


@pytest.mark.slow
def test_analyze_wrong_log_or_name_is_a_clear_error(compiled: dict[str, CompiledForTest]) -> None:
    c, other = compiled["red256-3.4.0"], compiled["red64-3.4.0"]
    with pytest.raises(KtriageError, match="ptxas log says red_kernel uses 168 registers"):
        analyze(
            c.cubin,
            cuobjdump=c.cuobjdump,
            ptxas_log=other.ptxas_log,
            ptx=None,
            kernel_name=c.name,
            triton_shared=c.shared,
        )
    with pytest.raises(KtriageError, match="no function named 'missing'"):
        analyze(
            c.cubin,
            cuobjdump=c.cuobjdump,
            ptxas_log=None,
            ptx=None,
            kernel_name="missing",
            triton_shared=None,
        )


def test_to_json_equals_what_asdict_gave_for_every_cached_field() -> None:
    """to_json copies the fields by hand (asdict's deepcopy was a third of a warm explain): the dict is
    the one asdict made, key order included, and a copy (editing it leaves the Resources alone)."""
    from dataclasses import asdict

    from ktriage.analyze.resources import SCHEMA_VERSION
    from ktriage.analyze.sass_loops import SassLoop

    loop = SassLoop(start=16, end=96, instructions=6, depth=1, innermost=True, main=True, opcodes={"FFMA": 4, "BRA": 1})
    res = Resources(
        kernel_name="k",
        arch="sm_90a",
        registers=40,
        stack_bytes=8,
        spill_store_bytes=None,
        spill_load_bytes=0,
        shared_bytes=1040,
        shared_static_bytes=16,
        shared_dynamic_bytes=1024,
        local_loads=1,
        local_stores=2,
        sass_opcodes={"FFMA": 4, "BRA": 1},
        sass_opcodes_detailed={"FFMA": 4, "BRA.U": 1},
        sass_instructions=9,
        ptx_registers={"f32": 10, "pred": 2},
        ptx_registers_total=12,
        ptx_instructions=30,
        barriers=1,
        cumulative_stack_bytes=None,
        sass_classes={"memory": {"LDG.E.128": 2}, "sync": {"BAR.SYNC": 1}},
        sass_loops=(loop,),
    )
    old = asdict(res)
    old["sass_loops"] = [loop.to_json()]
    want = {"schema": SCHEMA_VERSION, **old}
    got = res.to_json()
    assert json.dumps(got) == json.dumps(want)
    got["sass_classes"]["memory"]["LDG.E.128"] = 99
    got["sass_opcodes"]["FFMA"] = 99
    assert res.sass_classes["memory"]["LDG.E.128"] == 2 and res.sass_opcodes["FFMA"] == 4
    assert Resources.from_json(res.to_json()) == res


@pytest.mark.slow
def test_nvdisasm_without_dataflow_gives_the_resources_cuobjdump_gives(compiled: dict[str, CompiledForTest]) -> None:
    """analyze() disassembles with ``nvdisasm -c -ndf -gi`` where the toolchain has it (a third faster than
    ``cuobjdump -sass``): every fact it reads from the SASS is the same as through cuobjdump, and the
    per-line counts (only nvdisasm prints the line table) add up to the kernel's totals."""
    from dataclasses import replace

    for name, c in compiled.items():
        nvdisasm = c.bin_dir / "nvdisasm"
        if not nvdisasm.is_file():
            continue
        via_cuobjdump = analyze_compiled(c)
        via_nvdisasm = analyze(
            c.cubin,
            cuobjdump=c.cuobjdump,
            ptxas_log=c.ptxas_log,
            ptx=c.ptx.read_text(),
            kernel_name=c.name,
            triton_shared=c.shared,
            nvdisasm=nvdisasm,
        )
        assert replace(via_nvdisasm, source_lines=()) == via_cuobjdump, name
        lines = via_nvdisasm.source_lines
        assert lines and not via_cuobjdump.source_lines, name
        assert sum(s.instructions for s in lines) == via_nvdisasm.sass_instructions, name
        assert sum(s.local_loads for s in lines) == via_nvdisasm.local_loads, name
    # a disassembler that fails falls back to cuobjdump's listing (the same disassembler, run for us)
    c = next(iter(compiled.values()))
    assert analyze(
        c.cubin,
        cuobjdump=c.cuobjdump,
        ptxas_log=c.ptxas_log,
        ptx=c.ptx.read_text(),
        kernel_name=c.name,
        triton_shared=c.shared,
        nvdisasm=Path("/bin/false"),
    ) == analyze_compiled(c)
