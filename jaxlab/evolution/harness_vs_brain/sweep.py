"""The pure core of evolution-harness-vs-brain.md: one run's evolution, one generation per step.

A run is a row (regime, capacity, seed) with its regime's hyperparameters (`params`) and
selection (`myopic`). Rows whose regimes share a strategy object and a genome kind form one
`Program` and are vmapped together (the five published regimes are rows of one PrototypeGA
program through their params); each program compiles on its own, keyed by the strategy object
itself, so no cached program can answer for another strategy (and under vmap a per-row branch
would run every kind's work for every row).

`init_row` draws the seed's tasks and starts the strategy; `step_row` is one generation: ask (for
a population-based strategy, generation 0 is its random first generation instead), evaluate every
individual on the seed's tasks, tell (generation 0: init from that evaluation), record the elite's
metrics and the best-so-far individual. Keys follow `evaluation`'s convention.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp

from jaxlab.evolution import evaluation, strategies, world

# Per generation: the spec's elite metrics (top `elite` by selection fitness), and the true F of
# the best individual so far by selection fitness (`best_fitness`: what a strategy that samples
# fresh candidates has found, where its elite can look flat).
METRICS = ("elite_fitness", "best_fitness", "elite_myopic", "deceptive", "key_retention", "elite_tools", "turnover")


@dataclasses.dataclass(frozen=True)
class Sweep:
  """Everything fixed across the rows of one sweep (hashable: it keys the compiled programs)."""
  world: world.Constants = world.Constants()
  population: int = 32
  elite: int = 8                  # the spec's "top 8"
  root_seed: int = 0


@dataclasses.dataclass(frozen=True)
class Program:
  """One compiled program's rows: a sweep's constants, a strategy object and a genome kind.
  `myopic` is every row's selection when they agree (fixed at trace time), None when rows differ
  (a per-row select; used only then, since it changes how XLA fuses the myopic sums and so the
  last bit of F_myopic)."""
  sweep: Sweep
  strategy: Any
  genome: Any
  myopic: bool | None = False

  @property
  def population_based(self) -> bool:
    return strategies.population_based(self.strategy)


def _like(tree, ref):
  """`tree` with `ref`'s dtypes (strategies may return weakly typed scalars; a scan carry cannot)."""
  return jax.tree.map(lambda x, r: jnp.asarray(x).astype(r.dtype), tree, ref)


def init_row(row, p: Program) -> dict:
  """The seed's tasks, the kind's frozen context, the strategy's start and empty records."""
  s = evaluation.seed_key(p.sweep.root_seed, row["seed"])
  k_pop, k_dist = evaluation.start_keys(s)
  params = row["params"]
  state = dict(row=row, tasks=world.draw_tasks(evaluation.tasks_key(s), p.sweep.world),
               context=p.genome.context(evaluation.context_key(s)),
               champion=jnp.zeros(world.N_TOOLS, bool),
               best={"selection": jnp.float32(-jnp.inf), "F": jnp.float32(jnp.nan)})
  if p.population_based:
    population = jax.vmap(p.genome.random)(jax.random.split(k_pop, p.sweep.population))
    if hasattr(p.strategy, "start"):
      population = p.strategy.start(population, params)
    # Generation 0 evaluates this population and inits the strategy from it; until then the
    # strategy state is zeros of the right shape.
    shape = jax.eval_shape(p.strategy.init, k_pop, population, jnp.zeros(p.sweep.population), params)
    state.update(start=population, strategy=jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype), shape))
  else:
    state.update(strategy=p.strategy.init(k_dist, p.genome.mean(), params))
  return state


def elite_metrics(F, F_myopic, selection, deceptive, tool_mask, previous, best, t, k: Sweep):
  """The spec's per-generation metrics over the top `elite` individuals by selection fitness, and
  the best-so-far record (the champion replaces it when its selection fitness is higher)."""
  order = jnp.argsort(-selection, stable=True)
  elite = order[:k.elite]
  tools = tool_mask.at[:, world.BARE].set(False)
  champion = tools[order[0]]
  union = (champion | previous).sum()
  jaccard = jnp.where(union > 0, 1 - (champion & previous).sum() / jnp.maximum(union, 1), 0.0)
  better = selection[order[0]] > best["selection"]
  best = {"selection": jnp.where(better, selection[order[0]], best["selection"]),
          "F": jnp.where(better, F[order[0]], best["F"])}
  # The mean of the elite cannot exceed their best in exact arithmetic, but a float32 sum of equal
  # values can round above them; bounding it by the max keeps "the champion is one of the elite"
  # exact on every instruction set (selected on true F, best_fitness >= elite_fitness always).
  elite_F = F[elite]
  return champion, best, dict(
      elite_fitness=jnp.minimum(elite_F.mean(), elite_F.max()), best_fitness=best["F"],
      elite_myopic=F_myopic[elite].mean(),
      deceptive=deceptive[elite].mean(), key_retention=tools[elite, world.KEY].mean(),
      elite_tools=tools[elite].sum(1).mean(),
      turnover=jnp.where(t == 0, 0.0, jaccard))   # the champion's tool set, generation to generation


def step_row(state, t, p: Program):
  """One generation of a row: ask, evaluate, tell, the elite's metrics."""
  row, tasks, params, strategy = state["row"], state["tasks"], state["row"]["params"], p.strategy
  k_a, k_b = evaluation.generation_keys(evaluation.seed_key(p.sweep.root_seed, row["seed"]), t)
  if p.population_based:
    population, s = jax.lax.cond(t == 0, lambda: (state["start"], state["strategy"]),
                                 lambda: strategy.ask(k_a, state["strategy"], params))
  else:
    population, s = strategy.ask(k_b, state["strategy"], params)
  ev = jax.vmap(p.genome.evaluate, (0, None, None, None, None))(population, row["capacity"], tasks,
                                                                 state["context"], p.sweep.world)
  if p.myopic is None:
    selection = jnp.where(row["myopic"], ev["F_myopic"], ev["F"])
  else:
    selection = ev["F_myopic"] if p.myopic else ev["F"]
  if p.population_based:
    s = jax.lax.cond(t == 0, lambda: _like(strategy.init(k_a, ev["genome"], selection, params), s),
                     lambda: _like(strategy.tell(k_b, ev["genome"], selection, s, params)[0], s))
  else:
    s = _like(strategy.tell(k_b, ev["genome"], selection, s, params)[0], s)
  champion, best, out = elite_metrics(ev["F"], ev["F_myopic"], selection, ev["deceptive"], ev["tool_mask"],
                                      state["champion"], state["best"], t, p.sweep)
  return dict(state, strategy=s, champion=champion, best=best), out


@functools.lru_cache(maxsize=None)
def batch_init(p: Program):
  """The batched initial state over a block of rows: what `core.mesh.map_runs` shards."""
  return jax.vmap(functools.partial(init_row, p=p))


@functools.lru_cache(maxsize=None)
def batch_step(p: Program):
  """One generation of a block of rows: what `core.sweep.scan_chunked` scans."""
  return jax.vmap(functools.partial(step_row, p=p), (0, None))


@functools.lru_cache(maxsize=None)
def batch_run(p: Program, generations: int):
  """Every generation of a block of rows in one `lax.scan`, no checkpoints (the benchmark's
  program): outputs (rows, generations)."""
  step = batch_step(p)
  def run(rows):
    _, out = jax.lax.scan(step, batch_init(p)(rows), jnp.arange(generations, dtype=jnp.int32))
    return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), out)
  return run
