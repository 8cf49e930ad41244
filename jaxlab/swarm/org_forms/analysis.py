"""From per-run results to figures, published-versus-ours rows and verdicts on the spec's claims.

Every claim is graded on a margin over seeds that is positive on the published side, with a 95%
bootstrap interval (`core.margins`): cells of one study share seeds (a run's key is its seed
index), so one resampled set of seeds serves every cell and comparisons are paired. Claims the
model guarantees are marked `by_construction`, each with the reason in its text.
"""

from __future__ import annotations

import itertools

import numpy as np

from jaxlab.core import margins, report, results, stats
from jaxlab.core.results import label
from jaxlab.swarm.org_forms import grid, model, published

PAIRS = (("peter", "match"), ("tournament", "peter"), ("peter", "none"), ("match", "none"),
         ("tournament", "none"))
SHARES = ("coord_share", "spec_share", "comm_share")


class Runs(results.Runs):
  """Runs of one study by labels (`runs.values(metric, "main", structure="flat", coord_share=0)`),
  in seed order."""

  keys = ("study",)
  names = {"study": grid.STUDIES, "structure": model.STRUCTURES, "promotion": model.PROMOTIONS}

  def cells(self, metric, study, cells) -> np.ndarray:
    """(cells, seeds): the metric of each cell (a dict of labels), seeds aligned across cells."""
    return np.stack([self.values(metric, study, **cell) for cell in cells]).astype(np.float64)


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
  medians = runs.values("idle_median", "main")
  out["main/max_idle_median"] = {"mean": float(medians.max()), "sd": None, "n": int(medians.size)}
  return out


def comparisons(figs: dict) -> list[dict]:
  return results.comparisons(published.FIGURES, figs)


def _has(values, *wanted) -> bool:
  return all(any(np.isclose(v, w) for v in values) for w in wanted)


def _at(values, x) -> int:
  return int(np.nonzero(np.isclose(np.asarray(values, np.float64), x))[0][0])


def _cell(x) -> str:
  return "({}, {}, {})".format(*map(label, x))


def idle_bound(config) -> float:
  """The largest idle share any run of the main grid can reach: coordinators count idle only in
  proportion to unused skill (at most all of them) and makers only below half the median
  making (at most half of them), so iota <= (coordinators + makers / 2) / N."""
  n, g = config.model.n_agents, config.grid
  bound = 0.0
  for cell in itertools.product(g.coord_shares, g.spec_shares, g.comm_shares):
    spec, gen, coord, _ = grid.role_counts(*cell, n)
    bound = max(bound, (coord + (spec + gen) / 2) / n)
  return bound


def _orders_differ(cells: np.ndarray, default: int) -> margins.Margin:
  """"Every other (alpha, gamma) pair orders the coordinator shares differently from the default":
  a pair's order differs when some two shares swap, by the smaller of the two gaps; the margin
  is the least such swap over the non-default pairs. cells: (pairs, shares, seeds)."""
  def margin(idx):
    m = margins.means(cells, idx)                              # (pairs, shares[, resamples])
    d = m[:, :, None] - m[:, None, :]                          # d[p, i, j] = mean_i - mean_j
    off = ~np.eye(m.shape[1], dtype=bool).reshape(m.shape[1], m.shape[1], *([1] * (m.ndim - 2)))
    swap = np.where(off, np.minimum(d, -d[default]), -np.inf).max(axis=(1, 2))
    return np.delete(swap, default, axis=0).min(0)
  return margin


def claims(runs: Runs) -> list[dict]:
  """The spec's qualitative statements, each with our numbers and its verdict over seeds."""
  c = runs.config
  g, sl = c.grid, dict(spec_share=c.slice.spec_share, comm_share=c.slice.comm_share)
  shares = tuple(g.coord_shares)
  n, n_sweep = c.seeds, c.sweep_seeds
  grade = lambda margin, units=n: margins.interval(margin, units)
  out, cl = [], report.claim
  along = lambda metric, structure: runs.cells(metric, "main", [dict(structure=structure, coord_share=s, **sl)
                                                                for s in shares])
  means = lambda x: x.mean(-1)
  at_share = lambda values, x: values[_at(shares, x)]

  if "modules" in g.structures:
    for metric, x, text in (("cum_revenue", 0.5, "revenue has no inverse-U in coordinator share; it peaks at 0.5"),
                            ("cum_discovery_high", 0.0, "high-lambda discovery peaks at coordinator share 0"),
                            ("cum_revenue_high", 0.0625, "high-lambda revenue peaks at coordinator share 0.0625")):
      if _has(shares, x) and len(shares) > 1:
        v = along(metric, "modules")
        out.append(cl(f"Modules slice: {text}", f"peak at {label(x)}",
                      f"peak at {label(shares[int(np.argmax(means(v)))])}", grade(margins.peak(v, _at(shares, x)))))
  if "flat" in g.structures and _has(shares, 0.0) and len(shares) > 1:
    rev, disc = along("cum_revenue", "flat"), along("cum_discovery", "flat")
    out.append(cl("Flat slice: revenue and discovery both peak at coordinator share 0", "both at 0",
                  f"revenue at {label(shares[int(np.argmax(means(rev)))])}, "
                  f"discovery at {label(shares[int(np.argmax(means(disc)))])}",
                  grade(margins.both(margins.peak(rev, _at(shares, 0.0)), margins.peak(disc, _at(shares, 0.0))))))
  if {"flat", "modules", "isolated"} <= set(g.structures):
    iso, flat, mod = (along("cum_revenue", st) for st in ("isolated", "flat", "modules"))
    wins = int(np.sum(means(iso) > means(flat)))
    out.append(cl("Slice: isolated modules out-earn flat at every coordinator share",
                  f"{len(shares)} of {len(shares)}", f"{wins} of {len(shares)}", grade(margins.every(iso - flat))))
    wins = int(np.sum(means(iso) >= means(mod)))
    out.append(cl("Slice: isolated modules out-earn modules at every coordinator share (by construction: the same "
                  "blocks and dynamics with the cross-block factor, at most 1, set to 1)",
                  f"{len(shares)} of {len(shares)}", f"{wins} of {len(shares)} (>=)", by_construction=True))
    if _has(shares, 0.5):
      f5, m5 = at_share(flat, 0.5), at_share(mod, 0.5)
      out.append(cl("Slice, coordinator share 0.5: flat revenue is above modules (modules do not beat flat)",
                    "110.06 vs 108.97", f"{f5.mean():.2f} vs {m5.mean():.2f}", grade(margins.difference(f5, m5))))
  if "flat" in g.structures and _has(shares, 0.0, 0.5):
    rev, disc = along("cum_revenue", "flat"), along("cum_discovery", "flat")
    worst = lambda v: label(shares[int(np.argmin(means(v)))])
    out.append(cl("Flat slice: coordinator share 0.5 is the worst cell for revenue and for discovery",
                  "worst for both", f"revenue worst at {worst(rev)}, discovery worst at {worst(disc)}",
                  grade(margins.both(margins.trough(rev, _at(shares, 0.5)), margins.trough(disc, _at(shares, 0.5))))))
    loss, effort = along("mean_coord_loss", "flat"), along("mean_effort", "flat")
    out.append(cl("Flat slice: at share 0.5 coordination loss is lower and effort higher than at 0 (by construction: "
                  "at share 0 there is no coordinator skill, and any skill narrows the gap and raises the "
                  "effort weight rho; the communicators are the same agents in both cells)",
                  "loss 0.6311 -> 0.6090, effort 0.9370 -> 0.9714",
                  f"loss {at_share(loss, 0).mean():.4f} -> {at_share(loss, 0.5).mean():.4f}, "
                  f"effort {at_share(effort, 0).mean():.4f} -> {at_share(effort, 0.5).mean():.4f}",
                  by_construction=True))
  if "modules" in g.structures:
    grid_cells = list(itertools.product(shares, g.spec_shares, g.comm_shares))
    on_modules = [dict(structure="modules", **dict(zip(SHARES, x))) for x in grid_cells]
    rev, disc = runs.cells("cum_revenue", "main", on_modules), runs.cells("cum_discovery", "main", on_modules)
    best_r, best_d = grid_cells[int(np.argmax(means(rev)))], grid_cells[int(np.argmax(means(disc)))]
    for name, values, best, cell in (("revenue", rev, best_r, (0.5, 0.75, 0.1)),
                                     ("discovery", disc, best_d, (0.25, 0.75, 0.0))):
      hit = [i for i, x in enumerate(grid_cells) if np.allclose(x, cell)]
      if hit and len(grid_cells) > 1:
        out.append(cl(f"Modules grid: the {name} winner is (coord, spec, comm) = {_cell(cell)}", _cell(cell),
                      _cell(best), grade(margins.peak(values, hit[0]))))
    if len(grid_cells) > 1:
      def different(idx):
        # A mix that wins both has both peak margins positive; none may.
        mr, md = margins.means(rev, idx), margins.means(disc, idx)
        both = [np.minimum(mr[i] - np.delete(mr, i, 0).max(0), md[i] - np.delete(md, i, 0).max(0))
                for i in range(len(grid_cells))]
        return -np.max(both, axis=0)
      out.append(cl("Revenue and discovery pick different mixes", "different",
                    "different" if best_r != best_d else "same", grade(different)))
    lo, hi = min(g.comm_shares), max(g.comm_shares)
    if lo != hi:
      pairs = list(itertools.product(shares, g.spec_shares))
      cell = lambda s, sp, cm: dict(structure="modules", coord_share=s, spec_share=sp, comm_share=cm)
      with_hi = [cell(s, sp, hi) for s, sp in pairs]
      with_lo = [cell(s, sp, lo) for s, sp in pairs]
      d_rev = runs.cells("cum_revenue", "main", with_hi) - runs.cells("cum_revenue", "main", with_lo)
      d_disc = runs.cells("cum_discovery", "main", with_lo) - runs.cells("cum_discovery", "main", with_hi)
      flips = int(np.sum((means(d_rev) > 0) & (means(d_disc) > 0)))
      out.append(cl(f"Communicators ({label(lo)} -> {label(hi)}) raise revenue and lower discovery in every "
                    "modules cell", "15 of 15", f"{flips} of {len(pairs)}",
                    grade(margins.both(margins.every(d_rev), margins.every(d_disc)))))
  medians = runs.values("idle_median", "main")
  bound = idle_bound(c)
  at_least = int(np.sum(medians >= 0.8))
  text = "No run has a within-run median idle share of 0.8 or more"
  if bound < 0.8:
    out.append(cl(f"{text} (by construction: idle share is at most (coordinators + makers / 2) / 48, "
                  f"{bound:.4f} in this grid)", "0 of 2700", f"{at_least} of {medians.size}", by_construction=True))
  else:
    main_cells = runs.cells("idle_median", "main", [dict(structure=st, **dict(zip(SHARES, x))) for st, x in
                                                    itertools.product(g.structures, itertools.product(
                                                        shares, g.spec_shares, g.comm_shares))])
    out.append(cl(text, "0 of 2700", f"{at_least} of {medians.size}",
                  grade(lambda idx: 0.8 - np.take(main_cells, idx, axis=-1).max(axis=(0, -1)))))
  spec_hi, spec_lo = max(g.spec_shares), min(g.spec_shares)
  if "modules" in g.structures and spec_hi != spec_lo and len(shares) == 5:
    for cm in g.comm_shares:
      heavy = lambda metric, sp: runs.cells(metric, "main", [dict(structure="modules", coord_share=s, spec_share=sp,
                                                                  comm_share=cm) for s in shares])
      disc = heavy("cum_discovery", spec_hi) - heavy("cum_discovery", spec_lo)
      rev = heavy("cum_revenue", spec_lo) - heavy("cum_revenue", spec_hi)
      out.append(cl(f"Modules, comm {label(cm)}: specialist-heavy beats generalist-heavy on discovery",
                    "5 of 5", f"{int(np.sum(means(disc) > 0))} of 5", grade(margins.count(disc, 5))))
      expected = 4 if cm == 0 else 0
      out.append(cl(f"Modules, comm {label(cm)}: generalist-heavy beats specialist-heavy on revenue",
                    f"{expected} of 5", f"{int(np.sum(means(rev) > 0))} of 5", grade(margins.count(rev, expected))))
  for cell in c.promotion.cells:
    name, sh = cell_name(c, cell), dict(zip(SHARES, cell))
    diff = lambda m, a, b: (runs.values(m, "promotion", promotion=a, **sh)
                            - runs.values(m, "promotion", promotion=b, **sh)).astype(np.float64)
    pm_r, pm_o = diff("post_revenue", "peter", "match"), diff("post_output", "peter", "match")
    out.append(cl(f"Promotion, {name}: Peter minus Match is negative on post-window revenue and output",
                  "negative, negative", f"{pm_r.mean():+.4f}, {pm_o.mean():+.4f}",
                  grade(margins.both(margins.mean_of(-pm_r), margins.mean_of(-pm_o)))))
    if {"tournament", "peter"} <= set(c.promotion.rules):
      tp_o, tp_l = diff("post_output", "tournament", "peter"), diff("post_coord_loss", "tournament", "peter")
      out.append(cl(f"Promotion, {name}: Tournament out-produces Peter", "positive", f"{tp_o.mean():+.4f}",
                    grade(margins.mean_of(tp_o))))
      out.append(cl(f"Promotion, {name}: Tournament keeps a higher coordination loss than Peter (by construction: "
                    "Tournament moves nobody into coordination, Peter adds coordinator skill, which can only "
                    "narrow a block's gap)", "positive", f"{tp_l.mean():+.4f}", by_construction=True))
    if name == "winner" and "none" in c.promotion.rules:
      pn_r, pn_d = diff("post_revenue", "peter", "none"), diff("post_discovery", "peter", "none")
      out.append(cl("Promotion, winner: Peter minus no promotion is positive on revenue, negative on discovery",
                    "+0.6377, -1.3867", f"{pn_r.mean():+.4f}, {pn_d.mean():+.4f}",
                    grade(margins.both(margins.mean_of(pn_r), margins.mean_of(-pn_d)))))
  sw = c.alpha_gamma
  pairs = list(itertools.product(sw.alphas, sw.gammas))
  sweep = np.stack([runs.cells("cum_revenue", "alpha_gamma", [dict(alpha=a, gamma=gm, coord_share=s) for s in shares])
                    for a, gm in pairs])
  default = [i for i, (a, gm) in enumerate(pairs) if np.isclose(a, c.alpha) and np.isclose(gm, c.gamma)]
  if len(pairs) == 9 and default and len(shares) > 1:
    order = lambda p: tuple(np.argsort(-means(sweep[p]), kind="stable"))
    differ = sum(order(p) != order(default[0]) for p in range(len(pairs)))
    out.append(cl("Alpha x gamma: the coordinator-share revenue order differs from the default in 8 of 9 pairs",
                  "8 of 9", f"{differ} of 9", grade(_orders_differ(sweep, default[0]), n_sweep)))
  lo_a, hi_a = min(sw.alphas), max(sw.alphas)
  if _has(shares, 0.5) and _has(sw.gammas, c.gamma) and lo_a != hi_a and len(shares) > 1:
    at = lambda a: sweep[[i for i, (x, gm) in enumerate(pairs) if np.isclose(x, a) and np.isclose(gm, c.gamma)][0]]
    v_lo, v_hi = at(lo_a), at(hi_a)
    out.append(cl(f"Alpha {label(lo_a)}: coordinator share 0.5 is worst; alpha {label(hi_a)}: it is best",
                  "worst, best", f"{label(shares[int(np.argmin(means(v_lo)))])} worst, "
                  f"{label(shares[int(np.argmax(means(v_hi)))])} best",
                  grade(margins.both(margins.trough(v_lo, _at(shares, 0.5)), margins.peak(v_hi, _at(shares, 0.5))),
                        n_sweep)))
  if {"peter", "match"} <= set(c.beta1_sweep.rules):
    b1 = c.beta1_sweep.beta1s
    gaps = np.stack([runs.values("post_revenue", "beta1", beta1=v, promotion="match")
                     - runs.values("post_revenue", "beta1", beta1=v, promotion="peter") for v in b1]).astype(np.float64)
    out.append(cl("Beta1 sweep: Peter minus Match on post-window revenue is negative at every beta1",
                  "negative at -1, 0, +1", ", ".join(f"{-x:+.3f}" for x in means(gaps)),
                  grade(margins.every(gaps), n_sweep)))
  if _has(shares, 0.0, 0.0625, 0.5):
    g0, g1, g5 = (runs.values("cum_revenue", "graicunas", coord_share=s).astype(np.float64) for s in (0.0, 0.0625, 0.5))
    out.append(cl("Graicunas load: revenue falls from coordinator share 0 to 0.5, but 0.0625 is above 0",
                  "87.37 -> 65.51, 88.97 at 0.0625", f"{g0.mean():.2f} -> {g5.mean():.2f}, {g1.mean():.2f} at 0.0625",
                  grade(margins.both(margins.difference(g0, g5), margins.difference(g1, g0)), n_sweep)))
  return out


def summarize(config, table, results) -> dict:
  runs = Runs(config, table, results)
  figs = figures(runs)
  return {"experiment": "org_forms", "variant": config.variant, "figures": figs,
          "comparisons": comparisons(figs), "claims": claims(runs)}
