"""The plots swarm-org-forms.md describes, drawn from per-run results (mean +- sample sd over seeds)."""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np

from jaxlab.core import report
from jaxlab.core.results import label
from jaxlab.swarm.org_forms.analysis import Runs, cell_name


def _line(ax, x, runs, metric, study, name=None, **labels):
  vals = [runs.values(metric, study, coord_share=s, **labels) for s in x]
  mean = [v.mean() for v in vals]
  sd = [v.std(ddof=1) if v.size > 1 else 0.0 for v in vals]
  ax.errorbar(x, mean, yerr=sd, marker="o", capsize=3, label=name)


def structures(runs: Runs, workdir):
  c, x = runs.config, runs.config.grid.coord_shares
  sl = dict(spec_share=c.slice.spec_share, comm_share=c.slice.comm_share)
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
  for ax, metric in zip(axes, ("cum_revenue", "cum_discovery")):
    for st in c.grid.structures:
      _line(ax, x, runs, metric, "main", st, structure=st, **sl)
    ax.set(xlabel="coordinator share", ylabel=metric.replace("_", " "))
  axes[0].legend()
  fig.suptitle(f"Structures, specialist share {label(sl['spec_share'])}, communicator share {label(sl['comm_share'])}")
  return report.save_plot(fig, workdir, "structures.png")


def heatmap(runs: Runs, workdir):
  c = runs.config
  fig, axes = plt.subplots(1, len(c.grid.comm_shares), figsize=(5 * len(c.grid.comm_shares), 3.6))
  axes = np.atleast_1d(axes)
  grids = [[[runs.mean("cum_revenue", "main", structure="modules", coord_share=co, spec_share=sp, comm_share=cm)
             for co in c.grid.coord_shares] for sp in c.grid.spec_shares] for cm in c.grid.comm_shares]
  vmax = np.max(grids)
  for ax, cm, g in zip(axes, c.grid.comm_shares, grids):
    im = ax.imshow(g, origin="lower", cmap="viridis", vmin=0, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(c.grid.coord_shares)), [label(v) for v in c.grid.coord_shares])
    ax.set_yticks(range(len(c.grid.spec_shares)), [label(v) for v in c.grid.spec_shares])
    ax.set(xlabel="coordinator share", title=f"communicator share {label(cm)}")
    for (i, j), v in np.ndenumerate(np.array(g)):
      ax.text(j, i, f"{v:.0f}", ha="center", va="center", color="w" if v < 0.6 * vmax else "k", fontsize=8)
  axes[0].set_ylabel("specialist share")
  fig.colorbar(im, ax=axes.tolist(), label="cumulative revenue (modules)")
  return report.save_plot(fig, workdir, "revenue_heatmap.png")


def idle(runs: Runs, workdir):
  c, x = runs.config, runs.config.grid.coord_shares
  sl = dict(spec_share=c.slice.spec_share, comm_share=c.slice.comm_share)
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
  for st in ("flat", "modules"):
    _line(axes[0], x, runs, "idle_mean", "main", st, structure=st, **sl)
    med = [np.median(runs.values("idle_median", "main", structure=st, coord_share=s, **sl)) for s in x]
    axes[1].plot(x, med, marker="o", label=st)
  axes[0].set(xlabel="coordinator share", ylabel="time-mean idle share")
  axes[1].set(xlabel="coordinator share", ylabel="median over seeds of within-run median")
  axes[1].axhline(0.8, color="r", ls="--", lw=1, label="0.8 failure check")
  axes[1].legend()
  return report.save_plot(fig, workdir, "idle.png")


def specialists(runs: Runs, workdir):
  c, x = runs.config, runs.config.grid.coord_shares
  hi, lo = max(c.grid.spec_shares), min(c.grid.spec_shares)
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
  for ax, metric, title in zip(axes, ("cum_revenue", "cum_discovery"), ("pre-shock revenue", "post-shock discovery")):
    for cm, sp in itertools.product(c.grid.comm_shares, (hi, lo)):
      kind = "specialist-heavy" if sp == hi else "generalist-heavy"
      _line(ax, x, runs, metric, "main", f"{kind}, comm {label(cm)}", structure="modules",
            spec_share=sp, comm_share=cm)
    ax.set(xlabel="coordinator share", ylabel=title)
  axes[1].legend(fontsize=8)
  return report.save_plot(fig, workdir, "specialists_vs_generalists.png")


def promotion(runs: Runs, workdir):
  c = runs.config
  rules = [r for r in c.promotion.rules if r != "none"]
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
  width = 0.8 / len(c.promotion.cells)
  for i, cell in enumerate(c.promotion.cells):
    sh = dict(zip(("coord_share", "spec_share", "comm_share"), cell))
    for ax, metric in zip(axes, ("post_revenue", "post_discovery")):
      base = runs.values(metric, "promotion", promotion="none", **sh)
      d = [runs.values(metric, "promotion", promotion=r, **sh) - base for r in rules]
      ax.bar(np.arange(len(rules)) + i * width, [v.mean() for v in d], width,
             yerr=[v.std(ddof=1) if v.size > 1 else 0 for v in d], capsize=3, label=cell_name(c, cell))
  for ax, metric in zip(axes, ("post-window revenue", "post-window discovery")):
    ax.set_xticks(np.arange(len(rules)) + width / 2, rules)
    ax.axhline(0, color="k", lw=0.8)
    ax.set(ylabel=f"{metric}: rule minus no promotion")
  axes[0].legend()
  return report.save_plot(fig, workdir, "promotion.png")


def alpha_gamma(runs: Runs, workdir):
  c, x = runs.config, runs.config.grid.coord_shares
  sw = c.alpha_gamma
  fig, axes = plt.subplots(len(sw.alphas), len(sw.gammas), figsize=(3.2 * len(sw.gammas), 2.6 * len(sw.alphas)),
                           sharex=True, squeeze=False)
  for (i, a), (j, gm) in itertools.product(enumerate(sw.alphas), enumerate(sw.gammas)):
    _line(axes[i, j], x, runs, "cum_revenue", "alpha_gamma", alpha=a, gamma=gm)
    axes[i, j].set_title(f"alpha {label(a)}, gamma {label(gm)}", fontsize=9)
  for ax in axes[-1]:
    ax.set_xlabel("coordinator share")
  for ax in axes[:, 0]:
    ax.set_ylabel("cum. revenue")
  fig.tight_layout()
  return report.save_plot(fig, workdir, "alpha_gamma.png")


def beta1(runs: Runs, workdir):
  c = runs.config
  v = list(c.beta1_sweep.beta1s)
  fig, ax = plt.subplots(figsize=(5.5, 3.8))
  for metric in ("post_revenue", "post_discovery"):
    d = [runs.values(metric, "beta1", beta1=b, promotion="peter")
         - runs.values(metric, "beta1", beta1=b, promotion="match") for b in v]
    ax.errorbar(v, [x.mean() for x in d], yerr=[x.std(ddof=1) if x.size > 1 else 0 for x in d],
                marker="o", capsize=3, label=metric.replace("_", " "))
  ax.axhline(0, color="k", lw=0.8)
  ax.set(xlabel="beta1 (depth weight in new coordination skill)", ylabel="Peter minus Match")
  ax.legend()
  return report.save_plot(fig, workdir, "beta1.png")


ALL = (structures, heatmap, idle, specialists, promotion, alpha_gamma, beta1)


def draw_all(runs: Runs, workdir) -> list[str]:
  return [plot(runs, workdir) for plot in ALL]
