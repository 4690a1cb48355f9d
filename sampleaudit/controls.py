"""Control characters in user and sample text, written out as visible escapes where rendered.

In a terminal, C0/C1 controls move the cursor or recolour what follows; anywhere, bidirectional
embeddings, overrides and isolates reorder the text after them (the "Trojan Source" trick). Both
are shown as escapes such as \\x1b or \\u202e instead of being passed through.
"""

from __future__ import annotations

import re

_BIDI = "\u202a-\u202e\u2066-\u2069"  # embeddings, overrides, isolates
# One terminal line: every control (newline and tab too), the bidi controls and the marks.
_NOT_FOR_TERMINAL = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}\u061c\u200e\u200f]")
# A page (HTML, PDF): tab, newline and carriage return keep their layout; the directional marks
# (LRM, RLM, ALM) stay, as they only settle the direction of neutral characters in RTL text.
_NOT_FOR_PAGE = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_BIDI}]")


def _escape(match: re.Match) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def for_terminal(text: str) -> str:
    """`text` on one terminal line: controls and bidi characters written as escapes (\\x1b, \\n)."""
    return _NOT_FOR_TERMINAL.sub(_escape, text)


def for_page(text: str) -> str:
    """`text` for a report page: controls other than tab/newline and bidi overrides escaped."""
    return _NOT_FOR_PAGE.sub(_escape, text)
