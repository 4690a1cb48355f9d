"""`sampleaudit probe` and `sampleaudit probe report`: arguments and runners (the main CLI wires them in).

Exit codes: 0 no new alert, 1 the trend rule opened an alert today, 2 bad input, a day already
recorded, or the history's lock held by another run past --lock-timeout (nothing recorded).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date as _date
from pathlib import Path

from ..cliopts import add_embed_options
from ..errors import InputError

EXAMPLE = (
    "example:\n"
    "  sampleaudit probe --model /ckpt/latest --prompts probes.jsonl --history /var/lib/sampleaudit/probes.db "
    "--out /srv/reports/probe\n"
    "  sampleaudit probe --samples answers-2026-11-07.jsonl --date 2026-11-07 --history probes.db\n"
    "  sampleaudit probe report --history probes.db --out reports/probe-trend")


def _add_trend_options(p: argparse.ArgumentParser) -> None:
    from .trend import TrendRule

    d = TrendRule()
    g = p.add_argument_group("trend rule (see README: the probe's trend rule)")
    g.add_argument("--n-rises", type=int, default=d.n_rises, metavar="N",
                   help="alert after N consecutive rises beyond the noise margin (default: %(default)s)")
    g.add_argument("--rise-z", type=float, default=d.rise_z, metavar="Z",
                   help="a rise counts when it exceeds Z times the bootstrap sd of the day's change "
                   "(default: %(default)s)")
    g.add_argument("--jump-z", type=float, default=d.jump_z, metavar="Z",
                   help="alert at once on a single rise beyond Z sd (default: %(default)s)")
    g.add_argument("--cusum-k", type=float, default=d.cusum_k, metavar="K", help="CUSUM slack per day, in sd "
                   "(default: %(default)s)")
    g.add_argument("--cusum-h", type=float, default=d.cusum_h, metavar="H", help="CUSUM limit, in sd "
                   "(default: %(default)s)")
    g.add_argument("--shift-days", type=int, default=d.shift_days, metavar="M",
                   help="the level-shift trigger compares the mean of the last M days with the M before "
                   "(default: %(default)s)")
    g.add_argument("--shift-z", type=float, default=d.shift_z, metavar="Z",
                   help="alert when that difference exceeds Z times its sd (default: %(default)s)")


def _rule(args):
    from .trend import TrendRule

    return TrendRule(n_rises=args.n_rises, rise_z=args.rise_z, jump_z=args.jump_z, cusum_k=args.cusum_k,
                     cusum_h=args.cusum_h, shift_days=args.shift_days, shift_z=args.shift_z)


def add_probe_parser(subparsers) -> argparse.ArgumentParser:
    """Add `probe` (and its `report`) to `subparsers`."""
    from ..generate.cli import add_generation_options

    fmt = argparse.RawDescriptionHelpFormatter
    p = subparsers.add_parser(
        "probe", help="daily probe: record today's answers to fixed prompts, alert on a rising similarity",
        formatter_class=fmt,
        description="Record one day (--date, default today) of answers to fixed probe prompts in an SQLite "
        "history: generated from --model, or read from --samples. Computes the day's figures (mean similarity "
        "among the answers, high-similarity share, loop share, drift from the reference day, with intervals) "
        "and applies the trend rule; on a new alert exits 1, names the checkpoint to roll back to, prints one "
        "JSON line with --json and POSTs it to --webhook. `sampleaudit probe report` writes the trend report.",
        epilog=EXAMPLE + "\n\nExit codes: 0 no new alert, 1 a new alert today, 2 bad input, the day already "
        "recorded (see --replace) or the history locked by another run past --lock-timeout.")
    src = p.add_argument_group("the day's answers")
    src.add_argument("--model", metavar="PATH", help="checkpoint to generate today's answers from (folder, .gguf); "
                     "they are archived in HISTORY.answers/DATE.jsonl")
    src.add_argument("--samples", metavar="FILE", help="today's answers, already generated (JSONL/CSV/Parquet with "
                     "prompt and text)")
    src.add_argument("--checkpoint-id", metavar="ID", help="name of the checkpoint the answers came from (default: "
                     "from --model, its folder and a hash of its config and weights; with --samples, the file's "
                     "\"checkpoint\" field)")
    p.add_argument("--history", metavar="DB", help="the SQLite history file (created when missing)")
    p.add_argument("--date", metavar="YYYY-MM-DD", help="the day recorded (default: today)")
    p.add_argument("--reference-date", metavar="YYYY-MM-DD",
                   help="day that drift is measured from (default: the first recorded day)")
    p.add_argument("--replace", action="store_true", help="record a day again (the earlier run is kept, superseded)")
    p.add_argument("--out", metavar="DIR", help="also write the trend report (HTML, PDF) into DIR")
    p.add_argument("--json", action="store_true", help="print the verdict as one line of JSON on stdout")
    p.add_argument("--webhook", metavar="URL", help="POST the verdict's JSON here on an alert and when it clears")
    p.add_argument("--webhook-timeout", type=float, default=10.0, metavar="S",
                   help="seconds per webhook attempt (one retry) (default: %(default)s)")
    p.add_argument("--lock-timeout", type=float, default=600.0, metavar="S",
                   help="seconds to wait for another run holding the history's lock (default: %(default)s)")
    p.add_argument("--gen-batch-size", type=int, metavar="N", help="answers decoded together with --model")
    p.add_argument("--config", metavar="FILE", help="TOML file of options (embedder, device, cache)")
    add_embed_options(p, embedder_help="sentence-transformers model (default: all-MiniLM-L6-v2); the history "
                      "refuses another one", device_help="auto (default), cpu, cuda, cuda:N, mps")
    p.add_argument("--threshold", type=float, help="cosine that makes two answers highly similar (default 0.9)")
    p.add_argument("--seed", type=int, help="seed of generation and of the bootstrap (default 0)")
    p.add_argument("-q", "--quiet", action="store_true", help="no log lines on stderr")
    _add_trend_options(p)
    add_generation_options(p)
    p.set_defaults(fail_on=None, probe_command=None)

    sub = p.add_subparsers(dest="probe_command", metavar="report")
    r = sub.add_parser(
        "report", help="write the probe's trend report from its history", formatter_class=fmt,
        description="Write the trend report (probe.html, probe.pdf): the daily figures per prompt and overall with "
        "their intervals, alert days, each day's checkpoint, and the last days' answers side by side.",
        epilog="example:\n  sampleaudit probe report --history probes.db --out reports/probe-trend")
    r.add_argument("--history", required=True, metavar="DB", help="the SQLite history file")
    r.add_argument("--out", required=True, metavar="DIR", help="output folder")
    r.add_argument("--format", type=lambda v: [f.strip() for f in v.split(",") if f.strip()], metavar="LIST",
                   help="html,pdf (default: both when WeasyPrint is installed, else html)")
    r.add_argument("--last", type=int, default=3, metavar="N", help="days whose answers are shown side by side "
                   "(default: %(default)s)")
    _add_trend_options(r)
    return p


def _log(quiet: bool):
    from ..controls import for_terminal

    if quiet:
        return lambda _m: None
    return lambda m: print(f"sampleaudit: {for_terminal(m)}", file=sys.stderr, flush=True)


def _formats(value) -> list[str]:
    from ..report import check_formats

    formats = check_formats(value, json=False)
    return formats


def _write_report(history: str, out: str, formats: list[str], rule, last: int, log, say) -> None:
    from ..fileio import OutputLock, check_output_dir, write_outputs
    from .history import History
    from .report import build_probe_outputs

    check_output_dir(out)
    with OutputLock(out), History(history, create=False) as h:
        outputs = build_probe_outputs(h, formats, rule=rule, last=last, warn=log)
    for path in write_outputs(out, outputs):
        say(f"wrote {path}")


def run_probe_report(args) -> int:
    if args.last < 1:
        raise InputError(f"--last must be a positive integer; got {args.last}")
    formats = _formats(args.format)
    if not Path(args.history).is_file():
        raise InputError("no probe history here; record a day first with sampleaudit probe", path=args.history)
    _write_report(args.history, args.out, formats, _rule(args), args.last, _log(False), print)
    return 0


def _producer(args, date: str, log):
    """The callable that generates today's answers under the lock (--model)."""
    from ..generate import generate, generation_provenance
    from ..generate.cli import options_from_args
    from ..samples import load_samples
    from .run import checkpoint_from_generation

    out = Path(args.history).with_name(Path(args.history).name + ".answers") / f"{date}.jsonl"
    per_prompt = args.per_prompt if args.per_prompt is not None or args.n is not None else 8

    def produce():
        kwargs = dict(prompts=args.prompts, n=args.n, per_prompt=per_prompt, out=out,
                      options=options_from_args(args), backend=args.backend, device=args.device, dtype=args.dtype,
                      batch_size=args.gen_batch_size, trust_remote_code=args.trust_remote_code,
                      progress=not args.quiet and sys.stderr.isatty(), log=log)
        log(f"generating today's answers from {args.model} into {out}")
        try:
            result = generate(args.model, overwrite=args.replace, **kwargs)
        except InputError as exc:
            if "was started with other arguments" not in str(exc) and "has no" not in str(exc):
                raise
            log(f"{out} holds answers made with other settings (an unrecorded earlier run); generating again")
            result = generate(args.model, overwrite=True, **kwargs)
        checkpoint = checkpoint_from_generation(args.model, generation_provenance(result.meta_path))
        if args.checkpoint_id:
            checkpoint = type(checkpoint)(args.checkpoint_id, checkpoint.path, checkpoint.config_sha256,
                                          checkpoint.weights_fingerprint)
        return load_samples(result.path), checkpoint

    return produce, {"generated": str(out), "model": args.model}


def run_probe(args, config_of) -> int:
    """Run `sampleaudit probe` (config_of: the main CLI's args -> Config). Returns the exit code."""
    from ..controls import for_terminal
    from ..embed import EmbeddingCache, check_device
    from ..metrics.probe import DEFAULT_THRESHOLD
    from .run import Checkpoint, check_date, check_webhook, checkpoint_from_samples, probe, send_webhook

    if args.probe_command == "report":
        return run_probe_report(args)
    if not args.history:
        raise InputError("--history is required: the SQLite file that keeps the days (e.g. probes.db)")
    if bool(args.model) == bool(args.samples):
        raise InputError("give exactly one of --model (generate today's answers) or --samples (read them)")
    if args.samples and args.prompts:
        raise InputError("--prompts goes with --model; with --samples the prompts come from the file")
    date = check_date(args.date) if args.date else _date.today().isoformat()
    if args.reference_date:
        check_date(args.reference_date, "--reference-date")
    check_webhook(args.webhook)
    if args.webhook_timeout <= 0 or args.lock_timeout < 0:
        raise InputError("--webhook-timeout must be > 0 and --lock-timeout >= 0 (seconds)")
    rule = _rule(args)
    config = config_of(args)
    formats = _formats(None) if args.out else None
    if args.out:
        from ..fileio import check_output_dir

        check_output_dir(args.out)
    check_device(config.embed.device)
    log = _log(args.quiet)
    if args.samples:
        from ..samples import load_samples

        answers = load_samples(args.samples, max_chars=config.input.max_chars)
        checkpoint = Checkpoint(args.checkpoint_id) if args.checkpoint_id else checkpoint_from_samples(args.samples)
        source = {}
    else:
        answers, source = _producer(args, date, log)
        checkpoint = None
    from ..embed import embedder_from_config

    embedder = embedder_from_config(config.embed)(progress=not args.quiet and sys.stderr.isatty())
    cache = EmbeddingCache(config.embed.cache_dir, warn=log) if config.embed.cache else None
    threshold = config.similarity.threshold if config.similarity.threshold is not None else DEFAULT_THRESHOLD
    outcome = probe(answers, history=args.history, date=date, embedder=embedder, checkpoint=checkpoint,
                    reference_date=args.reference_date, replace=args.replace, rule=rule, threshold=threshold,
                    seed=config.seed, cache=cache, lock_timeout=args.lock_timeout, source=source)
    log(f"recorded {date} ({outcome.day.n_answers} answers, checkpoint {outcome.day.checkpoint_id}) in {args.history}")
    for w in outcome.warnings:
        print(for_terminal(f"sampleaudit: warning: {w}"), file=sys.stderr)
    payload = outcome.payload
    if args.webhook and payload["event"] in ("alert", "cleared"):
        ok, detail = send_webhook(args.webhook, payload, timeout=args.webhook_timeout)
        from .history import History

        try:
            with History(args.history, create=False) as h:
                h.record_notification(outcome.day.run_id, event=payload["event"], url=args.webhook, ok=ok,
                                      detail=detail)
        except Exception as exc:  # the day is recorded; a note that cannot be written must not hide the alert
            log(f"could not note the webhook in the history: {exc}")
        payload["webhook"] = {"url": args.webhook, "ok": ok, "detail": detail}
        if not ok:
            print(for_terminal(f"sampleaudit: warning: webhook {args.webhook} failed: {detail}; the day is "
                               "recorded"), file=sys.stderr)
    if args.out:  # the day is recorded: a report that cannot be written must not hide the verdict
        try:
            _write_report(args.history, args.out, formats, rule, 3, log, log)
        except Exception as exc:
            print(for_terminal(f"sampleaudit: warning: the trend report could not be written to {args.out} "
                               f"({' '.join(str(exc).split())[:200]}); the day is recorded"), file=sys.stderr)
    if args.json:
        print(json.dumps(payload, ensure_ascii=True, sort_keys=True))
    else:
        print(for_terminal(payload["message"]))
    return 1 if outcome.alert else 0
