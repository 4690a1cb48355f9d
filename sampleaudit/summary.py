"""The short terminal summary printed after an audit (read from the results only)."""

from __future__ import annotations

import pandas as pd

from .controls import for_terminal
from .figures import BY_NAME
from .report.context import recommendation
from .results import AuditResult


def _value(ch) -> str:
    figure = BY_NAME.get(ch.figure or "")
    return figure.format(ch.value) if figure else f"{ch.value:.3g}"


def terminal_summary(result: AuditResult) -> str:
    rank_of = {name: i + 1 for i, name in enumerate(result.ranking)}
    rows = []
    for c in sorted(result.checkpoints, key=lambda c: rank_of[c.name]):
        row = {"rank": rank_of[c.name], "checkpoint": for_terminal(c.name), "samples": c.n_samples,
               "status": c.status.upper()}
        row.update({for_terminal(ch.name): f"{ch.status} {_value(ch)}" for ch in c.checks})
        rows.append(row)
    table = pd.DataFrame(rows).to_string(index=False)
    lines = [table, "", for_terminal(recommendation(result))]
    lines += [f"warning: {for_terminal(w)}" for w in result.all_warnings()]
    return "\n".join(lines)
