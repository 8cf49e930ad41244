"""From per-run results to figures, published-versus-ours rows and verdicts on the spec's claims."""

from __future__ import annotations

import numpy as np

from jaxlab.core import report, stats
from jaxlab.swarm.hidden_gems import gems, model, published

SCALARS = ("u0", "pairs_g", "pairs_q", "spearman_raw", "spearman_q", "condorcet_gain",
           "single_accuracy", "majority_accuracy", "consensus")
PER_CONDITION = ("delta", "u", "winner_agreement", "winner_good")
PER_QUADRANT = ("ratings", "q", "g", "m")


def label(x) -> str:
  return f"{float(np.round(float(x), 6)):g}"


class Runs:
  """Per-run results of one voter-correlation level; rows come back ordered by seed, so pair up."""

  def __init__(self, config, table, results):
    self.config, self.table, self.results = config, table, results
    self.n_pairs = config.model.per_quadrant ** 2

  def index(self, rho):
    idx = np.nonzero(np.isclose(self.table["rho"], rho))[0]
    return idx[np.argsort(self.table["seed"][idx], kind="stable")]

  def values(self, metric, rho, *where):
    """`where` indexes the trailing axes: (condition, ranking) for precision, a condition, a quadrant."""
    x = self.results[metric][self.index(rho)]
    for i in where:
      x = x[:, i]
    return x

  def precision(self, rho, condition, ranking):
    return self.values("precision", rho, model.CONDITIONS.index(condition), model.RANKINGS.index(ranking))

  def per_condition(self, metric, rho, condition):
    return self.values(metric, rho, model.CONDITIONS.index(condition))


def figures(runs: Runs) -> dict:
  """Every figure of the run: mean, sample sd and n over seeds, per correlation level."""
  out, k = {}, runs.config.model
  for rho in runs.config.rhos:
    p = f"rho={label(rho)}"
    for cond in model.CONDITIONS:
      for rank in model.RANKINGS:
        out[f"{p}/precision/{cond}/{rank}"] = stats.describe(runs.precision(rho, cond, rank))
      for metric in PER_CONDITION:
        out[f"{p}/{metric}/{cond}"] = stats.describe(runs.per_condition(metric, rho, cond))
      # MusicLab's normalization: the per-candidate mean absolute difference, 2 / K of ours.
      out[f"{p}/delta_musiclab/{cond}"] = stats.describe(
          runs.per_condition("delta", rho, cond) * 2 / (4 * k.per_quadrant))
    for metric in SCALARS:
      out[f"{p}/{metric}"] = stats.describe(runs.values(metric, rho))
    for metric in ("pairs_g", "pairs_q"):
      out[f"{p}/{metric}_share"] = stats.describe(runs.values(metric, rho) / runs.n_pairs)
    out[f"{p}/spearman_q-raw"] = stats.describe(runs.values("spearman_q", rho) - runs.values("spearman_raw", rho))
    for i, quad in enumerate(model.QUADRANTS):
      for metric in PER_QUADRANT:
        out[f"{p}/{metric}/{quad}"] = stats.describe(runs.values(metric, rho, i))
  return out


def comparisons(config, figs: dict) -> list[dict]:
  p = f"rho={label(config.main_rho)}"
  return [report.compare(f"{p}/{name}", (mean, sd), figs[f"{p}/{name}"], n)
          for name, (mean, sd, n) in published.FIGURES.items()]


def _boot(a, b) -> str:
  d = stats.paired_bootstrap(a, b)
  return f"{d['diff']:+.3f} [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}]"


def claims(runs: Runs) -> list[dict]:
  """The spec's qualitative statements, each with our number and whether it holds."""
  c, cl, out = runs.config, report.claim, []
  rho = c.main_rho
  prec = lambda cond, rank: float(runs.precision(rho, cond, rank).mean())
  mean = lambda metric, *w: float(runs.values(metric, rho, *w).mean())

  q1, q20 = (float(v) for v in gems.q([1, 14], [1, 20], c.model.z))
  out.append(cl("A single five-star (1 of 1) has q = 0.207", f"{published.Q_ONE_OF_ONE}", f"{q1:.4f}",
                round(q1, 3) == published.Q_ONE_OF_ONE))
  out.append(cl("A modest well-sampled gem (14 of 20) has q = 0.481; the five-star does not win",
                f"{published.Q_FOURTEEN_OF_TWENTY}", f"{q20:.4f}",
                round(q20, 3) == published.Q_FOURTEEN_OF_TWENTY and q20 > q1))
  g, raw, q = prec("independent", "g"), prec("independent", "raw"), prec("independent", "q")
  out.append(cl("Independent gem precision at 5: g above the raw rate, raw rate above q",
                "0.708 > 0.550 > 0.125", f"{g:.3f}, {raw:.3f}, {q:.3f}", g > raw > q))
  sq, sr = runs.values("spearman_q", rho), runs.values("spearman_raw", rho)
  out.append(cl("q tracks true quality better than the raw rate when n is small (Spearman with the "
                "true rate over the obscure candidates, q minus raw, 95% CI)",
                "held (no correlation saved)", _boot(sq, sr), sq.mean() > sr.mean()))
  pairs, total = int(runs.values("pairs_g", rho).sum()), runs.n_pairs * len(runs.index(rho))
  out.append(cl("g ranks an obscure-mediocre item above a famous-excellent one in most pairs",
                f"{published.PAIRS[0]} of {published.PAIRS[1]} ({published.PAIRS[0] / published.PAIRS[1]:.1%})",
                f"{pairs} of {total} ({pairs / total:.1%})", pairs > total / 2))
  fe = model.QUADRANTS.index("famous_excellent")
  q_quads, g_quads = [mean("q", i) for i in range(4)], [mean("g", i) for i in range(4)]
  out.append(cl("Famous-excellent stays high on q and low on g",
                "high q, low g", f"q {q_quads[fe]:.3f} (highest of 4: {np.argmax(q_quads) == fe}), "
                f"g {g_quads[fe]:.3f} (gems {g_quads[0]:.3f})",
                np.argmax(q_quads) == fe and g_quads[fe] < g_quads[0]))
  d = {cond: runs.per_condition("delta", rho, cond) for cond in model.CONDITIONS}
  vs = lambda a, b: f"{d[a].mean():.3f} vs {d[b].mean():.3f}; diff {_boot(d[a], d[b])}"
  out.append(cl("A visible tally raises delta (independent: its worlds against random splits)",
                "0.224", vs("tally", "independent"), d["tally"].mean() > d["independent"].mean()))
  r_ind, r_tal = runs.precision(rho, "independent", "raw"), runs.precision(rho, "tally", "raw")
  out.append(cl("A visible tally drops raw gem precision", "0.550 -> 0.342",
                f"{r_ind.mean():.3f} -> {r_tal.mean():.3f}; diff {_boot(r_tal, r_ind)}", r_tal.mean() < r_ind.mean()))
  wa = {cond: mean("winner_agreement", model.CONDITIONS.index(cond)) for cond in ("independent", "tally")}
  out.append(cl("The popular winner jumps: parallel worlds agree less often on the leader under a tally",
                "jumped between seeds", f"same leader in {wa['independent']:.3f} -> {wa['tally']:.3f} of world pairs",
                wa["tally"] < wa["independent"]))
  out.append(cl("Sorting the tally does not make copying worse (delta sorted <= tally)",
                "0.175 vs 0.224", vs("sorted", "tally"), d["sorted"].mean() <= d["tally"].mean()))
  frozen = [prec(cond, "g") for cond in model.CONDITIONS]
  live = prec("tally", "g_live")
  out.append(cl("Frozen g does not chase the broadcast (equal in every condition by construction; "
                "g recomputed on the tally votes for contrast)",
                "0.708 in every condition", f"{frozen[0]:.3f} in every condition; live g {live:.3f}",
                max(frozen) == min(frozen)))
  lo, hi = min(c.rhos), max(c.rhos)
  gain = {r: float(runs.values("condorcet_gain", r).mean()) for r in (lo, hi)}
  out.append(cl(f"Many samples of one model are one voter: the Condorcet gain falls from rho {label(lo)} "
                f"to rho {label(hi)}", "no figure (the spec insists on it)",
                f"{gain[lo]:.3f} -> {gain[hi]:.3f}", gain[hi] < gain[lo]))
  pg = {r: float(runs.precision(r, "independent", "g").mean()) for r in (lo, hi)}
  out.append(cl(f"Gem precision of g falls as voter correlation rises (rho {label(lo)} -> {label(hi)})",
                "no figure", f"{pg[lo]:.3f} -> {pg[hi]:.3f}", pg[hi] < pg[lo]))
  return out


def summarize(config, table, results) -> dict:
  runs = Runs(config, table, results)
  figs = figures(runs)
  return {"experiment": "hidden_gems", "variant": config.variant, "figures": figs,
          "comparisons": comparisons(config, figs), "claims": claims(runs)}
