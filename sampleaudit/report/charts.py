"""Charts drawn from results with matplotlib, returned as inline SVG text (no files, no URLs)."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import font_manager  # noqa: E402

from ..metrics.similarity import Histogram  # noqa: E402

# DejaVu Sans for Latin text, WenQuanYi Micro Hei (Debian fonts-wqy-microhei) for CJK glyphs
# when it is installed (without it, CJK labels show as boxes but nothing fails).
_FONTS = ["DejaVu Sans"] + [
    name for name in ("WenQuanYi Micro Hei", "Noto Sans CJK SC")
    if any(f.name == name for f in font_manager.fontManager.ttflist)
]
_STYLE = {
    "font.family": _FONTS,
    "svg.fonttype": "path",
    "svg.hashsalt": "sampleaudit",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 9,
}
BASELINE_COLOR = "#9e9e9e"
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    # matplotlib copies label text into XML comments and adds an RDF metadata block with
    # licence URLs; drop both so no sample-derived text is raw and no external URL appears.
    text = re.sub(r"<!--.*?-->|<metadata>.*?</metadata>", "", text[text.index("<svg"):], flags=re.S)
    return re.sub(r'\s+xmlns:(dc|cc|rdf)="[^"]*"', "", text)


def histogram_overlay(
    series: Sequence[tuple[str, Histogram, bool]], *, title: str, xlabel: str,
    threshold: float | None = None, width: float = 7.0,
) -> str:
    """Step histograms (as shares of each set) of several sets; (label, histogram, is_baseline)."""
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(width, 2.8))
        lo, hi = 1.0, -1.0
        colors = iter(PALETTE * 4)
        for label, hist, is_baseline in series:
            total = sum(hist.counts) or 1
            shares = [c / total for c in hist.counts]
            used = [i for i, c in enumerate(hist.counts) if c]
            if used:
                lo, hi = min(lo, hist.edges[used[0]]), max(hi, hist.edges[used[-1] + 1])
            color = BASELINE_COLOR if is_baseline else next(colors)
            ax.stairs(shares, hist.edges, label=label, color=color, fill=is_baseline,
                      alpha=0.45 if is_baseline else 1.0, linewidth=1.6)
        if threshold is not None:
            ax.axvline(threshold, color="black", linestyle="--", linewidth=1)
            ax.annotate(f"threshold {threshold:.3f}", (threshold, ax.get_ylim()[1] * 0.92),
                        xytext=(-4, 0), textcoords="offset points", ha="right", fontsize=8)
            lo, hi = min(lo, threshold), max(hi, threshold)
        if lo < hi:
            pad = 0.03 * (hi - lo)
            ax.set_xlim(lo - pad, hi + pad)
        ax.set_title(title, loc="left")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("share of values")
        ax.legend(frameon=False, fontsize=8)
        return _svg(fig)
