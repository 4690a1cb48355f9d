"""Sampling options of `sampleaudit generate`, with their documented defaults, validated once."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ..errors import InputError


@dataclass(frozen=True)
class GenerationOptions:
    """How every sample is decoded. Two runs with equal options, model, prompts and device give equal samples.

    temperature: 0 means greedy (argmax); otherwise logits are divided by it before sampling.
    top_p: nucleus sampling, keep the smallest set of tokens whose probability reaches top_p (1.0 = off).
    top_k: keep the k most likely tokens (0 = off).
    max_new_tokens: a sample that reaches it ends with finish reason "length".
    repetition_penalty: CTRL-style penalty on tokens already in the prompt or the sample (1.0 = off).
    seed: each sample draws from its own generator seeded from (seed, prompt index, sample index).
    chat: wrap each prompt in the tokenizer's chat template (a user turn plus the generation prompt).
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 256
    repetition_penalty: float = 1.0
    seed: int = 0
    chat: bool = False

    def __post_init__(self) -> None:
        def number(name: str, value: object) -> float:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise InputError(f"--{name.replace('_', '-')} must be a finite number; got {value!r}")
            return float(value)

        def integer(name: str, value: object, low: int) -> None:
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InputError(f"--{name.replace('_', '-')} must be an integer >= {low}; got {value!r}")

        if number("temperature", self.temperature) < 0:
            raise InputError(f"--temperature must be >= 0 (0 means greedy); got {self.temperature}")
        if not 0 < number("top_p", self.top_p) <= 1:
            raise InputError(f"--top-p must be in (0, 1] (1 turns it off); got {self.top_p}")
        integer("top_k", self.top_k, 0)
        integer("max_new_tokens", self.max_new_tokens, 1)
        if number("repetition_penalty", self.repetition_penalty) <= 0:
            raise InputError(f"--repetition-penalty must be > 0 (1 turns it off); got {self.repetition_penalty}")
        integer("seed", self.seed, 0)
        if not isinstance(self.chat, bool):
            raise InputError(f"chat must be true or false; got {self.chat!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def to_dict(self) -> dict:
        """Plain JSON-ready values (floats stay floats, so a sidecar compares equal after a round trip)."""
        d = asdict(self)
        for key in ("temperature", "top_p", "repetition_penalty"):
            d[key] = float(d[key])
        return d
