"""Charts drawn from stored results with matplotlib, returned as inline SVG text (no files, no URLs).

Every function takes values already in the results (shares, histograms, coordinates) and only
draws them. Labels may come from users (checkpoint names), so they are shortened and stripped of
matplotlib's mathtext markers; text is drawn as paths, so CJK labels keep their glyphs in any
viewer and in the PDF without a font lookup.
"""

from __future__ import annotations

import io
import itertools
import os
import re
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import font_manager  # noqa: E402

from ..metrics.similarity import Histogram  # noqa: E402

# DejaVu Sans for Latin text, WenQuanYi Micro Hei (Debian fonts-wqy-microhei) for CJK glyphs
# when it is installed (without it, CJK labels show as boxes but nothing fails).
_CJK_FONTS = {
    "WenQuanYi Micro Hei": ("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",),
    "Noto Sans CJK SC": ("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",),
}


def _font_families() -> list[str]:
    known = {f.name for f in font_manager.fontManager.ttflist}
    for name, paths in _CJK_FONTS.items():
        # matplotlib's font list is cached: a font installed after the cache was built is
        # missing from it until it is added by path.
        for path in paths:
            if name not in known and os.path.exists(path):
                try:
                    font_manager.fontManager.addfont(path)
                    known.add(name)
                except (OSError, RuntimeError):
                    pass
    return ["DejaVu Sans"] + [name for name in _CJK_FONTS if name in known]


_FONTS = _font_families()
_STYLE = {
    "font.family": _FONTS,
    "svg.fonttype": "path",
    "svg.hashsalt": "sampleaudit",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 9,
    "legend.frameon": False,
}
BASELINE_COLOR = "#9e9e9e"
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
# Line styles and hatches repeat the colour distinction so a greyscale print still tells sets apart.
LINESTYLES = ["-", "--", ":", "-.", (0, (5, 1, 1, 1)), (0, (3, 1, 1, 1, 1, 1))]
HATCHES = ["", "//", "..", "xx", "\\\\", "--", "++", "oo"]
MAX_LABEL = 32
_WIDTH = 7.2
_chart_ids = itertools.count(1)


def color(index: int) -> str:
    """The colour of the checkpoint at `index` (in audit order), the same in every chart."""
    return PALETTE[index % len(PALETTE)]


def label(text: str, limit: int = MAX_LABEL) -> str:
    """A user-supplied name made safe for a matplotlib label: short, no mathtext, one line."""
    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("$", r"\$")


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None}, dpi=110)
    plt.close(fig)
    text = buf.getvalue()
    # matplotlib copies label text into XML comments and adds an RDF metadata block with
    # licence URLs; drop both so no sample-derived text is raw and no external URL appears.
    text = re.sub(r"<!--.*?-->|<metadata>.*?</metadata>", "", text[text.index("<svg"):], flags=re.S)
    text = re.sub(r'\s+xmlns:(dc|cc|rdf)="[^"]*"', "", text)
    # Ids are unique within one SVG only; several charts inline in one page need distinct ids.
    prefix = f"c{next(_chart_ids)}-"
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
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(width, 2.8))
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
        ax.set_title(title, loc="left")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("share of values")
        ax.legend(fontsize=8, loc="upper left")
        return _svg(fig)


def cluster_bars(
    clusters: Sequence[str], series: Sequence[tuple[str, Sequence[float], str]], *, title: str,
    width: float = _WIDTH,
) -> str:
    """Grouped bars of each cluster's share: one bar per set (label, shares, colour), baseline first."""
    with plt.rc_context(_STYLE):
        n_sets = max(len(series), 1)
        fig, ax = plt.subplots(figsize=(width, 2.9))
        step = 0.84 / n_sets
        for k, (name, shares, colour) in enumerate(series):
            xs = [i - 0.42 + step * (k + 0.5) for i in range(len(clusters))]
            ax.bar(xs, shares, width=step, color=colour, label=label(name), hatch=HATCHES[k % len(HATCHES)],
                   edgecolor="white" if k == 0 else "black", linewidth=0.2)
        ax.set_xticks(range(len(clusters)))
        ax.set_xticklabels(clusters, fontsize=7 if len(clusters) <= 24 else 5.5, rotation=0)
        ax.set_xlim(-0.6, len(clusters) - 0.4)
        ax.set_title(title, loc="left")
        ax.set_xlabel("baseline cluster (largest first)")
        ax.set_ylabel("share of the set")
        ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
        # Outside the axes: a tall bar never hides behind it.
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), handlelength=1.4)
        return _svg(fig)


def share_bars(
    rows: Sequence[tuple[str, float, tuple[float, float] | None, str]], *, title: str, xlabel: str,
    limits: Sequence[tuple[float, str]] = (), width: float = _WIDTH,
) -> str:
    """Horizontal bars of one share per set (label, share, interval or None, colour), top to bottom.

    `limits` are vertical reference lines (value, label), e.g. a check's warn and fail levels.
    """
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(width, 0.5 + 0.32 * max(len(rows), 1)))
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
            ax.annotate(text, (value, 1.0), xycoords=("data", "axes fraction"), xytext=(2, 2),
                        textcoords="offset points", fontsize=7, va="bottom")
            top = max(top, value)
        ax.set_yticks(ys)
        ax.set_yticklabels([label(r[0]) for r in rows])
        ax.set_xlim(0, min(1.0, top * 1.18 + 0.02) if top > 0 else 0.1)
        ax.xaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
        ax.set_title(title, loc="left", pad=12 if limits else 6)
        ax.set_xlabel(xlabel)
        return _svg(fig)


def embedding_map(
    baseline: Sequence[Sequence[float]] | None, panels: Sequence[tuple[str, Sequence[Sequence[float]], str]],
    *, title: str, width: float = _WIDTH, columns: int = 3,
) -> str:
    """Small multiples: each checkpoint's 2-D points (in colour) over the baseline's (grey).

    The points are drawn as an embedded image inside the SVG (thousands of vector markers would
    make the HTML heavy and the PDF slow); axes and labels stay vector.
    """
    with plt.rc_context(_STYLE):
        cols = max(1, min(columns, len(panels)))
        rows = (len(panels) + cols - 1) // cols
        side = width / cols
        fig, axes = plt.subplots(rows, cols, figsize=(width, side * rows * 0.92 + 0.35), squeeze=False,
                                 sharex=True, sharey=True)
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
        fig.suptitle(title, x=0.01, ha="left", fontsize=9)
        fig.tight_layout()
        return _svg(fig)
