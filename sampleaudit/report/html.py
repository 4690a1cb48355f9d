"""HTML rendering: view model -> Jinja template (autoescaped) -> one self-contained file."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from ..results import AuditResult
from .context import build_context

_ENV = Environment(
    loader=PackageLoader("sampleaudit.report", "templates"),
    autoescape=select_autoescape(["html", "j2"], default=True),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def render_html(result: AuditResult) -> str:
    return _ENV.get_template("report.html.j2").render(**build_context(result))
