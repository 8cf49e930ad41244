"""From per-run results to figures, published-versus-ours rows and verdicts on the spec's claims.

Ratios with no denominator (precision on a day with no emits, time-to-useful on a day with no hit
window) are NaN per run and left out of that figure, so a figure's n can be below the day count.
Paired differences use the days where both policies have a value.

Claims are graded on a margin that is positive on the published side with a 95% bootstrap
interval over held-out days, paired day by day (every policy meets the same days). The planted
day is one day: its claims keep their direction but cannot be resolved (n = 1). Claims the model
guarantees are marked `by_construction`, with the reason.
"""

from __future__ import annotations

import numpy as np

from jaxlab.core import margins, report, results, stats
from jaxlab.memory.proactive import grid, published, records

REPORTED = ("precision", "recall", "accept_rate", "spam_per_day", "quiet_violations", "ttu_h",
            "reward", "emits", "trivia_emits")
PAIRS = (("full", "no_osc"), ("learned", "full"), ("learned", "no_osc"))


class Runs(results.Runs):
  """Runs of one policy and split (`runs.values("precision", "full", "heldout")`), in seed order."""

  keys = ("policy", "split")
  names = {"policy": grid.POLICIES, "split": grid.SPLITS}

  def values(self, metric, policy, split):
    return np.asarray(super().values(metric, policy, split), np.float64)

  def paired(self, metric, a, b, split):
    x, y = self.values(metric, a, split), self.values(metric, b, split)
    ok = np.isfinite(x) & np.isfinite(y)
    return x[ok], y[ok]


def _finite(x):
  return x[np.isfinite(x)]


def figures(runs: Runs) -> dict:
  out = {}
  for split in grid.SPLITS:
    for policy in grid.POLICIES:
      for metric in REPORTED:
        out[f"{split}/{policy}/{metric}"] = stats.describe(_finite(runs.values(metric, policy, split)))
    for a, b in PAIRS:
      for metric in REPORTED:
        x, y = runs.paired(metric, a, b, split)
        out[f"{split}/{a}-{b}/{metric}"] = stats.describe(x - y)
  return out


def comparisons(figs: dict) -> list[dict]:
  """The published single-day table beside our planted day and our held-out days. The published
  figures are one day (n = 1) printed without a spread, so only their rounding grades them."""
  table = {f"{split}/{policy}/{metric}": (value, None, 1) for policy, metrics in published.FIGURES.items()
           for split in ("planted", "heldout") for metric, value in metrics.items()}
  return results.comparisons({name: p for name, p in table.items() if figs[name]["mean"] is not None}, figs)


def _planted(margin: float) -> dict | None:
  """One day: the margin's sign and no interval (None when the day has no value, e.g. no emits)."""
  return {"diff": float(margin), "ci": None, "n": 1} if np.isfinite(margin) else None


def _pair_claim(runs, text, published_text, metric, a, b, sign):
  """Held-out days: sign * (a - b) over the days where both policies have a value, paired."""
  x, y = runs.paired(metric, a, b, "heldout")
  c = runs.config
  interval = margins.interval(margins.difference(sign * x, sign * y), len(x), c.bootstrap, c.seed)
  ours = f"{np.mean(y):.3g} -> {np.mean(x):.3g} over {len(x)} days"
  return report.claim(text, published_text, ours, interval)


def value_bound(config, table) -> float:
  """The largest value V any memory can reach in this run: I <= 1 (clipped), the envelope <= 1,
  the revival <= 1 + A, U, C and N at most their peaks, fatigue >= 0."""
  m = config.model
  return 1.0 + float(np.max(table["amplitude"])) + m.urgency + m.context + m.novelty


def claims(runs: Runs) -> list[dict]:
  c, out, cl = runs.config, [], report.claim
  pub = published.FIGURES
  planted = lambda m, p: float(runs.values(m, p, "planted")[0])
  steps = (("precision", +1, "Oscillation raises precision"),
           ("accept_rate", +1, "Oscillation raises the accept rate"),
           ("recall", +1, "Oscillation raises oracle-window recall"),
           ("ttu_h", -1, "Oscillation cuts mean time-to-useful"))
  for metric, sign, text in steps:
    p_text = f"{pub['no_osc'][metric]} -> {pub['full'][metric]}"
    f, n = planted(metric, "full"), planted(metric, "no_osc")
    out.append(cl(f"{text} (planted day)", p_text, f"{n:.3g} -> {f:.3g}", _planted(sign * (f - n))))
    out.append(_pair_claim(runs, f"{text} (held-out days)", p_text, metric, "full", "no_osc", sign))
  cap, days = c.model.daily_cap, c.model.horizon_h / 24
  f, n = planted("spam_per_day", "full"), planted("spam_per_day", "no_osc")
  # Saturated: every day's messages spent; within half a message of the cap over the horizon.
  out.append(cl("Both policies saturate the daily cap (planted day)", f"{cap:g} and {cap:g} per day",
                f"{f:.3g} and {n:.3g} per day", _planted(min(f, n) - (cap - 0.5 / days))))
  full, no_osc = runs.paired("spam_per_day", "full", "no_osc", "heldout")
  out.append(cl("Both policies saturate the daily cap (held-out mean at least 95% of it)",
                f"{cap:g} and {cap:g} per day", f"{full.mean():.3g} and {no_osc.mean():.3g} per day",
                margins.interval(margins.both(margins.mean_of(full - 0.95 * cap), margins.mean_of(no_osc - 0.95 * cap)),
                                 len(full), c.bootstrap, c.seed)))
  total = int(np.sum(runs.results["quiet_violations"]))
  bound, threshold = value_bound(c, runs.table), c.model.theta + c.model.quiet_raise
  text = "Quiet hours are never violated"
  ours = f"{total} in {len(runs.table['seed'])} runs"
  if bound < threshold:
    out.append(cl(f"{text} (by construction: quiet hours raise theta to {threshold:g}, and no value can exceed "
                  f"{bound:.3g})", "0", ours, by_construction=True))
  else:
    # "Never": no violation on any resampled day, so the margin is half a violation minus the most.
    v = np.stack([runs.values("quiet_violations", p, "heldout") for p in grid.POLICIES])
    out.append(cl(text, "0", ours, margins.interval(lambda idx: 0.5 - np.take(v, idx, axis=-1).max(axis=(0, -1)),
                                                    v.shape[1], c.bootstrap, c.seed)))
  for metric in ("reward", "accept_rate", "precision"):
    out.append(_pair_claim(runs, f"Learned oscillation beats hand-set on {metric} (held-out days)", "open question",
                           metric, "learned", "full", +1))
  return out


def learned_parameters(config, results) -> dict:
  """Hand-set and learned amplitude and period per tag class, and the relaxed objective."""
  curve = results["learn_objective"]
  return {"tags": list(records.TAGS),
          "hand_amplitude": list(map(float, config.policy.amplitude)),
          "hand_period_h": list(map(float, config.policy.period_h)),
          "learned_amplitude": [float(x) for x in results["learn_amplitude"][-1]],
          "learned_period_h": [float(x) for x in results["learn_period_h"][-1]],
          "objective_start": float(curve[0]), "objective_end": float(curve[-1])}


def summarize(config, table, results) -> dict:
  runs = Runs(config, table, results)
  figs = figures(runs)
  return {"experiment": "proactive_memory", "variant": config.variant, "figures": figs,
          "comparisons": comparisons(figs), "claims": claims(runs),
          "learning": learned_parameters(config, results)}
