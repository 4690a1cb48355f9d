"""`sampleaudit generate`: the subcommand's arguments and its runner, plus the generation options
that `sampleaudit audit --model` shares (the main CLI wires both in)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import InputError, SampleAuditError
from .options import GenerationOptions

_D = GenerationOptions()

EXAMPLE = ("example:\n  sampleaudit generate --model ckpts/step-20000 --prompts probes/open_questions.jsonl "
           "-n 1000 --out runs/step-20000.jsonl")


def add_generation_options(parser: argparse.ArgumentParser) -> None:
    """Prompts, counts, sampling and backend options (shared by `generate` and `audit --model`).

    Not included, because `audit` has its own: --seed, --batch-size, --device, --out, -q
    (`generate` adds them; `options_from_args` reads `args.seed`).
    """
    g = parser.add_argument_group("generation")
    g.add_argument("--prompts", metavar="FILE", help="JSONL with a \"prompt\" field (and optional \"id\"), or a "
                   "text file, one prompt per line (default: none, unconditional generation from BOS)")
    g.add_argument("-n", type=int, metavar="N", help="samples in total, spread evenly over the prompts")
    g.add_argument("--per-prompt", type=int, metavar="K", help="samples per prompt (instead of -n)")
    g.add_argument("--chat", action="store_true", help="wrap each prompt in the tokenizer's chat template")
    g.add_argument("--temperature", type=float, default=_D.temperature,
                   help="sampling temperature; 0 means greedy (default: %(default)s)")
    g.add_argument("--top-p", type=float, default=_D.top_p, help="nucleus sampling mass; 1 is off (default: %(default)s)")
    g.add_argument("--top-k", type=int, default=_D.top_k, help="keep the k most likely tokens; 0 is off "
                   "(default: %(default)s)")
    g.add_argument("--max-new-tokens", type=int, default=_D.max_new_tokens,
                   help="tokens per sample at most; a sample that reaches it ends with finish reason length "
                   "(default: %(default)s)")
    g.add_argument("--repetition-penalty", type=float, default=_D.repetition_penalty,
                   help="penalty on tokens already in the prompt or sample; 1 is off (default: %(default)s)")
    g.add_argument("--backend", choices=["auto", "transformers", "vllm"], default="auto",
                   help="auto: vLLM on a CUDA GPU when installed, else transformers (default: %(default)s)")
    g.add_argument("--dtype", choices=["auto", "float32", "bfloat16", "float16"], default="auto",
                   help="weights' precision; auto: bfloat16 on a GPU that has it, else float16; float32 on the "
                   "CPU (default: %(default)s)")
    g.add_argument("--trust-remote-code", action="store_true",
                   help="allow a checkpoint's own Python code to run (off unless given)")


def options_from_args(args: argparse.Namespace) -> GenerationOptions:
    """GenerationOptions from parsed arguments (`args.seed` None means the default seed 0)."""
    seed = getattr(args, "seed", None)
    return GenerationOptions(temperature=args.temperature, top_p=args.top_p, top_k=args.top_k,
                             max_new_tokens=args.max_new_tokens, repetition_penalty=args.repetition_penalty,
                             seed=_D.seed if seed is None else seed, chat=args.chat)


def add_generate_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `generate` subcommand to `subparsers` (from ArgumentParser.add_subparsers)."""
    p = subparsers.add_parser(
        "generate", help="generate samples from a checkpoint into a JSONL file (reproducible, resumable)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Generate samples from a Hugging Face-format causal LM checkpoint (a local folder, a .gguf "
        "file, or a hub name where the machine has network) into a JSONL file that `sampleaudit audit` reads. "
        "Each sample's randomness comes from (seed, prompt index, sample index), so the same arguments give "
        "the same samples whatever the batch size. An interrupted run goes on where it stopped when run again "
        "with the same arguments; parameters, the model's config hash and the tool version go into "
        "OUT.meta.json.",
        epilog=EXAMPLE,
    )
    p.add_argument("--model", required=True, metavar="PATH",
                   help="checkpoint folder (config.json, weights, tokenizer), a .gguf file, or a hub name")
    p.add_argument("--out", required=True, metavar="FILE", help="output .jsonl (its sidecar is FILE.meta.json)")
    p.add_argument("--name", metavar="NAME", help="checkpoint name written into each sample (default: the "
                   "folder name)")
    p.add_argument("--seed", type=int, default=_D.seed, help="seed of every sample's generator (default: %(default)s)")
    p.add_argument("--device", help="auto (default: cuda > mps > cpu), cpu, cuda, cuda:N, mps")
    p.add_argument("--batch-size", type=int, metavar="N",
                   help="samples decoded together (default: 64 on CUDA, 8 on the CPU; halved on a GPU "
                   "out-of-memory); the samples do not depend on it")
    p.add_argument("--threads", type=int, metavar="N", help="CPU threads torch uses (default: torch's own choice)")
    p.add_argument("--overwrite", action="store_true", help="start again even if FILE exists")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar or log lines")
    add_generation_options(p)
    return p


def run_generate(args: argparse.Namespace) -> int:
    """Run `sampleaudit generate`; returns the exit code (0). Errors propagate as SampleAuditError."""
    from ..controls import for_terminal
    from .run import generate

    if args.n is None and args.per_prompt is None:
        raise InputError("give -n (samples in total) or --per-prompt (samples per prompt)")
    if args.threads is not None:
        if args.threads < 1:
            raise InputError(f"--threads must be a positive integer; got {args.threads}")
        import torch

        torch.set_num_threads(args.threads)  # asked for explicitly on the command line
    quiet = args.quiet

    def log(message: str) -> None:
        if not quiet:
            print(f"sampleaudit: {for_terminal(message)}", file=sys.stderr, flush=True)

    result = generate(args.model, prompts=args.prompts, n=args.n, per_prompt=args.per_prompt, out=args.out,
                      options=options_from_args(args), backend=args.backend, name=args.name, device=args.device,
                      dtype=args.dtype, batch_size=args.batch_size, trust_remote_code=args.trust_remote_code,
                      overwrite=args.overwrite, progress=not quiet and sys.stderr.isatty(), log=log)
    if result.n_generated == 0:
        note = "already complete"
    else:
        note = f"{result.n_generated} generated" + (f" ({result.n_resumed} resumed)" if result.n_resumed else "")
        note += f", {result.samples_per_s:.1f} samples/s"
    counts = ", ".join(f"{k} {v}" for k, v in sorted(result.finish_reasons.items()))
    print(for_terminal(f"wrote {result.path}: {result.n_samples} samples from {result.name} ({note}; finish: "
                       f"{counts}, {result.length_share:.0%} at length)"))
    print(f"wrote {result.meta_path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m sampleaudit.generate ...`: the generate command on its own (same arguments)."""
    from ..controls import for_terminal

    parser = argparse.ArgumentParser(prog="sampleaudit-generate")
    sub = parser.add_subparsers(dest="command", required=True)
    add_generate_parser(sub)
    args = parser.parse_args(["generate", *(sys.argv[1:] if argv is None else argv)])
    try:
        return run_generate(args)
    except SampleAuditError as exc:
        print(f"sampleaudit: error: {for_terminal(' '.join(str(exc).split()))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("sampleaudit: interrupted", file=sys.stderr)
        return 130
