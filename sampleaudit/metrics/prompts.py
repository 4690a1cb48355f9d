"""Per-prompt diversity when each prompt has several answers (e.g. 100 prompts x 10 answers).

Within a prompt: the mean pairwise cosine of its answers, and `distinct_k`, the number of
distinct answers (answers grouped at the near-duplicate threshold by connected components; the
count NoveltyBench calls distinct_k). Across prompts: the mean cosine between answers to
different prompts. Kept apart because a model can answer every prompt the same way each time
and still look diverse over the whole set.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ._validate import check_aligned, check_embeddings, check_unit_norm
from .neardup import DEFAULT_NEAR_DUPLICATE_THRESHOLD, component_labels


@dataclass(frozen=True)
class PromptSummary:
    """Diversity of the answers to one prompt."""

    prompt: str
    n_answers: int
    distinct_k: int
    mean_similarity: float
    example_id: str | None


@dataclass(frozen=True)
class PromptDiversityResult:
    """Within-prompt and across-prompt diversity.

    `distinct_score`: mean over prompts of distinct_k / n_answers (1: all answers distinct).
    `collapsed_prompt_share`: share of prompts whose answers are all near duplicates
    (distinct_k == 1). `distinct_k_counts` maps distinct_k (as a string) to a number of prompts.
    """

    n_prompts: int
    n_answers: int
    n_single_answer_prompts: int  # skipped: one answer has no diversity to measure
    threshold: float
    within_prompt_similarity: float  # mean over prompts of the mean pairwise cosine
    within_prompt_quantiles: dict[str, float]
    across_prompt_similarity: float | None  # None with fewer than two prompts
    mean_distinct_k: float
    distinct_score: float
    collapsed_prompt_share: float
    distinct_k_counts: dict[str, int]
    least_diverse: list[PromptSummary]


def prompt_diversity(
    embeddings,
    prompts: Sequence[Hashable],
    *,
    threshold: float = DEFAULT_NEAR_DUPLICATE_THRESHOLD,
    ids: Sequence[str] | None = None,
    max_listed: int = 10,
) -> PromptDiversityResult:
    """Diversity of the answers within each prompt and across prompts.

    `prompts[i]` is the prompt (text or id) that answer row i responds to. Prompts with a single
    answer are skipped and counted. Least diverse first: lowest distinct_k / n_answers, then
    highest mean similarity, then prompt text.
    """
    x = check_unit_norm(check_embeddings(embeddings))
    n = x.shape[0]
    keys = check_aligned(prompts, n, "prompts")
    ids_ = [str(t) for t in check_aligned(ids, n, "ids")] if ids is not None else None
    if not -1.0 <= threshold <= 1.0:
        raise InputError(f"near-duplicate threshold must lie in [-1, 1]; got {threshold}")
    if max_listed < 0:
        raise InputError(f"max_listed must be >= 0; got {max_listed}")

    groups: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(str(key), []).append(i)
    multi = {p: np.array(rows) for p, rows in groups.items() if len(rows) >= 2}
    if not multi:
        raise InputError(
            "no prompt has two or more answers; per-prompt diversity needs several answers per "
            "prompt (e.g. generate 10 per prompt)"
        )

    x64 = x.astype(np.float64)
    summaries = []
    within_pair_sum, within_pairs = 0.0, 0
    for prompt in sorted(multi):
        rows = multi[prompt]
        sims = x64[rows] @ x64[rows].T
        m = rows.size
        pair_sum = (sims.sum() - np.trace(sims)) / 2
        within_pair_sum += pair_sum
        within_pairs += m * (m - 1) // 2
        labels = component_labels(x[rows], threshold=threshold)
        example = int(rows[np.argmax(sims.sum(axis=1))])  # closest to the others: order-free
        summaries.append(
            PromptSummary(
                prompt=prompt,
                n_answers=int(m),
                distinct_k=int(np.unique(labels).size),
                mean_similarity=round(float(pair_sum / (m * (m - 1) / 2)), 6),
                example_id=ids_[example] if ids_ is not None else None,
            )
        )

    # Across prompts: all pairs minus within-prompt pairs, in O(n d) through
    # sum_{i<j} x_i.x_j = (|sum_i x_i|^2 - sum_i |x_i|^2) / 2.
    used = np.concatenate(list(multi.values()))
    total = x64[used].sum(axis=0)
    all_pair_sum = (total @ total - (x64[used] ** 2).sum()) / 2
    all_pairs = used.size * (used.size - 1) // 2
    across = None
    if len(multi) >= 2:
        across = round(float((all_pair_sum - within_pair_sum) / (all_pairs - within_pairs)), 6)

    mean_sims = np.array([s.mean_similarity for s in summaries])
    distinct = np.array([s.distinct_k for s in summaries])
    ratios = distinct / np.array([s.n_answers for s in summaries])
    ks, counts = np.unique(distinct, return_counts=True)
    order = sorted(
        range(len(summaries)), key=lambda i: (ratios[i], -mean_sims[i], summaries[i].prompt)
    )
    return PromptDiversityResult(
        n_prompts=len(multi),
        n_answers=int(used.size),
        n_single_answer_prompts=len(groups) - len(multi),
        threshold=float(threshold),
        within_prompt_similarity=round(float(mean_sims.mean()), 6),
        within_prompt_quantiles={
            name: round(float(np.quantile(mean_sims, q)), 6)
            for name, q in {"p10": 0.1, "p50": 0.5, "p90": 0.9}.items()
        },
        across_prompt_similarity=across,
        mean_distinct_k=round(float(distinct.mean()), 6),
        distinct_score=round(float(ratios.mean()), 6),
        collapsed_prompt_share=round(float((distinct == 1).mean()), 6),
        distinct_k_counts={str(int(k)): int(c) for k, c in zip(ks, counts)},
        least_diverse=[summaries[i] for i in order[:max_listed]],
    )
