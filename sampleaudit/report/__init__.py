"""Renderers: AuditResult -> audit.json, report.html. They read results only, never recompute."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..errors import InputError
from ..fileio import write_atomic
from ..results import AuditResult, to_json

FORMATS = ("json", "html")


def render(result: AuditResult, out_dir: str | Path, *, formats: Iterable[str] = FORMATS) -> list[Path]:
    """Write the chosen formats into `out_dir`; every file is built in memory, then renamed in."""
    formats = list(dict.fromkeys(formats))
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise InputError(f"unknown report format {unknown[0]!r}; choose from {', '.join(FORMATS)}")
    outputs: dict[str, str | bytes] = {}
    if "json" in formats:
        outputs["audit.json"] = to_json(result)
    if "html" in formats:
        from .html import render_html

        outputs["report.html"] = render_html(result)
    return [write_atomic(Path(out_dir) / name, data) for name, data in outputs.items()]
