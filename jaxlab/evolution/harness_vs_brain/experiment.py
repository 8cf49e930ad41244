"""Harness versus brain as a jaxlab experiment: validate the config, run the sweep, write the report."""

from __future__ import annotations

import dataclasses
import jax
import numpy as np

from jaxlab.core import checkpoint, mesh, results
from jaxlab.core import report as report_lib
from jaxlab.core.config import require
from jaxlab.evolution import controller, strategies, world
from jaxlab.evolution.harness_vs_brain import analysis, grid, plots, sweep


def _int_at_least(n):
  return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= n


def validate(config) -> None:
  require(config, "seeds", _int_at_least(2), "an integer >= 2 (sd needs two seeds)")
  require(config, "generations", _int_at_least(2), "an integer >= 2 (turnover needs two generations)")
  require(config, "elite", _int_at_least(1), "a positive integer")
  require(config, "population", lambda v: _int_at_least(2)(v) and v >= config.elite,
          "an integer >= 2 and >= elite")
  require(config, "ks", lambda v: len(v) > 0 and all(1 <= x <= controller.KMAX for x in v),
          f"a non-empty tuple of slot counts in [1, {controller.KMAX}]")
  require(config, "regime_names", lambda v: len(v) > 0 and len(set(v)) == len(v) and set(v) <= set(sweep.REGIMES),
          f"distinct names from {sweep.REGIMES}")
  require(config, "chunk", _int_at_least(1), "a positive integer (generations per checkpoint)")
  require(config, "block", _int_at_least(0), "a non-negative integer")
  for name in strategies.REGIMES:
    r = f"regimes.{name}"
    require(config, f"{r}.n_elite", lambda v: _int_at_least(0)(v) and v < config.population,
            "an integer in [0, population)")
    require(config, f"{r}.n_parents", lambda v: _int_at_least(1)(v) and v <= config.population,
            "an integer in [1, population]")
    for field in ("proto_rate", "tool_rate", "harness_rate", "edit_rate"):
      require(config, f"{r}.{field}", lambda v: 0 <= v <= 1, "a probability")
    require(config, f"{r}.proto_sigma", lambda v: v >= 0, "non-negative")
  w = config.world
  for field in ("forage_empty", "forage_rare", "forage_seen", "bandit_rare"):
    require(config, f"world.{field}", lambda v: 0 <= v <= 1, "a probability")
  require(config, "world.forage_rare", lambda v: v + w.forage_empty <= 1, "at most 1 - forage_empty")
  for field in ("forage_steps", "bandit_steps", "delayed_common", "delayed_rare"):
    require(config, f"world.{field}", _int_at_least(1), "a positive integer")
  for field in ("cost_weight", "spam_weight", "sensor_cost", "tax_rate", "jackpot"):
    require(config, f"world.{field}", lambda v: v >= 0, "non-negative")


def constants(config) -> sweep.Sweep:
  names = {f.name for f in dataclasses.fields(world.Constants)}
  regimes = tuple(tuple(sorted(config.regimes[r].to_dict().items())) for r in strategies.REGIMES)
  return sweep.Sweep(world=world.Constants(**{n: config.world[n] for n in names}),
                     population=config.population, elite=config.elite, root_seed=config.seed,
                     regimes=regimes)


def _kinds(table):
  """Row indices of each row kind (table GA, MLP) that the table has, in sweep.KINDS order."""
  kind = sweep.kind_of(table["regime"])
  return [(name, np.nonzero(kind == i)[0]) for i, name in enumerate(sweep.KINDS) if (kind == i).any()]


def _merge(table, parts, generations):
  """Per-kind outputs back into the runs table's row order."""
  n = len(table["seed"])
  history = {}
  for idx, out in parts:
    for m, v in out.items():
      history.setdefault(m, np.zeros((n, generations) + v.shape[2:], v.dtype))[idx] = v
  return history


def simulate(config, workdir, mesh_=None, stop_after=None):
  """The sweep: each row kind's initial states, then generations in checkpointed chunks (one
  Orbax folder per kind, `checkpoints/table` and `checkpoints/mlp`).
  Returns (table, per-generation metrics (rows, generations)), or None when stopped early."""
  table = grid.build(config)
  k = constants(config)
  mesh_ = mesh_ or mesh.make_mesh()
  key = checkpoint.fingerprint(config.to_dict(), table)
  parts = []
  for kind, idx in _kinds(table):
    rows = {name: v[idx] for name, v in grid.model_inputs(table).items()}
    state = mesh.map_runs(sweep.batch_init(k, kind), rows, mesh_, config.block)
    out = checkpoint.scan_chunked(sweep.batch_step(k, kind), state, config.generations, config.chunk,
                                  workdir, key=f"{key}:{kind}", desc=f"harness_vs_brain:{config.variant}:{kind}",
                                  mesh=mesh_, block=config.block, stop_after=stop_after,
                                  checkpoints=f"checkpoints/{kind}")
    if out is None:
      return None
    parts.append((idx, out[1]))
  return table, _merge(table, parts, config.generations)


def evolve(config, mesh_=None):
  """The same sweep as one jitted program per row kind, no checkpoints (what the benchmark times).
  Returns (table, per-generation metrics)."""
  table = grid.build(config)
  k = constants(config)
  mesh_ = mesh_ or mesh.make_mesh()
  parts = []
  for kind, idx in _kinds(table):
    rows = {name: v[idx] for name, v in grid.model_inputs(table).items()}
    parts.append((idx, mesh.map_runs(sweep.batch_run(k, kind, config.generations), rows, mesh_, config.block)))
  return table, _merge(table, parts, config.generations)


def run(config, workdir):
  """Runs every regime x K x seed as one sharded, generation-chunked, resumable sweep, then reports."""
  table, history = simulate(config, workdir)
  results.save(workdir, table, {m: np.asarray(history[m]) for m in sweep.METRICS})
  return report(workdir) if jax.process_index() == 0 else None


def report(workdir):
  config, table, summary, runs, images = results.summarize(workdir, analysis, plots)
  sections = [
      ("What ran", f"Variant `{config.variant}`: {len(table['seed'])} runs = {len(config.regime_names)} regimes x "
                   f"K in {tuple(config.ks)} x {config.seeds} seeds, {config.generations} generations, "
                   f"population {config.population}, root seed {config.seed}. Figures are final-generation "
                   "values (turnover: the mean over generations 1..G-1); every ± is the sample sd over seeds. "
                   "The tool catalog and every free choice are ours (docs/harness_vs_brain.md) and were not "
                   "tuned to the published numbers."),
      ("Elite fitness by regime and K", analysis.fitness_table(runs)),
      report_lib.comparisons_section(summary["comparisons"]),
      report_lib.claims_section(summary["claims"]),
      report_lib.plots_section(images),
  ]
  return report_lib.write_report(workdir, "Harness versus brain: published and ours", sections)
