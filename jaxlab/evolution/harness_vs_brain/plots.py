"""The plots evolution-harness-vs-brain.md describes (mean +- sample sd over seeds), and the same
capacity plot over MLP widths for the neural genomes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from jaxlab.core import report
from jaxlab.evolution.harness_vs_brain.analysis import Runs


def _sd(v):
  return v.std(ddof=1) if v.size > 1 else 0.0


def _over(runs: Runs, regimes, ax, metric: str, **style):
  for r in regimes:
    caps = runs.capacities(r)
    vals = [runs.values(metric, r, k) for k in caps]
    ax.errorbar(caps, [v.mean() for v in vals], yerr=[_sd(v) for v in vals], marker="o", capsize=3, label=r,
                **style)


def _vs_capacity(runs: Runs, workdir, regimes, metric: str, ylabel: str, xlabel: str, name: str):
  fig, ax = plt.subplots(figsize=(6, 4))
  _over(runs, regimes, ax, metric)
  caps = sorted({k for r in regimes for k in runs.capacities(r)})
  ax.set(xscale="log", xlabel=xlabel, ylabel=ylabel)
  ax.set_xticks(caps, [str(k) for k in caps])
  ax.legend(fontsize=8)
  return report.save_plot(fig, workdir, name)


def fitness_vs_k(runs: Runs, workdir):
  return _vs_capacity(runs, workdir, runs.config.regimes, "elite_fitness", "elite fitness (final generation)",
                      "K (slots; MLP width)", "fitness_vs_k.png")


def fitness_vs_width(runs: Runs, workdir):
  """The capacity crossing for the MLP brain: elite fitness against width, one line per regime
  (brain only, harness only, both), when the sweep has MLP regimes at two or more widths."""
  regimes = [r for r in runs.config.regimes if runs.genome(r) != "table" and len(runs.capacities(r)) > 1]
  if not regimes:
    return None
  return _vs_capacity(runs, workdir, regimes, "elite_fitness", "elite fitness (final generation)",
                      "MLP width (live hidden units)", "fitness_vs_width.png")


def fitness_over_generations(runs: Runs, workdir):
  caps = sorted({k for r in runs.config.regimes for k in runs.capacities(r)})
  fig, axes = plt.subplots(1, len(caps), figsize=(3.6 * len(caps), 3.4), sharey=True, squeeze=False)
  for ax, k in zip(axes[0], caps):
    for i, r in enumerate(r for r in runs.config.regimes if k in runs.capacities(r)):
      color = f"C{list(runs.config.regimes).index(r) % 10}"
      h = runs.history("elite_fitness", r, k)
      ax.plot(np.arange(h.shape[1]), h.mean(0), color=color, label=r)
      if "best_fitness" in runs.results:
        ax.plot(np.arange(h.shape[1]), runs.history("best_fitness", r, k).mean(0), color=color, linestyle="--")
    ax.set(title=f"K={k}", xlabel="generation")
  axes[0, 0].set_ylabel("elite (solid) and best-so-far (dashed) F")
  axes[0, -1].legend(fontsize=7)
  return report.save_plot(fig, workdir, "fitness_over_generations.png")


def deceptive(runs: Runs, workdir):
  c = runs.config
  regimes = [r for r in ("harness_first", "brain_directed", "coevolution", "conservative") if r in c.regimes]
  if not regimes:
    return None
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
  width = 0.8 / len(regimes)
  for i, r in enumerate(regimes):
    for ax, metric in zip(axes, ("deceptive", "key_retention")):
      vals = [runs.values(metric, r, k) for k in c.ks]
      ax.bar(np.arange(len(c.ks)) + i * width, [v.mean() for v in vals], width,
             yerr=[_sd(v) for v in vals], capsize=2, label=r)
  for ax, name in zip(axes, ("deceptive (delayed-task) score of the elite", "key-tool retention in the elite")):
    ax.set_xticks(np.arange(len(c.ks)) + width * (len(regimes) - 1) / 2, [f"K={k}" for k in c.ks])
    ax.set(ylabel=name)
  axes[0].legend(fontsize=8)
  return report.save_plot(fig, workdir, "deceptive_and_key.png")


def turnover(runs: Runs, workdir):
  return _vs_capacity(runs, workdir, runs.config.regimes, "turnover",
                      "champion tool-set Jaccard distance per generation", "K", "turnover.png")


ALL = (fitness_vs_k, fitness_vs_width, fitness_over_generations, deceptive, turnover)


def draw_all(runs: Runs, workdir) -> list[str]:
  return [name for name in (plot(runs, workdir) for plot in ALL) if name]
