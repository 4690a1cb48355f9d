"""The vLLM backend (optional extra `sampleaudit[vllm]`): used on a GPU machine where vLLM is
installed. Every request carries its own seed, derived per sample, never one shared stream."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from ..errors import ModelError
from .base import Generation, Request
from .options import GenerationOptions

CHUNK = 256  # requests per call: what is written (and resumable) at once


def vllm_available() -> bool:
    return importlib.util.find_spec("vllm") is not None


def sampling_params(options: GenerationOptions, seed: int, eos_ids: Sequence[int]):
    """vLLM SamplingParams for one request, the same decoding rules as the transformers backend."""
    from vllm import SamplingParams

    return SamplingParams(
        n=1,
        temperature=float(options.temperature),
        top_p=float(options.top_p) if not options.greedy else 1.0,
        top_k=int(options.top_k) if options.top_k > 0 and not options.greedy else -1,
        repetition_penalty=float(options.repetition_penalty),
        max_tokens=options.max_new_tokens,
        seed=seed,
        stop_token_ids=list(eos_ids) or None,
        skip_special_tokens=True,
    )


class VLLMGenerator:
    """A model served by vLLM's offline LLM engine; prompts go in as token ids."""

    name = "vllm"
    chunk_size = CHUNK

    def __init__(self, llm, *, device: str, dtype: str, eos_ids: Sequence[int]):
        self.llm = llm
        self.device = device
        self.dtype = dtype
        self.eos_ids = tuple(eos_ids)

    def generate(self, requests: Sequence[Request], options: GenerationOptions) -> list[Generation]:
        prompts = [{"prompt_token_ids": list(r.token_ids)} for r in requests]
        params = [sampling_params(options, r.seed, self.eos_ids) for r in requests]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        results = []
        for out in outputs:
            completion = out.outputs[0]
            reason = "length" if completion.finish_reason == "length" else "eos"
            results.append(Generation(completion.text, reason, len(completion.token_ids)))
        return results


def load_vllm(folder: str, *, given: str, dtype: str, eos_ids: Sequence[int], trust_remote_code: bool,
              seed: int) -> VLLMGenerator:
    try:
        from vllm import LLM
    except ImportError:
        raise ModelError("--backend vllm needs vLLM: pip install 'sampleaudit[vllm]' (a CUDA machine)") from None
    try:
        llm = LLM(model=folder, tokenizer=folder, dtype=dtype, seed=seed, trust_remote_code=trust_remote_code)
    except Exception as exc:  # vLLM raises many unrelated types while starting its engine
        raise ModelError(f"{given}: vLLM cannot load the model ({' '.join(str(exc).split())[:200]})") from None
    return VLLMGenerator(llm, device="cuda", dtype=dtype, eos_ids=eos_ids)
