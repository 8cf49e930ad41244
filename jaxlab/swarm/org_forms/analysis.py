"""From per-run results to figures, published-versus-ours rows and verdicts on the spec's claims."""

from __future__ import annotations

import itertools

import numpy as np

from jaxlab.core import report, stats
from jaxlab.swarm.org_forms import grid, model, published

PAIRS = (("peter", "match"), ("tournament", "peter"), ("peter", "none"), ("match", "none"),
         ("tournament", "none"))


def label(x) -> str:
  return f"{float(np.round(float(x), 6)):g}"


class Runs:
  """Selects runs of one study by labels; rows come back ordered by seed, so studies pair up."""

  def __init__(self, config, table, results):
    self.config, self.table, self.results = config, table, results

  def index(self, study, **labels):
    mask = self.table["study"] == grid.STUDIES.index(study)
    for key, value in labels.items():
      if key == "structure":
        value = model.STRUCTURES.index(value)
      elif key == "promotion":
        value = model.PROMOTIONS.index(value)
      mask &= np.isclose(self.table[key], value)
    idx = np.nonzero(mask)[0]
    return idx[np.argsort(self.table["seed"][idx], kind="stable")]

  def values(self, metric, study, **labels):
    return self.results[metric][self.index(study, **labels)]

  def mean(self, metric, study, **labels):
    return float(np.mean(self.values(metric, study, **labels)))


def cell_name(config, cell):
  for name, c in zip(config.promotion.cell_names, config.promotion.cells):
    if np.allclose(c, cell):
      return name
  return "coord={}/spec={}/comm={}".format(*map(label, cell))


def figures(runs: Runs) -> dict:
  """Every figure of the run: mean, sample sd and n over seeds, per cell and metric."""
  c, out = runs.config, {}

  def add(prefix, values_of):
    for metric in model.METRICS:
      out[f"{prefix}/{metric}"] = stats.describe(values_of(metric))

  g = c.grid
  for st, co, sp, cm in itertools.product(g.structures, g.coord_shares, g.spec_shares, g.comm_shares):
    cell = dict(structure=st, coord_share=co, spec_share=sp, comm_share=cm)
    add(f"main/{st}/coord={label(co)}/spec={label(sp)}/comm={label(cm)}",
        lambda m, cell=cell: runs.values(m, "main", **cell))

  def rules(study, prefix, rule_names, **cell):
    for rule in rule_names:
      add(f"{prefix}/{rule}", lambda m, r=rule: runs.values(m, study, promotion=r, **cell))
    for a, b in PAIRS:
      if a in rule_names and b in rule_names:
        add(f"{prefix}/{a}-{b}", lambda m, a=a, b=b: runs.values(m, study, promotion=a, **cell)
            - runs.values(m, study, promotion=b, **cell))

  for cell in c.promotion.cells:
    shares = dict(zip(("coord_share", "spec_share", "comm_share"), cell))
    rules("promotion", f"promotion/{cell_name(c, cell)}", c.promotion.rules, **shares)
  sw = c.alpha_gamma
  for a, gm, co in itertools.product(sw.alphas, sw.gammas, g.coord_shares):
    add(f"alpha_gamma/alpha={label(a)}/gamma={label(gm)}/coord={label(co)}",
        lambda m, a=a, gm=gm, co=co: runs.values(m, "alpha_gamma", alpha=a, gamma=gm, coord_share=co))
  for v in c.beta1_sweep.beta1s:
    rules("beta1", f"beta1/beta1={label(v)}", c.beta1_sweep.rules, beta1=v)
  for co in g.coord_shares:
    add(f"graicunas/coord={label(co)}", lambda m, co=co: runs.values(m, "graicunas", coord_share=co))
  return out


def comparisons(figs: dict) -> list[dict]:
  return [report.compare(name, (mean, sd), figs[name], n)
          for name, (mean, sd, n) in published.FIGURES.items() if name in figs]


def _argmax_share(runs, shares, metric, study="main", **labels):
  means = [runs.mean(metric, study, coord_share=s, **labels) for s in shares]
  return shares[int(np.argmax(means))], means


def claims(runs: Runs) -> list[dict]:
  """The spec's qualitative statements, each with our count or winner and whether it holds."""
  c = runs.config
  shares, sl = tuple(c.grid.coord_shares), dict(spec_share=c.slice.spec_share, comm_share=c.slice.comm_share)
  out = []
  cl = report.claim

  peak, _ = _argmax_share(runs, shares, "cum_revenue", structure="modules", **sl)
  out.append(cl("Modules slice: revenue has no inverse-U in coordinator share; it peaks at 0.5",
                 "peak at 0.5", f"peak at {label(peak)}", peak == max(shares)))
  peak, _ = _argmax_share(runs, shares, "cum_discovery_high", structure="modules", **sl)
  out.append(cl("Modules slice: high-lambda discovery peaks at coordinator share 0",
                "peak at 0", f"peak at {label(peak)}", peak == 0))
  peak, _ = _argmax_share(runs, shares, "cum_revenue_high", structure="modules", **sl)
  out.append(cl("Modules slice: high-lambda revenue peaks at coordinator share 0.0625",
                "peak at 0.0625", f"peak at {label(peak)}", np.isclose(peak, 0.0625)))
  pr, _ = _argmax_share(runs, shares, "cum_revenue", structure="flat", **sl)
  pd, _ = _argmax_share(runs, shares, "cum_discovery", structure="flat", **sl)
  out.append(cl("Flat slice: revenue and discovery both peak at coordinator share 0",
                "both at 0", f"revenue at {label(pr)}, discovery at {label(pd)}", pr == 0 and pd == 0))
  wins = sum(runs.mean("cum_revenue", "main", structure="isolated", coord_share=s, **sl)
             > max(runs.mean("cum_revenue", "main", structure=o, coord_share=s, **sl)
                   for o in ("flat", "modules")) for s in shares)
  out.append(cl("Slice: isolated modules out-earn flat and modules at every coordinator share",
                f"{len(shares)} of {len(shares)}", f"{wins} of {len(shares)}", wins == len(shares)))
  flat5 = runs.mean("cum_revenue", "main", structure="flat", coord_share=0.5, **sl)
  mod5 = runs.mean("cum_revenue", "main", structure="modules", coord_share=0.5, **sl)
  out.append(cl("Slice, coordinator share 0.5: flat revenue is above modules (modules do not beat flat)",
                "110.06 vs 108.97", f"{flat5:.2f} vs {mod5:.2f}", flat5 > mod5))
  worst_r = min(shares, key=lambda s: runs.mean("cum_revenue", "main", structure="flat", coord_share=s, **sl))
  worst_d = min(shares, key=lambda s: runs.mean("cum_discovery", "main", structure="flat", coord_share=s, **sl))
  out.append(cl("Flat slice: coordinator share 0.5 is the worst cell for revenue and for discovery",
                "worst for both", f"revenue worst at {label(worst_r)}, discovery worst at {label(worst_d)}",
                worst_r == 0.5 and worst_d == 0.5))
  flat = {s: (runs.mean("mean_coord_loss", "main", structure="flat", coord_share=s, **sl),
              runs.mean("mean_effort", "main", structure="flat", coord_share=s, **sl)) for s in (0.0, 0.5)}
  out.append(cl("Flat slice: at share 0.5 coordination loss is lower and effort higher than at 0",
                "loss 0.6311 -> 0.6090, effort 0.9370 -> 0.9714",
                f"loss {flat[0][0]:.4f} -> {flat[0.5][0]:.4f}, effort {flat[0][1]:.4f} -> {flat[0.5][1]:.4f}",
                flat[0.5][0] < flat[0][0] and flat[0.5][1] > flat[0][1]))
  cells = list(itertools.product(shares, c.grid.spec_shares, c.grid.comm_shares))
  def best(metric):
    return max(cells, key=lambda x: runs.mean(metric, "main", structure="modules", coord_share=x[0],
                                              spec_share=x[1], comm_share=x[2]))
  br, bd = best("cum_revenue"), best("cum_discovery")
  fmt_cell = lambda x: "({}, {}, {})".format(*map(label, x))
  out.append(cl("Modules grid: the revenue winner is (coord, spec, comm) = (0.5, 0.75, 0.1)",
                "(0.5, 0.75, 0.1)", fmt_cell(br), np.allclose(br, (0.5, 0.75, 0.1))))
  out.append(cl("Modules grid: the discovery winner is (0.25, 0.75, 0)",
                "(0.25, 0.75, 0)", fmt_cell(bd), np.allclose(bd, (0.25, 0.75, 0.0))))
  out.append(cl("Revenue and discovery pick different mixes", "different", "different" if br != bd else "same",
                br != bd))
  lo, hi = min(c.grid.comm_shares), max(c.grid.comm_shares)
  flips = 0
  for s, sp in itertools.product(shares, c.grid.spec_shares):
    d = {cm: (runs.mean("cum_revenue", "main", structure="modules", coord_share=s, spec_share=sp, comm_share=cm),
              runs.mean("cum_discovery", "main", structure="modules", coord_share=s, spec_share=sp, comm_share=cm))
         for cm in (lo, hi)}
    flips += d[hi][0] > d[lo][0] and d[hi][1] < d[lo][1]
  n_cells = len(shares) * len(c.grid.spec_shares)
  out.append(cl(f"Communicators ({label(lo)} -> {label(hi)}) raise revenue and lower discovery in every modules cell",
                "15 of 15", f"{flips} of {n_cells}", flips == n_cells))
  medians = runs.values("idle_median", "main")
  at_max = runs.index("main")[np.isclose(medians, medians.max())]
  t = runs.table
  cells_at_max = {(model.STRUCTURES[t["structure"][i]], fmt_cell((t["coord_share"][i], t["spec_share"][i], t["comm_share"][i])))
                  for i in at_max}
  published_cell = ("modules", "(0.0625, 0.25, 0)")
  out.append(cl("No run has a within-run median idle share of 0.8 or more",
                "0 of 2700", f"{int(np.sum(medians >= 0.8))} of {medians.size}", not np.any(medians >= 0.8)))
  out.append(cl("The largest within-run median idle share is 0.25, on modules (0.0625, 0.25, 0)",
                "0.2500 at modules (0.0625, 0.25, 0)",
                f"{medians.max():.4f} in {len(at_max)} runs of {len(cells_at_max)} cells, the published cell "
                + ("among them" if published_cell in cells_at_max else "not among them"),
                bool(np.isclose(medians.max(), 0.25)) and published_cell in cells_at_max))
  spec_hi, spec_lo = max(c.grid.spec_shares), min(c.grid.spec_shares)
  for cm in c.grid.comm_shares:
    disc = sum(runs.mean("cum_discovery", "main", structure="modules", coord_share=s, spec_share=spec_hi, comm_share=cm)
               > runs.mean("cum_discovery", "main", structure="modules", coord_share=s, spec_share=spec_lo, comm_share=cm)
               for s in shares)
    rev = sum(runs.mean("cum_revenue", "main", structure="modules", coord_share=s, spec_share=spec_lo, comm_share=cm)
              > runs.mean("cum_revenue", "main", structure="modules", coord_share=s, spec_share=spec_hi, comm_share=cm)
              for s in shares)
    out.append(cl(f"Modules, comm {label(cm)}: specialist-heavy beats generalist-heavy on discovery",
                  "5 of 5", f"{disc} of {len(shares)}", disc == len(shares)))
    expected = 4 if cm == 0 else 0
    out.append(cl(f"Modules, comm {label(cm)}: generalist-heavy beats specialist-heavy on revenue",
                  f"{expected} of 5", f"{rev} of {len(shares)}", rev == expected))
  for cell in c.promotion.cells:
    name, sh = cell_name(c, cell), dict(zip(("coord_share", "spec_share", "comm_share"), cell))
    diff = lambda m, a, b: runs.mean(m, "promotion", promotion=a, **sh) - runs.mean(m, "promotion", promotion=b, **sh)
    pm_r, pm_o = diff("post_revenue", "peter", "match"), diff("post_output", "peter", "match")
    out.append(cl(f"Promotion, {name}: Peter minus Match is negative on post-window revenue and output",
                  "negative, negative", f"{pm_r:+.4f}, {pm_o:+.4f}", pm_r < 0 and pm_o < 0))
    tp_o, tp_l = diff("post_output", "tournament", "peter"), diff("post_coord_loss", "tournament", "peter")
    out.append(cl(f"Promotion, {name}: Tournament out-produces Peter but keeps a higher coordination loss",
                  "positive, positive", f"{tp_o:+.4f}, {tp_l:+.4f}", tp_o > 0 and tp_l > 0))
    if name == "winner":
      pn_r, pn_d = diff("post_revenue", "peter", "none"), diff("post_discovery", "peter", "none")
      out.append(cl("Promotion, winner: Peter minus no promotion is positive on revenue, negative on discovery",
                    "+0.6377, -1.3867", f"{pn_r:+.4f}, {pn_d:+.4f}", pn_r > 0 and pn_d < 0))
  sw = c.alpha_gamma
  order = lambda a, gm: tuple(np.argsort([-runs.mean("cum_revenue", "alpha_gamma", alpha=a, gamma=gm, coord_share=s)
                                          for s in shares], kind="stable"))
  default = order(c.alpha, c.gamma)
  differ = sum(order(a, gm) != default for a, gm in itertools.product(sw.alphas, sw.gammas))
  n_pairs = len(sw.alphas) * len(sw.gammas)
  out.append(cl("Alpha x gamma: the coordinator-share revenue order differs from the default in 8 of 9 pairs",
                "8 of 9", f"{differ} of {n_pairs}", differ == 8 and n_pairs == 9))
  lo_a, hi_a = min(sw.alphas), max(sw.alphas)
  worst = order(lo_a, c.gamma)[-1]
  top = order(hi_a, c.gamma)[0]
  out.append(cl(f"Alpha {label(lo_a)}: coordinator share 0.5 is worst; alpha {label(hi_a)}: it is best",
                "worst, best", f"{label(shares[worst])} worst, {label(shares[top])} best",
                shares[worst] == 0.5 and shares[top] == 0.5))
  signs = [runs.mean("post_revenue", "beta1", beta1=v, promotion="peter")
           - runs.mean("post_revenue", "beta1", beta1=v, promotion="match") for v in c.beta1_sweep.beta1s]
  out.append(cl("Beta1 sweep: Peter minus Match on post-window revenue is negative at every beta1",
                "negative at -1, 0, +1", ", ".join(f"{s:+.3f}" for s in signs), all(s < 0 for s in signs)))
  g0, g1, g5 = (runs.mean("cum_revenue", "graicunas", coord_share=s) for s in (0.0, 0.0625, 0.5))
  out.append(cl("Graicunas load: revenue falls from coordinator share 0 to 0.5, but 0.0625 is above 0",
                "87.37 -> 65.51, 88.97 at 0.0625", f"{g0:.2f} -> {g5:.2f}, {g1:.2f} at 0.0625",
                g5 < g0 and g1 > g0))
  return out


def summarize(config, table, results) -> dict:
  runs = Runs(config, table, results)
  figs = figures(runs)
  return {"experiment": "org_forms", "variant": config.variant, "figures": figs,
          "comparisons": comparisons(figs), "claims": claims(runs)}
