"""The view model: AuditResult -> plain values a template can show. No metric is computed here."""

from __future__ import annotations

from dataclasses import dataclass

from ..results import AuditResult, SampleView
from . import charts

DEFAULT_MAX_CHARS = 600


@dataclass(frozen=True)
class ShownText:
    """A text cut for display; `cut` says how many characters were left out (0: none)."""

    text: str
    cut: int


def shown(text: str, max_chars: int) -> ShownText:
    if len(text) <= max_chars:
        return ShownText(text, 0)
    return ShownText(text[:max_chars], len(text) - max_chars)


def _sample(view: SampleView, max_chars: int) -> dict:
    return {"id": view.id, "prompt": view.prompt, "text": shown(view.text, max_chars)}


def _pct(x: float) -> str:
    return f"{x:.1%}"


def build_context(result: AuditResult) -> dict:
    """Everything the HTML template shows, in display order."""
    max_chars = result.provenance.config.get("report", {}).get("max_chars", DEFAULT_MAX_CHARS)
    check_names = list(dict.fromkeys(ch.name for c in result.checkpoints for ch in c.checks))
    rank_of = {name: i + 1 for i, name in enumerate(result.ranking)}
    rows = []
    for c in sorted(result.checkpoints, key=lambda c: rank_of[c.name]):
        by_name = {ch.name: ch for ch in c.checks}
        rows.append({
            "name": c.name, "rank": rank_of[c.name], "status": c.status, "n_samples": c.n_samples,
            "checks": [by_name.get(n) for n in check_names],
        })
    sets = ([("baseline: " + result.baseline.name, result.baseline.similarity, True)]
            if result.baseline and result.baseline.similarity else [])
    sets += [(c.name, c.similarity, False) for c in result.checkpoints if c.similarity]
    threshold = result.checkpoints[0].similarity.threshold if result.checkpoints[0].similarity else None
    similarity_charts = [
        charts.histogram_overlay([(n, s.histogram, b) for n, s, b in sets], title="Pairwise cosine similarity",
                                 xlabel="cosine similarity between two samples"),
        charts.histogram_overlay([(n, s.nearest_neighbor.histogram, b) for n, s, b in sets],
                                 title="Nearest-neighbour similarity", threshold=threshold,
                                 xlabel="cosine similarity of each sample to its most similar other sample"),
    ]
    similarity_rows = [{
        "name": n, "is_baseline": b, "mean": f"{s.mean:.3f}", "p50": f"{s.quantiles['p50']:.3f}",
        "p90": f"{s.quantiles['p90']:.3f}", "p99": f"{s.quantiles['p99']:.3f}",
        "nn_p50": f"{s.nearest_neighbor.quantiles['p50']:.3f}", "high_share": _pct(s.high_similarity_share),
        "n": s.n_samples,
    } for n, s, b in sets]
    checkpoints = [{
        "name": c.name, "status": c.status, "path": c.path, "n_samples": c.n_samples, "n_empty": c.n_empty,
        "examples": [_sample(e, max_chars) for e in c.examples],
        "pairs": [{"similarity": f"{p.similarity:.3f}", "a": _sample(p.a, max_chars), "b": _sample(p.b, max_chars)}
                  for p in (c.similarity.most_similar_pairs if c.similarity else [])],
    } for c in result.checkpoints]
    first = result.checkpoints[0].similarity
    return {
        "result": result,
        "title": "sampleaudit report: " + ", ".join(c.name for c in result.checkpoints),
        "check_names": check_names,
        "verdict_rows": rows,
        "recommendation": recommendation(result),
        "similarity_charts": similarity_charts,
        "similarity_rows": similarity_rows,
        "threshold": first.threshold if first else None,
        "threshold_description": first.threshold_description if first else "",
        "checkpoints": checkpoints,
        "inputs": [s for s in ([result.baseline] if result.baseline else []) + list(result.checkpoints)],
        "max_chars": max_chars,
    }


def recommendation(result: AuditResult) -> str:
    """One plain sentence: which checkpoint is healthiest and what fails elsewhere."""
    by_name = {c.name: c for c in result.checkpoints}
    best = by_name[result.ranking[0]]
    parts = []
    if best.status == "pass":
        parts.append(f"{best.name} is the healthiest and passes every check")
    else:
        parts.append(f"{best.name} ranks first but does not pass every check")
    for name in result.ranking:
        failing = [ch for ch in by_name[name].checks if ch.status == "fail"]
        if failing:
            what = " and ".join(f"{ch.name} ({ch.value:.0%} > {ch.threshold:.0%})" for ch in failing)
            parts.append(f"{name} fails {what}")
    return "; ".join(parts) + "."
