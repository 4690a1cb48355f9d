"""Do two audits of the same data tell the same story? (e.g. the demo embedded with two backends)

    python benchmarks/compare_demo_audits.py reports-torch/audit.json reports-openvino/audit.json

Compares the ranking, each checkpoint's status, verdict kind and check statuses, and every headline
figure of the registry (sampleaudit/figures.py): a figure with an interval must fall inside the
other audit's interval, both ways. Prints one line per difference and a summary; exits 0 when the
story is the same, 1 when it is not, 2 when a file cannot be read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sampleaudit.figures import FIGURES  # noqa: E402


def _figure(checkpoint: dict, figure) -> tuple[float | None, tuple[float, float] | None]:
    section = checkpoint.get(figure.section) or {}
    value = section.get(figure.name)
    interval = section.get(figure.name + "_interval") if figure.interval else None
    return value, (interval["low"], interval["high"]) if interval else None


def differences(a: dict, b: dict) -> tuple[list[str], list[str]]:
    """(differences, figure lines): what changes the story, and each figure side by side."""
    diffs, lines = [], []
    if a["ranking"] != b["ranking"]:
        diffs.append(f"ranking {a['ranking']} != {b['ranking']}")
    b_by_name = {c["name"]: c for c in b["checkpoints"]}
    for ca in a["checkpoints"]:
        cb = b_by_name.get(ca["name"])
        if cb is None:
            diffs.append(f"{ca['name']} is missing from the second audit")
            continue
        name = ca["name"]
        if ca["status"] != cb["status"]:
            diffs.append(f"{name}: status {ca['status']} != {cb['status']}")
        if (ca.get("verdict") or {}).get("kind") != (cb.get("verdict") or {}).get("kind"):
            diffs.append(f"{name}: verdict {(ca.get('verdict') or {}).get('kind')} != {(cb.get('verdict') or {}).get('kind')}")
        checks_b = {c["name"]: c["status"] for c in cb["checks"]}
        for check in ca["checks"]:
            if checks_b.get(check["name"]) != check["status"]:
                diffs.append(f"{name}: check {check['name']} {check['status']} != {checks_b.get(check['name'])}")
        for figure in FIGURES:
            va, ia = _figure(ca, figure)
            vb, ib = _figure(cb, figure)
            if va is None and vb is None:
                continue
            inside = ""
            if ia and ib and va is not None and vb is not None:
                ok = ia[0] <= vb <= ia[1] and ib[0] <= va <= ib[1]
                inside = "inside both intervals" if ok else "OUTSIDE an interval"
                if not ok:
                    diffs.append(f"{name}: {figure.name} {va} [{ia[0]}, {ia[1]}] vs {vb} [{ib[0]}, {ib[1]}]")
            lines.append(f"{name:12s} {figure.name:28s} {va!s:>10} {vb!s:>10} {inside}")
    return diffs, lines


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        a, b = (json.loads(Path(p).read_text(encoding="utf-8")) for p in argv)
    except (OSError, ValueError) as exc:
        print(f"compare_demo_audits: cannot read the audits ({exc})", file=sys.stderr)
        return 2
    print(f"first:  {a['embedder']}\nsecond: {b['embedder']}")
    diffs, lines = differences(a, b)
    print(f"{'checkpoint':12s} {'figure':28s} {'first':>10} {'second':>10}")
    print("\n".join(lines))
    for d in diffs:
        print("DIFFERENT:", d)
    print("same ranking, statuses, verdicts, checks and figures within intervals" if not diffs
          else f"{len(diffs)} difference(s)")
    return 0 if not diffs else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
