#!/usr/bin/env python3
"""Embedding dominates: the share of everything else in a whole audit on CPU (issue 12, part 3).

    python benchmarks/bench_embedding_share.py [--embedder minilm|hashing] [--n 1000] [--baseline 3000]

Five checkpoints of n texts each against a baseline of `--baseline` texts, all real text from
data_samples/ (the three demo checkpoints, the demo baseline topped up from the source corpus,
and two more checkpoints of unused corpus sentences), written to JSONL and audited through
`sampleaudit.audit()` with the default embedder (all-MiniLM-L6-v2 on CPU) and a fresh embedding
cache, then rendered to HTML. Prints each stage's time (loading, model loading, embedding,
reference, metrics, clustering, assembling, HTML) and the ratio of everything else to the
embedding (target <= 0.20), then runs the identical audit again on the warm cache (target: at
least 10x faster). `--embedder hashing` (a fast deterministic embedder) is for the smoke test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
EXTRA = [  # (module, attribute, stage) on top of _stages.STAGES
    ("sampleaudit.pipeline", "_as_set", "loading samples"),
    ("sampleaudit.embed", "load_embedder", "loading the model"),  # what embedder_from_config calls
    ("sampleaudit.pipeline", "embed_texts", "embedding (through the cache)"),
    ("sampleaudit.pipeline", "fit_reference", "reference (rest)"),
    ("sampleaudit.pipeline", "audit_checkpoint", "checkpoint (rest: checks, prompts, map)"),
]


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def build_sets(folder: Path, n: int, n_baseline: int) -> tuple[list[Path], Path]:
    sys.path.insert(0, str(HERE))
    from bench_analysis import DATA, _corpus

    demo = [_jsonl(DATA / f"ckpt-{k}.jsonl") for k in ("20k", "28k", "35k")]
    base = [r["text"] for r in _jsonl(DATA / "baseline.jsonl")]
    seen = set(base) | {r["text"] for rows in demo for r in rows}
    corpus = _corpus()
    base += [t for t in corpus if t not in seen][: max(0, n_baseline - len(base))]
    base = base[:n_baseline]
    seen |= set(base)
    sentences = list(dict.fromkeys(s for t in corpus for s in re.split(r"(?<=[.!?])\s+", t)
                                   if 6 <= len(s.split()) and s not in seen))
    sets = [[r["text"] for r in rows][:n] for rows in demo] + [sentences[:n], sentences[n:2 * n]]
    paths = []
    for i, texts in enumerate(sets):
        p = folder / f"ckpt-{i + 1}.jsonl"
        p.write_text("".join(json.dumps({"id": str(j), "text": t}) + "\n" for j, t in enumerate(texts)), "utf-8")
        paths.append(p)
    b = folder / "baseline.jsonl"
    b.write_text("".join(json.dumps({"id": str(j), "text": t}) + "\n" for j, t in enumerate(base)), "utf-8")
    return paths, b


def run(paths, base, cache_dir: Path, out: Path, embedder_kind: str) -> tuple[float, dict]:
    from _stages import STAGES, instrument

    from sampleaudit import audit, render
    from sampleaudit.embed import EmbeddingCache

    rec = instrument(STAGES + EXTRA)
    embedder = None
    if embedder_kind == "hashing":
        from sampleaudit.embed.hashing import HashingEmbedder

        embedder = HashingEmbedder()
    t0 = time.perf_counter()
    try:
        result = audit(paths, baseline=base, embedder=embedder, cache=EmbeddingCache(cache_dir))
        t_render = time.perf_counter()
        render(result, out, formats=["html"])
        rec.seconds["HTML report"] += time.perf_counter() - t_render
    finally:
        rec.stop()
    return time.perf_counter() - t0, dict(rec.seconds)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedder", choices=["minilm", "hashing"], default="minilm")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--baseline", type=int, default=3000)
    args = ap.parse_args(argv)
    if args.embedder == "minilm":
        import torch

        print(f"CPU, torch threads: {torch.get_num_threads()}")
    print(f"load average before: {' / '.join(f'{v:.1f}' for v in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths, base = build_sets(folder, args.n, args.baseline)
        cold, stages = run(paths, base, folder / "cache", folder / "report1", args.embedder)
        warm, warm_stages = run(paths, base, folder / "cache", folder / "report2", args.embedder)
    embed = stages.get("embedding (through the cache)", 0.0)
    print(f"\n5 checkpoints x {args.n:,} texts against a {args.baseline:,}-text baseline, embedder {args.embedder}")
    print("| stage | first audit (cold cache) s | second audit (warm cache) s |")
    print("|---|---|---|")
    for name in dict.fromkeys([*stages, *warm_stages]):
        print(f"| {name} | {stages.get(name, 0.0):.2f} | {warm_stages.get(name, 0.0):.2f} |")
    print(f"| **total** | **{cold:.1f}** | **{warm:.1f}** |")
    rest = cold - embed
    print(f"everything but embedding: {rest:.1f} s = {rest / embed:.3f} of the embedding time "
          f"({embed:.1f} s) (target <= 0.20)" if embed else "no embedding time measured")
    print(f"second identical audit: {warm:.1f} s, {cold / warm:.1f}x faster than the first (target >= 10x)")
    print(f"load average after: {' / '.join(f'{v:.1f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
