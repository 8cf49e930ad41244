"""The pure core of evolution-harness-vs-brain.md: one run's evolution, one generation per step.

A run is a row (regime, K, seed). `init_row` draws the seed's tasks and the initial population;
`step_row` is one generation: ask, evaluate every individual on the seed's tasks, tell, record
the elite's metrics. The five table regimes share one vmapped program through their Params rows.
The sixth, a Flax MLP of width K evolved by evosax's SNES, is a second row kind with its own
`init_mlp_row` / `step_mlp_row` and its own program (under vmap a per-row branch would run both
sides for every row), so no row pays for the other kind's work.

Keys: the seed key is fold_in(root, seed), so regimes and K see the same tasks and initial draws
seed by seed (a paired design); generation t uses fold_in(seed key, 2 + t), so chunking
and resuming never change a run.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
from evosax.algorithms import SNES

from jaxlab.evolution import controller, strategies, world

REGIMES = strategies.REGIMES + ("mlp_evosax",)
MLP = len(strategies.REGIMES)
METRICS = ("elite_fitness", "elite_myopic", "deceptive", "key_retention", "elite_tools", "turnover")


@dataclasses.dataclass(frozen=True)
class Sweep:
  """Everything fixed across the rows of one sweep (hashable: it keys the compiled programs)."""
  world: world.Constants = world.Constants()
  population: int = 32
  elite: int = 8                  # the spec's "top 8"
  root_seed: int = 0
  regimes: tuple = ()             # per REGIMES[:5], a tuple of (field, value) pairs of Params


def params_table(k: Sweep) -> strategies.Params:
  return strategies.regime_params({r: dict(v) for r, v in zip(strategies.REGIMES, k.regimes)})


@functools.lru_cache(maxsize=None)
def algorithms(k: Sweep):
  """The table GA and the evosax adapter (cached: the evosax object keys its jitted methods)."""
  es = SNES(population_size=k.population, solution=controller.mlp_template())
  return strategies.PrototypeGA(k.population), strategies.EvosaxAdapter(es)


def seed_key(row, k: Sweep):
  return jax.random.fold_in(jax.random.key(k.root_seed), row["seed"])


def evaluate_genome(g: controller.Genome, n_slots, tasks, k: Sweep) -> dict:
  used = controller.table_tools(g, n_slots, tasks)
  fit = world.fitness(used, g.tool_mask, g.sensor_mask, tasks, k.world)
  value = world.myopic_tool_value(used, g.tool_mask, fit["scores"], tasks, k.world)
  return dict(F=fit["F"], F_myopic=fit["F_myopic"], deceptive=fit["deceptive"], tool_value=value,
              tool_mask=g.tool_mask)


def evaluate_mlp(params, width, tasks, k: Sweep) -> dict:
  tool_mask, sensor_mask = controller.field_kit()
  used = controller.mlp_tools(params, width, tool_mask, sensor_mask, tasks)
  fit = world.fitness(used, tool_mask, sensor_mask, tasks, k.world)
  return dict(F=fit["F"], F_myopic=fit["F_myopic"], deceptive=fit["deceptive"], tool_mask=tool_mask)


def _regime_params(row, k: Sweep) -> strategies.Params:
  return jax.tree.map(lambda x: x[jnp.minimum(row["regime"], MLP - 1)], params_table(k))


def _tasks(row, k: Sweep):
  return world.draw_tasks(jax.random.fold_in(seed_key(row, k), 0), k.world)


def init_row(row, k: Sweep) -> dict:
  """A table-GA row (regimes 0..4): the seed's tasks and the initial population."""
  ga, _ = algorithms(k)
  kg, _ = jax.random.split(jax.random.fold_in(seed_key(row, k), 1))
  p = _regime_params(row, k)
  pop = jax.vmap(controller.random_genome)(jax.random.split(kg, k.population))
  kit_tools, kit_sensors = controller.field_kit()
  n = k.population
  # Model-first freezes the complete field kit; harness-first freezes one random controller
  # (individual 0's) for the whole population.
  pop = controller.Genome(
      protos=jnp.where(p.evolve_controller, pop.protos, pop.protos[:1]),
      tools=jnp.where(p.evolve_controller, pop.tools, pop.tools[:1]),
      tool_mask=jnp.where(p.evolve_harness, pop.tool_mask, jnp.broadcast_to(kit_tools, (n, world.N_TOOLS))),
      sensor_mask=jnp.where(p.evolve_harness, pop.sensor_mask,
                            jnp.broadcast_to(kit_sensors, (n, world.N_FEATURES))))
  return dict(row=row, tasks=_tasks(row, k), ga=ga.init(kg, pop, p),
              champion=jnp.zeros(world.N_TOOLS, bool))


def init_mlp_row(row, k: Sweep) -> dict:
  """An MLP row (regime 5): the seed's tasks and SNES around zero weights (its default spread)."""
  _, es = algorithms(k)
  _, ke = jax.random.split(jax.random.fold_in(seed_key(row, k), 1))
  return dict(row=row, tasks=_tasks(row, k), es=es.init(ke, controller.mlp_template()),
              champion=jnp.zeros(world.N_TOOLS, bool))


def elite_metrics(F, F_myopic, selection, deceptive, tool_mask, previous, t, k: Sweep):
  """The spec's per-generation metrics over the top `elite` individuals by selection fitness."""
  order = jnp.argsort(-selection, stable=True)
  elite = order[:k.elite]
  tools = tool_mask.at[:, world.BARE].set(False)
  champion = tools[order[0]]
  union = (champion | previous).sum()
  jaccard = jnp.where(union > 0, 1 - (champion & previous).sum() / jnp.maximum(union, 1), 0.0)
  return champion, dict(
      elite_fitness=F[elite].mean(), elite_myopic=F_myopic[elite].mean(),
      deceptive=deceptive[elite].mean(), key_retention=tools[elite, world.KEY].mean(),
      elite_tools=tools[elite].sum(1).mean(),
      turnover=jnp.where(t == 0, 0.0, jaccard))   # the champion's tool set, generation to generation


def _generation_keys(row, t, k: Sweep):
  return jax.random.split(jax.random.fold_in(seed_key(row, k), 2 + t))


def step_row(state, t, k: Sweep):
  """One generation of a table-GA row: ask, evaluate, tell, the elite's metrics."""
  ga, _ = algorithms(k)
  row, tasks = state["row"], state["tasks"]
  ka, _ = _generation_keys(row, t, k)
  p = _regime_params(row, k)
  pop, _ = ga.ask(ka, state["ga"], p)
  ev = jax.vmap(evaluate_genome, (0, None, None, None))(pop, row["n_slots"], tasks, k)
  selection = jnp.where(p.myopic, ev["F_myopic"], ev["F"])
  ga_state, _ = ga.tell(None, pop, selection, state["ga"], p, ev["tool_value"])
  champion, out = elite_metrics(ev["F"], ev["F_myopic"], selection, ev["deceptive"], ev["tool_mask"],
                                state["champion"], t, k)
  return dict(state, ga=ga_state, champion=champion), out


def step_mlp_row(state, t, k: Sweep):
  """One generation of an MLP row: SNES ask, evaluate on the field kit, tell, the elite's metrics."""
  _, es = algorithms(k)
  row, tasks = state["row"], state["tasks"]
  _, ke = _generation_keys(row, t, k)
  es_pop, es_state = es.ask(ke, state["es"])
  mv = jax.vmap(evaluate_mlp, (0, None, None, None))(es_pop, row["n_slots"], tasks, k)
  es_state, _ = es.tell(ke, es_pop, mv["F"], es_state)
  tool_mask = jnp.broadcast_to(mv["tool_mask"], (k.population, world.N_TOOLS))
  champion, out = elite_metrics(mv["F"], mv["F_myopic"], mv["F"], mv["deceptive"], tool_mask,
                                state["champion"], t, k)
  return dict(state, es=es_state, champion=champion), out


KINDS = ("table", "mlp")   # row kinds: each is its own program, so no row computes the other's work


def kind_of(regime):
  """0 for the table-GA regimes, 1 for the MLP regime (per row of a runs table)."""
  return (regime == MLP).astype(int)


@functools.lru_cache(maxsize=None)
def batch_init(k: Sweep, kind: str = "table"):
  """The batched initial state over a block of rows of one kind: what `core.mesh.map_runs` shards."""
  return jax.vmap(functools.partial(init_row if kind == "table" else init_mlp_row, k=k))


@functools.lru_cache(maxsize=None)
def batch_step(k: Sweep, kind: str = "table"):
  """One generation of a block of rows of one kind: what `core.checkpoint.scan_chunked` scans."""
  return jax.vmap(functools.partial(step_row if kind == "table" else step_mlp_row, k=k), (0, None))


@functools.lru_cache(maxsize=None)
def batch_run(k: Sweep, kind: str, generations: int):
  """Every generation of a block of rows in one `lax.scan`, no checkpoints (the benchmark's
  program): {"state", "out"} like `scan_chunked`, outputs (rows, generations)."""
  step = batch_step(k, kind)
  def run(rows):
    state, out = jax.lax.scan(step, batch_init(k, kind)(rows), jnp.arange(generations, dtype=jnp.int32))
    return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), out)
  return run
