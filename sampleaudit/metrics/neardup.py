"""Near-duplicate groups: samples linked by cosine >= a threshold, grouped by connected components.

Edges are found blockwise (`iter_similarity_blocks`) and merged into components block by block,
so memory stays O(n * block_size) even when every sample duplicates every other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..errors import InputError
from ._validate import check_embeddings, check_unit_norm, optional_strings
from .similarity import NearestNeighbors, iter_similarity_blocks

# Cosine at or above which two samples count as near duplicates (same answer, reworded at most).
DEFAULT_NEAR_DUPLICATE_THRESHOLD = 0.95


@dataclass(frozen=True)
class NearDuplicateGroup:
    """One group of near duplicates. `members`/`ids` are capped at `max_members`; `size` is not."""

    size: int
    members: list[int]
    ids: list[str] | None
    example_index: int
    example_id: str | None


@dataclass(frozen=True)
class NearDuplicateResult:
    """Near-duplicate groups (size >= 2), largest first; `groups` is capped, the totals are not."""

    n_samples: int
    threshold: float
    n_groups: int
    n_in_groups: int
    near_duplicate_share: float
    largest_group_size: int
    groups: list[NearDuplicateGroup]


def _edges(x: np.ndarray, threshold: float, block_size: int, device: str | None):
    """Yield (row offset, i, j): each block's pairs i < j (j global) with cosine >= threshold."""
    n = x.shape[0]
    if device is None:
        for start, sims in iter_similarity_blocks(x, block_size=block_size):
            rows = np.arange(start, start + sims.shape[0])
            yield (start, *np.nonzero((sims >= threshold) & (np.arange(n)[None, :] > rows[:, None])))
        return
    import torch

    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(device)
    cols = torch.arange(n, device=device)
    with torch.inference_mode():
        for start in range(0, n, block_size):
            sims = t[start : start + block_size] @ t.T
            rows = cols[start : start + sims.shape[0]]
            i, j = torch.nonzero((sims >= threshold) & (cols[None, :] > rows[:, None]), as_tuple=True)
            yield start, i.cpu().numpy(), j.cpu().numpy()


def component_labels(x: np.ndarray, *, threshold: float, block_size: int = 1024,
                     device: str | None = None) -> np.ndarray:
    """Label of each row's connected component in the graph cosine >= threshold.

    Trusts its input: float32, L2-normalised rows. Labels are the smallest row index of the
    component, so they do not depend on how components are discovered. `device`: None (numpy) or
    the torch device the similarity blocks run on.
    """
    n = x.shape[0]
    labels = np.arange(n)
    for start, i, j in _edges(x, threshold, block_size, device):
        if i.size == 0:
            continue
        # Graph = this block's edges + each node's edge to its current representative.
        src = np.concatenate([i + start, np.arange(n)])
        dst = np.concatenate([j, labels])
        graph = coo_matrix((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(n, n))
        _, comp = connected_components(graph, directed=False)
        _, first = np.unique(comp, return_index=True)  # smallest index in each component
        labels = first[comp]
    return labels


def near_duplicates(
    embeddings,
    *,
    threshold: float = DEFAULT_NEAR_DUPLICATE_THRESHOLD,
    ids: Sequence[str] | None = None,
    max_groups: int = 20,
    max_members: int = 50,
    block_size: int = 1024,
    nearest: NearestNeighbors | None = None,
    device: str | None = None,
) -> NearDuplicateResult:
    """Groups of samples connected by cosine >= `threshold` (single linkage), largest first.

    Each group's example is the member closest to the group's mean direction. Ties in group
    size are broken by the smallest member index. `nearest`, the NearestNeighbors that
    `similarity_distribution` returned for the same embeddings, saves a pass over all pairs:
    only rows whose nearest neighbour reaches the threshold can have an edge. When that pass was
    sampled (n above similarity.EXACT_MAX_ROWS), groups are those found among the query rows with
    a twin and their twins (sizes are lower bounds) and near_duplicate_share is the share of query
    rows with a twin: an estimate, with the error bound of the similarity section's `estimate`.
    `device`: None (numpy) or the torch device the similarity blocks run on
    (metrics/similarity.similarity_device).
    """
    x = check_unit_norm(check_embeddings(embeddings))
    n = x.shape[0]
    if not -1.0 <= threshold <= 1.0:
        raise InputError(f"near-duplicate threshold must lie in [-1, 1]; got {threshold}")
    if max_groups < 0 or max_members < 1 or block_size < 1:
        raise InputError("max_groups must be >= 0, max_members and block_size >= 1")
    ids_ = optional_strings(ids, n, "ids", rows="embedding row")

    if nearest is None:
        labels = component_labels(x, threshold=threshold, block_size=block_size, device=device)
    else:
        wrong = (nearest.similarity.shape != (n,) if nearest.rows is None
                 else bool(nearest.index.size) and int(max(nearest.index.max(), nearest.rows.max())) >= n)
        if wrong:
            raise InputError(
                f"nearest holds {nearest.similarity.shape[0]} rows but embeddings have {n}; "
                "pass the NearestNeighbors computed on these embeddings"
            )
        labels = np.arange(n)
        hits = nearest.similarity >= threshold
        rows = nearest.query_rows[hits]
        if nearest.rows is not None:  # a sampled pass: the query rows that have a twin, and their twins
            rows = np.unique(np.concatenate([rows, nearest.index[hits]]))
        labels[rows] = rows[component_labels(x[rows], threshold=threshold, block_size=block_size, device=device)]
    roots, sizes = np.unique(labels, return_counts=True)
    multi = sizes >= 2
    roots, sizes = roots[multi], sizes[multi]
    order = np.lexsort((roots, -sizes))  # largest first, then smallest member index
    groups = []
    for root in roots[order[:max_groups]]:
        members = np.flatnonzero(labels == root)
        centre = x[members].sum(axis=0)
        example = int(members[int(np.argmax(x[members] @ centre))])
        listed = [int(m) for m in members[:max_members]]
        groups.append(
            NearDuplicateGroup(
                size=int(members.size),
                members=listed,
                ids=[ids_[m] for m in listed] if ids_ is not None else None,
                example_index=example,
                example_id=ids_[example] if ids_ is not None else None,
            )
        )
    n_in = int(sizes.sum())
    share = n_in / n
    if nearest is not None and nearest.rows is not None:
        share = float((nearest.similarity >= threshold).mean())
    return NearDuplicateResult(
        n_samples=n,
        threshold=float(threshold),
        n_groups=int(roots.size),
        n_in_groups=n_in,
        near_duplicate_share=round(share, 6),
        largest_group_size=int(sizes.max()) if sizes.size else 0,
        groups=groups,
    )
