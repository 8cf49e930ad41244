"""Figures and claims of a developmental run, and its report.md.

The spec publishes no numbers, only statements; each becomes a claim checked on our runs:
  curiosity learns faster than random play            held-out error, mean over the learning curve
  curiosity ends with a better world model than random held-out error at the last evaluation
  a developmental (adaptive) curriculum beats fixed-order stages, on both measures
  impossible events are more surprising than possible ones (one claim per probe kind)
  play masters all four stages within the budget
Comparisons between regimes are paired by seed (runs of one seed index share initial weights,
random draws and scenes) with a 95% paired-bootstrap interval that must exclude zero; a probe
claim needs the mean AUC over seeds minus two standard errors above 0.5 (all seeds above 0.5
with one seed).
"""

from __future__ import annotations

import numpy as np

from jaxlab import physics
from jaxlab.core import report as report_lib
from jaxlab.core import stats


def _rows(table, config, regime: str):
  """Run indices of a regime ordered by seed, or None when the regime did not run."""
  if regime not in config.regimes:
    return None
  rows = np.nonzero(table["regime"] == list(config.regimes).index(regime))[0]
  return rows[np.argsort(table["seed"][rows])]


def per_run(res) -> dict:
  """Per run: learning-curve mean and final held-out error per stage [runs, S] and over stages."""
  curve = np.nanmean(res["eval_stage"], axis=1)
  final = res["eval_stage"][:, -1]
  return {"curve": curve, "final": final, "curve_all": curve.mean(-1), "final_all": final.mean(-1)}


def summarize(config, table, res) -> dict:
  m = per_run(res)
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
  return {"experiment": config.experiment, "variant": config.variant, "figures": figures, "comparisons": [],
          "claims": claims(config, table, res, m), "env_steps_per_run": env_steps(config)}


def env_steps(config) -> int:
  return config.play.episodes * config.play.episode_rounds * config.play.envs


def _paired(config, table, m, better: str, worse: str, measure: str, text: str):
  a, b = _rows(table, config, worse), _rows(table, config, better)
  if a is None or b is None:
    return None
  boot = stats.paired_bootstrap(m[measure][a], m[measure][b], config.eval.bootstrap, seed=config.seed)
  ours = (f"{worse} - {better} = {boot['diff']:+.4g}, 95% CI [{boot['ci'][0]:+.4g}, {boot['ci'][1]:+.4g}], "
          f"n={boot['n']} seeds")
  return report_lib.claim(text, "stated, no number", ours, boot["diff"] > 0 and boot["ci"][0] > 0)


def claims(config, table, res, m) -> list[dict]:
  out = [
      _paired(config, table, m, "curiosity", "random", "curve_all",
              "curiosity learns faster than random play (held-out error over the learning curve)"),
      _paired(config, table, m, "curiosity", "random", "final_all",
              "curiosity ends with a better world model than random play (final held-out error)"),
      _paired(config, table, m, "curiosity", "fixed_order", "curve_all",
              "an adaptive curriculum learns faster than fixed-order stages (held-out error over the curve)"),
      _paired(config, table, m, "curiosity", "fixed_order", "final_all",
              "an adaptive curriculum ends better than fixed-order stages (final held-out error)"),
  ]
  lead = next(g for g in ("curiosity", *config.regimes) if g in config.regimes)
  rows = _rows(table, config, lead)
  for p, kind in enumerate(config.eval.probes):
    d = stats.describe(res["probe_auc"][rows, p])
    low = d["mean"] - 2 * d["sd"] / np.sqrt(d["n"]) if d["sd"] is not None else res["probe_auc"][rows, p].min()
    out.append(report_lib.claim(f"impossible events are more surprising than possible ones: {kind} ({lead})",
                                "stated (violation of expectation), no number",
                                f"AUC {report_lib.fmt(d, 3)}", bool(low > 0.5)))
  # Under the adaptive schedule stages are mastered in order by construction; what can fail is
  # getting through all four within the budget.
  done = (res["mastered_at"][rows] >= 0).all(-1)
  out.append(report_lib.claim(f"play masters all four stages within the budget ({lead})",
                              "stated (stage 1 -> 4), no number", f"{done.sum()} of {len(done)} runs",
                              bool(done.all())))
  return [c for c in out if c is not None]


def _table(config, figs, prefix: str, digits: int = 3):
  cols = [*physics.STAGES, "all"]
  return report_lib.markdown_table(["regime", *cols], [
      [g, *(report_lib.fmt(figs.get(f"{prefix}/{g}/{c}"), digits) for c in cols)] for g in config.regimes])


def write(workdir, config, table, res, summary, images) -> None:
  report_lib.write_json(workdir / "summary.json", summary)
  figs = summary["figures"]
  mastery = report_lib.markdown_table(["regime", *physics.STAGES], [
      [g, *(f"{report_lib.fmt(figs[f'mastered_at/{g}/{s}'], 3)}; share {figs[f'mastered_share/{g}/{s}']['mean']:.2f}"
            for s in physics.STAGES)] for g in config.regimes])
  probes = report_lib.markdown_table(["regime", *config.eval.probes], [
      [g, *(report_lib.fmt(figs[f"probe_auc/{g}/{k}"], 3) for k in config.eval.probes)] for g in config.regimes])
  materials = report_lib.markdown_table(["regime", "stage", *physics.MATERIALS], [
      [g, s, *(report_lib.fmt(figs.get(f"material/{g}/{s}/{mat}"), 3) for mat in physics.MATERIALS)]
      for g in config.regimes for s in physics.STAGES])
  p = config.play
  sections = [
      ("What ran", f"Variant `{config.variant}`, backend `{config.backend}`: regimes {', '.join(config.regimes)} x "
                   f"{config.seeds} seeds, each {env_steps(config):,} environment steps ({p.episodes} episodes of "
                   f"{p.episode_rounds} interactions in {p.envs} environments). Errors are the world model's "
                   "surprise on held-out scenes (1 is about the error of predicting that nothing changes); "
                   "every ± is the sample sd over seeds. docs/developmental.md has the design."),
      report_lib.claims_section(summary["claims"], "The spec gives statements, not numbers (analysis.py)."),
      ("Held-out error: mean over the learning curve", _table(config, figs, "curve")),
      ("Held-out error: final", _table(config, figs, "final")),
      ("Stage mastery (environment steps; share of runs that mastered)", mastery),
      ("Violation-of-expectation probes (AUC, 0.5 = chance)", probes),
      ("Final held-out error per material", materials),
      report_lib.plots_section(images),
  ]
  report_lib.write_report(workdir, "Developmental physics: curiosity, curriculum and surprise", sections)
