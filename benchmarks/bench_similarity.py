"""Memory and time of the blockwise similarity distribution, against what an n x n matrix would take.

Run: python benchmarks/bench_similarity.py [--n 5000 20000] [--block-size 1024]
Prints, for each n, the peak memory traced during similarity_distribution + near_duplicates and
its ratio to the n*n float32 matrix that a non-blockwise version would hold (memory must stay
O(n * block)), and the wall time.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from sampleaudit.metrics.neardup import near_duplicates
from sampleaudit.metrics.similarity import similarity_distribution


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[5000, 20000])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--block-size", type=int, default=1024)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'n':>7} {'peak MiB':>9} {'n*n MiB':>9} {'peak/n*n':>9} {'n*block MiB':>11} {'seconds':>8}")
    for n in args.n:
        x = rng.normal(size=(n, args.dim)).astype(np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        tracemalloc.start()
        t0 = time.perf_counter()
        _, nn = similarity_distribution(x, threshold=0.9, block_size=args.block_size)
        near_duplicates(x, threshold=0.95, nearest=nn, block_size=args.block_size)
        seconds = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        full = n * n * 4
        block = n * args.block_size * 4
        print(f"{n:>7} {peak / 2**20:>9.1f} {full / 2**20:>9.1f} {peak / full:>9.3f} {block / 2**20:>11.1f} {seconds:>8.2f}")


if __name__ == "__main__":
    main()
