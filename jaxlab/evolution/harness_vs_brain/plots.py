"""The plots evolution-harness-vs-brain.md describes (mean +- sample sd over seeds)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from jaxlab.core import report
from jaxlab.evolution.harness_vs_brain.analysis import Runs


def _sd(v):
  return v.std(ddof=1) if v.size > 1 else 0.0


def _vs_k(runs: Runs, workdir, metric: str, ylabel: str, xlabel: str, name: str):
  c = runs.config
  fig, ax = plt.subplots(figsize=(6, 4))
  for r in c.regime_names:
    vals = [runs.values(metric, r, k) for k in c.ks]
    ax.errorbar(c.ks, [v.mean() for v in vals], yerr=[_sd(v) for v in vals], marker="o", capsize=3, label=r)
  ax.set(xscale="log", xlabel=xlabel, ylabel=ylabel)
  ax.set_xticks(c.ks, [str(k) for k in c.ks])
  ax.legend(fontsize=8)
  return report.save_plot(fig, workdir, name)


def fitness_vs_k(runs: Runs, workdir):
  return _vs_k(runs, workdir, "elite_fitness", "elite fitness (final generation)", "K (slots; MLP width)",
               "fitness_vs_k.png")


def fitness_over_generations(runs: Runs, workdir):
  c = runs.config
  fig, axes = plt.subplots(1, len(c.ks), figsize=(3.6 * len(c.ks), 3.4), sharey=True, squeeze=False)
  for ax, k in zip(axes[0], c.ks):
    for r in c.regime_names:
      h = runs.history("elite_fitness", r, k)
      ax.plot(np.arange(h.shape[1]), h.mean(0), label=r)
    ax.set(title=f"K={k}", xlabel="generation")
  axes[0, 0].set_ylabel("elite fitness")
  axes[0, -1].legend(fontsize=7)
  return report.save_plot(fig, workdir, "fitness_over_generations.png")


def deceptive(runs: Runs, workdir):
  c = runs.config
  regimes = [r for r in ("harness_first", "brain_directed", "coevolution", "conservative") if r in c.regime_names]
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
  width = 0.8 / max(len(regimes), 1)
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
  return _vs_k(runs, workdir, "turnover", "champion tool-set Jaccard distance per generation", "K",
               "turnover.png")


ALL = (fitness_vs_k, fitness_over_generations, deceptive, turnover)


def draw_all(runs: Runs, workdir) -> list[str]:
  return [plot(runs, workdir) for plot in ALL]
