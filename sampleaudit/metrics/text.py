"""Language-aware tokenizer and sentence splitter shared by the text metrics (no models, no I/O).

Tokens, in the order they appear in the text:

- **Character tokens**: every letter of a script written without spaces is one token: Han
  (Chinese, Japanese kanji), Japanese kana, Korean hangul, Thai, Lao, Khmer and Myanmar. The
  character is the usual n-gram unit for such text, and needs no word segmenter.
- **Word tokens**: a run of letters, digits and underscores of any other script (Latin, Cyrillic,
  Greek, Arabic, Hebrew, Devanagari, ...), with combining marks and inner apostrophes kept
  (``don't``); lowercased, ``’`` read as ``'``.
- **Symbol tokens**: one symbol character (emoji, ``$``, ``+``, ``©``, ...), one token each.
- **Punctuation** (Unicode category P*: ``.,!?;:-"'()`` and ``。，！？；：、“”（）`` ...) is dropped
  by default; ``tokenize(text, keep_punct=True)`` keeps each punctuation character as a token.
  Whitespace, control and format characters (``\\x00``, zero-width joiner, ...) are dropped.

A combining mark (accent, vowel sign, variation selector) stays with the character before it.
Mixed text ("用 numpy 计算 mean") tokenises each part by its own rule. Every token carries its
character offsets in the original text, so metrics can point back into it.

The scan is vectorised (one class lookup per code point), so a 100,000-character text tokenises
in milliseconds.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import numpy as np

from ..errors import InputError

# Character classes of the scanner.
_SPACE, _WORD, _CHAR, _PUNCT, _SYMBOL, _DROP, _MARK, _APOS = range(8)

# Letters of scripts written without spaces: one token per character. (lo, hi) inclusive.
_CHAR_SCRIPT_RANGES = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x1780, 0x17FF),  # Khmer
    (0x2E80, 0x2FDF),  # CJK and Kangxi radicals
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3130, 0x318F),  # Hangul compatibility Jamo
    (0x31A0, 0x31FF),  # Bopomofo extended, CJK strokes, Katakana extension
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul Jamo extended A
    (0xAC00, 0xD7FF),  # Hangul syllables, Jamo extended B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFFDC),  # halfwidth Katakana and Hangul
    (0x20000, 0x3134F),  # CJK extensions B-G (outside the lookup table)
)
_CATEGORY_CLASS = {"L": _WORD, "N": _WORD, "M": _MARK, "P": _PUNCT, "S": _SYMBOL}


def _bmp_chars() -> str:
    """Every code point of the Basic Multilingual Plane, surrogates replaced by spaces."""
    return "".join(map(chr, range(0xD800))) + " " * 0x800 + "".join(map(chr, range(0xE000, 0x10000)))


def _class_table() -> np.ndarray:
    """Class of every code point of the Basic Multilingual Plane (built once, ~20 ms)."""
    marked = re.sub(r"\s", " ", re.sub(r"\w", "a", _bmp_chars()))
    codes = np.frombuffer(marked.encode("utf-32-le"), dtype=np.uint32)
    table = np.full(0x10000, _DROP, dtype=np.uint8)
    table[codes == ord("a")] = _WORD
    table[codes == ord(" ")] = _SPACE
    for cp in np.flatnonzero(table == _DROP).tolist():
        table[cp] = _CATEGORY_CLASS.get(unicodedata.category(chr(cp))[0], _DROP)
    for lo, hi in _CHAR_SCRIPT_RANGES:
        if lo < 0x10000:
            part = table[lo : hi + 1]
            part[part == _WORD] = _CHAR
    table[ord("'")] = _APOS
    table[0x2019] = _APOS
    return table


def _digit_table() -> np.ndarray:
    """Is each code point of the Basic Multilingual Plane a decimal digit (``\\d``)?"""
    marked = re.sub(r"\d", "\x00", _bmp_chars().replace("\x00", "\x01"))
    return np.frombuffer(marked.encode("utf-32-le"), dtype=np.uint32) == 0


_CLASS = _class_table()
_DIGIT = _digit_table()
_CLASS.setflags(write=False)
_DIGIT.setflags(write=False)


def _astral_class(cp: int) -> int:
    for lo, hi in _CHAR_SCRIPT_RANGES:
        if lo <= cp <= hi:
            return _CHAR
    return _CATEGORY_CLASS.get(unicodedata.category(chr(cp))[0], _DROP)


@dataclass(frozen=True)
class Tokens:
    """Tokens of one text: token i is ``text[starts[i]:ends[i]]``, lowercased if it is a word."""

    tokens: list[str]
    starts: list[int]
    ends: list[int]

    def __len__(self) -> int:
        return len(self.tokens)


# Token kinds in `_Scan.kind`.
KIND_WORD, KIND_CHAR, KIND_SYMBOL, KIND_PUNCT = 0, 1, 2, 3
_KIND_OF_CLASS = np.full(8, KIND_PUNCT, dtype=np.uint8)
_KIND_OF_CLASS[_WORD] = KIND_WORD
_KIND_OF_CLASS[_CHAR] = KIND_CHAR
_KIND_OF_CLASS[_SYMBOL] = KIND_SYMBOL


@dataclass(frozen=True)
class _Scan:
    """Token spans of one text (private; arrays for the vectorised kernels)."""

    starts: np.ndarray  # int64
    ends: np.ndarray  # int64
    kind: np.ndarray  # uint8: KIND_WORD, KIND_CHAR, KIND_SYMBOL or KIND_PUNCT
    ids: np.ndarray  # int64 64-bit hash of the lowercased token: equal tokens, equal ids
    is_number: np.ndarray  # bool: a word of digits only

    @property
    def is_word(self) -> np.ndarray:
        return self.kind == KIND_WORD


def _check_text(text: object, name: str = "text") -> str:
    if not isinstance(text, str):
        raise InputError(
            f"{name} must be a str; got {type(text).__name__}. Pass '' for an empty sample"
        )
    return text


_EMPTY_I64 = np.zeros(0, dtype=np.int64)
_HASH_BASE = np.uint64(0x9E3779B97F4A7C15)  # odd, so it has an inverse modulo 2**64
_HASH_INV = np.uint64(pow(0x9E3779B97F4A7C15, -1, 1 << 64))


def _empty_scan() -> _Scan:
    return _Scan(_EMPTY_I64, _EMPTY_I64, np.zeros(0, np.uint8), _EMPTY_I64, np.zeros(0, bool))


def _scan(text: str, keep_punct: bool = False) -> _Scan:
    """Vectorised token scan of `text` (the kernel behind `tokenize`): spans, kinds and ids.

    A token's id is a polynomial hash modulo 2**64 of its lowercased code points, computed for
    all tokens at once from prefix sums, so no per-token Python work is done. (A one-letter token's
    id is its code point.) Two different tokens share an id with probability ~2**-64.
    """
    n = len(text)
    if n == 0:
        return _empty_scan()
    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    bmp = np.minimum(cps, 0xFFFF)
    cls = _CLASS[bmp]
    if bmp.size and int(cps.max()) > 0xFFFF:
        for i in np.flatnonzero(cps > 0xFFFF).tolist():
            cls[i] = _astral_class(int(cps[i]))
    is_mark = cls == _MARK
    has_marks = bool(is_mark.any())
    if has_marks:
        # A mark takes the class of the last non-mark character before it.
        idx = np.arange(n)
        base = np.maximum.accumulate(np.where(is_mark, -1, idx))
        cls = np.where(is_mark, np.where(base >= 0, cls[np.maximum(base, 0)], _DROP), cls)
    word = cls == _WORD
    if n >= 3:
        apos = cls[1:-1] == _APOS
        if apos.any():
            inner = apos & word[:-2] & word[2:]
            word[1:-1] |= inner
            if keep_punct:
                cls = cls.copy()
                cls[1:-1][inner] = _WORD
    if keep_punct:
        single = (cls == _CHAR) | (cls == _SYMBOL) | (cls == _PUNCT) | (cls == _APOS)
    else:
        single = (cls == _CHAR) | (cls == _SYMBOL)
    if has_marks:
        single &= ~is_mark
    edge = np.empty(n + 1, dtype=bool)  # edge[i]: word[i-1] != word[i]
    edge[0] = word[0]
    edge[n] = word[n - 1]
    np.not_equal(word[1:], word[:-1], out=edge[1:n])
    word_edges = np.flatnonzero(edge)  # alternately start and end of each word
    starts = np.flatnonzero(single | (edge[:n] & word))
    if starts.size == 0:
        return _empty_scan()
    is_word = word[starts]
    # A token ends where its word ends, or after its character and the marks that follow it.
    ends = starts + 1
    ends[is_word] = word_edges[1::2]
    if has_marks:
        idx = np.arange(n)
        nonmark_after = np.minimum.accumulate(np.where(is_mark, n, idx)[::-1])[::-1]
        single_pos = ~is_word
        ends[single_pos] = np.append(nonmark_after, n)[starts[single_pos] + 1]
    kind = np.where(is_word, KIND_WORD, _KIND_OF_CLASS[cls[starts]]).astype(np.uint8)
    # ids: hash of the lowercased code points of [start, end)
    low = _lower_codes(text, cps)
    powers, inverse = _hash_powers(n)
    prefix = np.empty(n + 1, dtype=np.uint64)
    prefix[0] = 0
    np.cumsum(low * powers[:n], out=prefix[1:])
    ids = ((prefix[ends] - prefix[starts]) * inverse[starts]).view(np.int64)
    # numbers: words made of digits only
    if is_word.any():
        n_digits = np.empty(n + 1, dtype=np.int64)
        n_digits[0] = 0
        np.cumsum(_DIGIT[bmp] & (cps <= 0xFFFF), out=n_digits[1:])
        is_number = is_word & (n_digits[ends] - n_digits[starts] == ends - starts)
    else:
        is_number = np.zeros(starts.size, dtype=bool)
    return _Scan(starts.astype(np.int64), ends.astype(np.int64), kind, ids, is_number)


def _power_table(base: np.uint64, n: int) -> np.ndarray:
    out = np.empty(n + 1, dtype=np.uint64)
    out[0] = 1
    np.cumprod(np.full(n, base, dtype=np.uint64), out=out[1:])
    return out


_POWERS_CACHED = 8192  # texts up to this length reuse the precomputed powers
_POWERS = _power_table(_HASH_BASE, _POWERS_CACHED)
_INVERSE_POWERS = _power_table(_HASH_INV, _POWERS_CACHED)
_POWERS.setflags(write=False)
_INVERSE_POWERS.setflags(write=False)


def _hash_powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """B**i and B**-i modulo 2**64 for i = 0..n."""
    if n <= _POWERS_CACHED:
        return _POWERS, _INVERSE_POWERS
    return _power_table(_HASH_BASE, n), _power_table(_HASH_INV, n)


def _lower_codes(text: str, cps: np.ndarray) -> np.ndarray:
    """Code points of `text` lowercased (``’`` read as ``'``), one per character, as uint64."""
    low = text.lower()
    if len(low) == len(text):
        out = np.frombuffer(low.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        out = out.astype(np.uint64)
    else:  # a few characters (such as "İ") grow when lowercased: keep their first code point
        out = np.fromiter((ord(ch.lower()[0]) for ch in text), dtype=np.uint64, count=len(text))
    out[out == 0x2019] = ord("'")
    return out


def tokenize(text: str, *, keep_punct: bool = False) -> Tokens:
    """Split `text` into tokens with their character offsets (rules in the module docstring).

    >>> tokenize("Hello, 世界 don't!").tokens
    ['hello', '世', '界', "don't"]
    """
    _check_text(text)
    sc = _scan(text, keep_punct)
    starts, ends = sc.starts.tolist(), sc.ends.tolist()
    toks = [
        text[s:e].lower().replace("\u2019", "'") if w else text[s:e]
        for s, e, w in zip(starts, ends, sc.is_word.tolist())
    ]
    return Tokens(toks, starts, ends)


_NGRAM_MIX = np.uint64(0xBF58476D1CE4E5B9)  # odd multiplier chaining token ids into n-gram keys


def ngram_keys(ids: np.ndarray, max_n: int) -> list[np.ndarray]:
    """64-bit keys of the n-grams of a token-id array for n = 1..`max_n`: ``keys[n-1][i]`` stands
    for ``ids[i:i+n]``; equal n-grams have equal keys, different ones collide with probability
    ~2**-64. An array shorter than n gives an empty array. O(len(ids) * max_n), no sorting."""
    h = np.asarray(ids, dtype=np.int64).view(np.uint64)
    out = [h]
    keys = h
    for n in range(2, max_n + 1):
        keys = keys[:-1] * _NGRAM_MIX + h[n - 1 :] if keys.size > 1 else keys[:0]
        out.append(keys)
    return out


# --- sentences and openings --------------------------------------------------------------------

_CHAR_SCRIPT_CLASS = "".join(
    f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in _CHAR_SCRIPT_RANGES
)
_CLOSERS = "\"'\u2019\u201d\u300d\u300f\uff09\u3011)\\]}"
# Sentence ends: CJK terminators need no space after them; Latin ones need whitespace, the end
# of the text, or CJK text next. Closing quotes and brackets stay with their sentence. A line
# break always ends a sentence.
_SENTENCE_END_RE = re.compile(
    rf"[\u3002\uff01\uff1f\uff1b\uff0e]+[{_CLOSERS}]*"
    rf"|[.!?\u2026]+[{_CLOSERS}]*(?=\s|$|[{_CHAR_SCRIPT_CLASS}])"
    r"|\n"
)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of the sentences of `text`, whitespace trimmed.

    A sentence ends at ``。！？；．`` (no space needed after them), at ``. ! ? …`` followed by
    whitespace, the end of the text or CJK text (so ``3.14`` does not split), or at a line break.
    Closing quotes and brackets after the terminator belong to the sentence. Pieces without a
    letter, digit or symbol are not sentences. Abbreviations (``e.g. this``) do split: a known
    limitation of a rule-based splitter.
    """
    _check_text(text)
    return _sentence_spans(text)


def _sentence_spans(text: str, limit: int | None = None) -> list[tuple[int, int]]:
    """Sentence spans; with `limit`, stop once that many are found."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for m in _SENTENCE_END_RE.finditer(text):
        _add_span(text, pos, m.end(), spans)
        pos = m.end()
        if limit is not None and len(spans) >= limit:
            return spans
    _add_span(text, pos, len(text), spans)
    return spans


def _add_span(text: str, s: int, e: int, spans: list[tuple[int, int]]) -> None:
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    if s < e and any(unicodedata.category(ch)[0] in "LNS" for ch in text[s:e]):
        spans.append((s, e))


def split_sentences(text: str) -> list[str]:
    """The sentences of `text` (see `sentence_spans`).

    >>> split_sentences("你好。How are you? Fine!")
    ['你好。', 'How are you?', 'Fine!']
    """
    _check_text(text)
    return [text[s:e] for s, e in _sentence_spans(text)]


_SPACE_RE = re.compile(r"\s+")


def normalize_phrase(text: str) -> str:
    """`text` folded for comparison: NFKC (full-width to half-width), casefolded, whitespace runs
    to one space, leading and trailing punctuation and whitespace removed.

    >>> normalize_phrase("  Sure!  Here ")
    'sure! here'
    """
    folded = _SPACE_RE.sub(" ", unicodedata.normalize("NFKC", _check_text(text)).casefold())
    start, end = 0, len(folded)
    while end > start and _is_edge_junk(folded[end - 1]):
        end -= 1
    while start < end and _is_edge_junk(folded[start]):
        start += 1
    return folded[start:end]


def _is_edge_junk(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch)[0] in "PC"


def opening(text: str, *, max_tokens: int = 10) -> str:
    """The normalised opening of `text`: its first sentence when the text has a sentence break,
    else its first `max_tokens` tokens (cut from the text as written, then normalised); ``""``
    for a text without letters, digits or symbols. See `normalize_phrase` for the folding.

    >>> opening("Sure! Here is the answer.")
    'sure'
    """
    _check_text(text)
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise InputError(f"max_tokens must be a positive int; got {max_tokens!r}")
    return _opening(text, max_tokens)


def _opening(text: str, max_tokens: int) -> str:
    spans = _sentence_spans(text, limit=2)
    if not spans:
        return ""
    s, e = spans[0]
    if len(spans) > 1 or _SENTENCE_END_RE.search(text, s, e) is not None:
        return normalize_phrase(text[s:e])
    sc = _scan(text[:e])  # no sentence break: the first tokens
    if sc.starts.size == 0:
        return normalize_phrase(text[s:e])
    last = min(max_tokens, sc.starts.size) - 1
    return normalize_phrase(text[int(sc.starts[0]) : int(sc.ends[last])])
