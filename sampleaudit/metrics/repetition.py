"""Repetition metrics of a sample set: loop detection ("循环生成"), whole-sample repetition scores
and the most common openings.

Loop rule (`detect_loop`)
-------------------------
A sample is *looped* when it ends in one unit repeated back to back: a word n-gram, a clause, a
line or a sentence, said again and again, as degenerate generation does. What makes a loop is how
many copies follow one another and how much of the text's tail they cover, not a fixed length.
On the token sequence of the sample (`sampleaudit.metrics.text`: words for spaced scripts,
characters for Chinese, Japanese, Korean; punctuation ignored; every number the same token), a
loop is a run of consecutive copies of a unit of ``p`` tokens where

1. ``min_unit_tokens <= p <= max_unit_tokens`` (defaults 1 and 256); the smallest period is the
   unit (``ha ho ha ho`` has unit ``ha ho``), read from a clause start where one falls inside the
   first copy, so the unit reads "I like it." rather than "it. I like";
2. there are enough whole copies: ``min_repeats`` (3) for a unit of more than
   ``short_unit_tokens`` (5) tokens, ``min_short_repeats`` (4) for a unit of 2 to 5 tokens ("Why
   not? Why not? Why not? Why not?", an attribution line "-- The Editors" on four lines),
   ``min_single_repeats`` (16) for a single token ("the the the ..."), so a phrase said twice,
   emphasis ("very very", "no, no, no", "The temple of the LORD, The temple of the LORD, The
   temple of the LORD") and laughter ("哈哈哈哈哈哈") are not loops. The run may end inside one
   more copy, even inside a word, as a generation cut off at its token limit does;
3. it covers the tail: at least ``min_coverage`` (0.1) of the sample's characters and at least
   ``min_tail_share`` (0.6) of the characters from its start to the end of the sample (measured
   from token to token), so copies inside a text that goes on (a line sung four times in the
   middle of a song, a chant in a long document) are not a loop;
4. each copy is the unit or within ``max(1, floor(max_variation * p))`` token edits of it
   (``max_variation`` 0.2; units of one or two tokens must repeat exactly): a token changed,
   dropped or inserted (two at most), or two neighbours swapped, one edit each
   (Damerau-Levenshtein distance, optimal-string-alignment form); a trailing partial copy counts
   as that, not as an edited copy;
5. the copies agree: at least ``min_consensus`` (0.5) of them are the unit exactly (so copies
   that drop a word or swap two in every second copy pass, a list whose items all differ does
   not: "Install numpy. Install scipy. Install pandas."); at every position of the unit one token
   fills at least ``min_consensus`` of the copies, and a strict majority where two or more other
   tokens not of the unit stand there ("Khmer Busra Regular; Khmer Busra Bold; Khmer Busra
   Italic; Khmer Busra Bold Italic", a list of product names); at no position is a token
   inserted in more than ``1 - min_consensus`` of the copies; a number of the unit has one value
   in most copies or, standing alone, counts up by one constant step ("Attempt 1 failed. Attempt
   2 failed. ...", "1. Drink water. 2. Drink water. ..."), while model numbers (IC-7300, IC-7610)
   and versions (Python 3.9, 3.10, 3.11) vary like the slot of a list;
6. at least half of the unit's tokens are words or CJK characters that are not numbers, so
   counting ("1, 2, 3, ..."), tables of figures ("| item 3 | 21 |"), separator lines ("=====")
   and emoji runs are not loops.

A refrain that recurs with text between the copies (Psalm 136's "for his mercy endureth for
ever") has no two copies in a row; anaphora ("we will build schools, we will build roads, ...")
and numbered steps vary in every item (rule 5); code and tables with regular structure vary in
their names and cells (rule 5) or are mostly figures (rule 6).

How: the distance from every token trigram to its previous occurrence is counted (one sort,
O(n log n)), per block of text; a distance shared by many trigrams in one block is a candidate
period (at most eight, the strongest first, plus the halves of the three strongest: copies that
alternate between two forms recur at twice the period). For each candidate the trigram
recurrences at distances p - 1 .. p + 1 and 2p - 1 .. 2p + 1 are grouped into regions; in each
region the copies are walked one by one from the most frequent p-gram, forwards and backwards,
exact runs of copies in one step and an edited copy with one slice comparison per kind of edit
(a banded edit-distance table only for two edits or more). A short loop whose copies are all
edited leaves few trigram recurrences; when nothing else is found, the bigrams of the last 128
tokens give two more candidate periods (3 to 16). No step compares every pair of positions, so
time grows near-linearly with the text (benchmarks/bench_repetition.py measures it). When a text
has several loops, the longest is reported (the shortest unit among those within 10% of it).
Limitations: a unit longer than `max_unit_tokens` tokens, a unit of punctuation only, a repeat
inside one long token ("hahahahaha..."), and a short loop (fewer than 4 copies of its unit in a
row) whose copies are edited differently each time, are not detected.

Whole-sample scores (distributions over samples)
------------------------------------------------
- ``seq_rep[n]`` (n = 1..4): ``1 - distinct n-grams / n-grams`` within a sample (Welleck et al.
  2019); 0.0 for a sample with fewer than n tokens.
- ``compression_ratio``: zlib (level 9) compressed size / UTF-8 size; lower is more repetitive.
  Short texts compress badly (ratios above 1 are normal under ~100 bytes). Empty samples are left
  out (``n`` says how many samples a distribution holds).
- ``dup_ngram_char_share[n]`` (n = 5..10): the share of a sample's token characters that lie
  inside an n-gram occurring more than once in the sample, overlaps counted once (Gopher's
  repetition rules, Rae et al. 2021, which flag 0.15 for n = 5 down to 0.10 for n = 10); 0.0 for
  a sample without tokens.

Openings
--------
The opening of a sample is its first sentence, or its first `opening_tokens` tokens when it has
no sentence break, casefolded with whitespace and trailing punctuation normalised
(`sampleaudit.metrics.text.opening`). ``opening_top_share`` is the share of all samples that start
with the most common opening (empty samples count in the denominator, never as an opening);
ties are broken by the opening's text, so the result does not depend on sample order. Only
openings that start at least two samples are listed: when every opening is unique the share is
0.0 and there is no top text (otherwise two distinct samples would "share" an opening at 50%).

Empty input: with no samples every share and distribution figure is None; nothing raises.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import InputError
from .text import KIND_CHAR, KIND_WORD, _check_text, _hash_powers, _opening, _Scan, _scan, ngram_keys

MIN_REPEATS = 3
MIN_SHORT_REPEATS = 4
SHORT_UNIT_TOKENS = 5
MIN_UNIT_TOKENS = 1
MAX_UNIT_TOKENS = 256
MIN_SINGLE_REPEATS = 16
MIN_COVERAGE = 0.1
MIN_TAIL_SHARE = 0.6
MAX_VARIATION = 0.2
MIN_CONSENSUS = 0.5
SEQ_REP_NS = (1, 2, 3, 4)
DUP_NGRAM_NS = (5, 6, 7, 8, 9, 10)
OPENING_TOKENS = 10
TOP_OPENINGS = 5
MAX_LOOPS_LISTED = 50

# Characters that end a clause: a loop start is moved onto the first clause start in its unit.
_CLAUSE_BREAKS = frozenset(".!?;:,\n\u2026\u3002\uff01\uff1f\uff1b\uff1a\uff0c\u3001")
_NUMBER_ID = -1  # the loop detector's id of every number token
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)  # odd multipliers combining three token ids into one key
_MIX2 = np.uint64(0x94D049BB133111EB)
_SAMPLE_MIX = np.uint64(0xD6E8FEB86659FD93)  # salts n-gram keys with the sample index
_GAP = -2  # a unit position that a copy dropped, in the consensus count
_MAX_INDELS = 2  # tokens a copy may have inserted or dropped, at most (within its edits)
_MAX_CANDIDATES = 8  # candidate periods checked per text (plus their halves)
_MIN_PAIR_PERIOD = 7  # periods from which copies alternating between two forms are looked for
_PAIR_CANDIDATES = 3  # the strongest candidates whose halves are tried too
_MAX_EDITED_PERIOD = 16  # longest unit looked for from spread-out recurrences (`_edited_candidates`)
_EDITED_WINDOW = 128  # tokens at the end of a text searched for them
_EDITED_END = 8  # a bigram among the last tokens must recur within that window
_NUMBERS_CHECKED = 64  # copies whose numbers are compared at a number position of the unit


@dataclass(frozen=True)
class Loop:
    """One detected loop: the repeated unit as written (the first copy that matches the majority
    of copies), the number of whole copies, the unit's length in tokens, the character span
    ``text[start_char:end_char]`` of the looped stretch (first to last looped token) and the
    share of the sample's characters (first to last token) it covers."""

    unit: str
    n_repeats: int
    unit_tokens: int
    start_char: int
    end_char: int
    coverage_share: float


@dataclass(frozen=True)
class LoopRecord(Loop):
    """A looped sample of a set: its `Loop` and the sample's id."""

    id: str = ""


@dataclass(frozen=True)
class ScoreDistribution:
    """A per-sample score summarised over the `n` samples it is defined for (None when n = 0).
    Quantiles are linear-interpolated (numpy's default)."""

    n: int
    mean: float | None
    p50: float | None
    p90: float | None
    max: float | None


@dataclass(frozen=True)
class OpeningCount:
    """An opening (normalised first sentence), how many samples start with it, and their share
    of all samples."""

    text: str
    count: int
    share: float


@dataclass(frozen=True)
class RepetitionResult:
    """Repetition figures of one sample set (definitions in the module docstring).

    `loops` lists looped samples worst first (coverage, then repeats, then id), capped at
    `max_loops_listed`; `loop_ids` lists every looped sample in the same order. Dict keys are
    the n of the n-grams, as strings ("1".."4", "5".."10").
    """

    n_samples: int
    n_looped: int
    loop_share: float | None
    loop_ids: list[str]
    loops: list[LoopRecord]
    seq_rep: dict[str, ScoreDistribution]
    compression_ratio: ScoreDistribution
    dup_ngram_char_share: dict[str, ScoreDistribution]
    openings: list[OpeningCount]
    opening_top_share: float | None
    opening_top_text: str | None


@dataclass(frozen=True)
class _LoopRule:
    min_repeats: int
    min_short_repeats: int
    short_unit_tokens: int
    min_single_repeats: int
    min_unit_tokens: int
    max_unit_tokens: int
    min_coverage: float
    min_tail_share: float
    max_variation: float
    min_consensus: float

    def copies_needed(self, p: int) -> int:
        """Whole copies a loop of a `p`-token unit needs (rule 2)."""
        if p == 1:
            return max(self.min_repeats, self.min_single_repeats)
        if p <= self.short_unit_tokens:
            return max(self.min_repeats, self.min_short_repeats)
        return self.min_repeats

    def edits(self, p: int) -> int:
        """Token edits a copy of a `p`-token unit may differ by from the unit (rule 5)."""
        if p < 3 or self.max_variation == 0.0:
            return 0
        return max(1, int(math.floor(self.max_variation * p + 1e-9)))


@lru_cache(maxsize=8)
def _thresholds(rule: _LoopRule) -> np.ndarray:
    """Trigram recurrences at distance p that make p a candidate period, for p = 0..max: half
    of those of the shortest loop with unit length p (its whole copies span `need` tokens, and
    all trigrams after the first copy recur); infinite below `min_unit_tokens`."""
    periods = np.arange(rule.max_unit_tokens + 1)
    need = np.array([rule.copies_needed(max(1, int(q))) for q in periods]) * periods
    thr = np.maximum(2, 0.5 * (need - periods - 2))
    thr[: rule.min_unit_tokens] = np.inf
    return thr


# --- validation ------------------------------------------------------------------------------


def _check_int(name: str, value: object, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise InputError(f"{name} must be an int >= {lo}; got {value!r}")
    return int(value)


def _check_float(name: str, value: object, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{name} must be a number in [{lo}, {hi}]; got {value!r}")
    v = float(value)
    if not (lo <= v <= hi):  # also rejects NaN
        raise InputError(f"{name} must be in [{lo}, {hi}]; got {value!r}")
    return v


def _loop_rule(
    min_repeats: int,
    min_short_repeats: int,
    short_unit_tokens: int,
    min_single_repeats: int,
    min_unit_tokens: int,
    max_unit_tokens: int,
    min_coverage: float,
    min_tail_share: float,
    max_variation: float,
    min_consensus: float,
) -> _LoopRule:
    rule = _LoopRule(
        min_repeats=_check_int("min_repeats", min_repeats, 2),
        min_short_repeats=_check_int("min_short_repeats", min_short_repeats, 2),
        short_unit_tokens=_check_int("short_unit_tokens", short_unit_tokens, 0),
        min_single_repeats=_check_int("min_single_repeats", min_single_repeats, 2),
        min_unit_tokens=_check_int("min_unit_tokens", min_unit_tokens, 1),
        max_unit_tokens=_check_int("max_unit_tokens", max_unit_tokens, 1),
        min_coverage=_check_float("min_coverage", min_coverage, 0.0, 1.0),
        min_tail_share=_check_float("min_tail_share", min_tail_share, 0.0, 1.0),
        max_variation=_check_float("max_variation", max_variation, 0.0, 0.5),
        min_consensus=_check_float("min_consensus", min_consensus, 0.5, 1.0),
    )
    if rule.min_unit_tokens > rule.max_unit_tokens:
        raise InputError(
            f"min_unit_tokens ({rule.min_unit_tokens}) must not exceed max_unit_tokens "
            f"({rule.max_unit_tokens})"
        )
    if rule.max_unit_tokens > 4096:
        raise InputError(f"max_unit_tokens must be at most 4096; got {rule.max_unit_tokens}")
    return rule


def check_texts(texts: object, name: str = "texts") -> list[str]:
    """`texts` as a list of str, or InputError saying which item is wrong."""
    if isinstance(texts, (str, bytes)):
        raise InputError(
            f"{name} must be a sequence of str (one per sample), not a single {type(texts).__name__}"
        )
    try:
        out = list(texts)  # type: ignore[call-overload]
    except TypeError:
        raise InputError(f"{name} must be a sequence of str; got {type(texts).__name__}") from None
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise InputError(
                f"{name}[{i}] must be a str; got {type(t).__name__}. Pass '' for an empty sample"
            )
    return out


def _check_ids(ids: object, n: int) -> list[str]:
    if ids is None:
        return [str(i) for i in range(n)]
    if isinstance(ids, (str, bytes)):
        raise InputError("ids must be a sequence with one id per text, not a single string")
    out = []
    for i, x in enumerate(list(ids)):  # type: ignore[call-overload]
        if isinstance(x, bool) or not isinstance(x, (str, int, np.integer)):
            raise InputError(f"ids[{i}] must be a str or int; got {type(x).__name__}")
        out.append(str(x))
    if len(out) != n:
        raise InputError(f"ids must have one entry per text: got {len(out)} ids for {n} texts")
    if len(set(out)) != n:
        dup = next(x for x, c in Counter(out).items() if c > 1)
        raise InputError(f"ids must be unique; {dup!r} occurs more than once")
    return out


# --- loop detection --------------------------------------------------------------------------


def detect_loop(
    text: str,
    *,
    min_repeats: int = MIN_REPEATS,
    min_short_repeats: int = MIN_SHORT_REPEATS,
    short_unit_tokens: int = SHORT_UNIT_TOKENS,
    min_single_repeats: int = MIN_SINGLE_REPEATS,
    min_unit_tokens: int = MIN_UNIT_TOKENS,
    max_unit_tokens: int = MAX_UNIT_TOKENS,
    min_coverage: float = MIN_COVERAGE,
    min_tail_share: float = MIN_TAIL_SHARE,
    max_variation: float = MAX_VARIATION,
    min_consensus: float = MIN_CONSENSUS,
) -> Loop | None:
    """The longest loop of `text`, or None when it has none (rule and defaults: module docstring).

    >>> loop = detect_loop("Sure. " + "I will try again. " * 6)
    >>> loop.unit, loop.n_repeats
    ('I will try again.', 6)
    >>> detect_loop("So I asked him. Why not? Why not? Why not? Why not?").n_repeats
    4
    >>> detect_loop("It was very, very good.") is None
    True
    """
    _check_text(text)
    rule = _loop_rule(
        min_repeats, min_short_repeats, short_unit_tokens, min_single_repeats, min_unit_tokens,
        max_unit_tokens, min_coverage, min_tail_share, max_variation, min_consensus,
    )
    return _find_loop(text, _scan(text), rule)


def detect_loops(
    texts: Sequence[str],
    *,
    min_repeats: int = MIN_REPEATS,
    min_short_repeats: int = MIN_SHORT_REPEATS,
    short_unit_tokens: int = SHORT_UNIT_TOKENS,
    min_single_repeats: int = MIN_SINGLE_REPEATS,
    min_unit_tokens: int = MIN_UNIT_TOKENS,
    max_unit_tokens: int = MAX_UNIT_TOKENS,
    min_coverage: float = MIN_COVERAGE,
    min_tail_share: float = MIN_TAIL_SHARE,
    max_variation: float = MAX_VARIATION,
    min_consensus: float = MIN_CONSENSUS,
) -> list[Loop | None]:
    """`detect_loop` over many texts, validating the options once: one entry per text."""
    texts = check_texts(texts)
    rule = _loop_rule(
        min_repeats, min_short_repeats, short_unit_tokens, min_single_repeats, min_unit_tokens,
        max_unit_tokens, min_coverage, min_tail_share, max_variation, min_consensus,
    )
    return [_find_loop(text, _scan(text), rule) for text in texts]


def _loop_ids(sc: _Scan) -> tuple[np.ndarray, np.ndarray]:
    """Token ids with every number mapped to `_NUMBER_ID`, and which tokens are lexical (a word
    that is not a number, or a CJK character)."""
    lexical = ((sc.kind == KIND_WORD) & ~sc.is_number) | (sc.kind == KIND_CHAR)
    return np.where(sc.is_number, _NUMBER_ID, sc.ids), lexical


class _Text:
    """One text as the loop kernel sees it: token ids (numbers as one id), spans, and lazily
    built Python lists for the per-copy parse."""

    def __init__(self, text: str, sc: _Scan):
        self.text, self.sc = text, sc
        self.ids, self.lexical = _loop_ids(sc)
        self.n = int(self.ids.size)
        self._list: list[int] | None = None

    @property
    def id_list(self) -> list[int]:
        if self._list is None:
            self._list = self.ids.tolist()
        return self._list

    def token(self, i: int) -> str:
        return self.text[int(self.sc.starts[i]) : int(self.sc.ends[i])]

    def clause_start(self, i: int) -> bool:
        """Does token `i` open a clause (first token, or a clause break right before it)?"""
        if i == 0:
            return True
        gap = self.text[int(self.sc.ends[i - 1]) : int(self.sc.starts[i])]
        return bool(_CLAUSE_BREAKS.intersection(gap))


def _find_loop(text: str, sc: _Scan, rule: _LoopRule) -> Loop | None:
    """The loop kernel: candidate periods from trigram recurrences, then a check per period."""
    t = _Text(text, sc)
    n = t.n
    if n < 3:
        return None
    max_p = min(rule.max_unit_tokens, n // 2)
    if max_p < rule.min_unit_tokens:
        return None
    # Distance from each trigram to its previous occurrence.
    h = t.ids.view(np.uint64)  # hash ids: a trigram key that is equal for equal trigrams
    tri = (h[:-2] * _MIX1 + h[1:-1]) * _MIX2 + h[2:]
    order = np.argsort(tri, kind="stable")
    sorted_tri = tri[order]
    same = sorted_tri[1:] == sorted_tri[:-1]
    pos = order[1:][same]
    dist = pos - order[:-1][same]
    near = dist <= max_p
    dist, pos = dist[near], pos[near]
    if dist.size == 0:
        return None
    hist = _period_counts(pos, dist, max_p, rule)
    cands = np.flatnonzero(hist >= _thresholds(rule)[: max_p + 1])
    if cands.size > _MAX_CANDIDATES:
        cands = cands[np.argsort(-hist[cands], kind="stable")[:_MAX_CANDIDATES]]
    counts = hist.tolist()
    # Strongest evidence first; a multiple of a loop's period, or a period one token off a
    # multiple, finds the same loop again (with every copy edited), so it is not tried. A loop
    # whose copies alternate between two forms recurs at twice its period: the halves of the
    # strongest candidates are tried too.
    order = sorted(cands.tolist(), key=lambda q: (-counts[q], q))
    tries: list[int] = []
    for rank, q in enumerate(order):
        tries.append(q)
        if q >= _MIN_PAIR_PERIOD and rank < _PAIR_CANDIDATES:
            tries.extend(x for x in (q // 2, (q + 1) // 2) if x >= max(3, rule.min_unit_tokens))
    rec: _Recurrences | None = None
    found: list[Loop] = []
    seen: set[int] = set()
    for p in tries:
        if p in seen or any(_same_loop(p, lp) for lp in found):
            continue
        seen.add(p)
        near = sum(counts[p - 1 : p + 2])
        if near < 2 or near + sum(counts[2 * p - 1 : 2 * p + 2]) < _region_need(p, rule):
            continue  # too few recurrences near p for any region to hold a loop
        if rec is None:
            rec = _Recurrences(pos, dist)
        loop = _loop_at_period(t, p, rule, rec.regions(p, rule, n))
        if loop is not None:
            found.append(loop)
    if not found and _tail_repeats(t.id_list):
        # A short loop whose copies are edited leaves few trigram recurrences.
        window = max(0, n - _EDITED_WINDOW)
        for p in _edited_candidates(h, rule):
            if p not in seen:
                k = rule.edits(p)
                min_len = rule.copies_needed(p) * (p - min(k, _MAX_INDELS))
                regions = [(a + window, e + window) for a, e in _stretches(t.ids[window:], p, k, min_len)]
                loop = _loop_at_period(t, p, rule, regions)
                if loop is not None:
                    found.append(loop)
    if not found:
        return None
    longest = max(lp.end_char - lp.start_char for lp in found)
    return min(
        (lp for lp in found if lp.end_char - lp.start_char >= 0.9 * longest), key=lambda lp: lp.unit_tokens
    )


def _same_loop(p: int, loop: Loop) -> bool:
    """Would period `p` find `loop` again? A multiple of its unit, or one token off a multiple
    (then every copy reads as edited), does; so does a neighbour of a long loop's unit (cheaper
    not to walk it copy by copy again)."""
    q = loop.unit_tokens
    if p % q == 0 or (p >= 2 * q - 1 and p % q in (1, q - 1)):
        return True
    return abs(p - q) == 1 and loop.n_repeats >= 8


def _tail_repeats(ids: list[int]) -> bool:
    """Does a bigram among the text's last `_EDITED_END` tokens occur in the
    2 * `_MAX_EDITED_PERIOD` + 2 tokens before them? (Else no short loop ends there.)"""
    n = len(ids)
    lo = max(0, n - _EDITED_END - 2 * _MAX_EDITED_PERIOD - 2)
    before = set(zip(ids[lo : n - _EDITED_END], ids[lo + 1 : n - _EDITED_END + 1]))
    return any(pair in before for pair in zip(ids[n - _EDITED_END :], ids[n - _EDITED_END + 1 :]))


def _edited_candidates(h: np.ndarray, rule: _LoopRule) -> list[int]:
    """Short periods whose copies are edited (a token dropped or two swapped in every second copy)
    leave few trigram recurrences. Such a loop of a few copies must sit at the end of the text
    (rule 4), so the bigrams of the last `_EDITED_WINDOW` tokens are counted instead: a p-token
    unit recurs at distances p - 1 .. p + 1 and, copy to copy but one, 2p - 1 .. 2p + 1. The two
    periods from 3 to `_MAX_EDITED_PERIOD` with the most such recurrences (at least 4, and half
    of those of the fewest copies)."""
    tail = h[-_EDITED_WINDOW:]
    lo = max(3, rule.min_unit_tokens)
    top = min(_MAX_EDITED_PERIOD, rule.max_unit_tokens, (tail.size - 2) // 2)
    if top < lo:
        return []
    big = tail[:-1] * _MIX1 + tail[1:]
    order = np.argsort(big, kind="stable")
    same = big[order][1:] == big[order][:-1]
    later = order[1:][same]
    dist = later - order[:-1][same]
    close = dist <= 2 * top + 1
    if not (later[close] >= big.size - _EDITED_END).any():
        return []  # the text's last tokens repeat nothing just before them: no loop ends there
    hist = np.bincount(dist[close], minlength=2 * top + 2)
    p = np.arange(lo, top + 1)
    score = sum(hist[p + d] for d in (-1, 0, 1)) + sum(hist[2 * p + d] for d in (-1, 0, 1))
    # The fewest copies, each but the first sharing at least p - 2 bigrams with another.
    needed = np.array([rule.copies_needed(int(q)) for q in p])
    ok = score >= np.maximum(4, 0.5 * (needed - 1) * (p - 2))
    return p[ok][np.argsort(-score[ok], kind="stable")[:2]].tolist()


def _period_counts(pos: np.ndarray, dist: np.ndarray, max_p: int, rule: _LoopRule) -> np.ndarray:
    """For each period p, the most trigram recurrences at distance p inside one block of text.

    Counting per block rather than over the whole text keeps the candidate test local: a long
    clean text gathers many scattered recurrences at any distance, a loop gathers them in one
    place. Two block grids offset by half a block make sure a loop of the minimum size lies whole
    inside some block.
    """
    width = max_p + 1
    block = max(4096, 4 * max(rule.min_single_repeats, rule.min_repeats * max_p))
    if int(pos.max()) < block:
        return np.bincount(dist, minlength=width)
    hist = np.zeros(width, dtype=np.int64)
    for shift in (0, block // 2):
        blk = (pos + shift) // block
        counts = np.bincount(blk * width + dist, minlength=(int(blk.max()) + 1) * width)
        hist = np.maximum(hist, counts.reshape(-1, width).max(axis=0))
    return hist


def _stretches(ids: np.ndarray, p: int, k: int, min_len: int) -> list[tuple[int, int]]:
    """Token ranges ``[a, e)`` of at least `min_len` tokens that repeat with period `p`, allowing
    `k` mismatches in any window of `p` comparisons; with k > 0 a token may also equal the one
    ``p - 1`` or ``p + 1`` places on (a token dropped from or inserted into a copy, or two tokens
    swapped). Vectorised; the copies are checked one by one afterwards (`_parse_copies`)."""
    n = ids.size
    f = ids[:-p] == ids[p:]  # f[i]: token i equals token i + p
    if k:
        f = f.copy()
        f |= ids[: n - p] == ids[p - 1 : n - 1]
        f[: n - p - 1] |= ids[: n - p - 1] == ids[p + 1 :]
    w = max(1, min_len - p)
    if f.size < w:
        return []
    n_match = np.zeros(f.size + 1, dtype=np.int64)
    np.cumsum(f, out=n_match[1:])
    if 2 * int((n_match[w:] - n_match[:-w]).max()) < w:  # quick test: no window is half matched
        return []
    if k == 0:
        padded = np.concatenate(([False], f, [False]))
        edges = np.flatnonzero(padded[1:] != padded[:-1])
        a, b = edges[0::2], edges[1::2]  # f[a:b] all True
    else:
        miss = np.zeros(f.size + 1, dtype=np.int64)
        np.cumsum(~f, out=miss[1:])
        bad = np.flatnonzero(~f)
        in_window = miss[bad + 1] - miss[np.maximum(bad + 1 - p, 0)]
        breaks = bad[in_window > k]  # a window of p comparisons ending here has too many misses
        seg_a = np.concatenate(([0], breaks + 1))
        seg_b = np.concatenate((breaks, [f.size]))
        wide = seg_b - seg_a + p >= min_len
        seg_a, seg_b = seg_a[wide], seg_b[wide]
        if seg_a.size == 0:
            return []
        trues = np.flatnonzero(f)
        ia = np.searchsorted(trues, seg_a)
        ib = np.searchsorted(trues, seg_b) - 1
        keep = ia <= ib
        a, b = trues[ia[keep]], trues[ib[keep]] + 1
    long_enough = b + p - a >= min_len
    return list(zip(a[long_enough].tolist(), (b[long_enough] + p).tolist()))


class _Recurrences:
    """Trigram recurrences (position of the later copy, distance back to the earlier one),
    sorted by distance then position, to pick out the stretches where one period recurs."""

    def __init__(self, pos: np.ndarray, dist: np.ndarray):
        order = np.lexsort((pos, dist))
        self.pos, self.dist = pos[order], dist[order]

    def regions(self, p: int, rule: _LoopRule, n: int) -> list[tuple[int, int]]:
        """Token ranges where trigrams recur at distance p (p - 1 .. p + 1 when copies may be
        edited, and 2p - 1 .. 2p + 1 for copies alternating between two forms), densely enough
        for a loop: clusters of such recurrences, no gap over 2p + 3 tokens inside."""
        k = rule.edits(p)
        ds = (p, p - 1, p + 1, 2 * p - 1, 2 * p, 2 * p + 1) if k else (p,)
        lo = np.searchsorted(self.dist, ds, side="left").tolist()
        hi = np.searchsorted(self.dist, ds, side="right").tolist()
        n_near = sum(hi[j] - lo[j] for j in range(min(3, len(ds))))
        if n_near < 2:
            return []
        total = sum(b - a for a, b in zip(lo, hi))
        if total <= 64:  # few: plain Python is cheaper than numpy's overhead
            return self._regions_small(p, rule, n, lo, hi, n_near)
        parts = [self.pos[a:b] for a, b in zip(lo, hi)]
        where = np.concatenate(parts)
        near = np.zeros(where.size, dtype=bool)
        near[:n_near] = True
        order = np.argsort(where, kind="stable")
        where, near = where[order], near[order]
        cut = np.flatnonzero(np.diff(where) > 2 * p + 3) + 1
        first = np.concatenate(([0], cut))
        last = np.concatenate((cut, [where.size])) - 1
        count = last - first + 1
        n_near_in = np.add.reduceat(near.astype(np.int64), first)
        # A loop recurs at p - 1 .. p + 1 at least twice (the far distances alone are a
        # sentence said twice, or a longer unit).
        need = _region_need(p, rule)
        ok = (count >= need) & (n_near_in >= 2)
        starts = np.maximum(where[first[ok]] - 2 * p - 2, 0)
        ends = np.minimum(where[last[ok]] + 3, n)
        return list(zip(starts.tolist(), ends.tolist()))


    def _regions_small(
        self, p: int, rule: _LoopRule, n: int, lo: list[int], hi: list[int], n_near: int
    ) -> list[tuple[int, int]]:
        pos = self.pos
        hits = sorted(
            (int(x), j < 3) for j, (a, b) in enumerate(zip(lo, hi)) for x in pos[a:b].tolist()
        )
        need = _region_need(p, rule)
        out: list[tuple[int, int]] = []
        start = 0
        for i in range(1, len(hits) + 1):
            if i == len(hits) or hits[i][0] - hits[i - 1][0] > 2 * p + 3:
                group = hits[start:i]
                if len(group) >= need and sum(1 for _, near in group if near) >= 2:
                    out.append((max(group[0][0] - 2 * p - 2, 0), min(group[-1][0] + 3, n)))
                start = i
        return out


def _region_need(p: int, rule: _LoopRule) -> float:
    """Recurrences a region needs: an exact loop of the fewest copies recurs (copies - 1) * p - 2
    times at distance p; edits take some away."""
    return max(2.0, 0.6 * ((rule.copies_needed(p) - 1) * p - 2))


def _loop_at_period(t: _Text, p: int, rule: _LoopRule, regions: list[tuple[int, int]]) -> Loop | None:
    """The longest loop of unit length `p` around the token ranges `regions` that passes the
    rule, or None."""
    k = rule.edits(p)
    needed = rule.copies_needed(p)
    if t.n < max(2 * p, needed * (p - min(k, _MAX_INDELS))):
        return None
    best: Loop | None = None
    runs = _Runs(t.ids, p)
    covered = -1
    for a, e in regions:
        if e - a < p + 1:
            continue
        if e <= covered:
            continue  # inside a loop already parsed
        copies = _parse_copies(t, a, e, p, k, runs)
        if copies is None:
            continue
        covered = max(covered, copies.end)
        loop = _judge(t, copies, p, rule)
        if loop is not None and (best is None or loop.end_char - loop.start_char > best.end_char - best.start_char):
            best = loop
    return best


class _Runs:
    """Runs of exact repeats at period p, built on first use: ``after[i]`` consecutive i' >= i
    with token i' equal to token i' + p, ``before[i]`` the same ending at i (inclusive). A run of
    ``q * p`` such positions is q + 1 identical copies, which the parse jumps over in one step."""

    def __init__(self, ids: np.ndarray, p: int):
        self.ids, self.p = ids, p
        self._after: list[int] | None = None
        self._before: list[int] | None = None

    def _build(self) -> None:
        ids, p = self.ids, self.p
        m = ids[:-p] == ids[p:]
        idx = np.arange(m.size)
        last_miss = np.maximum.accumulate(np.where(m, -1, idx))
        next_miss = np.minimum.accumulate(np.where(m, m.size, idx)[::-1])[::-1]
        self._before = np.where(m, idx - last_miss, 0).tolist()
        self._after = np.where(m, next_miss - idx, 0).tolist()

    def after(self, i: int) -> int:
        if self._after is None:
            self._build()
        return self._after[i] if i < len(self._after) else 0  # type: ignore[index]

    def before(self, i: int) -> int:
        if self._before is None:
            self._build()
        return self._before[i] if i >= 0 else 0  # type: ignore[index]


_Piece = tuple[int, int, "list[int | None] | None", tuple[int, ...]]


@dataclass
class _Copies:
    """The copies of a unit found around a stretch: ``unit`` (token ids), the token index of the
    first whole copy, the end of the last whole copy, the partial copies before and after them
    (``lead`` tokens before `first`, ``tail`` tokens after `end`, the last of them a word cut off
    when `cut`), and the copies themselves as
    pieces: ``(start, count, None, ())`` for `count` exact copies in a row, ``(start, length,
    aligned, inserted)`` for one copy within the allowed edits, `aligned` giving per unit position
    the token index in the text (None where the copy dropped it), `inserted` the unit positions
    before which the copy has an extra token."""

    unit: list[int]
    unit_at: int
    first: int
    end: int
    lead: int
    tail: int
    cut: bool
    pieces: list[_Piece]

    @property
    def n(self) -> int:
        return sum(c if al is None else 1 for _, c, al, _ in self.pieces)


def _unit_start(t: _Text, a: int, e: int, p: int) -> int | None:
    """Where the unit is read, in ``[a, e)``: the start of the most frequent p-gram there (on
    ties the earliest that opens a clause, else the earliest); None when no p-gram occurs twice,
    as then most copies cannot equal the unit (rule 5). A long stretch takes the first p tokens
    followed by the same p tokens instead, and counts p-grams only when there are none."""
    ids = t.id_list
    e = min(e, t.n)
    if (e - a) * p > 2048:
        last = e - 2 * p
        for i in range(a, last + 1):
            if ids[i : i + p] == ids[i + p : i + 2 * p]:
                return next(
                    (j for j in range(i, min(i + p, last + 1))
                     if t.clause_start(j) and ids[j : j + p] == ids[j + p : j + 2 * p]),
                    i,
                )
        h = t.ids[a:e].view(np.uint64)
        pw, inv = _hash_powers(h.size)
        prefix = np.zeros(h.size + 1, dtype=np.uint64)
        np.cumsum((h * _MIX1) * pw[: h.size], out=prefix[1:])
        keys = (prefix[p:] - prefix[:-p]) * inv[: h.size - p + 1]
        _, first, cnt = np.unique(keys, return_index=True, return_counts=True)
        if cnt.max() < 2:
            return None
        tied = (np.sort(first[cnt == cnt.max()]) + a).tolist()
    else:
        grams = [tuple(ids[i : i + p]) for i in range(a, e - p + 1)]
        if not grams:
            return None
        counts = Counter(grams)
        top = max(counts.values())
        if top < 2:
            return None
        tied = [a + i for i, g in enumerate(grams) if counts[g] == top]
    return next((i for i in tied if t.clause_start(i)), tied[0])


def _parse_copies(t: _Text, a: int, e: int, p: int, k: int, runs: _Runs) -> _Copies | None:
    """Walk copy by copy from the most frequent p-gram of stretch ``[a, e)`` backwards and
    forwards while each copy equals the unit or is within `k` edits of it."""
    ids = t.id_list
    n = t.n
    r = _unit_start(t, max(0, a - p), e, p)
    if r is None:
        return None
    unit = ids[r : r + p]
    band = min(k, _MAX_INDELS)
    fwd: list[_Piece] = []
    s = r
    steps = 0  # exact copies walked one by one; after a few, runs of them are jumped over
    while s + p - band <= n:
        if ids[s : s + p] == unit:
            steps += 1
            q = 1 + runs.after(s) // p if steps > 4 else 1
            fwd.append((s, q, None, ()))
            s += q * p
            continue
        if k == 0 or _partial(t, r, p, s):
            break
        got = _align_copy(unit, ids, s, k, band, forward=True)
        if got is None:
            break
        fwd.append((s, got[0], got[1], got[2]))
        s += got[0]
    end = s
    back: list[_Piece] = []
    s = r
    steps = 0
    while s - p + band >= 0:
        if s - p >= 0 and ids[s - p : s] == unit:
            steps += 1
            q = min(1 + runs.before(s - p - 1) // p, s // p) if steps > 4 else 1
            back.append((s - q * p, q, None, ()))
            s -= q * p
            continue
        if k == 0:
            break
        got = _align_copy(unit, ids, s, k, band, forward=False)
        if got is None:
            break
        back.append((s - got[0], got[0], got[1], got[2]))
        s -= got[0]
    first = s
    # Partial copies: the tokens before the first copy that end the unit, those after the last
    # copy that begin it (the last may be a word cut off, as at a generation's token limit).
    tail = 0
    while end + tail < n and tail < p - 1 and ids[end + tail] == unit[tail]:
        tail += 1
    cut = end + tail == n - 1 and tail < p and _cut_word(t, r + tail)
    tail += cut
    lead = 0
    while first - lead > 0 and lead < p - 1 and ids[first - lead - 1] == unit[p - 1 - lead]:
        lead += 1
    return _Copies(unit, r, first, end, lead, tail, cut, back[::-1] + fwd)


def _partial(t: _Text, r: int, p: int, s: int) -> bool:
    """Are the tokens from `s` to the end of the text the start of the unit read at token `r`
    (the last one maybe a word cut off)? Then they are the partial copy that a cut-off generation
    ends with, not a copy of its own."""
    ids, n = t.id_list, t.n
    rest = n - s
    if not 1 <= rest <= p or ids[s : n - 1] != ids[r : r + rest - 1]:
        return False
    return ids[n - 1] == ids[r + rest - 1] or _cut_word(t, r + rest - 1)


def _cut_word(t: _Text, j: int) -> bool:
    """Is the text's last token a word cut off from the start of token `j`?"""
    n = t.n
    if t.sc.kind[n - 1] != KIND_WORD:
        return False
    cut, full = t.token(n - 1).lower(), t.token(j).lower()
    return len(cut) < len(full) and full.startswith(cut)


def _align_copy(
    unit: list[int], ids: list[int], s: int, k: int, band: int, *, forward: bool
) -> tuple[int, list[int | None], tuple[int, ...]] | None:
    """The copy of `unit` that starts at token `s` (ends there, when not `forward`) within `k`
    edits (Damerau-Levenshtein in its optimal-string-alignment form: a token inserted, dropped,
    changed, or two neighbours swapped, one edit each; at most `band` insertions or drops): its
    length, per unit position the token index it is aligned with (None for a drop), and the
    unit positions before which a token was inserted."""
    p = len(unit)
    if forward:
        x = ids[s : s + p + band]
        u = unit
    else:
        x = ids[max(0, s - p - band) : s][::-1]
        u = unit[::-1]
    m = len(x)
    if m < p - band:
        return None
    j = 0  # first position where the copy differs
    while j < p and j < m and u[j] == x[j]:
        j += 1
    # One edit, tried first with plain comparisons (the usual case): a changed token, two
    # neighbours swapped, a token dropped, a token inserted. When several fit, the one after
    # which the next copy is exact wins (a dropped last word also reads as a changed one).
    options: list[tuple[int, list[int | None], list[int]]] = []
    if m >= p and u[j + 1 :] == x[j + 1 : p]:
        options.append((p, list(range(p)), []))
    if m >= p and j + 1 < p and u[j] == x[j + 1] and u[j + 1] == x[j] and u[j + 2 :] == x[j + 2 : p]:
        options.append((p, list(range(p)), []))
    if m >= p - 1 and u[j + 1 :] == x[j : p - 1]:
        options.append((p - 1, [*range(j), None, *range(j, p - 1)], []))
    if m >= p + 1 and u[j:] == x[j + 1 : p + 1]:
        options.append((p + 1, [*range(j), *range(j + 1, p + 1)], [j]))
    found: tuple[int, list[int | None], list[int]] | None = None
    if len(options) > 1:
        nxt = [_next_is_unit(unit, ids, s, o[0], forward) for o in options]
        found = options[nxt.index(True)] if any(nxt) else options[0]
    elif options:
        found = options[0]
    elif k >= 2 and _missing(u, x) <= k:
        found = _align_dp(u, x, k, band)
    if found is None:
        return None
    length, at, ins = found
    if forward:
        return length, [None if a is None else s + a for a in at], tuple(ins)
    at = [None if a is None else s - 1 - a for a in at][::-1]
    return length, at, tuple(p - i for i in ins)


def _next_is_unit(unit: list[int], ids: list[int], s: int, length: int, forward: bool) -> bool:
    """Is the copy after (before, when not `forward`) a `length`-token copy at `s` the unit?"""
    p = len(unit)
    if forward:
        return ids[s + length : s + length + p] == unit
    return s - length - p >= 0 and ids[s - length - p : s - length] == unit


def _missing(u: list[int], x: list[int]) -> int:
    """Tokens of `u` that `x` lacks (as multisets): each needs an edit of its own."""
    have = Counter(x)
    have.subtract(u)
    return -sum(v for v in have.values() if v < 0)


def _align_dp(u: list[int], x: list[int], k: int, band: int) -> tuple[int, list[int | None], list[int]] | None:
    """`_align_copy` for two edits or more: banded dynamic programming over the prefixes of `x`."""
    p, m = len(u), len(x)
    big = k + 1
    width = 2 * band + 1
    # rows[i][d]: edits between u[:i] and x[:i + d - band]
    rows = [[big] * width for _ in range(p + 1)]
    for d in range(band, width):
        if d - band <= m:
            rows[0][d] = min(d - band, big)
    for i in range(1, p + 1):
        row, prev, ui = rows[i], rows[i - 1], u[i - 1]
        for d in range(width):
            j = i + d - band
            if j < 0 or j > m:
                continue
            best = prev[d + 1] + 1 if d + 1 < width else big  # u[i-1] dropped from the copy
            if d > 0 and j > 0:
                best = min(best, row[d - 1] + 1)  # x[j-1] inserted
            if j > 0:
                best = min(best, prev[d] + (x[j - 1] != ui))
                if i > 1 and j > 1 and ui == x[j - 2] and u[i - 2] == x[j - 1] and ui != x[j - 1]:
                    best = min(best, rows[i - 2][d] + 1)  # neighbours swapped
            row[d] = min(best, big)
        if min(row) >= big:
            return None
    ends = [(rows[p][d], abs(d - band), d) for d in range(width) if 0 <= p + d - band <= m]
    cost, _, d = min(ends)
    if cost > k:
        return None
    length = p + d - band
    at: list[int | None] = [None] * p
    ins: list[int] = []
    i, j = p, length
    while i > 0 or j > 0:
        d = j - i + band
        cur = rows[i][d]
        if i > 0 and j > 0 and rows[i - 1][d] + (x[j - 1] != u[i - 1]) == cur:
            at[i - 1] = j - 1
            i, j = i - 1, j - 1
        elif (i > 1 and j > 1 and u[i - 1] == x[j - 2] and u[i - 2] == x[j - 1]
              and rows[i - 2][d] + 1 == cur):
            at[i - 1], at[i - 2] = j - 1, j - 2
            i, j = i - 2, j - 2
        elif i > 0 and d + 1 < width and rows[i - 1][d + 1] + 1 == cur:
            i -= 1  # u[i] dropped
        else:
            ins.append(i)  # x[j-1] inserted before unit position i
            j -= 1
    return length, at, ins


def _judge(t: _Text, c: _Copies, p: int, rule: _LoopRule) -> Loop | None:
    """Rules 2-6 on parsed copies; the `Loop` if they hold."""
    n_copies = c.n
    needed = rule.copies_needed(p)
    if n_copies + 1 < needed:  # a rotation can gain one copy at most
        return None
    if 2 * int(t.lexical[c.unit_at : c.unit_at + p].sum()) < p:
        return None  # rule 6: numbers, symbols (tables of figures, emoji runs)
    # Start: the first clause start among the partial copy before and the first whole copy.
    start = c.first - c.lead
    q = next((i for i in range(start, min(c.first + p, c.end)) if t.clause_start(i)), start)
    # Whole copies counted from q (a rotation of the unit when q is not at a copy boundary).
    if q <= c.first:
        n_rot = n_copies + (c.first - q + c.tail - c.cut) // p
    else:
        n_rot = n_copies - 1 + (p - (q - c.first) + c.tail - c.cut) // p
    if n_rot < needed:
        if n_copies < needed:
            return None
        q, n_rot = c.first, n_copies
    if not _copies_agree(t, c, p, rule):
        return None
    sc = t.sc
    stop = c.end + c.tail
    start_char, end_char = int(sc.starts[q]), int(sc.ends[stop - 1])
    total = int(sc.ends[-1]) - int(sc.starts[0])
    coverage = (end_char - start_char) / total if total > 0 else 0.0
    tail_share = (end_char - start_char) / (int(sc.ends[-1]) - start_char)
    if coverage < rule.min_coverage or tail_share < rule.min_tail_share:
        return None
    return Loop(
        unit=_unit_text(t, c, q, p),
        n_repeats=n_rot,
        unit_tokens=p,
        start_char=start_char,
        end_char=end_char,
        coverage_share=float(coverage),
    )


def _copies_agree(t: _Text, c: _Copies, p: int, rule: _LoopRule) -> bool:
    """Rule 5: at every position of the unit one token fills at least `min_consensus` of the
    copies (a token dropped from a copy counts against it); where that token is a number, the
    numbers agree or count (1, 2, 3 ...) in most copies."""
    total = c.n
    unit = c.unit
    exact = sum(count for _, count, al, _ in c.pieces if al is None)
    if exact < rule.min_consensus * total:
        return False  # most copies differ from the unit: a list whose items vary, not a loop
    if exact < total:
        cols: list[Counter] = [Counter() for _ in range(p)]
        inserted: Counter = Counter()
        ids = t.id_list
        for _, count, al, ins in c.pieces:
            if al is None:
                for i in range(p):
                    cols[i][unit[i]] += count
            else:
                for i in range(p):
                    cols[i][_GAP if al[i] is None else ids[al[i]]] += 1
                inserted.update(ins)
        # Most copies have no token inserted at any place (else a longer unit is repeating).
        if inserted and total - max(inserted.values()) < rule.min_consensus * total:
            return False
        # A position where three or more different tokens alternate (a list: "Khmer Busra
        # Regular; Khmer Busra Bold; Khmer Busra Italic; ...") needs a strict majority.
        for i, col in enumerate(cols):
            token, top = col.most_common(1)[0]
            if token == _GAP or top < rule.min_consensus * total:
                return False
            # Tokens that are not the unit's own (here or one place off, as a swap leaves them):
            # two or more different ones at one position are a list's slot ("Khmer Busra
            # Regular; Khmer Busra Bold; Khmer Busra Italic; ..."), unless the unit's token holds
            # a strict majority.
            own = {_GAP, *unit[max(0, i - 1) : i + 2]}
            if sum(1 for tok in col if tok not in own) > 1 and 2 * top <= total:
                return False
    for i in range(p):
        if unit[i] == _NUMBER_ID:
            alone = unit[i - 1] != _NUMBER_ID and unit[(i + 1) % p] != _NUMBER_ID
            if not _numbers_agree(t, c, i, p, rule.min_consensus, may_count=alone):
                return False
    return True


def _numbers_agree(t: _Text, c: _Copies, i: int, p: int, min_consensus: float, *, may_count: bool) -> bool:
    """Do the numbers at unit position `i` (first `_NUMBERS_CHECKED` copies) mostly agree, or,
    for a number standing alone (`may_count`), mostly step by one constant (a counter: "Attempt
    1 failed", "2. Drink water")? Model numbers of a product list do neither; a number that is
    part of a longer one (a version "3.10", a date) must agree."""
    where: list[int] = []
    for s, count, al, _ in c.pieces:
        if al is None:
            where.extend(s + j * p + i for j in range(min(count, _NUMBERS_CHECKED - len(where))))
        elif al[i] is not None:
            where.append(al[i])
        if len(where) >= _NUMBERS_CHECKED:
            break
    ids = t.id_list
    values = [_number_value(t.token(j)) if ids[j] == _NUMBER_ID else t.token(j).lower() for j in where]
    if len(values) < 2:
        return True
    if Counter(values).most_common(1)[0][1] >= min_consensus * len(values):
        return True
    if not may_count or not all(isinstance(v, int) for v in values):
        return False
    steps = Counter(b - a for a, b in zip(values, values[1:]))
    step, count = steps.most_common(1)[0]
    return step != 0 and count >= min_consensus * (len(values) - 1)


def _number_value(token: str) -> int | str:
    return int(token) if len(token) <= 18 else token  # int() of a huge digit string is slow


def _unit_text(t: _Text, c: _Copies, q: int, p: int) -> str:
    """The unit as written: the first copy from `q` on that equals the unit read from `q` (a
    rotation of the most frequent copy), else the p tokens from `q`; from its first token to its
    last and the punctuation right after it, up to a space or line break."""
    ids = t.id_list
    shift = (q - c.first) % p
    want = c.unit[shift:] + c.unit[:shift]
    stop = c.end + c.tail
    at = next((j for j in range(q, min(stop, q + _NUMBERS_CHECKED * p) - p + 1) if ids[j : j + p] == want), q)
    sc = t.sc
    end = int(sc.ends[at + p - 1])
    limit = int(sc.starts[at + p]) if at + p < t.n else len(t.text)
    while end < limit and not t.text[end].isspace():
        end += 1  # the punctuation that closes the copy ("again.", "not?", "呢？")
    return t.text[int(sc.starts[at]) : end]


# --- the whole set ---------------------------------------------------------------------------


def repetition_stats(
    texts: Sequence[str],
    ids: Sequence[str] | None = None,
    *,
    min_repeats: int = MIN_REPEATS,
    min_short_repeats: int = MIN_SHORT_REPEATS,
    short_unit_tokens: int = SHORT_UNIT_TOKENS,
    min_single_repeats: int = MIN_SINGLE_REPEATS,
    min_unit_tokens: int = MIN_UNIT_TOKENS,
    max_unit_tokens: int = MAX_UNIT_TOKENS,
    min_coverage: float = MIN_COVERAGE,
    min_tail_share: float = MIN_TAIL_SHARE,
    max_variation: float = MAX_VARIATION,
    min_consensus: float = MIN_CONSENSUS,
    opening_tokens: int = OPENING_TOKENS,
    top_openings: int = TOP_OPENINGS,
    max_loops_listed: int = MAX_LOOPS_LISTED,
) -> RepetitionResult:
    """Loops, repetition scores and openings of a sample set (definitions: module docstring).

    `ids` name the samples in `loop_ids` and `loops` (default: "0", "1", ... by position); they
    must be unique. The loop options are those of `detect_loop`. Every aggregate is independent
    of the order of the samples.

    >>> r = repetition_stats(["Hi there. Bye.", "Hi there! " + "Go on and on. " * 8, ""])
    >>> r.loop_share, r.loop_ids, r.opening_top_text, round(r.opening_top_share, 3)
    (0.3333333333333333, ['1'], 'hi there', 0.667)
    """
    texts = check_texts(texts)
    names = _check_ids(ids, len(texts))
    rule = _loop_rule(
        min_repeats, min_short_repeats, short_unit_tokens, min_single_repeats, min_unit_tokens,
        max_unit_tokens, min_coverage, min_tail_share, max_variation, min_consensus,
    )
    opening_tokens = _check_int("opening_tokens", opening_tokens, 1)
    top_openings = _check_int("top_openings", top_openings, 1)
    max_loops_listed = _check_int("max_loops_listed", max_loops_listed, 0)

    records: list[LoopRecord] = []
    seq_parts: dict[int, list[np.ndarray]] = {k: [] for k in SEQ_REP_NS}
    dup_parts: dict[int, list[np.ndarray]] = {k: [] for k in DUP_NGRAM_NS}
    for lo in range(0, len(texts), _CHUNK):  # per-sample figures: a chunk's token arrays at a time
        part = texts[lo : lo + _CHUNK]
        scans = [_scan(t) for t in part]
        for text, name, sc in zip(part, names[lo : lo + _CHUNK], scans):
            loop = _find_loop(text, sc, rule)
            if loop is not None:
                records.append(LoopRecord(id=name, **loop.__dict__))
        for parts, scores in zip((seq_parts, dup_parts), _ngram_scores(scans)):
            for k, v in scores.items():
                parts[k].append(v)
    records.sort(key=lambda r: (-r.coverage_share, -r.n_repeats, r.id))
    n = len(texts)
    seq_rep = {k: np.concatenate(v) if v else np.zeros(0) for k, v in seq_parts.items()}
    dup_share = {k: np.concatenate(v) if v else np.zeros(0) for k, v in dup_parts.items()}
    ratios = [_compression_ratio(t) for t in texts if t]
    openings, top_share, top_text = _openings(texts, opening_tokens, top_openings)
    return RepetitionResult(
        n_samples=n,
        n_looped=len(records),
        loop_share=len(records) / n if n else None,
        loop_ids=[r.id for r in records],
        loops=records[:max_loops_listed],
        seq_rep={str(k): _distribution(v) for k, v in seq_rep.items()},
        compression_ratio=_distribution(ratios),
        dup_ngram_char_share={str(k): _distribution(v) for k, v in dup_share.items()},
        openings=openings,
        opening_top_share=top_share,
        opening_top_text=top_text,
    )


def _distribution(values: Sequence[float] | np.ndarray) -> ScoreDistribution:
    vals = np.sort(np.asarray(values, dtype=np.float64))
    if vals.size == 0:
        return ScoreDistribution(n=0, mean=None, p50=None, p90=None, max=None)
    return ScoreDistribution(
        n=int(vals.size),
        mean=math.fsum(vals.tolist()) / vals.size,  # exact sum: the same in any sample order
        p50=float(np.percentile(vals, 50)),
        p90=float(np.percentile(vals, 90)),
        max=float(vals[-1]),
    )


def _compression_ratio(text: str) -> float:
    raw = text.encode("utf-8", "surrogatepass")
    return len(zlib.compress(raw, 9)) / len(raw)


_CHUNK = 2048  # samples whose token arrays are held at once (memory stays flat at 100,000 samples)


def _ngram_scores(scans: list[_Scan]) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """seq-rep-n and duplicated-n-gram character share of every sample, vectorised over the set.

    The samples' token ids are concatenated; an n-gram counts only when it lies inside one
    sample, and its key is mixed with the sample index so that samples are counted apart. One
    sort per n groups equal keys.
    """
    n_samples = len(scans)
    lengths = np.array([sc.ids.size for sc in scans], dtype=np.int64)
    max_n = max(max(SEQ_REP_NS), max(DUP_NGRAM_NS))
    seq_rep = {k: np.zeros(n_samples) for k in SEQ_REP_NS}
    dup = {k: np.zeros(n_samples) for k in DUP_NGRAM_NS}
    total = int(lengths.sum())
    if total == 0:
        return seq_rep, dup
    sample = np.repeat(np.arange(n_samples), lengths)
    remaining = np.cumsum(lengths)[sample] - np.arange(total)  # tokens left in the sample
    tok_chars = np.concatenate([sc.ends - sc.starts for sc in scans]).astype(np.float64)
    chars_per_sample = np.bincount(sample, weights=tok_chars, minlength=n_samples)
    salt = (sample.astype(np.uint64) + np.uint64(1)) * _SAMPLE_MIX
    keys_by_n = ngram_keys(np.concatenate([sc.ids for sc in scans]), max_n)
    for k in range(1, max_n + 1):
        valid = np.flatnonzero(remaining[: keys_by_n[k - 1].size] >= k)
        if valid.size == 0:
            continue
        key = keys_by_n[k - 1][valid] ^ salt[valid]
        order = np.argsort(key)  # grouping only: any order within a group will do
        sorted_key = key[order]
        new_run = np.empty(valid.size, dtype=bool)
        new_run[0] = True
        np.not_equal(sorted_key[1:], sorted_key[:-1], out=new_run[1:])
        if k in seq_rep:
            n_grams = np.maximum(lengths - k + 1, 0)
            n_distinct = np.bincount(sample[valid[order[new_run]]], minlength=n_samples)
            seq_rep[k] = np.where(n_grams > 0, 1.0 - n_distinct / np.maximum(n_grams, 1), 0.0)
        if k in dup:
            run = np.cumsum(new_run) - 1
            repeated_sorted = np.bincount(run)[run] > 1
            starts = valid[order[repeated_sorted]]
            cover = np.bincount(starts, minlength=total + 1)
            cover -= np.bincount(starts + k, minlength=total + 1)
            covered = np.cumsum(cover[:-1]) > 0
            dup_chars = np.bincount(sample, weights=tok_chars * covered, minlength=n_samples)
            share = dup_chars / np.maximum(chars_per_sample, 1)
            dup[k] = np.where(chars_per_sample > 0, share, 0.0)
    return seq_rep, dup


def _openings(
    texts: list[str], max_tokens: int, top: int
) -> tuple[list[OpeningCount], float | None, str | None]:
    n = len(texts)
    counts = Counter(o for o in (_opening(t, max_tokens) for t in texts) if o)
    repeated = ((t, c) for t, c in counts.items() if c > 1)  # a unique opening is not repetition
    ranked = sorted(repeated, key=lambda kv: (-kv[1], kv[0]))[:top]
    openings = [OpeningCount(text=t, count=c, share=c / n) for t, c in ranked]
    if not openings:
        return [], (0.0 if n else None), None
    return openings, openings[0].share, openings[0].text
