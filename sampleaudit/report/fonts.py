"""The font files the PDF and the charts draw with, and the characters those fonts can draw.

Latin text uses the DejaVu fonts that matplotlib ships in its own data folder, so it never depends
on what a machine has installed. CJK text uses a CJK font when one is installed (known paths first,
then matplotlib's font list), confirmed by its character map. Any other character is written as a
visible escape such as \\u4e00 by `escape_uncovered`, so no font is ever asked for a glyph it lacks.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# The file names in matplotlib's mpl-data/fonts/ttf folder: (CSS weight, CSS style) -> file.
DEJAVU_SANS = {
    (400, "normal"): "DejaVuSans.ttf",
    (700, "normal"): "DejaVuSans-Bold.ttf",
    (400, "oblique"): "DejaVuSans-Oblique.ttf",
    (700, "oblique"): "DejaVuSans-BoldOblique.ttf",
}
DEJAVU_MONO = {
    (400, "normal"): "DejaVuSansMono.ttf",
    (700, "normal"): "DejaVuSansMono-Bold.ttf",
    (400, "oblique"): "DejaVuSansMono-Oblique.ttf",
    (700, "oblique"): "DejaVuSansMono-BoldOblique.ttf",
}

# Where CJK fonts live when a package installed them, most wanted first: Debian/Ubuntu
# (fonts-wqy-microhei, fonts-wqy-zenhei, fonts-noto-cjk, fonts-droid-fallback, fonts-arphic-*),
# Fedora and Arch (Noto CJK), macOS and Windows system fonts.
KNOWN_CJK_PATHS = (
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/google-noto-cjk/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc",
    "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
    "/usr/share/fonts/truetype/arphic/uming.ttc",
    "/System/Library/Fonts/PingFang.ttc",
    "/System/Library/Fonts/STHeiti Light.ttc",
    "/System/Library/Fonts/Hiragino Sans GB.ttc",
    "/Library/Fonts/Arial Unicode.ttf",
    "C:/Windows/Fonts/msyh.ttc",
    "C:/Windows/Fonts/simsun.ttc",
    "C:/Windows/Fonts/msgothic.ttc",
)
# Names in matplotlib's font list worth opening to check (opening every font would be slow).
_CJK_NAME = re.compile(
    r"CJK|WenQuanYi|Hei|Song|Ming|Kai|Gothic|Mincho|Fallback|Hiragino|PingFang|YaHei|SimSun"
    r"|Noto Sans (SC|TC|HK|JP|KR)|Source Han|Nanum|Malgun|Meiryo|IPA|Takao|Unifont", re.I)
# A CJK font draws at least this many of the 20,992 ideographs in U+4E00..U+9FFF (GB 2312 has
# 6,763 and JIS X 0208 6,355; a font with a few hundred is a symbol or subset font).
MIN_IDEOGRAPHS = 5000
# Characters a page lays out without a glyph (line breaks, tab stops, spaces between words).
LAYOUT_CHARS = frozenset(map(ord, "\t\n\r "))
# The scripts a CJK font is for: CJK symbols and punctuation, kana, Bopomofo, Hangul, ideographs
# (with extensions and compatibility forms), halfwidth and fullwidth forms.
_CJK_RANGES = ((0x2E80, 0x2FDF), (0x3000, 0x31FF), (0x3200, 0x4DBF), (0x4E00, 0x9FFF), (0xA960, 0xA97F),
               (0xAC00, 0xD7FF), (0xF900, 0xFAFF), (0xFE30, 0xFE4F), (0xFF00, 0xFFEF), (0x20000, 0x3FFFF))


@dataclass(frozen=True)
class FontFace:
    """One font file declared for the PDF: its path and the CSS weight and style it stands for."""

    path: Path
    weight: int = 400
    style: str = "normal"


def matplotlib_font_dir() -> Path:
    import matplotlib

    return Path(matplotlib.get_data_path()) / "fonts" / "ttf"


def dejavu_faces(kind: str = "sans") -> tuple[FontFace, ...]:
    """The DejaVu Sans (kind "sans") or DejaVu Sans Mono ("mono") faces matplotlib ships."""
    files = {"sans": DEJAVU_SANS, "mono": DEJAVU_MONO}[kind]
    folder = matplotlib_font_dir()
    faces = tuple(FontFace(folder / name, weight, style) for (weight, style), name in files.items())
    missing = [str(f.path) for f in faces if not f.path.is_file()]
    if missing:
        raise FileNotFoundError(f"matplotlib's font file {missing[0]} is missing; reinstall matplotlib")
    return faces


@functools.cache
def charmap(path: Path) -> frozenset[int]:
    """The code points every face in the font file maps to a glyph (all faces of a collection)."""
    from fontTools.ttLib import TTCollection, TTFont

    path = Path(path)
    with path.open("rb") as fh:
        collection = fh.read(4) == b"ttcf"
    faces = TTCollection(str(path), lazy=True).fonts if collection else [TTFont(str(path), lazy=True)]
    maps = [frozenset(face.getBestCmap() or ()) for face in faces]
    return frozenset.intersection(*maps) if maps else frozenset()


def covered(paths: Iterable[Path]) -> frozenset[int]:
    """The code points at least one of the font files draws, plus the layout characters."""
    return _covered(tuple(Path(p) for p in paths))


@functools.cache
def _covered(paths: tuple[Path, ...]) -> frozenset[int]:
    return frozenset(LAYOUT_CHARS).union(*(charmap(p) for p in paths))


@functools.cache
def emoji_presentation() -> frozenset[int]:
    """Code points a text engine draws as emoji whatever the font stack says (Unicode's
    Emoji_Presentation, the emoji variation selector U+FE0F and the keycap mark U+20E3): Pango
    looks for an emoji font for them, so a PDF must not leave them to its own fonts."""
    import regex  # the `regex` package knows Unicode's emoji properties; `re` does not

    every = "".join(map(chr, range(0x2000, 0x20000)))  # all emoji lie in this span
    return frozenset(map(ord, regex.findall(r"\p{Emoji_Presentation}", every))) | {0xFE0F, 0x20E3}


def _is_cjk_font(path: Path) -> bool:
    try:
        cmap = charmap(path)
    except Exception:  # an unreadable or foreign file is just not a candidate
        return False
    return sum(0x4E00 <= cp <= 0x9FFF for cp in cmap) >= MIN_IDEOGRAPHS


@functools.cache
def find_cjk_font() -> Path | None:
    """An installed font file that draws Chinese and Japanese ideographs, or None.

    Looks at the paths packages install CJK fonts to, then at matplotlib's font list; each
    candidate's character map is checked with fontTools (no fontconfig tools needed).
    """
    for name in KNOWN_CJK_PATHS:
        path = Path(name)
        if path.is_file() and _is_cjk_font(path):
            return path
    from matplotlib import font_manager

    for entry in font_manager.fontManager.ttflist:
        path = Path(entry.fname)
        if _CJK_NAME.search(entry.name) and path.is_file() and _is_cjk_font(path):
            return path
    return None


def family_name(path: Path) -> str:
    """The family name stored in a font file (its first face, for a collection)."""
    from fontTools.ttLib import TTCollection, TTFont

    with Path(path).open("rb") as fh:
        collection = fh.read(4) == b"ttcf"
    font = TTCollection(str(path), lazy=True).fonts[0] if collection else TTFont(str(path), lazy=True)
    return font["name"].getBestFamilyName()


def is_cjk(char: str) -> bool:
    cp = ord(char)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def escape(char: str) -> str:
    """One character written as a Python-style escape: \\x1b, \\u4e00, \\U0001f600."""
    return char.encode("unicode_escape").decode("ascii")


def escape_uncovered(text: str, cover: frozenset[int]) -> tuple[str, list[str]]:
    """`text` with every character outside `cover` written as an escape; also the characters escaped
    (one entry per occurrence, in order)."""
    escaped: list[str] = []

    def sub(match: re.Match) -> str:
        char = match.group()
        if ord(char) in cover:
            return char
        escaped.append(char)
        return escape(char)

    # Printable ASCII is in every font used here; test only the rest.
    return re.sub(r"[^\x20-\x7e]", sub, text), escaped
