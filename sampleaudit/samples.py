"""Samples and their readers: JSONL (primary), CSV/TSV and Parquet, gzip read transparently.

Every problem in a file is an InputError naming the file, the line (or row) and the cause.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InputError

_JSONL = {".jsonl", ".ndjson", ".json"}
_TABLES = {".csv": ",", ".tsv": "\t"}
SUPPORTED = sorted(_JSONL | set(_TABLES) | {".parquet"})


@dataclass(frozen=True)
class Sample:
    """One generated (or training) text; `line` is where it was read from (1-based)."""

    id: str
    text: str
    prompt: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class SampleSet:
    """The samples of one checkpoint or of the baseline, with where they came from."""

    name: str
    samples: tuple[Sample, ...]
    path: str | None = None
    sha256: str | None = None
    n_skipped: int = 0
    skipped_lines: tuple[int, ...] = field(default=())

    @property
    def texts(self) -> list[str]:
        return [s.text for s in self.samples]

    @property
    def ids(self) -> list[str]:
        return [s.id for s in self.samples]

    @property
    def prompts(self) -> list[str | None]:
        return [s.prompt for s in self.samples]

    @property
    def n_empty(self) -> int:
        return sum(1 for s in self.samples if not s.text.strip())

    def __len__(self) -> int:
        return len(self.samples)

    @classmethod
    def from_texts(
        cls,
        texts: Sequence[str],
        *,
        name: str,
        ids: Sequence[str] | None = None,
        prompts: Sequence[str | None] | None = None,
    ) -> SampleSet:
        """Build a set from Python lists (validated like a file)."""
        ids = list(ids) if ids is not None else [str(i + 1) for i in range(len(texts))]
        prompts = list(prompts) if prompts is not None else [None] * len(texts)
        if not (len(ids) == len(texts) == len(prompts)):
            raise InputError(
                f"texts, ids and prompts must have the same length; got {len(texts)}, {len(ids)}, {len(prompts)}"
            )
        builder = _Builder(name)
        for i, (t, sid, p) in enumerate(zip(texts, ids, prompts), start=1):
            builder.add({"text": t, "id": sid, "prompt": p}, i, generated_id=None)
        return builder.finish(path=None, sha256=None, skipped=())


class _Builder:
    """Validates records one by one: text present and a string, ids unique."""

    def __init__(self, source: str):
        self.source = source
        self.samples: list[Sample] = []
        self.first_line: dict[str, int] = {}

    def add(self, record: object, line: int, *, generated_id: str | None) -> None:
        if not isinstance(record, dict):
            kind = type(record).__name__
            raise InputError(f'expected a JSON object with a "text" field; got {kind}', line=line)
        if "text" not in record or record["text"] is None:
            raise InputError('missing "text" field', line=line)
        text = record["text"]
        if not isinstance(text, str):
            raise InputError(f'"text" must be a string; got {_kind(text)}', line=line)
        raw_id = record.get("id")
        if raw_id is None or raw_id == "":
            sid = generated_id or str(line)
        elif isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool):
            sid = str(raw_id)
        else:
            raise InputError(f'"id" must be a string or an integer; got {_kind(raw_id)}', line=line)
        if sid in self.first_line:
            raise InputError(f'duplicate id "{sid}" (first seen on line {self.first_line[sid]})', line=line)
        prompt = record.get("prompt")
        if prompt is not None and not isinstance(prompt, str):
            raise InputError(f'"prompt" must be a string; got {_kind(prompt)}', line=line)
        self.first_line[sid] = line
        self.samples.append(Sample(sid, text, prompt, line))

    def finish(self, *, path: str | None, sha256: str | None, skipped: Sequence[int]) -> SampleSet:
        if not self.samples:
            cause = "no valid samples" + (f" ({len(skipped)} invalid lines skipped)" if skipped else "")
            raise InputError(cause, path=path)
        return SampleSet(self.source, tuple(self.samples), path, sha256, len(skipped), tuple(skipped))


def _kind(value: object) -> str:
    return {bool: "boolean", int: "number", float: "number", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )


def _read_bytes(path: Path) -> tuple[bytes, str]:
    """The file's content (gunzipped when it is gzip) and the SHA-256 of the file as stored."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError("file not found", path=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a folder, not a file of samples", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror})", path=str(path)) from None
    sha = hashlib.sha256(raw).hexdigest()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"not a valid gzip file ({exc})", path=str(path)) from None
    return raw, sha


def _format_and_stem(path: Path) -> tuple[str, str]:
    """("jsonl" | "csv" | "tsv" | "parquet", the file name without those extensions)."""
    base = path.with_suffix("") if path.suffix.lower() == ".gz" else path
    suffix = base.suffix.lower()
    if suffix in _JSONL:
        return "jsonl", base.stem
    if suffix in _TABLES or suffix == ".parquet":
        return suffix[1:], base.stem
    raise InputError(
        f"unsupported file type {suffix or '(no extension)'!r}; use one of {', '.join(SUPPORTED)} (optionally .gz)",
        path=str(path),
    )


def _lines(raw: bytes) -> Iterator[tuple[int, bytes]]:
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    for number, line in enumerate(raw.split(b"\n"), start=1):
        yield number, line.rstrip(b"\r")


def _decode(line: bytes) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not valid UTF-8 (byte 0x{line[exc.start]:02x} at column {exc.start + 1}); re-save the file as UTF-8"
        ) from None


def _read_jsonl(raw: bytes, source: str, skip_invalid: bool) -> tuple[_Builder, list[int]]:
    builder = _Builder(source)
    skipped: list[int] = []
    for number, line in _lines(raw):
        if not line.strip():
            continue
        try:
            try:
                record = json.loads(_decode(line))
            except json.JSONDecodeError as exc:
                raise InputError(f"invalid JSON ({exc.msg} at column {exc.colno})") from None
            builder.add(record, number, generated_id=None)
        except InputError as exc:
            if not skip_invalid:
                raise InputError(exc.reason, line=number) from None
            skipped.append(number)
    return builder, skipped


def _read_table(raw: bytes, fmt: str, source: str, text_column: str, skip_invalid: bool):
    import pandas as pd

    if fmt == "parquet":
        try:
            frame = pd.read_parquet(io.BytesIO(raw))
        except Exception as exc:  # pyarrow raises several unrelated types for a bad file
            raise InputError(f"not a readable Parquet file ({exc})") from None
        first_row = 1
    else:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise InputError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x}); re-save the file as UTF-8", line=line) from None
        try:
            frame = pd.read_csv(io.StringIO(text), sep=_TABLES["." + fmt], dtype=str, keep_default_na=False)
        except pd.errors.EmptyDataError:
            raise InputError("file is empty (no header and no samples)") from None
        except pd.errors.ParserError as exc:
            raise InputError(f"malformed {fmt.upper()} ({exc})") from None
        first_row = 2  # line 1 is the header
    if text_column not in frame.columns:
        cols = ", ".join(map(str, frame.columns)) or "(none)"
        raise InputError(f"no column {text_column!r}; columns are: {cols}; choose one with --text-column")
    builder = _Builder(source)
    skipped: list[int] = []
    for offset, row in enumerate(frame.itertuples(index=False)):
        values = dict(zip(frame.columns, row))
        record = {key: values.get(col) for key, col in (("text", text_column), ("id", "id"), ("prompt", "prompt"))}
        record = {k: (None if _is_missing(v) else v) for k, v in record.items()}
        number = offset + first_row
        try:
            builder.add(record, number, generated_id=None)
        except InputError as exc:
            if not skip_invalid:
                raise InputError(exc.reason, line=number) from None
            skipped.append(number)
    return builder, skipped


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def load_samples(
    path: str | Path,
    *,
    name: str | None = None,
    text_column: str = "text",
    skip_invalid: bool = False,
) -> SampleSet:
    """Read one file of samples; the set's name defaults to the file stem (without .jsonl.gz).

    Raises InputError("<path>:<line>: <cause>") on bad input, unless `skip_invalid` is set, in
    which case invalid lines are skipped and counted (an empty or unreadable file still fails).
    Empty-string samples are kept and counted (`SampleSet.n_empty`).
    """
    path = Path(path)
    fmt, stem = _format_and_stem(path)
    raw, sha = _read_bytes(path)
    if not raw.strip():
        raise InputError("file is empty (no samples)", path=str(path))
    source = name or stem
    try:
        if fmt == "jsonl":
            builder, skipped = _read_jsonl(raw, source, skip_invalid)
        else:
            builder, skipped = _read_table(raw, fmt, source, text_column, skip_invalid)
    except InputError as exc:
        raise InputError(exc.reason, path=str(path), line=exc.line) from None
    return builder.finish(path=str(path), sha256=sha, skipped=skipped)
