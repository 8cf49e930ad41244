"""Surprise-driven play and its baselines (developmental-physics.md, "2. Self-Model (Surprise-Driven
Curiosity)": track prediction errors, seek experiences that violate expectations, focus on the
edge of understanding).

Each interaction, every environment draws `candidates` actions uniformly in [-1, 1]^A. The curious
policy scores them with the self-model and takes the best:
  score "surprise":  the expected log surprise of the action under the current self-model;
  score "progress":  expected learning progress, the lagged self-model's expected log surprise
                     minus the current one's: how much the error on such actions has been falling.
A temperature above zero samples from softmax(score / temperature) instead of the argmax. The
random policy takes the first candidate: a uniform random action.

A regime pairs an action policy with a stage schedule (curriculum.py); the three regimes compared
on the same environment-step budget are
  curiosity    curious actions, adaptive curriculum
  random       random actions, the same adaptive curriculum      (isolates the action choice)
  fixed_order  curious actions, stages in order with equal shares (isolates the curriculum)
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxlab.developmental import world_model
from jaxlab.developmental.batch import Obs

POLICIES = ("curious", "random")
SCORES = ("surprise", "progress")
REGIMES = {"curiosity": ("curious", "adaptive"), "random": ("random", "adaptive"),
           "fixed_order": ("curious", "fixed")}


@dataclasses.dataclass(frozen=True)
class CuriosityConfig:
  candidates: int = 16
  score: str = "surprise"
  temperature: float = 0.0


def candidates(key, n_envs: int, action_mask, cfg: CuriosityConfig):
  """Uniform candidate actions [envs, K, A]; `action_mask` [envs, A] zeroes a stage's unused dims."""
  cand = jax.random.uniform(key, (n_envs, cfg.candidates, action_mask.shape[-1]), minval=-1.0, maxval=1.0)
  return cand * action_mask[:, None, :]


def scores(model, lagged, obs: Obs, cand, cfg: CuriosityConfig, mcfg):
  """The self-model's score of each candidate action [envs, K]."""
  k = cand.shape[1]
  tiled = Obs(*(jnp.repeat(x[:, None], k, axis=1) for x in obs))
  x = world_model.features(tiled, cand, model.dims, mcfg)
  now = model.expected_log_surprise(x)
  return lagged.expected_log_surprise(x) - now if cfg.score == "progress" else now


def choose(key, model, lagged, obs: Obs, action_mask, curious, cfg: CuriosityConfig, mcfg):
  """(actions [envs, A], the self-model's score of each chosen action [envs]).

  `curious` is a traced bool, so one compiled program serves every regime of the runs axis."""
  k_cand, k_pick = jax.random.split(key)
  cand = candidates(k_cand, obs.stage.shape[0], action_mask, cfg)
  s = scores(model, lagged, obs, cand, cfg, mcfg)
  if cfg.temperature > 0:
    best = jax.random.categorical(k_pick, s / cfg.temperature, axis=-1)
  else:
    best = jnp.argmax(s, axis=-1)
  pick = jnp.where(curious, best, 0)
  take = lambda a: jnp.take_along_axis(a, pick[:, None, None] if a.ndim == 3 else pick[:, None], axis=1)[:, 0]
  return take(cand), take(s)
