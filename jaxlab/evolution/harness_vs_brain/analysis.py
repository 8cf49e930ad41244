"""From per-generation results to figures, published-versus-ours rows and verdicts on the spec's claims.

A run's figure is its final-generation value, except turnover: the mean Jaccard distance of the
champion's tool set over generations 1..G-1 (generation 0 has no predecessor).
"""

from __future__ import annotations

import numpy as np

from jaxlab.core import report, stats
from jaxlab.evolution.harness_vs_brain import published, sweep


class Runs:
  """Selects runs by regime and K; rows come back ordered by seed, so regimes pair up."""

  def __init__(self, config, table, results):
    self.config, self.table, self.results = config, table, results

  def index(self, regime, k):
    mask = (self.table["regime"] == sweep.REGIMES.index(regime)) & (self.table["n_slots"] == k)
    idx = np.nonzero(mask)[0]
    return idx[np.argsort(self.table["seed"][idx], kind="stable")]

  def history(self, metric, regime, k):
    """(seeds, generations) series."""
    return self.results[metric][self.index(regime, k)]

  def values(self, metric, regime, k):
    h = self.history(metric, regime, k)
    return h[:, 1:].mean(1) if metric == "turnover" else h[:, -1]

  def mean(self, metric, regime, k):
    return float(np.mean(self.values(metric, regime, k)))


def figures(runs: Runs) -> dict:
  return {f"{r}/K={k}/{m}": stats.describe(runs.values(m, r, k))
          for r in runs.config.regime_names for k in runs.config.ks for m in sweep.METRICS}


def comparisons(figs: dict) -> list[dict]:
  return [report.compare(name, (mean, sd), figs[name], n)
          for name, (mean, sd, n) in published.FIGURES.items() if name in figs]


def claims(runs: Runs) -> list[dict]:
  """The spec's qualitative statements, each with our numbers and whether it holds."""
  c, out, cl = runs.config, [], report.claim
  have = lambda *rs: all(r in c.regime_names for r in rs)
  ks = sorted(c.ks)
  lo, hi = ks[0], ks[-1]
  m = runs.mean
  if have("model_first", "harness_first"):
    out.append(cl(f"Tight brain (K={lo}): harness-first beats model-first", "0.616 vs 0.148",
                  f"{m('elite_fitness', 'harness_first', lo):.3f} vs {m('elite_fitness', 'model_first', lo):.3f}",
                  m("elite_fitness", "harness_first", lo) > m("elite_fitness", "model_first", lo)))
    out.append(cl(f"Past the threshold (K={hi}): model-first beats harness-first", "0.697 vs 0.591",
                  f"{m('elite_fitness', 'model_first', hi):.3f} vs {m('elite_fitness', 'harness_first', hi):.3f}",
                  m("elite_fitness", "model_first", hi) > m("elite_fitness", "harness_first", hi)))
    gap = [m("elite_fitness", "model_first", k) - m("elite_fitness", "harness_first", k) for k in ks]
    cross = [f"{a}->{b}" for a, b, x, y in zip(ks, ks[1:], gap, gap[1:]) if x <= 0 < y]
    out.append(cl("The model-first and harness-first curves cross between K=2 and K=4", "between 2 and 4",
                  "crossing at " + (", ".join(cross) if cross else "none"), cross == ["2->4"]))
  if have("harness_first", "brain_directed"):
    for k in (hi, lo):
      d_h, d_b = m("deceptive", "harness_first", k), m("deceptive", "brain_directed", k)
      pub = "0.981 vs 0.677" if k == hi else "0.941 vs 0.581"
      out.append(cl(f"K={k}: blind harness-first scores higher on the deceptive task than brain-directed",
                    pub, f"{d_h:.3f} vs {d_b:.3f}", d_h > d_b))
    r_h, r_b = m("key_retention", "harness_first", hi), m("key_retention", "brain_directed", hi)
    out.append(cl(f"K={hi}: blind selection keeps the key tool in the elite more often than the myopic editor",
                  "0.375 vs 0.000", f"{r_h:.3f} vs {r_b:.3f}", r_h > r_b))
  if have("coevolution", "model_first", "harness_first"):
    co = m("elite_fitness", "coevolution", lo)
    singles = max(m("elite_fitness", "model_first", lo), m("elite_fitness", "harness_first", lo))
    out.append(cl(f"K={lo}: coevolution beats both single-sided arms", "0.664 vs best 0.616",
                  f"{co:.3f} vs best {singles:.3f}", co > singles))
    co, hf, mf = (m("elite_fitness", r, hi) for r in ("coevolution", "harness_first", "model_first"))
    out.append(cl(f"K={hi}: coevolution beats harness-first but not model-first", "0.685 vs 0.591 and 0.697",
                  f"{co:.3f} vs {hf:.3f} and {mf:.3f}", hf < co <= mf))
  if have("coevolution", "conservative"):
    for k in (hi, lo):
      t_o, t_c = m("turnover", "coevolution", k), m("turnover", "conservative", k)
      pub = "0.122 vs 0.079" if k == hi else "0.099 vs 0.067"
      out.append(cl(f"K={k}: open coevolution turns tools over faster than conservative", pub,
                    f"{t_o:.3f} vs {t_c:.3f}", t_o > t_c))
    f_o, f_c = m("elite_fitness", "coevolution", lo), m("elite_fitness", "conservative", lo)
    out.append(cl(f"K={lo}: conservative selection pays some fitness", "0.556 vs 0.664",
                  f"{f_c:.3f} vs {f_o:.3f}", f_c < f_o))
  return out


def fitness_table(runs: Runs) -> str:
  c = runs.config
  rows = [[r, *(report.fmt(stats.describe(runs.values("elite_fitness", r, k)), 3) for k in c.ks)]
          for r in c.regime_names]
  return report.markdown_table(["regime", *(f"K={k}" for k in c.ks)], rows)


def summarize(config, table, results) -> dict:
  runs = Runs(config, table, results)
  figs = figures(runs)
  return {"experiment": config.experiment, "variant": config.variant, "figures": figs,
          "comparisons": comparisons(figs), "claims": claims(runs)}
