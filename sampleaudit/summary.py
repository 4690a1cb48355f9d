"""The short terminal summary printed after an audit (read from the results only)."""

from __future__ import annotations

import pandas as pd

from .report.context import recommendation
from .results import AuditResult
from .controls import for_terminal


def terminal_summary(result: AuditResult) -> str:
    rank_of = {name: i + 1 for i, name in enumerate(result.ranking)}
    rows = []
    for c in sorted(result.checkpoints, key=lambda c: rank_of[c.name]):
        row = {"rank": rank_of[c.name], "checkpoint": for_terminal(c.name), "samples": c.n_samples,
               "status": c.status.upper()}
        row.update({for_terminal(ch.name): f"{ch.status} {ch.value:.1%}" for ch in c.checks})
        rows.append(row)
    table = pd.DataFrame(rows).to_string(index=False)
    lines = [table, "", for_terminal(recommendation(result))]
    lines += [f"warning: {for_terminal(w)}" for w in result.warnings]
    return "\n".join(lines)
