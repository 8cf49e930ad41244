"""Evolution strategies for evolution-harness-vs-brain.md in the evosax `init / ask / tell` shape.

`PrototypeGA` evolves `controller.Genome`s; its `Params` (a flax.struct pytree of arrays) say what
mutates and how selection works, so the spec's five regimes are five rows of one `Params` table
(`regime_params`) and the whole sweep vmaps over regimes. Per generation: rank the last
generation on its selection fitness, copy `n_elite` elites, fill the rest with mutated children
of parents drawn uniformly from the top `n_parents`.

A new regime is a new row of that table (or a new class with these three methods).
`EvosaxAdapter` puts any evosax algorithm (which minimizes) behind the same methods, maximizing.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxlab.evolution import controller, world

REGIMES = ("model_first", "harness_first", "coevolution", "brain_directed", "conservative")


@struct.dataclass
class Params:
  n_elite: jax.Array          # copied unchanged into the next generation
  n_parents: jax.Array        # truncation selection: parents come from this many of the best
  proto_rate: jax.Array       # chance a slot's prototype moves (Gaussian, proto_sigma)
  proto_sigma: jax.Array
  tool_rate: jax.Array        # chance a slot's preferred tool is redrawn
  harness_rate: jax.Array     # chance each tool bit and each sensor bit flips
  edit_rate: jax.Array        # brain-directed: chance a child gets one directed limb edit
  evolve_controller: jax.Array
  evolve_harness: jax.Array
  directed: jax.Array         # tools are edited by their myopic value, not flipped blindly
  myopic: jax.Array           # selection on the myopic twin of F


def regime_params(table: dict) -> Params:
  """Stacks a {regime: {field: value}} table (the config's `regimes`) into one Params with a
  leading regime axis, in REGIMES order."""
  fields = [f.name for f in dataclasses.fields(Params)]
  return Params(**{f: jnp.asarray([table[r][f] for r in REGIMES]) for f in fields})


@struct.dataclass
class State:
  population: controller.Genome   # leading axis: population
  fitness: jax.Array              # selection fitness of `population`
  tool_value: jax.Array           # (population, N_TOOLS) myopic value of each installed tool
  generation: jax.Array


# Uniforms one child's mutation reads: prototype moves (KMAX) and their Gaussian steps (KMAX x F),
# tool redraws and their values (2 KMAX), tool-bit flips, sensor-bit flips, the edit coin and the
# tool an edit adds. All come from one draw per generation (each PRNG call costs seconds of CPU
# compile time).
N_UNIFORM = (controller.KMAX * (3 + world.N_FEATURES) + world.N_TOOLS + world.N_FEATURES + 1
             + world.N_TOOLS)


def _mutate(u, g: controller.Genome, value, p: Params) -> controller.Genome:
  kmax, nf, nt = controller.KMAX, world.N_FEATURES, world.N_TOOLS
  sizes = np.cumsum([kmax, kmax * nf, kmax, kmax, nt, nf, 1])
  u_move, u_step, u_redraw, u_tool, u_flip, u_sensor, u_edit, u_new = jnp.split(u, sizes)
  move = (u_move < p.proto_rate)[:, None] & p.evolve_controller
  step = jax.scipy.special.ndtri(jnp.clip(u_step, 1e-7, 1 - 1e-7)).reshape(kmax, nf)
  protos = jnp.clip(g.protos + move * p.proto_sigma * step, 0.0, 1.0)
  redraw = (u_redraw < p.tool_rate) & p.evolve_controller
  tools = jnp.where(redraw, controller.uniform_int(u_tool, 1, nt), g.tools)
  blind = p.evolve_harness & ~p.directed
  flip = (u_flip < p.harness_rate) & blind
  tool_mask = (g.tool_mask ^ flip).at[world.BARE].set(True)
  # The brain-directed editor: it edits the installed limb it values least on the common slice.
  # A limb it thinks costs more than it earns (an unused one is pure cost: dead weight) is
  # dropped; when every limb seems to pay, it tries a random tool it does not have yet.
  worst = jnp.argmin(value)
  absent = ~tool_mask.at[world.BARE].set(True)
  new = jnp.argmax(jnp.where(absent, u_new, -1.0))
  edit = p.directed & (u_edit[0] < p.edit_rate)
  drop = edit & jnp.isfinite(value[worst]) & (value[worst] < 0)
  add = edit & ~drop & absent.any()
  tool_mask = jnp.where(drop, tool_mask.at[worst].set(False), tool_mask)
  tool_mask = jnp.where(add, tool_mask.at[new].set(True), tool_mask)
  sflip = (u_sensor < p.harness_rate) & p.evolve_harness
  return controller.Genome(protos, tools, tool_mask, g.sensor_mask ^ sflip)


@dataclasses.dataclass(frozen=True)
class PrototypeGA:
  """Elitist truncation GA over K-slot prototype controllers and their harnesses."""
  population_size: int

  def init(self, key, population: controller.Genome, params: Params) -> State:
    del key, params
    n = self.population_size
    return State(population, jnp.zeros(n), jnp.zeros((n, world.N_TOOLS)), jnp.int32(0))

  def ask(self, key, state: State, params: Params):
    """The next generation; the first ask returns the initial population unchanged."""
    n = self.population_size
    order = jnp.argsort(-state.fitness, stable=True)
    u = jax.random.uniform(key, (n, 1 + N_UNIFORM))
    rank = jnp.minimum(jnp.floor(u[:, 0] * params.n_parents).astype(jnp.int32), params.n_parents - 1)
    elite = jnp.arange(n) < params.n_elite
    first = state.generation == 0
    parent = jnp.where(first, jnp.arange(n), order[jnp.where(elite, jnp.arange(n), rank)])
    parents = jax.tree.map(lambda x: x[parent], state.population)
    children = jax.vmap(_mutate, (0, 0, 0, None))(u[:, 1:], parents,
                                                  state.tool_value[parent], params)
    keep = elite | first
    pick = lambda a, b: jnp.where(keep.reshape((n,) + (1,) * (a.ndim - 1)), a, b)
    population = jax.tree.map(pick, parents, children)
    return population, state

  def tell(self, key, population, fitness, state: State, params: Params, tool_value=None):
    del key, params
    value = state.tool_value if tool_value is None else tool_value
    state = State(population, fitness, value, state.generation + 1)
    return state, {"best_fitness": fitness.max()}


@dataclasses.dataclass(frozen=True)
class EvosaxAdapter:
  """An evosax algorithm behind the same init / ask / tell, maximizing fitness (evosax minimizes).

  `algorithm` is an evosax `EvolutionaryAlgorithm` (e.g. `evosax.algorithms.SNES(population_size,
  solution)`); `params` defaults to its default params."""
  algorithm: Any
  params: Any = None

  def _params(self):
    return self.algorithm.default_params if self.params is None else self.params

  def init(self, key, mean, params=None):
    return self.algorithm.init(key, mean, self._params() if params is None else params)

  def ask(self, key, state, params=None):
    return self.algorithm.ask(key, state, self._params() if params is None else params)

  def tell(self, key, population, fitness, state, params=None):
    return self.algorithm.tell(key, population, -fitness, state, self._params() if params is None else params)
