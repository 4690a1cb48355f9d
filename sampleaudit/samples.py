"""Samples and their readers: JSONL (primary), CSV/TSV and Parquet, gzip read transparently.

Every problem in a file is an InputError naming the file, the line (or row) and the cause.

Files are read as a stream, one line (or CSV record) at a time, so memory grows with the longest
line, never with the file. Each sample text is cut to `max_chars` characters for analysis
(`DEFAULT_MAX_CHARS` = 100,000) and the cut is recorded (`Sample.original_chars`,
`SampleSet.n_truncated`, `SampleSet.truncated_lines`). Why 100,000: it is longer than ordinary
generations (a 16k-token English completion is about 64,000 characters, 32k tokens of Chinese
about 50,000), so what gets cut is runaway or corrupt output; the figures stay meaningful on the
cut text (the embedder reads only the first 256 word pieces, the report shows 600 characters, and
a loop that fills a runaway text fills its first 100,000 characters too); loop detection is
near-linear, about 25 ms per 100,000 characters (benchmarks/bench_repetition.py: 1,000 texts of
2,000 characters in 0.5 s); and a kept text takes at most 400 KB (4 bytes per character at
worst), so even 20,000 absurd samples stay under 8 GB of text.
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import hashlib
import io
import json
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InputError

_JSONL = {".jsonl", ".ndjson", ".json"}
_TABLES = {".csv": ",", ".tsv": "\t"}
SUPPORTED = sorted(_JSONL | set(_TABLES) | {".parquet"})

DEFAULT_MAX_CHARS = 100_000  # characters of one sample text kept for analysis (see the module docstring)
MAX_ID_CHARS = 1_000  # an id is a label shown in the report and on the terminal, not a text
_SURROGATE = re.compile("[\ud800-\udfff]")
_BOM = b"\xef\xbb\xbf"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Sample:
    """One generated (or training) text; `line` is where it was read from (1-based).

    `original_chars` is the text's length in characters before it was cut to `max_chars`, or None
    when it was not cut.
    """

    id: str
    text: str
    prompt: str | None = None
    line: int | None = None
    original_chars: int | None = None


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

    @property
    def n_truncated(self) -> int:
        """Samples whose text was cut to the maximum length."""
        return sum(1 for s in self.samples if s.original_chars is not None)

    @property
    def truncated_lines(self) -> tuple[int, ...]:
        """The line of each cut sample (its 1-based position in the set when it has no line)."""
        return tuple(s.line if s.line is not None else i + 1
                     for i, s in enumerate(self.samples) if s.original_chars is not None)

    def capped(self, max_chars: int) -> SampleSet:
        """This set with every text cut to `max_chars` characters (self when none is longer)."""
        _check_max_chars(max_chars)
        if all(len(s.text) <= max_chars for s in self.samples):
            return self
        cut = tuple(
            s if len(s.text) <= max_chars else dataclasses.replace(
                s, text=s.text[:max_chars],
                original_chars=s.original_chars if s.original_chars is not None else len(s.text))
            for s in self.samples
        )
        return dataclasses.replace(self, samples=cut)

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
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> SampleSet:
        """Build a set from Python lists, validated like a file; errors name the sample (1-based)."""
        _check_max_chars(max_chars)
        ids = list(ids) if ids is not None else [str(i + 1) for i in range(len(texts))]
        prompts = list(prompts) if prompts is not None else [None] * len(texts)
        if not (len(ids) == len(texts) == len(prompts)):
            raise InputError(
                f"texts, ids and prompts must have the same length; got {len(texts)}, {len(ids)}, {len(prompts)}"
            )
        builder = _Builder(name, max_chars, unit="sample")
        for i, (t, sid, p) in enumerate(zip(texts, ids, prompts), start=1):
            try:
                builder.add({"text": t, "id": sid, "prompt": p}, i)
            except InputError as exc:
                raise InputError(f"sample {i} of {name}: {exc.reason}") from None
        return builder.finish(path=None, sha256=None, skipped=())


def _check_max_chars(max_chars: object) -> None:
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise InputError(f"max_chars must be a positive whole number of characters; got {max_chars!r}")


def _check_unicode(name: str, value: str) -> None:
    """Reject code points that cannot be written as UTF-8 (surrogates), naming the position."""
    if value.isascii():  # O(1) in CPython
        return
    found = _SURROGATE.search(value)
    if found is None:
        return
    at = found.start()
    code = ord(value[at])
    following = ord(value[at + 1]) if at + 1 < len(value) else 0
    if 0xD800 <= code <= 0xDBFF and 0xDC00 <= following <= 0xDFFF:
        joined = 0x10000 + ((code - 0xD800) << 10) + (following - 0xDC00)
        raise InputError(
            f'"{name}" holds a surrogate pair \\u{code:04x}\\u{following:04x} at character {at + 1} instead of '
            f"the character it stands for (U+{joined:04X}), which is not valid Unicode; join the pair, e.g. "
            f'text.encode("utf-16", "surrogatepass").decode("utf-16")'
        )
    raise InputError(
        f'"{name}" holds a lone surrogate \\u{code:04x} at character {at + 1}, which is not valid Unicode; '
        "fix the generator's output encoding"
    )


class _Builder:
    """Validates records one by one: text present and a string, ids unique; cuts long texts."""

    def __init__(self, source: str, max_chars: int, *, unit: str = "line"):
        self.source = source
        self.max_chars = max_chars
        self.unit = unit
        self.samples: list[Sample] = []
        self.first_line: dict[str, int] = {}

    def add(self, record: object, line: int) -> None:
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
            sid = str(line)
        elif isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool):
            sid = str(raw_id)
        else:
            raise InputError(f'"id" must be a string or an integer; got {_kind(raw_id)}', line=line)
        prompt = record.get("prompt")
        if prompt is not None and not isinstance(prompt, str):
            raise InputError(f'"prompt" must be a string; got {_kind(prompt)}', line=line)
        if len(sid) > MAX_ID_CHARS:
            raise InputError(f'"id" is {len(sid):,} characters long; an id must be at most {MAX_ID_CHARS:,}',
                             line=line)
        _check_unicode("text", text)
        _check_unicode("id", sid)
        if prompt is not None:
            _check_unicode("prompt", prompt)
        if sid in self.first_line:
            where = "on line" if self.unit == "line" else "as sample"
            raise InputError(f'duplicate id "{sid}" (first seen {where} {self.first_line[sid]})', line=line)
        original = None
        if len(text) > self.max_chars:
            original, text = len(text), text[: self.max_chars]
        if prompt is not None and len(prompt) > self.max_chars:
            prompt = prompt[: self.max_chars]
        self.first_line[sid] = line
        self.samples.append(Sample(sid, text, prompt, line, original))

    def finish(self, *, path: str | None, sha256: str | None, skipped: Sequence[int]) -> SampleSet:
        if not self.samples:
            cause = "no valid samples" + (f" ({len(skipped)} invalid lines skipped)" if skipped else "")
            raise InputError(cause, path=path)
        return SampleSet(self.source, tuple(self.samples), path, sha256, len(skipped), tuple(skipped))


def _kind(value: object) -> str:
    return {bool: "boolean", int: "number", float: "number", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )


class _HashingRaw(io.RawIOBase):
    """A raw reader over a file that feeds every byte read into a SHA-256."""

    def __init__(self, file, digest):
        self._file = file
        self._digest = digest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._file.readinto(buffer)
        if n:
            self._digest.update(memoryview(buffer)[:n])
        return n


class _Source:
    """One file of samples as a stream of lines: gunzipped when it is gzip, hashed as stored.

    The SHA-256 is of the file's bytes on disk; `sha256()` reads whatever the parser left.
    """

    def __init__(self, path: Path):
        self.path = path
        try:
            self._file = open(path, "rb")  # noqa: SIM115 - closed by close()
        except FileNotFoundError:
            raise InputError("file not found", path=str(path)) from None
        except IsADirectoryError:
            raise InputError("is a folder, not a file of samples", path=str(path)) from None
        except OSError as exc:
            raise InputError(f"cannot read file ({exc.strerror})", path=str(path)) from None
        self._digest = hashlib.sha256()
        self._raw = _HashingRaw(self._file, self._digest)
        buffered = io.BufferedReader(self._raw, _CHUNK)
        try:
            self.gzip = self._guard(lambda: buffered.peek(2)[:2] == b"\x1f\x8b")
        except InputError:
            self._file.close()
            raise
        self.stream = gzip.GzipFile(fileobj=buffered, mode="rb") if self.gzip else buffered
        self.content = False  # whether any line so far holds more than whitespace

    def _guard(self, read):
        """Run a read, turning decompression and disk errors into InputError."""
        try:
            return read()
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            raise InputError(f"not a valid gzip file ({exc})", path=str(self.path)) from None
        except OSError as exc:
            raise InputError(f"cannot read file ({exc.strerror or exc})", path=str(self.path)) from None

    def lines(self) -> _Lines:
        return _Lines(self)

    def read_all(self) -> bytes:
        data = self._guard(self.stream.read)
        self.content = bool(data) and not data.isspace()
        return data

    def sha256(self) -> str:
        while self._guard(lambda: self._raw.read(_CHUNK)):
            pass
        return self._digest.hexdigest()

    def close(self) -> None:
        self._file.close()


class _Lines:
    """(line number, bytes with its line break) for every physical line, the BOM removed.

    A class rather than a generator so that no suspended frame keeps a (possibly huge) line alive.
    """

    def __init__(self, source: _Source):
        self._source = source
        self._number = 0

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> tuple[int, bytes]:
        line = self._source._guard(self._source.stream.readline)
        if not line:
            raise StopIteration
        self._number += 1
        if self._number == 1 and line.startswith(_BOM):
            line = line[len(_BOM):]
        if not self._source.content and line and not line.isspace():
            self._source.content = True
        return self._number, line


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


def _decode(line: bytes, *, strip_newline: bool = False) -> str:
    """The line as text (without its line break when asked, through a view: no copy of the bytes)."""
    end = len(line)
    if strip_newline and line.endswith(b"\n"):
        end -= 2 if line.endswith(b"\r\n") else 1
    try:
        return str(memoryview(line)[:end], "utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not valid UTF-8 (byte 0x{line[exc.start]:02x} at column {exc.start + 1}); re-save the file as UTF-8"
        ) from None


def _parse_json(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise InputError(
            "nested too deeply (arrays or objects inside each other deeper than the JSON reader goes); "
            'each line must be one flat JSON object such as {"text": "..."}'
        ) from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        if "integer string conversion" in str(exc):
            raise InputError("invalid JSON (a number has more than 4300 digits; write it as a string)") from None
        raise InputError(f"invalid JSON ({exc})") from None


def _read_jsonl(lines: _Lines, builder: _Builder, skip_invalid: bool) -> list[int]:
    skipped: list[int] = []
    for number, line in lines:
        if not line or line.isspace():
            continue
        try:
            # Hold one copy of a long line at a time: bytes -> str -> parsed value.
            text = _decode(line, strip_newline=True)
            del line
            record = _parse_json(text)
            del text
            builder.add(record, number)
            del record
        except InputError as exc:
            if not skip_invalid:
                raise InputError(exc.reason, line=number) from None
            skipped.append(number)
    return skipped


class _TextLines:
    """Decoded physical lines for the csv module (which counts them in reader.line_num)."""

    def __init__(self, lines: _Lines):
        self._lines = lines

    def __iter__(self) -> _TextLines:
        return self

    def __next__(self) -> str:
        number, line = next(self._lines)
        try:
            return _decode(line)
        except InputError as exc:  # fatal even with skip_invalid: the record structure is unknown
            raise _FatalLine(exc.reason, line=number) from None


class _FatalLine(InputError):
    """An error that --skip-invalid cannot step over."""


def _csv_error(exc: csv.Error, start: int, end: int, max_chars: int) -> InputError:
    message = str(exc)  # the field size limit is read here, never set: it is process-global state
    if "field larger than field limit" in message:
        return _FatalLine(
            f"a field is longer than {csv.field_size_limit():,} characters, the most the CSV reader takes; "
            f"save samples this long as JSONL (texts are cut to {max_chars:,} characters for analysis anyway)",
            line=start)
    hint = 'write a quote inside a quoted field as two quotes ("") or remove the stray quote'
    # A row that runs over several lines does so because a quote opened on its first line holds
    # the line break, so the row's first line is where to look.
    if message == "unexpected end of data":
        return InputError(f"malformed CSV (a quote opened on line {start} is never closed: the file ends inside it, "
                          f"on line {end}); {hint}", line=start)
    if "expected after" in message:
        at = f" on line {end}" if end != start else ""
        return InputError(f"malformed CSV (a quote opened on line {start} is not closed properly: {message}{at}); "
                          f"{hint}", line=start)
    return InputError(f"malformed CSV ({message}" + (f", on line {end}" if end != start else "") + ")", line=start)


def _read_csv(lines: _Lines, builder: _Builder, delimiter: str, text_column: str,
              skip_invalid: bool) -> list[int]:
    reader = csv.reader(_TextLines(lines), delimiter=delimiter, strict=True)
    header: list[str] | None = None
    columns: dict[str, int] = {}
    skipped: list[int] = []
    delimiter_name = "a comma" if delimiter == "," else "a tab"
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            error = _csv_error(exc, start, reader.line_num, builder.max_chars)
            if not skip_invalid or isinstance(error, _FatalLine):
                raise error from None
            skipped.extend(range(start, reader.line_num + 1))
            continue
        end = reader.line_num
        if not row:  # a blank line
            continue
        if header is None:
            if not any(name.strip() for name in row):
                continue  # a whitespace-only line before the header
            header = row
            for name in (text_column, "id", "prompt"):
                places = [i + 1 for i, column in enumerate(header) if column == name]
                if len(places) > 1:
                    raise InputError(f"column {name!r} appears {len(places)} times in the header (columns "
                                     f"{', '.join(map(str, places))}); rename all but one", line=start)
                if places:
                    columns[name] = places[0] - 1
            if text_column not in columns:
                cols = ", ".join(header) or "(none)"
                raise InputError(f"no column {text_column!r}; columns are: {cols}; choose one with --text-column")
            continue
        try:
            if len(row) != len(header):
                raise _field_count_error(len(row), len(header), start, end, delimiter_name)
            record = {key: (row[columns[col]] if col in columns else None)
                      for key, col in (("text", text_column), ("id", "id"), ("prompt", "prompt"))}
            builder.add(record, start)
        except InputError as exc:
            if not skip_invalid:
                raise InputError(exc.reason, line=start) from None
            skipped.extend(range(start, end + 1))
    return skipped


def _field_count_error(n: int, expected: int, start: int, end: int, delimiter_name: str) -> InputError:
    fields = f"{n} field{'s' if n != 1 else ''}"
    cause = f"row has {fields} but the header has {expected}"
    if end != start:
        return InputError(f"{cause} (a quote opened on line {start} runs on to line {end}; check for a stray quote)")
    if n > expected:
        return InputError(f"{cause}; put a field that holds {delimiter_name} in double quotes")
    return InputError(f"{cause}; give every column a value (an empty one is fine)")


def _read_parquet(source: _Source, builder: _Builder, text_column: str, skip_invalid: bool) -> list[int]:
    import pandas as pd

    data = source.read_all()
    if not source.content:
        return []
    try:
        frame = pd.read_parquet(io.BytesIO(data))
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise InputError(f"not a readable Parquet file ({exc})") from None
    del data
    if text_column not in frame.columns:
        cols = ", ".join(map(str, frame.columns)) or "(none)"
        raise InputError(f"no column {text_column!r}; columns are: {cols}; choose one with --text-column")
    skipped: list[int] = []
    for offset, row in enumerate(frame.itertuples(index=False)):
        values = dict(zip(frame.columns, row))
        record = {key: values.get(col) for key, col in (("text", text_column), ("id", "id"), ("prompt", "prompt"))}
        record = {k: (None if _is_missing(v) else v) for k, v in record.items()}
        number = offset + 1
        try:
            builder.add(record, number)
        except InputError as exc:
            if not skip_invalid:
                raise InputError(exc.reason, line=number) from None
            skipped.append(number)
    return skipped


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def load_samples(
    path: str | Path,
    *,
    name: str | None = None,
    text_column: str = "text",
    skip_invalid: bool = False,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> SampleSet:
    """Read one file of samples; the set's name defaults to the file stem (without .jsonl.gz).

    Raises InputError("<path>:<line>: <cause>") on bad input, unless `skip_invalid` is set, in
    which case invalid lines are skipped and counted (an empty or unreadable file, a line that is
    not UTF-8 and a CSV field longer than the csv module's limit still fail). Empty-string samples
    are kept and counted (`SampleSet.n_empty`). Texts longer than `max_chars` characters are cut
    to it and counted (`SampleSet.n_truncated`); prompts are cut the same way.
    """
    _check_max_chars(max_chars)
    path = Path(path)
    fmt, stem = _format_and_stem(path)
    source = _Source(path)
    builder = _Builder(name or stem, max_chars)
    try:
        if fmt == "parquet":
            skipped = _read_parquet(source, builder, text_column, skip_invalid)
        elif fmt == "jsonl":
            skipped = _read_jsonl(source.lines(), builder, skip_invalid)
        else:
            skipped = _read_csv(source.lines(), builder, _TABLES["." + fmt], text_column, skip_invalid)
        if not source.content:
            raise InputError("file is empty (no samples)")
        sha = source.sha256()
    except InputError as exc:
        raise InputError(exc.reason, path=str(path), line=exc.line) from None
    finally:
        source.close()
    return builder.finish(path=str(path), sha256=sha, skipped=skipped)

