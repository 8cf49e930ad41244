"""The runs table of an org-forms config: every study's cells times seeds, one row per run.

Studies: `main` (structures x coordinator x specialist x communicator shares), `promotion`
(rules on named cells), `alpha_gamma` (the modules sweep), `beta1` (Peter and Match at three
depth weights) and `graicunas` (the load sensitivity). Label columns (`study`, shares, `cell`)
are for analysis; `MODEL_INPUTS` are what the jitted model reads.
"""

from __future__ import annotations

import itertools

import numpy as np

from jaxlab.swarm.org_forms import model

STUDIES = ("main", "promotion", "alpha_gamma", "beta1", "graicunas")
MODEL_INPUTS = ("seed", "counts", "structure", "promotion", "load", "alpha", "gamma", "beta1")


def role_counts(coord_share: float, spec_share: float, comm_share: float, n: int) -> np.ndarray:
  """Largest-remainder integer split of n over (specialist, generalist, coordinator, communicator).

  Ties in the remainder go to the earlier role, in that order.
  """
  makers = 1.0 - coord_share - comm_share
  shares = np.array([spec_share * makers, (1 - spec_share) * makers, coord_share, comm_share])
  exact = shares * n
  counts = np.floor(exact + 1e-9).astype(np.int64)
  remainder = exact - counts
  order = np.argsort(-np.round(remainder, 9), kind="stable")
  counts[order[: n - counts.sum()]] += 1
  return counts


def _rows(study, cells, seeds, n_agents, **fixed):
  """One row per (cell, seed). A cell is a dict of labels and model inputs."""
  rows = []
  for cell_index, cell in enumerate(cells):
    cell = {**fixed, **cell}
    counts = role_counts(cell["coord_share"], cell["spec_share"], cell["comm_share"], n_agents)
    for seed in range(seeds):
      rows.append({**cell, "study": STUDIES.index(study), "cell": cell_index, "seed": seed,
                   "counts": counts})
  return rows


def _share_cells(coord_shares, spec_shares, comm_shares):
  return [dict(coord_share=c, spec_share=s, comm_share=k)
          for s, k, c in itertools.product(spec_shares, comm_shares, coord_shares)]


def build(config) -> dict[str, np.ndarray]:
  n = config.model.n_agents
  g, p, sw, b1, gr = config.grid, config.promotion, config.alpha_gamma, config.beta1_sweep, config.graicunas
  base = dict(structure=model.MODULES, promotion=model.NO_PROMOTION, load=model.BROOKS,
              alpha=config.alpha, gamma=config.gamma, beta1=config.promotion.beta1)
  rows = []
  for structure in g.structures:
    cells = _share_cells(g.coord_shares, g.spec_shares, g.comm_shares)
    rows += _rows("main", cells, config.seeds, n, **{**base, "structure": model.STRUCTURES.index(structure)})
  promo_cells = [dict(coord_share=c, spec_share=s, comm_share=k, promotion=model.PROMOTIONS.index(rule))
                 for (c, s, k) in p.cells for rule in p.rules]
  rows += _rows("promotion", promo_cells, config.seeds, n, **base)
  sweep_cells = [dict(alpha=a, gamma=gm, **cell) for a, gm in itertools.product(sw.alphas, sw.gammas)
                 for cell in _share_cells(g.coord_shares, [sw.spec_share], [sw.comm_share])]
  rows += _rows("alpha_gamma", sweep_cells, config.sweep_seeds, n, **base)
  c, s, k = b1.cell
  beta_cells = [dict(coord_share=c, spec_share=s, comm_share=k, beta1=v, promotion=model.PROMOTIONS.index(rule))
                for v in b1.beta1s for rule in b1.rules]
  rows += _rows("beta1", beta_cells, config.sweep_seeds, n, **base)
  rows += _rows("graicunas", _share_cells(g.coord_shares, [gr.spec_share], [gr.comm_share]),
                config.sweep_seeds, n, **{**base, "load": model.GRAICUNAS})
  table = {key: np.array([r[key] for r in rows]) for key in rows[0]}
  floats = ("alpha", "gamma", "beta1", "coord_share", "spec_share", "comm_share")
  return {key: v.astype(np.float32 if key in floats else np.int32) for key, v in table.items()}


def model_inputs(table) -> dict[str, np.ndarray]:
  return {key: table[key] for key in MODEL_INPUTS}
