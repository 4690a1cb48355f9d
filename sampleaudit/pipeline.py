"""audit(): samples -> embeddings -> metrics -> checks -> AuditResult. Orchestration only."""

from __future__ import annotations

import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from . import __version__
from .checks import RANKING_RULE, mode_collapse_check, rank, worst
from .config import Config
from .embed import Embedder, EmbeddingCache, embed_texts, load_embedder
from .errors import InputError
from .metrics.similarity import most_similar_pairs, similarity_distribution
from .results import (
    SCHEMA_VERSION,
    AuditResult,
    BaselineResult,
    CheckpointResult,
    EmbedderInfo,
    PairView,
    Provenance,
    SampleView,
    SimilaritySection,
    ToolInfo,
)
from .samples import SampleSet, load_samples

Log = Callable[[str], None]


def _as_set(item: SampleSet | str | Path) -> SampleSet:
    return item if isinstance(item, SampleSet) else load_samples(item)


def _view(samples: SampleSet, i: int) -> SampleView:
    s = samples.samples[i]
    return SampleView(s.id, s.text, s.prompt)


def _similarity_section(
    samples: SampleSet, emb: np.ndarray, threshold: tuple[float, str, str], config: Config
) -> SimilaritySection:
    value, source, description = threshold
    sim, nn = similarity_distribution(
        emb, threshold=value, block_size=config.similarity.block_size, n_bins=config.similarity.histogram_bins
    )
    pairs = [PairView(p.similarity, _view(samples, p.i), _view(samples, p.j))
             for p in most_similar_pairs(nn, k=config.report.n_pairs)]
    values = {f.name: getattr(sim, f.name) for f in fields(sim)}
    return SimilaritySection(**values, threshold_source=source, threshold_description=description,
                             most_similar_pairs=pairs)


def _subsample(samples: SampleSet, emb: np.ndarray, size: int, seed: int) -> tuple[SampleSet, np.ndarray]:
    """A seeded subsample of `size` (the whole set when it is not larger), in file order."""
    if len(samples) <= size:
        return samples, emb
    keep = np.sort(np.random.default_rng(seed).choice(len(samples), size=size, replace=False))
    chosen = SampleSet(samples.name, tuple(samples.samples[i] for i in keep), samples.path, samples.sha256,
                       samples.n_skipped, samples.skipped_lines)
    return chosen, emb[keep]


def _resolve_threshold(config: Config, embedder_id: str) -> tuple[float, str, str]:
    """(threshold, source, description) for the high-similarity share."""
    if config.similarity.threshold is not None:
        return config.similarity.threshold, "config", "set in the configuration ([similarity] threshold)"
    value = config.similarity.default_threshold
    return value, "default", f"default for {embedder_id} ([similarity] default_threshold)"


def _embed(samples: SampleSet, given: np.ndarray | None, embedder: Embedder | None,
           cache: EmbeddingCache | None, log: Log) -> np.ndarray:
    if given is not None:
        arr = np.asarray(given)
        if arr.ndim != 2 or arr.shape[0] != len(samples):
            raise InputError(
                f"embeddings for {samples.name!r} must have shape ({len(samples)}, dim); got {arr.shape}"
            )
        return arr.astype(np.float32)
    log(f"embedding {samples.name}: {len(samples)} texts")
    return embed_texts(samples.texts, embedder, cache=cache)


def audit(
    checkpoints: Sequence[SampleSet | str | Path],
    *,
    baseline: SampleSet | str | Path | None = None,
    config: Config | None = None,
    embedder: Embedder | None = None,
    embeddings: Mapping[str, np.ndarray] | None = None,
    cache: EmbeddingCache | None = None,
    log: Log | None = None,
    command: list[str] | None = None,
) -> AuditResult:
    """Audit one or more checkpoints' samples, optionally against a training-data baseline.

    `embeddings` maps set names (checkpoint names, and the baseline's) to precomputed (n, dim)
    arrays; sets without one are embedded with `embedder` (default: the configured
    sentence-transformers model), through `cache` when given.
    """
    started = time.perf_counter()
    config = config or Config()
    log = log or (lambda _msg: None)
    sets = [_as_set(c) for c in checkpoints]
    if not sets:
        raise InputError("give at least one checkpoint file to audit")
    names = [s.name for s in sets]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InputError(f"two checkpoints are named {dupes[0]!r}; give each a distinct --name")
    base = _as_set(baseline) if baseline is not None else None
    given = dict(embeddings or {})
    everything = sets + ([base] if base else [])
    if embedder is None and any(s.name not in given for s in everything):
        embedder = load_embedder(config.embed.model, device=config.embed.device,
                                 batch_size=config.embed.batch_size)
    vectors = {s.name: _embed(s, given.get(s.name), embedder, cache, log) for s in everything}
    dims = {v.shape[1] for v in vectors.values()}
    if len(dims) > 1:
        raise InputError(f"all embeddings must have the same dimension; got {sorted(dims)}")
    if embedder is not None:
        info = EmbedderInfo(embedder.model_id, embedder.dim, embedder.device)
    else:
        info = EmbedderInfo("precomputed", dims.pop(), "n/a")
    threshold = _resolve_threshold(config, info.model)

    results = []
    for s in sets:
        log(f"analysing {s.name}")
        section = _similarity_section(s, vectors[s.name], threshold, config)
        checks = [mode_collapse_check(section, config)]
        rng = np.random.default_rng(config.seed)
        picks = np.sort(rng.choice(len(s), size=min(config.report.n_examples, len(s)), replace=False))
        results.append(CheckpointResult(
            name=s.name, path=s.path, sha256=s.sha256, n_samples=len(s), n_empty=s.n_empty,
            n_skipped=s.n_skipped, similarity=section, checks=checks,
            status=worst([c.status for c in checks]), examples=[_view(s, int(i)) for i in picks],
        ))

    base_result = None
    if base is not None:
        size = max(len(s) for s in sets)
        sub, sub_emb = _subsample(base, vectors[base.name], size, config.seed)
        base_result = BaselineResult(
            name=base.name, path=base.path, sha256=base.sha256, n_samples=len(base), n_empty=base.n_empty,
            n_skipped=base.n_skipped, subsample_size=len(sub),
            similarity=_similarity_section(sub, sub_emb, threshold, config),
        )

    warnings = [f"{s.name}: {s.n_skipped} invalid line(s) skipped (lines {', '.join(map(str, s.skipped_lines[:10]))}"
                f"{', ...' if s.n_skipped > 10 else ''})" for s in everything if s.n_skipped]
    warnings += [f"{s.name}: {s.n_empty} empty sample(s) (kept; they embed alike and raise similarity)"
                 for s in everything if s.n_empty]
    provenance = Provenance(
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        run_seconds=round(time.perf_counter() - started, 3),
        seed=config.seed,
        config=config.model_dump(),
        python=sys.version.split()[0],
        platform=platform.platform(),
        command=command,
    )
    return AuditResult(
        schema_version=SCHEMA_VERSION,
        tool=ToolInfo("sampleaudit", __version__),
        embedder=info,
        baseline=base_result,
        checkpoints=results,
        ranking=rank(results),
        ranking_rule=RANKING_RULE,
        provenance=provenance,
        warnings=warnings,
    )
