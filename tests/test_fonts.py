"""Font files of the PDF and charts: matplotlib's DejaVu, a CJK font found by its character map."""

from __future__ import annotations

from pathlib import Path

import pytest

from sampleaudit.report import fonts


@pytest.fixture
def fresh_finder():
    fonts.find_cjk_font.cache_clear()
    yield fonts.find_cjk_font
    fonts.find_cjk_font.cache_clear()


def test_dejavu_comes_from_matplotlib():
    import matplotlib

    folder = Path(matplotlib.get_data_path())
    for kind in ("sans", "mono"):
        faces = fonts.dejavu_faces(kind)
        assert len(faces) == 4 and all(f.path.is_file() and folder in f.path.parents for f in faces)
        assert {(f.weight, f.style) for f in faces} == {(400, "normal"), (700, "normal"), (400, "oblique"),
                                                        (700, "oblique")}
    assert fonts.family_name(fonts.dejavu_faces("sans")[0].path) == "DejaVu Sans"
    assert fonts.family_name(fonts.dejavu_faces("mono")[0].path) == "DejaVu Sans Mono"


def test_charmap_and_coverage():
    sans = fonts.dejavu_faces("sans")[0].path
    cmap = fonts.charmap(sans)
    assert all(ord(c) in cmap for c in "Az09é€—…≥") and ord("检") not in cmap
    cover = fonts.covered([sans])
    assert cover >= cmap and {9, 10, 13, 32} <= cover


def test_escape_uncovered_counts_each_occurrence():
    cover = fonts.covered([fonts.dejavu_faces("sans")[0].path])
    text, escaped = fonts.escape_uncovered("a检\tb检\x07𝔘😀é", cover)  # DejaVu Sans draws 😀, not 𝔘
    assert text == "a\\u68c0\tb\\u68c0\\x07\\U0001d518😀é"
    assert escaped == ["检", "检", "\x07", "𝔘"]


def test_emoji_presentation():
    emoji = fonts.emoji_presentation()
    assert {ord("😀"), ord("⌚"), 0x1F1E6, 0xFE0F} <= emoji  # 0x1F1E6: a regional indicator
    assert not {ord("☺"), ord("✓"), ord("a"), ord("检")} & emoji  # text presentation by default


def test_is_cjk():
    assert all(fonts.is_cjk(c) for c in "检あア한。１")
    assert not any(fonts.is_cjk(c) for c in "aé€—😀ب")


def test_finder_rejects_fonts_without_ideographs(monkeypatch, fresh_finder, tmp_path):
    from matplotlib import font_manager

    junk = tmp_path / "fake.ttc"
    junk.write_bytes(b"ttcf not a font")
    monkeypatch.setattr(fonts, "KNOWN_CJK_PATHS", (str(junk), str(fonts.dejavu_faces("sans")[0].path),
                                                   str(tmp_path / "missing.ttf")))
    monkeypatch.setattr(font_manager.fontManager, "ttflist", [])
    assert fresh_finder() is None


def test_finder_finds_an_installed_cjk_font(fresh_finder):
    path = fresh_finder()
    if path is None:
        pytest.skip("no CJK font installed (apt-get install fonts-wqy-microhei)")
    cmap = fonts.charmap(path)
    assert sum(0x4E00 <= cp <= 0x9FFF for cp in cmap) >= fonts.MIN_IDEOGRAPHS
    assert all(ord(c) in cmap for c in "检查点循环生成")


def test_finder_reads_matplotlib_font_list(monkeypatch, fresh_finder):
    from matplotlib import font_manager

    installed = fresh_finder()
    if installed is None:
        pytest.skip("no CJK font installed (apt-get install fonts-wqy-microhei)")
    fresh_finder.cache_clear()
    monkeypatch.setattr(fonts, "KNOWN_CJK_PATHS", ())
    entry = font_manager.FontEntry(fname=str(installed), name=fonts.family_name(installed))
    monkeypatch.setattr(font_manager.fontManager, "ttflist", [entry])
    assert fresh_finder() == installed
