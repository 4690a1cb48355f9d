"""The view model: AuditResult -> plain values a template can show. No metric is computed here.

Each report section is built from its part of the results and is None when that part is absent
(an older audit.json, or a metric not computed), so the template skips it cleanly. Sample text is
hostile input: it is cut here (the full text stays in audit.json) and escaped by the template.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..controls import for_page
from ..figures import BY_CHECK, BY_NAME
from ..results import AuditResult, CheckpointResult, SampleView
from . import charts

DEFAULT_MAX_CHARS = 600
SHORT_CHARS = 240  # texts that illustrate a figure (cluster examples, openings, group examples)
LOOP_CONTEXT = 100  # characters shown before and after a highlighted loop
LOOP_CHARS = 320  # characters of a loop shown (a few copies of the unit make the point)
N_LOOPS_SHOWN = 4
N_GROUPS_SHOWN = 5
N_MISSING_SHOWN = 5
N_EXAMPLES_PER_CLUSTER = 2
N_IDS_SHOWN = 8
MAX_ID_CHARS = 60
STATUS_SYMBOL = {"pass": "✓", "warn": "!", "fail": "✗"}
# Lexical figures shown next to the repetition figures: (field of LexicalResult, column title).
LEXICAL_COLUMNS = [("distinct_1", "distinct-1"), ("distinct_2", "distinct-2"), ("distinct_3", "distinct-3"),
                   ("ead_2", "EAD-2"), ("self_bleu", "self-BLEU")]


# --------------------------------------------------------------------------------------------
# small helpers


@dataclass(frozen=True)
class ShownText:
    """A text cut for display; `cut` says how many characters were left out (0: none)."""

    text: str
    cut: int


def shown(text: str | None, max_chars: int) -> ShownText:
    """`text` cut to `max_chars` characters, its control and bidi-override characters made visible."""
    text = text or ""
    return ShownText(for_page(text[:max_chars]), max(0, len(text) - max_chars))


def _get(obj, *path, default=None):
    """obj.a.b (or obj["a"]["b"]) when every step exists and is not None, else `default`."""
    for name in path:
        if obj is None:
            return default
        obj = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
    return default if obj is None else obj


def _set_label(name: str, is_baseline: bool) -> str:
    if not is_baseline:
        return name
    return "baseline" if name == "baseline" else f"baseline: {name}"


def _pct(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x:.{digits}%}"


def _num(x: float | None, fmt: str = ".3f") -> str:
    return "–" if x is None else format(x, fmt)


def _interval(section, name: str):
    """The stored (low, high) interval of `name` in `section`, or None (not computed)."""
    iv = _get(section, name + "_interval")
    if iv is None:
        return None
    low, high = _get(iv, "low"), _get(iv, "high")
    return None if low is None or high is None else (float(low), float(high))


def _pct_interval(iv) -> str:
    return "" if iv is None else f"[{iv[0]:.1%}, {iv[1]:.1%}]"


def _short_id(value: str) -> str:
    return shown(str(value), MAX_ID_CHARS).text + ("…" if len(str(value)) > MAX_ID_CHARS else "")


def _sample(view: SampleView, texts: dict[str, str], max_chars: int) -> dict:
    return {"id": _short_id(view.id), "prompt": shown(view.prompt, max_chars) if view.prompt else None,
            "text": shown(texts.get(view.id), max_chars)}


def _fmt_value(value: float, threshold: float | None = None) -> str:
    """A check value as a person reads it: a percentage when it is a share, else 3 digits."""
    if 0.0 <= value <= 1.0 and (threshold is None or 0.0 <= threshold <= 1.0):
        return f"{value:.1%}"
    return f"{value:.3g}"


def _fmt_pair(value: float, threshold: float) -> tuple[str, str]:
    """(value, threshold) for a sentence, with as few digits as still tell them apart."""
    for digits in (0, 1, 2):
        if 0.0 <= value <= 1.0 and 0.0 <= threshold <= 1.0:
            a, b = f"{value:.{digits}%}", f"{threshold:.{digits}%}"
        else:
            a, b = f"{value:.{digits + 2}g}", f"{threshold:.{digits + 2}g}"
        if a != b:
            return a, b
    return a, b


def check_phrase(ch) -> str:
    """A check's value against its threshold, for a sentence: mode_collapse (47% > 30%)."""
    a, b = _fmt_pair(ch.value, ch.threshold)
    op = ">" if ch.value > ch.threshold else "<" if ch.value < ch.threshold else "="
    return f"{ch.name} ({a} {op} {b})"


def join_and(items: Sequence[str]) -> str:
    """Items joined for a sentence: a; a and b; a, b and c."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


# --------------------------------------------------------------------------------------------
# the recommendation sentence and what is within noise

def comparisons(result: AuditResult) -> list[dict]:
    """The stored comparisons with the top-ranked checkpoint (checks.comparisons_to_top), for display."""
    out = []
    for c in _get(result, "comparisons", default=[]):
        fmt = BY_NAME[c.figure].format if c.figure in BY_NAME else _pct
        within = c.verdict == "within_noise"
        short = "within noise" if within else f"{c.verdict} ({'worse' if c.worse else 'better'})"
        out.append({"metric": c.label, "a": c.top, "b": c.other, "a_value": fmt(c.top_value),
                    "b_value": fmt(c.other_value), "within_noise": within,
                    "verdict": short if within else short + " beyond noise", "short": short})
    return out


def recommendation(result: AuditResult) -> str:
    """One plain sentence: which checkpoint is healthiest, what fails elsewhere, what is noise."""
    by_name = {c.name: c for c in result.checkpoints}
    best = by_name[result.ranking[0]]
    failing = {n: [ch for ch in by_name[n].checks if ch.status == "fail"] for n in result.ranking}
    warning = {n: [ch for ch in by_name[n].checks if ch.status == "warn"] for n in result.ranking}
    several = len(result.ranking) > 1
    parts = []
    if best.status == "pass":
        parts.append(f"{best.name} is the healthiest and passes every check" if several
                     else f"{best.name} passes every check")
    elif best.status == "warn":
        lead = f"{best.name} is the healthiest but" if several else best.name
        parts.append(f"{lead} warns on {join_and([check_phrase(ch) for ch in warning[best.name]])}")
    else:
        lead = f"no checkpoint passes; {best.name} ranks first but" if several else best.name
        parts.append(f"{lead} fails {join_and([check_phrase(ch) for ch in failing[best.name]])}")
    for name in result.ranking[1:]:
        if failing[name]:
            parts.append(f"{name} fails {join_and([check_phrase(ch) for ch in failing[name]])}")
        elif warning[name]:
            parts.append(f"{name} warns on {join_and([check_phrase(ch) for ch in warning[name]])}")
    for name in result.ranking:  # what a checkpoint that fails or warns on coverage misses
        gone = _missing_phrase(by_name[name], result)
        if gone and any(ch.figure == "coverage_ratio" and ch.status != "pass" for ch in by_name[name].checks):
            parts.append(gone)
    notes = list(_get(result, "ranking_notes", default=[]))
    if notes:  # decided in the pipeline (checks.ranking_notes): neighbours whose order is noise
        for note in notes:
            if note.within_noise:
                parts.append(f"{note.better} and {note.worse} are within noise of each other")
    else:  # results merged without ranking notes: per figure, from the stored comparisons
        noise = [c for c in comparisons(result) if c["within_noise"] and by_name[c["b"]].status == best.status]
        for name in dict.fromkeys(c["b"] for c in noise):
            metrics = [c["metric"] for c in noise if c["b"] == name]
            parts.append(f"{best.name} and {name} are within noise of each other on {join_and(metrics)}")
    return "; ".join(parts) + "."


def cluster_name(result: AuditResult, cluster: int) -> str:
    """A baseline cluster as a reader knows it: its number and its label terms."""
    terms = _get(result, "baseline", "coverage", "terms", default=[])
    label = " / ".join(terms[cluster]) if cluster < len(terms) and terms[cluster] else ""
    return f"{cluster} ({label})" if label else str(cluster)


def _missing_phrase(c: CheckpointResult, result: AuditResult) -> str:
    """"ckpt-35k misses 12 of 22 clusters, the largest: plasmid / sequencing / genome"."""
    cov = _get(c, "coverage")
    gone = list(_get(cov, "missing_clusters", default=[]))
    if not gone:
        return ""
    largest = " / ".join(gone[0].terms) if gone[0].terms else f"cluster {gone[0].cluster}"
    return f"{c.name} misses {cov.n_missing} of {cov.baseline_clusters} clusters, the largest: {largest}"


# --------------------------------------------------------------------------------------------
# sections


def _badge(status: str, value: str = "", title: str = "") -> dict:
    return {"status": status, "label": status.upper(), "symbol": STATUS_SYMBOL.get(status, "?"),
            "value": value, "title": title}


def _verdict(result: AuditResult, colours: dict[str, str]) -> dict:
    check_names = list(dict.fromkeys(ch.name for c in result.checkpoints for ch in c.checks))
    rank_of = {name: i + 1 for i, name in enumerate(result.ranking)}
    rows, messages, data_model = [], [], []
    for c in sorted(result.checkpoints, key=lambda c: rank_of[c.name]):
        by_name = {ch.name: ch for ch in c.checks}
        cells = []
        for n in check_names:
            ch = by_name.get(n)
            cells.append(_badge(ch.status, _fmt_value(ch.value, ch.threshold), ch.message) if ch else None)
        rows.append({"rank": rank_of[c.name], "name": c.name, "colour": colours[c.name], "n_samples": c.n_samples,
                     "status": _badge(c.status), "cells": cells})
        messages += [{"checkpoint": c.name, "check": ch.name, "status": _badge(ch.status), "message": ch.message}
                     for ch in c.checks]
        verdict = _get(c, "verdict")
        if verdict is not None and _get(verdict, "message"):
            data_model.append({"checkpoint": c.name, "colour": colours[c.name], "text": str(verdict.message),
                               "kind": str(_get(verdict, "kind", default=""))})
    cmps = comparisons(result)
    figures = list(dict.fromkeys(c["metric"] for c in cmps))
    matrix = []
    if cmps:
        first = {c["metric"]: c["a_value"] for c in cmps}
        matrix.append({"name": cmps[0]["a"], "colour": colours[cmps[0]["a"]], "top": True,
                       "cells": [{"value": first.get(f), "short": "", "within_noise": False} for f in figures]})
        for name in dict.fromkeys(c["b"] for c in cmps):
            cell = {c["metric"]: c for c in cmps if c["b"] == name}
            matrix.append({"name": name, "colour": colours[name], "top": False, "cells": [
                {"value": cell[f]["b_value"], "short": cell[f]["short"], "within_noise": cell[f]["within_noise"]}
                if f in cell else None for f in figures]})
    return {
        "sentence": recommendation(result),
        "check_names": check_names,
        "rows": rows,
        "messages": messages,
        "comparisons": cmps,
        "notes": [{"better": n.better, "worse": n.worse, "within_noise": n.within_noise, "reason": n.reason}
                  for n in _get(result, "ranking_notes", default=[])],
        "comparison_figures": figures,
        "comparison_rows": matrix,
        "data_model": data_model,
        "ranking_rule": result.ranking_rule,
        "warnings": result.all_warnings(),
    }


def _similarity(result: AuditResult, colours: dict[str, str]) -> dict | None:
    sets = []
    if result.baseline is not None and result.baseline.similarity is not None:
        sets.append((result.baseline.name, result.baseline.similarity, True, charts.BASELINE_COLOR))
    sets += [(c.name, c.similarity, False, colours[c.name]) for c in result.checkpoints if c.similarity]
    if not any(not b for _, _, b, _ in sets):
        return None
    first = next(s for _, s, b, _ in sets if not b)
    rows = []
    for name, s, is_baseline, colour in sets:
        iv = _interval(s, "high_similarity_share")
        vendi_iv = _interval(s, "vendi_score")
        rows.append({
            "name": name, "label": _set_label(name, is_baseline), "is_baseline": is_baseline, "colour": colour,
            "n": s.n_samples,
            "mean": _num(s.mean), "p50": _num(s.quantiles.get("p50")), "p90": _num(s.quantiles.get("p90")),
            "p99": _num(s.quantiles.get("p99")), "nn_p50": _num(s.nearest_neighbor.quantiles.get("p50")),
            "high_share": _pct(s.high_similarity_share), "high_interval": _pct_interval(iv),
            "near_dup": _pct(_get(s, "near_duplicate_share")) if _get(s, "near_duplicate_share") is not None else None,
            "vendi": _num(_get(s, "vendi_score"), ".1f") if _get(s, "vendi_score") is not None else None,
            "vendi_interval": f"[{vendi_iv[0]:.1f}, {vendi_iv[1]:.1f}]" if vendi_iv else "",
        })
    thresholds = {(round(s.threshold, 6), s.threshold_source) for _, s, b, _ in sets if not b}
    svg_pairwise = charts.histogram_overlay(
        [(_set_label(n, b), s.histogram, b, col) for n, s, b, col in sets], title="Pairwise cosine similarity",
        xlabel="cosine similarity between two samples of the same set")
    svg_nn = charts.histogram_overlay(
        [(_set_label(n, b), s.nearest_neighbor.histogram, b, col) for n, s, b, col in sets],
        title="Nearest-neighbour similarity",
        xlabel="cosine similarity of each sample to its most similar other sample", threshold=first.threshold)
    return {
        "threshold": f"{first.threshold:.3f}",
        "threshold_source": first.threshold_source,
        "threshold_description": first.threshold_description,
        "thresholds_differ": len(thresholds) > 1,
        "rows": rows,
        "has_interval": any(r["high_interval"] for r in rows),
        "has_near_dup": any(r["near_dup"] is not None for r in rows),
        "has_vendi": any(r["vendi"] is not None for r in rows),
        "estimates": [{"label": _set_label(n, b), "description": _get(s, "estimate", "description")}
                      for n, s, b, _ in sets if _get(s, "estimate") is not None],
        "charts": [svg_pairwise, svg_nn],
    }


def _map_chart(result: AuditResult, colours: dict[str, str]) -> str | None:
    """Small multiples of the stored 2-D map (result.map), one panel per checkpoint."""
    emap = _get(result, "map")
    panels = [(c.name, c.map_points, colours[c.name]) for c in result.checkpoints if c.map_points]
    if emap is None or not panels:
        return None
    base = _get(emap, "baseline")
    explained = _get(emap, "explained_variance")
    fitted = "the baseline" if base else "all sets"
    what = "Character n-gram vectors" if _get(emap, "representation") == "lexical" else "Embeddings"
    title = (f"{what} in 2-D (PCA fitted on {fitted}"
             + (f", {explained:.0%} of the variance" if explained is not None else "") + ")"
             + (": baseline in grey, each checkpoint in colour" if base else ""))
    return charts.embedding_map(base, panels, title=title)


def _coverage(result: AuditResult, colours: dict[str, str], max_chars: int) -> dict | None:
    covered = [(c, c.coverage) for c in result.checkpoints if _get(c, "coverage") is not None]
    map_svg = _map_chart(result, colours)
    if not covered and map_svg is None:
        return None
    rows, missing, over = [], [], []
    for c, cov in covered:
        iv = _interval(cov, "coverage_ratio")
        own = _get(cov, "sample_clusters")
        sc = _get(cov, "sample_clustering")
        rows.append({
            "name": c.name, "colour": colours[c.name],
            "covered": _get(cov, "covered_clusters"), "total": _get(cov, "baseline_clusters"),
            "ratio": _pct(_get(cov, "coverage_ratio"), 0), "interval": _pct_interval(iv),
            "js": _num(_get(cov, "js_divergence")),
            "unassigned": _pct(_get(cov, "unassigned_share")) if _get(cov, "unassigned_share") is not None else "–",
            "own_clusters": own if isinstance(own, int) else _get(sc, "n_clusters"),
            "baseline_own_clusters": _get(sc, "baseline_n_clusters"),
            "n_missing": _get(cov, "n_missing", default=len(_get(cov, "missing_clusters", default=[]))),
        })
        gone = []
        for m in list(_get(cov, "missing_clusters", default=[]))[:N_MISSING_SHOWN]:
            base_texts = _get(result, "baseline", "texts", default={})
            examples = [shown(base_texts.get(e.id), min(max_chars, SHORT_CHARS))
                        for e in list(_get(m, "examples", default=[]))[:N_EXAMPLES_PER_CLUSTER]]
            gone.append({"cluster": _get(m, "cluster"), "terms": " / ".join(_get(m, "terms", default=[])),
                         "baseline_share": _pct(_get(m, "baseline_share")),
                         "sample_share": _pct(_get(m, "sample_share")),
                         "examples": [e for e in examples if e.text]})
        if gone:
            missing.append({"name": c.name, "colour": colours[c.name], "n_missing": rows[-1]["n_missing"],
                            "clusters": gone})
        many = [{"cluster": cluster_name(result, _get(h, "cluster")), "baseline_share": _pct(_get(h, "baseline_share")),
                 "sample_share": _pct(_get(h, "sample_share"))}
                for h in list(_get(cov, "over_represented", default=[]))[:N_MISSING_SHOWN]]
        if many:
            over.append({"name": c.name, "colour": colours[c.name], "clusters": many})
    chart = None
    if covered:
        first = covered[0][1]
        hist = sorted(_get(first, "histogram", default=[]), key=lambda h: (-_get(h, "baseline_share", default=0),
                                                                            _get(h, "cluster", default=0)))
        order = [_get(h, "cluster") for h in hist]
        if order:
            series = [("baseline", [_get(h, "baseline_share", default=0.0) for h in hist], charts.BASELINE_COLOR)]
            for c, cov in covered:
                share = {_get(h, "cluster"): _get(h, "sample_share", default=0.0)
                         for h in _get(cov, "histogram", default=[])}
                series.append((c.name, [share.get(k, 0.0) for k in order], colours[c.name]))
            chart = charts.cluster_bars([cluster_name(result, k) for k in order], series,
                                        title="Share of each baseline cluster: baseline vs each checkpoint")
    baseline = _get(result, "baseline", "coverage") or _get(result, "baseline", "clusters")
    first_cov = covered[0][1] if covered else None
    return {
        "rows": rows,
        "has_interval": any(r["interval"] for r in rows),
        "has_own_clusters": any(r["own_clusters"] is not None for r in rows),
        "method": _get(baseline, "method") or _get(first_cov, "method"),
        "baseline_clusters": _get(baseline, "baseline_clusters") or _get(first_cov, "baseline_clusters"),
        "natural_clusters": _get(baseline, "natural_clusters") or _get(first_cov, "natural_clusters"),
        "n_baseline": _get(baseline, "n_baseline"),
        "min_mass_ratio": _get(first_cov, "min_mass_ratio"),
        "chart": chart,
        "map": map_svg,
        "missing": missing,
        "over": over,
        "representation": _get(baseline, "representation") or _get(first_cov, "representation") or "embedding",
        "representation_reason": _get(baseline, "representation_reason"),
    }


def highlight(text: str, start: int, end: int | None, *, max_chars: int, context: int = LOOP_CONTEXT) -> dict:
    """The loop `text[start:end]` with some text either side, each part cut for display."""
    n = len(text)
    start = min(max(int(start), 0), n)
    end = n if end is None else min(max(int(end), start), n)
    before_from = max(0, start - context)
    loop = shown(text[start:end], max_chars)
    after = text[end:end + context]
    return {"cut_before": before_from, "before": for_page(text[before_from:start]), "loop": loop,
            "after": for_page(after), "cut_after": max(0, n - end - len(after))}


def _repetition(result: AuditResult, colours: dict[str, str], max_chars: int) -> dict | None:
    sets = []
    base_rep = _get(result, "baseline", "repetition")
    if base_rep is not None:
        sets.append((result.baseline.name, base_rep, True, charts.BASELINE_COLOR, None))
    sets += [(c.name, c.repetition, False, colours[c.name], c) for c in result.checkpoints
             if _get(c, "repetition") is not None]
    if not any(not b for _, _, b, _, _ in sets):
        return None
    rows, loops, openings, bars, opening_bars = [], [], [], [], []
    for name, rep, is_baseline, colour, c in sets:
        seq4 = _get(rep, "seq_rep", "4")
        loop_iv = _interval(rep, "loop_share")
        lexical = _get(c, "lexical") if c is not None else _get(result, "baseline", "lexical")
        rows.append({
            "name": name, "label": _set_label(name, is_baseline), "is_baseline": is_baseline, "colour": colour,
            "loop_share": _pct(_get(rep, "loop_share")), "loop_interval": _pct_interval(loop_iv),
            "n_looped": _get(rep, "n_looped"), "n": _get(rep, "n_samples"),
            "seq_rep_4": _num(_get(seq4, "mean")), "compression": _num(_get(rep, "compression_ratio", "p50")),
            "opening_share": _pct(_get(rep, "opening_top_share")),
            "lexical": lexical,
        })
        if _get(rep, "loop_share") is not None:
            bars.append((_set_label(name, is_baseline), _get(rep, "loop_share"), loop_iv, colour))
        if _get(rep, "opening_top_share") is not None:
            opening_bars.append((_set_label(name, is_baseline), _get(rep, "opening_top_share"), None, colour))
        if c is None:
            continue
        items = [{
            "id": _short_id(rec.id), "unit": shown(rec.unit, 120), "n_repeats": rec.n_repeats,
            "coverage": _pct(rec.coverage_share, 0),
            "text": highlight(c.texts.get(rec.id, ""), rec.start_char, rec.end_char,
                              max_chars=min(max_chars, LOOP_CHARS)),
        } for rec in c.worst_loops[:N_LOOPS_SHOWN]]
        loops.append({"name": name, "colour": colour, "n_looped": _get(rep, "n_looped", default=0),
                      "n": _get(rep, "n_samples"), "entries": items})
        top = [{"text": shown(_get(o, "text"), SHORT_CHARS), "count": _get(o, "count"), "share": _pct(_get(o, "share"))}
               for o in _get(rep, "openings", default=[])]
        openings.append({"name": name, "colour": colour, "entries": top})
    limits = _check_limits(result, BY_NAME["loop_share"].check)
    chart = charts.share_bars(bars, title="Share of samples caught in a loop", xlabel="share of samples",
                              limits=limits) if bars else None
    opening_chart = charts.share_bars(
        opening_bars, title="Share of samples that start with the most common repeated opening",
        xlabel="share of samples", limits=_check_limits(result, BY_NAME["opening_top_share"].check),
    ) if opening_bars else None
    shown_lexical = [(k, label) for k, label in LEXICAL_COLUMNS
                     if any(_get(r["lexical"], k) is not None for r in rows)]
    lexical_keys = [label for _, label in shown_lexical]
    for r in rows:
        r["has_lexical"] = any(_get(r["lexical"], k) is not None for k, _ in shown_lexical)
        r["lexical"] = [_num(_get(r["lexical"], k)) for k, _ in shown_lexical]
    return {"rows": rows, "has_interval": any(r["loop_interval"] for r in rows), "lexical_keys": lexical_keys,
            "chart": chart, "opening_chart": opening_chart, "loops": loops, "openings": openings}


def _check_limits(result: AuditResult, name: str) -> list[tuple[float, str]]:
    """(value, label) of the warn and fail levels the audit used for check `name`."""
    checks = _get(result, "provenance", "config", "checks", default={})
    levels = checks.get(name) if isinstance(checks, dict) else None
    if not isinstance(levels, dict):
        return []
    return [(float(levels[k]), f"{k} {levels[k]:.0%}") for k in ("warn", "fail")
            if isinstance(levels.get(k), (int, float))]


def _prompts(c: CheckpointResult, max_chars: int) -> dict | None:
    p = _get(c, "prompts")
    if p is None:
        return None
    return {
        "n_prompts": _get(p, "n_prompts"), "n_answers": _get(p, "n_answers"),
        "within": _num(_get(p, "within_prompt_similarity")), "across": _num(_get(p, "across_prompt_similarity")),
        "distinct_score": _pct(_get(p, "distinct_score")), "collapsed": _pct(_get(p, "collapsed_prompt_share")),
        "least": [{"prompt": shown(_get(s, "prompt"), SHORT_CHARS), "n_answers": _get(s, "n_answers"),
                   "distinct_k": _get(s, "distinct_k"), "similarity": _num(_get(s, "mean_similarity")),
                   "example": shown(c.texts.get(_get(s, "example_id")), min(max_chars, SHORT_CHARS))}
                  for s in list(_get(p, "least_diverse", default=[]))[:N_GROUPS_SHOWN]],
    }


def _groups(c: CheckpointResult, max_chars: int) -> dict | None:
    s = c.similarity
    if s is None or _get(s, "near_duplicate_share") is None:
        return None
    n = c.n_samples or 1
    groups = []
    for g in list(_get(s, "near_duplicate_groups", default=[]))[:N_GROUPS_SHOWN]:
        ids = [str(i) for i in (_get(g, "ids") or _get(g, "members", default=[]))]
        size = _get(g, "size", default=len(ids))
        groups.append({"size": size, "share": _pct(size / n), "ids": [_short_id(i) for i in ids[:N_IDS_SHOWN]],
                       "more_ids": max(0, size - min(len(ids), N_IDS_SHOWN)),
                       "example": shown(c.texts.get(_get(g, "example_id")), max_chars)})
    return {"threshold": _num(_get(s, "near_duplicate_threshold")), "n_groups": _get(s, "n_near_duplicate_groups"),
            "share": _pct(_get(s, "near_duplicate_share")), "groups": groups}


def _generation(result: AuditResult, name: str) -> dict | None:
    """How sampleaudit generated a checkpoint's samples, when it did (provenance.generation)."""
    g = _get(result, "provenance", "generation", default={}).get(name)
    if not g:
        return None
    options = g.get("options") or {}
    shown_options = ", ".join(f"{k} {v}" for k, v in options.items() if k in ("temperature", "top_p", "top_k",
                                                                               "max_new_tokens", "seed"))
    return {"model": str(g.get("model", "")), "n_samples": g.get("n_samples"), "options": shown_options,
            "length_share": _pct(g.get("length_share"))}


def _samples(result: AuditResult, colours: dict[str, str], max_chars: int) -> list[dict]:
    out = []
    for i, c in enumerate(result.checkpoints):
        pairs = c.similarity.most_similar_pairs if c.similarity else []
        out.append({
            "name": c.name, "anchor": f"samples-{i + 1}", "colour": colours[c.name], "status": _badge(c.status),
            "path": c.path, "n_samples": c.n_samples, "n_empty": c.n_empty,
            "examples": [_sample(e, c.texts, max_chars) for e in c.examples],
            "pairs": [{"similarity": f"{p.similarity:.3f}", "a": _sample(p.a, c.texts, max_chars),
                       "b": _sample(p.b, c.texts, max_chars)}
                      for p in pairs],
            "groups": _groups(c, max_chars),
            "prompts": _prompts(c, max_chars),
            "generation": _generation(result, c.name),
        })
    return out


def _flatten(data, prefix: str = "") -> list[tuple[str, str]]:
    out = []
    for key, value in (data or {}).items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            out += _flatten(value, name)
        else:
            out.append((name, "unset" if value is None else str(value)))
    return out


def _provenance(result: AuditResult) -> dict:
    p = result.provenance
    config = p.config or {}
    sims = [(c.name, c.similarity) for c in result.checkpoints if c.similarity]
    thresholds = [{"name": "similarity threshold" + (f" ({n})" if len(sims) > 1 else ""),
                   "value": f"{s.threshold:.4f}", "source": s.threshold_source,
                   "description": s.threshold_description} for n, s in sims]
    seen = {(t["value"], t["source"]) for t in thresholds}
    if len(seen) == 1 and len(thresholds) > 1:
        thresholds = [dict(thresholds[0], name="similarity threshold (every checkpoint)")]
    origins = _get(p, "settings", default={})
    for name, levels in (config.get("checks") or {}).items():
        if isinstance(levels, dict):
            value = ", ".join(f"{k} {v}" for k, v in levels.items())
            where = sorted({origins[f"checks.{name}.{k}"] for k in levels if f"checks.{name}.{k}" in origins})
            figure = BY_CHECK.get(name)
            thresholds.append({"name": f"check {name}", "value": value, "source": ", ".join(where) or "default",
                               "description": f"checks.{name}" + (f": {figure.meaning}" if figure else "")})
    inputs = []
    if result.baseline is not None:
        inputs.append({"role": "baseline", "set": result.baseline})
    inputs += [{"role": "checkpoint", "set": c} for c in result.checkpoints]
    sources = [{"path": _get(s, "path"), "created_at": _get(s, "created_at"),
                "tool_version": _get(s, "tool_version"), "device": _get(s, "device"),
                "run_seconds": _get(s, "run_seconds"),
                "checkpoints": ", ".join(_get(s, "checkpoints", default=[]))}
               for s in _get(result, "sources", default=[])]
    return {"thresholds": thresholds, "inputs": inputs, "config": _flatten(config), "sources": sources,
            "run_seconds": f"{p.run_seconds:.1f}", "settings": sorted(origins.items()),
            "seeds": sorted(_get(p, "seeds", default={}).items()), "executor": _get(p, "executor", default="local")}


# --------------------------------------------------------------------------------------------


def build_context(result: AuditResult) -> dict:
    """Everything the HTML template shows, in display order; absent sections are None."""
    max_chars = _get(result, "provenance", "config", "report", "max_chars", default=DEFAULT_MAX_CHARS)
    colours = {c.name: charts.color(i) for i, c in enumerate(result.checkpoints)}
    names = [c.name for c in result.checkpoints]
    sections = {
        "verdict": _verdict(result, colours),
        "similarity": _similarity(result, colours),
        "coverage": _coverage(result, colours, max_chars),
        "repetition": _repetition(result, colours, max_chars),
        "samples": _samples(result, colours, max_chars),
        "provenance": _provenance(result),
    }
    toc = [(key, title) for key, title in [
        ("verdict", "Verdict"), ("similarity", "Similarity"), ("coverage", "Coverage"),
        ("repetition", "Repetition"), ("samples", "The samples themselves"), ("provenance", "Provenance"),
    ] if sections[key]]
    shown_names = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return {
        "result": result,
        "title": "sampleaudit report",
        "subtitle": shown_names,
        "created": result.provenance.created_at.replace("T", " "),
        "toc": toc,
        "max_chars": max_chars,
        **sections,
    }
