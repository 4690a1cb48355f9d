"""Smoke tests of the scale benchmarks: each runs at a tiny size and prints its table (no timing
is asserted: CI machines are noisy; the figures that count are in benchmarks/README.md)."""

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))


def test_bench_scale_prints_stages_per_size(capsys):
    import bench_scale

    run = bench_scale.one(300)
    assert run["n"] == 300 and run["peak_rss_mib"] > 0
    assert {"baseline clustering", "similarity (NN pass, near-dups, Vendi, intervals)", "repetition"} <= set(run["stages"])
    bench_scale.print_table([run, run])
    out = capsys.readouterr().out
    assert "| stage | 300 s / MiB | 300 s / MiB |" in out and "**whole audit()**" in out and "growth 300 -> 300" in out
    import sampleaudit.engine

    assert not hasattr(sampleaudit.engine.similarity_section, "__wrapped__")  # instrumentation undone


def test_bench_vs_naive_sides_agree_on_the_mean(tmp_path):
    import json

    import bench_vs_naive
    import numpy as np
    from _synthetic import make_set

    bt, be = make_set(300, seed=1)
    ct, ce = make_set(300, seed=2, used_topics=5)
    np.save(tmp_path / "baseline.npy", be)
    np.save(tmp_path / "ckpt.npy", ce)
    (tmp_path / "texts.json").write_text(json.dumps({"baseline": bt, "ckpt": ct}))
    naive, ours = bench_vs_naive.naive(tmp_path), bench_vs_naive.ours(tmp_path)
    assert naive["mean"] == pytest.approx(ours["mean"], abs=1e-4)  # the same data, the same figure
    assert ours["analysis_s"] > 0 and ours["embedding_analysis_s"] <= ours["analysis_s"]


def test_bench_embedding_share_prints_the_breakdown(capsys):
    import bench_embedding_share

    bench_embedding_share.main(["--embedder", "hashing", "--n", "30", "--baseline", "120"])
    out = capsys.readouterr().out
    assert "| embedding (through the cache) |" in out and "| HTML report |" in out
    assert "second identical audit" in out
