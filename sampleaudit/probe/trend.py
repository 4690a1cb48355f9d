"""The probe's trend rule: when does a daily figure's rise call for a rollback? Pure functions.

The source's rule is "similarity rose three days in a row". Under pure noise three values in a row
rise about one day in six, so here a day counts as a rise only when it beats the noise. For day t
after day t-1 (consecutive recorded days; a missed day does not break a streak):

    sd_t = max(sqrt(se_t**2 + se_{t-1}**2), min_sd)     se: the days' bootstrap sd
    z_t  = (x_t - x_{t-1}) / sd_t                       the change in units of its own noise

- streak: z_t > rise_z on `n_rises` consecutive days (default 3, the source's rule);
- jump:   z_t > jump_z once (a large single-day rise);
- CUSUM:  S_t = max(0, S_{t-1} + z_t - cusum_k) > cusum_h. Changes add up, so S is the rise since S
  last stood at 0, in noise units, less cusum_k per day: it catches a steady climb whose daily
  steps each stay inside the margin.
- shift:  the mean of the last m = `shift_days` days beats the mean of the m days before by more than
  `shift_z` times its sd (sqrt of the 2m days' se**2 summed, over m): a lasting step up. The three
  above read day-to-day changes, so a step smaller than jump_z sd of a change that then stays put
  opens nothing there (one change beyond the margin, then none; the CUSUM decays by cusum_k a day).
  With m = 3 a step of d has z = d / (sqrt(6) / 3 * se), 1.73 times its jump z, once it has lasted
  three days (the source's "three days", read as a level rather than as three rises).

An episode opens on the first day any of the four fires (state "alert": the only day that alerts),
stays "ongoing" while the figure stays up, and "cleared" on the first day no trigger fires and the
figure is back within rise_z * sd of the base day's value (the base day is the last day before the
rise began; its checkpoint is the rollback target; the shift, which lags, does not hold it open).
Streak, CUSUM and the shift's windows restart after a clear.

Defaults come from benchmarks/bench_probe_alarm.py (2,000 series x 60 days; benchmarks/README.md).
On stable series whose value moves by its bootstrap noise, the defaults (rise_z 1.0, jump_z 4.0,
cusum_k 0.5, cusum_h 5.0, shift 3 days at 3.5) open 0.02 episodes per 60 days when the reported se is
the real noise, 0.05 when the checkpoint adds day-to-day variation of half the sampling noise and
0.45 when it adds as much (tau = se); the plain "three rises in a row" opens 1.6 per 60 days. A rise
of 3 se a day is caught after 2.4 days, 2 se a day after 2.9, 1 se a day after 5.0 (none missed); a
lasting step of 4 se after 2.3 days (6% missed within 20 days), of 3 se 61% of the time. Without
the shift trigger: 0.00 / 0.01 / 0.17 false alarms, a 1 se a day rise missed a third of the time
and a 4 se step 84% of the time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..errors import InputError


@dataclass(frozen=True)
class TrendRule:
    """Parameters of the rule (module docstring); every z is in units of the day's change's noise."""

    n_rises: int = 3
    rise_z: float = 1.0
    jump_z: float = 4.0
    cusum_k: float = 0.5
    cusum_h: float = 5.0
    shift_days: int = 3
    shift_z: float = 3.5
    min_sd: float = 0.001  # cosine units: identical answers (bootstrap sd 0) do not make every change count

    def __post_init__(self) -> None:
        for name in ("n_rises", "shift_days"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"trend {name} must be a positive integer; got {v!r}")
        for name in ("rise_z", "jump_z", "cusum_k", "cusum_h", "shift_z", "min_sd"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise InputError(f"trend {name} must be a number >= 0; got {v!r}")
        if self.min_sd <= 0:
            raise InputError(f"trend min_sd must be > 0; got {self.min_sd!r}")
        if self.jump_z < self.rise_z:
            raise InputError(f"trend jump_z ({self.jump_z}) must be at least rise_z ({self.rise_z})")

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("n_rises", "rise_z", "jump_z", "cusum_k", "cusum_h", "shift_days",
                                               "shift_z", "min_sd")}


@dataclass(frozen=True)
class Point:
    """One recorded day: its date (ISO), the watched figure, its bootstrap sd and the checkpoint."""

    date: str
    value: float
    se: float
    checkpoint: str | None = None


@dataclass(frozen=True)
class DayTrend:
    """The rule's reading of one day. `state`: first, ok, alert, ongoing or cleared."""

    date: str
    value: float
    change: float | None
    z: float | None
    margin: float | None  # the change a rise must exceed: rise_z * sd
    rise: bool
    streak: int
    cusum: float
    triggers: tuple[str, ...]
    state: str


@dataclass(frozen=True)
class Episode:
    """A run of days on which the rule saw the figure up, from its alert to its clear (None: not yet)."""

    alert_date: str
    start_date: str  # first day of the rise
    base_date: str  # last day before the rise: roll back to its checkpoint
    base_value: float
    rollback_checkpoint: str | None
    triggers: tuple[str, ...]
    days: tuple[tuple[str, float], ...]  # (date, value) from the base day to the alert day
    cleared_date: str | None = None

    def to_dict(self) -> dict:
        return {"alert_date": self.alert_date, "start_date": self.start_date, "base_date": self.base_date,
                "base_value": self.base_value, "rollback_checkpoint": self.rollback_checkpoint,
                "triggers": list(self.triggers), "days": [{"date": d, "value": v} for d, v in self.days],
                "cleared_date": self.cleared_date}


@dataclass
class _State:
    streak: int = 0
    streak_start: int | None = None
    cusum: float = 0.0
    cusum_start: int | None = None
    since: int = 0  # first day the shift windows may read: 0, or the day of the last clear
    episode: int | None = None  # index into episodes
    base: int | None = None
    episodes: list[Episode] = field(default_factory=list)


def _sd(a: Point, b: Point, rule: TrendRule) -> float:
    return max(math.sqrt(a.se ** 2 + b.se ** 2), rule.min_sd)


def _shift(points: Sequence[Point], i: int, since: int, rule: TrendRule) -> tuple[float | None, int]:
    """The shift trigger on day i: (z, start). z: the last `shift_days` days' mean over the mean of as
    many days before, in units of its sd (None: fewer than 2 x shift_days days since `since`). start:
    the first day of the later window that stands above the earlier window's mean by more than rise_z
    of its own noise (the step's first day), else the window's first day."""
    m = rule.shift_days
    if i - since + 1 < 2 * m:
        return None, i
    after, before = points[i - m + 1:i + 1], points[i - 2 * m + 1:i - m + 1]
    level = sum(q.value for q in before) / m
    level_var = sum(q.se ** 2 for q in before) / m ** 2
    sd = max(math.sqrt(sum(q.se ** 2 for q in after) / m ** 2 + level_var), rule.min_sd)
    start = next((i - m + 1 + k for k, q in enumerate(after)
                  if q.value - level > rule.rise_z * max(math.sqrt(q.se ** 2 + level_var), rule.min_sd)), i - m + 1)
    return (sum(q.value for q in after) / m - level) / sd, start


def evaluate(points: Sequence[Point], rule: TrendRule = TrendRule()) -> tuple[list[DayTrend], list[Episode]]:
    """Read the series day by day (points in date order, unique dates): each day's trend and the episodes.

    >>> pts = [Point(f"d{i}", v, 0.01, f"c{i}") for i, v in enumerate([.5, .5, .53, .56, .59, .59, .5])]
    >>> days, episodes = evaluate(pts)
    >>> [d.state for d in days]
    ['first', 'ok', 'ok', 'ok', 'alert', 'ongoing', 'cleared']
    >>> episodes[0].base_date, episodes[0].rollback_checkpoint, episodes[0].triggers
    ('d1', 'c1', ('streak',))
    """
    dates = [p.date for p in points]
    if dates != sorted(dates) or len(set(dates)) != len(dates):
        raise InputError("trend points must be in date order with unique dates")
    for p in points:
        if not (math.isfinite(p.value) and math.isfinite(p.se) and p.se >= 0):
            raise InputError(f"trend point {p.date}: value and se must be finite, se >= 0; got {p.value}, {p.se}")
    s = _State()
    out: list[DayTrend] = []
    for i, p in enumerate(points):
        if i == 0:
            out.append(DayTrend(p.date, p.value, None, None, None, False, 0, 0.0, (), "first"))
            continue
        prev = points[i - 1]
        sd = _sd(p, prev, rule)
        change = p.value - prev.value
        z = change / sd
        rise = z > rule.rise_z
        if rise:
            s.streak += 1
            if s.streak == 1:
                s.streak_start = i
        else:
            s.streak, s.streak_start = 0, None
        new = max(0.0, s.cusum + z - rule.cusum_k)
        if new > 0 and s.cusum == 0:
            s.cusum_start = i
        s.cusum = new
        if new == 0:
            s.cusum_start = None
        shift, shift_start = _shift(points, i, s.since, rule)
        fired = tuple(name for name, on in (("streak", s.streak >= rule.n_rises), ("jump", z > rule.jump_z),
                                            ("cusum", s.cusum > rule.cusum_h),
                                            ("shift", shift is not None and shift > rule.shift_z)) if on)
        if s.episode is None:
            state = "ok"
            if fired:
                state = "alert"
                starts = {"streak": s.streak_start, "jump": i, "cusum": s.cusum_start,
                          "shift": shift_start}
                start = min(starts[t] for t in fired if starts[t] is not None)
                base = points[start - 1]
                s.base = start - 1
                s.episode = len(s.episodes)
                s.episodes.append(Episode(p.date, points[start].date, base.date, base.value, base.checkpoint, fired,
                                          tuple((q.date, q.value) for q in points[start - 1:i + 1])))
        else:
            base = points[s.base]
            # the shift reads the last days' level, which lags today's: it does not hold an episode open
            if set(fired) <= {"shift"} and p.value - base.value <= rule.rise_z * _sd(p, base, rule):
                state = "cleared"
                s.episodes[s.episode] = replace(s.episodes[s.episode], cleared_date=p.date)
                s.episode = s.base = None
                s.streak, s.streak_start, s.cusum, s.cusum_start, s.since = 0, None, 0.0, None, i
            else:
                state = "ongoing"
        out.append(DayTrend(p.date, p.value, round(change, 6), round(z, 4), round(rule.rise_z * sd, 6), rise,
                            s.streak, round(s.cusum, 4), fired, state))
    return out, s.episodes
