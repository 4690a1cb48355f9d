"""A tiny causal LM built offline for tests: a 2-layer GPT-2 with random weights and a BPE
tokenizer trained on the fly with the `tokenizers` library (no download)."""

from __future__ import annotations

from pathlib import Path

CORPUS = [
    "the cat sat on the mat and looked at the door",
    "a model that loops says the same thing again and again",
    "what is the capital of france? paris is the capital of france",
    "tell me a story about a dog who learned to read",
    "why is the sky blue? light scatters in the air",
    "write a poem about the sea, the wind and the night",
    "how do plants grow? they use light, water and air",
    "name three colours: red, green and blue",
] * 4

CHAT_TEMPLATE = (
    "{% for m in messages %}<|user|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def build_tiny_lm(folder: str | Path, *, seed: int = 0, pad_token: bool = False, chat_template: bool = True,
                  eos_logit: float | None = None, n_positions: int = 64) -> Path:
    """Write a tiny GPT-2 checkpoint folder (config, safetensors weights, tokenizer) and return it.

    pad_token: give the tokenizer a pad token of its own (otherwise it has none, like GPT-2).
    eos_logit: make every position's next-token logits constant: `eos_logit` for EOS, 0 for every
    other token (so sampling ends with EOS at a known rate, and greedy ends at once when > 0).
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    folder = Path(folder)
    specials = ["<|endoftext|>", "<|user|>", "<|assistant|>", "<|end|>"] + (["<|pad|>"] if pad_token else [])
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                   pad_token="<|pad|>" if pad_token else None)
    if chat_template:
        fast.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    eos = fast.convert_tokens_to_ids("<|endoftext|>")
    config = GPT2Config(vocab_size=len(fast), n_positions=n_positions, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=eos, eos_token_id=eos, tie_word_embeddings=eos_logit is None)
    model = GPT2LMHeadModel(config).eval()
    if eos_logit is not None:
        with torch.no_grad():
            model.transformer.ln_f.weight.zero_()
            model.transformer.ln_f.bias.zero_()
            model.transformer.ln_f.bias[0] = 1.0
            model.lm_head.weight.zero_()
            model.lm_head.weight[eos, 0] = eos_logit
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder
