"""Text from users and samples made safe for one terminal line."""

from __future__ import annotations

import re

# Control characters (C0, DEL, C1) and bidirectional overrides: in a terminal they move the
# cursor, recolour or reorder what follows, so user-supplied text shows them as escapes.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def for_terminal(text: str) -> str:
    """`text` on one terminal line: control and bidi characters written as escapes (\\x1b, \\n)."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
