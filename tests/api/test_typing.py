"""The api's annotations are honest: a typed user's script (tests/api/typed_usage.py) that calls each verb
the way docs/api.md says it takes its arguments passes ``mypy --strict`` against the package (py.typed),
with no ``Any`` read back. Why: ``score_model(from_cells=Path(...))``, ``explain(inputs=7)``,
``tune(warps=8, bundle="dir")`` and ``profile(bundle="dir")`` ran but were type errors for the caller,
because the annotations said ``Sequence[str | Path]``, ``Sequence[str]``, ``Sequence[int]`` and ``Path``."""

from __future__ import annotations

from pathlib import Path

from mypy import api as mypy

REPO = Path(__file__).resolve().parents[2]


def test_a_typed_script_of_documented_calls_passes_mypy_strict() -> None:
    script = REPO / "tests" / "api" / "typed_usage.py"
    cache = REPO / ".mypy_cache" / "typed_usage"  # the package's analysis kept between runs (seconds, not 20 s)
    out, err, status = mypy.run(["--strict", "--follow-imports=silent", "--cache-dir", str(cache), str(script)])
    assert status == 0, out + err
