"""How often does the probe's trend rule cry wolf, and how fast does it see a real rise?

Prints, for the default TrendRule and for variants (the plain "three rises in a row", other rise_z):
- false alarms: episodes opened per 60 days on stable simulated series;
- detection delay: on which day of a steady rise or a lasting step the first alert comes (3 = the third day, the
  earliest the streak rule allows), and how often a rise is missed within 20 days.

Two simulations:
1. "analytic": x_t = mu + N(0, s_t^2 + tau^2), the reported se is s_t (s_t = s * U(0.8, 1.2)); tau is
   day-to-day variation of the checkpoint that the bootstrap cannot see (tau = 0, 0.5 s, s).
2. "embeddings": real `probe_figures` on simulated answers (5 prompts x 8 answers, 64-d: each answer is
   its prompt's centre plus noise), so se is the stratified bootstrap's own estimate; a rise makes the
   answers concentrate around their centre, or (the "shared answer" scenario) drift towards one answer
   every prompt shares. Both watched figures (within and across prompts) are read, each on its own and
   together: a day alerts when either opens an episode, which is what the probe's exit 1 means.

Run: python benchmarks/bench_probe_alarm.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from sampleaudit.metrics.probe import probe_figures
from sampleaudit.probe.run import WATCHED
from sampleaudit.probe.trend import Point, TrendRule, evaluate

DAYS = 60
RISE_START = 30
OFF = 1e9  # a trigger that never fires

RULES = {
    "default (shift 3 days, z 3.5)": TrendRule(),
    "default without shift (before)": TrendRule(shift_z=OFF),
    "plain 3 rises in a row (rise_z 0)": TrendRule(rise_z=0.0, jump_z=OFF, cusum_h=OFF, shift_z=OFF, min_sd=1e-12),
    "streak only, rise_z 0.5": TrendRule(rise_z=0.5, jump_z=OFF, cusum_h=OFF, shift_z=OFF),
    "streak only, rise_z 1.0": TrendRule(rise_z=1.0, jump_z=OFF, cusum_h=OFF, shift_z=OFF),
    "streak only, rise_z 1.5": TrendRule(rise_z=1.5, jump_z=OFF, cusum_h=OFF, shift_z=OFF),
    "jump only, jump_z 4": TrendRule(rise_z=0.0, n_rises=10**6, jump_z=4.0, cusum_h=OFF, shift_z=OFF),
    "cusum only, k 0.5 h 5": TrendRule(rise_z=0.0, n_rises=10**6, jump_z=OFF, cusum_k=0.5, cusum_h=5.0, shift_z=OFF),
    "cusum only, k 0.5 h 3": TrendRule(rise_z=0.0, n_rises=10**6, jump_z=OFF, cusum_k=0.5, cusum_h=3.0, shift_z=OFF),
    **{f"shift only, {m} days, z {z}": TrendRule(rise_z=0.0, n_rises=10**6, jump_z=OFF, cusum_h=OFF, shift_days=m,
                                                 shift_z=z) for m, z in ((2, 3.0), (2, 3.5), (3, 3.0))},
    **{f"default with shift {m} days, z {z}": TrendRule(shift_days=m, shift_z=z)
       for m, z in ((2, 3.5), (3, 3.0))},
}


def _episodes(values, ses, rule) -> list[int]:
    points = [Point(f"{i:03d}", float(v), float(s), f"c{i}") for i, (v, s) in enumerate(zip(values, ses))]
    days, _ = evaluate(points, rule)
    return [i for i, d in enumerate(days) if d.state == "alert"]


def analytic(rng, n_series: int, tau: float, rise: float | None, s: float = 0.01, step: float = 0.0):
    """(values, ses) of n_series series; rise: per-day rise in units of s from RISE_START on (None: stable);
    step: a lasting step up of `step` s on RISE_START."""
    out = []
    for _ in range(n_series):
        ses = s * rng.uniform(0.8, 1.2, DAYS)
        values = 0.5 + rng.normal(0, 1, DAYS) * np.sqrt(ses ** 2 + (tau * s) ** 2)
        if rise is not None:
            values = values + rise * s * np.clip(np.arange(DAYS) - RISE_START + 1, 0, None)
        values = values + step * s * (np.arange(DAYS) >= RISE_START)
        out.append((values, ses))
    return out


def embedded(rng, n_series: int, rise: float | None, shared: float | None = None, prompts: int = 5,
             per_prompt: int = 8, dim: int = 64) -> dict[str, list]:
    """Series of real probe figures, for each watched figure (`WATCHED`): {figure: [(values, ses)]}.

    rise: the answers' spread shrinks by `rise` per day from RISE_START on (a collapse within each
    prompt). shared: the answers to every prompt move towards one shared answer by `shared` per day
    from RISE_START on (a collapse onto an answer all prompts share; the case the cross-prompt figure
    is for). None: stable.
    """
    out: dict[str, list] = {f: [] for f in WATCHED}
    labels = [str(p) for p in range(prompts) for _ in range(per_prompt)]
    texts = [f"answer {i}" for i in range(len(labels))]
    for _ in range(n_series):
        centres = rng.normal(size=(prompts, dim))
        centres /= np.linalg.norm(centres, axis=1, keepdims=True)
        common = rng.normal(size=dim)
        common /= np.linalg.norm(common)
        series = {f: ([], []) for f in WATCHED}
        for day in range(DAYS):
            steps = max(0, day - RISE_START + 1)
            spread = 1.0 - (rise or 0.0) * steps
            w = min(1.0, (shared or 0.0) * steps)
            noise = rng.normal(size=(len(labels), dim)) / np.sqrt(dim) * max(spread, 0.05)
            emb = (1 - w) * centres[[int(p) for p in labels]] + w * common + noise
            f = probe_figures(emb, labels, texts, n_resamples=200, seed=day)
            for name in WATCHED:
                fig = getattr(f.overall, name)
                series[name][0].append(fig.value)
                series[name][1].append(fig.se)
        for name in WATCHED:
            out[name].append((np.array(series[name][0]), np.array(series[name][1])))
    return out


def _either(by_figure: dict[str, list], rule) -> list[list[int]]:
    """Per series, the days on which any watched figure opened an alert (the probe exits 1)."""
    n = len(next(iter(by_figure.values())))
    return [sorted({a for f in by_figure for a in _episodes(*by_figure[f][i], rule)}) for i in range(n)]


def alerts_of(series, rule) -> list[list[int]]:
    """Per series, the days on which the rule opened an alert."""
    return [_episodes(v, s, rule) for v, s in series]


def false_alarms(alerts: list[list[int]]) -> float:
    """Episodes opened per 60 days."""
    return sum(len(a) for a in alerts) / len(alerts) * 60 / DAYS


def delays(alerts: list[list[int]]) -> tuple[float, float, float]:
    """(mean day of the rise on which the first alert after its start came, share missed within 20 days,
    share of series that alerted before the rise)."""
    found, missed, early = [], 0, 0
    for days in alerts:
        if any(a < RISE_START for a in days):
            early += 1
        later = [a for a in days if a >= RISE_START]
        if later and later[0] - RISE_START + 1 <= 20:
            found.append(later[0] - RISE_START + 1)
        else:
            missed += 1
    return (float(np.mean(found)) if found else float("nan"), missed / len(alerts), early / len(alerts))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer series")
    args = ap.parse_args()
    n = 300 if args.quick else 2000
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    print(f"analytic model, {n} series x {DAYS} days; false alarms = episodes per 60 stable days")
    stable = {tau: analytic(rng, n, tau, None) for tau in (0.0, 0.5, 1.0)}
    rising = {r: analytic(rng, n, 0.0, r) for r in (1.0, 2.0, 3.0)}
    steps = {h: analytic(rng, n, 0.0, None, step=h) for h in (3.0, 4.0, 5.0)}
    print(f"{'rule':40s} {'tau=0':>7s} {'tau=.5s':>8s} {'tau=s':>7s} | delay (missed) at rise/day = 1 s, 2 s, 3 s"
          " | at a lasting step of 3 s, 4 s, 5 s")
    for name, rule in RULES.items():
        fa = [false_alarms(alerts_of(stable[t], rule)) for t in (0.0, 0.5, 1.0)]
        ds = [delays(alerts_of(rising[r], rule)) for r in (1.0, 2.0, 3.0)]
        st = [delays(alerts_of(steps[h], rule)) for h in (3.0, 4.0, 5.0)]
        cells = "  ".join(f"{d:4.1f} ({m:4.0%})" for d, m, _ in ds)
        cells_st = "  ".join(f"{d:4.1f} ({m:4.0%})" for d, m, _ in st)
        print(f"{name:40s} {fa[0]:7.2f} {fa[1]:8.2f} {fa[2]:7.2f} | {cells} | {cells_st}")
    m = 8 if args.quick else 30
    print(f"\nembedding model (real bootstrap se), {m} series x {DAYS} days, 5 prompts x 8 answers")
    stable_e = embedded(rng, m, None)
    scenarios = {"spread -1%/day": embedded(rng, m, 0.01), "spread -3%/day": embedded(rng, m, 0.03),
                 "shared answer +3%/day": embedded(rng, m, None, shared=0.03),
                 "shared answer +5%/day": embedded(rng, m, None, shared=0.05)}
    for f in WATCHED:
        ratio = np.mean([np.std(np.diff(v)) / np.mean(np.sqrt(s[1:] ** 2 + s[:-1] ** 2)) for v, s in stable_e[f]])
        print(f"{f}: sd of day-to-day changes / bootstrap sd of a change (1 = calibrated): {ratio:.2f}")
    print("delay (missed, early) per scenario: " + ", ".join(scenarios))
    for name in ("default (shift 3 days, z 3.5)", "default without shift (before)",
                 "plain 3 rises in a row (rise_z 0)"):
        rule = RULES[name]
        rows = {f: (alerts_of(stable_e[f], rule), {k: alerts_of(v[f], rule) for k, v in scenarios.items()})
                for f in WATCHED}
        rows["either (the probe's exit 1)"] = (_either(stable_e, rule),
                                               {k: _either(v, rule) for k, v in scenarios.items()})
        print(name)
        for f, (fa, by) in rows.items():
            cells = "  ".join(f"{d:4.1f} ({mi:4.0%}, {e:4.0%})" for d, mi, e in (delays(a) for a in by.values()))
            print(f"  {f:30s} false alarms/60 days {false_alarms(fa):5.2f} | {cells}")
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
