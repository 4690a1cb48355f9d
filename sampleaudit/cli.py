"""Command-line interface: a thin layer over the Python API.

Exit codes: 0 every check passes, 1 a check reached --fail-on, 2 bad input or usage, 3 an
unexpected internal error (one line naming the file that holds the traceback).

Every command validates what it can before the expensive work starts (options, config, report
formats, the device, the output folder), holds a lock on the output folder while it runs, and
writes its outputs as one set at the end.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from . import __version__
from .controls import for_terminal
from .errors import InputError, SampleAuditError
from .generate.cli import add_generate_parser, add_generation_options, run_generate
from .cliopts import add_embed_options
from .probe.cli import add_probe_parser, run_probe

EXIT_OK, EXIT_FAILED_CHECK, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
# command-line flag of each setting it overrides (errors and provenance name the flag)
FLAGS = {
    "seed": "--seed", "fail_on": "--fail-on", "similarity.threshold": "--threshold", "embed.model": "--embedder",
    "embed.device": "--device", "embed.batch_size": "--batch-size", "embed.cache": "--no-cache",
}


def _log(quiet: bool):
    if quiet:
        return lambda _m: None
    return lambda m: print(f"sampleaudit: {for_terminal(m)}", file=sys.stderr, flush=True)


def _formats(value: str) -> list[str]:
    return [f.strip() for f in value.split(",") if f.strip()]


def _add_audit_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="reports", metavar="DIR", help="output folder (default: %(default)s)")
    p.add_argument("--config", metavar="FILE", help="TOML file of thresholds and options (see README)")
    add_embed_options(p, embedder_help="sentence-transformers model name or local folder (default: "
                      "all-MiniLM-L6-v2, shipped offline)",
                      device_help="auto (default: cuda > mps > cpu), cpu, cuda, cuda:N, mps")
    p.add_argument("--threshold", type=float, help="similarity threshold (default: calibrated from the baseline)")
    p.add_argument("--seed", type=int, help="seed of every random choice (default 0)")
    p.add_argument("--fail-on", choices=["warn", "fail", "never"],
                   help="status that makes the exit code 1 (default: fail)")
    p.add_argument("--format", type=_formats, default=None, metavar="LIST",
                   help="comma-separated outputs: json,html,pdf (default: all three when WeasyPrint is "
                   "installed, else json,html)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars or log lines")


def _add_executor_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("where the per-checkpoint work runs (see README, Sweeps)")
    g.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="local: this machine (default); ray: one Ray task per checkpoint "
                   "(pip install 'sampleaudit[ray]')")
    g.add_argument("--workers", type=int, default=1, metavar="N",
                   help="with --executor local: checkpoints analysed at once, in N processes (default: 1, in "
                   "this process)")
    g.add_argument("--ray-address", metavar="ADDR", help="the Ray cluster to connect to (auto: the one "
                   "`ray start --head` started here; default: $RAY_ADDRESS, else a local Ray on this machine)")
    g.add_argument("--cpus-per-worker", type=float, metavar="N", help="CPUs each Ray task asks for (default 1)")
    g.add_argument("--gpus-per-worker", type=float, metavar="N", help="GPUs each Ray task asks for (default 0)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sampleaudit",
        description="Is a trained generative model's output still diverse and sane? Audits samples for "
        "mode collapse, cluster coverage against a training-data baseline and repetition loops, and "
        "writes JSON, HTML and PDF reports.",
        epilog="Exit codes: 0 all checks pass, 1 a check failed (see --fail-on), 2 bad input or usage, "
        "3 an internal error (the message names the file with the traceback).",
    )
    parser.add_argument("--version", action="version", version=f"sampleaudit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    fmt = argparse.RawDescriptionHelpFormatter

    audit = sub.add_parser(
        "audit", help="audit checkpoint samples against a baseline", formatter_class=fmt,
        description="Audit one or more checkpoints' samples (JSONL, CSV, TSV or Parquet; .gz read "
        "transparently), optionally against a sample of the training data.",
        epilog="example:\n  sampleaudit audit runs/ckpt-20k.jsonl runs/ckpt-35k.jsonl "
        "--baseline data/train_sample.jsonl --out reports/run42\n"
        "  sampleaudit audit --model ckpts/step-20000 --model ckpts/step-35000 --prompts probes.jsonl -n 1000 "
        "--baseline data/train_sample.jsonl --out reports/cmp\n"
        "  sampleaudit audit runs/*.jsonl --baseline data/train.jsonl --out reports/sweep --executor ray "
        "--ray-address auto",
    )
    audit.add_argument("checkpoints", nargs="*", metavar="SAMPLES", help="one file of samples per checkpoint")
    audit.add_argument("--model", action="append", metavar="PATH",
                       help="a checkpoint to generate samples from (folder, .gguf or hub name), once per model; "
                       "samples go to OUT/samples/NAME.jsonl (resumable) and are audited with the files")
    audit.add_argument("--gen-batch-size", type=int, metavar="N",
                       help="samples decoded together with --model (default: 64 on CUDA, 8 on the CPU)")
    audit.add_argument("--baseline", metavar="FILE", help="a sample of the training data, the reference")
    audit.add_argument("--name", action="append", metavar="NAME",
                       help="checkpoint name, once per file in order (default: the file stem)")
    audit.add_argument("--text-column", default="text", metavar="COL",
                       help="column holding the text in CSV/TSV/Parquet files (default: %(default)s)")
    audit.add_argument("--skip-invalid", action="store_true",
                       help="skip invalid lines instead of stopping; their number is reported")
    _add_audit_options(audit)
    _add_executor_options(audit)
    add_generation_options(audit)
    add_generate_parser(sub)
    add_probe_parser(sub)

    report = sub.add_parser(
        "report", help="re-render reports from an audit.json without recomputing", formatter_class=fmt,
        description="Render report.html (and any other format) again from an existing audit.json.",
        epilog="example:\n  sampleaudit report reports/run42/audit.json --out reports/run42",
    )
    report.add_argument("audit_json", metavar="AUDIT_JSON")
    report.add_argument("--out", metavar="DIR", help="output folder (default: the folder of AUDIT_JSON)")
    report.add_argument("--format", type=_formats, default=None, metavar="LIST",
                        help="comma-separated outputs: json,html,pdf (default: html,pdf when WeasyPrint is "
                        "installed, else html)")

    compare = sub.add_parser(
        "compare", help="merge audits made at different times into one comparison; the release gate",
        formatter_class=fmt,
        description="Merge audit.json files of different checkpoints, audited at different times, into one "
        "comparative report and audit.json without re-embedding. They must share the embedder, the baseline "
        "file and every threshold (checked; otherwise exit 2 naming what differs). With --candidate it is a "
        "release gate: exit 1 when the candidate fails a check or ranks below --current.",
        epilog="example:\n  sampleaudit compare reports/week1/audit.json reports/today/audit.json "
        "--out reports/release --candidate ckpt-35k --current ckpt-20k",
    )
    compare.add_argument("audits", nargs="+", metavar="AUDIT_JSON", help="audit.json files to merge")
    compare.add_argument("--out", default="reports", metavar="DIR", help="output folder (default: %(default)s)")
    compare.add_argument("--candidate", metavar="NAME",
                         help="checkpoint to gate: exit 1 when it fails a check or ranks below --current")
    compare.add_argument("--current", metavar="NAME", help="the checkpoint deployed now (with --candidate)")
    compare.add_argument("--fail-on", choices=["warn", "fail"], help="status of a check that blocks (default: fail)")
    compare.add_argument("--format", type=_formats, default=None, metavar="LIST",
                         help="comma-separated outputs: json,html,pdf (default: all three when WeasyPrint is "
                         "installed, else json,html)")

    demo = sub.add_parser(
        "demo", help="audit the demo checkpoints in data_samples/ into reports/", formatter_class=fmt,
        description="Audit data_samples/ckpt-*.jsonl against data_samples/baseline.jsonl (run from the "
        "repository root). The demo exits 0 even though one checkpoint fails (that is its story) unless "
        "--fail-on is given.",
        epilog="example:\n  sampleaudit demo --out reports",
    )
    demo.add_argument("--data", default="data_samples", metavar="DIR", help="demo data folder (default: %(default)s)")
    _add_audit_options(demo)
    return parser


def _config(args):
    from .config import load_config

    config = load_config(args.config)
    flags = dict(FLAGS)
    if getattr(args, "fail_on_default", None):  # set by a command, not by the user's --fail-on
        flags["fail_on"] = args.fail_on_default
    return config.with_overrides(flags=flags, **{
        "seed": args.seed, "fail_on": args.fail_on, "similarity.threshold": args.threshold,
        "embed.model": args.embedder, "embed.device": args.device, "embed.batch_size": args.batch_size,
        "embed.cache": False if args.no_cache else None,
    })


def _write(out: str, outputs: dict) -> None:
    from .fileio import write_outputs

    for path in write_outputs(out, outputs):
        print(f"wrote {path}")


def _generation_specs(args, *, remote: bool, log) -> list[dict]:
    """The keyword arguments of sampleaudit.generate.generate for each --model (into OUT/samples/)."""
    from .generate.cli import options_from_args

    if args.n is None and args.per_prompt is None:
        raise InputError("--model needs -n (samples in total) or --per-prompt (samples per prompt)")
    specs = []
    for model in args.model:
        name = Path(str(model).rstrip("/")).name.removesuffix(".gguf") or str(model)
        specs.append(dict(model=model, prompts=args.prompts, n=args.n, per_prompt=args.per_prompt,
                          out=Path(args.out) / "samples" / f"{name}.jsonl", options=options_from_args(args),
                          backend=args.backend, name=name, device=args.device, dtype=args.dtype,
                          batch_size=args.gen_batch_size, trust_remote_code=args.trust_remote_code,
                          progress=not remote and not args.quiet and sys.stderr.isatty(),
                          log=None if remote else log))
    return specs


def _generate_all(args, log) -> tuple[list, dict[str, dict]]:
    """Generate the samples of every --model into OUT/samples/ (resumable); (sets, provenance by name)."""
    from .generate import generate, generation_provenance
    from .samples import load_samples

    sets, provenance = [], {}
    for spec in _generation_specs(args, remote=False, log=log):
        log(f"generating samples from {spec['model']}")
        result = generate(**spec)
        sets.append(load_samples(result.path, name=result.name))
        provenance[result.name] = generation_provenance(result.meta_path)
    return sets, provenance


def _executor(args):
    from .executors import make_executor

    return make_executor(getattr(args, "executor", "local"), workers=getattr(args, "workers", 1),
                         address=getattr(args, "ray_address", None), cpus=getattr(args, "cpus_per_worker", None),
                         gpus=getattr(args, "gpus_per_worker", None))


def _run_audit(args, checkpoint_paths: Sequence[str], baseline: str | None, names: Sequence[str] | None,
               text_column: str, skip_invalid: bool, argv: Sequence[str]) -> int:
    from . import embed
    from .checks import exit_code
    from .embed import check_device
    from .fileio import OutputLock, check_output_dir
    from .pipeline import audit
    from .report import build_outputs, check_formats
    from .samples import load_samples
    from .summary import terminal_summary

    config = _config(args)
    if names and len(names) != len(checkpoint_paths):
        raise InputError(f"--name was given {len(names)} time(s) for {len(checkpoint_paths)} checkpoint file(s); "
                         "give one --name per file, in order")
    formats = check_formats(args.format)
    check_device(config.embed.device)
    check_output_dir(args.out)
    executor = _executor(args)
    log = _log(args.quiet)
    with OutputLock(args.out):
        read = dict(text_column=text_column, skip_invalid=skip_invalid, max_chars=config.input.max_chars)
        sets = [load_samples(p, name=(names[i] if names else None), **read) for i, p in enumerate(checkpoint_paths)]
        base = load_samples(baseline, **read) if baseline else None
        models = getattr(args, "model", None)
        remote = not executor.in_process
        specs = _generation_specs(args, remote=True, log=log) if models and remote else []
        generated, generation = _generate_all(args, log) if models and not remote else ([], {})
        sets += [s.capped(config.input.max_chars) for s in generated]
        progress = not args.quiet and sys.stderr.isatty()
        # the workers build their own embedder (embed.load_embedder is looked up now, on the driver)
        factory = embed.embedder_from_config(config.embed)
        embedder = factory(progress=progress)
        result = audit(sets, baseline=base, config=config, embedder=embedder, log=log,
                       command=["sampleaudit", *argv], generation=generation, executor=executor,
                       embedder_factory=factory if remote else None, generate=specs, progress=progress)
        outputs = build_outputs(result, formats, warn=log)
        _write(args.out, outputs)
    print(terminal_summary(result))
    return exit_code(result.checkpoints, config.fail_on)


def _cmd_audit(args, argv) -> int:
    if not args.checkpoints and not args.model:
        raise InputError("give at least one file of samples or --model to generate them from")
    return _run_audit(args, args.checkpoints, args.baseline, args.name, args.text_column, args.skip_invalid, argv)


def _cmd_demo(args, argv) -> int:
    data = Path(args.data)
    checkpoints = sorted(str(p) for p in data.glob("ckpt-*.jsonl"))
    if not checkpoints or not (data / "baseline.jsonl").exists():
        raise InputError(f"no demo data (ckpt-*.jsonl and baseline.jsonl) in {data}; run from the repository "
                         "root or pass --data")
    if args.fail_on is None:
        args.fail_on, args.fail_on_default = "never", "the demo command's default"
    return _run_audit(args, checkpoints, str(data / "baseline.jsonl"), None, "text", False, argv)


def _cmd_report(args, argv) -> int:
    from .fileio import OutputLock, check_output_dir
    from .report import build_outputs, check_formats
    from .results import load_audit

    formats = check_formats(args.format, json=False)
    out = args.out or str(Path(args.audit_json).parent)
    check_output_dir(out)
    with OutputLock(out):
        result = load_audit(args.audit_json)
        _write(out, build_outputs(result, formats, warn=_log(False)))
    return EXIT_OK


def _cmd_compare(args, argv) -> int:
    from .checks import exit_code
    from .compare import merge_audits, release_gate
    from .fileio import OutputLock, check_output_dir
    from .report import build_outputs, check_formats
    from .results import load_audit
    from .summary import terminal_summary

    if args.current and not args.candidate:
        raise InputError("--current needs --candidate, the checkpoint to gate against it")
    formats = check_formats(args.format)
    check_output_dir(args.out)
    with OutputLock(args.out):
        result = merge_audits([load_audit(p) for p in args.audits], sources=args.audits,
                              command=["sampleaudit", *argv])
        gate = (release_gate(result, candidate=args.candidate, current=args.current, fail_on=args.fail_on or "fail")
                if args.candidate else None)  # unknown names are exit 2 before anything is written
        _write(args.out, build_outputs(result, formats, warn=_log(False)))
    print(terminal_summary(result))
    if gate is None:
        return exit_code(result.checkpoints, args.fail_on or "fail")
    code, reason = gate
    print(for_terminal(reason))
    return code


_COMMANDS = {"audit": _cmd_audit, "compare": _cmd_compare, "demo": _cmd_demo, "report": _cmd_report,
             "generate": lambda args, argv: run_generate(args), "probe": lambda args, argv: run_probe(args, _config)}


def _crash_report(exc: BaseException) -> str:
    """Write the traceback of an unexpected error to a file; return where (or why not)."""
    import os
    import tempfile
    import time
    import traceback

    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    name = f"crash-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.txt"
    from .embed import default_cache_dir

    for folder in (default_cache_dir() / "crashes", Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / name
            path.write_text(f"sampleaudit {__version__}\n{' '.join(sys.argv)}\n\n{text}", encoding="utf-8")
            return f"the full traceback is in {path}"
        except OSError:
            continue
    return "the traceback could not be written to a file"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args, argv)
    except SampleAuditError as exc:
        message = for_terminal(" ".join(str(exc).split("\n")))
        print(f"sampleaudit: error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("sampleaudit: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: never exit 1 (a CI gate would read "a check failed")
        where = _crash_report(exc)
        detail = for_terminal(" ".join(f"{type(exc).__name__}: {exc}".split()))[:300]
        print(f"sampleaudit: internal error: {detail} ({where}; please report it)", file=sys.stderr)
        return EXIT_INTERNAL
