"""The explain report as ONE self-contained HTML file (inline CSS, no script, no network), in the
look of the compare report (``report/html.py``).

Rendering only: the view (findings with their links, aligned diffs, cross matrix, occupancy,
register classes) is computed by ``ktriage.explain.html_view.build_view``. The template has jinja2
autoescape on, and nothing from the input (kernel names, source lines, PTX or SASS text) is marked
safe: every character of it is escaped (the toolchain lines come as Markup whose every input piece
the view escaped: ``explain.html_view._resolved_line``).
"""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape

from ktriage.atomic import write_atomic
from ktriage.explain.html_view import ExplainView
from ktriage.report.explain import FIXES_TITLE, fix_sections, no_fix_line


def _env() -> Environment:
    return Environment(loader=FileSystemLoader(Path(__file__).parent), autoescape=select_autoescape(["html", "j2"]))


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:g}"


def _path_breaks(path: str) -> Markup:
    """``path`` escaped, with a ``<wbr>`` after each slash: a narrow column breaks a source line's
    place (``liger_kernel/ops/layer_norm.py:126``) between directories, never inside a name."""
    return Markup("/<wbr>").join(escape(part) for part in path.split("/"))


def to_html(view: ExplainView) -> str:
    env = _env()
    env.filters["num"] = _num
    env.filters["path_breaks"] = _path_breaks
    # the fixes in the markdown's sections and words (report/explain.py), so the formats agree
    fixes = None
    if view.fixes is not None:
        fixes = {"title": FIXES_TITLE, "none": no_fix_line(view.fixes), "sections": fix_sections(view.fixes)}
    return env.get_template("explain.html.j2").render(v=view, fixes=fixes)


def write_html(path: str | Path, view: ExplainView) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, to_html(view))
    return path
