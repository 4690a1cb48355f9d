"""probe(): record one day's answers in the history, read the trend, say whether to roll back.

The order keeps the history whole: everything that can be checked is checked before the lock is
taken; under the lock the day is checked again (another run may have recorded it), the answers are
produced (generated or read), embedded and their figures computed, and the day is written in one
transaction. The webhook comes after the lock is released, so a dead one delays no other run and
can never lose the day.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date as _date
from functools import cached_property
from pathlib import Path

import numpy as np

from ..embed import Embedder, EmbeddingCache, embed_texts
from ..errors import InputError
from ..metrics.probe import DEFAULT_THRESHOLD, DayFigures, probe_figures
from ..results import EmbedderInfo
from ..samples import SampleSet
from .history import DEFAULT_LOCK_TIMEOUT, Day, History, HistoryLock
from .trend import DayTrend, Episode, Point, TrendRule, evaluate

# the figures the trend rule reads, each on its own; an alert when either fires (README: the daily probe)
WATCHED = ("mean_similarity", "cross_similarity")
WORDS = {"mean_similarity": "mean similarity among the answers to each prompt",
         "cross_similarity": "mean similarity between answers to different prompts"}
NO_PROMPT = ""


@dataclass(frozen=True)
class Checkpoint:
    """What a day's answers came from. `id` names it in alerts; `path` is where it lives (resolved)."""

    id: str
    path: str | None = None
    config_sha256: str | None = None
    weights_fingerprint: str | None = None

    def to_dict(self) -> dict:
        return {"id": self.id, "path": self.path, "config_sha256": self.config_sha256,
                "weights_fingerprint": self.weights_fingerprint}


def checkpoint_from_generation(model: str, provenance: dict) -> Checkpoint:
    """The identity of a generated day's checkpoint: its folder name and a hash of config + weight index."""
    digest = hashlib.sha256(f"{provenance.get('config_sha256')}\0{provenance.get('weights_fingerprint')}"
                            .encode()).hexdigest()[:12]
    path = os.path.realpath(model) if Path(model).exists() else str(model)
    return Checkpoint(f"{provenance.get('name') or Path(path).name}@{digest}", path,
                      provenance.get("config_sha256"), provenance.get("weights_fingerprint"))


def checkpoint_from_samples(path: str | Path) -> Checkpoint:
    """The checkpoint named in a JSONL file's "checkpoint" field (what `sampleaudit generate` writes)
    when every line names the same one; else "unknown" (pass --checkpoint-id)."""
    names: set[str] = set()
    p = Path(path)
    if p.suffix == ".jsonl":
        with open(p, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    value = json.loads(line).get("checkpoint") if line.strip() else None
                except (ValueError, AttributeError):
                    value = None
                if value is None:
                    return Checkpoint("unknown")
                names.add(str(value))
    return Checkpoint(names.pop()) if len(names) == 1 else Checkpoint("unknown")


def check_date(value: str, flag: str = "--date") -> str:
    """`value` as an ISO date (YYYY-MM-DD), or InputError."""
    import re

    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            return _date.fromisoformat(value).isoformat()
    except ValueError:
        pass
    raise InputError(f"{flag} must be a date as YYYY-MM-DD; got {value!r}")


def check_webhook(url: str | None) -> str | None:
    if url is not None and not url.lower().startswith(("http://", "https://")):
        raise InputError(f"--webhook must be an http:// or https:// URL; got {url!r}")
    return url


_ACTIVE = ("alert", "ongoing", "cleared")


@dataclass(frozen=True)
class FigureTrend:
    """The trend rule's reading of one watched figure: the series' days and episodes, and one day's."""

    figure: str
    days: list[DayTrend]
    episodes: list[Episode]

    @cached_property
    def _by_date(self) -> dict[str, DayTrend]:
        return {t.date: t for t in self.days}

    def on(self, date: str) -> DayTrend | None:
        return self._by_date.get(date)

    def episode_on(self, date: str) -> Episode | None:
        """The episode `date` belongs to (opened, ongoing or cleared that day)."""
        t = self.on(date)
        if t is None or t.state not in _ACTIVE:
            return None
        return next((e for e in self.episodes
                     if e.alert_date <= date and (e.cleared_date is None or date <= e.cleared_date)), None)


@dataclass(frozen=True)
class ProbeOutcome:
    """What one probe run recorded and what the trend rule made of it; `payload` is the --json line.

    `trend` and `episode` are those of the leading figure (`payload["figure"]`, see `lead_figure`);
    `trends` holds every watched figure's reading.
    """

    day: Day
    figures: DayFigures
    trends: dict[str, FigureTrend]
    payload: dict
    warnings: tuple[str, ...] = ()  # said on stderr; also in payload["warnings"]

    @property
    def lead(self) -> str:
        return lead_figure(self.trends, self.day.date)

    @property
    def trend(self) -> DayTrend:
        return self.trends[self.lead].on(self.day.date)

    @property
    def episode(self) -> Episode | None:
        return self.trends[self.lead].episode_on(self.day.date)

    @property
    def alert(self) -> bool:
        """A watched figure opened an alert today."""
        return any((t := ft.on(self.day.date)) is not None and t.state == "alert" for ft in self.trends.values())


def runtime_of(embedder) -> dict:
    """Where and how the embedder computes its vectors (kept with each day in its source record)."""
    info = EmbedderInfo.of(embedder)
    return {"backend": info.backend, "precision": info.precision, "device": info.device}


def describe_runtime(runtime: dict) -> str:
    return f"{runtime.get('backend', 'unknown')} {runtime.get('precision', 'unknown')} on {runtime.get('device', 'unknown')}"


def runtime_change(days: list[Day], day: Day) -> str | None:
    """A warning when `day`'s embedder ran on another runtime than the last earlier day that says (None:
    the same, or nothing earlier says). The model is the same (the history refuses another one)."""
    now = day.source.get("embedder_runtime")
    before = [d for d in days if d.date < day.date and d.source.get("embedder_runtime")]
    if not now or not before or before[-1].source["embedder_runtime"] == now:
        return None
    last = before[-1]
    return (f"the embedder ran with {describe_runtime(now)} for {day.date} but with "
            f"{describe_runtime(last.source['embedder_runtime'])} for {last.date}: the same model, whose vectors agree "
            "to rounding on both, so the days stay comparable; set embed.backend and --device alike on every day "
            "to rule the difference out")


def points_of(days: list[Day], figure: str) -> list[Point]:
    """The overall `figure` of each day that has one (days recorded before it existed have none)."""
    out = []
    for d in days:
        fig = d.figures["overall"].get(figure) or {}
        if fig.get("value") is not None and fig.get("se") is not None:
            out.append(Point(d.date, float(fig["value"]), float(fig["se"]), d.checkpoint_id))
    return out


def read_trend(days: list[Day], rule: TrendRule) -> dict[str, FigureTrend]:
    """Every watched figure's series read by the rule, each on its own."""
    return {f: FigureTrend(f, *evaluate(points_of(days, f), rule)) for f in WATCHED}


def lead_figure(trends: dict[str, FigureTrend], date: str) -> str:
    """The figure a day's verdict is about: one that alerts that day, else one with an ongoing alert,
    else one that cleared, else the first watched figure (the earlier base day first on a tie, the
    safer rollback; then the order of WATCHED)."""
    for state in _ACTIVE:
        hits = [f for f in WATCHED if (t := trends[f].on(date)) is not None and t.state == state]
        if hits:
            return min(hits, key=lambda f: trends[f].episode_on(date).base_date)
    return next((f for f in WATCHED if trends[f].on(date) is not None), WATCHED[0])


def _fmt(v: float) -> str:
    return f"{v:.3f}"


def _trend_dict(t: DayTrend | None) -> dict | None:
    if t is None:
        return None
    return {"state": t.state, "value": t.value, "change": t.change, "margin": t.margin, "z": t.z,
            "streak": t.streak, "cusum": t.cusum, "triggers": list(t.triggers)}


def payload_for(day: Day, trends: dict[str, FigureTrend], days: list[Day], rule: TrendRule, history: str) -> dict:
    """The machine-readable verdict of a day (the --json line and the webhook's body): the leading
    figure's reading at the top level, every watched figure's under "figures"."""
    lead = lead_figure(trends, day.date)
    trend, episode = trends[lead].on(day.date), trends[lead].episode_on(day.date)
    by_date = {d.date: d for d in days}
    out = {"event": trend.state if trend.state in _ACTIVE else "ok", "date": day.date,
           "history": history, "figure": f"overall {lead}", "value": trend.value, "change": trend.change,
           "margin": trend.margin, "z": trend.z, "streak": trend.streak, "cusum": trend.cusum,
           "figures": {f: _trend_dict(ft.on(day.date)) for f, ft in trends.items()},
           "checkpoint": day.checkpoint, "rule": rule.to_dict()}
    if episode is not None:
        base = by_date[episode.base_date]
        out["episode"] = episode.to_dict()
        out["rollback_to"] = {"date": base.date, "checkpoint_id": base.checkpoint_id,
                              "checkpoint_path": base.checkpoint_path}
        before = {p["prompt"]: (p.get(lead) or {}).get("value") for p in base.figures["prompts"]}
        out["prompts"] = [{"prompt": p["prompt"], "base_value": before.get(p["prompt"]),
                           "value": (p.get(lead) or {}).get("value")}
                          for p in day.figures["prompts"]]  # which probe prompts moved
    out["message"] = message(day.date, trends, days)
    return out


_TRIGGER_WORDS = {"streak": "rose beyond its noise margin on {n} days in a row",
                  "jump": "jumped beyond the large margin in one day", "cusum": "climbed steadily (CUSUM over its limit)",
                  "shift": "stepped up and stayed up (its last days' mean beyond the margin over the days before)"}


def _figure_message(figure: str, trend: DayTrend, episode: Episode, days: list[Day]) -> tuple[str, str | None]:
    """What one figure did (with its episode) and the rollback advice (None once cleared)."""
    words = WORDS[figure]
    if trend.state == "cleared":
        return (f"cleared: the {words} {_fmt(trend.value)} on {trend.date} is back within noise of "
                f"{_fmt(episode.base_value)} ({episode.base_date}); the alert of {episode.alert_date} is over"), None
    base = next(d for d in days if d.date == episode.base_date)
    where = f" ({base.checkpoint_path})" if base.checkpoint_path else ""
    advice = (f"consider rolling back to checkpoint {base.checkpoint_id}{where}, recorded on {base.date}, the last "
              "day before the rise")
    if trend.state == "ongoing":
        return (f"alert ongoing since {episode.alert_date}: the {words} {_fmt(trend.value)} on {trend.date}, "
                f"{_fmt(episode.base_value)} on {episode.base_date} before the rise"), advice
    series = " -> ".join(f"{d} {_fmt(v)}" for d, v in episode.days)
    why = " and ".join(_TRIGGER_WORDS[t].format(n=len(episode.days) - 1) for t in episode.triggers)
    return f"ALERT: the {words} {why}: {series}", advice


def message(date: str, trends: dict[str, FigureTrend], days: list[Day]) -> str:
    """One line for a person: what happened and which checkpoint to roll back to (the leading figure
    first, then any other figure in an alert, ongoing or cleared, after "also"; advice said once)."""
    lead = lead_figure(trends, date)
    order = [lead] + [f for f in WATCHED if f != lead]
    parts = [_figure_message(f, trends[f].on(date), trends[f].episode_on(date), days)
             for f in order if trends[f].episode_on(date) is not None]
    if parts:
        out: list[str] = []
        for i, (what, advice) in enumerate(parts):
            later = [a for _, a in parts[i + 1:]]
            out.append(what if advice is None or advice in later else f"{what}; {advice}")
        return "; also ".join(out)
    shown = []
    for f in order:
        t = trends[f].on(date)
        if t is not None:
            change = "" if t.change is None else f" ({t.change:+.3f}, margin {t.margin:.3f})"
            shown.append(f"{WORDS[f]} {_fmt(t.value)}{change}")
    return f"ok on {date}: " + "; ".join(shown)


def probe(
    answers: SampleSet | Callable[[], tuple[SampleSet, Checkpoint]],
    *,
    history: str | Path,
    date: str,
    embedder: Embedder,
    checkpoint: Checkpoint | None = None,
    reference_date: str | None = None,
    replace: bool = False,
    rule: TrendRule = TrendRule(),
    threshold: float = DEFAULT_THRESHOLD,
    n_resamples: int = 200,
    seed: int = 0,
    cache: EmbeddingCache | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    source: dict | None = None,
) -> ProbeOutcome:
    """Record `date`'s answers in `history` and read the trend (module docstring for the order).

    `answers` is the day's SampleSet (then `checkpoint` names its checkpoint) or a callable, run under
    the lock, that produces them and their checkpoint (generation). Raises InputError (nothing is
    recorded) for bad input: a date already recorded without `replace`, a reference date not recorded,
    another embedder than the history's, fewer than two answers.
    """
    from .. import __version__

    date = check_date(date)
    if reference_date is not None:
        reference_date = check_date(reference_date, "--reference-date")
    name = getattr(embedder, "model_id", type(embedder).__name__)
    dim = int(embedder.dim)

    def check(h: History) -> Day | None:
        if h.day(date) is not None and not replace:
            raise InputError(f"{date} is already recorded in {h.path}; pass --replace to record it again "
                             "(the earlier run is kept, marked superseded)")
        known = h.embedder()
        if known is not None and known != (name, dim):
            raise InputError(f"the history {h.path} was recorded with the embedder {known[0]} ({known[1]}-d); this run "
                             f"uses {name} ({dim}-d), whose similarities are not comparable; use --embedder {known[0]} "
                             "or a new --history")
        days = [d for d in h.days() if d.date != date]
        if reference_date is not None and reference_date != date:
            ref = next((d for d in days if d.date == reference_date), None)
            if ref is None:
                raise InputError(f"--reference-date {reference_date} is not recorded in {h.path}")
            return ref
        return days[0] if days and (reference_date is None and days[0].date < date) else None

    if not callable(answers) and len(answers) < 2:
        raise InputError(f"a probe day needs at least two answers; got {len(answers)}")
    if Path(history).exists():  # checked before the lock too: a refusal comes at once, not after a wait
        with History(history, create=False) as h:
            check(h)
    with HistoryLock(history, timeout=lock_timeout), History(history) as h:
        ref = check(h)
        if callable(answers):
            answers, checkpoint = answers()
        checkpoint = checkpoint or Checkpoint("unknown")
        if len(answers) < 2:
            raise InputError(f"a probe day needs at least two answers; got {len(answers)}")
        prompts = [s.prompt if s.prompt is not None else NO_PROMPT for s in answers.samples]
        emb = embed_texts(answers.texts, embedder, cache=cache)
        reference = None
        if ref is not None:
            ref_answers = h.answers(ref.run_id)
            reference = (np.stack([a.embedding for a in ref_answers]), [a.prompt for a in ref_answers])
        figures = probe_figures(emb, prompts, answers.texts, reference=reference, threshold=threshold,
                                n_resamples=n_resamples, seed=seed)
        if figures.overall.mean_similarity.value is None or not math.isfinite(figures.overall.mean_similarity.value):
            raise InputError("the day's answers give no mean similarity (need two answers to one prompt, or "
                             "one answer to each of two prompts)")
        src = {"samples": answers.path, "samples_sha256": answers.sha256, "n_skipped": answers.n_skipped,
               "embedder_runtime": runtime_of(embedder), **(source or {})}
        run_id = h.record_day(date=date, checkpoint_id=checkpoint.id, checkpoint_path=checkpoint.path,
                              checkpoint=checkpoint.to_dict(), embedder=name, embedder_dim=dim,
                              reference_date=ref.date if ref is not None else date, figures=figures.to_dict(),
                              source=src, answers=[(s.id, p, s.text) for s, p in zip(answers.samples, prompts)],
                              embeddings=emb, tool_version=__version__, replace=replace)
        days = h.days()
    day = next(d for d in days if d.run_id == run_id)
    trends = read_trend(days, rule)
    warnings = tuple(w for w in (runtime_change(days, day),) if w)
    payload = payload_for(day, trends, days, rule, str(history))
    if warnings:
        payload["warnings"] = list(warnings)
    return ProbeOutcome(day, figures, trends, payload, warnings)


def send_webhook(url: str, payload: dict, *, timeout: float = 10.0, retries: int = 1,
                 retry_delay: float = 2.0) -> tuple[bool, str]:
    """POST `payload` as JSON to `url`; one retry by default. (ok, what happened), never raises."""
    import time
    import urllib.error
    import urllib.request

    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    detail = ""
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(retry_delay)
        request = urllib.request.Request(url, data=body, method="POST",
                                         headers={"Content-Type": "application/json; charset=utf-8",
                                                  "User-Agent": "sampleaudit-probe"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return True, f"HTTP {response.status}" + (f" after {attempt} retry" if attempt else "")
        except urllib.error.HTTPError as exc:
            detail = f"HTTP {exc.code} {exc.reason}"
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            detail = " ".join(str(reason).split()) or type(exc).__name__
    return False, f"{detail} ({retries + 1} attempts)"
