#!/usr/bin/env python3
"""Checkpoints per minute with one and with two Ray workers on this machine, and the serial share.

    python benchmarks/bench_ray.py [--checkpoints 6]

The demo's 1,000-sample checkpoints (data_samples/ckpt-*.jsonl, cycled under new names) against
its 2,405-text baseline, embedded with the hashing embedder so that the per-checkpoint work is
the analysis (the real model's embedding would only add parallel work). One local Ray with 2
CPUs: each task asks for 2 CPUs (one task at a time) or 1 CPU (two at a time). Workers are
warmed up first (their start and imports are paid once per cluster, not per checkpoint).
Prints the serial parts (reference fit, assembly), checkpoints per minute and the ratio.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data_samples"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoints", type=int, default=6)
    args = parser.parse_args()

    import ray

    from sampleaudit.config import Config
    from sampleaudit.embed import embed_texts
    from sampleaudit.embed.hashing import HashingEmbedder
    from sampleaudit.engine import assemble
    from sampleaudit.executors import Job, RayExecutor, Shared, checkpoint_task
    from sampleaudit.reference import fit_reference
    from sampleaudit.results import EmbedderInfo
    from sampleaudit.samples import load_samples

    config = Config()
    emb = HashingEmbedder(256)
    info = EmbedderInfo(emb.model_id, emb.dim, emb.device, emb.precision)
    sources = [load_samples(p) for p in sorted(DATA.glob("ckpt-*.jsonl"))]
    sets = [dataclasses.replace(sources[i % len(sources)], name=f"step-{i}") for i in range(args.checkpoints)]
    base = load_samples(DATA / "baseline.jsonl")

    t = time.perf_counter()
    reference = fit_reference(base, embed_texts(base.texts, emb), config, embedder=info,
                              sizes={len(s) for s in sets})
    fit_s = time.perf_counter() - t
    jobs = [Job(s.name, samples=s) for s in sets]
    shared = Shared(config, functools.partial(HashingEmbedder, 256), info, None, reference)

    t = time.perf_counter()
    serial = [checkpoint_task(j, shared) for j in jobs]
    loop_s = time.perf_counter() - t
    t = time.perf_counter()
    assemble([o.result for o in serial], reference, config=config)
    assemble_s = time.perf_counter() - t

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    runs = {}
    for workers, cpus in ((1, 2), (2, 1)):
        executor = RayExecutor(cpus=cpus)
        executor.map(checkpoint_task, jobs[:2], shared)  # warm-up: workers started, modules imported
        t = time.perf_counter()
        outputs = executor.map(checkpoint_task, jobs, shared)
        runs[workers] = time.perf_counter() - t
        assert [o.result.name for o in outputs] == [j.name for j in jobs]
    ray.shutdown()

    per_min = {w: 60 * len(jobs) / s for w, s in runs.items()}
    serial_share = (fit_s + assemble_s) / (fit_s + loop_s + assemble_s)
    print(f"{len(jobs)} checkpoints x {len(sets[0])} samples, baseline {len(base)}, hashing embedder")
    print(f"serial: reference fit {fit_s:.1f} s, assembly {assemble_s:.1f} s; "
          f"in-process loop {loop_s:.1f} s ({loop_s / len(jobs):.1f} s per checkpoint)")
    print(f"serial share of the in-process run: {serial_share:.3f}")
    for w, s in runs.items():
        print(f"ray, {w} worker(s): {s:.1f} s, {per_min[w]:.1f} checkpoints/min")
    print(f"ratio 2 workers / 1 worker: {per_min[2] / per_min[1]:.2f}")


if __name__ == "__main__":
    main()
