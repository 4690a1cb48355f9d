#!/usr/bin/env python3
"""sampleaudit against the pipeline a user would write by hand, same data, same run (issue 12, part 2).

    python benchmarks/bench_vs_naive.py [--n 20000]

The naive pipeline: scikit-learn's cosine_similarity on the full n x n matrix (nearest-neighbour
similarity, high-similarity share, mean) and HDBSCAN on the raw 384-d embeddings (the same
min_cluster_size rule as sampleaudit: 1% of n, at least 10). sampleaudit: fit_reference on an
n-row baseline (done once per sweep and reused for every checkpoint) and audit_checkpoint on the
n samples (similarity, near-duplicates, Vendi, coverage, own clusters, repetition, intervals,
checks). Each side runs in its own fresh process (benchmarks/_synthetic.py data, the same for
both), so each peak RSS is that side's alone. Prints the times, peak RSS and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def naive(folder: Path) -> dict:
    import numpy as np

    import hdbscan
    from sklearn.metrics.pairwise import cosine_similarity

    x = np.load(folder / "ckpt.npy")
    t0 = time.perf_counter()

    s = cosine_similarity(x)
    np.fill_diagonal(s, -np.inf)
    nn = s.max(axis=1)
    high = float((nn >= 0.9).mean())
    np.fill_diagonal(s, 0.0)
    mean = float(s.sum(dtype=np.float64) / (len(x) * (len(x) - 1)))
    del s
    t_sim = time.perf_counter() - t0
    labels = hdbscan.HDBSCAN(min_cluster_size=max(10, round(0.01 * len(x)))).fit(x).labels_
    total = time.perf_counter() - t0
    return {"similarity_s": t_sim, "clustering_s": total - t_sim, "analysis_s": total, "high_share": high,
            "mean": mean, "clusters": int(labels.max() + 1)}


def _trim() -> None:
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def ours(folder: Path) -> dict:
    import numpy as np

    from sampleaudit import audit_checkpoint, fit_reference
    from sampleaudit.samples import SampleSet

    texts = json.loads((folder / "texts.json").read_text())
    base = SampleSet.from_texts(texts["baseline"], name="baseline")
    ck = SampleSet.from_texts(texts["ckpt"], name="ckpt")
    base_emb, x = np.load(folder / "baseline.npy"), np.load(folder / "ckpt.npy")
    t0 = time.perf_counter()
    ref = fit_reference(base, base_emb, embedder="bench", sizes=[len(ck)])
    t_ref = time.perf_counter() - t0
    from _stages import instrument, rss_mib

    _trim()  # what the fit freed goes back to the OS, so the RSS below is the checkpoint's analysis
    held = rss_mib()
    rec = instrument()
    t1 = time.perf_counter()
    r = audit_checkpoint(ck, x, ref)
    t_ck = time.perf_counter() - t1
    rec.stop()
    embedding = sum(rec.seconds[k] for k in ("similarity (NN pass, near-dups, Vendi, intervals)",
                                             "coverage (assign, interval)", "checkpoint's own HDBSCAN"))
    return {"reference_s": t_ref, "analysis_s": t_ck, "embedding_analysis_s": embedding,
            "analysis_peak_rss_mib": rec.peak_seen, "held_rss_mib": held,
            "stage_peaks_mib": {k: round(v) for k, v in rec.peak.items()}, "high_share": r.similarity.high_similarity_share,
            "mean": r.similarity.mean, "clusters": r.coverage.sample_clusters if r.coverage else None}


def child(kind: str, folder: Path) -> None:
    from _stages import peak_rss_mib

    t = time.process_time()
    out = naive(folder) if kind == "naive" else ours(folder)
    out.update(peak_rss_mib=peak_rss_mib(), cpu_s=time.process_time() - t)
    print(json.dumps(out))


def run_child(kind: str, folder: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, __file__, "--child", kind, "--folder", str(folder)], check=True,
                         capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--child", choices=["naive", "ours"], help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.folder)
        return
    import numpy as np

    from _synthetic import make_set

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        base_texts, base_emb = make_set(args.n, seed=1)
        ck_texts, ck_emb = make_set(args.n, seed=2, used_topics=20)
        np.save(folder / "baseline.npy", base_emb)
        np.save(folder / "ckpt.npy", ck_emb)
        (folder / "texts.json").write_text(json.dumps({"baseline": base_texts, "ckpt": ck_texts}))
        print(f"n = {args.n:,} samples (and a baseline of as many for sampleaudit), load average "
              f"{' / '.join(f'{v:.1f}' for v in os.getloadavg())}, CPUs: {os.cpu_count()}")
        a = run_child("ours", folder)
        b = run_child("naive", folder)
    print("| pipeline | analysis of the n samples | CPU s (process) | peak RSS |")
    print("|---|---|---|---|")
    print(f"| naive: cosine_similarity (n x n) + HDBSCAN on 384-d | {b['analysis_s']:.1f} s "
          f"(similarity {b['similarity_s']:.1f} s, HDBSCAN {b['clustering_s']:.1f} s) | {b['cpu_s']:.1f} | "
          f"{b['peak_rss_mib']:.0f} MiB |")
    print(f"| sampleaudit audit_checkpoint (reference fitted once: {a['reference_s']:.1f} s) | "
          f"{a['analysis_s']:.1f} s (of which similarity + coverage + own clusters {a['embedding_analysis_s']:.1f} s; "
          f"the rest: repetition, lexical, checks) | {a['cpu_s']:.1f} | {a['peak_rss_mib']:.0f} MiB |")
    print(f"speed-up, naive / sampleaudit's same analysis (similarity + clustering): "
          f"{b['analysis_s'] / a['embedding_analysis_s']:.1f}x (target >= 20x); naive / whole audit_checkpoint: "
          f"{b['analysis_s'] / a['analysis_s']:.1f}x; counting the reference fit too: "
          f"{b['analysis_s'] / (a['analysis_s'] + a['reference_s']):.1f}x")
    print(f"memory, peak RSS while audit_checkpoint ran / naive's peak RSS: "
          f"{a['analysis_peak_rss_mib']:.0f} / {b['peak_rss_mib']:.0f} MiB = "
          f"{a['analysis_peak_rss_mib'] / b['peak_rss_mib']:.2f} (target <= 0.25; it includes the "
          f"{a['held_rss_mib']:.0f} MiB held before it started: imports, inputs, the fitted reference); "
          f"whole sampleaudit process, reference fit included: {a['peak_rss_mib'] / b['peak_rss_mib']:.2f}")
    print(f"figures: naive high share (cos >= 0.9) {b['high_share']:.4f}, mean {b['mean']:.4f}, "
          f"{b['clusters']} clusters; sampleaudit high share (calibrated) {a['high_share']:.4f}, mean {a['mean']:.4f}, "
          f"{a['clusters']} own clusters")
    print(f"load average after: {' / '.join(f'{v:.1f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
