"""Surprise-driven play and its baselines (developmental-physics.md, "2. Self-Model (Surprise-Driven
Curiosity)": track prediction errors, seek experiences that violate expectations, focus on the
edge of understanding).

Each interaction, every environment draws `candidates` actions uniformly in [-1, 1]^A. The curious
policy scores them and takes the best:
  score "surprise":  the self-model's expected log surprise of the action (seek what the world
                     model gets wrong; prone to the "noisy TV": irreducible randomness stays surprising);
  score "progress":  absolute learning progress (ALP, Portelas et al. 2020, "Teacher algorithms for
                     curriculum learning of deep RL in continuously parameterized environments") of
                     the action's bin: the action space of each stage is cut into `bins` per
                     dimension; per (stage, bin) a fast and a slow moving average of the surprise of
                     the actions played there; ALP = |slow - fast|. Bins whose error is falling (or
                     rising) score high; bins whose error is flat, however high, score zero, so
                     noise that cannot be learned is not chased. Unvisited bins score first.
A temperature above zero samples from softmax(score / temperature) instead of the argmax. The
random policy takes the first candidate: a uniform random action. When every score ties (ALP of
zero everywhere) the argmax is the first candidate too, so progress falls back to random play.

A regime pairs an action policy with a stage schedule (curriculum.py); the regimes compared on the
same environment-step budget are
  curiosity    curious actions by expected surprise, adaptive curriculum
  progress     curious actions by learning progress, adaptive curriculum
  random       random actions, the same adaptive curriculum      (isolates the action choice)
  fixed_order  curious actions by surprise, stages in order with equal shares (isolates the curriculum)
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxlab.developmental.batch import Obs

# regime -> (curious actions, adaptive curriculum, progress score)
REGIMES = {"curiosity": (True, True, False), "progress": (True, True, True), "random": (False, True, False),
           "fixed_order": (True, False, False)}
UNVISITED = 1e3     # the ALP score of a bin never played: try every bin once


@dataclasses.dataclass(frozen=True)
class CuriosityConfig:
  candidates: int = 16
  temperature: float = 0.0
  bins: int = 3              # learning-progress bins per action dimension
  alp_fast: float = 0.2      # EMA rates of a bin's surprise, per round the bin is played
  alp_slow: float = 0.04


class Flags(NamedTuple):
  """Per run, traced, so one compiled program serves every regime of the population."""
  curious: jax.Array         # bool
  adaptive: jax.Array        # bool
  progress: jax.Array        # bool: score by learning progress, not expected surprise


class Progress(NamedTuple):
  """Learning-progress tables of one run."""
  fast: jax.Array            # f32 [stages, bins ** A]
  slow: jax.Array            # f32 [stages, bins ** A]
  visits: jax.Array          # i32 [stages, bins ** A] actions played in the bin


def flags(regime: str) -> Flags:
  return Flags(*(jnp.bool_(x) for x in REGIMES[regime]))


def init_progress(stages: int, action_dim: int, cfg: CuriosityConfig) -> Progress:
  z = jnp.zeros((stages, cfg.bins ** action_dim), jnp.float32)
  return Progress(z, z, jnp.zeros(z.shape, jnp.int32))


def bin_of(action, bins: int):
  """The bin index of actions [..., A] in [-1, 1]: `bins` equal cells per dimension."""
  cell = jnp.clip(jnp.floor((action + 1) / 2 * bins), 0, bins - 1).astype(jnp.int32)
  return jnp.sum(cell * bins ** jnp.arange(action.shape[-1]), axis=-1)


def alp(p: Progress):
  return jnp.where(p.visits > 0, jnp.abs(p.slow - p.fast), UNVISITED)


def update_progress(p: Progress, stage, bins, surprise, valid, cfg: CuriosityConfig) -> Progress:
  """Folds one round's surprise [envs] of the actions played (bins [envs]) into the stage's row."""
  n_bins = p.fast.shape[1]
  w = valid.astype(jnp.float32)
  count = jax.ops.segment_sum(w, bins, n_bins)
  mean = jax.ops.segment_sum(surprise * w, bins, n_bins) / jnp.maximum(count, 1.0)
  played, first = count > 0, p.visits[stage] == 0
  def ema(old, rate):
    return jnp.where(played, jnp.where(first, mean, old + rate * (mean - old)), old)
  return Progress(p.fast.at[stage].set(ema(p.fast[stage], cfg.alp_fast)),
                  p.slow.at[stage].set(ema(p.slow[stage], cfg.alp_slow)),
                  p.visits.at[stage].add(count.astype(jnp.int32)))


def candidates(key, n_envs: int, action_mask, cfg: CuriosityConfig):
  """Uniform candidate actions [envs, K, A]; `action_mask` [envs, A] zeroes a stage's unused dims."""
  cand = jax.random.uniform(key, (n_envs, cfg.candidates, action_mask.shape[-1]), minval=-1.0, maxval=1.0)
  return cand * action_mask[:, None, :]


def choose(key, model, obs: Obs, action_mask, flags: Flags, progress: Progress, cfg: CuriosityConfig):
  """(actions [envs, A], the score of each chosen action [envs])."""
  k_cand, k_pick = jax.random.split(key)
  cand = candidates(k_cand, obs.stage.shape[0], action_mask, cfg)
  k = cand.shape[1]
  tiled = Obs(*(jnp.repeat(x[:, None], k, axis=1) for x in obs))
  surprise = model.expected_log_surprise(tiled, cand)
  lp = alp(progress)[obs.stage[:, None], bin_of(cand, cfg.bins)]
  s = jnp.where(flags.progress, lp, surprise)
  if cfg.temperature > 0:
    best = jax.random.categorical(k_pick, s / cfg.temperature, axis=-1)
  else:
    best = jnp.argmax(s, axis=-1)
  pick = jnp.where(flags.curious, best, 0)
  take = lambda a: jnp.take_along_axis(a, pick[:, None, None] if a.ndim == 3 else pick[:, None], axis=1)[:, 0]
  return take(cand), take(s)
