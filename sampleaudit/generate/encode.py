"""Prompts to token ids: the chat template when asked, BOS for unconditional generation, and the
check that every prompt plus its new tokens fits the model's context."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InputError, ModelError
from .prompts import Prompt

_CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "n_ctx", "max_sequence_length")


def load_tokenizer(folder: str, *, given: str, trust_remote_code: bool = False):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(folder, trust_remote_code=trust_remote_code)
    except (OSError, ValueError, TypeError) as exc:
        raise InputError(f"cannot load the checkpoint's tokenizer ({' '.join(str(exc).split())[:200]}); "
                         "save it next to the weights (tokenizer.save_pretrained)", path=given) from None


def context_length(config, tokenizer) -> int | None:
    """The model's context in tokens, from its config (else the tokenizer's model_max_length)."""
    for source in (config, getattr(config, "text_config", None)):
        for key in _CONTEXT_KEYS:
            value = getattr(source, key, None) if source is not None else None
            if isinstance(value, int) and value > 0:
                return value
    value = getattr(tokenizer, "model_max_length", None)
    return value if isinstance(value, int) and 0 < value < 1_000_000 else None


def bos_id(tokenizer, config) -> int:
    for value in (tokenizer.bos_token_id, getattr(config, "bos_token_id", None), tokenizer.eos_token_id):
        if isinstance(value, int):
            return value
    raise InputError("the model's tokenizer has no BOS (or EOS) token to start unconditional generation from; "
                     "give --prompts")


def eos_ids(tokenizer, model_config, generation_config=None) -> tuple[int, ...]:
    """Every token id that ends a sample: from the generation config, the model config and the tokenizer."""
    ids: list[int] = []
    for value in (getattr(generation_config, "eos_token_id", None), getattr(model_config, "eos_token_id", None),
                  tokenizer.eos_token_id):
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(v, int) and v not in ids:
                ids.append(v)
    return tuple(ids)


def pad_id(tokenizer, eos: Sequence[int]) -> int:
    """The tokenizer's pad token; else one that is not EOS (unk, bos, or the first other id). Pad
    positions are masked out, so the choice never changes a sample."""
    for value in (tokenizer.pad_token_id, tokenizer.unk_token_id, tokenizer.bos_token_id):
        if isinstance(value, int) and value not in eos:
            return value
    return next(i for i in range(len(eos) + 1) if i not in eos)


def encode_prompts(tokenizer, prompts: Sequence[Prompt] | None, *, chat: bool, bos: int, context: int | None,
                   max_new_tokens: int, source: str | None = None) -> dict[int, tuple[int, ...]]:
    """Token ids per prompt index (index 0 = BOS alone when there are no prompts)."""
    if not prompts:
        if chat:
            raise InputError("--chat needs --prompts: the chat template wraps a user prompt")
        return {0: (bos,)}
    if chat and not getattr(tokenizer, "chat_template", None):
        raise InputError("--chat: the checkpoint's tokenizer has no chat template (tokenizer_config.json "
                         "chat_template); drop --chat to use the prompts as they are")
    encoded: dict[int, tuple[int, ...]] = {}
    for p in prompts:
        if chat:
            try:
                text = tokenizer.apply_chat_template([{"role": "user", "content": p.text}],
                                                     add_generation_prompt=True, tokenize=False)
            except Exception as exc:  # a template is user code (Jinja) and raises anything
                raise ModelError(f"the chat template failed on prompt {_label(p)} ({exc})") from None
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        else:
            ids = tokenizer(p.text)["input_ids"]
        ids = tuple(int(i) for i in ids) or (bos,)
        if context is not None and len(ids) + max_new_tokens > context:
            raise InputError(
                f"prompt {_label(p)} is {len(ids)} tokens; with --max-new-tokens {max_new_tokens} that is "
                f"{len(ids) + max_new_tokens}, more than the model's context of {context} tokens; shorten the "
                "prompt or lower --max-new-tokens", path=source, line=p.line)
        encoded[p.index] = ids
    return encoded


def _label(p: Prompt) -> str:
    head = " ".join(p.text.split())
    head = head if len(head) <= 40 else head[:39] + "…"
    return f'"{p.id}" ({head!r})' if p.id is not None else f"{p.index + 1} ({head!r})"
