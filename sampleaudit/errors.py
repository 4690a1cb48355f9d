"""Exceptions raised by sampleaudit; every message says what is wrong and how to fix it."""

from __future__ import annotations


class SampleAuditError(Exception):
    """Base class of every error sampleaudit raises on purpose."""


class InputError(SampleAuditError, ValueError):
    """Bad user input: a file, an array or an option. The CLI maps it to exit code 2."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        self.reason = message
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)


class ModelError(SampleAuditError):
    """A model (embedder or generator) could not be loaded or run."""


class IncompatibleAuditsError(InputError):
    """Audits that cannot be merged: different embedder, baseline or thresholds."""
