"""Regenerate the README's generated blocks (the table of headline figures, from sampleaudit/figures.py).

Run from the repository root: python scripts/update_readme.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from sampleaudit.figures import README_END, README_START, readme_table

README = Path(__file__).resolve().parent.parent / "README.md"


def main() -> int:
    text = README.read_text(encoding="utf-8")
    block = re.compile(re.escape(README_START) + r".*?" + re.escape(README_END), re.S)
    if not block.search(text):
        print(f"README.md has no block between {README_START!r} and {README_END!r}", file=sys.stderr)
        return 1
    new = block.sub(lambda _m: readme_table(), text)
    if new != text:
        README.write_text(new, encoding="utf-8")
        print("README.md: table of figures updated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
