"""The plots of swarm-hidden-gems.md: precision at 5 by ranking and condition, delta
by condition, and the voter-correlation curve (mean +- sample sd over seeds)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from jaxlab.core import report
from jaxlab.swarm.hidden_gems import model, published
from jaxlab.core.results import label
from jaxlab.swarm.hidden_gems.analysis import Runs


def _sd(x):
  return float(np.std(x, ddof=1)) if np.size(x) > 1 else 0.0


def precision(runs: Runs, workdir):
  rho, width = runs.config.main_rho, 0.8 / len(model.CONDITIONS)
  fig, ax = plt.subplots(figsize=(8, 3.8))
  x = np.arange(len(model.RANKINGS))
  for i, cond in enumerate(model.CONDITIONS):
    vals = [runs.precision(rho, cond, r) for r in model.RANKINGS]
    ax.bar(x + i * width, [v.mean() for v in vals], width, yerr=[_sd(v) for v in vals], capsize=3, label=cond)
    for j, rank in enumerate(model.RANKINGS):
      # Frozen g "stayed at 0.708" under both social conditions: the independent figure again.
      pub = published.FIGURES.get(f"precision/{'independent' if rank == 'g' else cond}/{rank}")
      if pub:
        ax.plot(x[j] + i * width, pub[0], "k*", ms=9, label="published" if (i, j) == (0, 0) else None)
  ax.set_xticks(x + width, model.RANKINGS)
  ax.set(ylabel=f"gem precision at {runs.config.model.top}", ylim=(0, 1),
         title=f"Rankings by condition (rho = {label(rho)}; q, g frozen; *_live recomputed)")
  ax.legend(fontsize=8)
  return report.save_plot(fig, workdir, "precision.png")


def delta(runs: Runs, workdir):
  rho = runs.config.main_rho
  fig, ax = plt.subplots(figsize=(5.5, 3.8))
  vals = [runs.per_condition("delta", rho, c) for c in model.CONDITIONS]
  ax.bar(model.CONDITIONS, [v.mean() for v in vals], yerr=[_sd(v) for v in vals], capsize=3)
  for i, cond in enumerate(model.CONDITIONS):
    pub = published.FIGURES.get(f"delta/{cond}")
    if pub:
      ax.plot(i, pub[0], "k*", ms=10, label="published" if cond == "tally" else None)
  ax.set(ylabel="delta = max(0, U - U0), U in total variation",
         title=f"Social-copying gap (rho = {label(rho)})")
  ax.legend()
  return report.save_plot(fig, workdir, "delta.png")


def correlation(runs: Runs, workdir):
  rhos = list(runs.config.rhos)
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
  for rank in ("raw", "q", "g"):
    v = [runs.precision(r, "independent", rank) for r in rhos]
    axes[0].errorbar(rhos, [x.mean() for x in v], yerr=[_sd(x) for x in v], marker="o", capsize=3, label=rank)
  axes[0].set(xlabel="voter correlation rho (shared evidence)", ylabel="gem precision at 5 (independent)",
              ylim=(0, 1))
  axes[0].legend(loc="lower left", fontsize=8)
  for metric, style in (("condorcet_gain", "-o"), ("majority_accuracy", "--s"), ("single_accuracy", ":^"),
                        ("consensus", "-.d")):
    v = [runs.values(metric, r) for r in rhos]
    axes[1].errorbar(rhos, [x.mean() for x in v], yerr=[_sd(x) for x in v], fmt=style, capsize=3,
                     label=metric.replace("_", " "))
  axes[1].axhline(0, color="k", lw=0.8)
  axes[1].set(xlabel="voter correlation rho (shared evidence)", ylabel="share",
              title="majority minus one rater; c between sealed cohorts")
  axes[1].legend(fontsize=8)
  return report.save_plot(fig, workdir, "correlation.png")


ALL = (precision, delta, correlation)


def draw_all(runs: Runs, workdir) -> list[str]:
  return [plot(runs, workdir) for plot in ALL]
