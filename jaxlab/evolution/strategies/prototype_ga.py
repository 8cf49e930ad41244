"""The prototype-table GA behind the published regimes of evolution-harness-vs-brain.md: elitist
truncation selection over K-slot prototype controllers and their harnesses, its params saying what
mutates, so the five published regimes are rows of one Params table and share one program."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxlab.evolution import controller, world
from jaxlab.evolution.strategies.registry import register

PUBLISHED = ("model_first", "harness_first", "coevolution", "brain_directed", "conservative")

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
  directed: jax.Array         # tools are edited by the brain's myopic value, not flipped blindly


@struct.dataclass
class State:
  population: controller.Genome   # leading axis: population
  fitness: jax.Array              # selection fitness of `population`
  generation: jax.Array


# Uniforms one child's mutation reads: prototype moves (KMAX) and their Gaussian steps (KMAX x F),
# tool redraws and their values (2 KMAX), tool-bit flips, sensor-bit flips, the edit coin and the
# tool an edit adds. All come from one draw per generation (each PRNG call costs seconds of CPU
# compile time).
N_UNIFORM = (controller.KMAX * (3 + world.N_FEATURES) + world.N_TOOLS + world.N_FEATURES + 1
             + world.N_TOOLS)


def _mutate(u, g: controller.Genome, p: Params) -> controller.Genome:
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
  value = g.tool_value
  worst = jnp.argmin(value)
  absent = ~tool_mask.at[world.BARE].set(True)
  new = jnp.argmax(jnp.where(absent, u_new, -1.0))
  edit = p.directed & (u_edit[0] < p.edit_rate)
  drop = edit & jnp.isfinite(value[worst]) & (value[worst] < 0)
  add = edit & ~drop & absent.any()
  tool_mask = jnp.where(drop, tool_mask.at[worst].set(False), tool_mask)
  tool_mask = jnp.where(add, tool_mask.at[new].set(True), tool_mask)
  sflip = (u_sensor < p.harness_rate) & p.evolve_harness
  return g.replace(protos=protos, tools=tools, tool_mask=tool_mask, sensor_mask=g.sensor_mask ^ sflip)


@dataclasses.dataclass(frozen=True)
class PrototypeGA:
  """Elitist truncation GA over K-slot prototype controllers and their harnesses (population-based).

  Per generation: rank the last generation on its selection fitness, copy `n_elite` elites, fill
  the rest with mutated children of parents drawn uniformly from the top `n_parents`. Its params
  say what mutates, so the published regimes are rows of one Params table and share one program.
  """
  population_size: int

  @property
  def default_params(self) -> Params:
    # Shared GA settings (docs/harness_vs_brain.md); each published regime changes only what the
    # spec says it changes (see the registrations below).
    f32 = lambda v: np.float32(v)
    return Params(n_elite=np.int32(2), n_parents=np.int32(8), proto_rate=f32(0.3), proto_sigma=f32(0.2),
                  tool_rate=f32(0.15), harness_rate=f32(0.06), edit_rate=f32(0.5), evolve_controller=np.bool_(True),
                  evolve_harness=np.bool_(True), directed=np.bool_(False))

  def param_errors(self, p: Params) -> list[tuple[str, str]]:
    n, out = self.population_size, []
    if not 0 <= int(p.n_elite) < n:
      out.append(("n_elite", f"an integer in [0, population) = [0, {n})"))
    if not 1 <= int(p.n_parents) <= n:
      out.append(("n_parents", f"an integer in [1, population] = [1, {n}]"))
    for field in ("proto_rate", "tool_rate", "harness_rate", "edit_rate"):
      if not 0 <= float(getattr(p, field)) <= 1:
        out.append((field, "a probability"))
    if not float(p.proto_sigma) >= 0:
      out.append(("proto_sigma", "non-negative"))
    return out

  def start(self, population: controller.Genome, p: Params) -> controller.Genome:
    """Model-first freezes the complete field kit; harness-first freezes one random controller
    (individual 0's) for the whole population."""
    n = self.population_size
    kit_tools, kit_sensors = controller.field_kit()
    return population.replace(
        protos=jnp.where(p.evolve_controller, population.protos, population.protos[:1]),
        tools=jnp.where(p.evolve_controller, population.tools, population.tools[:1]),
        tool_mask=jnp.where(p.evolve_harness, population.tool_mask, jnp.broadcast_to(kit_tools, (n, world.N_TOOLS))),
        sensor_mask=jnp.where(p.evolve_harness, population.sensor_mask,
                              jnp.broadcast_to(kit_sensors, (n, world.N_FEATURES))))

  def init(self, key, population: controller.Genome, fitness, params: Params) -> State:
    del key, params
    return State(population, fitness, jnp.int32(1))

  def ask(self, key, state: State, params: Params):
    n = self.population_size
    order = jnp.argsort(-state.fitness, stable=True)
    u = jax.random.uniform(key, (n, 1 + N_UNIFORM))
    rank = jnp.minimum(jnp.floor(u[:, 0] * params.n_parents).astype(jnp.int32), params.n_parents - 1)
    elite = jnp.arange(n) < params.n_elite
    parents = jax.tree.map(lambda x: x[order[jnp.where(elite, jnp.arange(n), rank)]], state.population)
    children = jax.vmap(_mutate, (0, 0, None))(u[:, 1:], parents, params)
    pick = lambda a, b: jnp.where(elite.reshape((n,) + (1,) * (a.ndim - 1)), a, b)
    return jax.tree.map(pick, parents, children), state

  def tell(self, key, population, fitness, state: State, params: Params):
    del key, params
    return State(population, fitness, state.generation + 1), {"best_fitness": fitness.max()}


def _prototype_ga(population_size: int, genome) -> PrototypeGA:
  return PrototypeGA(population_size)


register("coevolution", _prototype_ga)
register("model_first", _prototype_ga, params=dict(evolve_harness=False, harness_rate=0.0))
register("harness_first", _prototype_ga, params=dict(evolve_controller=False))
register("brain_directed", _prototype_ga, params=dict(directed=True), myopic=True)
register("conservative", _prototype_ga, params=dict(harness_rate=0.02, n_elite=6))
