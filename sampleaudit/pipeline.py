"""audit(): load, embed (through the cache), then the staged engine: fit_reference once,
audit_checkpoint per checkpoint, assemble. Orchestration only; every figure is computed in
sampleaudit.engine and sampleaudit.reference."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from .config import Config
from .embed import Embedder, EmbeddingCache, embed_texts, embedder_from_config
from .engine import assemble, audit_checkpoint
from .errors import InputError
from .reference import check_distinct_names, fit_map, fit_reference
from .results import AuditResult, EmbedderInfo
from .samples import SampleSet, load_samples

Log = Callable[[str], None]
NO_BASELINE = ("no baseline given: coverage and the data-vs-model verdict are not measured, and the similarity "
               "threshold is the embedder's default; give a sample of the training data (--baseline) to measure them")


def _as_set(item: SampleSet | str | Path, config: Config) -> SampleSet:
    if isinstance(item, SampleSet):
        return item.capped(config.input.max_chars)
    return load_samples(item, max_chars=config.input.max_chars)


def _given(samples: SampleSet, given: np.ndarray) -> np.ndarray:
    arr = np.asarray(given)
    if arr.ndim != 2 or arr.shape[0] != len(samples):
        raise InputError(f"embeddings for {samples.name!r} must have shape ({len(samples)}, dim); got {arr.shape}")
    return arr.astype(np.float32)


def _open_cache(cache: EmbeddingCache | bool | None, config: Config, log: Log) -> EmbeddingCache | None:
    """The cache to embed through: the one given, else the configured one (None: config.embed.cache
    decides; False: none). It is checked before anything is embedded (a broken or unwritable cache
    degrades to no cache, with a warning)."""
    if cache is False or (cache is None and not config.embed.cache):
        return None
    if cache is None or cache is True:
        cache = EmbeddingCache(config.embed.cache_dir, warn=log)
    cache.check()
    return cache


def audit(
    checkpoints: Sequence[SampleSet | str | Path],
    *,
    baseline: SampleSet | str | Path | None = None,
    config: Config | None = None,
    embedder: Embedder | None = None,
    embeddings: Mapping[str, np.ndarray] | None = None,
    embedder_id: str | None = None,
    cache: EmbeddingCache | bool | None = None,
    log: Log | None = None,
    command: list[str] | None = None,
    generation: dict[str, dict] | None = None,
    executor=None,
    embedder_factory: Callable[[], Embedder] | None = None,
    generate: Sequence[dict] = (),
    progress: bool = False,
) -> AuditResult:
    """Audit one or more checkpoints' samples, optionally against a training-data baseline.

    `embeddings` maps set names (checkpoint names, and the baseline's) to precomputed (n, dim)
    arrays made with the model `embedder_id` (recorded in the result; `compare` merges only audits
    whose embedder is known). Sets without precomputed vectors are embedded with `embedder`
    (default: the configured sentence-transformers model) through the embedding cache when
    `config.embed.cache` is on (or through `cache` when given; `cache=False` for none).

    `executor` (sampleaudit.executors; default: in this process) runs the per-checkpoint work;
    other than in-process, the workers build their embedder with `embedder_factory` (default: the
    configured model; `embedder` itself is shipped when given without one) and `generate` lists
    the keyword arguments of sampleaudit.generate.generate for checkpoints to generate there.
    """
    started = time.perf_counter()
    if isinstance(executor, str):
        from .executors import make_executor

        executor = make_executor(executor)
    config = config or Config()
    log = log or (lambda _msg: None)
    sets = [_as_set(c, config) for c in checkpoints]
    generate = list(generate)
    if generate and (executor is None or executor.in_process):
        raise InputError("generate= needs an executor that runs the checkpoints' tasks (sampleaudit.executors)")
    if not sets and not generate:
        raise InputError("give at least one checkpoint file to audit")
    names = [s.name for s in sets] + [g["name"] for g in generate]
    check_distinct_names(names)  # before anything is embedded
    small = [s for s in sets if len(s) < 2]
    if small:
        raise InputError(f"{small[0].name} has {len(small[0])} sample; an audit needs at least 2",
                         path=small[0].path)
    base = _as_set(baseline, config) if baseline is not None else None
    if base is not None and base.name in names:
        base = dataclasses.replace(base, name="baseline:" + base.name)
    everything = sets + ([base] if base else [])
    given = dict(embeddings or {})
    unknown = sorted(set(given) - {s.name for s in everything})
    if unknown:
        raise InputError(f"embeddings were given for {unknown[0]!r}, which is not a set of this audit; its sets are "
                         f"{', '.join(repr(s.name) for s in everything)}")
    to_embed = [s for s in everything if s.name not in given] + ([None] if generate else [])
    if to_embed and embedder is None and embedder_factory is not None:
        embedder = embedder_factory()
    if to_embed and embedder is None:
        embedder_factory = embedder_from_config(config.embed)
        embedder = embedder_factory()
    if given and to_embed and embedder_id is not None and embedder_id != embedder.model_id:
        raise InputError(f"the precomputed embeddings were made with {embedder_id!r} but the other sets are embedded "
                         f"with {embedder.model_id!r}; one audit needs one embedder")
    if given and to_embed and embedder_id is None:
        raise InputError("precomputed embeddings are mixed with sets embedded here: say which model made them "
                         f"(embedder_id={embedder.model_id!r} if it is the same one)")
    store = _open_cache(cache, config, log) if to_embed else None
    vectors = {s.name: _given(s, given[s.name]) for s in everything if s.name in given}
    n_long: dict[str, int] = {}
    count_long = getattr(embedder, "n_truncated", None)
    parallel = executor is not None and not executor.in_process
    for s in (([base] if base is not None and base.name not in given else []) if parallel else to_embed):
        log(f"embedding {s.name}: {len(s)} texts")
        vectors[s.name] = embed_texts(s.texts, embedder, cache=store)
        if count_long is not None:
            n_long[s.name] = count_long(s.texts)
    max_tokens = getattr(embedder, "max_tokens", None)
    dims = {v.shape[1] for v in vectors.values()} | ({embedder.dim} if parallel and to_embed else set())
    if len(dims) > 1:
        raise InputError(f"all embeddings must have the same dimension; got {sorted(dims)}")
    dim = dims.pop()
    if embedder is not None:
        info = EmbedderInfo.of(embedder)
    else:
        info = EmbedderInfo(embedder_id or "precomputed", dim, "n/a")

    warnings = list(store.warnings) if store is not None else []
    warnings += list(getattr(embedder, "warnings", None) or [])
    if info.model == "precomputed":
        warnings.append("precomputed embeddings of an unknown model: `compare` cannot merge this audit with others "
                        "(pass embedder_id= to audit())")
    reference, projection = None, None
    sizes = {len(s) for s in sets} | {g["n"] for g in generate if g.get("n")}
    if base is not None:
        log(f"fitting the reference on the baseline ({len(base)} samples)")
        reference = fit_reference(base, vectors[base.name], config, embedder=info, sizes=sizes,
                                  n_long=n_long.get(base.name))
    if base is None:
        warnings.append(NO_BASELINE)
    if parallel:
        return _audit_on(executor, sets, generate, vectors, n_long, reference, config, embedder, embedder_factory,
                         info, store, warnings, sizes=sizes, log=log, progress=progress, started=started,
                         command=command, generation=generation)
    if base is None:
        projection = fit_map([vectors[s.name] for s in sets], seed=config.seed, fitted_on="checkpoints")
    results = []
    for s in sets:
        log(f"analysing {s.name}")
        results.append(audit_checkpoint(s, vectors[s.name], reference, config, embedder=info, projection=projection,
                                        n_long=n_long.get(s.name), max_tokens=max_tokens))
    emap = None
    if projection is not None:
        from .results import EmbeddingMap

        emap = EmbeddingMap(projection.explained_variance, [], projection.fitted_on)
    return assemble(results, reference, config=config, embedder=info, started=started, command=command,
                    warnings=warnings, map=emap, generation=generation)


def _audit_on(executor, sets, generate, vectors, n_long, reference, config, embedder, factory, info, store,
              warnings, *, sizes, log, progress, started, command, generation) -> AuditResult:
    """The checkpoints' work as executor tasks (one per checkpoint); the driver assembles."""
    from .executors import Job, Shared, checkpoint_task, same_embedder

    if factory is None:
        factory = functools.partial(same_embedder, embedder) if embedder is not None else None
    jobs = [Job(s.name, samples=s, embeddings=vectors.get(s.name)) for s in sets]
    jobs += [Job(g["name"], generate=g) for g in generate]
    # the workers get the reference without the baseline's texts and vectors when every checkpoint's
    # size is known here (generation with --per-prompt: not), its calibrations computed once, here
    sized = reference is not None and all(g.get("n") for g in generate)
    shipped = reference.for_workers(sizes) if sized else reference
    shared = Shared(config, factory, info, getattr(embedder, "max_tokens", None), shipped,
                    cache_dir=str(store.directory) if store is not None and store.check() else None)
    projection = None
    log(f"running {len(jobs)} checkpoint(s) on {executor.name}")
    if reference is None:  # the map is fitted on every checkpoint's vectors before any is analysed
        embedded = executor.map(checkpoint_task, jobs, dataclasses.replace(shared, stage="embed"), progress=progress)
        projection = fit_map([o.vectors for o in embedded], seed=config.seed, fitted_on="checkpoints")
        jobs = [Job(o.name, samples=o.samples, embeddings=o.vectors, n_long=o.n_long) for o in embedded]
        outputs = executor.map(checkpoint_task, jobs, dataclasses.replace(shared, projection=projection),
                               progress=progress)
        outputs = [dataclasses.replace(o, generation=e.generation, warnings=e.warnings)
                   for o, e in zip(outputs, embedded)]
    else:
        outputs = executor.map(checkpoint_task, jobs, shared, progress=progress)
    check_distinct_names(o.name for o in outputs)
    generation = {**(generation or {}), **{o.name: o.generation for o in outputs if o.generation is not None}}
    warnings = list(dict.fromkeys([*warnings, *(w for o in outputs for w in o.warnings)]))
    emap = None
    if projection is not None:
        from .results import EmbeddingMap

        emap = EmbeddingMap(projection.explained_variance, [], projection.fitted_on)
    return assemble([o.result for o in outputs], reference, config=config, embedder=info, started=started,
                    command=command, warnings=warnings, map=emap, generation=generation, executor=executor.name)
