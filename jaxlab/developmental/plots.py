"""Plots of a developmental run: learning curves per stage, the curriculum timeline, the probe
AUCs, errors per material, and object trajectories of held-out episodes per stage."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from jaxlab import physics
from jaxlab.core import report
from jaxlab.developmental import analysis
from jaxlab.developmental import keys as keys_lib
from jaxlab.physics import render

COLORS = plt.get_cmap("tab10").colors


def _regime_rows(config, table):
  for g, name in enumerate(config.regimes):
    yield g, name, np.nonzero(table["regime"] == g)[0]


def learning_curves(config, table, res, workdir):
  x = analysis.eval_steps(config)
  fig, axes = plt.subplots(1, len(physics.STAGES), figsize=(4 * len(physics.STAGES), 3.4), sharex=True)
  for s, (ax, stage) in enumerate(zip(axes, physics.STAGES)):
    for g, name, rows in _regime_rows(config, table):
      y = res["eval_stage"][rows, :, s]
      ax.plot(x, y.mean(0), color=COLORS[g], label=name)
      # The band is the range over seeds: mean - sd can fall below zero, which a log axis cannot show.
      ax.fill_between(x, y.min(0), y.max(0), color=COLORS[g], alpha=0.2, lw=0)
    ax.set(title=f"stage {s + 1}: {stage}", xlabel="environment steps", yscale="log")
  axes[0].set_ylabel("held-out error (mean; band: range over seeds)")
  axes[0].legend(fontsize=8)
  fig.tight_layout()
  return report.save_plot(fig, workdir, "learning_curves.png")


def timeline(config, table, res, workdir):
  """The stage each run played per episode; a star where it mastered a stage."""
  p = config.play
  per_episode = p.episode_rounds * p.envs
  x = (np.arange(p.episodes) + 0.5) * per_episode
  fig, ax = plt.subplots(figsize=(10, 1.0 + 0.35 * len(table["regime"])))
  labels = []
  for i, (g, s) in enumerate(zip(table["regime"], table["seed"])):
    y = res["stage"][i] * 0.18 + i
    ax.step(x, y, where="mid", color=COLORS[g], lw=1.5)
    for st, at in enumerate(res["mastered_at"][i]):
      if at >= 0:
        ax.plot(at, i + st * 0.18, "*", color="k", ms=8)
    labels.append(f"{config.regimes[g]} seed {s}")
  ax.set_yticks(np.arange(len(labels)) + 0.27, labels, fontsize=7)
  ax.set(xlabel="environment steps", title="stage played (lines step up per stage); * = stage mastered")
  fig.tight_layout()
  return report.save_plot(fig, workdir, "curriculum_timeline.png")


def _grouped_bars(ax, config, table, values, names, width=0.8):
  """values [runs, K]: one bar group per name, one bar per regime (mean ± sd over seeds)."""
  n_r = len(config.regimes)
  x = np.arange(len(names))
  for g, name, rows in _regime_rows(config, table):
    v = values[rows]
    mean = np.nanmean(v, 0)
    sd = np.nanstd(v, 0, ddof=1) if len(rows) > 1 else np.zeros(len(names))
    ax.bar(x + (g - (n_r - 1) / 2) * width / n_r, mean, width / n_r, yerr=sd, capsize=3, color=COLORS[g],
           label=name)
  ax.set_xticks(x, names, fontsize=8)


def probe_aucs(config, table, res, workdir):
  fig, ax = plt.subplots(figsize=(2 + 2 * len(config.eval.probes), 3.4))
  _grouped_bars(ax, config, table, res["probe_auc"], list(config.eval.probes))
  ax.axhline(0.5, color="k", ls="--", lw=1, label="chance")
  ax.set(ylim=(0, 1.05), ylabel="AUC: impossible more surprising", title="violation-of-expectation probes")
  ax.legend(fontsize=8)
  fig.tight_layout()
  return report.save_plot(fig, workdir, "probe_aucs.png")


def materials(config, table, res, workdir):
  fig, axes = plt.subplots(1, len(physics.STAGES), figsize=(4 * len(physics.STAGES), 3.2), sharey=True)
  for s, (ax, stage) in enumerate(zip(axes, physics.STAGES)):
    _grouped_bars(ax, config, table, res["eval_material"][:, -1, s], list(physics.MATERIALS))
    ax.set(title=f"stage {s + 1}: {stage}", yscale="log")
  axes[0].set_ylabel("final held-out object error")
  axes[0].legend(fontsize=8)
  fig.tight_layout()
  return report.save_plot(fig, workdir, "materials.png")


def trajectories(config, res, workdir, envs: int = 3):
  """Object heights through held-out episodes (random actions), a few environments per stage."""
  rounds, n_env = config.play.episode_rounds, config.eval.heldout_envs
  fig, axes = plt.subplots(1, len(physics.STAGES), figsize=(4 * len(physics.STAGES), 3.2))
  for s, (ax, stage) in enumerate(zip(axes, physics.STAGES)):
    rows = np.nonzero(res["heldout_stage"] == s)[0].reshape(rounds, n_env)
    for e in range(min(envs, n_env)):
      idx = rows[:, e]
      z = np.concatenate([res["heldout_objects"][idx[:1], :, 2], res["heldout_next"][idx, :, 2]])
      for k in np.nonzero(res["heldout_mask"][idx[0]])[0]:
        ax.plot(np.arange(rounds + 1), z[:, k], color=COLORS[e], lw=1, ls=("-", "--", ":", "-.")[k % 4])
    ax.set(title=f"stage {s + 1}: {stage}", xlabel="interaction")
  axes[0].set_ylabel("object height (m); colour = env, style = object")
  fig.tight_layout()
  return report.save_plot(fig, workdir, "trajectories.png")


def draw_all(config, table, res, workdir) -> list[str]:
  images = [learning_curves(config, table, res, workdir), timeline(config, table, res, workdir),
            probe_aucs(config, table, res, workdir), materials(config, table, res, workdir),
            trajectories(config, res, workdir)]
  return images + render_episodes(config, workdir)


def render_episodes(config, workdir) -> list[str]:
  """GIFs (and their frames as PNG, in frames/) of `render.episodes` random-action episodes per
  stage in held-out scenes, through jaxlab.physics.render on the C backend; where no OpenGL backend
  exists, a message instead (trajectories.png shows the same kind of episodes as state plots)."""
  pcfg = physics.PhysicsConfig.from_section(config.physics)
  rng = np.random.default_rng(config.seed)
  root = keys_lib.root(config.seed)
  gifs = []
  for s, stage in enumerate(physics.STAGES):
    key = keys_lib.scene_key(root, keys_lib.HELDOUT, 0, s, 0)
    sim = physics.make_sim(s, max(config.render.episodes, 1), backend="c", config=pcfg, seed=key)
    actions = rng.uniform(-1, 1, (config.render.rounds, max(config.render.episodes, 1), 3)).astype(np.float32)
    for e in range(config.render.episodes):
      sim.reset(key)
      try:
        frames = render.episode(sim, e, actions)
      except render.RenderUnavailable as err:
        print(f"no rendered episodes: {err}")
        return []
      paths = render.save(frames, workdir / "frames", f"{stage}_{e}")
      gifs.append(str(paths[-1].relative_to(workdir)))
    sim.close()
  return gifs
