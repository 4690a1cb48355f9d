"""Renderers: AuditResult -> audit.json, report.html, report.pdf. They read results only, never recompute."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from ..errors import InputError
from ..results import AuditResult, to_json

FORMATS = ("json", "html", "pdf")
FILE_NAMES = {"json": "audit.json", "html": "report.html", "pdf": "report.pdf"}


def default_formats(*, json: bool = True) -> tuple[str, ...]:
    """json, html and pdf when WeasyPrint can be imported, else json and html (json=False: no json,
    for re-rendering an existing audit.json)."""
    from .pdf import pdf_available

    formats = FORMATS if pdf_available() else ("json", "html")
    return formats if json else tuple(f for f in formats if f != "json")


def check_formats(formats: Iterable[str] | None, *, json: bool = True) -> list[str]:
    """The formats to write (default: `default_formats(json=json)`), validated before any work:
    an unknown format, none at all, or pdf without WeasyPrint is an InputError saying what to do."""
    formats = list(dict.fromkeys(default_formats(json=json) if formats is None else formats))
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise InputError(f"unknown report format {unknown[0]!r}; choose from {', '.join(FORMATS)}")
    if not formats:
        raise InputError(f"no report format given; choose from {', '.join(FORMATS)}")
    if "pdf" in formats:
        from .pdf import INSTALL_HINT, pdf_available

        if not pdf_available():
            raise InputError(INSTALL_HINT)
    return formats


def build_outputs(result: AuditResult, formats: Iterable[str] | None = None, *,
                  warn: Callable[[str], None] | None = None) -> dict[str, str | bytes]:
    """File name -> content of every chosen format, built in memory (nothing is written)."""
    formats = check_formats(formats)
    outputs: dict[str, str | bytes] = {}
    html = None
    if "html" in formats or "pdf" in formats:
        from .html import render_html

        html = render_html(result)
    for f in formats:
        if f == "json":
            outputs[FILE_NAMES[f]] = to_json(result)
        elif f == "html":
            outputs[FILE_NAMES[f]] = html
        else:
            from .pdf import render_pdf

            outputs[FILE_NAMES[f]] = render_pdf(result, html=html, warn=warn)
    return outputs


def render(result: AuditResult, out_dir: str | Path, *, formats: Iterable[str] | None = None,
           warn: Callable[[str], None] | None = None) -> list[Path]:
    """Write the chosen formats (default: `default_formats()`) into `out_dir`, as one set.

    Every file is built in memory first, so a failure writes nothing; the set is then written to a
    staging folder and renamed into place (sampleaudit.fileio.write_outputs). Asking for pdf
    without WeasyPrint is an InputError that says how to install it.
    """
    from ..fileio import write_outputs

    return write_outputs(out_dir, build_outputs(result, formats, warn=warn))
