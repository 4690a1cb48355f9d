"""PDF rendering: the same HTML report laid out for print by WeasyPrint (imported lazily).

Print rules live in the report's stylesheet (@page with page numbers, a title page, no table row
or chart split across pages). The PDF draws its text with font files it names itself (DejaVu from
matplotlib's data, a CJK font when the machine has one; see fonts.py), declared in a stylesheet
added for the PDF only, so report.html stays self-contained. Every character those fonts cannot
draw (and every emoji, which Pango would hand to some system emoji font) is written as an escape
such as \\u4e00, with a note on the first page and one warning.
Nothing else is fetched: only data: URLs and exactly those font files are read.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

from markupsafe import escape as html_escape

from ..errors import InputError
from ..results import AuditResult
from . import fonts

INSTALL_HINT = (
    "PDF output needs WeasyPrint: pip install 'weasyprint>=60' (it also needs the Pango library, "
    "e.g. apt-get install libpango-1.0-0 libpangoft2-1.0-0), or leave pdf out of --format"
)
CJK_FONT_HINT = "install fonts-wqy-microhei (apt-get install fonts-wqy-microhei)"
# Font family names used by the PDF only; unique, so a system font of the same name never stands in.
SANS, MONO, CJK = "sampleaudit-sans", "sampleaudit-mono", "sampleaudit-cjk"
NOTE_CLASS = "pdf-font-note"
# Character references the template or Jinja may write instead of the character itself; the five
# markup ones (&lt; &gt; &amp; &quot; &#39;) stand for ASCII and never need a check.
_CHAR_REF = re.compile(r"&(#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")
_BODY = re.compile(r"<body\b[^>]*>", re.I)
_HEAD_END = re.compile(r"</head\s*>", re.I)


def _weasyprint():
    """The weasyprint module, or None when it (or a system library it needs) is missing."""
    try:
        import weasyprint
    except (ImportError, OSError):
        return None
    return weasyprint


def pdf_available() -> bool:
    return _weasyprint() is not None


def _file_path(url: str) -> Path | None:
    """The local path a file: URL names (resolved), or None for any other URL."""
    parts = urlsplit(url)
    if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost"):
        return None
    return Path(url2pathname(parts.path)).resolve()


def _fetcher(weasyprint, allowed_files: Iterable[Path] = ()):
    """A URL fetcher that reads data: URLs (the charts' embedded images) and exactly the files in
    `allowed_files` (the PDF's fonts); it refuses every other URL."""
    allowed = frozenset(Path(p).resolve() for p in allowed_files)

    def check(url: str) -> Path | None:
        if url[:5].lower() == "data:":
            return None
        path = _file_path(url)
        if path is None or path not in allowed:
            raise ValueError(f"sampleaudit reports fetch nothing; refused {url[:80]!r}")
        return path

    urls = weasyprint.urls
    if hasattr(urls, "URLFetcher"):  # WeasyPrint >= 66: a URLFetcher with a fetch method

        class Fetcher(urls.URLFetcher):
            def fetch(self, url, headers=None):
                path = check(url)
                if path is None:
                    return super().fetch(url, headers)
                return urls.URLFetcherResponse(path.as_uri(), body=path.read_bytes())

        return Fetcher(allowed_protocols={"data"})

    def fetch(url: str, *args, **kwargs):  # older WeasyPrint: a plain function
        check(url)
        return weasyprint.default_url_fetcher(url, *args, **kwargs)

    return fetch


def _font_css(sans: Iterable[fonts.FontFace], mono: Iterable[fonts.FontFace], cjk: Path | None) -> str:
    """@font-face rules for the PDF's fonts and the families that use them (print only)."""
    rules = []
    for family, faces in ((SANS, sans), (MONO, mono)):
        for face in faces:
            rules.append(f'@font-face {{ font-family: "{family}"; src: url("{face.path.as_uri()}"); '
                         f"font-weight: {face.weight}; font-style: {face.style}; }}")
    fallback = ""
    if cjk is not None:
        rules.append(f'@font-face {{ font-family: "{CJK}"; src: url("{cjk.as_uri()}"); }}')
        fallback = f', "{CJK}"'
    sans_stack = f'"{SANS}"{fallback}'
    rules += [
        f"html, body {{ font-family: {sans_stack}; }}",
        f'code, .id {{ font-family: "{MONO}", {sans_stack}; }}',
        "@page { "
        + " ".join(f"@{box} {{ font-family: {sans_stack}; }}"
                   for box in ("top-left", "top-right", "bottom-left", "bottom-right"))
        + " }",
        f".{NOTE_CLASS} {{ border: 1px solid #8a6a00; background: #fdf7e4; color: #5e4100; "
        "padding: .3rem .5rem; font-size: 8pt; margin: 0 0 .5rem; }",
    ]
    return "\n".join(rules)


def escape_for_fonts(html: str, cover: frozenset[int]) -> tuple[str, list[str]]:
    """`html` with every character (or character reference) outside `cover` written as an escape
    such as \\u4e00; also the characters escaped, one entry per occurrence.

    Markup and CSS are ASCII, which the PDF's fonts cover, so only text and attribute values
    change, and an id and the links to it change alike.
    """
    html, escaped = fonts.escape_uncovered(html, cover)

    def sub_ref(match: re.Match) -> str:
        char = html_lib.unescape(match.group())
        if len(char) != 1 or ord(char) in cover:
            return match.group()
        escaped.append(char)
        return fonts.escape(char)

    return _CHAR_REF.sub(sub_ref, html), escaped


def font_warning(escaped: list[str], *, cjk_font: bool) -> str | None:
    """One line saying why the PDF shows escapes, or None when it shows none."""
    if not escaped:
        return None
    what = f"the PDF shows {len(escaped):,} characters as \\uXXXX escapes"
    if not cjk_font and any(fonts.is_cjk(c) for c in escaped):
        return f"{what}: no CJK font on this machine; {CJK_FONT_HINT}"
    distinct = list(dict.fromkeys(fonts.escape(c) for c in escaped))
    sample = "".join(distinct[:6]) + ("..." if len(distinct) > 6 else "")
    return f"{what} ({sample}): no font the PDF uses draws them; report.html shows them as written"


def _with_note(html: str, message: str) -> str:
    note = f'<p class="{NOTE_CLASS}">Note: {html_escape(message[:1].upper() + message[1:])}.</p>'
    match = _BODY.search(html)
    at = match.end() if match else 0
    return html[:at] + note + html[at:]


def _with_style(html: str, css: str) -> str:
    style = f"<style>\n{css}\n</style>"
    match = _HEAD_END.search(html)
    if match is None:
        return style + html
    return html[: match.start()] + style + html[match.start():]


def render_pdf(result: AuditResult, *, html: str | None = None,
               warn: Callable[[str], None] | None = None) -> bytes:
    """The report as PDF bytes; `html` is the already rendered report.html, when there is one.

    `warn` receives one line when some characters are shown as escapes because no font the PDF
    uses draws them (e.g. CJK text on a machine without a CJK font).
    """
    if _weasyprint() is None:
        raise InputError(INSTALL_HINT)
    if html is None:
        from .html import render_html

        html = render_html(result)
    return layout(html, warn=warn).write_pdf()


def layout(html: str, *, warn: Callable[[str], None] | None = None):
    """The report's HTML laid out in pages by WeasyPrint with the PDF's fonts (a weasyprint Document;
    `write_pdf()` gives the bytes). `warn` as in `render_pdf`."""
    weasyprint = _weasyprint()
    if weasyprint is None:
        raise InputError(INSTALL_HINT)
    try:
        sans, mono = fonts.dejavu_faces("sans"), fonts.dejavu_faces("mono")
    except FileNotFoundError as exc:
        raise InputError(str(exc)) from None
    cjk = fonts.find_cjk_font()
    cover = fonts.covered([f.path for f in sans] + ([cjk] if cjk else [])) - fonts.emoji_presentation()
    html, escaped = escape_for_fonts(html, cover)
    message = font_warning(escaped, cjk_font=cjk is not None)
    if message:
        html = _with_note(html, message)
        if warn is not None:
            warn(message)
    html = _with_style(html, _font_css(sans, mono, cjk))
    files = [f.path for f in (*sans, *mono)] + ([cjk] if cjk else [])
    # WeasyPrint registers the @font-face files in a font configuration of this document only.
    return weasyprint.HTML(string=html, url_fetcher=_fetcher(weasyprint, files)).render()
