"""Organization forms as a jaxlab experiment: validate the config, run the sweep, write the report."""

from __future__ import annotations


import numpy as np

from jaxlab.core import results
from jaxlab.core import report as report_lib
from jaxlab.core.config import (ConfigError, dataclass_from, is_non_negative, is_positive, is_probability, require,
                                require_int, tuple_of)
from jaxlab.swarm.org_forms import analysis, grid, model, plots


def _cell(v):
  return tuple_of(3, is_probability)(v) and v[0] + v[2] <= 1


def _in(values, field):
  """Predicate: a value of the grid field `field` (its tuple of values)."""
  return lambda v: any(np.isclose(v, x) for x in values), f"one of {field} {tuple(values)}"


def _promotable(config, field, cells):
  """Every promotion cell must leave at least `model.promote_n` makers to promote."""
  m = config.model
  for cell in cells:
    spec, gen, _, _ = grid.role_counts(*cell, m.n_agents)
    if spec + gen < m.promote_n:
      raise ConfigError(field, f"the cell (coord, spec, comm) = {tuple(cell)} leaves {spec + gen} makers of "
                               f"{m.n_agents}, fewer than model.promote_n = {m.promote_n} to promote")


def validate(config) -> None:
  m = config.model
  require_int(config, "seeds", 2, "sd needs two seeds")
  require_int(config, "sweep_seeds", 2)
  require_int(config, "chunk_size", 1)
  require_int(config, "block", 0)
  require(config, "alpha", is_non_negative, "a non-negative number")
  require(config, "model.n_agents", lambda v: v >= 2, "at least 2")
  require(config, "model.n_blocks", lambda v: v >= 1 and m.n_agents % v == 0, "a divisor of model.n_agents")
  require(config, "model.n_domains", lambda v: v >= 2, "at least 2")
  require(config, "model.shock", lambda v: 0 < v < m.periods, "inside (0, model.periods)")
  require(config, "model.promote_t", lambda v: 0 < v < m.periods, "inside (0, model.periods)")
  require(config, "model.prize_window", lambda v: 0 < v <= m.promote_t, "in [1, model.promote_t]")
  require(config, "model.promote_n", lambda v: 0 <= v <= m.n_agents, "in [0, model.n_agents]")
  require(config, "model.sigma", is_non_negative, "a non-negative number")
  require(config, "model.task_sparse_prob", is_probability, "a probability")
  for field in ("model.task_concentration", "model.specialist_main", "model.specialist_other"):
    require(config, field, is_positive, "positive")
  require(config, "grid.structures", lambda v: len(v) > 0 and set(v) <= set(model.STRUCTURES),
          f"a non-empty tuple from {model.STRUCTURES}")
  for field in ("grid.coord_shares", "grid.spec_shares", "grid.comm_shares"):
    require(config, field, tuple_of(None, is_probability), "a non-empty tuple of shares in [0, 1]")
  require(config, "grid.comm_shares", lambda v: max(v) + max(config.grid.coord_shares) <= 1,
          "such that coordinator + communicator shares stay <= 1")
  require(config, "promotion.cells", lambda v: len(v) > 0 and all(map(_cell, v)),
          "(coord, spec, comm) share triples with coord + comm <= 1")
  require(config, "promotion.cell_names", lambda v: len(v) == len(config.promotion.cells),
          "one name per promotion cell")
  for field in ("promotion.rules", "beta1_sweep.rules"):
    require(config, field, lambda v: set(v) <= set(model.PROMOTIONS) and "peter" in v and "match" in v,
            f"rules from {model.PROMOTIONS} including peter and match")
  require(config, "beta1_sweep.cell", _cell, "a (coord, spec, comm) share triple")
  for field in ("alpha_gamma.spec_share", "alpha_gamma.comm_share", "graicunas.spec_share",
                "graicunas.comm_share", "slice.spec_share", "slice.comm_share"):
    require(config, field, is_probability, "a share in [0, 1]")
  # The report's slice is a line through the main grid: its shares must be grid values.
  g = config.grid
  require(config, "slice.spec_share", *_in(g.spec_shares, "grid.spec_shares"))
  require(config, "slice.comm_share", *_in(g.comm_shares, "grid.comm_shares"))
  _promotable(config, "promotion.cells", config.promotion.cells)
  _promotable(config, "beta1_sweep.cell", [config.beta1_sweep.cell])


def constants(config) -> model.Constants:
  return dataclass_from(model.Constants, config.model, root_seed=config.seed)


def run(config, workdir):
  """Runs every study of the config as one sharded, chunked, resumable sweep, then reports."""
  table = grid.build(config)
  return results.sweep_and_report(config, workdir, table, grid.model_inputs(table), model.batch_fn(constants(config)),
                                  report)


def report(workdir):
  config, table, summary, runs, images = results.summarize(workdir, analysis, plots)
  sections = [
      ("What ran", f"Variant `{config.variant}`: {len(table['seed'])} runs "
                   f"({config.seeds} seeds on the main grid and promotion cells, {config.sweep_seeds} on the sweeps), "
                   f"root seed {config.seed}. Every ± is the sample sd over seeds. Our random streams differ from "
                   "the original script's, so figures agree in distribution, not digit for digit. "
                   "Choices the spec leaves open are in docs/org_forms.md."),
      report_lib.comparisons_section(summary["comparisons"]),
      report_lib.claims_section(summary["claims"]),
      report_lib.plots_section(images),
  ]
  return report_lib.write_report(workdir, "Organization forms: published and ours", sections)


