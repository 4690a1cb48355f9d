"""Prompts for generation (JSONL with `prompt` and optional `id`, or text, one per line) and the
plan that spreads the requested number of samples over them."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError


@dataclass(frozen=True)
class Prompt:
    """One prompt; `index` is its 0-based position in the file, `id` its own id when the file gives one."""

    index: int
    text: str
    id: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class WorkItem:
    """One sample to generate: which prompt, which of its samples, and the sample's stable id."""

    prompt: Prompt | None  # None: unconditional, from the BOS token
    sample_index: int
    id: str

    @property
    def prompt_index(self) -> int:
        return self.prompt.index if self.prompt is not None else 0


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_prompts(path: str | Path) -> list[Prompt]:
    """Read prompts: `.jsonl`/`.ndjson`/`.json` lines with a `prompt` string (and optional unique `id`),
    anything else as plain text, one prompt per line. Blank lines are skipped.

    Raises InputError naming file and line for a missing or unreadable file, an empty file, a line that
    is not a JSON object with a non-empty "prompt" string, a bad or duplicate id.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError("prompts file not found", path=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a folder, not a prompts file", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read prompts file ({exc.strerror})", path=str(path)) from None
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    is_jsonl = path.suffix.lower() in {".jsonl", ".ndjson", ".json"}
    prompts: list[Prompt] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(raw.split(b"\n"), start=1):
        line = line.rstrip(b"\r")
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not valid UTF-8 (byte 0x{line[exc.start]:02x}); re-save the file as UTF-8",
                             path=str(path), line=number) from None
        pid = None
        if is_jsonl:
            text, pid = _parse_record(text, path, number)
            if pid is not None:
                if pid in seen:
                    raise InputError(f'duplicate prompt id "{pid}" (first seen on line {seen[pid]})',
                                     path=str(path), line=number)
                seen[pid] = number
        prompts.append(Prompt(len(prompts), text, pid, number))
    if not prompts:
        raise InputError("prompts file is empty (no prompts); give one prompt per line, or omit --prompts "
                         "for unconditional generation", path=str(path))
    return prompts


def _parse_record(line: str, path: Path, number: int) -> tuple[str, str | None]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON ({exc.msg} at column {exc.colno}); each line must be an object "
                         'like {"prompt": "..."}', path=str(path), line=number) from None
    if not isinstance(record, dict):
        raise InputError(f'expected a JSON object with a "prompt" field; got {type(record).__name__}',
                         path=str(path), line=number)
    text = record.get("prompt")
    if text is None:
        raise InputError('missing "prompt" field', path=str(path), line=number)
    if not isinstance(text, str):
        raise InputError(f'"prompt" must be a string; got {type(text).__name__}', path=str(path), line=number)
    if not text.strip():
        raise InputError('"prompt" is empty; remove the line (no prompts file means unconditional generation)',
                         path=str(path), line=number)
    raw_id = record.get("id")
    if raw_id is None or raw_id == "":
        return text, None
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
        raise InputError(f'"id" must be a string or an integer; got {type(raw_id).__name__}',
                         path=str(path), line=number)
    return text, str(raw_id)


def plan(prompts: list[Prompt] | None, *, n: int | None, per_prompt: int | None) -> list[WorkItem]:
    """Every sample to generate, in output order (prompt by prompt).

    `n` samples in total are spread evenly: each prompt gets n // P, the first n % P one more.
    `per_prompt` gives each prompt exactly that many. Without prompts, n (or per_prompt) samples are
    generated unconditionally.
    """
    if (n is None) == (per_prompt is None):
        raise InputError("give exactly one of -n (samples in total) and --per-prompt (samples per prompt)")
    count, flag = (n, "-n") if n is not None else (per_prompt, "--per-prompt")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InputError(f"{flag} must be a positive integer; got {count!r}")
    if not prompts:
        return [WorkItem(None, j, f"s{j}") for j in range(count)]
    if n is not None and n < len(prompts):
        raise InputError(f"-n {n} is smaller than the number of prompts ({len(prompts)}); give at least one "
                         "sample per prompt (-n >= the number of prompts) or use --per-prompt")
    items: list[WorkItem] = []
    base, extra = (n // len(prompts), n % len(prompts)) if n is not None else (per_prompt, 0)
    ids = _sample_ids(prompts)
    for p in prompts:
        k = base + (1 if p.index < extra else 0)
        items.extend(WorkItem(p, j, f"{ids[p.index]}-s{j}") for j in range(k))
    return items


def _sample_ids(prompts: list[Prompt]) -> list[str]:
    """Per prompt, the stem of its sample ids: its own id when every prompt has one, else p<index>."""
    if all(p.id is not None for p in prompts):
        return [p.id for p in prompts]  # type: ignore[misc]
    return [f"p{p.index}" for p in prompts]
