"""Where every random draw of a developmental run comes from (developmental-physics.md; the jaxlab
convention: one root key per config, fold_in for everything below it).

All keys are pure functions of (config.seed, seed index, ...), never of the run's position in the
population, the device it runs on or the chunk it resumed from:
  round_key(root, seed index, round, use)         the learner's draws in one interaction round
  scene_key(root, stream, seed index, stage, n)   the scenes of the n-th episode of a stage
Runs of one seed index share both, so regimes are compared on the same scenes and the same
candidate actions (the curious policy ranks exactly the candidates whose first one random play takes).
"""

from __future__ import annotations

import jax

TRAIN, HELDOUT, PROBE, CALIBRATION, MONITOR = 0, 1, 2, 3, 4   # scene streams: training never sees the others'
                                                              # scenes; MONITOR: the curriculum's held-out signal
ACT, LEARN, INIT = 0, 1, 2                         # uses of a round's key (INIT: the initial weights)
_SCENES, _ROUNDS = 0, 1


def root(seed: int):
  return jax.random.key(seed)


def round_key(root_key, seed_index, rnd, use):
  fold = jax.random.fold_in
  return fold(fold(fold(fold(root_key, _ROUNDS), seed_index), rnd), use)


def scene_key(root_key, stream, seed_index, stage, episode):
  """The key a stage's scenes are reset from in a run's `episode`-th episode of that stage
  (env i of the batch gets fold_in(key, i): jaxlab.physics.randomize)."""
  fold = jax.random.fold_in
  return fold(fold(fold(fold(fold(root_key, _SCENES), stream), seed_index), stage), episode)


@jax.jit
def round_keys(root_key, seed_index, rnd, use):
  """round_key for a vector of seed indices."""
  return jax.vmap(round_key, in_axes=(None, 0, None, None))(root_key, seed_index, rnd, use)


@jax.jit
def scene_keys(root_key, stream, seed_index, stage, episode):
  """scene_key for vectors of seed indices, stages and episode counts."""
  return jax.vmap(scene_key, in_axes=(None, None, 0, 0, 0))(root_key, stream, seed_index, stage, episode)
