"""Genome kinds of evolution-harness-vs-brain.md: what a regime evolves, and how one is scored.

A kind is a small frozen (hashable) object with
  name, continuous        its name in a regime ("coevolution@table") and whether it is a real
                          vector (evosax algorithms need one; the prototype-table GA does not)
  random(key)             one random genome (a population-based strategy's first generation)
  mean()                  where a distribution-based strategy's search starts
  context(key)            what is frozen per seed (the harness-only kind's random brain), or ()
  evaluate(genome, capacity, tasks, context, world)
                          -> {"F", "F_myopic", "deceptive", "tool_mask", "genome"}: the spec's
                          fitness, its myopic twin, the delayed-task score, the installed tools
                          and the genome as evaluated (what `tell` receives).

  table        the K-slot prototype table and its harness (`controller.Genome`); capacity = K.
  mlp          a Flax MLP brain on the frozen complete field kit; capacity = live hidden units.
  mlp_harness  the MLP brain and its harness evolved jointly: tool and sensor bits are real
               logits, on when > 0 (bare hands always on).
  harness      the harness alone, around a frozen random MLP brain drawn per seed.
The MLP kinds have `hidden` units, the widest brain of the sweep (`brain_widths`).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxlab.evolution import controller, world


def _scored(used, tool_mask, sensor_mask, tasks, k: world.Constants, genome) -> dict:
  fit = world.fitness(used, tool_mask, sensor_mask, tasks, k)
  return dict(F=fit["F"], F_myopic=fit["F_myopic"], deceptive=fit["deceptive"], tool_mask=tool_mask,
              genome=genome)


def score_mlp(params, width, tool_mask, sensor_mask, tasks, k: world.Constants) -> dict:
  """An MLP brain of `width` live units inside the given harness, on a seed's tasks."""
  used = controller.mlp_tools(params, width, tool_mask, sensor_mask, tasks)
  return _scored(used, tool_mask, sensor_mask, tasks, k, params)


def harness_from_logits(tools, sensors):
  """Real-valued harness genes -> (tool mask, sensor mask): a bit is on when its logit is > 0."""
  return (tools > 0).at[world.BARE].set(True), sensors > 0


@dataclasses.dataclass(frozen=True)
class _Kind:
  """What every kind shares: nothing frozen per seed unless it says so."""
  continuous = True

  def context(self, key):
    return ()


@dataclasses.dataclass(frozen=True)
class Table(_Kind):
  """The K-slot prototype table with its tool and sensor masks."""
  name = "table"
  continuous = False

  def random(self, key) -> controller.Genome:
    return controller.random_genome(key)

  def mean(self) -> controller.Genome:
    """The empty body: centred prototypes, bare hands in every slot, no tools, no sensors."""
    return controller.Genome(
        protos=jnp.full((controller.KMAX, world.N_FEATURES), 0.5), tools=jnp.zeros(controller.KMAX, jnp.int32),
        tool_mask=jnp.zeros(world.N_TOOLS, bool).at[world.BARE].set(True),
        sensor_mask=jnp.zeros(world.N_FEATURES, bool), tool_value=jnp.zeros(world.N_TOOLS))

  def evaluate(self, g: controller.Genome, capacity, tasks, context, k: world.Constants) -> dict:
    used = controller.table_tools(g, capacity, tasks)
    fit = world.fitness(used, g.tool_mask, g.sensor_mask, tasks, k)
    # The brain's myopic value of each tool rides on the genome: the brain-directed editor reads it.
    value = world.myopic_tool_value(used, g.tool_mask, fit["scores"], tasks, k)
    return dict(F=fit["F"], F_myopic=fit["F_myopic"], deceptive=fit["deceptive"], tool_mask=g.tool_mask,
                genome=g.replace(tool_value=value))


@dataclasses.dataclass(frozen=True)
class _Neural(_Kind):
  """The MLP kinds: `hidden` units (the widest brain of the sweep)."""
  hidden: int = controller.KMAX


@dataclasses.dataclass(frozen=True)
class Brain(_Neural):
  """MLP weights; the harness is the complete field kit, frozen."""
  name = "mlp"

  def random(self, key):
    return controller.random_mlp(key, self.hidden)

  def mean(self):
    return controller.mlp_template(self.hidden)

  def evaluate(self, params, width, tasks, context, k: world.Constants) -> dict:
    tool_mask, sensor_mask = controller.field_kit()
    return score_mlp(params, width, tool_mask, sensor_mask, tasks, k)


@dataclasses.dataclass(frozen=True)
class BrainAndHarness(_Neural):
  """MLP weights and harness logits, evolved jointly."""
  name = "mlp_harness"

  def random(self, key):
    k_brain, k_harness = jax.random.split(key)
    logits = jax.random.normal(k_harness, (world.N_TOOLS + world.N_FEATURES,))
    return {"brain": controller.random_mlp(k_brain, self.hidden), "tools": logits[:world.N_TOOLS],
            "sensors": logits[world.N_TOOLS:]}

  def mean(self):
    # Zero logits: under a symmetric search distribution each bit starts on with chance 1/2.
    return {"brain": controller.mlp_template(self.hidden), "tools": np.zeros(world.N_TOOLS, np.float32),
            "sensors": np.zeros(world.N_FEATURES, np.float32)}

  def evaluate(self, genome, width, tasks, context, k: world.Constants) -> dict:
    tool_mask, sensor_mask = harness_from_logits(genome["tools"], genome["sensors"])
    return dict(score_mlp(genome["brain"], width, tool_mask, sensor_mask, tasks, k), genome=genome)


@dataclasses.dataclass(frozen=True)
class HarnessOnly(_Neural):
  """Harness logits around one random MLP brain per seed, frozen (harness-first with a neural brain)."""
  name = "harness"

  def random(self, key):
    logits = jax.random.normal(key, (world.N_TOOLS + world.N_FEATURES,))
    return {"tools": logits[:world.N_TOOLS], "sensors": logits[world.N_TOOLS:]}

  def mean(self):
    return {"tools": np.zeros(world.N_TOOLS, np.float32), "sensors": np.zeros(world.N_FEATURES, np.float32)}

  def context(self, key):
    return controller.random_mlp(key, self.hidden)

  def evaluate(self, genome, width, tasks, brain, k: world.Constants) -> dict:
    tool_mask, sensor_mask = harness_from_logits(genome["tools"], genome["sensors"])
    return dict(score_mlp(brain, width, tool_mask, sensor_mask, tasks, k), genome=genome)


KINDS = {kind.name: kind for kind in (Table, Brain, BrainAndHarness, HarnessOnly)}
CONTINUOUS = tuple(name for name, kind in KINDS.items() if kind.continuous)


def make(name: str, hidden: int = controller.KMAX):
  """The genome kind called `name`; the MLP kinds get `hidden` units."""
  if name not in KINDS:
    raise KeyError(f"unknown genome kind {name!r}; the kinds are {sorted(KINDS)}")
  return KINDS[name]() if name == "table" else KINDS[name](hidden)
