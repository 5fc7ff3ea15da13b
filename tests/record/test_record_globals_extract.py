"""The own-source compile with recorded module-level values (kernel_source.extract's ``values`` and
``defaults``; the snapshot's globals file): pure text transformations, no compile. The real
recording and compile of the same patterns is tests/record/test_record_globals.py."""

from __future__ import annotations

import ast

from ktriage.insitu import kernel_source, launch_hook

MODULE = """\
import math
from servingish.platforms import current_platform
from servingish.triton_utils import tl, triton

float8_info = current_platform.fp8_info()
IS_HIP = tl.constexpr(current_platform.is_rocm())


@triton.jit
def merge_kernel(out_ptr, n, BLOCK: tl.constexpr, USE_FP8: tl.constexpr = False,
                 FP8_MIN: tl.constexpr = float8_info.min,
                 FP8_MAX: tl.constexpr = (
                     float8_info.max),
                 OUT_DTYPE: tl.constexpr = tl.float16):
    offs = tl.arange(0, BLOCK)
    if IS_HIP:
        offs = offs * 2
    tl.store(out_ptr + offs, tl.minimum(tl.maximum(offs, FP8_MIN), FP8_MAX), mask=offs < n)
"""

VALUES = {"tl": {"module": "triton.language"}, "triton": {"module": "triton"}, "IS_HIP": {"constexpr": False}}
DEFAULTS = {"USE_FP8": False, "FP8_MIN": -448.0, "FP8_MAX": 448.0, "OUT_DTYPE": {"tl": "float16"}}


def _sources() -> tuple[dict[str, str], dict[str, str]]:
    values, defaults = kernel_source.recorded_sources({"values": VALUES, "defaults": {"merge_kernel": DEFAULTS}})
    return values, defaults["merge_kernel"]


def test_recorded_values_stand_where_their_statements_stood() -> None:
    values, defaults = _sources()
    text, names = kernel_source.extract(MODULE, "merge_kernel", package="servingish", values=values, defaults=defaults)
    out = text.splitlines()
    original = MODULE.splitlines()
    # the host helpers' imports and the statements that called them are gone
    assert "current_platform" not in text and "float8_info" not in text and "servingish" not in text
    # the re-exported modules and the constexpr the kernel reads, on the lines of their statements
    assert out[2] == (
        "tl = __import__('importlib').import_module('triton.language'); "
        "triton = __import__('importlib').import_module('triton')"
    )
    assert out[5] == "IS_HIP = __import__('triton.language').language.constexpr(False)"
    # the defaults that are no literal are the recorded values; literals stay as written
    def_line = original.index("@triton.jit") + 1
    assert out[def_line].endswith("USE_FP8: tl.constexpr = False,")
    assert out[def_line + 1].strip() == "FP8_MIN: tl.constexpr = -448.0,"
    assert out[def_line + 2].strip() == "FP8_MAX: tl.constexpr = (" and out[def_line + 3].strip() == "448.0),"
    assert out[def_line + 4].strip() == "OUT_DTYPE: tl.constexpr = tl.float16):"
    # the kernel's body keeps its line numbers
    body = original.index("    offs = tl.arange(0, BLOCK)")
    assert out[body:] == original[body:]
    assert "IS_HIP (recorded)" in names
    ast.parse(text)


def test_without_recorded_values_the_module_statements_are_kept() -> None:
    """A workload recorded before the values were kept (no globals file) extracts as before."""
    text, _ = kernel_source.extract(MODULE, "merge_kernel", package="servingish")
    assert "from servingish.triton_utils import tl, triton" in text
    assert "float8_info = current_platform.fp8_info()" in text and "= float8_info.min," in text
    assert kernel_source.extract(MODULE, "merge_kernel", package="servingish", values={}, defaults={}) == (
        text,
        kernel_source.extract(MODULE, "merge_kernel", package="servingish")[1],
    )


def test_globals_file_round_trip_and_unsafe_entries_refused() -> None:
    recorded = {
        "servingish.attn": {
            "values": {**VALUES, "LOG2E": {"constexpr": 1.4426950408889634}, "NEG": {"float": "-inf"}, "NAME": "x'y"},
            "defaults": {"merge_kernel": DEFAULTS},
        }
    }
    text = launch_hook.globals_file_text(recorded)
    assert kernel_source.read_globals(text) == recorded
    values, _ = kernel_source.recorded_sources(recorded["servingish.attn"])
    namespace: dict[str, object] = {}
    assert eval(values["NEG"], namespace) == float("-inf") and eval(values["NAME"], namespace) == "x'y"
    # a damaged file is no file; names and modules that are not identifiers are never written as code
    assert kernel_source.read_globals("GLOBALS = __import__('os')") == {}
    assert kernel_source.value_source({"module": "os; import sys"}) is None
    assert kernel_source.value_source({"import": "os:system()"}) is None
    assert kernel_source.value_source({"tl": "float16()"}) is None
    assert kernel_source.recorded_sources({"values": {"a b": 1, "ok": 2}}) == ({"ok": "2"}, {})


def test_encode_global_keeps_what_it_can_say() -> None:
    import math

    assert launch_hook.encode_global(3, "m") == 3 and launch_hook.encode_global(True, "m") is True
    assert launch_hook.encode_global(float("inf"), "m") == {"float": "inf"}
    assert launch_hook.encode_global(math, "m") == {"module": "math"}
    assert launch_hook.encode_global(math.sqrt, "m") == {"import": "math:sqrt"}
    assert launch_hook.encode_global(object(), "m") is launch_hook._NOT_ENCODED
    assert launch_hook.encode_global(ast.parse, "ast") is launch_hook._NOT_ENCODED  # the module's own function


def test_a_helper_module_runs_with_its_recorded_values() -> None:
    """A module the kernel's module imports (vLLM's triton_attention_helpers): its statements whose
    names all have recorded values become the values on the same lines; the rest is as written."""
    helpers = (
        "from __future__ import annotations\n"
        "from servingish.triton_utils import (tl,\n    triton)\n"
        "from servingish.platforms import current_platform, other\n"
        "A = 1; B = 2\n"
        "\n@triton.jit\ndef _scaled(x, s):\n    return x * s\n"
    )
    values = {"tl": "TL", "triton": "TRITON", "current_platform": "CP", "A": "3", "B": "4"}
    out = kernel_source.with_recorded(helpers, values).splitlines()
    assert out[0] == "from __future__ import annotations"
    assert out[1:3] == ["tl = TL; triton = TRITON", ""]
    assert out[3] == "from servingish.platforms import current_platform, other"  # 'other' has no value: kept
    assert out[4] == "A = 1; B = 2"  # two statements on one line: kept as written
    assert out[5:] == helpers.splitlines()[5:]
    assert kernel_source.with_recorded("def (:\n", values) == "def (:\n"
