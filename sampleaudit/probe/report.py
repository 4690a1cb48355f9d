"""The probe's trend report: history -> view model -> probe.html (Jinja, autoescaped) -> probe.pdf.

Reads the history and the trend rule's reading of it; computes nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .history import History, now_iso
from .run import WATCHED, WORDS, describe_runtime, lead_figure, read_trend
from .trend import TrendRule

FILE_NAMES = {"html": "probe.html", "pdf": "probe.pdf"}
MAX_ANSWER_CHARS = 600
MAX_ANSWERS_SHOWN = 6


def _cell(fig: dict | None) -> dict:
    fig = fig or {}
    value = fig.get("value")
    low, high = fig.get("low"), fig.get("high")
    return {"value": None if value is None else f"{value:.3f}",
            "interval": None if low is None or high is None else f"[{low:.3f}, {high:.3f}]"}


def _share(v) -> str:
    return "n/a" if v is None else f"{v:.0%}"


SHORT = {"mean_similarity": "within prompts", "cross_similarity": "across prompts"}


def _trend_cell(fig: dict | None, t) -> dict:
    cell = _cell(fig)
    cell["change"] = None if t is None or t.change is None else f"{t.change:+.3f}"
    cell["margin"] = None if t is None or t.margin is None else f"{t.margin:.3f}"
    return cell


def build_probe_context(h: History, *, rule: TrendRule = TrendRule(), last: int = 3) -> dict:
    """The view model of the trend report: every value already formatted for the page."""
    from ..report import charts

    days = h.days()
    trends = read_trend(days, rule)
    episodes = sorted(((f, e) for f, ft in trends.items() for e in ft.episodes), key=lambda fe: fe[1].alert_date)
    prompts = list(dict.fromkeys(p["prompt"] for d in days for p in d.figures["prompts"]))
    rows = []
    for d in days:
        o = d.figures["overall"]
        lead = lead_figure(trends, d.date)
        t = trends[lead].on(d.date)
        state = t.state if t is not None else "no figure"
        rows.append({
            "date": d.date, "checkpoint": d.checkpoint_id, "path": d.checkpoint_path, "n": d.n_answers,
            "figures": [_trend_cell(o.get(f), trends[f].on(d.date)) for f in WATCHED],
            "high": _share(o["high_similarity_share"]), "loops": _share(o["loop_share"]), "drift": _cell(o["drift"]),
            "state": state, "triggers": f"{SHORT[lead]}: {', '.join(t.triggers)}" if t and t.triggers else "",
            "per_prompt": {f: {p["prompt"]: _cell(p.get(f)) for p in d.figures["prompts"]} for f in WATCHED},
        })
    dates = [d.date for d in days]
    series = []
    for i, f in enumerate(WATCHED):
        figs = [d.figures["overall"].get(f) or {} for d in days]
        if any(x.get("value") is not None for x in figs):
            series.append((SHORT[f], [x.get("value") for x in figs],
                           [(x["low"], x["high"]) if x.get("low") is not None else None for x in figs],
                           charts.color(i)))
    chart_overall = None if not series else charts.trend_lines(
        dates, series, title="Mean similarity of the day's answers (bands: 95% bootstrap intervals)", ylabel="cosine",
        alerts=[e.alert_date for _, e in episodes], cleared=[e.cleared_date for _, e in episodes if e.cleared_date])
    per = []
    for i, p in enumerate(prompts):
        values = []
        for d in days:
            f = next((q for q in d.figures["prompts"] if q["prompt"] == p), None)
            values.append(f["mean_similarity"].get("value") if f else None)
        per.append((p or "(no prompt)", values, [None] * len(values), charts.color(i)))
    chart_prompts = charts.trend_lines(dates, per, title="Mean similarity within each probe prompt", ylabel="cosine",
                                       alerts=[e.alert_date for _, e in episodes]) if prompts and days else None
    shown = days[-last:]
    answers = {d.date: h.answers(d.run_id) for d in shown}
    side = []
    for p in prompts:
        cols = []
        for d in shown:
            texts = [a.text for a in answers[d.date] if a.prompt == p]
            cols.append({"date": d.date, "n": len(texts), "more": max(0, len(texts) - MAX_ANSWERS_SHOWN),
                         "texts": [{"text": t[:MAX_ANSWER_CHARS], "cut": len(t) > MAX_ANSWER_CHARS}
                                   for t in texts[:MAX_ANSWERS_SHOWN]]})
        side.append({"prompt": p or "(no prompt)", "columns": cols})
    eps = []
    by_date = {d.date: d for d in days}
    for f, e in episodes:
        base = by_date[e.base_date]
        eps.append({"figure": SHORT[f], "words": WORDS[f], "alert": e.alert_date, "start": e.start_date,
                    "base": e.base_date, "checkpoint": base.checkpoint_id, "path": base.checkpoint_path,
                    "triggers": ", ".join(e.triggers), "cleared": e.cleared_date or "not yet",
                    "series": " → ".join(f"{d} {v:.3f}" for d, v in e.days)})
    embedder = h.embedder()
    runtimes = []  # (runtime, first date, last date) of each run of days on one runtime
    for d in days:
        rt = describe_runtime(d.source["embedder_runtime"]) if d.source.get("embedder_runtime") else "not recorded"
        if runtimes and runtimes[-1][0] == rt:
            runtimes[-1][2] = d.date
        else:
            runtimes.append([rt, d.date, d.date])
    return {
        "title": "sampleaudit probe", "history": str(h.path), "created": now_iso(), "rule": rule.to_dict(),
        "embedder": f"{embedder[0]} ({embedder[1]}-d)" if embedder else "n/a",
        "runtimes": [{"runtime": r, "first": a, "last": b} for r, a, b in runtimes],
        "days": rows, "prompts": [p or "(no prompt)" for p in prompts], "prompt_keys": prompts,
        "watched": [{"key": f, "short": SHORT[f], "words": WORDS[f]} for f in WATCHED],
        "episodes": eps, "open_episodes": [e for e in eps if e["cleared"] == "not yet"],
        "chart_overall": chart_overall, "chart_prompts": chart_prompts, "side": side,
        "shown_dates": [d.date for d in shown], "n_days": len(days), "first": dates[0] if dates else None,
        "last": dates[-1] if dates else None,
    }


def render_probe_html(h: History, *, rule: TrendRule = TrendRule(), last: int = 3) -> str:
    from markupsafe import Markup

    from ..report.html import _ENV

    ctx = build_probe_context(h, rule=rule, last=last)
    for key in ("chart_overall", "chart_prompts"):
        if ctx[key] is not None:
            ctx[key] = Markup(ctx[key])  # our own SVG from matplotlib (labels escaped in charts.py)
    return _ENV.get_template("probe.html.j2").render(**ctx)


def build_probe_outputs(h: History, formats: Iterable[str], *, rule: TrendRule = TrendRule(), last: int = 3,
                        warn: Callable[[str], None] | None = None) -> dict[str, str | bytes]:
    """File name -> content (probe.html, probe.pdf), built in memory."""
    formats = list(formats)
    html = render_probe_html(h, rule=rule, last=last)
    out: dict[str, str | bytes] = {}
    if "html" in formats:
        out[FILE_NAMES["html"]] = html
    if "pdf" in formats:
        from ..report.pdf import layout

        out[FILE_NAMES["pdf"]] = layout(html, warn=warn).write_pdf()
    return out
