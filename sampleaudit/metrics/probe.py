"""One day's probe figures: similarity among the answers to fixed probe prompts, per prompt and overall.

Definitions (pure functions: embeddings, prompt groups and texts in, figures out):

- mean_similarity: the mean cosine over pairs of distinct answers to the same prompt, and overall
  the mean of those per-prompt means (prompts with at least two answers). When every prompt has a
  single answer, the overall figure is the mean cosine over all pairs of answers (per prompt: None).
- high_similarity_share: the share of answers whose most similar other answer (to the same prompt;
  across all answers when each prompt has one) has cosine >= `threshold`.
- loop_share: the share of answers in which `repetition_stats` finds a repetition loop.
- cross_similarity: the mean cosine between answers to different prompts, over all such pairs;
  per prompt, between its answers and the other prompts' answers. It catches a collapse onto a few
  answers that every prompt shares, which the within-prompt figure misses when each prompt rarely
  draws the same one twice. Defined only when every prompt has at least two answers and there are
  two prompts or more (with one answer per prompt, the overall mean_similarity is already this).
- drift: 1 - cosine between the mean embedding of today's answers to a prompt and the mean embedding
  of the reference day's answers to it; overall, the mean over prompts found on both days. It is
  above 0 even for two samples of one model (more so with few answers): read it as a trend. Its
  interval is value +- z * bootstrap sd (see `_normal_figure`).

Intervals are seeded percentile bootstraps that resample answers within each prompt (stratified), so
the spread is that of drawing other answers from the same checkpoint, which is what day-to-day noise
is. A resample of mean similarity averages over pairs of distinct *original* answers: a duplicate
drawn twice would add a pair of cosine 1 and inflate the figure. `se` is the bootstrap standard
deviation, which the trend rule (sampleaudit/probe/trend.py) scales its noise margin by.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..errors import InputError
from ._validate import check_aligned, check_embeddings, check_unit_norm
from .repetition import repetition_stats

DEFAULT_THRESHOLD = 0.9
DEFAULT_N_RESAMPLES = 200
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class Figure:
    """A value with its bootstrap interval [low, high] and standard deviation `se` (None: undefined)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    se: float | None = None

    def to_dict(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high, "se": self.se}

    @classmethod
    def from_dict(cls, d: dict | None) -> Figure:
        d = d or {}
        return cls(d.get("value"), d.get("low"), d.get("high"), d.get("se"))


@dataclass(frozen=True)
class GroupFigures:
    """The figures of one prompt (`prompt` is its text) or, with prompt None, of the whole day."""

    prompt: str | None
    n_answers: int
    mean_similarity: Figure
    high_similarity_share: float | None
    loop_share: float
    drift: Figure
    cross_similarity: Figure = Figure(None)

    def to_dict(self) -> dict:
        return {"prompt": self.prompt, "n_answers": self.n_answers,
                "mean_similarity": self.mean_similarity.to_dict(),
                "cross_similarity": self.cross_similarity.to_dict(),
                "high_similarity_share": self.high_similarity_share, "loop_share": self.loop_share,
                "drift": self.drift.to_dict()}

    @classmethod
    def from_dict(cls, d: dict) -> GroupFigures:
        return cls(d.get("prompt"), int(d["n_answers"]), Figure.from_dict(d.get("mean_similarity")),
                   d.get("high_similarity_share"), float(d.get("loop_share") or 0.0), Figure.from_dict(d.get("drift")),
                   Figure.from_dict(d.get("cross_similarity")))


@dataclass(frozen=True)
class DayFigures:
    """A day's figures: `overall` and one entry per prompt, in first-seen order."""

    overall: GroupFigures
    prompts: tuple[GroupFigures, ...]
    threshold: float
    n_resamples: int
    confidence: float
    seed: int

    def to_dict(self) -> dict:
        return {"overall": self.overall.to_dict(), "prompts": [p.to_dict() for p in self.prompts],
                "threshold": self.threshold, "n_resamples": self.n_resamples, "confidence": self.confidence,
                "seed": self.seed}

    @classmethod
    def from_dict(cls, d: dict) -> DayFigures:
        return cls(GroupFigures.from_dict(d["overall"]), tuple(GroupFigures.from_dict(p) for p in d["prompts"]),
                   float(d["threshold"]), int(d["n_resamples"]), float(d["confidence"]), int(d["seed"]))


def _r(x: float) -> float:
    return round(float(x), 6)


def _figure(value: float, draws: np.ndarray, confidence: float) -> Figure:
    low, high = np.quantile(draws, [(1 - confidence) / 2, (1 + confidence) / 2])
    return Figure(_r(value), _r(low), _r(high), _r(draws.std(ddof=1)) if draws.size > 1 else 0.0)


def _pair_mean(gram: np.ndarray) -> float:
    k = gram.shape[0]
    return float((gram.sum() - np.trace(gram)) / (k * (k - 1)))


def _resampled_pair_means(gram: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Mean similarity over pairs of distinct original answers in each resample (rows of `draws`).

    A resample that drew one answer only has no such pair; it keeps the full-set value.
    """
    sub = gram[draws[:, :, None], draws[:, None, :]]
    distinct = draws[:, :, None] != draws[:, None, :]
    n = distinct.sum(axis=(1, 2))
    total = np.where(distinct, sub, 0.0).sum(axis=(1, 2))
    return np.where(n > 0, total / np.maximum(n, 1), _pair_mean(gram))


def _nn_share(gram: np.ndarray, threshold: float) -> float:
    g = gram.copy()
    np.fill_diagonal(g, -np.inf)
    return float((g.max(axis=1) >= threshold).mean())


def _normal_figure(value: float, draws: np.ndarray, confidence: float) -> Figure:
    """value +- z * se, clipped at 0: the drift's percentile interval would sit above its value (a
    resample repeats answers, which moves its mean embedding further from the other day's)."""
    from scipy.stats import norm

    se = float(draws.std(ddof=1))
    half = float(norm.ppf((1 + confidence) / 2)) * se
    return Figure(_r(value), _r(max(0.0, value - half)), _r(value + half), _r(se))


def _drift_draws(x: np.ndarray, ref: np.ndarray, rng, n_resamples: int) -> tuple[float, np.ndarray]:
    def gap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        na, nb = np.linalg.norm(a, axis=-1), np.linalg.norm(b, axis=-1)
        return 1.0 - (a * b).sum(axis=-1) / np.maximum(na * nb, 1e-12)

    value = float(gap(x.mean(axis=0), ref.mean(axis=0)))
    ia = rng.integers(0, len(x), (n_resamples, len(x)))
    ib = rng.integers(0, len(ref), (n_resamples, len(ref)))
    return value, gap(x[ia].mean(axis=1), ref[ib].mean(axis=1))


def _cross_figures(x: np.ndarray, groups: list[np.ndarray], rng, n_resamples: int,
                   confidence: float) -> tuple[Figure, list[Figure]]:
    """Mean cosine between answers to different prompts: overall and per prompt (module docstring).

    From the sums of each prompt's embeddings: with S_p the sum over prompt p's answers and T the sum
    over all, the cross pairs' total is |T|^2 - sum_p |S_p|^2 (overall) and S_p . (T - S_p) (prompt p).
    The bootstrap resamples answers within each prompt, as the other figures do.
    """
    n = np.array([len(ix) for ix in groups], dtype=np.float64)
    sums = np.stack([x[ix].sum(axis=0) for ix in groups])  # (prompts, d)
    draws = np.stack([x[ix][rng.integers(0, len(ix), (n_resamples, len(ix)))].sum(axis=1) for ix in groups],
                     axis=1)  # (resamples, prompts, d)

    def cross(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # s: (..., prompts, d)
        total = s.sum(axis=-2, keepdims=True)
        per = (s * (total - s)).sum(axis=-1) / (n * (n.sum() - n))
        overall = ((total[..., 0, :] ** 2).sum(axis=-1) - (s ** 2).sum(axis=(-2, -1))) / (n.sum() ** 2 - (n ** 2).sum())
        return overall, per

    value, per_value = cross(sums)
    draw_overall, draw_per = cross(draws)
    return (_figure(float(value), draw_overall, confidence),
            [_figure(float(v), draw_per[:, i], confidence) for i, v in enumerate(per_value)])


def probe_figures(
    embeddings,
    prompts: Sequence[str],
    texts: Sequence[str],
    *,
    reference: tuple[object, Sequence[str]] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> DayFigures:
    """The day's figures (module docstring) from its answers' embeddings, prompts and texts.

    `reference` is (embeddings, prompts) of the reference day's answers; None: no drift (the day is
    its own reference, drift 0). Rows need not be normalised. Deterministic for a given `seed`.

    >>> e = np.array([[1, 0], [1, 0.1], [0, 1], [0.1, 1]], dtype=float)
    >>> f = probe_figures(e, ["a", "a", "b", "b"], ["x", "y", "z", "w"], n_resamples=20)
    >>> f.overall.mean_similarity.value, [p.prompt for p in f.prompts], f.overall.high_similarity_share
    (0.995037, ['a', 'b'], 1.0)
    """
    x = check_unit_norm(check_embeddings(embeddings, min_rows=1)).astype(np.float64)
    prompts = [str(p) for p in check_aligned(prompts, len(x), "prompts")]
    texts = [str(t) for t in check_aligned(texts, len(x), "texts")]
    if not -1.0 <= threshold <= 1.0:
        raise InputError(f"similarity threshold must lie in [-1, 1]; got {threshold}")
    if n_resamples < 2:
        raise InputError(f"n_resamples must be >= 2; got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise InputError(f"confidence must lie strictly between 0 and 1; got {confidence}")
    order = list(dict.fromkeys(prompts))
    groups = {p: np.array([i for i, q in enumerate(prompts) if q == p]) for p in order}
    ref_groups: dict[str, np.ndarray] = {}
    if reference is not None:
        r = check_unit_norm(check_embeddings(reference[0], name="reference embeddings")).astype(np.float64)
        rp = [str(p) for p in check_aligned(reference[1], len(r), "reference prompts")]
        ref_groups = {p: r[[i for i, q in enumerate(rp) if q == p]] for p in dict.fromkeys(rp)}
    rng = np.random.default_rng(seed)
    loops = repetition_stats(texts).loop_ids
    looped = {int(i) for i in loops}
    per_prompt = len(x) > 1 and all(len(ix) >= 2 for ix in groups.values())

    rows, sim_draws, drift_values, drift_draws = [], [], [], []
    for p in order:
        ix = groups[p]
        gram = x[ix] @ x[ix].T
        if len(ix) >= 2:
            value = _pair_mean(gram)
            draws = _resampled_pair_means(gram, rng.integers(0, len(ix), (n_resamples, len(ix))))
            sim = _figure(value, draws, confidence)
            share = _r(_nn_share(gram, threshold))
            if per_prompt:
                sim_draws.append((value, draws))
        else:
            sim, share = Figure(None), None
        if reference is None:
            drift = Figure(0.0, 0.0, 0.0, 0.0)
            drift_values.append(0.0)
            drift_draws.append(np.zeros(n_resamples))
        elif p in ref_groups:
            dv, dd = _drift_draws(x[ix], ref_groups[p], rng, n_resamples)
            drift = _normal_figure(dv, dd, confidence)
            drift_values.append(dv)
            drift_draws.append(dd)
        else:
            drift = Figure(None)
        loop = _r(sum(1 for i in ix if int(i) in looped) / len(ix))
        rows.append(GroupFigures(p, len(ix), sim, share, loop, drift))

    if per_prompt:
        value = float(np.mean([v for v, _ in sim_draws]))
        overall_sim = _figure(value, np.mean([d for _, d in sim_draws], axis=0), confidence)
        overall_share = _r(sum(r.high_similarity_share * r.n_answers for r in rows) / len(x))
    elif len(x) >= 2:  # one answer per prompt (or a mix): pairs across all answers
        gram = x @ x.T
        draws = _resampled_pair_means(gram, rng.integers(0, len(x), (n_resamples, len(x))))
        overall_sim = _figure(_pair_mean(gram), draws, confidence)
        overall_share = _r(_nn_share(gram, threshold))
    else:
        overall_sim, overall_share = Figure(None), None
    crossed = None
    if per_prompt and len(order) >= 2:  # its own stream: the other figures' draws stay as they were
        crossed = _cross_figures(x, [groups[p] for p in order], np.random.default_rng([seed, 1]), n_resamples,
                                 confidence)
        rows = [replace(r, cross_similarity=f) for r, f in zip(rows, crossed[1])]
    overall_drift = (_normal_figure(float(np.mean(drift_values)), np.mean(drift_draws, axis=0), confidence)
                     if drift_values else Figure(None))
    overall = GroupFigures(None, len(x), overall_sim, overall_share, _r(len(looped) / len(x)), overall_drift,
                           crossed[0] if crossed else Figure(None))
    return DayFigures(overall, tuple(rows), float(threshold), int(n_resamples), float(confidence), int(seed))
