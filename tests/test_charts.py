"""Charts: own Figures (no pyplot, backend untouched), safe labels, stable SVG, no status colours."""

from __future__ import annotations

import colorsys
import json
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

from sampleaudit.metrics.similarity import Histogram
from sampleaudit.report import charts, fonts

WORDS = "the rover measured dust storms on the red planet a sourdough loaf needs a long cold proof".split()


def _texts(n, seed):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, 12)) for _ in range(n)]


@pytest.fixture(scope="module")
def result():
    from sampleaudit import audit
    from sampleaudit.embed.hashing import HashingEmbedder
    from sampleaudit.samples import SampleSet

    sets = [SampleSet.from_texts(_texts(30, 1), name="ckpt-a"),
            SampleSet.from_texts(["the same sentence again."] * 20 + _texts(10, 3), name="检查点-b")]
    return audit(sets, baseline=SampleSet.from_texts(_texts(60, 2), name="train"), embedder=HashingEmbedder(256))


def test_rendering_the_same_result_twice_gives_the_same_html(result):
    from sampleaudit.report.html import render_html

    first, second = render_html(result), render_html(result)
    assert first == second
    ids = re.findall(r'\bid="([^"]+)"', first)
    assert len(ids) == len(set(ids)), "element ids collide between inline charts"


def _bars(labels, **kw):
    return charts.share_bars([(name, 0.1 * (i + 1), None, charts.color(i)) for i, name in enumerate(labels)],
                             title="t", xlabel="x", **kw)


def test_svg_ids_come_from_the_chart_itself():
    one, again, other = _bars(["a", "b"]), _bars(["a", "b"]), _bars(["a", "c"])
    assert one == again
    prefix = re.search(r'\bid="(c[0-9a-f]{10})-', one).group(1)
    assert all(i.startswith(prefix + "-") for i in re.findall(r'\bid="([^"]+)"', one))
    assert prefix != re.search(r'\bid="(c[0-9a-f]{10})-', other).group(1)
    # every internal reference points at an id of the same chart
    ids = set(re.findall(r'\bid="([^"]+)"', one))
    refs = re.findall(r'(?:href="#|url\(#)([^")]+)', one)
    assert refs and set(refs) <= ids


def test_svg_has_no_style_attributes_or_style_sheet():
    hist = Histogram(edges=[0.0, 0.5, 1.0], counts=[3, 4])
    svgs = [_bars(["a", "b"], limits=[(0.1, "warn 10%"), (0.2, "fail 20%")]),
            charts.histogram_overlay([("base", hist, True, charts.BASELINE_COLOR), ("a", hist, False, charts.color(0))],
                                     title="t", xlabel="x", threshold=0.5),
            charts.cluster_bars(["0", "1"], [("baseline", [0.5, 0.5], charts.BASELINE_COLOR),
                                             ("a", [0.2, 0.8], charts.color(0))], title="t"),
            charts.embedding_map([[0, 0], [1, 1]], [("a", [[0.5, 0.5]], charts.color(0))], title="t")]
    for svg in svgs:
        # WeasyPrint reads style="..." of inline SVG as CSS and warns about every SVG property
        assert "style=" not in svg and "<style" not in svg
        assert 'stroke-linejoin="round"' in svg[:400]  # matplotlib's defaults, now on the root
        assert re.search(r'<path [^>]*stroke="#', svg) and re.search(r'fill="#', svg)


def test_labels_escape_controls_bidi_and_keep_names_in_legends():
    assert charts.label("a\x1b[31mred\u202eb\nc") == "a\\x1b[31mred\\u202eb c"
    assert charts.label("_hidden") == " _hidden"  # matplotlib drops legend labels starting with _
    assert charts.label("a$b") == "a\\$b" and len(charts.label("n" * 200)) == charts.MAX_LABEL
    long = charts.label("\u202e" * 40)
    assert long == "\\u202e" * (charts.MAX_LABEL - 1) + "…"  # an escape counts as one character


def test_labels_escape_what_the_chart_fonts_lack_without_matplotlib_warnings(monkeypatch):
    monkeypatch.setattr(fonts, "find_cjk_font", lambda: None)
    assert charts.label("检查点-b") == "\\u68c0\\u67e5\\u70b9-b"
    assert charts.label("𝔘 x") == "\\U0001d518 x"  # no DejaVu Sans glyph
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Glyph ... missing from font(s)" is a UserWarning
        svg = _bars(["检查点-b", "𝔘\x07", "ok"], limits=[(0.1, "warn 检")])
    assert svg.startswith("<svg")


def test_labels_keep_cjk_when_a_cjk_font_is_installed():
    if fonts.find_cjk_font() is None:
        pytest.skip("no CJK font installed (apt-get install fonts-wqy-microhei)")
    assert charts.label("检查点-b") == "检查点-b"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _bars(["检查点-b"])


def _hue_degrees(hex_colour: str) -> tuple[float, float]:
    r, g, b = (int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    h, s, _ = colorsys.rgb_to_hsv(r, g, b)
    return h * 360, s


def test_no_checkpoint_colour_looks_like_a_status():
    # Status hues (the report's pass / warn / fail badges): red 325-20 degrees, amber, orange and
    # yellow 20-70, green 70-175, teal 175-195. A checkpoint colour with visible saturation stays
    # out of them all (greys are fine).
    for colour in charts.PALETTE:
        hue, saturation = _hue_degrees(colour)
        if saturation >= 0.12:
            assert 195 <= hue < 325, (colour, hue)
    assert len(set(charts.PALETTE)) == len(charts.PALETTE) >= 6
    assert charts.BASELINE_COLOR not in charts.PALETTE
    for status in ("#134d13", "#5e4100", "#741010", "#d9f0d9", "#fdeec2", "#f7cfcf"):  # style.css.j2
        hue, _ = _hue_degrees(status)
        assert not 195 <= hue < 325, status  # the test's hue ranges do hold the status colours


_PROBE = r"""
import json, sys
import matplotlib
if sys.argv[1] != "auto":
    matplotlib.rcParams["backend"] = sys.argv[1]
def raw():
    return {k: repr(v) for k, v in dict.items(matplotlib.rcParams)}
before = raw()
import sampleaudit.report.charts as charts
after_import = raw()
looked_up_at_import = charts._matplotlib_family.cache_info().currsize + charts.fonts._covered.cache_info().currsize
svg = charts.share_bars([("a", 0.5, (0.4, 0.6), charts.color(0))], title="t", xlabel="x")
after_chart = raw()
print(json.dumps({"same_after_import": before == after_import, "same_after_chart": before == after_chart,
                  "backend": repr(dict.__getitem__(matplotlib.rcParams, "backend")),
                  "pyplot": "matplotlib.pyplot" in sys.modules, "svg": svg.startswith("<svg"),
                  "looked_up_at_import": looked_up_at_import}))
"""


@pytest.mark.parametrize("backend", ["auto", "pdf"])
def test_importing_and_drawing_leave_matplotlib_as_it_was(backend):
    out = subprocess.run([sys.executable, "-c", _PROBE, backend], capture_output=True, text=True, check=True)
    probe = json.loads(out.stdout.strip().splitlines()[-1])
    assert probe["same_after_import"] and probe["same_after_chart"], probe
    assert not probe["pyplot"] and probe["svg"]
    assert probe["looked_up_at_import"] == 0  # fonts are looked up on the first chart, not at import
    if backend == "pdf":
        assert probe["backend"] == "'pdf'"
    else:
        assert probe["backend"].startswith("<object")  # still matplotlib's "choose later" marker
