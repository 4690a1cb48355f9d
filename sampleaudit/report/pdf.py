"""PDF rendering: the same HTML report laid out for print by WeasyPrint (imported lazily).

Print rules live in the report's stylesheet (@page with page numbers, a title page, no table row
or chart split across pages). Nothing is fetched: the HTML is self-contained, and any URL it
might still name is refused.
"""

from __future__ import annotations

import logging

from ..errors import InputError
from ..results import AuditResult

INSTALL_HINT = (
    "PDF output needs WeasyPrint: pip install 'weasyprint>=60' (it also needs the Pango library, "
    "e.g. apt-get install libpango-1.0-0 libpangoft2-1.0-0), or leave pdf out of --format"
)


def _weasyprint():
    """The weasyprint module, or None when it (or a system library it needs) is missing."""
    try:
        import weasyprint
    except (ImportError, OSError):
        return None
    return weasyprint


def pdf_available() -> bool:
    return _weasyprint() is not None


def _fetcher(weasyprint):
    """A URL fetcher that only reads data: URLs (the charts' embedded images)."""
    urls = weasyprint.urls
    if hasattr(urls, "URLFetcher"):  # WeasyPrint >= 66
        return urls.URLFetcher(allowed_protocols={"data"})

    def fetch(url: str, *args, **kwargs):  # older WeasyPrint: a plain function
        if not url.startswith("data:"):
            raise ValueError(f"sampleaudit reports fetch nothing; refused {url[:80]!r}")
        return weasyprint.default_url_fetcher(url, *args, **kwargs)

    return fetch


def render_pdf(result: AuditResult, *, html: str | None = None) -> bytes:
    """The report as PDF bytes; `html` is the already rendered report.html, when there is one."""
    weasyprint = _weasyprint()
    if weasyprint is None:
        raise InputError(INSTALL_HINT)
    if html is None:
        from .html import render_html

        html = render_html(result)
    logger = logging.getLogger("weasyprint")
    level = logger.level
    logger.setLevel(logging.ERROR)  # unsupported-CSS notices are expected (screen-only rules)
    try:
        document = weasyprint.HTML(string=html, url_fetcher=_fetcher(weasyprint))
        return document.write_pdf()
    finally:
        logger.setLevel(level)
