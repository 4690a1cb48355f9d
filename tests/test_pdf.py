"""The PDF report: WeasyPrint lays out the same HTML; pages, text, CJK glyphs, nothing cut mid-row."""

from __future__ import annotations

import io
import re
import shutil
import subprocess

import numpy as np
import pytest

from sampleaudit.report.pdf import pdf_available

pytestmark = pytest.mark.skipif(not pdf_available(), reason="WeasyPrint is not installed")

CJK = "一个模型的输出坍缩成几种固定的回答。循环生成是指模型不断重复同一段话。"
HOSTILE = ["<script>alert(1)</script>", "</table></tr><b>bold</b>", "{{ 7*7 }}", "y" * 100_000, CJK]
WORDS = ("the rover measured dust storms on the red planet a sourdough loaf needs a long cold proof "
         "the violin sonata opens with a slow adagio tax law changed the deduction for home offices").split()


def healthy(n, seed):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, 14)) for _ in range(n)]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    from sampleaudit import audit, render
    from sampleaudit.embed.hashing import HashingEmbedder
    from sampleaudit.samples import SampleSet

    sets = [
        SampleSet.from_texts(HOSTILE + healthy(7, 1), name="ckpt-20k"),
        SampleSet.from_texts(["the rover measured dust storms on the red planet."] * 40 + healthy(10, 3),
                             name="ckpt-35k"),
        SampleSet.from_texts(healthy(50, 4), name="检查点-28k"),
    ]
    result = audit(sets, baseline=SampleSet.from_texts(healthy(120, 2), name="train"), embedder=HashingEmbedder(256))
    out = tmp_path_factory.mktemp("pdf")
    render(result, out, formats=["html", "pdf"])
    return result, out


def _pages_text(path) -> list[str]:
    from pypdf import PdfReader

    return [page.extract_text() or "" for page in PdfReader(str(path)).pages]


def test_pdf_has_title_page_page_numbers_and_every_verdict(rendered):
    result, out = rendered
    pages = _pages_text(out / "report.pdf")
    assert 4 <= len(pages) <= 40
    title = pages[0]
    assert "sampleaudit report" in title.lower() and result.tool.version in title
    assert result.provenance.created_at[:10] in title
    for c in result.checkpoints:
        assert c.name in title
    text = "\n".join(pages)
    for i in range(1, len(pages) + 1):
        assert f"page {i} of {len(pages)}" in pages[i - 1]
    verdict_page = next(p for p in pages[1:] if "Verdict" in p)
    for c in result.checkpoints:
        assert c.name in verdict_page
        row = next(line for line in verdict_page.splitlines() if c.name in line and ("PASS" in line or "FAIL" in line
                                                                                      or "WARN" in line))
        assert c.status.upper() in row
    assert "<script>alert(1)</script>" in text.replace("\n", "")


@pytest.mark.skipif(shutil.which("fc-list") is None, reason="fontconfig tools missing")
def test_cjk_renders_with_real_glyphs(rendered):
    fonts = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True).stdout
    if not fonts.strip():
        pytest.skip("no CJK font installed (apt-get install fonts-wqy-microhei)")
    from pypdf import PdfReader

    _, out = rendered
    reader = PdfReader(str(out / "report.pdf"))
    embedded = set()
    for page in reader.pages:
        for font in (page.get("/Resources", {}).get("/Font", {}) or {}).values():
            embedded.add(str(font.get_object().get("/BaseFont")))
    assert any(re.search(r"WenQuanYi|WQY|Noto.*CJK|CJK", name, re.I) for name in embedded), embedded
    text = "".join(_pages_text(out / "report.pdf")).replace("\n", "")
    assert "循环生成" in text and "检查点-28k" in text


def test_no_table_row_or_chart_is_split_across_pages(rendered):
    import weasyprint

    _, out = rendered
    document = weasyprint.HTML(string=(out / "report.html").read_text(encoding="utf-8")).render()
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
    result, out = rendered
    text = subprocess.run(["pdftotext", "-layout", str(out / "report.pdf"), "-"], capture_output=True,
                          text=True, check=True).stdout
    for c in result.checkpoints:
        assert c.name in text
    assert "cut: 99,400 more characters" in text.replace("\n", " ") or "cut: 99,400" in text


def test_pdf_bytes_are_a_pdf(rendered):
    _, out = rendered
    data = (out / "report.pdf").read_bytes()
    assert data.startswith(b"%PDF-") and io.BytesIO(data).getbuffer().nbytes < 5_000_000
