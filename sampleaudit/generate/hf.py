"""The transformers backend: batched decoding with left padding and a KV cache, in a loop of its
own so that every row samples from its own generator (samples do not depend on the batch)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

from ..errors import ModelError
from .base import Generation, Request
from .options import GenerationOptions

DEFAULT_BATCH = {"cpu": 8, "mps": 16, "cuda": 64}


def resolve_device(device: str | None) -> str:
    import torch

    if device in (None, "", "auto"):
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        return "mps" if mps is not None and mps.is_available() else "cpu"
    return device


def resolve_dtype(dtype: str | None, device: str) -> str:
    """auto: bfloat16 on a GPU that has it (else float16), float16 on mps, float32 on the CPU."""
    if dtype not in (None, "", "auto"):
        return dtype
    if device.startswith("cuda"):
        import torch

        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    return "float16" if device.startswith("mps") else "float32"


class TransformersGenerator:
    """A causal LM through transformers, decoded by `_decode_batch`.

    Each row draws one uniform number per step from its own torch.Generator seeded with the row's
    seed, and picks its token by inverse-CDF on its own probabilities; left padding is masked and
    position ids count real tokens only, so a row's result does not depend on its neighbours
    (up to floating-point differences between batch shapes, which can flip an exact near-tie).
    """

    name = "transformers"

    def __init__(self, model, tokenizer, *, device: str, dtype: str, eos_ids: Sequence[int], pad_id: int,
                 batch_size: int, log: Callable[[str], None] | None = None):
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self.dtype = dtype
        self.eos_ids = tuple(eos_ids)
        self.pad_id = pad_id
        self.batch_size = batch_size
        self._log = log or (lambda _m: None)
        params = inspect.signature(model.forward).parameters
        self._keep_arg = "logits_to_keep" in params
        # transformers 5.x names the KV cache `cache` (4.x and remote code: `past_key_values`)
        self._cache_arg = "cache" if "cache" in params else "past_key_values"

    @property
    def chunk_size(self) -> int:
        return self.batch_size

    def generate(self, requests: Sequence[Request], options: GenerationOptions) -> list[Generation]:
        import torch

        out: list[Generation] = []
        i = 0
        while i < len(requests):
            chunk = requests[i:i + self.batch_size]
            try:
                out.extend(self._decode_batch(chunk, options))
            except torch.OutOfMemoryError:
                if self.device.startswith("cuda"):
                    torch.cuda.empty_cache()
                if self.batch_size == 1:
                    raise ModelError(f"out of memory on {self.device} even with a batch of 1; lower "
                                     "--max-new-tokens or use a device with more memory") from None
                self.batch_size = max(1, self.batch_size // 2)
                self._log(f"out of memory on {self.device} with a batch of {len(chunk)}; "
                          f"going on with batches of {self.batch_size}")
                continue
            i += len(chunk)
        return out

    def _decode_batch(self, requests: Sequence[Request], options: GenerationOptions) -> list[Generation]:
        import torch

        device = self.device
        rows = len(requests)
        width = max(len(r.token_ids) for r in requests)
        ids = torch.full((rows, width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((rows, width), dtype=torch.long)
        # history for the repetition penalty: pads replaced by the row's first token (already in the row)
        history = torch.empty((rows, width), dtype=torch.long)
        for r, req in enumerate(requests):
            toks = torch.tensor(req.token_ids, dtype=torch.long)
            ids[r, width - len(toks):] = toks
            mask[r, width - len(toks):] = 1
            history[r] = toks[0]
            history[r, width - len(toks):] = toks
        steps = options.max_new_tokens
        uniforms = None
        if not options.greedy:
            uniforms = torch.stack([torch.rand(steps, generator=torch.Generator().manual_seed(r.seed),
                                               dtype=torch.float64) for r in requests]).to(torch.float32)
            uniforms = uniforms.to(device)
        processors = _processors(options)
        eos = torch.tensor(self.eos_ids or [-1], device=device)
        ids, mask, history = ids.to(device), mask.to(device), history.to(device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        alive = torch.arange(rows, device=device)  # which request each remaining row is
        done = torch.zeros(rows, dtype=torch.bool, device=device)  # rows ended but still in the batch
        tokens: list[list[int]] = [[] for _ in range(rows)]
        finish = ["length"] * rows
        past = None
        step_input, step_positions = ids, positions
        with torch.inference_mode():
            for t in range(steps):
                kwargs = {"logits_to_keep": 1} if self._keep_arg else {}
                if past is not None:
                    kwargs[self._cache_arg] = past
                output = self.model(input_ids=step_input, attention_mask=mask, position_ids=step_positions,
                                    use_cache=True, **kwargs)
                past = getattr(output, "cache", None)
                if past is None:
                    past = getattr(output, "past_key_values", None)
                scores = processors(history, output.logits[:, -1, :].float())
                if uniforms is None:
                    chosen = scores.argmax(-1)
                else:
                    chosen = _inverse_cdf(torch.softmax(scores, dim=-1), uniforms[alive, t])
                ended = torch.isin(chosen, eos) & ~done
                for row, tok, end, skip in zip(alive.tolist(), chosen.tolist(), ended.tolist(), done.tolist()):
                    if not skip:
                        tokens[row].append(tok)
                        if end:
                            finish[row] = "eos"
                done = done | ended
                if t == steps - 1 or bool(done.all()):
                    break
                if bool(ended.any()) and hasattr(past, "batch_select_indices"):
                    keep = (~done).nonzero().squeeze(1)
                    past.batch_select_indices(keep)
                    alive, chosen, done = alive[keep], chosen[keep], done[keep]
                    mask, history, step_positions = mask[keep], history[keep], step_positions[keep]
                step_input = chosen[:, None]
                history = torch.cat([history, step_input], dim=1)
                mask = torch.cat([mask, torch.ones_like(step_input)], dim=1)
                step_positions = step_positions[:, -1:] + 1
        results = []
        for row in range(rows):
            text_ids = tokens[row][:-1] if finish[row] == "eos" else tokens[row]
            text = self.tokenizer.decode(text_ids, skip_special_tokens=True)
            results.append(Generation(text, finish[row], len(tokens[row])))
        return results


def _processors(options: GenerationOptions):
    """transformers' own logits processors, in the order its generate() applies them."""
    from transformers.generation.logits_process import (
        LogitsProcessorList, RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper, TopKLogitsWarper,
        TopPLogitsWarper)

    procs = LogitsProcessorList()
    if options.repetition_penalty != 1.0:
        procs.append(RepetitionPenaltyLogitsProcessor(options.repetition_penalty))
    if not options.greedy:
        if options.temperature != 1.0:
            procs.append(TemperatureLogitsWarper(options.temperature))
        if options.top_k > 0:
            procs.append(TopKLogitsWarper(options.top_k))
        if options.top_p < 1.0:
            procs.append(TopPLogitsWarper(options.top_p))
    return procs


def _inverse_cdf(probs, uniforms):
    """One token per row: the first index whose cumulative probability reaches u * total (never a
    token of probability zero)."""
    import torch

    cdf = probs.cumsum(-1)
    target = (uniforms * cdf[:, -1]).clamp(min=torch.finfo(cdf.dtype).tiny)
    return torch.searchsorted(cdf, target[:, None]).squeeze(1).clamp(max=probs.shape[-1] - 1)


def load_transformers(folder: str, tokenizer, *, given: str, device: str, dtype: str, eos_ids: Sequence[int],
                      pad_id: int, batch_size: int | None, trust_remote_code: bool,
                      log: Callable[[str], None] | None = None) -> TransformersGenerator:
    import torch
    from transformers import AutoModelForCausalLM

    try:
        torch_dtype = getattr(torch, dtype)
    except AttributeError:
        raise ModelError(f"unknown dtype {dtype!r}; use auto, float32, bfloat16 or float16") from None
    try:
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch_dtype, trust_remote_code=trust_remote_code)
        model.to(device).eval()
    except torch.OutOfMemoryError:
        raise ModelError(f"{given}: the model does not fit in memory on {device}") from None
    except (OSError, ValueError, RuntimeError) as exc:
        raise ModelError(f"{given}: cannot load the model ({' '.join(str(exc).split())[:200]})") from None
    size = batch_size or DEFAULT_BATCH.get(device.split(":")[0], 8)
    return TransformersGenerator(model, tokenizer, device=device, dtype=dtype, eos_ids=eos_ids, pad_id=pad_id,
                                 batch_size=size, log=log)
