"""Per-stage wall time and peak RSS of a run, by wrapping the package's stage functions.

`instrument()` replaces the stage functions (by module attribute) with timed wrappers; times are
exclusive (a stage called inside another is not counted twice) and the peak RSS of each stage
is the largest resident set a background thread saw while it ran (sampled every 5 ms, from
/proc/self/status; on other systems only the process peak from getrusage is shown).
"""

from __future__ import annotations

import functools
import importlib
import resource
import sys
import threading
import time
from collections import defaultdict

STAGES = [  # (module, attribute, stage name)
    ("sampleaudit.reference", "fit_baseline_clusters", "baseline clustering"),
    ("sampleaudit.reference", "fit_map", "2-D map"),
    ("sampleaudit.reference", "cluster_terms", "cluster labels"),
    ("sampleaudit.reference", "calibrate_threshold", "threshold calibration"),
    ("sampleaudit.reference", "natural_clusters", "baseline HDBSCAN at size n"),
    ("sampleaudit.engine", "similarity_section", "similarity (NN pass, near-dups, Vendi, intervals)"),
    ("sampleaudit.engine", "_coverage_section", "coverage (assign, interval)"),
    ("sampleaudit.engine", "sample_clusters", "checkpoint's own HDBSCAN"),
    ("sampleaudit.engine", "repetition_section", "repetition"),
    ("sampleaudit.engine", "lexical_section", "lexical"),
    ("sampleaudit.engine", "script_share", "scripts"),
    ("sampleaudit.pipeline", "assemble", "assemble"),
]


def rss_mib() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def peak_rss_mib() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


class Recorder:
    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.peak: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.patched: list = []
        self._stack: list[list] = []  # [name, child seconds]
        self.peak_seen = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self):
        while not self._stop.wait(0.005):
            r = rss_mib()
            if r > self.peak_seen:
                self.peak_seen = r
            for name, _ in self._stack:
                if r > self.peak[name]:
                    self.peak[name] = r

    def stop(self):
        self._stop.set()
        for mod, attr, fn in reversed(self.patched):
            setattr(mod, attr, fn)
        self.patched.clear()

    def wrap(self, name, fn):
        @functools.wraps(fn)
        def timed(*args, **kw):
            self._stack.append([name, 0.0])
            t0 = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                total = time.perf_counter() - t0
                _, child = self._stack.pop()
                self.seconds[name] += total - child
                self.calls[name] += 1
                if self._stack:
                    self._stack[-1][1] += total
        return timed


def instrument(stages=STAGES) -> Recorder:
    """Wrap `stages`; `Recorder.stop()` puts the original functions back."""
    rec = Recorder()
    for module, attr, name in stages:
        mod = importlib.import_module(module)
        rec.patched.append((mod, attr, getattr(mod, attr)))
        setattr(mod, attr, rec.wrap(name, getattr(mod, attr)))
    return rec
