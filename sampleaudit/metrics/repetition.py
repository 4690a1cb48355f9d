"""Repetition metrics of a sample set: loop detection ("循环生成"), whole-sample repetition scores
and the most common openings.

Loop rule (`detect_loop`)
-------------------------
A sample is *looped* when a stretch of it is one unit repeated back to back: a word n-gram, a
clause or a sentence, said again and again, as degenerate generation does. On the token sequence
of the sample (`sampleaudit.metrics.text`: words for spaced scripts, characters for Chinese,
Japanese, Korean; punctuation ignored; every number counts as the same token), a loop is a
stretch where

1. the tokens repeat with a period of ``p`` tokens, ``min_unit_tokens <= p <= max_unit_tokens``
   (defaults 1 and 256); the smallest such period is the unit (``ha ho ha ho`` has unit
   ``ha ho``), and the loop's start is moved to a clause start inside the first copy, so the
   unit reads "I like it." rather than "it. I like";
2. it holds at least ``min_repeats`` (default 3) whole copies of the unit; the stretch may end
   inside one more copy, as a generation cut off at its token limit does;
3. it spans at least ``min_loop_tokens`` (default 16) tokens, so emphasis ("very very", "no, no,
   no") and short chants ("ha ha ha") are not loops;
4. it covers at least ``min_coverage`` (default 0.2) of the sample's characters, measured from
   its first to its last token, so a refrain inside a long text is not a loop;
5. copies may differ a little (a changed word or number): in any window of ``p`` consecutive
   tokens at most ``floor(max_variation * p)`` (default ``max_variation`` 0.2, so one token in a
   5-token unit, none in a shorter one) differ from the token ``p`` places on; and at every
   position of the unit one token must fill at least ``min_consensus`` (default 0.5) of the
   copies. That second test is what tells a loop from a parallel list: "Install the numpy
   package. Install the scipy package. Install the pandas package." varies in the same slot in
   every item, so no token holds half of that slot, and it is not a loop. A copy with a token
   inserted or dropped shifts the copies after it; stretches split by such a shift (a break of
   at most ``p + floor(max_variation * p) + 2`` tokens, the unit the same up to rotation) are
   joined into one loop;
6. at least half of the unit's tokens are words or CJK characters that are not numbers, so
   counting ("1, 2, 3, ..."), tables of figures ("| item 3 | 21 |"), separator lines ("=====")
   and emoji runs are not loops.

A refrain sung twice fails rule 2, a repeated word for emphasis rule 3, anaphora ("we shall fight
on the beaches, we shall fight on the landing grounds, ...") rules 5 and 2.

How: the distance from every token trigram to its previous occurrence is counted (one sort, so
O(n log n)), per block of text; a distance shared by many trigrams in one block is a candidate
period; at most eight candidates are checked, each with one vectorised comparison of the token
sequence against itself shifted by the period (O(n)). No step compares every pair of positions,
so time grows near-linearly with the text (benchmarks/bench_repetition.py measures it). When a
text has several loops, the longest is reported.
Limitations: a unit longer than `max_unit_tokens` tokens, a unit of punctuation only, and a
repeat inside one long token ("hahahahaha...") are not detected.

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

import numpy as np

from ..errors import InputError
from .text import KIND_CHAR, KIND_WORD, _check_text, _opening, _Scan, _scan, ngram_keys

MIN_REPEATS = 3
MIN_UNIT_TOKENS = 1
MAX_UNIT_TOKENS = 256
MIN_LOOP_TOKENS = 16
MIN_COVERAGE = 0.2
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
    min_unit_tokens: int
    max_unit_tokens: int
    min_loop_tokens: int
    min_coverage: float
    max_variation: float
    min_consensus: float


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
    min_unit_tokens: int,
    max_unit_tokens: int,
    min_loop_tokens: int,
    min_coverage: float,
    max_variation: float,
    min_consensus: float,
) -> _LoopRule:
    rule = _LoopRule(
        min_repeats=_check_int("min_repeats", min_repeats, 2),
        min_unit_tokens=_check_int("min_unit_tokens", min_unit_tokens, 1),
        max_unit_tokens=_check_int("max_unit_tokens", max_unit_tokens, 1),
        min_loop_tokens=_check_int("min_loop_tokens", min_loop_tokens, 2),
        min_coverage=_check_float("min_coverage", min_coverage, 0.0, 1.0),
        max_variation=_check_float("max_variation", max_variation, 0.0, 0.5),
        min_consensus=_check_float("min_consensus", min_consensus, 0.5, 1.0),
    )
    if rule.min_unit_tokens > rule.max_unit_tokens:
        raise InputError(
            f"min_unit_tokens ({rule.min_unit_tokens}) must not exceed max_unit_tokens "
            f"({rule.max_unit_tokens})"
        )
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
    min_unit_tokens: int = MIN_UNIT_TOKENS,
    max_unit_tokens: int = MAX_UNIT_TOKENS,
    min_loop_tokens: int = MIN_LOOP_TOKENS,
    min_coverage: float = MIN_COVERAGE,
    max_variation: float = MAX_VARIATION,
    min_consensus: float = MIN_CONSENSUS,
) -> Loop | None:
    """The longest loop of `text`, or None when it has none (rule and defaults: module docstring).

    >>> loop = detect_loop("Sure. " + "I will try again. " * 6)
    >>> loop.unit, loop.n_repeats
    ('I will try again.', 6)
    >>> detect_loop("It was very, very good.") is None
    True
    """
    _check_text(text)
    rule = _loop_rule(
        min_repeats, min_unit_tokens, max_unit_tokens, min_loop_tokens, min_coverage, max_variation,
        min_consensus,
    )
    return _find_loop(text, _scan(text), rule)


def detect_loops(
    texts: Sequence[str],
    *,
    min_repeats: int = MIN_REPEATS,
    min_unit_tokens: int = MIN_UNIT_TOKENS,
    max_unit_tokens: int = MAX_UNIT_TOKENS,
    min_loop_tokens: int = MIN_LOOP_TOKENS,
    min_coverage: float = MIN_COVERAGE,
    max_variation: float = MAX_VARIATION,
    min_consensus: float = MIN_CONSENSUS,
) -> list[Loop | None]:
    """`detect_loop` over many texts, validating the options once: one entry per text."""
    texts = check_texts(texts)
    rule = _loop_rule(
        min_repeats, min_unit_tokens, max_unit_tokens, min_loop_tokens, min_coverage, max_variation,
        min_consensus,
    )
    return [_find_loop(text, _scan(text), rule) for text in texts]


def _loop_ids(sc: _Scan) -> tuple[np.ndarray, np.ndarray]:
    """Token ids with every number mapped to `_NUMBER_ID`, and which tokens are lexical (a word
    that is not a number, or a CJK character)."""
    lexical = ((sc.kind == KIND_WORD) & ~sc.is_number) | (sc.kind == KIND_CHAR)
    return np.where(sc.is_number, _NUMBER_ID, sc.ids), lexical


def _find_loop(text: str, sc: _Scan, rule: _LoopRule) -> Loop | None:
    """The loop kernel: candidate periods from trigram recurrences, then a check per period."""
    ids, lexical = _loop_ids(sc)
    n = ids.size
    need_min = max(rule.min_loop_tokens, rule.min_repeats * rule.min_unit_tokens, 3)
    if n < need_min:
        return None
    max_p = min(rule.max_unit_tokens, n // rule.min_repeats)
    if max_p < rule.min_unit_tokens:
        return None
    # Distance from each trigram to its previous occurrence.
    h = ids.view(np.uint64)  # hash ids: a trigram key that is equal for equal trigrams
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
    periods = np.arange(max_p + 1)
    need = np.maximum(rule.min_loop_tokens, rule.min_repeats * periods) - periods - 2
    ok = (hist >= np.maximum(2, 0.5 * need)) & (periods >= rule.min_unit_tokens)
    cands = np.flatnonzero(ok)
    if cands.size == 0:
        return None
    if cands.size > 8:
        cands = cands[np.argsort(-hist[cands], kind="stable")[:8]]
    found: list[tuple[int, int, int]] = []  # (span tokens, period, start token)
    for p in sorted(cands.tolist()):
        if any(p % q == 0 for _, q, _ in found):
            continue  # a multiple of a loop's period finds the same loop
        seg = _best_segment(ids, lexical, int(p), rule)
        if seg is not None:
            found.append((seg[1] - seg[0], int(p), seg[0]))
    if not found:
        return None
    longest = max(f[0] for f in found)
    span, p, a = min((f for f in found if f[0] >= 0.9 * longest), key=lambda f: f[1])
    e = a + span
    a = _align_start(text, sc, a, e, p, rule)
    return _make_loop(text, ids, sc, a, e, p, rule)


def _period_counts(pos: np.ndarray, dist: np.ndarray, max_p: int, rule: _LoopRule) -> np.ndarray:
    """For each period p, the most trigram recurrences at distance p inside one block of text.

    Counting per block rather than over the whole text keeps the candidate test local: a long
    clean text gathers many scattered recurrences at any distance, a loop gathers them in one
    place. Two block grids offset by half a block make sure a loop of the minimum size lies whole
    inside some block.
    """
    width = max_p + 1
    block = max(4096, 4 * max(rule.min_loop_tokens, rule.min_repeats * max_p))
    if int(pos.max()) < block:
        return np.bincount(dist, minlength=width)
    hist = np.zeros(width, dtype=np.int64)
    for shift in (0, block // 2):
        blk = (pos + shift) // block
        counts = np.bincount(blk * width + dist, minlength=(int(blk.max()) + 1) * width)
        hist = np.maximum(hist, counts.reshape(-1, width).max(axis=0))
    return hist


def _best_segment(
    ids: np.ndarray, lexical: np.ndarray, p: int, rule: _LoopRule
) -> tuple[int, int] | None:
    """The longest token stretch ``[a, e)`` repeating with period `p` under the rule, or None."""
    m = ids[:-p] == ids[p:]  # m[i]: token i equals token i + p
    need = max(rule.min_loop_tokens, rule.min_repeats * p)
    # Quick test: a loop makes most of some (need - p) consecutive comparisons match.
    w = need - p
    if m.size < w:
        return None
    n_match = np.zeros(m.size + 1, dtype=np.int64)
    np.cumsum(m, out=n_match[1:])
    if 2 * int((n_match[w:] - n_match[:-w]).max()) < w:
        return None
    k = int(math.floor(rule.max_variation * p + 1e-9))
    if k == 0:
        padded = np.concatenate(([False], m, [False]))
        edges = np.flatnonzero(padded[1:] != padded[:-1])
        a, b = edges[0::2], edges[1::2]  # m[a:b] all True
    else:
        miss = ~m
        trues = np.flatnonzero(m)
        if trues.size == 0:
            return None
        # Mismatches in the window of p positions ending at each mismatch; too many break a run.
        n_miss = np.zeros(m.size + 1, dtype=np.int64)
        np.cumsum(miss, out=n_miss[1:])
        bad = np.flatnonzero(miss)
        in_window = n_miss[bad + 1] - n_miss[np.maximum(bad + 1 - p, 0)]
        breaks = bad[in_window > k]
        seg_a = np.concatenate(([0], breaks + 1))
        seg_b = np.concatenate((breaks, [m.size]))
        wide = seg_b - seg_a >= max(1, p // 2)  # narrower ones cannot hold a useful stretch
        seg_a, seg_b = seg_a[wide], seg_b[wide]
        ia = np.searchsorted(trues, seg_a)
        ib = np.searchsorted(trues, seg_b) - 1
        keep = ia <= ib
        a, b = trues[ia[keep]], trues[ib[keep]] + 1
    # Stretches of repeats. One holding two whole copies or more must pass rules 5 and 6 on its
    # own; a shorter one (half a copy at least) can only extend a loop begun right before it.
    gap = k + p + 2  # longest break between two stretches of one loop (a token inserted or dropped)
    longer = b - a >= max(1, p // 2)
    a, b = a[longer], b[longer]
    solid = b - a >= p
    after_prev = np.zeros(a.size, dtype=bool)
    after_prev[1:] = a[1:] - b[:-1] <= gap
    useful = solid | after_prev
    if not solid.any() or int((b[useful] - a[useful] + p).sum()) < need:
        return None
    n_lexical = np.zeros(lexical.size + 1, dtype=np.int64)
    np.cumsum(lexical, out=n_lexical[1:])
    lexical_ok = 2 * (n_lexical[a + p] - n_lexical[a]) >= p
    chains: list[list[int]] = []
    open_chain = False
    for j in np.flatnonzero(useful).tolist():
        start, end = int(a[j]), int(b[j] + p)
        ok = bool(lexical_ok[j]) and (
            not solid[j] or _copies_agree(ids, start, end, p, rule, exact=(k == 0))
        )
        if not ok:
            open_chain = False
            continue
        # A copy with a token inserted or dropped shifts the copies after it, which breaks the
        # comparison for about one unit; stretches split that way are joined again.
        joins = open_chain and start - (chains[-1][1] - p) <= gap
        if joins and _same_unit(ids, chains[-1][0], start, p, rule):
            chains[-1][1] = end
        elif solid[j]:
            chains.append([start, end])
            open_chain = True
        else:
            open_chain = False
    if not chains:
        return None
    good = [(e - s_, s_, e) for s_, e in chains if e - s_ >= need]
    if not good:
        return None
    _, start, end = max(good, key=lambda g: (g[0], -g[1]))
    return start, end


def _same_unit(ids: np.ndarray, a1: int, a2: int, p: int, rule: _LoopRule) -> bool:
    """Is the unit at `a2` a rotation of the unit at `a1`, up to the allowed variation?"""
    u1, u2 = ids[a1 : a1 + p], ids[a2 : a2 + p]
    rotations = u2[(np.arange(p)[:, None] + np.arange(p)[None, :]) % p]  # row r: u2 rolled by r
    agree = (rotations == u1[None, :]).sum(axis=1).max()
    return bool(agree >= p - math.floor(rule.max_variation * p + 1e-9))


def _copies_agree(ids: np.ndarray, a: int, e: int, p: int, rule: _LoopRule, *, exact: bool) -> bool:
    """Rule 5 (one token fills most copies of each unit position) on the stretch ``[a, e)``."""
    if exact:
        return True
    c = (e - a) // p
    copies = ids[a : a + c * p].reshape(c, p)
    s = np.sort(copies, axis=0)
    # A token filling >= half a column is one of the column's two middle values once sorted.
    lower, upper = (copies == s[(c - 1) // 2]).sum(axis=0), (copies == s[c // 2]).sum(axis=0)
    share = np.maximum(lower, upper) / c
    return bool(share.min() >= rule.min_consensus)


def _align_start(text: str, sc: _Scan, a: int, e: int, p: int, rule: _LoopRule) -> int:
    """Move the loop start forward onto the first clause start inside the first copy, so that the
    unit reads "I like it." rather than "it. I like" (only when the rule still holds after it)."""
    starts, ends = sc.starts, sc.ends
    if a == 0 or _CLAUSE_BREAKS.intersection(text[int(ends[a - 1]) : int(starts[a])]):
        return a
    for j in range(a + 1, min(a + p, e)):
        if _CLAUSE_BREAKS.intersection(text[int(ends[j - 1]) : int(starts[j])]):
            if e - j >= max(rule.min_loop_tokens, rule.min_repeats * p):
                return j
            return a
    return a


def _modal_copy(ids: np.ndarray, a: int, e: int, p: int) -> int:
    """Index of the first whole copy equal to the majority copy (0 when none is)."""
    c = (e - a) // p
    copies = ids[a : a + c * p].reshape(c, p)
    s = np.sort(copies, axis=0)
    lo, hi = s[(c - 1) // 2], s[c // 2]
    mode = np.where((copies == lo).sum(axis=0) >= (copies == hi).sum(axis=0), lo, hi)
    match = np.flatnonzero((copies == mode).all(axis=1))
    return int(match[0]) if match.size else 0


def _make_loop(
    text: str, ids: np.ndarray, sc: _Scan, a: int, e: int, p: int, rule: _LoopRule
) -> Loop | None:
    starts, ends = sc.starts, sc.ends
    start_char, end_char = int(starts[a]), int(ends[e - 1])
    total = int(ends[-1]) - int(starts[0])
    coverage = (end_char - start_char) / total if total > 0 else 0.0
    if coverage < rule.min_coverage:
        return None
    first = a + p * _modal_copy(ids, a, e, p)
    unit_end = int(starts[first + p]) if first + p < starts.size else end_char
    return Loop(
        unit=text[int(starts[first]) : unit_end].strip(),
        n_repeats=(e - a) // p,
        unit_tokens=p,
        start_char=start_char,
        end_char=end_char,
        coverage_share=float(coverage),
    )


# --- the whole set ---------------------------------------------------------------------------


def repetition_stats(
    texts: Sequence[str],
    ids: Sequence[str] | None = None,
    *,
    min_repeats: int = MIN_REPEATS,
    min_unit_tokens: int = MIN_UNIT_TOKENS,
    max_unit_tokens: int = MAX_UNIT_TOKENS,
    min_loop_tokens: int = MIN_LOOP_TOKENS,
    min_coverage: float = MIN_COVERAGE,
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
        min_repeats, min_unit_tokens, max_unit_tokens, min_loop_tokens, min_coverage, max_variation,
        min_consensus,
    )
    opening_tokens = _check_int("opening_tokens", opening_tokens, 1)
    top_openings = _check_int("top_openings", top_openings, 1)
    max_loops_listed = _check_int("max_loops_listed", max_loops_listed, 0)

    scans = [_scan(t) for t in texts]
    records: list[LoopRecord] = []
    for text, name, sc in zip(texts, names, scans):
        loop = _find_loop(text, sc, rule)
        if loop is not None:
            records.append(LoopRecord(id=name, **loop.__dict__))
    records.sort(key=lambda r: (-r.coverage_share, -r.n_repeats, r.id))
    n = len(texts)
    seq_rep, dup_share = _ngram_scores(scans)
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
