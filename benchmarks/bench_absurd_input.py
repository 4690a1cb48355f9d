"""Memory and time of reading absurd input: a file whose one line holds a 50 MB text.

Each case is loaded in a fresh process; it prints the process's peak RSS (resource.getrusage)
before and after load_samples, the growth as a multiple of the long line's size, and the time.
`--reader FILE` also runs every case with another samples.py (e.g. the previous reader, from
`git show main~1:sampleaudit/samples.py > /tmp/old_samples.py`) for a ratio measured in the same run.

    python benchmarks/bench_absurd_input.py [--mb 50] [--reader /tmp/old_samples.py]
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHUNK = 1 << 20

# Run in the child: import the reader, note the peak RSS so far, load, note it again.
CHILD = r"""
import importlib.util, json, resource, sys, time
sys.path.insert(0, sys.argv[1])
import sampleaudit.samples as samples
reader = sys.argv[3]
if reader:
    spec = importlib.util.spec_from_file_location("sampleaudit._bench_reader", reader)
    samples = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(samples)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
try:
    s = samples.load_samples(sys.argv[2])
    outcome = f"{len(s)} samples, longest kept {max(len(t) for t in s.texts):,} chars, " \
              f"{getattr(s, 'n_truncated', 'n/a')} cut"
except Exception as exc:
    outcome = f"{type(exc).__name__}: {getattr(exc, 'reason', str(exc))[:100]}"
seconds = time.perf_counter() - t0
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"before_kib": before, "after_kib": after, "seconds": seconds, "outcome": outcome}))
"""


def _write_jsonl(path: Path, piece: str, n_bytes: int, *, escaped: bool = False, compress: bool = False) -> int:
    """A short line, one line whose text is `piece` repeated to about n_bytes, a short line; returns
    the size in bytes of the long line's text."""
    opener = gzip.open if compress else open
    unit = (json.dumps(piece) if escaped else json.dumps(piece, ensure_ascii=False))[1:-1].encode("utf-8")
    block = unit * max(1, CHUNK // len(unit))
    written = 0
    with opener(path, "wb") as f:
        f.write(b'{"text": "a normal sample"}\n')
        f.write(b'{"id": "huge", "text": "')
        while written < n_bytes:
            f.write(block)
            written += len(block)
        f.write(b'"}\n{"text": "another normal sample"}\n')
    return written


def _write_csv(path: Path, n_bytes: int) -> int:
    block = b"x" * CHUNK
    written = 0
    with open(path, "wb") as f:
        f.write(b"id,text\n1,normal\n2,\"")
        while written < n_bytes:
            f.write(block)
            written += len(block)
        f.write(b'"\n3,normal\n')
    return written


def _write_many(path: Path, n_bytes: int) -> int:
    """Ordinary samples of about 100 bytes each, n_bytes in all; returns the file's size."""
    written = 0
    with open(path, "wb") as f:
        i = 0
        while written < n_bytes:
            record = {"id": i, "text": f"sample {i}: " + "an ordinary generated sentence " * 3}
            line = json.dumps(record).encode() + b"\n"
            f.write(line)
            written += len(line)
            i += 1
    return written


def _run(path: Path, reader: str | None) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), str(path), reader or ""],
                         capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"the measuring process failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="size of the long line in MB (default 50)")
    parser.add_argument("--reader", help="another samples.py to measure in the same run, for a ratio")
    args = parser.parse_args()
    n_bytes = int(args.mb * 1_000_000)
    with tempfile.TemporaryDirectory(prefix="sampleaudit-bench-") as tmp:
        folder = Path(tmp)
        cases = [
            ("JSONL, ASCII text", folder / "ascii.jsonl", lambda p: _write_jsonl(p, "loop ", n_bytes)),
            ("JSONL.gz, ASCII text", folder / "ascii.jsonl.gz",
             lambda p: _write_jsonl(p, "loop ", n_bytes, compress=True)),
            ("JSONL, Chinese UTF-8", folder / "cjk.jsonl",
             lambda p: _write_jsonl(p, "\u6a21\u578b\u8f93\u51fa", n_bytes)),
            ("JSONL, \\u escapes", folder / "escaped.jsonl",
             lambda p: _write_jsonl(p, "\u6a21\u578b", n_bytes, escaped=True)),
            ("CSV, one quoted field", folder / "long.csv", lambda p: _write_csv(p, n_bytes)),
            ("JSONL, 100-byte lines", folder / "many.jsonl", lambda p: _write_many(p, n_bytes)),
        ]
        readers = [("this reader", None)] + ([("--reader", args.reader)] if args.reader else [])
        print(f"one line of about {args.mb:g} MB (last case: a file of that size of ordinary lines); peak RSS in "
              "MiB (ru_maxrss), growth = after - before, x size = growth / the line's (file's) size")
        print(f"{'case':24} {'reader':12} {'size MB':>8} {'before':>7} {'after':>7} {'growth':>7} "
              f"{'x size':>7} {'time s':>7}  outcome")
        for label, path, write in cases:
            line_bytes = write(path)
            growth = {}
            for reader_label, reader in readers:
                r = _run(path, reader)
                grow = (r["after_kib"] - r["before_kib"]) / 1024
                growth[reader_label] = grow
                print(f"{label:24} {reader_label:12} {line_bytes / 1e6:8.1f} {r['before_kib'] / 1024:7.0f} "
                      f"{r['after_kib'] / 1024:7.0f} {grow:7.0f} {grow * 1024 * 1024 / line_bytes:7.2f} "
                      f"{r['seconds']:7.2f}  {r['outcome']}")
            if len(growth) == 2 and growth["--reader"] > 0:
                print(f"{'':24} {'ratio':12} growth this / --reader = {growth['this reader'] / growth['--reader']:.2f}")
            path.unlink()


if __name__ == "__main__":
    main()
