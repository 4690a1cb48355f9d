"""Generating samples from a checkpoint: reproducible per sample, batched, resumable.

    generate(model, prompts=..., n=..., out=..., options=GenerationOptions(...)) -> GenerationResult
    load_prompts(path) -> list[Prompt];  generation_provenance(meta_path) -> dict
Backends (transformers always, vLLM when installed on a GPU) sit behind the Generator protocol and
are imported lazily.
"""

from .base import FINISH_REASONS, Generation, Generator, Request, sample_seed
from .options import GenerationOptions
from .output import meta_path_for
from .prompts import Prompt, WorkItem, load_prompts, plan
from .run import GenerationResult, generate, generation_provenance

__all__ = [
    "FINISH_REASONS", "Generation", "GenerationOptions", "GenerationResult", "Generator", "Prompt", "Request",
    "WorkItem", "generate", "generation_provenance", "load_prompts", "meta_path_for", "plan", "sample_seed",
]
