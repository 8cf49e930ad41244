"""Scoring genomes as the harness-vs-brain sweep does (evolution-harness-vs-brain.md): the key
convention, in one place, and the public fitness API.

Keys. A run's randomness comes from its seed key `seed_key(root, seed)` = fold_in(key(root), seed),
the same for every regime and capacity on that seed (a paired design). From it:
  fold_in(s, 0)                    the seed's tasks (`task_key`)
  split(fold_in(s, 1))             (k_pop, k_dist): a population-based strategy draws its first
                                   generation from k_pop, a distribution-based one starts from
                                   k_dist; a kind's frozen part (the harness-only kind's random
                                   brain) comes from fold_in(k_pop, 1)
  split(fold_in(s, 2 + t))         (k_a, k_b) for generation t: population-based strategies ask
                                   with k_a and tell with k_b, distribution-based ones ask and tell
                                   with k_b (the streams the published regimes were run with)
so chunking, resuming and sharding never change a run.

  jaxlab.evolution.fitness(genomes, seed, config, k)            table genomes at K = k
  jaxlab.evolution.mlp_fitness(params, seed, config, width)     MLP brains (field kit, or a harness)
score a batch (leading axis) on exactly the tasks the sweep drew for `seed` under `config` (a
harness_vs_brain config) and return {"F", "F_myopic", "deceptive"} per genome.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxlab.core.config import dataclass_from
from jaxlab.evolution import controller, world
from jaxlab.evolution import genomes as genome_kinds


def world_constants(config) -> world.Constants:
  """The world and fitness settings of a config (its `world` block)."""
  return dataclass_from(world.Constants, config.world)


def seed_key(root_seed, seed):
  return jax.random.fold_in(jax.random.key(root_seed), seed)


def tasks_key(s):
  return jax.random.fold_in(s, 0)


def start_keys(s):
  """(k_pop, k_dist) of a seed key."""
  return jax.random.split(jax.random.fold_in(s, 1))


def context_key(s):
  return jax.random.fold_in(start_keys(s)[0], 1)


def generation_keys(s, t):
  """(k_a, k_b) of generation t."""
  return jax.random.split(jax.random.fold_in(s, 2 + t))


def task_key(config, seed: int):
  """The key the sweep draws `seed`'s tasks from under `config`."""
  return tasks_key(seed_key(config.seed, seed))


@functools.lru_cache(maxsize=None)
def _draw(k: world.Constants):
  return jax.jit(lambda key: world.draw_tasks(key, k))


def tasks(config, seed: int) -> dict:
  """The seed's three tasks as the sweep draws them (world.draw_tasks)."""
  return _draw(world_constants(config))(task_key(config, seed))


@functools.lru_cache(maxsize=None)
def _scorer(kind, k: world.Constants):
  def score(population, capacity, tasks, context):
    out = jax.vmap(kind.evaluate, (0, None, None, None, None))(population, capacity, tasks, context, k)
    return {m: out[m] for m in ("F", "F_myopic", "deceptive")}
  return jax.jit(score)


def fitness(genomes, seed: int, config, k: int) -> dict:
  """Table genomes (a `controller.Genome` batch) with K = k live slots, scored on `seed`'s tasks."""
  kind = genome_kinds.Table()
  return _scorer(kind, world_constants(config))(genomes, jnp.int32(k), tasks(config, seed), ())


def mlp_fitness(params, seed: int, config, width: int, tool_mask=None, sensor_mask=None) -> dict:
  """MLP brains (a batch of Flax params) with `width` live units, on `seed`'s tasks, inside the
  complete field kit (the `mlp` kind) or, when given, one harness (tool and sensor masks) that
  every brain of the batch shares."""
  if (tool_mask is None) != (sensor_mask is None):
    raise ValueError("mlp_fitness: give both tool_mask and sensor_mask, or neither (the field kit)")
  k, drawn = world_constants(config), tasks(config, seed)
  if tool_mask is None:
    return _scorer(genome_kinds.Brain(controller.mlp_hidden(params)), k)(params, jnp.int32(width), drawn, ())
  return _in_harness(k)(params, jnp.int32(width), jnp.asarray(tool_mask, bool), jnp.asarray(sensor_mask, bool),
                        drawn)


@functools.lru_cache(maxsize=None)
def _in_harness(k: world.Constants):
  def score(params, width, tool_mask, sensor_mask, tasks):
    out = jax.vmap(genome_kinds.score_mlp, (0, None, None, None, None, None))(params, width, tool_mask, sensor_mask,
                                                                        tasks, k)
    return {m: out[m] for m in ("F", "F_myopic", "deceptive")}
  return jax.jit(score)


def frozen_brain(config, seed: int):
  """The random MLP brain the harness-only kind freezes for `seed` (hidden = max brain_widths)."""
  hidden = max(config.brain_widths)
  return genome_kinds.HarnessOnly(hidden).context(context_key(seed_key(config.seed, seed)))
