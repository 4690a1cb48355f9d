"""Metric results -> named checks (pass / warn / fail), the data-vs-model verdict, the ranking
rule with its noise notes, and the exit code. Decisions only: no metric is computed here."""

from __future__ import annotations

from collections.abc import Sequence

from .config import Config, LowerLimits, UpperLimits
from .metrics.stats import Interval, compare
from .results import (
    STATUS_ORDER,
    CheckpointResult,
    CheckResult,
    CoverageSection,
    FigureComparison,
    RankingNote,
    SimilaritySection,
    Status,
    Verdict,
)
from .metrics.repetition import RepetitionResult


def limit_check(name: str, value: float, limits: UpperLimits | LowerLimits, what: str) -> CheckResult:
    """Compare a share with its warn/fail limits; the limits' type says which side is worse."""
    upper = limits.higher_is_worse
    beyond = (lambda x, lim: x > lim) if upper else (lambda x, lim: x < lim)
    side = "above" if upper else "below"
    if beyond(value, limits.fail):
        status, threshold = "fail", limits.fail
    elif beyond(value, limits.warn):
        status, threshold = "warn", limits.warn
    else:
        status, threshold = "pass", limits.warn
    verb = f"{side} the {status} level" if status != "pass" else f"not {side} the warn level"
    message = f"{what} ({verb} {threshold:.0%})"
    return CheckResult(name, status, round(value, 6), threshold, message)


def mode_collapse_check(similarity: SimilaritySection, config: Config) -> CheckResult:
    share = similarity.high_similarity_share
    return limit_check("mode_collapse", share, config.checks.mode_collapse,
                       f"{share:.1%} of samples have a neighbour with cosine >= {similarity.threshold:.3f}")


def coverage_check(coverage: CoverageSection, config: Config) -> CheckResult:
    return limit_check("coverage", coverage.coverage_ratio, config.checks.coverage,
                       f"{coverage.covered_clusters} of {coverage.baseline_clusters} baseline clusters covered "
                       f"({coverage.coverage_ratio:.0%})")


def repetition_checks(rep: RepetitionResult, config: Config) -> list[CheckResult]:
    if rep.loop_share is None:  # no samples at all
        return []
    checks = [limit_check("repetition_loops", rep.loop_share, config.checks.repetition_loops,
                          f"{rep.loop_share:.1%} of samples end in a repetition loop")]
    if rep.opening_top_share is not None:
        opened = (f"{rep.opening_top_share:.1%} of samples open with \u201c{_clip(rep.opening_top_text, 60)}\u201d"
                  if rep.opening_top_text is not None else "no opening starts more than one sample")
        checks.append(limit_check("repeated_openings", rep.opening_top_share, config.checks.repeated_openings, opened))
    return checks


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def worst(statuses: Sequence[Status]) -> Status:
    return max(statuses, key=STATUS_ORDER.__getitem__, default="pass")


# --- data vs model -------------------------------------------------------------------------

#: A checkpoint whose Vendi score falls below this share of the baseline's (same size) is less
#: diverse than its data; so is one whose high-similarity interval lies above the baseline's.
VENDI_RATIO_LIMIT = 0.8


def data_vs_model(ck: SimilaritySection, base: SimilaritySection, config: Config) -> Verdict:
    """"The model is less diverse than its data" versus "the data itself is this homogeneous".

    Both sets are measured at the same size and the same threshold. The model is less diverse
    when its Vendi score is below VENDI_RATIO_LIMIT of the baseline's, or when its
    high_similarity_share interval lies wholly above the baseline's. Otherwise, when the
    baseline itself is homogeneous in absolute terms (its share of samples with a neighbour at
    the embedder's fixed threshold would warn on mode_collapse), the data is this homogeneous;
    else the checkpoint is as diverse as its data.
    """
    ratio = ck.vendi_score / base.vendi_score if ck.vendi_score and base.vendi_score else None
    no_interval = Interval(ck.high_similarity_share, ck.high_similarity_share)
    shares = compare(base.high_similarity_share, base.high_similarity_share_interval or no_interval,
                     ck.high_similarity_share, ck.high_similarity_share_interval or no_interval)
    figures = {
        "high_similarity_share": ck.high_similarity_share,
        "baseline_high_similarity_share": base.high_similarity_share,
        "vendi_score": ck.vendi_score,
        "baseline_vendi_score": base.vendi_score,
        "vendi_ratio": round(ratio, 6) if ratio is not None else None,
        "fixed_threshold_share": ck.fixed_threshold_share,
        "baseline_fixed_threshold_share": base.fixed_threshold_share,
    }
    numbers = f"{ck.high_similarity_share:.1%} vs {base.high_similarity_share:.1%} highly similar"
    if ratio is not None:
        numbers += f"; Vendi {ck.vendi_score:.1f} vs {base.vendi_score:.1f} on {base.n_samples} baseline samples"
    if (ratio is not None and ratio < VENDI_RATIO_LIMIT) or shares.verdict == "higher":
        return Verdict("model_less_diverse", f"The model is less diverse than its data ({numbers}).", figures)
    base_abs = base.fixed_threshold_share
    if base_abs is not None and base_abs > config.checks.mode_collapse.warn:
        numbers += f"; {base_abs:.1%} of the baseline has a neighbour at cosine >= {base.fixed_threshold:.2f}"
        return Verdict("data_homogeneous", f"The data itself is this homogeneous ({numbers}).", figures)
    return Verdict("as_diverse_as_data", f"The samples are about as diverse as the data ({numbers}).", figures)


# --- ranking -------------------------------------------------------------------------------

RANKING_RULE = (
    "checkpoints are ordered by their worst check (pass < warn < fail), then by the number of failed "
    "and of warned checks, then by a penalty: high_similarity_share + (1 - coverage_ratio) + loop_share "
    "+ opening_top_share (each in [0, 1]; a figure not measured counts 0), lower is healthier, then by "
    "name; neighbours whose intervals (high_similarity_share, coverage_ratio, vendi_score) all overlap "
    "and whose checks agree are reported as within noise"
)


def penalty(c: CheckpointResult) -> float:
    """The ranking's tie-breaker: the sum of the headline shares (see RANKING_RULE)."""
    total = c.similarity.high_similarity_share if c.similarity else 0.0
    total += (1.0 - c.coverage.coverage_ratio) if c.coverage else 0.0
    if c.repetition:
        total += (c.repetition.loop_share or 0.0) + (c.repetition.opening_top_share or 0.0)
    return round(total, 6)


def _key(c: CheckpointResult):
    n_fail = sum(ch.status == "fail" for ch in c.checks)
    n_warn = sum(ch.status == "warn" for ch in c.checks)
    return (STATUS_ORDER[c.status], n_fail, n_warn, penalty(c), c.name)


def rank(checkpoints: Sequence[CheckpointResult]) -> list[str]:
    """Names from healthiest to worst, by RANKING_RULE."""
    return [c.name for c in sorted(checkpoints, key=_key)]


#: Figures that carry an interval: (section, field, label, higher_is_healthier).
HEADLINE_FIGURES = [
    ("similarity", "high_similarity_share", "high-similarity share", False),
    ("coverage", "coverage_ratio", "cluster coverage", True),
    ("similarity", "vendi_score", "Vendi score", True),
]


def _intervals(c: CheckpointResult) -> dict[str, tuple[float, Interval]]:
    """figure -> (value, interval) for each headline figure this checkpoint has an interval for."""
    out = {}
    for section_name, name, _, _ in HEADLINE_FIGURES:
        section = getattr(c, section_name)
        value = getattr(section, name, None) if section else None
        interval = getattr(section, name + "_interval", None) if section else None
        if value is not None and interval is not None:
            out[name] = (value, interval)
    return out


def comparisons_to_top(checkpoints: Sequence[CheckpointResult], ranking: Sequence[str]) -> list[FigureComparison]:
    """Each checkpoint against the top-ranked one on every headline figure both have intervals for."""
    by_name = {c.name: c for c in checkpoints}
    top = _intervals(by_name[ranking[0]])
    out = []
    for name in ranking[1:]:
        other = _intervals(by_name[name])
        for figure, label, healthier_high in ((f, lab, h) for _, f, lab, h in HEADLINE_FIGURES):
            if figure not in top or figure not in other:
                continue
            (a, a_iv), (b, b_iv) = top[figure], other[figure]
            verdict = compare(a, a_iv, b, b_iv).verdict
            worse = None if verdict == "within_noise" else (verdict == "higher") != healthier_high
            out.append(FigureComparison(figure, label, ranking[0], name, a, b, verdict, worse))
    return out


def ranking_notes(checkpoints: Sequence[CheckpointResult], ranking: Sequence[str]) -> list[RankingNote]:
    """For each pair of neighbours in the ranking: is the order beyond noise, and why."""
    by_name = {c.name: c for c in checkpoints}
    notes = []
    for better, worse in zip(ranking, ranking[1:]):
        a, b = by_name[better], by_name[worse]
        status_a = {ch.name: STATUS_ORDER[ch.status] for ch in a.checks}
        worse_on = [ch.name for ch in b.checks if STATUS_ORDER[ch.status] > status_a.get(ch.name, 0)]
        if worse_on:
            notes.append(RankingNote(better, worse, False, f"{worse} has a worse status on {', '.join(worse_on)}"))
            continue
        ia, ib = _intervals(a), _intervals(b)
        beyond = [f"{name} {ia[name][0]:.3g} vs {ib[name][0]:.3g}" for name in ia.keys() & ib.keys()
                  if compare(ia[name][0], ia[name][1], ib[name][0], ib[name][1]).verdict != "within_noise"]
        if beyond:
            notes.append(RankingNote(better, worse, False, "beyond noise: " + "; ".join(sorted(beyond))))
        elif ia.keys() & ib.keys():
            notes.append(RankingNote(better, worse, True,
                                     f"{better} and {worse} are within noise of each other: their checks agree "
                                     "and every interval overlaps"))
        else:
            notes.append(RankingNote(better, worse, False, "no intervals to compare; ordered by penalty"))
    return notes


def exit_code(checkpoints: Sequence[CheckpointResult], fail_on: str) -> int:
    """0 when no checkpoint reaches the `fail_on` status ("warn", "fail" or "never"), else 1."""
    if fail_on == "never":
        return 0
    limit = STATUS_ORDER[fail_on]
    return int(any(STATUS_ORDER[c.status] >= limit for c in checkpoints))
