"""Organization forms as a jaxlab experiment: validate the config, run the sweep, write the report."""

from __future__ import annotations

import jax

from jaxlab.core import checkpoint, results
from jaxlab.core import report as report_lib
from jaxlab.core.config import dataclass_from, require, require_int
from jaxlab.swarm.org_forms import analysis, grid, model, plots

SHARES = ("coord_share", "spec_share", "comm_share")


def _share(v):
  return isinstance(v, (int, float)) and 0 <= v <= 1


def _cell(v):
  return len(v) == 3 and all(map(_share, v)) and v[0] + v[2] <= 1


def validate(config) -> None:
  m = config.model
  require_int(config, "seeds", 2, "sd needs two seeds")
  require_int(config, "sweep_seeds", 2)
  require_int(config, "chunk_size", 1)
  require_int(config, "block", 0)
  require(config, "alpha", lambda v: v >= 0, "a non-negative number")
  require(config, "model.n_agents", lambda v: v >= 2, "at least 2")
  require(config, "model.n_blocks", lambda v: v >= 1 and m.n_agents % v == 0, "a divisor of model.n_agents")
  require(config, "model.n_domains", lambda v: v >= 2, "at least 2")
  require(config, "model.shock", lambda v: 0 < v < m.periods, "inside (0, model.periods)")
  require(config, "model.promote_t", lambda v: 0 < v < m.periods, "inside (0, model.periods)")
  require(config, "model.prize_window", lambda v: 0 < v <= m.promote_t, "in [1, model.promote_t]")
  require(config, "model.promote_n", lambda v: 0 <= v <= m.n_agents, "in [0, model.n_agents]")
  require(config, "model.sigma", lambda v: v >= 0, "a non-negative number")
  require(config, "model.task_sparse_prob", _share, "a probability")
  require(config, "model.task_concentration", lambda v: v > 0, "positive")
  require(config, "model.specialist_main", lambda v: v > 0, "positive")
  require(config, "model.specialist_other", lambda v: v > 0, "positive")
  require(config, "grid.structures", lambda v: len(v) > 0 and set(v) <= set(model.STRUCTURES),
          f"a non-empty tuple from {model.STRUCTURES}")
  for field in ("grid.coord_shares", "grid.spec_shares", "grid.comm_shares"):
    require(config, field, lambda v: len(v) > 0 and all(map(_share, v)), "a non-empty tuple of shares in [0, 1]")
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
    require(config, field, _share, "a share in [0, 1]")


def constants(config) -> model.Constants:
  return dataclass_from(model.Constants, config.model, root_seed=config.seed)


def run(config, workdir):
  """Runs every study of the config as one sharded, chunked, resumable sweep, then reports."""
  table = grid.build(config)
  out = checkpoint.sweep(config, model.batch_fn(constants(config)), table, grid.model_inputs(table), workdir)
  results.save(workdir, table, out)
  return report(workdir) if jax.process_index() == 0 else None


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


