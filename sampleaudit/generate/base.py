"""The Generator protocol every backend implements, and the per-sample seed derivation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from .options import GenerationOptions

FINISH_REASONS = ("eos", "length")


@dataclass(frozen=True)
class Request:
    """One sample to generate: the prompt's token ids and the seed of this sample alone."""

    token_ids: tuple[int, ...]
    seed: int


@dataclass(frozen=True)
class Generation:
    """One generated sample. `n_new_tokens` counts the tokens generated, the final EOS included."""

    text: str
    finish_reason: str  # "eos" | "length"
    n_new_tokens: int


@runtime_checkable
class Generator(Protocol):
    """A loaded model that turns prompt token ids into samples.

    `name` is the backend's name ("transformers", "vllm"), `device` where it runs, `dtype` the
    weights' precision. `generate` must give each request the same result whatever other requests
    share its call (the batch), drawing its randomness only from `request.seed`.
    """

    name: str
    device: str
    dtype: str

    def generate(self, requests: Sequence[Request], options: GenerationOptions) -> list[Generation]:
        ...


def sample_seed(seed: int, prompt_index: int, sample_index: int) -> int:
    """The seed of one sample, derived from (seed, prompt index, sample index), a 63-bit integer.

    Every sample draws from its own stream: two prompts never share their noise (which by itself
    would make their answers look alike), and a sample does not depend on which others it is batched with.
    """
    state = np.random.SeedSequence([seed, prompt_index, sample_index]).generate_state(1, dtype=np.uint64)
    return int(state[0]) & ((1 << 63) - 1)
