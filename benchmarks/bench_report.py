#!/usr/bin/env python3
"""Size of report.html and time to render report.pdf for 5 checkpoints of 1,000 samples.

    python benchmarks/bench_report.py [--out DIR] [--repeat N]

The five checkpoints are built from data_samples/ (ckpt-20k, ckpt-28k, ckpt-35k, plus two more:
one with looped texts mixed in, one a half-and-half mix of 20k and 35k), and one sample is a
single 100,000-character line. They are embedded with the deterministic HashingEmbedder, so the
audit itself takes seconds; what is measured is the renderer. Targets: HTML < 5 MB, PDF < 30 s.
Prints the measured figures and the ratio to each target.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data_samples"
HTML_LIMIT_BYTES = 5_000_000
PDF_LIMIT_SECONDS = 30.0


def _records(name: str) -> list[dict]:
    lines = (DATA / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _sets():
    from sampleaudit.samples import SampleSet

    def make(name, records):
        return SampleSet.from_texts([r["text"] for r in records], name=name,
                                    ids=[f"{name}-{i:04d}" for i in range(len(records))],
                                    prompts=[r.get("prompt") for r in records])

    a, b, c = _records("ckpt-20k"), _records("ckpt-28k"), _records("ckpt-35k")
    looped = [dict(r, text=(r["text"].split(". ")[0] + ". ") * 12) if i % 4 == 0 else r for i, r in enumerate(b)]
    mixed = [a[i] if i % 2 else c[i] for i in range(1000)]
    a = [dict(r, text="x" * 100_000) if i == 0 else r for i, r in enumerate(a)]
    sets = [make("ckpt-20k", a), make("ckpt-28k", b), make("ckpt-35k", c), make("ckpt-40k", looped),
            make("ckpt-45k", mixed)]
    base = [json.loads(line) for line in (DATA / "baseline.jsonl").read_text(encoding="utf-8").splitlines()]
    return sets, make("baseline", base)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="also write report.html and report.pdf here")
    parser.add_argument("--repeat", type=int, default=1, help="PDF renders to time (the best is reported)")
    args = parser.parse_args()

    from sampleaudit import audit
    from sampleaudit.embed.hashing import HashingEmbedder
    from sampleaudit.report.html import render_html
    from sampleaudit.report.pdf import pdf_available, render_pdf

    embedder = HashingEmbedder(dim=384)
    sets, base = _sets()
    started = time.perf_counter()
    result = audit(sets, baseline=base, embedder=embedder)
    audit_s = time.perf_counter() - started
    print(f"audit (hashing embedder, 5 x {len(sets[0]):,} samples, baseline {len(base):,}): {audit_s:.1f} s")

    started = time.perf_counter()
    html = render_html(result)
    html_s = time.perf_counter() - started
    size = len(html.encode("utf-8"))
    print(f"report.html: {size / 1e6:.2f} MB in {html_s:.1f} s "
          f"({size / HTML_LIMIT_BYTES:.0%} of the {HTML_LIMIT_BYTES / 1e6:.0f} MB limit)")

    if not pdf_available():
        print("report.pdf: skipped (WeasyPrint is not installed)")
        return 0
    times, pdf = [], b""
    for _ in range(max(1, args.repeat)):
        started = time.perf_counter()
        pdf = render_pdf(result, html=html)
        times.append(time.perf_counter() - started)
    import io

    from pypdf import PdfReader

    pages = len(PdfReader(io.BytesIO(pdf)).pages)
    best = min(times)
    print(f"report.pdf: {len(pdf) / 1e6:.2f} MB, {pages} pages, rendered in {best:.1f} s "
          f"({best / PDF_LIMIT_SECONDS:.0%} of the {PDF_LIMIT_SECONDS:.0f} s limit; HTML + PDF {html_s + best:.1f} s)")
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench_report_"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.html").write_text(html, encoding="utf-8")
    (out / "report.pdf").write_bytes(pdf)
    print(f"written: {out}/report.html, {out}/report.pdf")
    ok = size < HTML_LIMIT_BYTES and best < PDF_LIMIT_SECONDS
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
