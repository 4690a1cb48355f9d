"""The GPU path at 100,000 samples: embedding texts/s (fp16, length-sorted batches) and similarity
pairs/s (blocks, nearest neighbours, near-duplicate search with torch), checked against numpy.

Run from the repository root on a machine with a CUDA GPU (torch with CUDA):

    python benchmarks/gpu_embed_similarity.py [--n 100000] [--device cuda] [--batch-size 512]

Smoke test on a CPU (same code path, small n): --device cpu --n 2000 --check-n 1000.
The texts are the demo's 5,400 texts (data_samples/), each used about n / 5,400 times with a
numbered prefix so that all n differ. Prints, from one run:
- embedding: texts/s of all-MiniLM-L6-v2 on the device (fp16 on CUDA), without the cache;
- similarity: seconds and pairs/s of nearest_neighbors (all n(n-1)/2 pairs, histogram, nearest
  neighbour of each row) and of near_duplicates on the device, and of numpy on the CPU for the
  first --check-n rows (pairs/s scale with n^2: the ratio is per pair);
- agreement on those --check-n rows, device vs numpy: share of equal nearest-neighbour indices,
  largest nearest-neighbour similarity difference, histogram counts moved, equal near-duplicate groups.
A JSON summary goes to $OUT/gpu_embed_similarity.json when $OUT is set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sampleaudit.embed import load_embedder  # noqa: E402
from sampleaudit.metrics.neardup import near_duplicates  # noqa: E402
from sampleaudit.metrics.similarity import nearest_neighbors  # noqa: E402


def _texts(n: int) -> list[str]:
    base = [json.loads(line)["text"] for f in sorted((ROOT / "data_samples").glob("*.jsonl"))
            for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [f"{i // len(base)}. {base[i % len(base)]}" for i in range(n)]


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _timed(on: str, fn, *args, **kwargs):
    _sync(on)
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    _sync(on)
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--block-size", type=int, default=4096)
    parser.add_argument("--check-n", type=int, default=20_000, help="rows compared with numpy on the CPU")
    parser.add_argument("--threshold", type=float, default=0.95, help="near-duplicate threshold")
    args = parser.parse_args()
    import torch

    summary: dict = {"n": args.n, "device": args.device, "torch": torch.__version__,
                     "gpu": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None}
    print(f"device {args.device} ({summary['gpu'] or 'CPU'}), torch {torch.__version__}, n {args.n:,}")

    texts = _texts(args.n)
    embedder = load_embedder(device=args.device, batch_size=args.batch_size, backend="torch")
    embedder.encode(texts[: args.batch_size])  # warm-up: kernels, allocator
    x, seconds = _timed(args.device, embedder.encode, texts)
    x = np.ascontiguousarray(x, dtype=np.float32)
    summary["embed"] = {"precision": embedder.precision, "seconds": round(seconds, 2),
                        "texts_per_s": round(args.n / seconds, 1), "batch_size": args.batch_size}
    print(f"embedding: {args.n:,} texts in {seconds:.1f} s = {args.n / seconds:,.0f} texts/s ({embedder.precision})")

    pairs = args.n * (args.n - 1) // 2
    nearest_neighbors(x[: args.block_size], block_size=args.block_size, device=args.device)  # warm-up
    nn, t_nn = _timed(args.device, nearest_neighbors, x, block_size=args.block_size, device=args.device)
    dup, t_dup = _timed(args.device, near_duplicates, x, threshold=args.threshold, nearest=nn,
                        block_size=args.block_size, device=args.device)
    summary["similarity"] = {"pairs": pairs, "nn_seconds": round(t_nn, 2), "nn_pairs_per_s": round(pairs / t_nn),
                             "neardup_seconds": round(t_dup, 2), "n_groups": dup.n_groups,
                             "block_size": args.block_size}
    print(f"similarity on {args.device}: {pairs:,} pairs in {t_nn:.2f} s = {pairs / t_nn:,.0f} pairs/s; "
          f"near duplicates {t_dup:.2f} s ({dup.n_groups} groups)")

    m = min(args.check_n, args.n)
    sub = x[:m]
    ref, t_np = _timed("cpu", nearest_neighbors, sub, block_size=1024)
    dev, _ = _timed(args.device, nearest_neighbors, sub, block_size=args.block_size, device=args.device)
    sub_pairs = m * (m - 1) // 2
    moved = int(np.abs(ref.pair_counts - dev.pair_counts).sum())
    same_dup = near_duplicates(sub, threshold=args.threshold, nearest=ref) == near_duplicates(
        sub, threshold=args.threshold, nearest=dev, device=args.device)
    summary["check"] = {"n": m, "numpy_seconds": round(t_np, 2), "numpy_pairs_per_s": round(sub_pairs / t_np),
                        "nn_index_equal_share": float(np.mean(ref.index == dev.index)),
                        "nn_similarity_max_diff": float(np.abs(ref.similarity - dev.similarity).max()),
                        "histogram_counts_moved": moved, "pairs": sub_pairs,
                        "pair_mean_diff": abs(ref.pair_sum - dev.pair_sum) / sub_pairs,
                        "near_duplicate_groups_equal": bool(same_dup)}
    c = summary["check"]
    print(f"numpy on the CPU, first {m:,} rows: {sub_pairs / t_np:,.0f} pairs/s "
          f"(device/numpy per pair: {(pairs / t_nn) / (sub_pairs / t_np):.1f}x)")
    print(f"agreement on {m:,} rows: nn index equal {c['nn_index_equal_share']:.4%}, nn similarity max diff "
          f"{c['nn_similarity_max_diff']:.2e}, histogram counts moved {moved:,} of {sub_pairs:,}, "
          f"mean diff {c['pair_mean_diff']:.1e}, near-duplicate groups equal: {same_dup}")
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "gpu_embed_similarity.json").write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
