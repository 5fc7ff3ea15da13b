"""Spec TOML files: the issue's format, defaults, round trip, and errors that name file, key and fix."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from ktriage.errors import KtriageError
from ktriage.spec.toml_file import dump_spec_toml, dump_specs_toml, load_spec_file

KERNEL = textwrap.dedent(
    """
    import triton
    import triton.language as tl

    @triton.jit
    def my_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr = True):
        pass
    """
)
ISSUE_EXAMPLE = textwrap.dedent(
    """
    [kernel]
    source = "kernels/k.py:my_kernel"   # a file path relative to the spec file
    target = "sm_90"
    [kernel.signature]
    x_ptr = "*fp32"
    out_ptr = "*fp32"
    n = "i32"
    BLOCK = "constexpr"
    EVEN = "constexpr"
    [kernel.constexprs]
    BLOCK = 1024
    [kernel.options]
    num_warps = 4
    num_stages = 3
    """
)


@pytest.fixture()
def spec_dir(tmp_path: Path) -> Path:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.py").write_text(KERNEL)
    return tmp_path


def _write(spec_dir: Path, text: str) -> Path:
    path = spec_dir / "spec.toml"
    path.write_text(text)
    return path


def test_issue_format_loads_with_defaults(spec_dir: Path) -> None:
    (spec,) = load_spec_file(_write(spec_dir, ISSUE_EXAMPLE))
    assert spec.source == f"{(spec_dir / 'kernels' / 'k.py').resolve()}:my_kernel"
    assert spec.name == "my_kernel"
    assert spec.constexprs == {"BLOCK": 1024, "EVEN": True}  # EVEN from the source default
    assert spec.divisible_by_16 == ("x_ptr", "out_ptr", "n")  # default: every pointer and int
    assert (spec.num_warps, spec.num_stages, spec.target) == (4, 3, "sm_90")


def test_explicit_specialize_and_round_trip(spec_dir: Path) -> None:
    text = ISSUE_EXAMPLE + '[kernel.specialize]\ndivisible_by_16 = ["x_ptr"]\nequal_to_1 = ["n"]\n'
    (spec,) = load_spec_file(_write(spec_dir, text))
    assert spec.divisible_by_16 == ("x_ptr",)
    assert spec.signature["n"] == "constexpr" and spec.constexprs["n"] == 1 and spec.equal_to_1 == ("n",)
    spec = spec.replace(
        grid=(8, 2),
        maxnreg=128,
        meta={"op": "x", "shape": {"M": 4, "N": 8}},
        constexprs={**spec.constexprs, "BLOCK": None},
    )
    again = spec_dir / "again.toml"
    again.write_text(dump_spec_toml(spec, relative_to=spec_dir))
    assert 'source = "kernels/k.py:my_kernel"' in again.read_text()
    assert load_spec_file(again) == [spec]


def test_several_kernels(spec_dir: Path) -> None:
    (one,) = load_spec_file(_write(spec_dir, ISSUE_EXAMPLE))
    two = one.replace(name="second", num_warps=8)
    path = spec_dir / "many.toml"
    path.write_text(dump_specs_toml([one, two]))
    assert load_spec_file(path) == [one, two]


@pytest.mark.parametrize(
    ("edit", "problem", "fix"),
    [
        (
            lambda t: t.replace("num_stages = 3", "num_stage = 3"),
            "[kernel] options: unknown key 'num_stage'",
            "num_stages",
        ),
        (
            lambda t: t.replace('n = "i32"\n', ""),
            "signature lists 4 arguments but my_kernel takes 5",
            "add `n` (type i32)",
        ),
        (lambda t: t.replace("BLOCK = 1024", ""), "constexpr parameter 'BLOCK' has no value", "BLOCK = <value>"),
        (lambda t: t.replace('"sm_90"', '"sm_9"'), "unknown target 'sm_9'", "sm_90"),
        (lambda t: t.replace("k.py:my_kernel", "missing.py:my_kernel"), "missing.py does not exist", "relative"),
        (lambda t: t.replace("[kernel.options]", "[kernel.option]"), "[kernel] table: unknown key 'option'", "options"),
        (
            lambda t: t.replace("num_warps = 4", 'num_warps = "4"'),
            "options.num_warps: expected int, got str",
            "num_warps = 4",
        ),
        (
            lambda t: t + '[kernel.specialize]\ndivisible_by_16 = "x_ptr"\n',
            "specialize.divisible_by_16: expected array, got str",
            '["x_ptr", "n"]',
        ),
        (lambda t: t.replace("[kernel]", "[kernal]"), "top level: unknown key 'kernal'", "under [kernel]"),
        (  # a value of a table of names (msgspec's path constexprs[...]): its table's fix, not [kernel]'s
            lambda t: t.replace("BLOCK = 1024", "BLOCK = 99999999999999999999"),
            "constexprs[...]: expected int <= 9223372036854775807",
            "write [kernel.constexprs] with a number",
        ),
        (lambda t: "x = 1\n", "no [kernel] table", "[[kernel]]"),
        (lambda t: t.replace("BLOCK = 1024", "BLOCK = "), "not valid TOML", "TOML syntax"),
    ],
)
def test_errors_name_file_key_and_fix(spec_dir: Path, edit, problem, fix) -> None:
    path = _write(spec_dir, edit(ISSUE_EXAMPLE))
    with pytest.raises(KtriageError) as info:
        load_spec_file(path)
    assert str(path) in info.value.problem
    assert problem in info.value.problem
    assert fix in (info.value.fix or "")


# ------------------------------------------------------------------ one bad kernel among several


def _several(edit_second: Callable[[str], str] = lambda t: t) -> str:
    """The issue example as two ``[[kernel]]`` tables, the second named "second" and edited."""
    table = ISSUE_EXAMPLE.replace("[kernel]", "[[kernel]]")
    return table + "\n" + edit_second(table.replace("[[kernel]]", '[[kernel]]\nname = "second"', 1))


@pytest.mark.parametrize(
    ("edit", "problem", "fix"),
    [
        (lambda t: t.replace(":my_kernel", ":my_kernle"), "defines no function 'my_kernle'", "did you mean my_kernel"),
        (lambda t: t.replace("k.py:", "gone.py:"), "gone.py does not exist", "fix the path"),
        (lambda t: t.replace('n = "i32"\n', ""), "signature lists 4 arguments", "add `n` (type i32)"),
        (lambda t: t.replace("num_warps = 4", "num_warps = 64"), "options.num_warps: expected int <= 32", "1 to 32"),
        (lambda t: t.replace('target = "sm_90"', 'targte = "sm_90"'), "unknown key 'targte'", "valid keys are"),
    ],
)
def test_a_bad_kernel_leaves_the_others_loaded(spec_dir: Path, edit, problem, fix) -> None:
    """One kernel that does not load (a typo in its function, its file, its signature or a field) is that
    kernel's failure: the others load, and it is named with its table, the problem and the fix. Before,
    it refused the whole file and the good kernels had no result."""
    from ktriage.spec.toml_file import read_spec_file

    path = _write(spec_dir, _several(edit))
    loaded = read_spec_file(path)
    assert [s.name for s in loaded.specs] == ["my_kernel"]
    (bad,) = loaded.unloaded
    assert bad.spec.name == "second" and [type(k).__name__ for k in loaded.kernels] == ["KernelSpec", "UnloadedKernel"]
    assert bad.error.problem.startswith(f"{path}: [[kernel]] #2")
    assert problem in bad.error.problem and fix in (bad.error.fix or "")
    with pytest.raises(KtriageError) as info:  # the strict reader (tune, bisect) still refuses it, as before
        load_spec_file(path)
    assert info.value.problem == bad.error.problem


def _bad_text(edits: list[Callable[[str], str]], names: list[str] | None = None) -> str:
    """``[[kernel]]`` tables named k0, k1, ... (or ``names``), each one edited to fail."""
    table = ISSUE_EXAMPLE.replace("[kernel]", "[[kernel]]")
    names = names or [f"k{i}" for i in range(len(edits))]
    return "\n".join(e(table.replace("[[kernel]]", f'[[kernel]]\nname = "{n}"', 1)) for n, e in zip(names, edits))


def _bad_tables(spec_dir: Path, edits: list[Callable[[str], str]], names: list[str] | None = None) -> Path:
    return _write(spec_dir, _bad_text(edits, names))


TYPO: Callable[[str], str] = lambda t: t.replace(":my_kernel", ":my_kernle")  # noqa: E731
GONE: Callable[[str], str] = lambda t: t.replace("k.py:", "gone.py:")  # noqa: E731
WARPS: Callable[[str], str] = lambda t: t.replace("num_warps = 4", "num_warps = 64")  # noqa: E731


def test_a_file_none_of_whose_kernels_loads_says_the_file_once_and_groups_the_same_error(spec_dir: Path) -> None:
    """Three kernels with the same typo: the file once, one line naming the three, the fix once. Before,
    the first kernel's error was the message and the others' were joined in its details, each with the
    spec file's path and table and the same fix again: one long line."""
    from ktriage.spec.toml_file import NothingLoads, read_spec_file

    path = _bad_tables(spec_dir, [TYPO, TYPO, TYPO])
    with pytest.raises(NothingLoads) as info:
        read_spec_file(path)
    exc = info.value
    assert exc.problem == f"{path}: none of its kernels loads (3 kernels, 1 error)", exc.problem
    assert exc.fix == "did you mean my_kernel?"
    assert (
        exc.details
        == f"3 kernels (k0, k1, k2): {(spec_dir / 'kernels' / 'k.py').resolve()} defines no function 'my_kernle'"
    )
    assert str(exc).count(str(path)) == 1 and [k.spec.name for k in exc.unloaded] == ["k0", "k1", "k2"]


def test_a_file_none_of_whose_kernels_loads_gives_each_error_one_line_with_its_fix(spec_dir: Path) -> None:
    """Different errors: one line each (the same ones grouped), each kernel named, each line's fix
    after it, the spec file's path and table never on a line; the fix line says to fix each."""
    from ktriage.spec.toml_file import read_spec_file

    path = _bad_tables(spec_dir, [TYPO, GONE, TYPO, WARPS])
    with pytest.raises(KtriageError) as info:
        read_spec_file(path)
    exc = info.value
    assert exc.problem == f"{path}: none of its kernels loads (4 kernels, 3 errors)", exc.problem
    assert exc.fix == "fix each error below, as its line says"
    lines = (exc.details or "").splitlines()
    assert [line.split(":", 1)[0] for line in lines] == ["2 kernels (k0, k2)", "k1", "k3"], lines
    assert lines[0].endswith("defines no function 'my_kernle' — fix: did you mean my_kernel?"), lines[0]
    assert "gone.py does not exist — fix: fix the path" in lines[1], lines[1]
    assert lines[2].startswith("k3: options.num_warps: expected int <= 32 — fix: num_warps"), lines[2]
    assert not any(str(path) in line or "[[kernel]]" in line for line in lines), lines


def test_kernels_of_one_name_are_told_apart_by_their_table(spec_dir: Path) -> None:
    """A file may repeat a name: each kernel is still named, with its table's number."""
    from ktriage.spec.toml_file import read_spec_file

    path = _bad_tables(spec_dir, [TYPO, TYPO, GONE], names=["a", "b", "a"])
    with pytest.raises(KtriageError) as info:
        read_spec_file(path)
    assert (info.value.details or "").startswith("2 kernels (a #1, b): "), info.value.details
    assert "\na #3: kernel source file" in (info.value.details or ""), info.value.details


def test_kernels_of_one_name_are_told_apart_wherever_the_file_is(tmp_path: Path) -> None:
    """The table's number was read back out of each kernel's error text, after the first ': ': a spec
    file in a folder whose name holds ': ' (``run: 2/spec.toml``) lost it, and two kernels named ``a``
    read "2 kernels (a, a)". The number is now the position stored where the kernel is read."""
    from ktriage.spec.toml_file import read_spec_file

    folder = tmp_path / "run: 2"
    (folder / "kernels").mkdir(parents=True)
    (folder / "kernels" / "k.py").write_text(KERNEL)
    path = _bad_tables(folder, [TYPO, TYPO, GONE], names=["a", "b", "a"])
    with pytest.raises(KtriageError) as info:
        read_spec_file(path)
    assert (info.value.details or "").startswith("2 kernels (a #1, b): "), info.value.details
    assert "\na #3: kernel source file" in (info.value.details or ""), info.value.details


def test_a_selection_none_of_which_loads_says_so(spec_dir: Path) -> None:
    """``--input`` choosing only kernels that do not load (the file has one that loads): the message
    says "the selected kernels", not "its kernels", and names only those chosen."""
    from ktriage.spec.select import load_selected_specs

    table = ISSUE_EXAMPLE.replace("[kernel]", "[[kernel]]")
    path = _write(spec_dir, table + "\n" + _bad_text([TYPO, TYPO]))
    with pytest.raises(KtriageError) as info:
        load_selected_specs(str(path), ["k0", "k1"])
    assert info.value.problem == f"{path}: none of the selected kernels loads (2 kernels, 1 error)"
    assert (info.value.details or "").startswith("2 kernels (k0, k1): "), info.value.details


def test_a_file_of_one_kernel_that_does_not_load_gives_its_own_error(spec_dir: Path) -> None:
    """Nothing to group: the kernel's own error, with its table, as before."""
    from ktriage.spec.toml_file import read_spec_file

    path = _write(spec_dir, TYPO(ISSUE_EXAMPLE))
    with pytest.raises(KtriageError) as info:
        read_spec_file(path)
    assert info.value.problem.startswith(f"{path}: [kernel]: ") and info.value.fix == "did you mean my_kernel?"


def test_selecting_good_kernels_never_meets_a_bad_one(spec_dir: Path) -> None:
    """``--input`` names kernels of the file: selecting the good one loads it (tune, which tunes one kernel,
    was refused by a typo in another); selecting only the bad one gives its error."""
    from ktriage.spec.select import load_selected_specs

    path = _write(spec_dir, _several(lambda t: t.replace(":my_kernel", ":my_kernle")))
    assert [s.name for s in load_selected_specs(str(path), ["my_kernel"])] == ["my_kernel"]
    with pytest.raises(KtriageError, match="defines no function 'my_kernle'"):
        load_selected_specs(str(path), ["second"])


def test_a_selector_never_selects_by_a_piece_of_a_number(spec_dir: Path) -> None:
    """A spec file of ``osm[N=8192]``, ``osm[N=32768]`` and ``rms[N=4097]``: ``-i 0`` explained
    ``rms[N=4097]`` (the ``0`` of 4097 made it the one name containing the selector), ``-i 1`` and
    ``-i N=819`` explained ``osm[N=8192]``, each a kernel the user never named, without a word. They are
    now refused with the file's names; a word of a name (``rms``) and a whole number (``4097``) still select."""
    from ktriage.spec.select import load_selected_specs

    names = ["osm[N=8192]", "osm[N=32768]", "rms[N=4097]"]
    text = "\n".join(ISSUE_EXAMPLE.replace("[kernel]", f'[[kernel]]\nname = "{n}"', 1) for n in names)
    path = str(_write(spec_dir, text))
    for selector in ("0", "1", "N=819", "409"):
        with pytest.raises(KtriageError, match=rf"no kernel in .* matches inputs \(--input\) '{selector}'") as info:
            load_selected_specs(path, [selector])
        assert "N=4097" in (info.value.fix or ""), info.value.fix
    assert [s.name for s in load_selected_specs(path, ["rms"])] == ["rms[N=4097]"]
    assert [s.name for s in load_selected_specs(path, ["4097"])] == ["rms[N=4097]"]
    assert [s.name for s in load_selected_specs(path, ["N=8192"])] == ["osm[N=8192]"]


def test_a_spec_files_kernel_name_selects_all_its_inputs(spec_dir: Path) -> None:
    """``explain SPEC -i osm`` of a file holding ``osm[N=8192]`` and ``osm[N=32768]`` was refused as 'part
    of 2 kernel names', while a catalog op's kernel name and a workload's ``K7`` select all their inputs.
    The part of a name before ``[`` now selects every input of that kernel; a piece of a name (``os``)
    is still refused as ambiguous, its fix naming the kernels it may mean, and a piece of a number still
    selects nothing."""
    from ktriage.spec.select import load_selected_specs

    names = ["osm[N=8192]", "osm[N=32768]", "rms[N=4097]"]
    text = "\n".join(ISSUE_EXAMPLE.replace("[kernel]", f'[[kernel]]\nname = "{n}"', 1) for n in names)
    path = str(_write(spec_dir, text))
    assert [s.name for s in load_selected_specs(path, ["osm"])] == ["osm[N=8192]", "osm[N=32768]"]
    assert [s.name for s in load_selected_specs(path, ["rms", "osm"])] == names
    with pytest.raises(KtriageError, match="part of 2 kernel names") as info:
        load_selected_specs(path, ["os"])
    assert "every input of a kernel by its name (osm)" in (info.value.fix or ""), info.value.fix
    with pytest.raises(KtriageError, match=r"no kernel in .* matches inputs \(--input\) '0'"):
        load_selected_specs(path, ["0"])
