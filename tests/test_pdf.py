"""The PDF report: WeasyPrint lays out the same HTML; pages, text, CJK glyphs, nothing cut mid-row.

Every test runs twice: with the fonts this machine has, and with the CJK-font finder made to find
nothing (a machine with no extra fonts), so the PDF must read the same either way.
"""

from __future__ import annotations

import io
import logging
import re
import shutil
import subprocess

import numpy as np
import pytest

from sampleaudit.report import fonts
from sampleaudit.report.pdf import pdf_available

pytestmark = pytest.mark.skipif(not pdf_available(), reason="WeasyPrint is not installed")

CJK = "一个模型的输出坍缩成几种固定的回答。循环生成是指模型不断重复同一段话。"
# Arabic (drawn by DejaVu Sans, also in bold), a tab inside a sample, an emoji no font here draws.
OTHER = ["مرحبا بالعالم هذا نص عربي", "tab\there and then more words", "a grinning face 😀 in a sample"]
HOSTILE = ["<script>alert(1)</script>", "</table></tr><b>bold</b>", "{{ 7*7 }}", "y" * 100_000, CJK] + OTHER
WORDS = ("the rover measured dust storms on the red planet a sourdough loaf needs a long cold proof "
         "the violin sonata opens with a slow adagio tax law changed the deduction for home offices").split()
NO_CJK = "no CJK font"
NO_CJK_WARNING = re.compile(r"the PDF shows ([\d,]+) characters as \\uXXXX escapes: no CJK font on this machine; "
                            r"install fonts-wqy-microhei \(apt-get install fonts-wqy-microhei\)")


def healthy(n, seed):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, 14)) for _ in range(n)]


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture(scope="module", params=["installed fonts", NO_CJK])
def rendered(request, tmp_path_factory):
    from sampleaudit import audit, render
    from sampleaudit.embed.hashing import HashingEmbedder
    from sampleaudit.samples import SampleSet

    sets = [
        SampleSet.from_texts(HOSTILE + healthy(4, 1), name="ckpt-20k"),
        SampleSet.from_texts(["the rover measured dust storms on the red planet."] * 40 + healthy(10, 3),
                             name="ckpt-35k"),
        SampleSet.from_texts(healthy(50, 4), name="检查点-28k"),
    ]
    result = audit(sets, baseline=SampleSet.from_texts(healthy(120, 2), name="train"), embedder=HashingEmbedder(256))
    out = tmp_path_factory.mktemp("pdf")
    warnings: list[str] = []
    # What WeasyPrint logs while it renders (a handler on its logger, for this test module only).
    logs = _Records()
    logger = logging.getLogger("weasyprint")
    with pytest.MonkeyPatch.context() as mp:
        if request.param == NO_CJK:
            mp.setattr(fonts, "find_cjk_font", lambda: None)
        logger.addHandler(logs)
        try:
            render(result, out, formats=["html", "pdf"], warn=warnings.append)
        finally:
            logger.removeHandler(logs)
        yield {"result": result, "out": out, "mode": request.param, "warnings": warnings,
               "logs": [r.getMessage() for r in logs.records], "cjk_font": fonts.find_cjk_font()}


def _pages_text(path) -> list[str]:
    from pypdf import PdfReader

    return [page.extract_text() or "" for page in PdfReader(str(path)).pages]


def _shown(name: str, r) -> str:
    """`name` as the PDF shows it: CJK as escapes when no CJK font is used."""
    return name if r["cjk_font"] else fonts.escape_uncovered(name, fonts.covered(
        [f.path for f in fonts.dejavu_faces("sans")]))[0]


def test_pdf_has_title_page_page_numbers_and_every_verdict(rendered):
    result, out = rendered["result"], rendered["out"]
    pages = _pages_text(out / "report.pdf")
    assert 4 <= len(pages) <= 40
    title = pages[0]
    assert "sampleaudit report" in title.lower() and result.tool.version in title
    assert result.provenance.created_at[:10] in title
    for c in result.checkpoints:
        assert _shown(c.name, rendered) in title
    text = "\n".join(pages)
    for i in range(1, len(pages) + 1):
        assert f"page {i} of {len(pages)}" in pages[i - 1]
    verdict_page = next(p for p in pages[1:] if "Verdict" in p)
    flat = verdict_page.replace("\n", "")  # a long (escaped) name may wrap in its cell
    for c in result.checkpoints:
        name = _shown(c.name, rendered)
        # the verdict table's row: name, number of samples, then the overall status
        row = re.search(re.escape(name) + r"\s*[\d,]+\s*\S?\s*(PASS|WARN|FAIL)", flat)
        assert row and row.group(1) == c.status.upper(), (c.name, flat[:800])
    assert "<script>alert(1)</script>" in text.replace("\n", "")


def test_cjk_renders_with_real_glyphs(rendered):
    if rendered["cjk_font"] is None:
        pytest.skip("no CJK font used (apt-get install fonts-wqy-microhei)")
    from pypdf import PdfReader

    out = rendered["out"]
    reader = PdfReader(str(out / "report.pdf"))
    embedded = set()
    for page in reader.pages:
        for font in (page.get("/Resources", {}).get("/Font", {}) or {}).values():
            embedded.add(str(font.get_object().get("/BaseFont")))
    assert any(name.split("+")[-1].startswith("sampleaudit-cjk") for name in embedded), embedded
    text = "".join(_pages_text(out / "report.pdf")).replace("\n", "")
    assert "循环生成" in text and "检查点-28k" in text
    assert not [w for w in rendered["warnings"] if "CJK" in w]
    assert "\\u68c0" not in text and "\\u5faa" not in text


def test_without_a_cjk_font_cjk_shows_as_escapes_with_a_note_and_one_warning(rendered):
    if rendered["mode"] != NO_CJK:
        pytest.skip("the machine's own fonts are in use")
    out = rendered["out"]
    pages = _pages_text(out / "report.pdf")
    text = "\n".join(pages)
    assert "\x00" not in text
    assert not any(fonts.is_cjk(ch) for ch in text)
    flat = text.replace("\n", "")
    assert "\\u68c0\\u67e5\\u70b9-28k" in flat and "\\u5faa\\u73af\\u751f\\u6210" in flat  # 检查点, 循环生成
    assert "\\U0001f600" in flat
    assert "the rover measured dust storms" in flat and "sourdough" in flat and "<script>alert(1)</script>" in flat
    # one warning line, counting every character shown as an escape (CJK and the emoji)
    assert len(rendered["warnings"]) == 1
    match = NO_CJK_WARNING.fullmatch(rendered["warnings"][0])
    assert match, rendered["warnings"]
    html = (out / "report.html").read_text(encoding="utf-8")
    assert int(match.group(1).replace(",", "")) == sum(fonts.is_cjk(ch) or ch == "😀" for ch in html)
    # the note on the first page says the same
    first = pages[0].replace("\n", " ")
    assert "no CJK font on this machine" in first and "apt-get install fonts-wqy-microhei" in first
    assert "no CJK font" not in "".join(pages[1:])


def test_every_character_has_a_glyph_and_text_extracts_without_nul(rendered):
    text = "\n".join(_pages_text(rendered["out"] / "report.pdf"))
    assert "\x00" not in text
    assert "tab" in text and "grinning face" in text
    assert not [m for m in rendered["logs"] if ".notdef" in m]
    from pypdf import PdfReader

    encodings = set()
    for page in PdfReader(str(rendered["out"] / "report.pdf")).pages:
        for font in (page.get("/Resources", {}).get("/Font", {}) or {}).values():
            encodings.add(str(font.get_object().get("/Encoding")))
    assert encodings == {"/Identity-H"}  # a custom encoding appears only for missing glyphs


def test_weasyprint_logs_nothing_about_our_html_or_css(rendered):
    # The one notice left depends on the machine: without the system's HarfBuzz subsetting
    # library (apt-get install libharfbuzz-subset0) WeasyPrint subsets fonts with fontTools.
    assert [m for m in rendered["logs"] if "HarfBuzz-Subset" not in m] == []


def test_pdf_uses_only_the_font_files_it_names(rendered):
    from pypdf import PdfReader

    names = set()
    for page in PdfReader(str(rendered["out"] / "report.pdf")).pages:
        for font in (page.get("/Resources", {}).get("/Font", {}) or {}).values():
            names.add(str(font.get_object().get("/BaseFont")).split("+")[-1].split("-")[1])
    assert names <= {"sans", "mono", "cjk"}, names
    assert ("cjk" in names) == (rendered["cjk_font"] is not None)


def test_html_stays_self_contained(rendered):
    html = (rendered["out"] / "report.html").read_text(encoding="utf-8")
    assert "file:" not in html and "@font-face" not in html and "sampleaudit-sans" not in html
    assert '"DejaVu Sans"' in html and "WenQuanYi Micro Hei" in html
    assert "循环生成" in html  # the HTML keeps every character; only the PDF escapes


def test_no_table_row_or_chart_is_split_across_pages(rendered):
    from sampleaudit.report.pdf import layout

    out = rendered["out"]
    with pytest.MonkeyPatch.context() as mp:
        if rendered["mode"] == NO_CJK:
            mp.setattr(fonts, "find_cjk_font", lambda: None)
        document = layout((out / "report.html").read_text(encoding="utf-8"))
    seen: dict[int, set[int]] = {}

    def walk(box, number, in_header=False):
        in_header = in_header or getattr(box, "is_header", False)  # header rows repeat on purpose
        if not in_header and getattr(box, "element_tag", None) in ("tr", "figure"):
            seen.setdefault(id(box.element), set()).add(number)
        for child in getattr(box, "children", ()):
            walk(child, number, in_header)

    if not all(hasattr(page, "_page_box") for page in document.pages):
        pytest.skip("this WeasyPrint version does not expose its page boxes")
    for number, page in enumerate(document.pages):
        walk(page._page_box, number)
    assert seen and all(len(pages) == 1 for pages in seen.values())


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="poppler-utils missing")
def test_pdftotext_reads_the_report(rendered):
    result, out = rendered["result"], rendered["out"]
    text = subprocess.run(["pdftotext", "-layout", str(out / "report.pdf"), "-"], capture_output=True,
                          text=True, check=True).stdout
    assert "\x00" not in text
    for c in result.checkpoints:
        assert _shown(c.name, rendered) in text
    assert "cut: 99,400 more characters" in text.replace("\n", " ") or "cut: 99,400" in text


def test_pdf_bytes_are_a_pdf(rendered):
    out = rendered["out"]
    data = (out / "report.pdf").read_bytes()
    assert data.startswith(b"%PDF-") and io.BytesIO(data).getbuffer().nbytes < 5_000_000


# ---------------------------------------------------------------------------------------------
# the pieces: URL fetcher, escapes, warning


def test_fetcher_reads_data_urls_and_exactly_the_named_font_files(tmp_path):
    import weasyprint

    from sampleaudit.report.pdf import _fetcher

    sans = [f.path for f in fonts.dejavu_faces("sans")]
    fetch = _fetcher(weasyprint, sans)

    def read(url):
        with weasyprint.urls.fetch(fetch, url) as response:
            return response.read()

    assert read(sans[0].as_uri()) == sans[0].read_bytes()
    assert read("data:text/plain;base64,aGk=") == b"hi"
    secret = tmp_path / "secret.txt"
    secret.write_text("no")
    other_font = fonts.matplotlib_font_dir() / "DejaVuSerif.ttf"
    for url in (other_font.as_uri(), secret.as_uri(), "file:///etc/passwd", "http://example.com/x.css",
                "https://example.com/font.ttf", sans[0].as_uri().replace("file://", "file://evil.example")):
        with pytest.raises(weasyprint.urls.URLFetchingError):
            read(url)


def test_escape_for_fonts_keeps_markup_and_ids_and_counts_each_character():
    from sampleaudit.report.pdf import escape_for_fonts

    cover = fonts.covered([f.path for f in fonts.dejavu_faces("sans")])
    html = '<p id="n-检">检查 &#x68C0; &lt;b&gt; caf&eacute; &ge; é\t</p><a href="#n-检">x</a>'
    out, escaped = escape_for_fonts(html, cover)
    assert out == ('<p id="n-\\u68c0">\\u68c0\\u67e5 \\u68c0 &lt;b&gt; caf&eacute; &ge; é\t</p>'
                   '<a href="#n-\\u68c0">x</a>')
    assert escaped == ["检", "检", "查", "检", "检"]  # raw characters first, then references


def test_font_warning_lines():
    from sampleaudit.report.pdf import font_warning

    assert font_warning([], cjk_font=False) is None
    assert NO_CJK_WARNING.fullmatch(font_warning(["检", "😀"], cjk_font=False))
    line = font_warning(["😀", "😀", "\u0915"], cjk_font=True)
    assert line == ("the PDF shows 3 characters as \\uXXXX escapes (\\U0001f600\\u0915): no font the PDF uses "
                    "draws them; report.html shows them as written")
    assert "\n" not in line
