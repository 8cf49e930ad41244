"""The developmental curriculum (developmental-physics.md, "Hierarchical Material Understanding" and
"Curriculum Stages": drop and observe, push and pull, stack and balance, tool use).

Play is cut into episodes (a fixed number of interactions in freshly reset scenes of one stage).
After each episode the curriculum folds the episode's mean surprise into two exponential moving
averages of the stage's error, a fast one and a slow one. Learning progress is their relative gap,
(slow - fast) / slow: how much the error has been falling lately. A stage counts as mastered, and
its environment-step count is recorded, after `min_episodes` episodes in it once
  the fast error falls under the stage's `threshold`, or
  learning progress falls under `plateau` (the error stopped falling).
Schedules:
  adaptive  advance to the next stage when the current one is mastered; after the last stage,
            review: the stages take turns, one episode each, until the budget ends.
  fixed     equal shares of the budget per stage in order (the fixed-order baseline); mastery is
            still recorded by the same rule, but it moves nothing.
Signals (`signal`: what the two averages read):
  play      the episode's own surprise, for the stage just played (above). A stage left behind is
            never measured again, so its forgetting cannot show.
  heldout   every stage's error on held-out monitor transitions (a scene stream of their own, apart
            from the evaluation's), folded in for all stages at every evaluation (`observe_stages`).
            Mastery reads these averages, and review plays the stage of the largest absolute
            learning progress (ALP-GMM's |slow - fast| / slow): a forgotten stage, whose error rises
            again, shows progress again and is played again.
Pure jnp on one run's state; the learner vmaps it over runs.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax.numpy as jnp

SCHEDULES = ("adaptive", "fixed")
SIGNALS = ("play", "heldout")


@dataclasses.dataclass(frozen=True)
class CurriculumConfig:
  threshold: tuple = (0.05, 0.05, 0.05, 0.05)   # surprise under which a stage is mastered
  plateau: float = 0.05                         # learning progress under which it has plateaued
  fast: float = 0.5                             # EMA rates per episode
  slow: float = 0.25
  min_episodes: int = 3
  signal: str = "play"                          # what the averages read: "play" | "heldout" (above)


class Curriculum(NamedTuple):
  stage: jnp.ndarray        # i32 []   the stage being played
  review: jnp.ndarray       # bool []  every stage mastered (adaptive): stages take turns
  fast: jnp.ndarray         # f32 [S]  fast EMA of episode error per stage
  slow: jnp.ndarray         # f32 [S]  slow EMA
  seen: jnp.ndarray         # i32 [S]  episodes played per stage
  mastered_at: jnp.ndarray  # i32 [S]  environment steps when the stage was mastered, -1 if not yet
  ep_sum: jnp.ndarray       # f32 []   this episode's summed round surprise
  ep_n: jnp.ndarray         # f32 []   and its number of rounds


def init(n_stages: int) -> Curriculum:
  z = jnp.zeros(n_stages, jnp.float32)
  return Curriculum(stage=jnp.int32(0), review=jnp.bool_(False), fast=z, slow=z,
                    seen=jnp.zeros(n_stages, jnp.int32), mastered_at=jnp.full(n_stages, -1, jnp.int32),
                    ep_sum=jnp.float32(0), ep_n=jnp.float32(0))


def observe(c: Curriculum, surprise) -> Curriculum:
  """Adds one round's mean surprise to the episode."""
  return c._replace(ep_sum=c.ep_sum + surprise, ep_n=c.ep_n + 1)


def progress(fast, slow):
  return (slow - fast) / jnp.maximum(slow, 1e-8)


def observe_stages(c: Curriculum, errors, cfg: CurriculumConfig) -> Curriculum:
  """Folds every stage's held-out error [S] into its averages (the `heldout` signal); a stage
  without monitor transitions (NaN) keeps its own. Errors are positive: an average of zero means
  the stage was never measured, and its first error starts both averages."""
  seen = jnp.isfinite(errors)
  e = jnp.where(seen, errors, 0.0)
  first = c.slow == 0
  fast = jnp.where(first, e, c.fast + cfg.fast * (e - c.fast))
  slow = jnp.where(first, e, c.slow + cfg.slow * (e - c.slow))
  return c._replace(fast=jnp.where(seen, fast, c.fast), slow=jnp.where(seen, slow, c.slow))


def end_episode(c: Curriculum, env_steps, adaptive, episode, n_episodes, cfg: CurriculumConfig) -> Curriculum:
  """Folds the finished episode in, records mastery, and picks the next episode's stage.

  `env_steps` counts environment steps so far; `episode` is the index of the finished episode
  of `n_episodes`; `adaptive` is a traced bool (the schedule of this run)."""
  n_stages = c.fast.shape[0]
  s = c.stage
  if cfg.signal == "play":
    e = c.ep_sum / jnp.maximum(c.ep_n, 1)
    first = c.seen[s] == 0
    fast = jnp.where(first, e, c.fast[s] + cfg.fast * (e - c.fast[s]))
    slow = jnp.where(first, e, c.slow[s] + cfg.slow * (e - c.slow[s]))
    measured, turn = True, (s + 1) % n_stages
  else:                      # the monitor's averages (observe_stages); review: the largest |progress|
    fast, slow = c.fast[s], c.slow[s]
    measured, turn = slow > 0, jnp.argmax(jnp.abs(progress(c.fast, c.slow)))
  seen = c.seen[s] + 1
  threshold = jnp.asarray(cfg.threshold, jnp.float32)[s]
  mastered = measured & (seen >= cfg.min_episodes) & ((fast < threshold) | (progress(fast, slow) < cfg.plateau))
  mastered_at = c.mastered_at.at[s].set(jnp.where(mastered & (c.mastered_at[s] < 0), env_steps, c.mastered_at[s]))
  last = s == n_stages - 1
  review = c.review | (adaptive & mastered & last)
  step_on = jnp.where(c.review, turn, jnp.where(mastered, (s + 1) % n_stages, s))
  fixed = jnp.minimum((episode + 1) * n_stages // n_episodes, n_stages - 1)
  return Curriculum(stage=jnp.where(adaptive, step_on, fixed).astype(jnp.int32), review=review,
                    fast=c.fast.at[s].set(fast), slow=c.slow.at[s].set(slow), seen=c.seen.at[s].set(seen),
                    mastered_at=mastered_at, ep_sum=jnp.float32(0), ep_n=jnp.float32(0))
