"""Figures, the headline, and the claims of a developmental run, and its report.md.

The spec publishes no numbers, only statements; each becomes a claim graded by core.report on a
95% bootstrap interval over seeds (core.margins; runs of one seed index share initial
weights, random draws and scenes, so regime comparisons are paired by seed):
  curiosity (expected surprise, and learning progress) learns faster than random play
                                                      held-out error, mean over the learning curve
  curiosity ends with a better world model than random play     held-out error at the last evaluation
  a developmental (adaptive) curriculum beats fixed-order stages, on both measures
  impossible events are more surprising than possible ones (one claim per probe kind: AUC - 0.5)
  play masters all four stages within the budget (share of seeds - 1/2)
  stages are mastered in order under the adaptive schedule      by construction, not counted

The headline (summary.json "headline") gives per regime the final held-out error, the error over
the curve, the interactions needed to reach random play's final error, and the AUC of every probe,
each as a mean over seeds with its 95% interval.

The experiment's own targets (summary.json "targets", judged on the headline's means over seeds):
a curious regime's world model reaches AUC >= 0.95 on every probe, and a curious regime reaches
random play's final held-out error within a quarter of the interaction budget.
"""

from __future__ import annotations

import numpy as np

from jaxlab import physics
from jaxlab.core import margins
from jaxlab.core import report as report_lib
from jaxlab.core import stats
from jaxlab.developmental import curiosity


def curious() -> tuple[str, ...]:
  """The curious regimes: a score of their own and the adaptive curriculum (fixed_order is curious by
  surprise, but isolates the curriculum)."""
  return tuple(n for n, r in curiosity.REGIMES.items() if r.score is not None and r.adaptive)


AUC_TARGET = 0.95                       # every probe, a curious regime's world model
BUDGET_SHARE_TARGET = 0.25              # reach random play's final error within this share of the budget


def _rows(table, config, regime: str):
  """Run indices of a regime ordered by seed, or None when the regime did not run."""
  if regime not in config.regimes:
    return None
  rows = np.nonzero(table["regime"] == list(config.regimes).index(regime))[0]
  return rows[np.argsort(table["seed"][rows])]


def eval_steps(config) -> np.ndarray:
  """Environment steps per run at each held-out evaluation."""
  p = config.play
  n = p.episodes // p.eval_every
  return (np.arange(1, n + 1) * p.eval_every * p.episode_rounds * p.envs).astype(np.int64)


def env_steps(config) -> int:
  return config.play.episodes * config.play.episode_rounds * config.play.envs


def per_run(config, table, res) -> dict:
  """Per run: curve mean and final held-out error per stage [runs, S] and over stages, and the
  held-out error over stages at every evaluation [runs, evals]."""
  curve_all = np.nanmean(res["eval_stage"], axis=2)              # [runs, evals]
  return {"curve": np.nanmean(res["eval_stage"], axis=1), "final": res["eval_stage"][:, -1],
          "curve_all": curve_all.mean(-1), "final_all": curve_all[:, -1], "evals_all": curve_all}


def steps_to_random(config, table, m, regime: str) -> dict | None:
  """Environment steps the regime needs to reach random play's final held-out error: the first
  evaluation at which its learning curve (mean over seeds) is at or under random play's final error
  (mean over seeds), with a 95% bootstrap interval over seeds (resampled paired: the same seeds for
  both regimes). A resample whose curve never gets there counts as never (None); "reached" is the
  share of resamples that got there."""
  rand, rows = _rows(table, config, "random"), _rows(table, config, regime)
  if rand is None:
    return None
  steps = np.append(eval_steps(config).astype(np.float64), np.inf)       # inf: not within the budget

  curves = m["evals_all"].astype(np.float64)

  def crossing(idx):
    curve = curves[rows][idx].mean(-2)                                   # [..., evals], mean over seeds
    threshold = curves[rand][idx].mean(-2)[..., -1:]                     # the same reduction as the curve's
    below = curve <= threshold
    return steps[np.where(below.any(-1), below.argmax(-1), len(steps) - 1)]

  n = len(rows)
  observed = float(crossing(np.arange(n)))
  idx = stats.resample_indices(n, config.eval.bootstrap, config.seed)
  boot = crossing(idx)
  lo, hi = np.quantile(boot, [0.025, 0.975], method="inverted_cdf")    # no interpolation: never is inf
  finite = lambda x: None if not np.isfinite(x) else float(x)
  return {"steps": finite(observed), "ci": [finite(lo), finite(hi)], "n": n,
          "reached": float(np.isfinite(boot).mean()), "budget": env_steps(config)}


def mean_ci(values, config) -> dict:
  """{"mean", "ci", "n"}: the mean over seeds and its 95% bootstrap interval."""
  out = margins.interval(margins.mean_of(values), len(values), config.eval.bootstrap, seed=config.seed)
  return {"mean": out["diff"], "ci": out["ci"], "n": out["n"]}


def headline(config, table, res, m) -> dict:
  rand = _rows(table, config, "random")
  threshold = None if rand is None else float(m["final_all"][rand].mean())
  out = {"random_final_error": threshold, "budget": env_steps(config), "regimes": {}}
  for g in config.regimes:
    rows = _rows(table, config, g)
    row = {"final_error": mean_ci(m["final_all"][rows], config),
           "error_over_curve": mean_ci(m["curve_all"][rows], config),
           "probe_auc": {k: mean_ci(res["probe_auc"][rows, p], config) for p, k in enumerate(config.eval.probes)}}
    row["steps_to_random_final"] = steps_to_random(config, table, m, g)
    if "distracted" in res:          # the share of the regime's interactions spent in the distractor's region
      row["distracted"] = mean_ci(res["distracted"][rows].mean(1), config)
    out["regimes"][g] = row
  return out


def summarize(config, table, res) -> dict:
  m = per_run(config, table, res)
  figures = {}
  for g in config.regimes:
    rows = _rows(table, config, g)
    for s, stage in enumerate(physics.STAGES):
      figures[f"final/{g}/{stage}"] = stats.describe(m["final"][rows, s])
      figures[f"curve/{g}/{stage}"] = stats.describe(m["curve"][rows, s])
      done = res["mastered_at"][rows, s]
      figures[f"mastered_at/{g}/{stage}"] = stats.describe(done[done >= 0])
      figures[f"mastered_share/{g}/{stage}"] = stats.describe((done >= 0).astype(float))
      for i, mat in enumerate(physics.MATERIALS):
        vals = res["eval_material"][rows, -1, s, i]
        if np.isfinite(vals).all():
          figures[f"material/{g}/{stage}/{mat}"] = stats.describe(vals)
    figures[f"final/{g}/all"] = stats.describe(m["final_all"][rows])
    figures[f"curve/{g}/all"] = stats.describe(m["curve_all"][rows])
    for p, kind in enumerate(config.eval.probes):
      figures[f"probe_auc/{g}/{kind}"] = stats.describe(res["probe_auc"][rows, p])
      figures[f"probe_pair_win/{g}/{kind}"] = stats.describe(res["probe_pair_win"][rows, p])
  head = headline(config, table, res, m)
  return {"experiment": config.experiment, "variant": config.variant, "figures": figures, "comparisons": [],
          "claims": claims(config, table, res, m), "headline": head, "targets": targets(head),
          "env_steps_per_run": env_steps(config)}


def targets(head: dict) -> list[dict]:
  """The experiment's own targets, judged on the headline's means over seeds (None: no curious
  regime ran, or no random regime to set the error to reach)."""
  regimes = head["regimes"]
  ran = [g for g in curious() if g in regimes]
  reached = lambda g: [k for k, a in regimes[g]["probe_auc"].items() if a["mean"] >= AUC_TARGET]

  def probes(g):
    auc = regimes[g]["probe_auc"]
    low = min(auc, key=lambda k: auc[k]["mean"])
    return f"{g}: {len(reached(g))} of {len(auc)} probes (lowest: {low} {auc[low]['mean']:.3g})"
  others = [g for g in regimes if g not in ran]
  ours = "; ".join(probes(g) for g in ran) or "no curious regime ran"
  ours += f"; not curious, for reference: {'; '.join(probes(g) for g in others)}" if others else ""
  auc_met = None if not ran else any(len(reached(g)) == len(regimes[g]["probe_auc"]) for g in ran)
  rows = [report_lib.target(
      f"violation of expectation: AUC >= {AUC_TARGET} on every probe",
      f"a curious regime ({', '.join(ran) or 'none ran'}) reaches a mean AUC over seeds of at least {AUC_TARGET} "
      "on every probe that ran", auc_met, ours)]

  budget = head["budget"]
  steps = {g: regimes[g].get("steps_to_random_final") for g in ran}

  def at(g):
    x = steps[g]
    if x["steps"] is None:
      return f"{g}: not within the budget ({x['reached']:.0%} of resamples reach it)"
    return f"{g}: {x['steps']:,.0f} steps ({x['steps'] / x['budget']:.2f} of the budget)"
  judged = [g for g in ran if steps[g] is not None]
  fast_met = None if not judged else any(steps[g]["steps"] is not None
                                         and steps[g]["steps"] <= BUDGET_SHARE_TARGET * budget for g in judged)
  ours = "; ".join(at(g) for g in judged) if judged else (
      "no random regime ran" if ran else "no curious regime ran")
  rows.append(report_lib.target(
      "curiosity reaches random play's final error within a quarter of the budget",
      f"a curious regime's held-out error (mean over seeds) is at or under random play's final held-out error "
      f"(mean over seeds) by {BUDGET_SHARE_TARGET:g} of the interaction budget ({BUDGET_SHARE_TARGET * budget:,.0f} "
      f"of {budget:,} environment steps per run)", fast_met, ours))
  return rows


def _paired(config, table, m, better: str, worse: str, measure: str, text: str):
  """A claim that `better` has the lower error than `worse`, paired by seed."""
  a, b = _rows(table, config, worse), _rows(table, config, better)
  if a is None or b is None:
    return None
  x, y = m[measure][a], m[measure][b]
  interval = margins.interval(margins.difference(x, y), len(a), config.eval.bootstrap, seed=config.seed)
  ours = f"{worse} {x.mean():.4g}, {better} {y.mean():.4g} (margin: {worse} - {better})"
  return report_lib.claim(text, "stated, no number", ours, interval)


def claims(config, table, res, m) -> list[dict]:
  out = []
  for g in curious():
    how = curiosity.SCORES[curiosity.REGIMES[g].score].label
    out += [_paired(config, table, m, g, "random", "curve_all",
                    f"curiosity ({how}) learns faster than random play (held-out error over the learning curve)"),
            _paired(config, table, m, g, "random", "final_all",
                    f"curiosity ({how}) ends with a better world model than random play (final held-out error)")]
  out += [_paired(config, table, m, "curiosity", "fixed_order", "curve_all",
                  "an adaptive curriculum learns faster than fixed-order stages (held-out error over the curve)"),
          _paired(config, table, m, "curiosity", "fixed_order", "final_all",
                  "an adaptive curriculum ends better than fixed-order stages (final held-out error)")]
  lead = next(g for g in ("curiosity", *config.regimes) if g in config.regimes)
  rows = _rows(table, config, lead)
  for p, kind in enumerate(config.eval.probes):
    auc = res["probe_auc"][rows, p].astype(np.float64)
    interval = margins.interval(margins.mean_of(auc - 0.5), len(rows), config.eval.bootstrap, seed=config.seed)
    out.append(report_lib.claim(f"impossible events are more surprising than possible ones: {kind} ({lead})",
                                "stated (violation of expectation), no number",
                                f"AUC {auc.mean():.3f} (margin: AUC - 0.5)", interval))
  done = (res["mastered_at"][rows] >= 0).all(-1).astype(np.float64)
  interval = margins.interval(margins.mean_of(done - 0.5), len(rows), config.eval.bootstrap, seed=config.seed)
  out.append(report_lib.claim(f"play masters all four stages within the budget ({lead})",
                              "stated (stage 1 -> 4), no number",
                              f"{int(done.sum())} of {len(done)} runs (margin: share - 1/2)", interval))
  # The adaptive schedule only moves on from a mastered stage: the order is the schedule's, not a finding.
  out.append(report_lib.claim("stages are mastered in order, 1 -> 4 (adaptive curriculum)",
                              "stated (hierarchical stages), no number", "the schedule's rule", None,
                              by_construction=True))
  return [c for c in out if c is not None]


def _table(config, figs, prefix: str, digits: int = 3):
  cols = [*physics.STAGES, "all"]
  return report_lib.markdown_table(["regime", *cols], [
      [g, *(report_lib.fmt(figs.get(f"{prefix}/{g}/{c}"), digits) for c in cols)] for g in config.regimes])


def _ci(x: dict | None, digits: int = 3) -> str:
  if x is None or x.get("mean") is None:
    return "n/a"
  ci = "" if x["ci"] is None else f" [{x['ci'][0]:.{digits}g}, {x['ci'][1]:.{digits}g}]"
  return f"{x['mean']:.{digits}g}{ci}"


def _steps(x: dict | None) -> str:
  if x is None:
    return "n/a"
  show = lambda v: "never" if v is None else f"{v:,.0f} ({v / x['budget']:.2f})"
  return f"{show(x['steps'])} [{show(x['ci'][0])}, {show(x['ci'][1])}]; {x['reached']:.0%} of resamples reach it"


def headline_table(config, head: dict) -> str:
  cols = ["final held-out error", "error over the curve",
          "interactions to random's final error (share of the budget); never: not within the budget"]
  distracted = "distracted" in head["regimes"][config.regimes[0]]
  cols += ["share of interactions in the distractor's region"] if distracted else []
  rows = []
  for g in config.regimes:
    h = head["regimes"][g]
    rows.append([g, _ci(h["final_error"]), _ci(h["error_over_curve"]), _steps(h.get("steps_to_random_final")),
                 *([_ci(h["distracted"])] if distracted else []),
                 *(_ci(h["probe_auc"][k]) for k in config.eval.probes)])
  return report_lib.markdown_table(["regime", *cols, *(f"AUC {k}" for k in config.eval.probes)], rows)


def write(workdir, config, table, res, summary, images) -> None:
  report_lib.write_json(workdir / "summary.json", summary)
  figs, head = summary["figures"], summary["headline"]
  mastery = report_lib.markdown_table(["regime", *physics.STAGES], [
      [g, *(f"{report_lib.fmt(figs[f'mastered_at/{g}/{s}'], 3)}; share {figs[f'mastered_share/{g}/{s}']['mean']:.2f}"
            for s in physics.STAGES)] for g in config.regimes])
  materials = report_lib.markdown_table(["regime", "stage", *physics.MATERIALS], [
      [g, s, *(report_lib.fmt(figs.get(f"material/{g}/{s}/{mat}"), 3) for mat in physics.MATERIALS)]
      for g in config.regimes for s in physics.STAGES])
  p = config.play
  threshold = "n/a (no random regime)" if head["random_final_error"] is None else f"{head['random_final_error']:.4g}"
  sections = [
      ("What ran", f"Variant `{config.variant}`, backend `{config.backend}`: regimes {', '.join(config.regimes)} x "
                   f"{config.seeds} seeds, each {env_steps(config):,} environment steps ({p.episodes} episodes of "
                   f"{p.episode_rounds} interactions in {p.envs} environments). Errors are the world model's "
                   "surprise on held-out scenes (1 is about the error of predicting that nothing changes). "
                   "docs/developmental.md has the design."),
      report_lib.targets_section(summary["targets"], "Judged on the means over seeds; their intervals are in the "
                                 "headline. The targets are the experiment's own (the spec gives no numbers)."),
      ("Headline (mean over seeds [95% bootstrap interval])",
       f"Random play's final held-out error (the threshold): {threshold}.\n\n" + headline_table(config, head)),
      report_lib.claims_section(summary["claims"], "The spec gives statements, not numbers (analysis.py)."),
      ("Held-out error: mean over the learning curve (mean ± sd over seeds)", _table(config, figs, "curve")),
      ("Held-out error: final", _table(config, figs, "final")),
      ("Stage mastery (environment steps; share of runs that mastered)", mastery),
      ("Final held-out error per material", materials),
      report_lib.plots_section(images),
  ]
  report_lib.write_report(workdir, "Developmental physics: curiosity, curriculum and surprise", sections)
