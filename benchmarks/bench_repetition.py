"""Speed of loop detection and the repetition/lexical metrics, measured in one run.

Run from the repository root:  python benchmarks/bench_repetition.py [--repeats 5]

Prints
- the time to detect loops in 1,000 samples of at most 2,000 characters (a mix of looped and
  clean samples, English and Chinese, built from tests/data/loops_*.jsonl); the target is under a
  second on one CPU core;
- the time of `repetition_stats` and `lexical_diversity` on the same 1,000 samples;
- loop detection on single texts of 10,000 and 100,000 characters (clean prose, prose ending in
  a loop, Chinese) and the ratio t(100k) / t(10k): about 10 for linear time, 100 for quadratic.
Each figure is the best of `--repeats` runs, which filters out noise from other processes; the
1,000-sample figure also gives the CPU time of this process (one thread).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sampleaudit.metrics.lexical import lexical_diversity  # noqa: E402
from sampleaudit.metrics.repetition import detect_loops, repetition_stats  # noqa: E402


def _rows(name: str) -> list[dict]:
    with open(ROOT / "tests" / "data" / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _best(fn, repeats: int) -> float:
    """Best wall-clock time of `repeats` calls."""
    return min(_timed(fn)[0] for _ in range(repeats))


def _timed(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call."""
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def thousand_samples(rng: random.Random) -> list[str]:
    """1,000 samples of 1,500 to 2,000 characters: labelled texts (about a third looped), each
    preceded by clean prose of its language up to that length."""
    out = []
    for name in ("loops_en.jsonl", "loops_zh.jsonl"):
        rows = _rows(name)
        clean = [r["text"] for r in rows if not r["looped"]]
        for _ in range(700 if name == "loops_en.jsonl" else 300):
            text = rng.choice(rows)["text"]
            while len(text) < 1500:
                text = rng.choice(clean) + "\n" + text
            out.append(text[-2000:])
    return out


def long_texts(rng: random.Random, size: int) -> dict[str, str]:
    rows = _rows("loops_en.jsonl")
    clean_en = [r["text"] for r in rows if not r["looped"]]
    clean_zh = [r["text"] for r in _rows("loops_zh.jsonl") if not r["looped"]]
    en = []
    while sum(map(len, en)) < size:
        en.append(rng.choice(clean_en))
    zh = []
    while sum(map(len, zh)) < size:
        zh.append(rng.choice(clean_zh))
    prose = "\n".join(en)[:size]
    unit = "The model repeats this sentence until it runs out of tokens. "
    zh_prose = "".join(zh)[:size]
    return {
        "clean English": prose,
        "English, looped tail": (prose[: size // 2] + unit * size)[:size],
        "clean Chinese": zh_prose,
        "Chinese, looped tail": (zh_prose[: size // 2] + "我们需要继续努力，" * size)[:size],
        "one word repeated": ("again " * size)[:size],
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per figure; the best is kept")
    args = parser.parse_args(argv)
    rng = random.Random(0)

    samples = thousand_samples(rng)
    n_looped = sum(loop is not None for loop in detect_loops(samples))
    runs = [_timed(lambda: detect_loops(samples)) for _ in range(args.repeats)]
    t_loops, cpu_loops = min(r[0] for r in runs), min(r[1] for r in runs)
    print(f"loop detection, 1,000 samples <= 2,000 chars ({n_looped} looped, mean "
          f"{sum(map(len, samples)) / len(samples):.0f} chars): {t_loops:.3f} s wall, "
          f"{cpu_loops:.3f} s CPU ({'under' if t_loops < 1 else 'OVER'} the 1 s target)")
    t_rep = _best(lambda: repetition_stats(samples), max(1, args.repeats // 2))
    print(f"repetition_stats, same 1,000 samples: {t_rep:.3f} s")
    t_lex = _best(lambda: lexical_diversity(samples), max(1, args.repeats // 2))
    print(f"lexical_diversity (self-BLEU on 200), same 1,000 samples: {t_lex:.3f} s")

    print("loop detection on one long text:")
    small, large = long_texts(random.Random(1), 10_000), long_texts(random.Random(1), 100_000)
    for name in small:
        t10 = _best(lambda text=small[name]: detect_loops([text]), args.repeats)
        t100 = _best(lambda text=large[name]: detect_loops([text]), args.repeats)
        print(f"  {name:22s} 10k chars {t10 * 1000:7.2f} ms   100k chars {t100 * 1000:7.2f} ms   "
              f"ratio {t100 / t10:5.1f}  (linear ~10, quadratic ~100)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
