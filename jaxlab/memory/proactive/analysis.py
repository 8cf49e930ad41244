"""From per-run results to figures, published-versus-ours rows and verdicts on the spec's claims.

Ratios with no denominator (precision on a day with no emits, time-to-useful on a day with no hit
window) are NaN per run and left out of that figure, so a figure's n can be below the day count.
Paired differences use the days where both policies have a value.
"""

from __future__ import annotations

import numpy as np

from jaxlab.core import report, stats
from jaxlab.memory.proactive import grid, published, records

REPORTED = ("precision", "recall", "accept_rate", "spam_per_day", "quiet_violations", "ttu_h",
            "reward", "emits", "trivia_emits")
PAIRS = (("full", "no_osc"), ("learned", "full"), ("learned", "no_osc"))


class Runs:
  """Selects runs by policy and split; rows come back ordered by seed, so policies pair up."""

  def __init__(self, config, table, results):
    self.config, self.table, self.results = config, table, results

  def index(self, policy, split):
    mask = (self.table["policy"] == grid.POLICIES.index(policy)) & (self.table["split"] == grid.SPLITS.index(split))
    idx = np.nonzero(mask)[0]
    return idx[np.argsort(self.table["seed"][idx], kind="stable")]

  def values(self, metric, policy, split):
    return np.asarray(self.results[metric][self.index(policy, split)], np.float64)

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
  """The published single-day table beside our planted day (n = 1) and our held-out days."""
  rows = []
  for policy, table in published.FIGURES.items():
    for split in ("planted", "heldout"):
      for metric, value in table.items():
        ours = figs[f"{split}/{policy}/{metric}"]
        if ours["mean"] is not None:
          rows.append(report.compare(f"{split}/{policy}/{metric}", (value, None), ours))
  return rows


def _pair_claim(runs, text, metric, a, b, sign, config):
  """Held-out days: a - b has the stated sign with a 95% paired-bootstrap interval off zero."""
  x, y = runs.paired(metric, a, b, "heldout")
  boot = stats.paired_bootstrap(x, y, n_resamples=config.bootstrap, seed=config.seed)
  lo, hi = boot["ci"]
  holds = lo > 0 if sign > 0 else hi < 0
  ours = (f"{np.mean(y):.3g} -> {np.mean(x):.3g}, diff {boot['diff']:+.3g} "
          f"[{lo:+.3g}, {hi:+.3g}] over {boot['n']} days")
  return text, ours, holds


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
    holds = bool(np.isfinite(f) and np.isfinite(n) and sign * (f - n) > 0)
    out.append(cl(f"{text} (planted day)", p_text, f"{n:.3g} -> {f:.3g}", holds))
    t, ours, holds = _pair_claim(runs, f"{text} (held-out days)", metric, "full", "no_osc", sign, c)
    out.append(cl(t, p_text, ours, holds))
  cap = c.model.daily_cap
  f, n = planted("spam_per_day", "full"), planted("spam_per_day", "no_osc")
  out.append(cl("Both policies saturate the daily cap (planted day)", f"{cap:g} and {cap:g} per day",
                f"{f:.3g} and {n:.3g} per day", f == cap and n == cap))
  means = [np.mean(runs.values("spam_per_day", p, "heldout")) for p in ("full", "no_osc")]
  out.append(cl("Both policies saturate the daily cap (held-out mean at least 95% of it)",
                f"{cap:g} and {cap:g} per day", " and ".join(f"{m:.3g}" for m in means) + " per day",
                all(m >= 0.95 * cap for m in means)))
  total = int(np.sum(runs.results["quiet_violations"]))
  out.append(cl("Quiet hours are never violated", "0", f"{total} in {len(runs.table['seed'])} runs",
                total == 0))
  for metric in ("reward", "accept_rate", "precision"):
    t, ours, holds = _pair_claim(runs, f"Learned oscillation beats hand-set on {metric} (held-out days)",
                                 metric, "learned", "full", +1, c)
    out.append(cl(t, "open question", ours, holds))
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
