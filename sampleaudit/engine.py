"""The staged audit: `audit_checkpoint` analyses one checkpoint against a fitted reference, and
`assemble` ranks checkpoint results into an AuditResult.

Each stage is a pure function of its inputs with picklable results, so a checkpoint can be
analysed in another process or on another machine and its result assembled with the others:

    reference = fit_reference(baseline, baseline_embeddings, config, embedder=model_id)
    results = [audit_checkpoint(s, e, reference, config) for s, e in zip(sets, embeddings)]
    audit = assemble(results, reference, config=config)
"""

from __future__ import annotations

import dataclasses
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import fields
from datetime import datetime, timezone
from types import SimpleNamespace

import numpy as np

from . import __version__
from .checks import comparisons_to_top, data_vs_model, rank, ranking_notes, run_checks, worst
from .config import Config
from .errors import InputError
from .figures import ranking_rule
from .metrics import stats
from .metrics._validate import check_embeddings
from .metrics.calibration import ThresholdCalibration, calibrate_threshold, foreign_script, model_threshold, script_share
from .metrics.coverage import NaturalClusters, coverage, sample_clusters
from .metrics.lexical import lexical_diversity
from .metrics.neardup import near_duplicates
from .metrics.prompts import prompt_diversity
from .metrics.repetition import repetition_stats
from .metrics.similarity import most_similar_pairs, similarity_device, similarity_distribution
from .metrics.vendi import vendi_score
from .reference import MapProjection, Reference, check_distinct_names, input_warnings
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
    RepetitionSection,
    SampleView,
    SimilaritySection,
    SourceAudit,
    ToolInfo,
)
from .samples import SampleSet
from .seeds import derived_seeds

WORST_LOOPS = 5  # looped samples kept with their text for the report


def _values(obj) -> dict:
    """A dataclass's fields as a shallow dict (nested dataclasses kept as they are)."""
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


def _view(samples: SampleSet, i: int) -> SampleView:
    s = samples.samples[i]
    return SampleView(s.id, s.prompt)


def similarity_section(samples: SampleSet, emb: np.ndarray, cal: ThresholdCalibration,
                       config: Config, model_id: str) -> SimilaritySection:
    """Similarity, near-duplicate groups, Vendi and their intervals for one set."""
    cfg, seed = config.similarity, config.seed
    device = similarity_device(cfg.device)
    sim, nn = similarity_distribution(emb, threshold=cal.threshold, block_size=cfg.block_size,
                                      n_bins=cfg.histogram_bins, device=device, seed=seed)
    dup = near_duplicates(emb, threshold=cfg.near_duplicate_threshold, ids=samples.ids, nearest=nn,
                          block_size=cfg.block_size, device=device)
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


def repetition_section(samples: SampleSet, config: Config) -> RepetitionSection:
    """Loops, openings and whole-sample repetition, with a bootstrap interval for loop_share."""
    lexical_only = ("self_bleu_sample", "ead_vocab_size")  # repetition.* options of lexical_section
    rule = {k: v for k, v in config.repetition.model_dump().items() if k not in lexical_only}
    rep = repetition_stats(samples.texts, samples.ids, **rule)
    interval = None
    if rep.loop_share is not None:
        looped = set(rep.loop_ids)
        flags = np.array([i in looped for i in samples.ids], dtype=np.float64)
        interval = stats.bootstrap_interval(flags, np.mean, n_resamples=config.stats.n_resamples,
                                            confidence=config.stats.confidence, seed=config.seed)
    return RepetitionSection(**_values(rep), loop_share_interval=interval)


def lexical_section(samples: SampleSet, config: Config):
    return lexical_diversity(samples.texts, self_bleu_sample=config.repetition.self_bleu_sample, seed=config.seed,
                             ead_vocab_size=config.repetition.ead_vocab_size)


def texts_of(samples: SampleSet, *parts) -> dict[str, str]:
    """id -> text of every sample the given result parts show (pairs, groups, loops, examples...)."""
    ids: list[str] = []
    for part in parts:
        if isinstance(part, SimilaritySection):
            ids += [v.id for p in part.most_similar_pairs for v in (p.a, p.b)]
            ids += [g.example_id for g in part.near_duplicate_groups if g.example_id is not None]
        elif part is not None and hasattr(part, "least_diverse"):
            ids += [s.example_id for s in part.least_diverse if s.example_id is not None]
        else:
            ids += [v.id for v in part or []]
    by_id = {s.id: s.text for s in samples.samples}
    return {i: by_id[i] for i in dict.fromkeys(ids)}


def _coverage_section(reference: Reference, emb: np.ndarray, natural: NaturalClusters | None,
                      config: Config) -> CoverageSection:
    """Coverage of the reference's clusters by `emb`, the set's rows in the reference's coverage
    space (Reference.coverage_vectors)."""
    c, clusters = config.coverage, reference.clusters
    labels = clusters.assign(emb)
    cov = coverage(clusters, emb, min_mass_ratio=c.min_mass_ratio, over_ratio=c.over_ratio, labels=labels)
    if reference.cluster_terms:
        cov = dataclasses.replace(cov, missing_clusters=[
            dataclasses.replace(m, terms=reference.cluster_terms[m.cluster]) for m in cov.missing_clusters])
    own = sample_clusters(clusters, emb, seed=config.seed, baseline=natural)
    return CoverageSection(
        **_values(cov),
        coverage_ratio_interval=stats.coverage_interval(
            clusters, emb, min_mass_ratio=c.min_mass_ratio, n_resamples=config.stats.n_resamples,
            confidence=config.stats.confidence, seed=config.seed, labels=labels),
        sample_clusters=own.n_clusters,
        sample_clustering=own,
        representation=reference.representation,
    )


def _worst_loops(rep) -> list[LoopView]:
    return [LoopView(id=lp.id, unit=lp.unit, n_repeats=lp.n_repeats, start_char=lp.start_char,
                     end_char=lp.end_char, coverage_share=lp.coverage_share) for lp in rep.loops[:WORST_LOOPS]]


def _embedder_id(embedder: EmbedderInfo | str | None) -> str | None:
    return embedder.model if isinstance(embedder, EmbedderInfo) else embedder


#: Above this share of samples longer than the embedder reads, a warning (with embed.long_text
#: "truncate" their similarity is that of their first max_tokens word pieces only).
LONG_TEXT_WARN = 0.1


def long_text_warning(s: SampleSet, n_long: int | None, max_tokens: int | None, mode: str) -> list[str]:
    if not n_long or max_tokens is None or n_long / len(s) <= LONG_TEXT_WARN:
        return []
    share = f"{n_long / len(s):.0%} of samples are longer than the {max_tokens} word pieces the embedder reads"
    if mode == "truncate":
        return [f"{s.name}: {share}; with embed.long_text = \"truncate\" they are compared by their first "
                f"{max_tokens} only, so samples that start alike and diverge later read as collapsed and a loop "
                "that starts later changes nothing: set embed.long_text = \"chunks\""]
    return [f"{s.name}: {share}; they were embedded as the mean of overlapping windows over the whole text "
            "(embed.long_text = \"chunks\")"]


def _coverage_blind(reference: Reference | None, scripts, model_id: str) -> str | None:
    """Why coverage cannot judge this set against the reference (None when it can). Embedding
    clusters do not follow topics in a script the embedder was not trained on; character n-gram
    clusters (coverage.representation "lexical") work in any script, but a set in another script
    than the baseline shares none of its n-grams."""
    if reference is None or reference.clusters is None:
        return None
    base = reference.scripts()
    if reference.representation == "lexical":
        if scripts.dominant_script != base.dominant_script and scripts.dominant_share > 0.5:
            return (f"{scripts.dominant_share:.0%} of the texts are in {scripts.dominant_script} script but the "
                    f"baseline is in {base.dominant_script}, so they share no character n-grams with it")
        return None
    for who, sh, fix in (("the baseline", base, "set coverage.representation = \"lexical\" (character n-grams) or "),
                         ("the texts", scripts, "")):
        if foreign_script(sh, model_id):
            return (f"{sh.dominant_share:.0%} of {who} are in {sh.dominant_script} script, which {model_id} was not "
                    f"trained on, so its clusters do not follow topics there: {fix}audit with an embedder trained "
                    "on that script")
    return None


def _checkpoint_warnings(s: SampleSet, reference: Reference | None, scripts, model_id: str) -> list[str]:
    out = input_warnings(s)
    if reference is not None and len(s) > reference.n_baseline:
        out.append(f"{s.name}: {len(s)} samples but the baseline has only {reference.n_baseline}; the calibrated "
                   "threshold comes from fewer texts and is stricter than it should be (nearest-neighbour "
                   "similarity grows with n): give a baseline at least as large as each checkpoint")
    if foreign_script(scripts, model_id):
        out.append(f"{s.name}: {scripts.dominant_share:.0%} of samples are in {scripts.dominant_script} script, "
                   f"which {model_id} was not trained on; similarity figures may be unreliable: audit with an "
                   "embedder trained on that script (--embedder with a local model folder)")
    return out


def audit_checkpoint(
    samples: SampleSet,
    embeddings: np.ndarray,
    reference: Reference | None = None,
    config: Config | None = None,
    *,
    embedder: EmbedderInfo | str | None = None,
    projection: MapProjection | None = None,
    n_long: int | None = None,
    max_tokens: int | None = None,
) -> CheckpointResult:
    """Analyse one checkpoint's samples against a fitted reference (or none).

    `embeddings` are the samples' vectors, rows in sample order, made with the reference's
    embedder. Without a reference, `embedder` (its model id) picks the default threshold.
    `projection` places the checkpoint on the report's map (default: the reference's). `n_long`
    samples were longer than the embedder's `max_tokens` (recorded, and a warning when many).
    """
    config = config or Config()
    s = samples
    n = len(s)
    if n < 2:
        raise InputError(f"{s.name} has {n} sample; an audit needs at least 2", path=s.path)
    emb = check_embeddings(embeddings, name=f"embeddings of {s.name!r}")
    if emb.shape[0] != n:
        raise InputError(f"embeddings of {s.name!r} must have shape ({n}, dim); got {emb.shape}")
    model_id = _embedder_id(embedder)
    if reference is not None:
        reference.check_config(config)
        if model_id is not None and model_id != reference.embedder.model:
            raise InputError(f"{s.name} was embedded with {model_id!r} but the reference with "
                             f"{reference.embedder.model!r}; embed both with the same model")
        if emb.shape[1] != reference.embedder.dim:
            raise InputError(f"embeddings of {s.name!r} have dimension {emb.shape[1]} but the reference's have "
                             f"{reference.embedder.dim}; embed both with the same model")
        model_id = reference.embedder.model
    elif model_id is None:
        raise InputError("audit_checkpoint needs the embedder's model id (embedder=...) when there is no reference")

    at = reference.at_size(n) if reference is not None else None
    cal = at.calibration if at else calibrate_threshold(
        n_samples=n, model=model_id, config_threshold=config.similarity.threshold,
        threshold_origin=config.origin("similarity.threshold"))
    sim = similarity_section(s, emb, cal, config, model_id)
    scripts = script_share(s.texts)
    blind = _coverage_blind(reference, scripts, model_id)
    # the rows coverage clusters and the reference's map shows: the embeddings, or character n-grams
    cov_rows = reference.coverage_vectors(s.texts, emb) if reference is not None else emb
    cov = (_coverage_section(reference, cov_rows, at.natural, config)
           if reference is not None and reference.clusters is not None and blind is None else None)
    rep = repetition_section(s, config)
    prompts = None
    keys = s.prompts
    if all(p is not None for p in keys) and len(set(keys)) < len(keys):
        prompts = prompt_diversity(emb, keys, threshold=config.similarity.near_duplicate_threshold, ids=s.ids)
    checks = run_checks(SimpleNamespace(similarity=sim, coverage=cov, repetition=rep), config)
    rng = np.random.default_rng(config.seed)
    picks = np.sort(rng.choice(n, size=min(config.report.n_examples, n), replace=False))
    examples = [_view(s, int(i)) for i in picks]
    loops = _worst_loops(rep)
    map_rows = emb
    if projection is None and reference is not None:  # the reference's map is of what coverage clusters
        projection, map_rows = reference.projection, cov_rows
    return CheckpointResult(
        name=s.name, path=s.path, sha256=s.sha256, n_samples=n, n_empty=s.n_empty, n_skipped=s.n_skipped,
        n_truncated=s.n_truncated, texts=texts_of(s, examples, sim, loops, prompts),
        similarity=sim, coverage=cov, repetition=rep, lexical=lexical_section(s, config), prompts=prompts,
        scripts=scripts, verdict=data_vs_model(sim, at.similarity, config) if at else None,
        checks=checks, status=worst([c.status for c in checks]), examples=examples, worst_loops=loops,
        map_points=projection.points(map_rows, seed=config.seed) if projection is not None else None,
        warnings=_checkpoint_warnings(s, reference, scripts, model_id)
        + long_text_warning(s, n_long, max_tokens, config.embed.long_text)
        + ([f"{s.name}: coverage not measured: {blind}"] if blind else []),
        n_long=n_long,
    )


def assemble(
    checkpoints: Sequence[CheckpointResult],
    reference: Reference | BaselineResult | None = None,
    *,
    config: Config | dict | None = None,
    embedder: EmbedderInfo | None = None,
    started: float | None = None,
    command: list[str] | None = None,
    warnings: Sequence[str] = (),
    settings: dict[str, str] | None = None,
    map: EmbeddingMap | None = None,
    sources: Sequence[SourceAudit] = (),
    executor: str = "local",
    generation: dict[str, dict] | None = None,
    schema_version: int = SCHEMA_VERSION,
) -> AuditResult:
    """The AuditResult of checkpoint results: ranked, with noise notes, comparisons and provenance.

    `reference` is the fitted Reference (its baseline figures are taken at the largest
    checkpoint's size) or, when merging stored audits, their BaselineResult. `config` is the Config
    (or, when merging, the stored provenance config). `settings` overrides where each setting came
    from (default: the Config's own record).
    """
    checkpoints = list(checkpoints)
    if not checkpoints:
        raise InputError("assemble needs at least one checkpoint result")
    check_distinct_names(c.name for c in checkpoints)
    config = config if config is not None else Config()
    config_data = config.model_dump() if isinstance(config, Config) else dict(config)
    origins = settings if settings is not None else (config.origins if isinstance(config, Config) else {})
    run_warnings = list(warnings)
    baseline = None
    if isinstance(reference, Reference):
        baseline = reference.result(max(c.n_samples for c in checkpoints))
        embedder = embedder or reference.embedder
        run_warnings = [*reference.warnings, *run_warnings]
        if map is None and reference.projection is not None:
            p = reference.projection
            map = EmbeddingMap(p.explained_variance, p.baseline_points, p.fitted_on, reference.representation)
    elif reference is not None:
        baseline = reference
    if embedder is None:
        raise InputError("assemble needs the embedder (embedder=EmbedderInfo(...)) when there is no reference")
    ranking = rank(checkpoints)
    seed = int(config_data.get("seed", 0))
    provenance = Provenance(
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        run_seconds=round(time.perf_counter() - started, 3) if started is not None else 0.0,
        seed=seed, config=config_data, python=sys.version.split()[0], platform=platform.platform(),
        command=command, seeds=derived_seeds(seed), settings=dict(origins), executor=executor,
        generation=dict(generation or {}),
    )
    return AuditResult(
        schema_version=schema_version, tool=ToolInfo("sampleaudit", __version__), embedder=embedder,
        baseline=baseline, checkpoints=checkpoints, ranking=ranking, ranking_rule=ranking_rule(),
        provenance=provenance, ranking_notes=ranking_notes(checkpoints, ranking),
        comparisons=comparisons_to_top(checkpoints, ranking), map=map,
        warnings=list(dict.fromkeys(run_warnings)), sources=list(sources),
    )
