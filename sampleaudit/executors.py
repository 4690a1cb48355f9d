"""Where the per-checkpoint work runs: in this process, in local worker processes, or on Ray.

A `Job` is one checkpoint: its samples (read on the driver) or a model to generate them from.
`checkpoint_task` does one job (generate, embed through the cache, `audit_checkpoint`); an
executor's `map` runs it once per job, with what every job shares shipped once, and returns the
outputs in job order, so the driver assembles the same AuditResult whatever ran the tasks.
"""

from __future__ import annotations

import logging
import os
import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .config import Config
from .errors import InputError, SampleAuditError
from .results import CheckpointResult, EmbedderInfo
from .samples import SampleSet

RAY_HINT = "--executor ray needs Ray: pip install 'sampleaudit[ray]'"
MAX_RETRIES = 3  # a task whose worker process dies is run again this many times (Ray's task retries)


@dataclass(frozen=True)
class Job:
    """One checkpoint's work: `samples` read on the driver, or `generate`, the keyword arguments of
    sampleaudit.generate.generate (model, out, name, n ...) to make them on the worker."""

    name: str
    samples: SampleSet | None = None
    generate: dict | None = None
    embeddings: np.ndarray | None = None  # precomputed vectors (then nothing is embedded)
    n_long: int | None = None


@dataclass(frozen=True)
class Shared:
    """What every job of a run needs, shipped to the workers once.

    `embedder` builds the embedder on the worker (a picklable callable: models are loaded there,
    not shipped); `cache_dir` is the embedding cache's folder as the driver resolved it (None: no
    cache). With `stage` "embed" a task stops after embedding and returns its vectors (the audit
    without a baseline fits its map on every checkpoint's vectors before analysing any).
    """

    config: Config
    embedder: Callable | None
    info: EmbedderInfo | None = None  # the driver's embedder (provenance; the workers' must match)
    max_tokens: int | None = None
    reference: object | None = None  # a fitted sampleaudit.reference.Reference
    projection: object | None = None  # the map of an audit without a baseline
    cache_dir: str | None = None
    stage: str = "audit"


@dataclass
class JobOutput:
    name: str
    result: CheckpointResult | None = None
    samples: SampleSet | None = None  # stage "embed" only
    vectors: np.ndarray | None = None  # stage "embed" only
    n_long: int | None = None
    embedder: EmbedderInfo | None = None  # what embedded on the worker (None: precomputed vectors)
    generation: dict | None = None  # provenance of generated samples
    warnings: list[str] = field(default_factory=list)


def _generate(spec: dict) -> tuple[SampleSet, dict]:
    from .generate import generate, generation_provenance
    from .samples import load_samples

    result = generate(**spec)
    return load_samples(result.path, name=result.name), generation_provenance(result.meta_path)


_EMBEDDER: dict[tuple, object] = {}  # the embedder this worker process loaded, kept for its next task


def _embedder(factory):
    """factory(), kept for the next task of this process while the factory and the GPUs the task
    was given (Ray sets CUDA_VISIBLE_DEVICES per task) stay the same."""
    try:
        key = (pickle.dumps(factory), os.environ.get("CUDA_VISIBLE_DEVICES"))
    except Exception:  # a factory only cloudpickle can ship: built for each task
        return factory()
    if key not in _EMBEDDER:
        _EMBEDDER.clear()  # one model at a time in a worker's memory
        _EMBEDDER[key] = factory()
    return _EMBEDDER[key]


def _runtime_mismatch(name: str, worker: EmbedderInfo, driver: EmbedderInfo | None) -> list[str]:
    """Refuse a worker whose embedder is another model; a warning when only its runtime differs.

    The model (id and dimension) must be the driver's: vectors of two models are not comparable. The
    runtime (backend, precision) may differ, e.g. GPU workers in fp16 against a baseline embedded
    on a CPU driver with OpenVINO in bf16, or a worker without openvino falling back to torch: the
    vectors then agree to rounding (cosine >= 0.9999 for all-MiniLM-L6-v2), so the audit goes on
    and says so.
    """
    if driver is None:
        return []
    if (worker.model, worker.dim) != (driver.model, driver.dim):
        raise InputError(f"the worker's embedder is {worker.model!r} ({worker.dim}-d) but the driver's is "
                         f"{driver.model!r} ({driver.dim}-d); one audit needs one embedder")
    if (worker.backend, worker.precision) == (driver.backend, driver.precision):
        return []
    return [f"{name} was embedded on its worker with {worker.backend} {worker.precision} on {worker.device}, the "
            f"driver's sets with {driver.backend} {driver.precision} on {driver.device}: the same model, vectors "
            "equal to rounding; set embed.backend (and --device) alike everywhere to rule the difference out"]


def checkpoint_task(job: Job, shared: Shared) -> JobOutput:
    """Do one job: generate its samples when asked, embed them, analyse them against the reference."""
    from .embed import EmbeddingCache, embed_texts
    from .engine import audit_checkpoint

    config = shared.config
    generation = None
    samples = job.samples
    if job.generate is not None:
        samples, generation = _generate(job.generate)
        samples = samples.capped(config.input.max_chars)
    vectors, n_long, info, warnings = job.embeddings, job.n_long, None, []
    if vectors is None:
        embedder = _embedder(shared.embedder)
        info = EmbedderInfo.of(embedder)
        warnings += _runtime_mismatch(samples.name, info, shared.info)
        store = None
        if shared.cache_dir is not None:
            store = EmbeddingCache(shared.cache_dir)
            store.check()
        vectors = embed_texts(samples.texts, embedder, cache=store)
        count_long = getattr(embedder, "n_truncated", None)
        n_long = count_long(samples.texts) if count_long is not None else None
        warnings += list(store.warnings) if store is not None else []
    if shared.stage == "embed":
        return JobOutput(samples.name, samples=samples, vectors=vectors, n_long=n_long, embedder=info,
                         generation=generation, warnings=warnings)
    result = audit_checkpoint(samples, vectors, shared.reference, config, embedder=shared.info,
                              projection=shared.projection, n_long=n_long, max_tokens=shared.max_tokens)
    return JobOutput(samples.name, result=result, n_long=n_long, embedder=info, generation=generation,
                     warnings=warnings)


class LocalExecutor:
    """Jobs in this process (workers=1), or in `workers` local processes (concurrent.futures)."""

    def __init__(self, workers: int = 1):
        if not isinstance(workers, int) or workers < 1:
            raise InputError(f"--workers must be a whole number >= 1; got {workers!r}")
        self.workers = workers
        self.name = "local" if workers == 1 else f"local ({workers} processes)"

    @property
    def in_process(self) -> bool:
        return self.workers == 1

    def map(self, fn, jobs: Sequence[Job], shared: Shared, *, progress: bool = False) -> list:
        from tqdm import tqdm

        if self.workers == 1:
            return [fn(job, shared) for job in tqdm(jobs, desc="checkpoints", unit="ckpt", disable=not progress)]
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # spawn: a forked child of a process with torch's threads started can hang
        with ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(fn, job, shared) for job in jobs]
            out = []
            for future in tqdm(futures, desc="checkpoints", unit="ckpt", disable=not progress):
                out.append(future.result())
            return out


def import_ray():
    """The ray module, or InputError with the install hint."""
    try:
        import ray
    except ImportError:
        raise InputError(RAY_HINT) from None
    return ray


class RayExecutor:
    """One Ray task per job, on the cluster at `address` (None: a Ray already started in this
    process, else $RAY_ADDRESS, else a local Ray started on this machine). `Shared` goes into the
    object store once; each task asks for `cpus` and `gpus`; a task whose worker dies is retried
    `max_retries` times; an error a task raises on purpose is raised here as itself."""

    name = "ray"
    in_process = False

    def __init__(self, address: str | None = None, *, cpus: float = 1, gpus: float = 0,
                 max_retries: int = MAX_RETRIES):
        for flag, value in (("--cpus-per-worker", cpus), ("--gpus-per-worker", gpus)):
            if not isinstance(value, (int, float)) or not value >= 0:
                raise InputError(f"{flag} must be a number >= 0; got {value!r}")
        self.ray = import_ray()
        self.address, self.cpus, self.gpus, self.max_retries = address, cpus, gpus, max_retries

    def _connect(self) -> None:
        ray = self.ray
        if ray.is_initialized():
            return
        try:
            # Ray's own log lines (and the workers') stay out of the CLI's stderr: errors come back as exceptions
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.ERROR)
        except ConnectionError as exc:
            raise InputError(f"cannot reach the Ray cluster at --ray-address {self.address!r}: "
                             f"{' '.join(str(exc).split())}") from None

    def map(self, fn, jobs: Sequence[Job], shared: Shared, *, progress: bool = False) -> list:
        from ray.exceptions import RayTaskError
        from tqdm import tqdm

        ray = self.ray
        self._connect()
        task = ray.remote(fn).options(num_cpus=self.cpus, num_gpus=self.gpus, max_retries=self.max_retries,
                                      retry_exceptions=False)
        shared_ref = ray.put(shared)
        pending = {task.remote(job, shared_ref): i for i, job in enumerate(jobs)}
        out: list = [None] * len(jobs)
        with tqdm(total=len(jobs), desc="checkpoints", unit="ckpt", disable=not progress) as bar:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    i = pending.pop(ref)
                    try:
                        out[i] = ray.get(ref)
                    except RayTaskError as exc:
                        for other in pending:
                            ray.cancel(other)
                        cause = getattr(exc, "cause", None)
                        if isinstance(cause, SampleAuditError):
                            raise cause from None
                        raise
                    bar.update(1)
        return out


def make_executor(kind: str = "local", *, workers: int = 1, address: str | None = None, cpus: float | None = None,
                  gpus: float | None = None):
    """The executor the CLI's --executor/--workers/--ray-address/--*-per-worker options ask for."""
    if kind == "local":
        if address is not None or cpus is not None or gpus is not None:
            raise InputError("--ray-address, --cpus-per-worker and --gpus-per-worker need --executor ray")
        return LocalExecutor(workers)
    if kind == "ray":
        if workers != 1:
            raise InputError("--workers is for --executor local; Ray runs as many tasks at once as the cluster "
                             "has room for (see --cpus-per-worker, --gpus-per-worker)")
        return RayExecutor(address, cpus=1 if cpus is None else cpus, gpus=0 if gpus is None else gpus)
    raise InputError(f"--executor must be local or ray; got {kind!r}")


def same_embedder(embedder):
    """A picklable factory that returns `embedder` itself (for embedders cheap to ship, e.g. hashing)."""
    return embedder
