"""Finding a checkpoint: a local Hugging Face folder, a GGUF file (dequantized once into a cached
safetensors folder) or a hub name; its name, config hash and a cheap fingerprint of its weights."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, ModelError
from .prompts import file_sha256

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".index.json")
_HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


@dataclass(frozen=True)
class ModelSource:
    """Where a checkpoint's files are and what identifies it.

    `folder` is a Hugging Face folder (for a GGUF file, the dequantized copy in the cache; for a hub
    name, the name itself), `name` the checkpoint name written into every sample.
    """

    given: str
    folder: str
    name: str
    config_sha256: str
    weights_fingerprint: str
    gguf_file: str | None = None
    hub: bool = False


def resolve_model(model: str | os.PathLike, *, name: str | None = None, trust_remote_code: bool = False,
                  cache_dir: str | Path | None = None) -> ModelSource:
    """Find `model` and check it is a causal LM (reads its config only, never the weights).

    A GGUF file (or a folder holding exactly one and no config.json) is dequantized on first use and
    saved as safetensors under `cache_dir` (default: the sampleaudit cache folder, gguf/), keyed by the
    file's SHA-256, so later runs load it in about a second.
    """
    given = str(model)
    path = Path(given).expanduser()
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise InputError("is a file, not a checkpoint folder; give the folder holding config.json and the "
                             "weights (or a .gguf file)", path=given)
        return _from_gguf(path, given, name, trust_remote_code, cache_dir)
    if path.is_dir():
        if (path / "config.json").is_file():
            _check_causal_lm(str(path), given, trust_remote_code)
            return ModelSource(given, str(path), name or _stem(path), _sha256_bytes((path / "config.json").read_bytes()),
                               _fingerprint(path))
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            return _from_gguf(ggufs[0], given, name, trust_remote_code, cache_dir)
        raise InputError("not a Hugging Face checkpoint folder (no config.json"
                         + (f"; {len(ggufs)} .gguf files, name one" if ggufs else "") + ")", path=given)
    if (path.is_absolute() or given.startswith(".") or not _HUB_NAME.match(given)
            or (path.parent != Path(".") and path.parent.is_dir())):  # ckpts/step-1 where ckpts/ exists
        raise InputError("model folder not found; give a local Hugging Face checkpoint folder", path=given)
    return _from_hub(given, name, trust_remote_code)


def _stem(path: Path) -> str:
    return path.resolve().name or str(path)


def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fingerprint(folder: Path) -> str:
    """SHA-256 over each weight file's name, size and first and last MiB: changes when the weights do,
    without reading gigabytes."""
    h = hashlib.sha256()
    for f in sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(_WEIGHT_SUFFIXES)):
        size = f.stat().st_size
        h.update(f"{f.name}\0{size}\0".encode())
        with open(f, "rb") as fh:
            h.update(fh.read(1 << 20))
            if size > 2 << 20:
                fh.seek(-(1 << 20), os.SEEK_END)
                h.update(fh.read())
    return h.hexdigest()


def _check_causal_lm(location: str, given: str, trust_remote_code: bool, **kwargs) -> object:
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    try:
        config = AutoConfig.from_pretrained(location, trust_remote_code=trust_remote_code, **kwargs)
    except ValueError as exc:
        text = " ".join(str(exc).split())
        if "trust_remote_code" in text:
            raise InputError("the checkpoint needs its own Python code to load; pass --trust-remote-code if you "
                             "trust it", path=given) from None
        raise InputError(f"cannot read the checkpoint's config ({text[:200]})", path=given) from None
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read the checkpoint's config ({' '.join(str(exc).split())[:200]})",
                         path=given) from None
    model_type = getattr(config, "model_type", None)
    auto_map = getattr(config, "auto_map", None) or {}
    architectures = list(getattr(config, "architectures", None) or [])
    if trust_remote_code and "AutoModelForCausalLM" in auto_map:
        return config
    if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and not getattr(config, "is_encoder_decoder", False):
        # encoders such as BERT have a causal-LM class too; their checkpoints say what they were trained as
        causal = {c for v in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values() for c in ([v] if isinstance(v, str) else v)}
        if not architectures or any(a in causal or a.endswith("ForCausalLM") for a in architectures):
            return config
    archs = ", ".join(architectures) or "none listed"
    raise InputError(f"not a causal language model (model_type {model_type!r}, architectures: {archs}); "
                     "generate needs a decoder-only LM such as a ...ForCausalLM checkpoint", path=given)


def _from_hub(given: str, name: str | None, trust_remote_code: bool) -> ModelSource:
    from transformers.utils import cached_file

    try:
        config_path = cached_file(given, "config.json")
    except (OSError, ValueError):
        raise InputError("model folder not found, and no hub model of that name is reachable from this machine "
                         "(offline?); give a local Hugging Face checkpoint folder", path=given) from None
    if config_path is None:
        raise InputError("hub model has no config.json; give a local Hugging Face checkpoint folder", path=given)
    config = _check_causal_lm(given, given, trust_remote_code)
    commit = getattr(config, "_commit_hash", None) or ""
    return ModelSource(given, given, name or given.rsplit("/", 1)[-1], _sha256_bytes(Path(config_path).read_bytes()),
                       _sha256_bytes(f"hub:{given}@{commit}".encode()), hub=True)


def _from_gguf(path: Path, given: str, name: str | None, trust_remote_code: bool,
               cache_dir: str | Path | None) -> ModelSource:
    try:
        import gguf  # noqa: F401  (transformers needs it to read the file)
    except ImportError:
        raise InputError("reading a .gguf checkpoint needs the gguf package: pip install gguf", path=given) from None
    sha = file_sha256(path)
    root = Path(cache_dir) if cache_dir is not None else _default_cache() / "gguf"
    folder = root / sha[:32]
    if not (folder / "config.json").is_file():
        _check_causal_lm(str(path.parent), given, trust_remote_code, gguf_file=path.name)
        _dequantize(path, folder, trust_remote_code)
    return ModelSource(given, str(folder), name or path.stem, sha, sha, gguf_file=path.name)


def _default_cache() -> Path:
    from ..embed.cache import default_cache_dir

    return default_cache_dir()


def _dequantize(path: Path, folder: Path, trust_remote_code: bool) -> None:
    """Load the GGUF through transformers (which dequantizes it) and save it as a safetensors folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        try:
            model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                         trust_remote_code=trust_remote_code)
            tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name,
                                                      trust_remote_code=trust_remote_code)
        except (OSError, ValueError, RuntimeError) as exc:
            raise ModelError(f"{path}: cannot load the GGUF file ({' '.join(str(exc).split())[:200]})") from None
        # transformers marks a GGUF-loaded model as quantized and refuses to save it, though its
        # weights are already dequantized dense tensors: drop the marker, save it as safetensors
        if getattr(model, "hf_quantizer", None) is not None:
            model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        try:
            tmp.rename(folder)
        except OSError:  # another process finished first; its copy is as good
            if not (folder / "config.json").is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
