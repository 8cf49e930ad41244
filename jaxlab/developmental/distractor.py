"""A world with noise worth avoiding: a share of the action space whose outcome is random.

Where an action's first dimension is above 1 - 2 x `share` (that share of uniform random actions),
the recorded outcome of every real object is displaced by Gaussian noise: position and linear
velocity, `noise` times the stage's unit of state change per dimension (world_model.delta_scale),
drawn afresh every interaction: a noisy TV over the objects. The simulation itself is untouched (the
next interaction starts from the true state); the learner sees, measures surprise on, stores and
trains on the noisy outcome. Held-out and probe transitions are recorded apart from play (evaluation.py,
jaxlab.physics.probes), so the held-out error and the probes exclude it. Pure jnp on one run's batch,
applied first in learner.learn, so both play loops share it.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

NOISY = jnp.array([1.0] * 3 + [0.0] * 4 + [1.0] * 3 + [0.0] * 3)   # position and linear velocity of the 13


@dataclasses.dataclass(frozen=True)
class DistractorConfig:
  share: float = 0.0         # of the action space; 0: no distractor
  noise: float = 1.0         # std of the displacement, in units of the stage's state change


def region(action, share: float):
  """bool [...]: the actions [..., A] whose outcome is random."""
  return action[..., 0] > 1.0 - 2.0 * share


def apply(batch, key, scale, cfg: DistractorConfig):
  """(the batch with noisy outcomes in the region, bool [envs] which envs were in it)."""
  hit = region(batch.action, cfg.share)
  unit = scale[batch.stage][..., None, :] * NOISY                     # [envs, 1, 13]
  noise = cfg.noise * unit * jax.random.normal(key, batch.next.shape)
  moved = (hit[:, None] & batch.mask)[..., None]
  return batch._replace(next=jnp.where(moved, batch.next + noise, batch.next)), hit
