"""The plots of proactive-memory-value.md: the planted-day timeline and the policy comparison,
plus the learner's curve. Timelines come from `sim.trace_fn` replaying the planted day (the sweep
keeps only per-run metrics); everything else from per-run results."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from jaxlab.core import report
from jaxlab.memory.proactive import grid, published, records
from jaxlab.memory.proactive.analysis import Runs

COLORS = plt.get_cmap("tab10").colors


def timeline(traces: dict, config, workdir):
  """V_i(t) per memory, theta and theta - h, quiet-hour bands, emits red (useful) / orange (not);
  a black edge marks an accepted emit, coloured ticks under the axis the oracle windows."""
  m = config.model
  k_ticks = traces["v"].shape[1]
  t = np.arange(k_ticks) * m.tick_h
  fig, axes = plt.subplots(len(grid.POLICIES), 1, figsize=(12, 3.2 * len(grid.POLICIES)), sharex=True)
  for r, (ax, policy) in enumerate(zip(axes, grid.POLICIES)):
    v = np.where(np.isfinite(traces["v"][r]), traces["v"][r], np.nan)
    for i, name in enumerate(records.NAMES):
      ax.plot(t, v[:, i], lw=1, color=COLORS[i], label=name)
      oracle = traces["oracle"]
      for s, e, ok in zip(oracle.start[r][i], oracle.end[r][i], oracle.valid[r][i]):
        if ok:
          ax.plot([s, e], [-0.55 + 0.04 * i] * 2, color=COLORS[i], lw=3, solid_capstyle="butt")
    for day in range(int(np.ceil(m.horizon_h / 24)) + 1):
      start = day * 24 + m.quiet_start - 24
      ax.axvspan(max(start, 0), min(start + m.quiet_len, m.horizon_h), color="grey", alpha=0.2, lw=0)
    ax.axhline(m.theta, color="k", ls="--", lw=1)
    ax.axhline(m.theta - m.hysteresis, color="k", ls=":", lw=1)
    pick = traces["pick"][r]
    fired = np.nonzero(pick >= 0)[0]
    useful, accept = traces["useful"][r][fired], traces["accept"][r][fired]
    ax.scatter(t[fired], v[fired, pick[fired]], c=np.where(useful, "red", "orange"), s=36, zorder=5,
               edgecolors=np.where(accept, "black", "none"), linewidths=1.2)
    ax.set(ylabel="V(t)", ylim=(-0.6, max(1.8, np.nanmax(v) + 0.1)),
           title=f"{published.LABELS[policy]}: {len(fired)} emits, {int(useful.sum())} useful, "
                 f"{int(accept.sum())} accepted")
  axes[0].legend(ncol=4, fontsize=7, loc="upper right")
  axes[-1].set(xlabel="hours since day-1 midnight", xlim=(0, m.horizon_h))
  fig.tight_layout()
  return report.save_plot(fig, workdir, "timeline.png")


def _bars(ax, runs: Runs, metrics, width=0.26):
  x = np.arange(len(metrics))
  for j, policy in enumerate(grid.POLICIES):
    vals = [runs.values(mt, policy, "heldout") for mt in metrics]
    vals = [v[np.isfinite(v)] for v in vals]
    mean = [v.mean() if v.size else np.nan for v in vals]
    sd = [v.std(ddof=1) if v.size > 1 else 0.0 for v in vals]
    pos = x + (j - 1) * width
    ax.bar(pos, mean, width, yerr=sd, capsize=3, color=COLORS[j], alpha=0.8,
           label=f"{published.LABELS[policy]} (held-out mean ± sd)")
    ax.scatter(pos, [runs.values(mt, policy, "planted")[0] for mt in metrics], marker="D",
               color="k", s=18, zorder=5, label="planted day" if j == 0 else None)
    if policy in published.FIGURES:
      ax.scatter(pos, [float(published.FIGURES[policy][mt]) for mt in metrics], marker="x", color="red",
                 s=40, zorder=6, label="published" if j == 0 else None)
  ax.set_xticks(x, [mt.replace("_", " ") for mt in metrics])


def policies(runs: Runs, workdir):
  fig, axes = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw=dict(width_ratios=(3, 2)))
  _bars(axes[0], runs, ("precision", "recall", "accept_rate"))
  _bars(axes[1], runs, ("spam_per_day", "ttu_h"))
  axes[0].set(ylabel="share", ylim=(0, 1))
  axes[1].set(ylabel="messages per day / hours")
  axes[0].legend(fontsize=7, loc="upper left")
  fig.suptitle(f"Policies on {len(runs.index('full', 'heldout'))} held-out days, the planted day and the spec")
  return report.save_plot(fig, workdir, "policies.png")


def learning(runs: Runs, workdir):
  res, c = runs.results, runs.config
  fig, axes = plt.subplots(1, 3, figsize=(13, 3.5))
  axes[0].plot(res["learn_objective"])
  axes[0].set(xlabel="optax step", ylabel="relaxed accepts - cost x dismissals per day",
              title=f"{c.train_days} training days")
  for i, tag in enumerate(records.TAGS):
    axes[1].plot(res["learn_amplitude"][:, i], color=COLORS[i], label=tag)
    axes[2].plot(res["learn_period_h"][:, i], color=COLORS[i], label=tag)
  axes[1].set(xlabel="optax step", ylabel="amplitude A")
  axes[2].set(xlabel="optax step", ylabel="period 2π/ω (h)")
  axes[1].legend()
  fig.tight_layout()
  return report.save_plot(fig, workdir, "learning.png")


def draw_all(runs: Runs, traces: dict, workdir) -> list[str]:
  return [timeline(traces, runs.config, workdir), policies(runs, workdir), learning(runs, workdir)]
