#!/usr/bin/env python3
"""Time and peak RSS per stage of a whole audit, embeddings given, as n grows (issue 12, part 1).

    python benchmarks/bench_scale.py [--n 1000 10000 100000]

Each size runs in a fresh process: a synthetic baseline of n rows (30 topics, 384-d unit vectors,
short texts; benchmarks/_synthetic.py) and a checkpoint of n rows drawn from 20 of the topics go
through `sampleaudit.audit()` with their embeddings given. Prints, per size, each stage's wall time
(exclusive of the stages it calls) and the peak RSS seen while it ran, then the totals and the
growth from one size to the next (x10 rows: ~10x is linear, ~100x quadratic).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def one(n: int) -> dict:
    from _stages import instrument, peak_rss_mib, rss_mib
    from _synthetic import make_set

    base_texts, base_emb = make_set(n, seed=1)
    ck_texts, ck_emb = make_set(n, seed=2, used_topics=20)
    rec = instrument()
    from sampleaudit import audit
    from sampleaudit.samples import SampleSet

    base = SampleSet.from_texts(base_texts, name="baseline")
    ck = SampleSet.from_texts(ck_texts, name="ckpt")
    start_rss = rss_mib()
    t0, cpu0 = time.perf_counter(), time.process_time()
    try:
        result = audit([ck], baseline=base, embeddings={"ckpt": ck_emb, "baseline": base_emb}, embedder_id="bench",
                       cache=False)
    finally:
        rec.stop()
    total, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    c = result.checkpoints[0]
    sim = c.similarity
    return {
        "n": n, "total_s": total, "cpu_s": cpu, "peak_rss_mib": peak_rss_mib(), "inputs_rss_mib": start_rss,
        "stages": {k: [rec.seconds[k], rec.peak[k], rec.calls[k]] for k in rec.seconds},
        "figures": {
            "high_similarity_share": sim.high_similarity_share,
            "estimate": getattr(sim, "estimate", None) and sim.estimate.method,
            "coverage": f"{c.coverage.covered_clusters}/{c.coverage.baseline_clusters}",
            "clusters (own vs baseline)": f"{c.coverage.sample_clusters} vs "
                                          f"{c.coverage.sample_clustering.baseline_n_clusters}",
            "status": c.status,
        },
    }


def load_average() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def print_table(runs: list[dict]) -> None:
    sizes = [r["n"] for r in runs]
    names = list(dict.fromkeys(k for r in runs for k in r["stages"]))
    head = " | ".join(f"{n:,} s / MiB" for n in sizes)
    print(f"| stage | {head} |")
    print("|---|" + "---|" * len(sizes))
    for name in names:
        cells = []
        for r in runs:
            s, peak, _ = r["stages"].get(name, [0.0, 0.0, 0])
            cells.append(f"{s:.2f} / {peak:.0f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("| **whole audit()** | " + " | ".join(f"**{r['total_s']:.1f} / {r['peak_rss_mib']:.0f}**" for r in runs)
          + " |")
    print("| CPU seconds (process) | " + " | ".join(f"{r['cpu_s']:.1f}" for r in runs) + " |")
    for a, b in zip(runs, runs[1:]):
        print(f"growth {a['n']:,} -> {b['n']:,} rows (x{b['n'] / a['n']:g}): time x{b['total_s'] / a['total_s']:.1f}, "
              f"peak RSS x{b['peak_rss_mib'] / a['peak_rss_mib']:.1f}")
    for r in runs:
        print(f"n={r['n']:,}: {r['figures']}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 10_000, 100_000])
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one)))
        return
    print(f"load average before: {load_average()}, CPUs: {os.cpu_count()}")
    runs = []
    for n in args.n:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
        out = subprocess.run([sys.executable, __file__, "--one", str(n)], check=True, capture_output=True, text=True,
                             env=env)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print_table(runs)
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
