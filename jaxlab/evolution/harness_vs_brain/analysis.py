"""From per-generation results to figures, published-versus-ours rows and verdicts on the spec's claims.

A run's figure is its final-generation value, except turnover: the mean Jaccard distance of the
champion's tool set over generations 1..G-1 (generation 0 has no predecessor). Claims are graded
on a 95% bootstrap interval over seeds (`core.margins`): every regime and capacity
runs on the same seeds (same tasks, same first draws), so seeds are resampled jointly and each
claim's margin is positive on the published side.
"""

from __future__ import annotations

import numpy as np

from jaxlab.core import margins, report, results, stats
from jaxlab.evolution import genomes
from jaxlab.evolution.harness_vs_brain import published, sweep


class Runs(results.Runs):
  """Runs by regime name and capacity (`runs.values("elite_fitness", "coevolution", 8)`), in seed
  order, so regimes pair up; `values` are the figures (final generation; turnover: the mean over
  generations 1..G-1), `history` the per-generation series."""

  keys = ("regime", "capacity")

  def __init__(self, config, table, results_):
    super().__init__(config, table, results_)
    self.names = {"regime": tuple(config.regimes)}

  def capacities(self, regime) -> list[int]:
    """Slot counts (table genomes) or MLP widths this regime ran at."""
    return sorted(int(c) for c in np.unique(self.table["capacity"][self.index(regime)]))

  def genome(self, regime) -> str:
    """The genome kind the regime evolved (genomes.KINDS)."""
    return list(genomes.KINDS)[int(self.table["genome"][self.index(regime)][0])]

  def history(self, metric, regime, k):
    """(seeds, generations) series."""
    return super().values(metric, regime, k)

  def values(self, metric, regime, k):
    h = self.history(metric, regime, k)
    return h[:, 1:].mean(1) if metric == "turnover" else h[:, -1]


def figures(runs: Runs) -> dict:
  return {f"{r}/K={k}/{m}": stats.describe(runs.values(m, r, k))
          for r in runs.config.regimes for k in runs.capacities(r) for m in sweep.METRICS if m in runs.results}


def claims(runs: Runs) -> list[dict]:
  """The spec's qualitative statements, each with our numbers and a verdict on its interval."""
  c, out = runs.config, []
  have = lambda *rs: all(r in c.regimes for r in rs)
  ks = sorted(c.ks)
  lo, hi = ks[0], ks[-1]
  n = c.seeds
  v = lambda r, k, m="elite_fitness": runs.values(m, r, k)

  def claim(text, pub, ours, margin):
    out.append(report.claim(text, pub, ours, margins.interval(margin, n)))

  if have("model_first", "harness_first"):
    hf, mf = v("harness_first", lo), v("model_first", lo)
    claim(f"Tight brain (K={lo}): harness-first beats model-first", "0.616 vs 0.148",
          f"{hf.mean():.3f} vs {mf.mean():.3f}", margins.difference(hf, mf))
    hf, mf = v("harness_first", hi), v("model_first", hi)
    claim(f"Past the threshold (K={hi}): model-first beats harness-first", "0.697 vs 0.591",
          f"{mf.mean():.3f} vs {hf.mean():.3f}", margins.difference(mf, hf))
    below, above = [k for k in ks if k <= 2], [k for k in ks if k >= 4]
    if below and above:
      # The curves cross between K=2 and K=4: harness-first ahead at every K <= 2, model-first at
      # every K >= 4; the margin is the smallest of those leads.
      gap = {k: v("model_first", k) - v("harness_first", k) for k in below + above}
      leads = np.stack([gap[k] if k >= 4 else -gap[k] for k in gap])
      gaps = ", ".join(f"K={k}: {g.mean():+.3f}" for k, g in gap.items())
      claim("The model-first and harness-first curves cross between K=2 and K=4 (harness-first ahead at "
            "K <= 2, model-first at K >= 4)", "between 2 and 4", f"model - harness: {gaps}", margins.every(leads))
  if have("harness_first", "brain_directed"):
    for k, pub in ((hi, "0.981 vs 0.677"), (lo, "0.941 vs 0.581")):
      d_h, d_b = v("harness_first", k, "deceptive"), v("brain_directed", k, "deceptive")
      claim(f"K={k}: blind harness-first scores higher on the deceptive task than brain-directed", pub,
            f"{d_h.mean():.3f} vs {d_b.mean():.3f}", margins.difference(d_h, d_b))
    r_h, r_b = v("harness_first", hi, "key_retention"), v("brain_directed", hi, "key_retention")
    claim(f"K={hi}: blind selection keeps the key tool in the elite more often than the myopic editor",
          "0.375 vs 0.000", f"{r_h.mean():.3f} vs {r_b.mean():.3f}", margins.difference(r_h, r_b))
  if have("coevolution", "model_first", "harness_first"):
    co, mf, hf = v("coevolution", lo), v("model_first", lo), v("harness_first", lo)
    claim(f"K={lo}: coevolution beats both single-sided arms", "0.664 vs best 0.616",
          f"{co.mean():.3f} vs best {max(mf.mean(), hf.mean()):.3f}",
          margins.both(margins.difference(co, mf), margins.difference(co, hf)))
    co, hf, mf = v("coevolution", hi), v("harness_first", hi), v("model_first", hi)
    claim(f"K={hi}: coevolution beats harness-first", "0.685 vs 0.591", f"{co.mean():.3f} vs {hf.mean():.3f}",
          margins.difference(co, hf))
    claim(f"K={hi}: coevolution does not beat model-first", "0.685 vs 0.697", f"{co.mean():.3f} vs {mf.mean():.3f}",
          margins.difference(mf, co))
  if have("coevolution", "conservative"):
    for k, pub in ((hi, "0.122 vs 0.079"), (lo, "0.099 vs 0.067")):
      t_o, t_c = v("coevolution", k, "turnover"), v("conservative", k, "turnover")
      claim(f"K={k}: open coevolution turns tools over faster than conservative", pub,
            f"{t_o.mean():.3f} vs {t_c.mean():.3f}", margins.difference(t_o, t_c))
    f_o, f_c = v("coevolution", lo), v("conservative", lo)
    claim(f"K={lo}: conservative selection pays some fitness", "0.556 vs 0.664",
          f"{f_c.mean():.3f} vs {f_o.mean():.3f}", margins.difference(f_o, f_c))
  return out


def neural_capacity(runs: Runs) -> list[dict]:
  """For a strategy run on the MLP brain alone (`mlp`), the harness alone (`harness`) and both
  (`mlp_harness`): per width, each one's elite fitness and the margins brain - harness and
  both - best single, with 95% bootstrap intervals over seeds (the MLP's capacity crossing)."""
  groups: dict[str, dict[str, str]] = {}
  for r in runs.config.regimes:
    groups.setdefault(r.partition("@")[0], {})[runs.genome(r)] = r
  out = []
  for base, kinds in groups.items():
    if not {"mlp", "harness"} <= set(kinds):
      continue
    neural = {kind: r for kind, r in kinds.items() if kind != "table"}
    for w in sorted(set.intersection(*(set(runs.capacities(r)) for r in neural.values()))):
      v = {kind: runs.values("elite_fitness", r, w) for kind, r in neural.items()}
      row = {"strategy": base, "width": w, **{kind: stats.describe(x) for kind, x in v.items()},
             "brain_minus_harness": margins.interval(margins.difference(v["mlp"], v["harness"]), runs.config.seeds)}
      if "mlp_harness" in v:
        row["both_minus_best"] = margins.interval(
            margins.both(margins.difference(v["mlp_harness"], v["mlp"]),
                         margins.difference(v["mlp_harness"], v["harness"])),
            runs.config.seeds)
      out.append(row)
  return out


def neural_capacity_table(rows: list[dict]) -> str:
  both = any("mlp_harness" in r for r in rows)
  headers = ["strategy", "width", "brain alone", "harness alone", *(["both"] if both else []), "brain - harness",
             *(["both - best single"] if both else [])]
  cells = [[r["strategy"], r["width"], report.fmt(r["mlp"], 3), report.fmt(r["harness"], 3),
            *([report.fmt(r.get("mlp_harness"), 3)] if both else []), report.interval_text(r["brain_minus_harness"]),
            *([report.interval_text(r.get("both_minus_best"))] if both else [])] for r in rows]
  return report.markdown_table(headers, cells)


def fitness_table(runs: Runs, metric: str = "elite_fitness") -> str:
  """Mean ± sd over seeds of a final-generation metric, one row per regime, one column per capacity."""
  caps = sorted({k for r in runs.config.regimes for k in runs.capacities(r)})
  rows = [[r, *(report.fmt(stats.describe(runs.values(metric, r, k)), 3) if k in runs.capacities(r) else "-"
                for k in caps)] for r in runs.config.regimes]
  return report.markdown_table(["regime", *(f"K={k}" for k in caps)], rows)


def summarize(config, table, outputs) -> dict:
  runs = Runs(config, table, outputs)
  figs = figures(runs)
  return {"experiment": config.experiment, "variant": config.variant, "figures": figs,
          "comparisons": results.comparisons(published.FIGURES, figs), "claims": claims(runs),
          "neural_capacity": neural_capacity(runs)}
