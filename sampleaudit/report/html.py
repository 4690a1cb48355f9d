"""HTML rendering: view model -> Jinja template (autoescaped) -> one self-contained file."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from ..controls import for_page
from ..results import AuditResult
from .context import build_context


def _visible(value):
    """Every string a template prints (names, paths, ids, messages, sample text) has its control
    and bidi-override characters shown as escapes; trusted markup (the SVG charts) is left alone."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return for_page(value)
    return value


_ENV = Environment(
    loader=PackageLoader("sampleaudit.report", "templates"),
    autoescape=select_autoescape(["html", "j2"], default=True),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    finalize=_visible,
)


def render_html(result: AuditResult) -> str:
    return _ENV.get_template("report.html.j2").render(**build_context(result))
