"""Harness versus brain as a jaxlab experiment: validate the config, run the sweep, write the report.

Regimes are names from the strategy registry (`strategies.resolve`); modules in `config.imports`
are imported first, so a strategy registered in a user's own module runs by name.
"""

from __future__ import annotations

import functools
import json
import warnings
from pathlib import Path

import jax
import numpy as np

from jaxlab.core import checkpoint, mesh, results, sweep as sweep_lib
from jaxlab.core import report as report_lib
from jaxlab.core.config import ConfigError, import_modules, require, require_int
from jaxlab.evolution import controller, evaluation, strategies
from jaxlab.evolution.harness_vs_brain import analysis, grid, plots, sweep


def _overrides(config) -> dict:
  return {name: dict(v) for name, v in config.strategy_params.items()}


def regimes(config) -> list[strategies.Regime]:
  """The config's regimes, resolved: strategy object, genome kind, params, selection."""
  import_modules(config)
  given = _overrides(config)
  hidden = max(config.brain_widths)
  return [strategies.resolve(name, config.population, hidden, given.get(name)) for name in config.regimes]


def validate(config) -> None:
  require_int(config, "seeds", 2, "sd needs two seeds")
  require_int(config, "generations", 2, "turnover needs two generations")
  require_int(config, "elite", 1)
  require(config, "population", lambda v: isinstance(v, int) and v >= 2 and v >= config.elite,
          "an integer >= 2 and >= elite")
  require(config, "ks", lambda v: len(v) > 0 and all(isinstance(x, int) and 1 <= x <= controller.KMAX for x in v),
          f"a non-empty tuple of slot counts in [1, {controller.KMAX}]")
  require(config, "brain_widths", lambda v: len(v) > 0 and all(isinstance(x, int) and x >= 1 for x in v),
          "a non-empty tuple of MLP widths >= 1")
  require_int(config, "chunk", 1, "generations per checkpoint")
  require_int(config, "block", 0)
  import_modules(config)
  require(config, "regimes", lambda v: len(v) > 0 and all(isinstance(r, str) for r in v) and len(set(v)) == len(v),
          "a non-empty tuple of distinct regime names")
  for name in config.strategy_params:
    base = name.partition("@")[0]
    require(config, f"strategy_params.{name}", lambda v: hasattr(v, "items"), "a block of {field: value}")
    try:
      strategies.entry(base)
    except strategies.RegimeError as e:
      raise ConfigError(f"strategy_params.{name}", str(e)) from None
  try:
    regimes(config)
  except strategies.RegimeError as e:
    field = "regimes" if e.field is None else f"strategy_params.{e.regime}.{e.field}"
    raise ConfigError(field, f"{e.regime}: {e}" if e.field is None else str(e)) from None
  w = config.world
  for field in ("forage_empty", "forage_rare", "forage_seen", "bandit_rare"):
    require(config, f"world.{field}", lambda v: 0 <= v <= 1, "a probability")
  require(config, "world.forage_rare", lambda v: v + w.forage_empty <= 1, "at most 1 - forage_empty")
  for field in ("forage_steps", "bandit_steps", "delayed_common", "delayed_rare"):
    require_int(config, f"world.{field}", 1)
  for field in ("cost_weight", "spam_weight", "sensor_cost", "tax_rate", "jackpot"):
    require(config, f"world.{field}", lambda v: v >= 0, "non-negative")


def constants(config) -> sweep.Sweep:
  return sweep.Sweep(world=evaluation.world_constants(config), population=config.population, elite=config.elite,
                     root_seed=config.seed)


def _stack(trees):
  return jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *trees)


def programs(config, table, resolved=None):
  """The sweep's programs: [(label, sweep.Program, row indices, inputs)], one per (strategy object,
  genome kind), rows in table order. The label (its first regime's name) names its checkpoints."""
  resolved = resolved or regimes(config)
  k = constants(config)
  members: dict[tuple, list[int]] = {}
  for i, r in enumerate(resolved):
    members.setdefault((r.strategy, r.genome), []).append(i)
  out = []
  for (strategy, genome), regime_ids in members.items():
    selections = {resolved[i].myopic for i in regime_ids}
    program = sweep.Program(k, strategy, genome, selections.pop() if len(selections) == 1 else None)
    idx = np.nonzero(np.isin(table["regime"], regime_ids))[0]
    own = [resolved[i] for i in table["regime"][idx]]
    inputs = {"seed": table["seed"][idx], "capacity": table["capacity"][idx],
              "myopic": np.array([r.myopic for r in own]), "params": _stack([r.params for r in own])}
    label = resolved[regime_ids[0]].name.replace(":", "_").replace("@", "_")
    label += f"_{len(out)}" if label in {o[0] for o in out} else ""
    out.append((label, program, idx, inputs))
  return out


# LAPACK-backed primitives (CMA-ES and its relatives decompose their covariance with eigh).
_LAPACK = {"eigh", "cholesky", "lu", "qr", "householder_product", "geqrf", "svd", "schur", "eig", "hessenberg",
           "tridiagonal", "tridiagonal_solve"}


def _primitives(jaxpr) -> set[str]:
  names = set()
  for eqn in jaxpr.eqns:
    names.add(eqn.primitive.name)
    for value in eqn.params.values():
      for sub in value if isinstance(value, (tuple, list)) else (value,):
        inner = getattr(sub, "jaxpr", sub)
        if hasattr(inner, "eqns"):
          names |= _primitives(inner)
  return names


@functools.lru_cache(maxsize=None)
def _uses_lapack(program: sweep.Program, treedef, leaves: tuple) -> bool:
  rows = treedef.unflatten([jax.ShapeDtypeStruct((1, *shape), dtype) for shape, dtype in leaves])
  state = jax.eval_shape(sweep.batch_init(program), rows)
  traced = (jax.make_jaxpr(sweep.batch_init(program))(rows).jaxpr,
            jax.make_jaxpr(sweep.batch_step(program))(state, 0).jaxpr)
  return any(_primitives(j) & _LAPACK for j in traced)


def _mesh_for(program: sweep.Program, inputs, mesh_, label: str):
  """The mesh a program runs on. jaxlib 0.10's CPU LAPACK kernels hand batches to the intra-op
  thread pool and block on them, so several CPU devices running one at once can wait on each
  other for ever (seen with CMA-ES on 8 forced CPU devices); such a program runs on one CPU
  device instead, which gives the same bits (results do not depend on the device count)."""
  if mesh_.size == 1 or jax.process_count() > 1 or mesh_.devices.flat[0].platform != "cpu":
    return mesh_
  leaves, treedef = jax.tree.flatten(inputs)
  if not _uses_lapack(program, treedef, tuple((np.shape(x)[1:], np.asarray(x).dtype) for x in leaves)):
    return mesh_
  warnings.warn(f"{label}: runs on one CPU device (it calls LAPACK, which deadlocks across several CPU devices "
                "in this jaxlib)", stacklevel=3)
  return jax.sharding.Mesh(np.array(mesh_.devices.flat[:1]), (mesh.AXIS,))

def _merge(table, parts, generations):
  """Per-program outputs back into the runs table's row order."""
  n = len(table["seed"])
  history = {}
  for idx, out in parts:
    for m, v in out.items():
      history.setdefault(m, np.zeros((n, generations) + v.shape[2:], v.dtype))[idx] = v
  return history


def simulate(config, workdir, mesh_=None, stop_after=None, states=False):
  """The sweep: each program's initial states, then generations in checkpointed chunks (one Orbax
  folder per program, `checkpoints/<label>`).
  Returns (table, per-generation metrics (rows, generations)); `train.Stopped` when stopped early; with
  `states`, also {label: (row indices, final row states)} (populations, strategy states)."""
  resolved = regimes(config)
  table = grid.build(config, resolved)
  mesh_ = mesh_ or mesh.make_mesh()
  key = checkpoint.fingerprint(config.to_dict(), table)
  parts, final = [], {}
  for label, program, idx, inputs in programs(config, table, resolved):
    devices = _mesh_for(program, inputs, mesh_, label)
    state = mesh.map_runs(sweep.batch_init(program), inputs, devices, config.block)
    out = sweep_lib.scan_chunked(sweep.batch_step(program), state, config.generations, config.chunk, workdir,
                                  key=f"{key}:{label}", desc=f"harness_vs_brain:{config.variant}:{label}",
                                  mesh=devices, block=config.block, stop_after=stop_after,
                                  checkpoints=f"checkpoints/{label}")
    parts.append((idx, out[1]))
    final[label] = (idx, out[0])
  history = _merge(table, parts, config.generations)
  return (table, history, final) if states else (table, history)


def evolve(config, mesh_=None):
  """The same sweep as one jitted program per strategy and genome kind, no checkpoints (what the
  benchmark times). Returns (table, per-generation metrics)."""
  resolved = regimes(config)
  table = grid.build(config, resolved)
  mesh_ = mesh_ or mesh.make_mesh()
  parts = [(idx, mesh.map_runs(sweep.batch_run(program, config.generations), inputs,
                               _mesh_for(program, inputs, mesh_, label), config.block))
           for label, program, idx, inputs in programs(config, table, resolved)]
  return table, _merge(table, parts, config.generations)


def run(config, workdir):
  """Runs every regime x capacity x seed as one sharded, generation-chunked, resumable sweep, then reports."""
  resolved = regimes(config)
  table, history = simulate(config, workdir)
  results.save(workdir, table, {m: np.asarray(history[m]) for m in sweep.METRICS})
  if jax.process_index() == 0:
    described = {r.name: strategies.describe(r) for r in resolved}
    report_lib.write_json(Path(workdir) / "regimes.json", described)
  return report(workdir) if jax.process_index() == 0 else None


def _regimes_table(workdir, config) -> str:
  path = Path(workdir) / "regimes.json"
  if not path.is_file():
    return "Regimes: " + ", ".join(config.regimes) + "."
  described = json.loads(path.read_text())
  rows = [[name, d["strategy"], d["genome"], d["selection"],
           ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in d["params"].items()) or "-"]
          for name, d in ((name, described[name]) for name in config.regimes if name in described)]
  return report_lib.markdown_table(["regime", "strategy", "genome", "selected on", "hyperparameters"], rows)


def report(workdir):
  config, table, summary, runs, images = results.summarize(workdir, analysis, plots)
  kinds = {runs.genome(r) for r in config.regimes}
  capacity = [f"slots K in {tuple(config.ks)} for the prototype table"] if "table" in kinds else []
  if kinds - {"table"}:
    capacity.append(f"MLP widths in {tuple(config.brain_widths)} for the neural genomes")
  sections = [
      ("What ran", f"Variant `{config.variant}`: {len(table['seed'])} runs = {len(config.regimes)} regimes x "
                   f"capacities ({'; '.join(capacity)}; columns K= below) x {config.seeds} seeds, "
                   f"{config.generations} generations, population {config.population}, root seed {config.seed}. "
                   "Figures are final-generation values (turnover: the mean over generations 1..G-1); every ± "
                   "is the sample sd over seeds. The tool catalog and every free choice are ours "
                   "(docs/harness_vs_brain.md) and were not tuned to the published numbers.\n\n"
                   + _regimes_table(workdir, config)),
      ("Elite fitness by regime and capacity", "Mean true F of the top 8 by selection fitness, final "
                                               "generation (the published metric).\n\n"
                                               + analysis.fitness_table(runs, "elite_fitness")),
      ("Best-so-far fitness by regime and capacity", "True F of the best individual found so far (by "
                                                     "selection fitness), final generation.\n\n"
                                                     + analysis.fitness_table(runs, "best_fitness")),
      *([("The brain alone, the harness alone and both (MLP)",
          "Elite fitness, final generation, of one strategy evolving the MLP brain on the frozen field kit, the "
          "harness around a frozen random brain, and both; margins with 95% bootstrap intervals over seeds.\n\n"
          + analysis.neural_capacity_table(summary["neural_capacity"]))] if summary["neural_capacity"] else []),
      report_lib.comparisons_section(summary["comparisons"]),
      report_lib.claims_section(summary["claims"]),
      report_lib.plots_section(images),
  ]
  return report_lib.write_report(workdir, "Harness versus brain: published and ours", sections)
