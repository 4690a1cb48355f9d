"""The HTML report: structure, every section per checkpoint, hostile text, no external URL, formats."""

from __future__ import annotations

import dataclasses
import json
import re

import html5lib
import numpy as np
import pytest

from sampleaudit import audit, render
from sampleaudit.errors import InputError
from sampleaudit.report import context as ctx
from sampleaudit.report import default_formats
from sampleaudit.report.html import render_html
from sampleaudit.results import CheckResult, from_json, to_json
from sampleaudit.samples import SampleSet

NS = {"h": "http://www.w3.org/1999/xhtml"}
HOSTILE = [
    "<script>alert(1)</script>",
    "</table></td></tr><b>bold</b><table>",
    "{{ 7*7 }} {% raw %} {# x #}",
    "x" * 100_000,
    '<img src="https://evil.example/x.png"> <a href="http://evil.example">link</a> <style>@import url(https://e.example/a.css)</style>',
    "一个模型的输出坍缩成几种固定的回答。循环生成是指模型不断重复同一段话。",
]
CJK = HOSTILE[-1]
WORDS = ("the rover measured dust storms on the red planet a sourdough loaf needs a long cold proof "
         "the violin sonata opens with a slow adagio tax law changed the deduction for home offices").split()


def healthy(n, seed):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, 12)) for _ in range(n)]


def collapsed(n):
    return ["the rover measured dust storms on the red planet." if i % 4 else f"a loaf variant {i}" for i in range(n)]


def looped(n):
    loop = "I will say it again. " * 12
    return [loop if i % 3 == 0 else t for i, t in enumerate(healthy(n, 7))]


@pytest.fixture(scope="module")
def result():
    from sampleaudit.embed.hashing import HashingEmbedder

    sets = [
        SampleSet.from_texts(HOSTILE + healthy(6, 1), name="ckpt-20k"),  # 12: every sample is shown
        SampleSet.from_texts(collapsed(60), name="ckpt-35k"),
        SampleSet.from_texts(looped(60), name="检查点<b>-3"),
    ]
    return audit(sets, baseline=SampleSet.from_texts(healthy(150, 2), name="train"), embedder=HashingEmbedder(256))


@pytest.fixture(scope="module")
def html(result):
    return render_html(result)


def parse(text):
    return html5lib.parse(text, treebuilder="etree", namespaceHTMLElements=True)


def text_of(el) -> str:
    return "".join(el.itertext())


def section(doc, sid):
    return doc.find(f".//h:section[@id='{sid}']", NS)


# ---------------------------------------------------------------------------------------------
# structure


def test_verdict_table_has_every_checkpoint_and_check(html, result):
    doc = parse(html)
    table = section(doc, "verdict").find(".//h:table[@class='verdict']", NS)
    head = [text_of(th).strip() for th in table.findall(".//h:thead//h:th", NS)]
    assert head[:4] == ["rank", "checkpoint", "samples", "overall"] and "mode_collapse" in head
    rows = table.findall(".//h:tbody/h:tr", NS)
    assert [text_of(r.findall("h:td", NS)[1]).strip() for r in rows] == result.ranking
    for row, name in zip(rows, result.ranking, strict=True):
        status = result.checkpoint(name).status
        cell = text_of(row.findall("h:td", NS)[3])
        assert status.upper() in cell  # the status is written out, not only coloured
    assert "FAIL" in text_of(table) and "PASS" in text_of(table)


def test_recommendation_comes_first_and_names_failures(html, result):
    doc = parse(html)
    verdict = section(doc, "verdict")
    first = verdict.find(".//h:p[@class='recommendation']", NS)
    sentence = text_of(first)
    assert sentence.startswith("ckpt-20k is the healthiest")
    assert re.search(r"ckpt-35k fails mode_collapse \(\d+% > 30%\)", sentence)


def test_charts_are_inline_svg_with_threshold(html):
    doc = parse(html)
    sim = section(doc, "similarity")
    svgs = sim.findall(".//{http://www.w3.org/2000/svg}svg")
    assert len(svgs) == 2
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids)), "element ids collide between inline charts"


def test_sample_sections_for_every_checkpoint(html, result):
    doc = parse(html)
    samples = section(doc, "samples")
    blocks = samples.findall(".//h:section[@class='checkpoint-samples']", NS)
    assert len(blocks) == len(result.checkpoints)
    for block, c in zip(blocks, result.checkpoints, strict=True):
        assert c.name in text_of(block.find("h:h3", NS))
        assert block.find(".//h:table[@class='examples fixed']", NS) is not None
        assert len(block.findall(".//h:table[@class='examples fixed']/h:tbody/h:tr", NS)) == len(c.examples)
        assert block.find(".//h:table[@class='pairs fixed']", NS) is not None


def test_provenance_lists_inputs_thresholds_and_run(html, result):
    doc = parse(html)
    prov = text_of(section(doc, "provenance"))
    assert result.embedder.model in prov and result.tool.version in prov
    assert "similarity threshold" in prov and result.checkpoints[0].similarity.threshold_source in prov
    assert "check mode_collapse" in prov and "run time" in prov


OPTIONAL = {"coverage": None, "repetition": None, "lexical": None, "prompts": None, "verdict": None,
            "worst_loops": []}


def strip_optional(result):
    """The result as an audit made before the optional sections existed would hold it."""
    return dataclasses.replace(
        result, map=None, ranking_notes=[],
        checkpoints=[dataclasses.replace(c, **OPTIONAL) for c in result.checkpoints],
        baseline=dataclasses.replace(result.baseline, coverage=None, repetition=None, lexical=None))


def test_sections_without_data_are_skipped(result):
    doc = parse(render_html(strip_optional(result)))
    for sid in ("coverage", "repetition"):
        assert section(doc, sid) is None
    toc = [a.get("href") for a in doc.findall(".//h:nav//h:a", NS)]
    assert toc == ["#verdict", "#similarity", "#samples", "#provenance"]


def test_old_audit_json_renders(result):
    data = json.loads(to_json(result))
    for c in data["checkpoints"]:  # an audit.json written before these keys existed
        for key in [*OPTIONAL, "scripts"]:
            c.pop(key, None)
        for key in list(c["similarity"]):
            if "vendi" in key or "near_duplicate" in key or key.endswith("_interval"):
                del c["similarity"][key]
        c["similarity"]["most_similar_pairs"] = []
        c["examples"] = []
    for key in ("map", "ranking_notes"):
        data.pop(key, None)
    data["baseline"] = None
    html = render_html(from_json(json.dumps(data)))
    assert "No pairs stored." in html and "ckpt-35k" in html


def test_a_new_check_appears_in_the_verdict_table(result):
    extra = CheckResult("prompt_collapse", "warn", 0.21, 0.2, "21.0% of prompts collapse (above the warn level 20%)")
    checkpoints = [dataclasses.replace(c, checks=[*c.checks, extra], status="warn") if c.name == "ckpt-20k" else c
                   for c in result.checkpoints]
    html = render_html(dataclasses.replace(result, checkpoints=checkpoints))
    table = parse(html).find(".//h:table[@class='verdict']", NS)
    head = [text_of(th).strip() for th in table.findall(".//h:thead//h:th", NS)]
    assert head[4] == "mode_collapse" and head[-1] == "prompt_collapse"
    assert "not run" in text_of(table)  # the other checkpoints have no such check
    ranked = dataclasses.replace(result, checkpoints=checkpoints, ranking_notes=[],
                                 ranking=["ckpt-20k", *[n for n in result.ranking if n != "ckpt-20k"]])
    assert "prompt_collapse (21% > 20%)" in ctx.recommendation(ranked)


def test_recommendation_for_one_checkpoint_reads_as_a_sentence(result):
    extra = CheckResult("coverage", "warn", 0.75, 0.85, "coverage 75% (below the warn level 85%)")
    one = dataclasses.replace(result.checkpoint("ckpt-20k"), checks=[extra], status="warn")
    alone = dataclasses.replace(result, checkpoints=[one], ranking=["ckpt-20k"], ranking_notes=[], comparisons=[])
    assert ctx.recommendation(alone).startswith("ckpt-20k warns on coverage (75% < 85%)")
    passing = dataclasses.replace(one, checks=[dataclasses.replace(extra, status="pass")], status="pass")
    assert ctx.recommendation(dataclasses.replace(alone, checkpoints=[passing])).startswith(
        "ckpt-20k passes every check")


# ---------------------------------------------------------------------------------------------
# hostile text


def test_hostile_sample_text_is_escaped(html):
    doc = parse(html)
    assert doc.findall(".//h:script", NS) == []  # nothing executable, and no JS needed
    assert doc.findall(".//h:img", NS) == [] and doc.findall(".//h:b", NS) == []
    assert len(doc.findall(".//h:style", NS)) == 1  # the report's own stylesheet only
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html
    # template syntax in a sample stays literal text: it is never evaluated (no "49" in its place)
    assert "{{ 7*7 }} {% raw %} {# x #}" in html
    assert "&lt;/table&gt;&lt;/td&gt;&lt;/tr&gt;" in html
    # the checkpoint name is user input too
    assert "检查点&lt;b&gt;-3" in html and "检查点<b>" not in html


def test_control_and_bidi_characters_in_samples_are_shown_as_escapes():
    from sampleaudit.embed.hashing import HashingEmbedder

    texts = ["invoice_\u202egnp.exe is harmless", "ansi \x1b[2J clears \x00 the screen",
             "שלום\u200f world\tand a tab\nand a line", *healthy(5, 3)]
    html = render_html(audit([SampleSet.from_texts(texts, name="ck")], embedder=HashingEmbedder(64)))
    assert "\u202e" not in html and "\x1b" not in html and "\x00" not in html
    assert "invoice_\\u202egnp.exe" in html and "ansi \\x1b[2J clears \\x00 the screen" in html
    # layout characters and the harmless direction mark of RTL text stay as they are
    assert "שלום\u200f world\tand a tab\nand a line" in html
    # a loop shown with its context: the text around the highlighted loop is made visible too
    loop = ctx.highlight("\u202ebefore " + "again and again. " * 8 + "\x07after", 8, 8 + 17 * 8, max_chars=400)
    assert loop["before"] == "\\u202ebefore " and loop["after"] == "\\x07after"


def test_long_text_is_cut_with_a_visible_marker(html, result):
    assert "cut: 99,400 more characters; full text in audit.json" in html
    assert "x" * 601 not in html
    assert len(html) < 1_000_000
    c = result.checkpoint("ckpt-20k")
    full = [c.texts[e.id] for e in c.examples] + [
        c.texts[v.id] for p in c.similarity.most_similar_pairs for v in (p.a, p.b)]
    assert "x" * 100_000 in full or "x" * 100_000 in HOSTILE  # the JSON keeps what it has in full


def test_no_external_url_is_referenced(html):
    doc = parse(html)
    (style,) = doc.findall(".//h:style", NS)
    assert not re.search(r"url\(|@import", style.text)
    assert doc.findall(".//h:link", NS) == [] and doc.findall(".//h:iframe", NS) == []
    # hostile URLs survive only as escaped text, never as attributes
    for el in doc.iter():
        for name, value in el.attrib.items():
            if name.endswith(("href", "src")):
                assert value.startswith(("#", "data:")), (name, value)
    for tag in ("object", "embed", "video", "audio", "source", "base", "form"):
        assert doc.findall(f".//h:{tag}", NS) == []


def test_cjk_text_is_kept_and_has_a_cjk_font(html):
    assert "循环生成" in html
    assert "WenQuanYi Micro Hei" in html


def test_chart_labels_are_safe_for_matplotlib():
    from sampleaudit.metrics.similarity import Histogram
    from sampleaudit.report import charts

    hist = Histogram(edges=[0.0, 0.5, 1.0], counts=[3, 4])
    svg = charts.histogram_overlay([("$\\frac{a}{b}$ _x^2 " + "n" * 200, hist, False, "#000")],
                                   title="t", xlabel="x", threshold=0.5)
    assert svg.startswith("<svg") and "<!--" not in svg and "http://purl.org" not in svg
    assert charts.label("a$b") == "a\\$b" and len(charts.label("n" * 200)) == charts.MAX_LABEL


# ---------------------------------------------------------------------------------------------
# helpers of the view model


def test_shown_and_highlight():
    assert ctx.shown("abc", 5) == ctx.ShownText("abc", 0)
    assert ctx.shown("abcdef", 4) == ctx.ShownText("abcd", 2)
    text = "intro " + "la " * 50 + "outro"
    h = ctx.highlight(text, 6, 6 + 150, max_chars=600, context=3)
    assert h["before"] == "ro " and h["cut_before"] == 3 and h["loop"].text == "la " * 50
    assert h["after"] == "out" and h["cut_after"] == 2
    h = ctx.highlight(text, 6, 6 + 150, max_chars=10)
    assert h["loop"] == ctx.ShownText("la la la l", 140)
    assert ctx.highlight("ab", 5, 9, max_chars=10)["loop"].text == ""  # out of range is clamped


@pytest.mark.parametrize("value, threshold, expected", [
    (0.47, 0.30, "mode_collapse (47% > 30%)"),
    (0.3004, 0.30, "mode_collapse (30.04% > 30.00%)"),
    (0.301, 0.30, "mode_collapse (30.1% > 30.0%)"),
    (0.40, 0.60, "mode_collapse (40% < 60%)"),
    (12.5, 20.0, "mode_collapse (12 < 20)"),
])
def test_check_phrase(value, threshold, expected):
    assert ctx.check_phrase(CheckResult("mode_collapse", "fail", value, threshold, "")) == expected


# ---------------------------------------------------------------------------------------------
# render(): formats and atomic output


def test_render_writes_the_chosen_formats(tmp_path, result):
    written = render(result, tmp_path, formats=["json", "html"])
    assert [p.name for p in written] == ["audit.json", "report.html"]
    assert from_json((tmp_path / "audit.json").read_text(encoding="utf-8")) == result


def test_default_formats_follow_weasyprint(monkeypatch):
    from sampleaudit.report import pdf

    monkeypatch.setattr(pdf, "_weasyprint", lambda: None)
    assert default_formats() == ("json", "html")
    assert default_formats(json=False) == ("html",)
    monkeypatch.setattr(pdf, "_weasyprint", lambda: object())
    assert default_formats() == ("json", "html", "pdf")


def test_pdf_without_weasyprint_says_how_to_install_and_writes_nothing(tmp_path, monkeypatch, result):
    from sampleaudit.report import pdf

    monkeypatch.setattr(pdf, "_weasyprint", lambda: None)
    with pytest.raises(InputError, match=r"pip install 'weasyprint>=60'"):
        render(result, tmp_path / "out", formats=["json", "html", "pdf"])
    assert not (tmp_path / "out").exists()


def test_unknown_format_is_an_input_error(tmp_path, result):
    with pytest.raises(InputError, match="unknown report format 'docx'"):
        render(result, tmp_path, formats=["html", "docx"])


# ---------------------------------------------------------------------------------------------
# optional sections (coverage, repetition, lexical, prompts, near duplicates, intervals, map)


@pytest.fixture(scope="module")
def full_html():
    from sampleaudit.embed.hashing import HashingEmbedder

    embedder = HashingEmbedder(256)
    prompts = ["Describe a tool.", "Describe a game.", "Describe a library."]
    sets = [
        SampleSet.from_texts(HOSTILE + healthy(54, 1), name="ckpt-20k", prompts=[prompts[i % 3] for i in range(60)]),
        SampleSet.from_texts(collapsed(60), name="ckpt-35k"),
        SampleSet.from_texts(looped(60), name="ckpt-28k"),
    ]
    base = SampleSet.from_texts(healthy(150, 2) + collapsed(30), name="train")
    full = audit(sets, baseline=base, embedder=embedder)
    return full, render_html(full)


def test_every_optional_section_renders_for_every_checkpoint(full_html):
    result, html = full_html
    doc = parse(html)
    toc = [a.get("href") for a in doc.findall(".//h:nav//h:a", NS)]
    assert toc == ["#verdict", "#similarity", "#coverage", "#repetition", "#samples", "#provenance"]
    coverage = section(doc, "coverage")
    rows = coverage.findall(".//h:table[@class='coverage']/h:tbody/h:tr", NS)
    assert [text_of(r.find("h:td", NS)).strip() for r in rows] == [c.name for c in result.checkpoints]
    assert len(coverage.findall(".//{http://www.w3.org/2000/svg}svg")) == 2  # cluster bars and the 2-D map
    repetition = section(doc, "repetition")
    rows = repetition.findall(".//h:table[@class='repetition']/h:tbody/h:tr", NS)
    names = [text_of(r.find("h:td", NS)).strip() for r in rows]
    assert names == ["baseline: train"] + [c.name for c in result.checkpoints]
    lexical = [text_of(th) for th in repetition.findall(".//h:table[@class='lexical']//h:th", NS)]
    assert len(repetition.findall(".//{http://www.w3.org/2000/svg}svg")) == 2  # loop share, opening share
    assert "distinct-2" in lexical and "self-BLEU" in lexical
    samples = section(doc, "samples")
    for block in samples.findall(".//h:section[@class='checkpoint-samples']", NS):
        assert "Largest near-duplicate groups" in text_of(block)
    assert "[" in text_of(section(doc, "similarity").find(".//h:table[@class='similarity']", NS))  # intervals


def test_loops_are_highlighted_in_the_sample_text(full_html):
    result, html = full_html
    doc = parse(html)
    marks = section(doc, "repetition").findall(".//h:mark[@class='loop']", NS)
    assert marks and all("I will say it again." in text_of(m) for m in marks)
    assert result.checkpoint("ckpt-28k").repetition.loop_share > 0.3


def test_missing_clusters_show_baseline_texts(full_html):
    result, html = full_html
    missing = [m for c in result.checkpoints for m in c.coverage.missing_clusters]
    if not missing:
        pytest.skip("no cluster missing in this draw")
    doc = parse(html)
    assert "Missing clusters" in text_of(section(doc, "coverage"))
    example = next(result.baseline.texts[e.id] for m in missing for e in m.examples)
    assert ctx.shown(example, ctx.SHORT_CHARS).text in text_of(section(doc, "coverage"))


def test_within_noise_is_said(full_html):
    from sampleaudit.metrics.stats import Interval
    from sampleaudit.results import RankingNote

    result, _ = full_html
    top, other = result.ranking[0], result.ranking[1]
    note = RankingNote(top, other, True, f"{top} and {other} are within noise of each other: their checks agree")
    noted = dataclasses.replace(result, ranking_notes=[note])
    assert f"; {top} and {other} are within noise of each other." in ctx.recommendation(noted)
    verdict = text_of(section(parse(render_html(noted)), "verdict"))
    assert "within noise" in verdict and note.reason in verdict
    # results without ranking notes: said per figure, from the stored comparisons
    from sampleaudit.checks import comparisons_to_top

    a, b = result.checkpoint(top), result.checkpoint(other)
    same = dataclasses.replace(b, status=a.status, checks=a.checks, similarity=dataclasses.replace(
        b.similarity, high_similarity_share=a.similarity.high_similarity_share + 0.01,
        high_similarity_share_interval=Interval(0.0, 1.0)))
    checkpoints = [same if c.name == other else c for c in result.checkpoints]
    noisy = dataclasses.replace(result, ranking_notes=[], checkpoints=checkpoints,
                                comparisons=comparisons_to_top(checkpoints, result.ranking))
    rows = ctx.comparisons(noisy)
    assert any(r["b"] == other and r["metric"] == "high-similarity share" and r["within_noise"] for r in rows)
    assert f"{top} and {other} are within noise of each other on high-similarity share" in ctx.recommendation(noisy)
