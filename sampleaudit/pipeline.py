"""audit(): samples -> embeddings -> metrics -> checks -> AuditResult. Orchestration only."""

from __future__ import annotations

import platform
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path

import numpy as np

from . import __version__
from .checks import (
    RANKING_RULE,
    comparisons_to_top,
    coverage_check,
    data_vs_model,
    mode_collapse_check,
    rank,
    ranking_notes,
    repetition_checks,
    worst,
)
from .config import Config
from .embed import Embedder, EmbeddingCache, embed_texts, load_embedder
from .errors import InputError
from .metrics import stats
from .metrics.calibration import (
    ThresholdCalibration,
    calibrate_threshold,
    model_scripts,
    model_threshold,
    script_share,
)
from .metrics.coverage import BaselineClusters, coverage, fit_baseline_clusters, sample_clusters
from .metrics.lexical import lexical_diversity
from .metrics.neardup import near_duplicates
from .metrics.prompts import prompt_diversity
from .metrics.repetition import RepetitionResult, repetition_stats
from .metrics.similarity import most_similar_pairs, similarity_distribution
from .metrics.vendi import vendi_score
from .results import (
    SCHEMA_VERSION,
    AuditResult,
    BaselineResult,
    CheckpointResult,
    CoverageSection,
    EmbedderInfo,
    EmbeddingMap,
    LoopView,
    PairView,
    Provenance,
    SampleView,
    SimilaritySection,
    ToolInfo,
)
from .samples import SampleSet, load_samples

Log = Callable[[str], None]
MAP_POINTS = 400  # points per set on the report's 2-D map
WORST_LOOPS = 5  # looped samples kept with their text for the report
# Above this share of baseline texts with an exact twin, a warning: at ~5% the calibrated
# threshold (the p95 of nearest-neighbour similarity) reaches 1.0 and only exact copies count.
BASELINE_DUPLICATE_WARN = 0.02


def _as_set(item: SampleSet | str | Path) -> SampleSet:
    return item if isinstance(item, SampleSet) else load_samples(item)


def _view(samples: SampleSet, i: int) -> SampleView:
    s = samples.samples[i]
    return SampleView(s.id, s.text, s.prompt)


def _values(obj) -> dict:
    """A dataclass's fields as a shallow dict (nested dataclasses kept as they are)."""
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


def _subsample(samples: SampleSet, emb: np.ndarray, size: int, seed: int) -> tuple[SampleSet, np.ndarray]:
    """A seeded subsample of `size` (the whole set when it is not larger), in file order."""
    if len(samples) <= size:
        return samples, emb
    keep = np.sort(np.random.default_rng(seed).choice(len(samples), size=size, replace=False))
    chosen = SampleSet(samples.name, tuple(samples.samples[i] for i in keep), samples.path, samples.sha256,
                       samples.n_skipped, samples.skipped_lines)
    return chosen, emb[keep]


def similarity_section(samples: SampleSet, emb: np.ndarray, cal: ThresholdCalibration,
                       config: Config, model_id: str) -> SimilaritySection:
    """Similarity, near-duplicate groups, Vendi and their intervals for one set."""
    cfg, seed = config.similarity, config.seed
    sim, nn = similarity_distribution(emb, threshold=cal.threshold, block_size=cfg.block_size,
                                      n_bins=cfg.histogram_bins)
    dup = near_duplicates(emb, threshold=cfg.near_duplicate_threshold, ids=samples.ids, texts=samples.texts,
                          nearest=nn, block_size=cfg.block_size)
    pairs = [PairView(p.similarity, _view(samples, p.i), _view(samples, p.j))
             for p in most_similar_pairs(nn, k=config.report.n_pairs)]
    fixed = model_threshold(model_id)
    return SimilaritySection(
        **_values(sim),
        threshold_source=cal.threshold_source,
        threshold_description=cal.description,
        high_similarity_share_interval=stats.high_similarity_share_interval(
            nn.similarity, threshold=cal.threshold, n_resamples=config.stats.n_resamples,
            confidence=config.stats.confidence, seed=seed),
        fixed_threshold=fixed,
        fixed_threshold_share=round(float((nn.similarity >= fixed).mean()), 6),
        vendi_score=round(vendi_score(emb), 6),
        vendi_score_interval=stats.vendi_interval(emb, confidence=config.stats.confidence, seed=seed),
        near_duplicate_threshold=dup.threshold,
        near_duplicate_share=dup.near_duplicate_share,
        n_near_duplicate_groups=dup.n_groups,
        near_duplicate_groups=dup.groups,
        most_similar_pairs=pairs,
    )


def _repetition(samples: SampleSet, config: Config) -> RepetitionResult:
    r = config.repetition
    return repetition_stats(samples.texts, samples.ids, min_repeats=r.min_repeats, min_loop_tokens=r.min_loop_tokens,
                            min_coverage=r.min_coverage, max_variation=r.max_variation,
                            opening_tokens=r.opening_tokens)


def _lexical(samples: SampleSet, config: Config):
    return lexical_diversity(samples.texts, self_bleu_sample=config.repetition.self_bleu_sample, seed=config.seed,
                             ead_vocab_size=config.repetition.ead_vocab_size)


class _Baseline:
    """The baseline's figures, each computed once and reused for every checkpoint."""

    def __init__(self, samples: SampleSet, emb: np.ndarray, config: Config, model_id: str):
        self.samples, self.emb, self.config, self.model_id = samples, emb, config, model_id
        self._calibrations: dict[int, ThresholdCalibration] = {}
        self._sections: dict[tuple[int, float], SimilaritySection] = {}

    @cached_property
    def clusters(self) -> BaselineClusters:
        c = self.config.coverage
        try:
            return fit_baseline_clusters(self.emb, texts=self.samples.texts, ids=self.samples.ids,
                                         seed=self.config.seed, pca_dims=c.pca_dims, n_clusters=c.n_clusters,
                                         max_noise_share=c.max_noise_share)
        except InputError as exc:
            raise InputError(f"cannot cluster the baseline: {exc}", path=self.samples.path) from None

    def calibration(self, n: int) -> ThresholdCalibration:
        if n not in self._calibrations:
            s = self.config.similarity
            self._calibrations[n] = calibrate_threshold(
                n_samples=n, baseline=self.emb, model=self.model_id, config_threshold=s.threshold,
                quantile=s.calibration_quantile, n_draws=s.calibration_draws, seed=self.config.seed,
                block_size=s.block_size)
        return self._calibrations[n]

    def similarity(self, n: int) -> SimilaritySection:
        """The baseline's similarity on a seeded subsample of n, at the threshold used for size n."""
        cal = self.calibration(n)
        key = (n, cal.threshold)
        if key not in self._sections:
            sub, sub_emb = _subsample(self.samples, self.emb, n, self.config.seed)
            self._sections[key] = similarity_section(sub, sub_emb, cal, self.config, self.model_id)
        return self._sections[key]

    def result(self, n: int) -> BaselineResult:
        s = self.samples
        sub, _ = _subsample(s, self.emb, n, self.config.seed)
        return BaselineResult(
            name=s.name, path=s.path, sha256=s.sha256, n_samples=len(s), n_empty=s.n_empty,
            n_skipped=s.n_skipped, subsample_size=len(sub), similarity=self.similarity(n),
            coverage=self.clusters.summary(), repetition=_repetition(sub, self.config),
            lexical=_lexical(sub, self.config), scripts=script_share(s.texts),
        )


def _coverage_section(clusters: BaselineClusters, emb: np.ndarray, config: Config) -> CoverageSection:
    c = config.coverage
    cov = coverage(clusters, emb, min_mass_ratio=c.min_mass_ratio, over_ratio=c.over_ratio)
    own = sample_clusters(clusters, emb, seed=config.seed)
    return CoverageSection(
        **_values(cov),
        coverage_ratio_interval=stats.coverage_interval(
            clusters, emb, min_mass_ratio=c.min_mass_ratio, n_resamples=config.stats.n_resamples,
            confidence=config.stats.confidence, seed=config.seed),
        sample_clusters=own.n_clusters,
        sample_clustering=own,
    )


def _worst_loops(samples: SampleSet, rep: RepetitionResult) -> list[LoopView]:
    by_id = {s.id: s.text for s in samples.samples}
    return [LoopView(id=lp.id, text=by_id[lp.id], unit=lp.unit, n_repeats=lp.n_repeats, start_char=lp.start_char,
                     end_char=lp.end_char, coverage_share=lp.coverage_share) for lp in rep.loops[:WORST_LOOPS]]


def _checkpoint(s: SampleSet, emb: np.ndarray, base: _Baseline | None, config: Config, model_id: str,
                log: Log) -> CheckpointResult:
    log(f"analysing {s.name}")
    n = len(s)
    cal = base.calibration(n) if base else calibrate_threshold(
        n_samples=n, model=model_id, config_threshold=config.similarity.threshold)
    sim = similarity_section(s, emb, cal, config, model_id)
    cov = _coverage_section(base.clusters, emb, config) if base else None
    rep = _repetition(s, config)
    prompts = None
    keys = s.prompts
    if all(p is not None for p in keys) and len(set(keys)) < len(keys):
        prompts = prompt_diversity(emb, keys, threshold=config.similarity.near_duplicate_threshold, texts=s.texts)
    checks = [mode_collapse_check(sim, config)]
    checks += [coverage_check(cov, config)] if cov else []
    checks += repetition_checks(rep, config)
    rng = np.random.default_rng(config.seed)
    picks = np.sort(rng.choice(n, size=min(config.report.n_examples, n), replace=False))
    return CheckpointResult(
        name=s.name, path=s.path, sha256=s.sha256, n_samples=n, n_empty=s.n_empty, n_skipped=s.n_skipped,
        similarity=sim, coverage=cov, repetition=rep, lexical=_lexical(s, config), prompts=prompts,
        scripts=script_share(s.texts), verdict=data_vs_model(sim, base.similarity(n), config) if base else None,
        checks=checks, status=worst([c.status for c in checks]), examples=[_view(s, int(i)) for i in picks],
        worst_loops=_worst_loops(s, rep),
    )


def _embedding_map(sets: Sequence[SampleSet], vectors: Mapping[str, np.ndarray], base: SampleSet | None,
                   seed: int) -> EmbeddingMap | None:
    """2-D PCA of a seeded subsample of every set, fitted on the baseline (else on all sets)."""
    from sklearn.decomposition import PCA

    def pick(name: str) -> np.ndarray:
        x = vectors[name]
        if len(x) <= MAP_POINTS:
            return x
        return x[np.sort(np.random.default_rng(seed).choice(len(x), MAP_POINTS, replace=False))]

    fit_on = pick(base.name) if base else np.concatenate([pick(s.name) for s in sets])
    if len(fit_on) < 2:
        return None
    with np.errstate(invalid="ignore", divide="ignore"):  # identical points: no variance to explain
        pca = PCA(n_components=2, random_state=seed).fit(fit_on)
    explained = float(np.nan_to_num(pca.explained_variance_ratio_.sum()))

    def coords(name: str) -> list[list[float]]:
        return [[round(float(a), 4), round(float(b), 4)] for a, b in pca.transform(pick(name))]

    return EmbeddingMap(
        explained_variance=round(explained, 6),
        baseline=coords(base.name) if base else [],
        checkpoints={s.name: coords(s.name) for s in sets},
    )


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


def _warnings(sets: Sequence[SampleSet], base: SampleSet | None, results: Sequence[CheckpointResult],
              model_id: str) -> list[str]:
    everything = list(sets) + ([base] if base else [])
    out = [f"{s.name}: {s.n_skipped} invalid line(s) skipped (lines {', '.join(map(str, s.skipped_lines[:10]))}"
           f"{', ...' if s.n_skipped > 10 else ''})" for s in everything if s.n_skipped]
    out += [f"{s.name}: {s.n_empty} empty sample(s) (kept; they embed alike and raise similarity)"
            for s in everything if s.n_empty]
    if base:
        twinned = sum(c for c in Counter(t for t in base.texts if t).values() if c > 1) / len(base)
        if twinned > BASELINE_DUPLICATE_WARN:
            out.append(f"{base.name}: {twinned:.0%} of the baseline's texts have an exact duplicate in it; "
                       "duplicates raise its nearest-neighbour similarity and so the calibrated threshold, "
                       "which makes collapse read milder: deduplicate the baseline")
        out += [f"{s.name}: {len(s)} samples but the baseline has only {len(base)}; the calibrated "
                "threshold comes from fewer texts and is stricter than it should be (nearest-neighbour "
                "similarity grows with n): give a baseline at least as large as each checkpoint"
                for s in sets if len(s) > len(base)]
    known = model_scripts(model_id)
    for c in results:
        if (known and c.scripts and c.scripts.dominant_script not in {*known, "none"}
                and c.scripts.dominant_share > 0.5):
            out.append(f"{c.name}: {c.scripts.dominant_share:.0%} of samples are in {c.scripts.dominant_script} script, "
                       f"which {model_id} was not trained on; similarity figures may be unreliable: use a "
                       "multilingual embedder, e.g. --embedder paraphrase-multilingual-MiniLM-L12-v2")
    return out


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
    small = [s for s in sets if len(s) < 2]
    if small:
        raise InputError(f"{small[0].name} has {len(small[0])} sample; an audit needs at least 2",
                         path=small[0].path)
    base = _as_set(baseline) if baseline is not None else None
    if base is not None and base.name in names:
        base = SampleSet("baseline:" + base.name, base.samples, base.path, base.sha256, base.n_skipped,
                         base.skipped_lines)
    given = dict(embeddings or {})
    everything = sets + ([base] if base else [])
    if embedder is None and any(s.name not in given for s in everything):
        embedder = load_embedder(config.embed.model, device=config.embed.device, batch_size=config.embed.batch_size)
    vectors = {s.name: _embed(s, given.get(s.name), embedder, cache, log) for s in everything}
    dims = {v.shape[1] for v in vectors.values()}
    if len(dims) > 1:
        raise InputError(f"all embeddings must have the same dimension; got {sorted(dims)}")
    if embedder is not None:
        info = EmbedderInfo(embedder.model_id, embedder.dim, embedder.device)
    else:
        info = EmbedderInfo("precomputed", dims.pop(), "n/a")

    base_ctx = _Baseline(base, vectors[base.name], config, info.model) if base else None
    if base_ctx:
        log(f"clustering the baseline ({len(base)} samples)")
        _ = base_ctx.clusters
    results = [_checkpoint(s, vectors[s.name], base_ctx, config, info.model, log) for s in sets]
    base_result = base_ctx.result(max(len(s) for s in sets)) if base_ctx else None
    return build_result(
        results, embedder=info, baseline=base_result, started=started, seed=config.seed,
        config=config.model_dump(), command=command, map=_embedding_map(sets, vectors, base, config.seed),
        warnings=_warnings(sets, base, results, info.model),
    )


def build_result(
    checkpoints: list[CheckpointResult], *, embedder: EmbedderInfo, baseline: BaselineResult | None,
    started: float, seed: int, config: dict, command: list[str] | None, schema_version: int = SCHEMA_VERSION,
    **extra,
) -> AuditResult:
    """The AuditResult of checkpoint results: ranked, with noise notes, comparisons and provenance
    (shared by audit() and compare's merge). `extra` sets the optional fields (map, warnings, ...)."""
    ranking = rank(checkpoints)
    provenance = Provenance(
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        run_seconds=round(time.perf_counter() - started, 3),
        seed=seed,
        config=config,
        python=sys.version.split()[0],
        platform=platform.platform(),
        command=command,
    )
    return AuditResult(
        schema_version=schema_version,
        tool=ToolInfo("sampleaudit", __version__),
        embedder=embedder,
        baseline=baseline,
        checkpoints=checkpoints,
        ranking=ranking,
        ranking_rule=RANKING_RULE,
        provenance=provenance,
        ranking_notes=ranking_notes(checkpoints, ranking),
        comparisons=comparisons_to_top(checkpoints, ranking),
        **extra,
    )
