"""The output JSONL (append-only, one sample a line) and its sidecar OUT.meta.json: what a resume
checks its arguments against, and the provenance of the samples."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from ..errors import InputError
from ..fileio import write_atomic
from .base import Generation
from .prompts import WorkItem

META_SCHEMA = "sampleaudit.generate/1"
OUTPUT_SUFFIXES = (".jsonl", ".ndjson")


def meta_path_for(out: str | Path) -> Path:
    out = Path(out)
    return out.with_name(out.name + ".meta.json")


def check_output_path(out: str | Path) -> Path:
    out = Path(out)
    if out.suffix.lower() not in OUTPUT_SUFFIXES:
        raise InputError(f"the output must be a .jsonl file (appended to, so not compressed); got {out.name!r}",
                         path=str(out))
    if out.is_dir():
        raise InputError("is a folder; --out names the .jsonl file to write", path=str(out))
    return out


def record(item: WorkItem, generation: Generation, checkpoint: str) -> dict:
    """One output line: readable by sampleaudit.samples.load_samples (id, prompt, text; the rest is extra)."""
    p = item.prompt
    return {
        "id": item.id,
        "prompt": p.text if p is not None else None,
        "text": generation.text,
        "checkpoint": checkpoint,
        "finish_reason": generation.finish_reason,
        "n_new_tokens": generation.n_new_tokens,
        "prompt_id": p.id if p is not None else None,
        "prompt_index": item.prompt_index,
        "sample_index": item.sample_index,
    }


def encode_lines(records: Sequence[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")


def append(out: Path, data: bytes) -> None:
    """Append whole lines and flush them to disk: a kill leaves at most a partial last line."""
    with open(out, "ab") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def recover(out: Path, items: Sequence[WorkItem]) -> tuple[int, dict[str, int]]:
    """How many samples `out` already holds (a partial last line is cut off the file), and their
    finish reasons; refuses a file whose lines are not the start of this plan."""
    raw = out.read_bytes()
    end = raw.rfind(b"\n") + 1
    if end < len(raw):
        with open(out, "r+b") as f:
            f.truncate(end)
    counts = {"eos": 0, "length": 0}
    lines = raw[:end].split(b"\n")[:-1] if end else []
    if len(lines) > len(items):
        raise InputError(f"holds {len(lines)} samples, more than the {len(items)} asked for; resume with the "
                         "same arguments, or pass --overwrite", path=str(out))
    for number, (line, item) in enumerate(zip(lines, items), start=1):
        try:
            rec = json.loads(line)
            sid, reason = rec["id"], rec["finish_reason"]
        except (ValueError, KeyError, TypeError):
            raise InputError("not a line written by sampleaudit generate; pass --overwrite to start again",
                             path=str(out), line=number) from None
        if sid != item.id:
            raise InputError(f'sample id "{sid}" where "{item.id}" was expected; the file was written with other '
                             "prompts or counts; pass --overwrite to start again", path=str(out), line=number)
        counts[reason] = counts.get(reason, 0) + 1
    return len(lines), counts


def read_meta(path: Path) -> dict:
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("generation sidecar not found", path=str(path)) from None
    except (OSError, ValueError) as exc:
        raise InputError(f"unreadable generation sidecar ({exc}); pass --overwrite to start again",
                         path=str(path)) from None
    if not isinstance(meta, dict) or meta.get("schema") != META_SCHEMA:
        raise InputError(f"not a sampleaudit generate sidecar (schema {META_SCHEMA} expected)", path=str(path))
    return meta


def write_meta(path: Path, meta: dict) -> None:
    write_atomic(path, json.dumps(meta, indent=2, ensure_ascii=False) + "\n")


def settings_difference(old: dict, new: dict) -> str | None:
    """The first argument that differs between a run's sidecar and this call, as 'key: old -> new'."""
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            inner = settings_difference(a, b)
            if inner is not None:
                return f"{key}.{inner}"
        elif a != b:
            return f"{key}: {_short(a)} -> {_short(b)}"
    return None


def _short(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 24 else text[:12] + "…"
