"""Command-line options shared by several subcommands (audit, probe)."""

from __future__ import annotations

import argparse


def add_embed_options(p: argparse.ArgumentParser, *, embedder_help: str, device_help: str) -> None:
    """--embedder, --device, --batch-size and --no-cache."""
    p.add_argument("--embedder", metavar="MODEL", help=embedder_help)
    p.add_argument("--device", help=device_help)
    p.add_argument("--batch-size", type=int, metavar="N", help="texts per embedding batch (default 64)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the embedding cache")
