"""Charts drawn from stored results with matplotlib, returned as inline SVG text (no files, no URLs).

Every function takes values already in the results (shares, histograms, coordinates) and only
draws them, on its own matplotlib Figure (no pyplot, no backend switch, no global figure list).
Labels may come from users (checkpoint names), so they are shortened, stripped of matplotlib's
mathtext markers, and control characters, bidi overrides and characters the chart fonts cannot
draw are written as escapes. Text is drawn as paths, so CJK labels keep their glyphs in any viewer
and in the PDF without a font lookup; the same result always gives the same SVG bytes.
"""

from __future__ import annotations

import functools
import hashlib
import html
import io
import itertools
import re
from collections.abc import Sequence

import matplotlib
import matplotlib.ticker
from matplotlib.figure import Figure

from ..controls import for_page
from ..metrics.similarity import Histogram
from . import fonts

BASE_STYLE = {
    "svg.fonttype": "path",
    "svg.hashsalt": "sampleaudit",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 9,
    "legend.frameon": False,
}
BASELINE_COLOR = "#9e9e9e"
# Checkpoint colours, in audit order. None is green, amber/orange/yellow, red or teal, so no
# checkpoint ever looks like a status (pass green, warn amber, fail red): only blues, purples,
# magenta and a dark grey. Neighbours alternate in lightness (blue / sky blue / dark purple ...), so
# the first sets stay apart for colour-blind readers and in greyscale; the line styles and hatches
# below repeat the distinction. The baseline is the lighter grey BASELINE_COLOR.
PALETTE = [
    "#2166ac",  # blue
    "#56b4e9",  # sky blue (Okabe-Ito)
    "#762a83",  # dark purple
    "#c051a8",  # magenta
    "#1b1f5e",  # navy
    "#a48ad3",  # lavender
    "#555555",  # dark grey
    "#d6a6e0",  # light orchid
]
# Line styles and hatches repeat the colour distinction so a greyscale print still tells sets apart.
# Hatches are lines only: a dot or circle hatch is a pattern of hundreds of curves, and WeasyPrint
# parses a pattern again for every bar it fills (the "..", "oo" pair cost the PDF about 3 s).
LINESTYLES = ["-", "--", ":", "-.", (0, (5, 1, 1, 1)), (0, (3, 1, 1, 1, 1, 1))]
HATCHES = ["", "//", "||", "xx", "\\\\", "--", "++", "/|"]
MAX_LABEL = 32
_WIDTH = 7.2
# SVG properties matplotlib writes in style="..." that are also SVG presentation attributes. As
# attributes they mean the same to an SVG renderer, and an HTML engine that reads the style
# attributes of inline SVG as CSS (WeasyPrint) no longer warns about them.
_PRESENTATION = frozenset("""
    clip-path clip-rule color display fill fill-opacity fill-rule font-family font-size font-style
    font-weight mask opacity paint-order stroke stroke-dasharray stroke-dashoffset stroke-linecap
    stroke-linejoin stroke-miterlimit stroke-opacity stroke-width text-anchor visibility
""".split())


@functools.cache
def _matplotlib_family(path) -> str | None:
    """The matplotlib family name of a font file, added to matplotlib's font list when missing
    (its list is cached, so a font installed after the cache was built is not in it)."""
    from matplotlib import font_manager

    manager = font_manager.fontManager
    for entry in manager.ttflist:
        if str(entry.fname) == str(path):
            return entry.name
    try:
        manager.addfont(str(path))
    except (OSError, RuntimeError, ValueError):
        return None
    return next((e.name for e in manager.ttflist if str(e.fname) == str(path)), None)


def _chart_fonts() -> tuple[list[str], frozenset[int]]:
    """The font families charts use (DejaVu Sans, then a CJK font when there is one) and the
    characters they draw. Looked up on the first chart, not at import."""
    paths = [fonts.matplotlib_font_dir() / fonts.DEJAVU_SANS[(400, "normal")]]
    families = ["DejaVu Sans"]
    cjk = fonts.find_cjk_font()
    if cjk is not None:
        name = _matplotlib_family(cjk)
        if name is not None:
            families.append(name)
            paths.append(cjk)
    return families, fonts.covered(paths)


def _style() -> dict:
    families, _ = _chart_fonts()
    return {**BASE_STYLE, "font.family": families}


def color(index: int) -> str:
    """The colour of the checkpoint at `index` (in audit order), the same in every chart."""
    return PALETTE[index % len(PALETTE)]


_UNIT = re.compile(r"\\x[0-9a-f]{2}|\\u[0-9a-f]{4}|\\U[0-9a-f]{8}|.", re.S)


def _clean(text: str) -> str:
    """Text on one line with controls, bidi overrides and characters the chart fonts lack as escapes."""
    return fonts.escape_uncovered(" ".join(for_page(str(text)).split()), _chart_fonts()[1])[0]


def _plain(text: str) -> str:
    """Any text for a chart (titles, axis labels): `_clean` and no mathtext."""
    return _clean(text).replace("$", r"\$")


def label(text: str, limit: int = MAX_LABEL) -> str:
    """A user-supplied name made safe for a matplotlib label: one line, at most `limit` characters
    (an escape counts as one), controls, bidi overrides and characters the chart fonts lack shown
    as escapes, no mathtext, never hidden from a legend by a leading underscore."""
    units = _UNIT.findall(_clean(text))
    if len(units) > limit:
        units = units[: limit - 1] + ["…"]
    text = "".join(units).replace("$", r"\$")
    return " " + text if text.startswith("_") else text


def _presentation_attributes(tag: re.Match) -> str:
    """One SVG start tag with its style="..." declarations written as presentation attributes."""
    name, attrs, end = tag.group(1), tag.group(2) or "", tag.group(3)
    style = re.search(r'\sstyle="([^"]*)"', attrs)
    if style is None:
        return tag.group()
    kept, moved = [], {}
    for decl in style.group(1).split(";"):
        prop, _, value = decl.partition(":")
        prop, value = prop.strip(), value.strip()
        if not prop:
            continue
        if prop in _PRESENTATION:
            moved[prop] = value
        else:
            kept.append(f"{prop}: {value}")
    attrs = attrs[: style.start()] + attrs[style.end():]
    for prop in moved:  # a declaration overrides an attribute of the same name
        attrs = re.sub(rf'\s{re.escape(prop)}="[^"]*"', "", attrs)
    attrs += "".join(f' {prop}="{html.escape(value, quote=True)}"' for prop, value in moved.items())
    if kept:
        attrs += f' style="{"; ".join(kept)}"'
    return f"<{name}{attrs}{end}>"


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None}, dpi=110)
    text = buf.getvalue()
    # matplotlib copies label text into XML comments and adds an RDF metadata block with
    # licence URLs; drop both so no sample-derived text is raw and no external URL appears.
    text = re.sub(r"<!--.*?-->|<metadata>.*?</metadata>", "", text[text.index("<svg"):], flags=re.S)
    text = re.sub(r'\s+xmlns:(dc|cc|rdf)="[^"]*"', "", text)
    # The default stroke joins and caps, in a <style> rule for every element: set them on the root
    # instead (inherited, and overridden by each element's own attributes as before).
    rule = re.search(r'<style type="text/css">\*\{([^}<]*)\}</style>', text)
    if rule is not None:
        text = text[: rule.start()] + text[rule.end():]
        text = re.sub(r"<defs>\s*</defs>", "", text)
        text = re.sub(r"<svg\b", f'<svg style="{rule.group(1).strip()}"', text, count=1)
    text = re.sub(r"<([A-Za-z][\w:.-]*)(\s[^<>]*?)?(/?)>", _presentation_attributes, text)
    # Ids are unique within one SVG only; several charts inline in one page need distinct ids.
    # The prefix comes from the chart's own content, so the same chart is always the same bytes.
    prefix = "c" + hashlib.sha256(text.encode()).hexdigest()[:10] + "-"
    text = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m.group(1)}"', text)
    text = re.sub(r'(xlink:href|href)="#([^"]+)"', lambda m: f'{m.group(1)}="#{prefix}{m.group(2)}"', text)
    text = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}{m.group(1)})", text)
    # Scale with the page: the viewBox keeps proportions, CSS sets the width.
    return re.sub(r'<svg([^>]*?)\swidth="[^"]*"\s+height="[^"]*"', r"<svg\1", text, count=1)


def histogram_overlay(
    series: Sequence[tuple[str, Histogram, bool, str]], *, title: str, xlabel: str,
    threshold: float | None = None, width: float = _WIDTH,
) -> str:
    """Step histograms (as shares of each set) of several sets: (label, histogram, is_baseline, colour)."""
    with matplotlib.rc_context(_style()):
        fig = Figure(figsize=(width, 2.8))
        ax = fig.subplots()
        lo, hi = 1.0, -1.0
        styles = itertools.cycle(LINESTYLES)
        for name, hist, is_baseline, colour in series:
            total = sum(hist.counts) or 1
            shares = [c / total for c in hist.counts]
            used = [i for i, c in enumerate(hist.counts) if c]
            if used:
                lo, hi = min(lo, hist.edges[used[0]]), max(hi, hist.edges[used[-1] + 1])
            if is_baseline:
                ax.stairs(shares, hist.edges, label=label(name), color=colour, fill=True, alpha=0.35,
                          linewidth=0)
            else:
                ax.stairs(shares, hist.edges, label=label(name), color=colour, linewidth=1.5,
                          linestyle=next(styles))
        if threshold is not None:
            ax.axvline(threshold, color="black", linestyle="--", linewidth=1)
            ax.annotate(f"threshold {threshold:.3f}", (threshold, 0.97), xycoords=("data", "axes fraction"),
                        xytext=(-4, 0), textcoords="offset points", ha="right", va="top", fontsize=8)
            lo, hi = min(lo, threshold), max(hi, threshold)
        if lo < hi:
            pad = 0.03 * (hi - lo)
            ax.set_xlim(lo - pad, hi + pad)
        ax.set_title(_plain(title), loc="left")
        ax.set_xlabel(_plain(xlabel))
        ax.set_ylabel("share of values")
        ax.legend(fontsize=8, loc="upper left")
        return _svg(fig)


def cluster_bars(
    clusters: Sequence[str], series: Sequence[tuple[str, Sequence[float], str]], *, title: str,
    width: float = _WIDTH,
) -> str:
    """Grouped horizontal bars of each cluster's share, one bar per set (label, shares, colour),
    baseline first; clusters top to bottom, each labelled on the left (labels can be long terms)."""
    with matplotlib.rc_context(_style()):
        n_sets = max(len(series), 1)
        per_cluster = min(0.34, max(0.18, 0.07 * n_sets))
        fig = Figure(figsize=(width, 0.9 + per_cluster * max(len(clusters), 1)))
        ax = fig.subplots()
        step = 0.84 / n_sets
        ys = list(range(len(clusters)))[::-1]  # the largest cluster on top
        for k, (name, shares, colour) in enumerate(series):
            offsets = [y + 0.42 - step * (k + 0.5) for y in ys]
            ax.barh(offsets, shares, height=step, color=colour, label=label(name), hatch=HATCHES[k % len(HATCHES)],
                    edgecolor="white" if k == 0 else "black", linewidth=0.2)
        ax.set_yticks(ys)
        ax.set_yticklabels([label(c, 44) for c in clusters], fontsize=7 if len(clusters) <= 24 else 5.5)
        ax.set_ylim(-0.6, len(clusters) - 0.4)
        ax.set_title(_plain(title), loc="left")
        ax.set_ylabel("baseline cluster (largest first)")
        ax.set_xlabel("share of the set")
        ax.xaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
        # Outside the axes: a long bar never hides behind it.
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), handlelength=1.4)
        return _svg(fig)


def share_bars(
    rows: Sequence[tuple[str, float, tuple[float, float] | None, str]], *, title: str, xlabel: str,
    limits: Sequence[tuple[float, str]] = (), width: float = _WIDTH,
) -> str:
    """Horizontal bars of one share per set (label, share, interval or None, colour), top to bottom.

    `limits` are vertical reference lines (value, label), e.g. a check's warn and fail levels.
    """
    with matplotlib.rc_context(_style()):
        fig = Figure(figsize=(width, 0.5 + 0.32 * max(len(rows), 1)))
        ax = fig.subplots()
        ys = list(range(len(rows)))[::-1]
        top = 0.0
        for y, (_, value, interval, colour) in zip(ys, rows, strict=True):
            ax.barh(y, value, color=colour, height=0.62, edgecolor="black", linewidth=0.3)
            if interval is not None:
                ax.errorbar(value, y, xerr=[[value - interval[0]], [interval[1] - value]], fmt="none",
                            ecolor="black", capsize=3, linewidth=0.9)
                top = max(top, interval[1])
            ax.annotate(f"{value:.1%}", (max(value, interval[1] if interval else value), y), xytext=(4, 0),
                        textcoords="offset points", va="center", fontsize=8)
            top = max(top, value)
        for value, text in limits:
            ax.axvline(value, color="black", linestyle="--" if "fail" in text else ":", linewidth=0.9)
            ax.annotate(_plain(text), (value, 1.0), xycoords=("data", "axes fraction"), xytext=(2, 2),
                        textcoords="offset points", fontsize=7, va="bottom")
            top = max(top, value)
        ax.set_yticks(ys)
        ax.set_yticklabels([label(r[0]) for r in rows])
        ax.set_xlim(0, min(1.0, top * 1.18 + 0.02) if top > 0 else 0.1)
        ax.xaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
        ax.set_title(_plain(title), loc="left", pad=12 if limits else 6)
        ax.set_xlabel(_plain(xlabel))
        return _svg(fig)


def embedding_map(
    baseline: Sequence[Sequence[float]] | None, panels: Sequence[tuple[str, Sequence[Sequence[float]], str]],
    *, title: str, width: float = _WIDTH, columns: int = 3,
) -> str:
    """Small multiples: each checkpoint's 2-D points (in colour) over the baseline's (grey).

    The points are drawn as an embedded image inside the SVG (thousands of vector markers would
    make the HTML heavy and the PDF slow); axes and labels stay vector.
    """
    with matplotlib.rc_context(_style()):
        cols = max(1, min(columns, len(panels)))
        rows = (len(panels) + cols - 1) // cols
        side = width / cols
        fig = Figure(figsize=(width, side * rows * 0.92 + 0.35))
        axes = fig.subplots(rows, cols, squeeze=False, sharex=True, sharey=True)
        everything = [p for _, pts, _ in panels for p in pts] + [p for p in (baseline or [])]
        for ax in axes.flat:
            ax.set_visible(False)
        for ax, (name, pts, colour) in zip(axes.flat, panels, strict=False):  # spare axes stay hidden
            ax.set_visible(True)
            if baseline:
                ax.scatter([p[0] for p in baseline], [p[1] for p in baseline], s=7, c=BASELINE_COLOR,
                           alpha=0.45, linewidths=0, rasterized=True, label="baseline")
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=2.5, c=colour, alpha=0.8, linewidths=0,
                       rasterized=True, label=label(name, 24))
            ax.set_title(label(name, 28), fontsize=8, loc="left")
            ax.tick_params(labelsize=6, length=2)
            for side_ in ("top", "right"):
                ax.spines[side_].set_visible(False)
        if everything:
            xs, ys = [p[0] for p in everything], [p[1] for p in everything]
            pad_x, pad_y = 0.04 * (max(xs) - min(xs) or 1), 0.04 * (max(ys) - min(ys) or 1)
            axes.flat[0].set_xlim(min(xs) - pad_x, max(xs) + pad_x)
            axes.flat[0].set_ylim(min(ys) - pad_y, max(ys) + pad_y)
        fig.suptitle(_plain(title), x=0.01, ha="left", fontsize=9)
        fig.tight_layout()
        return _svg(fig)


def trend_lines(
    dates: Sequence[str], series: Sequence[tuple[str, Sequence[float | None], Sequence[tuple[float, float] | None], str]],
    *, title: str, ylabel: str, alerts: Sequence[str] = (), cleared: Sequence[str] = (), width: float = _WIDTH,
) -> str:
    """Daily values of one or more series (label, values, intervals or None, colour) over `dates`.

    A series' intervals, where given, are drawn as a band; alert days get a downward triangle at the
    top and a dashed vertical line, cleared days a dotted one (so they read in greyscale too). A None
    value is a gap.
    """
    with matplotlib.rc_context(_style()):
        fig = Figure(figsize=(width, 2.9))
        ax = fig.subplots()
        xs = list(range(len(dates)))
        styles = itertools.cycle(LINESTYLES)
        for name, values, intervals, colour in series:
            ys = [float("nan") if v is None else v for v in values]
            ax.plot(xs, ys, color=colour, linestyle=next(styles), marker="o", markersize=3, linewidth=1.3,
                    label=label(name))
            if any(iv is not None for iv in intervals):
                lo = [float("nan") if iv is None else iv[0] for iv in intervals]
                hi = [float("nan") if iv is None else iv[1] for iv in intervals]
                ax.fill_between(xs, lo, hi, color=colour, alpha=0.18, linewidth=0)
        for d in dict.fromkeys(alerts):
            if d in dates:
                i = dates.index(d)
                ax.axvline(i, color="black", linestyle="--", linewidth=0.8)
                ax.plot([i], [1.0], marker="v", markersize=8, color="black", linestyle="none", clip_on=False,
                        transform=ax.get_xaxis_transform())
        for d in cleared:
            if d in dates:
                ax.axvline(dates.index(d), color="black", linestyle=":", linewidth=0.8)
        step = max(1, len(dates) // 12)
        ax.set_xticks(xs[::step])
        ax.set_xticklabels([label(d[5:] if len(d) == 10 else d, 10) for d in dates[::step]])
        ax.set_title(_plain(title), loc="left")
        ax.set_ylabel(_plain(ylabel))
        if len(series) > 1:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        return _svg(fig)
