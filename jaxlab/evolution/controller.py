"""Controllers of evolution-harness-vs-brain.md: the K-slot prototype table and a small Flax MLP.

A `Genome` is a brain (K prototype slots, each a feature prototype and a preferred tool) plus a
harness (tool and sensor masks). K is padded to `KMAX` slots; slots at or past a run's K are
masked, so every K shares one shape and the whole sweep vmaps. The MLP's width plays K's role:
it has `hidden` units (the widest brain of a sweep) and units past a run's width are masked the
same way, so every width searches the same parameter space and only the live capacity differs.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxlab.evolution import world

KMAX = 8


@struct.dataclass
class Genome:
  protos: jax.Array       # (KMAX, N_FEATURES) float32 in [0, 1]
  tools: jax.Array        # (KMAX,) int32, a preferred tool per slot
  tool_mask: jax.Array    # (N_TOOLS,) bool, installed tools (bare hands always on)
  sensor_mask: jax.Array  # (N_FEATURES,) bool
  # The brain's own myopic value of each installed tool, as measured when the genome was last
  # evaluated (world.myopic_tool_value); the brain-directed editor acts on it. Evaluation sets it,
  # mutation carries it; None in genomes built by hand for scoring.
  tool_value: jax.Array | None = None


def sensed(sensor_mask, seen):
  """Which coordinates carry information this step: a sensor that is off, or a feature the
  foraging task hides this step, drops out of the comparison altogether."""
  return sensor_mask[None, :] & seen


def distances(protos, n_slots, obs, info):
  """Squared distance from each step's sensed observation to each prototype on the sensed
  coordinates, (KMAX, steps); slots >= n_slots are infinitely far.

  Written slot by slot and feature by feature over the steps axis: the natural
  (steps, KMAX, features) broadcast puts a 6-long reduction in the minor dimension, which XLA
  CPU does not vectorize (it was 80% of a generation)."""
  obs_t, info_t = obs.T, info.T                     # (features, steps)
  rows = []
  for j in range(KMAX):
    d = info_t[0] * (obs_t[0] - protos[j, 0]) ** 2
    for f in range(1, obs.shape[1]):
      d = d + info_t[f] * (obs_t[f] - protos[j, f]) ** 2
    rows.append(jnp.where(j < n_slots, d, jnp.inf))
  return jnp.stack(rows)


def _nearest(d, values):
  """values[argmin(d, axis=0)], ties -> lowest slot, as a chain of KMAX - 1 strict comparisons
  (elementwise, so it vectorizes; an argmin reduction and a gather do not)."""
  best_d, best = d[0], jnp.broadcast_to(values[0], d.shape[1:])
  for j in range(1, KMAX):
    better = d[j] < best_d
    best_d = jnp.where(better, d[j], best_d)
    best = jnp.where(better, values[j], best)
  return best


def installed_or_bare(tool, tool_mask):
  """A tool that is off cannot be used: the agent falls back to bare hands."""
  return jnp.where(tool_mask[tool], tool, world.BARE)


def table_tools(genome: Genome, n_slots, tasks):
  """The tool the table controller uses at every step of the seed's tasks: the nearest slot's
  preferred tool, or bare hands when that tool is not installed (resolved per slot, once)."""
  info = sensed(genome.sensor_mask, tasks["seen"])
  obs = jnp.asarray(world.FEATURES)[tasks["niche"]] * info
  slot_tools = installed_or_bare(genome.tools, genome.tool_mask)
  return _nearest(distances(genome.protos, n_slots, obs, info), slot_tools)


def random_genome(key, tool_p: float = 0.5, sensor_p: float = 0.5) -> Genome:
  """Uniform prototypes, preferred tools uniform over the 13 non-bare tools, random masks."""
  # One draw sliced four ways: on CPU each PRNG call costs seconds of compile time.
  sizes = np.cumsum([KMAX * world.N_FEATURES, KMAX, world.N_TOOLS])
  u = jax.random.uniform(key, (int(sizes[-1]) + world.N_FEATURES,))
  protos, tools, tools_on, sensors_on = jnp.split(u, sizes)
  return Genome(
      protos=protos.reshape(KMAX, world.N_FEATURES),
      tools=uniform_int(tools, 1, world.N_TOOLS),
      tool_mask=(tools_on < tool_p).at[world.BARE].set(True),
      sensor_mask=sensors_on < sensor_p,
      tool_value=jnp.zeros(world.N_TOOLS))


def uniform_int(u, low, high):
  """Integers uniform in [low, high) from uniforms in [0, 1)."""
  return jnp.minimum(low + jnp.floor(u * (high - low)).astype(jnp.int32), high - 1)


def field_kit():
  """The complete field kit: every non-junk tool and every sensor."""
  tools = jnp.zeros(world.N_TOOLS, bool).at[jnp.array((world.BARE, *world.FIELD_KIT))].set(True)
  return tools, jnp.ones(world.N_FEATURES, bool)


class MLP(nn.Module):
  """Sensed features -> `hidden` tanh units (the first `width` live) -> one logit per tool."""
  hidden: int = KMAX

  @nn.compact
  def __call__(self, obs, width):
    h = nn.tanh(nn.Dense(self.hidden)(obs)) * (jnp.arange(self.hidden) < width)
    return nn.Dense(world.N_TOOLS)(h)


def mlp_template(hidden: int = KMAX):
  """Zero MLP parameters: the shape evosax ravels, and the search distribution's start."""
  shapes = jax.eval_shape(MLP(hidden).init, jax.random.key(0), jnp.zeros(world.N_FEATURES), hidden)
  return jax.tree.map(lambda s: np.zeros(s.shape, s.dtype), shapes)


def random_mlp(key, hidden: int = KMAX):
  """An MLP with Flax's default initialization (LeCun-normal weights, zero biases)."""
  return MLP(hidden).init(key, jnp.zeros(world.N_FEATURES), hidden)


def mlp_hidden(params) -> int:
  """The hidden size of MLP parameters (from the first layer's kernel)."""
  return params["params"]["Dense_0"]["kernel"].shape[-1]


def mlp_tools(params, width, tool_mask, sensor_mask, tasks):
  """The MLP picks the highest-logit tool; an uninstalled pick falls back to bare hands."""
  info = sensed(sensor_mask, tasks["seen"])
  obs = jnp.asarray(world.FEATURES)[tasks["niche"]] * info
  net = MLP(mlp_hidden(params))
  logits = jax.vmap(lambda o: net.apply(params, o, width))(obs)
  return installed_or_bare(jnp.argmax(logits, axis=-1), tool_mask)
