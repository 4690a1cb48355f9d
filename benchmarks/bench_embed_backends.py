"""Texts/s and agreement with torch of each CPU runtime of the default embedder, back to back.

Run from the repository root: python benchmarks/bench_embed_backends.py [--n 384] [--rounds 2]

Embeds the same --n demo texts (data_samples/ckpt-28k.jsonl, about 45 words each) with each
runtime in turn, --rounds times, and prints per round texts/s, the ratio to torch fp32 measured in
the same round (the machine is shared: compare ratios, not absolute figures) and the min / mean
cosine of each vector to torch's. Runtimes:
- torch fp32 (sampleaudit's torch backend) and torch with bf16 autocast (for reference);
- openvino: sampleaudit's OpenVINO backend (its default precision: bf16 on CPUs with bf16 units),
  and the same export compiled with INFERENCE_PRECISION_HINT=f32;
- openvino-int8: the export with int8 weights (nncf.compress_weights), when nncf is installed;
- onnx / onnx-int8: an ONNX export (torch.onnx) run by onnxruntime, fp32 and dynamically quantised
  to int8 (per-channel MatMul weights), when onnx and onnxruntime are installed.
Export and calibration times are printed once; they are not part of texts/s.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sampleaudit.embed import load_embedder  # noqa: E402
from sampleaudit.embed import openvino as ovb  # noqa: E402


def _have(*names: str) -> bool:
    return all(importlib.util.find_spec(n) is not None for n in names)


def _runtime_encoder(embedder, run):
    """Encode with the embedder's own batching and pooling, its transformer replaced by `run`."""

    def encode(texts):
        embedder._runtime = run
        return embedder._encode_runtime(texts)

    return encode


def _onnx_runs(st_model, folder: Path) -> dict:
    import onnxruntime as ort
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    names = ovb.input_names(st_model)
    example = st_model.preprocess(["an example sentence", "another, somewhat longer, example sentence"])
    wrapped = ovb._Wrapped(ovb._transformer(st_model), names)
    t = time.perf_counter()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(wrapped, tuple(example[k] for k in names), str(folder / "model.onnx"), input_names=names,
                          output_names=["token_embeddings"], opset_version=17, dynamo=False,
                          dynamic_axes={k: {0: "batch", 1: "seq"} for k in [*names, "token_embeddings"]})
    quantize_dynamic(str(folder / "model.onnx"), str(folder / "model_int8.onnx"), weight_type=QuantType.QInt8,
                     per_channel=True, op_types_to_quantize=["MatMul"])
    print(f"onnx export + int8 quantisation: {time.perf_counter() - t:.1f} s")
    runs = {}
    for label, file in (("onnx fp32", "model.onnx"), ("onnx int8", "model_int8.onnx")):
        session = ort.InferenceSession(str(folder / file), providers=["CPUExecutionProvider"])
        runs[label] = (lambda s: lambda f: s.run(None, {k: f[k].numpy() for k in names})[0])(session)
    return runs


def _openvino_runs(st_model, folder: Path) -> dict:
    ov = ovb.import_openvino()

    t = time.perf_counter()
    ovb.export(st_model, folder)
    print(f"openvino export: {time.perf_counter() - t:.1f} s")
    core = ov.Core()
    names = json.loads((folder / "export.json").read_text())["inputs"]
    variants = {"openvino (default)": ({}, None), "openvino f32": ({"INFERENCE_PRECISION_HINT": "f32"}, None)}
    if _have("nncf"):
        import nncf

        t = time.perf_counter()
        compressed = nncf.compress_weights(core.read_model(str(folder / "model.xml")))
        print(f"openvino int8 weight compression: {time.perf_counter() - t:.1f} s")
        variants["openvino int8 weights"] = ({}, compressed)
    runs = {}
    for label, (config, model) in variants.items():
        compiled = core.compile_model(model if model is not None else core.read_model(str(folder / "model.xml")),
                                      "CPU", config)
        hint = compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()
        runs[f"{label} [{hint}]"] = (lambda c: lambda f: c({k: f[k].numpy() for k in names})[0])(compiled)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=384)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    lines = (ROOT / "data_samples" / "ckpt-28k.jsonl").read_text(encoding="utf-8").splitlines()
    texts = [json.loads(line)["text"] for line in lines[: args.n]]
    print(f"{len(texts)} texts, mean {np.mean([len(t.split()) for t in texts]):.0f} words, batch {args.batch_size}")

    import torch

    base = load_embedder(device="cpu", backend="torch", batch_size=args.batch_size, long_text="truncate")
    work = load_embedder(device="cpu", backend="torch", batch_size=args.batch_size, long_text="truncate")
    encoders = {"torch fp32": base._encode}

    def autocast(batch):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return base._encode(batch)

    encoders["torch bf16 autocast"] = autocast
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        if _have("openvino"):
            runs.update(_openvino_runs(work._model, Path(tmp) / "openvino"))
        if _have("onnx", "onnxruntime"):
            (Path(tmp) / "onnx").mkdir()
            runs.update(_onnx_runs(work._model, Path(tmp) / "onnx"))
        for label, run in runs.items():
            encoders[label] = _runtime_encoder(work, run)
        print(f"{'round':>5} {'runtime':36s} {'texts/s':>8} {'x torch':>8} {'min cos':>8} {'mean cos':>9}")
        for rnd in range(1, args.rounds + 1):
            reference, torch_rate = None, None
            for label, encode in encoders.items():
                start = time.perf_counter()
                vectors = encode(texts)
                rate = len(texts) / (time.perf_counter() - start)
                vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
                if reference is None:
                    reference, torch_rate = vectors, rate
                cos = np.sum(vectors * reference, axis=1)
                print(f"{rnd:>5} {label:36s} {rate:8.1f} {rate / torch_rate:8.2f} {cos.min():8.5f} {cos.mean():9.6f}",
                      flush=True)


if __name__ == "__main__":
    main()
