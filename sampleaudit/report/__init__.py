"""Renderers: AuditResult -> audit.json, report.html, report.pdf. They read results only, never recompute."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from ..errors import InputError
from ..fileio import write_atomic
from ..results import AuditResult, to_json

FORMATS = ("json", "html", "pdf")
FILE_NAMES = {"json": "audit.json", "html": "report.html", "pdf": "report.pdf"}


def default_formats(*, json: bool = True) -> tuple[str, ...]:
    """json, html and pdf when WeasyPrint can be imported, else json and html (json=False: no json,
    for re-rendering an existing audit.json)."""
    from .pdf import pdf_available

    formats = FORMATS if pdf_available() else ("json", "html")
    return formats if json else tuple(f for f in formats if f != "json")


def render(result: AuditResult, out_dir: str | Path, *, formats: Iterable[str] | None = None,
           warn: Callable[[str], None] | None = None) -> list[Path]:
    """Write the chosen formats (default: `default_formats()`) into `out_dir`.

    Every file is built in memory first, so a failure writes nothing; each is then written to a
    temporary name and renamed into place. Asking for pdf without WeasyPrint is an InputError
    that says how to install it.
    """
    formats = list(dict.fromkeys(default_formats() if formats is None else formats))
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise InputError(f"unknown report format {unknown[0]!r}; choose from {', '.join(FORMATS)}")
    if not formats:
        raise InputError(f"no report format given; choose from {', '.join(FORMATS)}")
    outputs: dict[str, str | bytes] = {}
    if "pdf" in formats:
        from .pdf import INSTALL_HINT, pdf_available

        if not pdf_available():
            raise InputError(INSTALL_HINT)
    if "json" in formats:
        outputs["json"] = to_json(result)
    html = None
    if "html" in formats or "pdf" in formats:
        from .html import render_html

        html = render_html(result)
    if "html" in formats:
        outputs["html"] = html
    if "pdf" in formats:
        from .pdf import render_pdf

        outputs["pdf"] = render_pdf(result, html=html, warn=warn)
    return [write_atomic(Path(out_dir) / FILE_NAMES[f], outputs[f]) for f in formats]
