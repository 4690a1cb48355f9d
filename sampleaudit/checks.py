"""Metric results -> named checks (pass / warn / fail), the data-vs-model verdict, the ranking
rule with its noise notes, and the exit code. Decisions only: no metric is computed here."""

from __future__ import annotations

from collections.abc import Sequence

from .config import Config, LowerLimits, UpperLimits
from .figures import GATED, WITH_INTERVAL, Figure
from .metrics.stats import Interval, compare
from .results import (
    STATUS_ORDER,
    CheckpointResult,
    CheckResult,
    FigureComparison,
    RankingNote,
    SimilaritySection,
    Status,
    Verdict,
)


def limit_check(name: str, value: float, limits: UpperLimits | LowerLimits, what: str,
                figure: str | None = None) -> CheckResult:
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
    return CheckResult(name, status, round(value, 6), threshold, message, figure)


def check(figure: Figure, holder, config: Config) -> CheckResult | None:
    """The check of one gated figure of the registry, or None when the figure was not measured."""
    value = figure.value(holder)
    if value is None:
        return None
    section = getattr(holder, figure.section)
    return limit_check(figure.check, value, getattr(config.checks, figure.check), figure.describe(section),
                       figure.name)


def run_checks(holder, config: Config) -> list[CheckResult]:
    """Every gated figure's check, in registry order, for the sections held by `holder`
    (a CheckpointResult or anything with its similarity/coverage/repetition attributes)."""
    return [c for c in (check(f, holder, config) for f in GATED) if c is not None]


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

def penalty(c: CheckpointResult) -> float:
    """The ranking's tie-breaker: the sum of the gated shares' badness (figures.ranking_rule)."""
    total = sum(f.badness(v) for f in GATED if (v := f.value(c)) is not None)
    return round(total, 6)


def _key(c: CheckpointResult):
    n_fail = sum(ch.status == "fail" for ch in c.checks)
    n_warn = sum(ch.status == "warn" for ch in c.checks)
    return (STATUS_ORDER[c.status], n_fail, n_warn, penalty(c), c.name)


def rank(checkpoints: Sequence[CheckpointResult]) -> list[str]:
    """Names from healthiest to worst, by RANKING_RULE."""
    return [c.name for c in sorted(checkpoints, key=_key)]


def _intervals(c: CheckpointResult) -> dict[str, tuple[float, Interval]]:
    """figure -> (value, interval) for each figure with an interval this checkpoint has one for."""
    out = {}
    for f in WITH_INTERVAL:
        value, interval = f.value(c), f.interval_of(c)
        if value is not None and interval is not None:
            out[f.name] = (value, interval)
    return out


def comparisons_to_top(checkpoints: Sequence[CheckpointResult], ranking: Sequence[str]) -> list[FigureComparison]:
    """Each checkpoint against the top-ranked one on every headline figure both have intervals for."""
    by_name = {c.name: c for c in checkpoints}
    top = _intervals(by_name[ranking[0]])
    out = []
    for name in ranking[1:]:
        other = _intervals(by_name[name])
        for f in WITH_INTERVAL:
            if f.name not in top or f.name not in other:
                continue
            (a, a_iv), (b, b_iv) = top[f.name], other[f.name]
            verdict = compare(a, a_iv, b, b_iv).verdict
            worse = None if verdict == "within_noise" else (verdict == "higher") == f.higher_is_worse
            out.append(FigureComparison(f.name, f.label, ranking[0], name, a, b, verdict, worse))
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
