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

Two more scores from the field, on the same world model:
  score "disagreement":   ensemble disagreement (Pathak et al. 2019, "Self-Supervised Exploration via
                          Disagreement"): `ensemble` more world models, each trained on its own
                          bootstrap of every update's batch; the variance of their predicted state
                          changes for the candidate, averaged over real objects and dimensions;
  score "gamma_progress": gamma-progress (Kim et al. 2020, "Active World Model Learning with Progress
                          Curiosity"): an old model whose weights trail the world model's as an
                          exponential moving average (rate 1 - gamma per update); per (stage, bin) a
                          moving average of old error - new error on the transitions played there,
                          measured before training on them. Unvisited bins score first.
Scores and regimes are registries (`register_score`, `register_regime`): a score is a function of
the candidates (`Candidates`) and names the learner parts it needs; a regime pairs a score (None:
random actions) with a schedule. A population computes the scores its regimes use and each run
picks its own by index (`Flags.score`), so one compiled program serves every regime.

The regimes compared on the same environment-step budget:
  curiosity      curious actions by expected surprise, adaptive curriculum
  progress       curious actions by learning progress, adaptive curriculum
  random         random actions, the same adaptive curriculum      (isolates the action choice)
  fixed_order    curious actions by surprise, stages in order with equal shares (isolates the curriculum)
  disagreement   curious actions by ensemble disagreement, adaptive curriculum
  gamma_progress curious actions by gamma-progress, adaptive curriculum
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

from jaxlab.developmental.batch import Obs

UNVISITED = 1e3     # the ALP score of a bin never played: try every bin once
NEEDS = ("ensemble", "old_model")   # learner parts a score can need beyond the world model


@dataclasses.dataclass(frozen=True)
class CuriosityConfig:
  candidates: int = 16
  temperature: float = 0.0
  bins: int = 3              # learning-progress bins per action dimension
  alp_fast: float = 0.2      # EMA rates of a bin's surprise, per round the bin is played
  alp_slow: float = 0.04
  ensemble: int = 4          # disagreement: extra world models
  bootstrap: float = 0.5     # disagreement: chance that a member trains on each row of a batch
  gamma: float = 0.95        # gamma-progress: the old model's weights move 1 - gamma toward the new per update


class Candidates(NamedTuple):
  """What a score sees: the world model, candidate actions [envs, K, A] with their observations tiled to
  [envs, K, ...], the run's learning-progress tables, the learner parts its scores need (`extra`:
  "ensemble", a function (obs, actions) -> the members' predicted state changes [E, ..., N, 13];
  "gamma_progress", its Progress table) and the curiosity settings."""
  model: Any
  obs: Obs
  actions: jax.Array
  progress: Any
  extra: dict
  cfg: CuriosityConfig


@dataclasses.dataclass(frozen=True)
class Score:
  fn: Callable[[Candidates], jax.Array]      # -> [envs, K], higher is tried first
  label: str                                 # how reports name it
  needs: tuple[str, ...] = ()                # among NEEDS


@dataclasses.dataclass(frozen=True)
class Regime:
  score: str | None          # None: random actions (the first candidate)
  adaptive: bool             # the adaptive curriculum, or stages in order


SCORES: dict[str, Score] = {}
REGIMES: dict[str, Regime] = {}


def register_score(name: str, fn: Callable[[Candidates], jax.Array], label: str = "", needs: tuple[str, ...] = (),
                   replace: bool = False) -> None:
  if name in SCORES and not replace:
    raise ValueError(f"score {name!r} is already registered; pass replace=True to replace it")
  if set(needs) - set(NEEDS):
    raise ValueError(f"score {name!r}: needs must be among {NEEDS}, got {needs}")
  SCORES[name] = Score(fn, label or name, tuple(needs))


def register_regime(name: str, score: str | None, adaptive: bool = True, replace: bool = False) -> None:
  if name in REGIMES and not replace:
    raise ValueError(f"regime {name!r} is already registered; pass replace=True to replace it")
  if score is not None and score not in SCORES:
    raise ValueError(f"regime {name!r}: unknown score {score!r}; registered: {sorted(SCORES)}")
  REGIMES[name] = Regime(score, bool(adaptive))


def scores_of(regimes) -> tuple[str, ...]:
  """The scores a population of these regimes computes, in registration order."""
  used = {REGIMES[r].score for r in regimes}
  return tuple(name for name in SCORES if name in used)


def needs_of(scores) -> frozenset[str]:
  return frozenset(n for s in scores for n in SCORES[s].needs)


class Flags(NamedTuple):
  """Per run, traced, so one compiled program serves every regime of the population."""
  curious: jax.Array         # bool
  adaptive: jax.Array        # bool
  score: jax.Array           # i32: the run's score, an index into the population's scores_of(regimes)


class Progress(NamedTuple):
  """Per-bin tables of one run (learning progress; gamma-progress keeps its own in `fast`)."""
  fast: jax.Array            # f32 [stages, bins ** A]
  slow: jax.Array            # f32 [stages, bins ** A]
  visits: jax.Array          # i32 [stages, bins ** A] actions played in the bin


def flags(regime: str, scores: tuple[str, ...]) -> tuple[bool, bool, int]:
  """(curious, adaptive, score index) of a regime in a population computing `scores`."""
  r = REGIMES[regime]
  return r.score is not None, r.adaptive, 0 if r.score is None else scores.index(r.score)


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


def choose(key, model, obs: Obs, action_mask, flags: Flags, progress: Progress, cfg: CuriosityConfig,
           scores: tuple[str, ...] = ("surprise", "progress"), extra: dict | None = None):
  """(actions [envs, A], the score of each chosen action [envs]); `scores` are the population's."""
  k_cand, k_pick = jax.random.split(key)
  cand = candidates(k_cand, obs.stage.shape[0], action_mask, cfg)
  k = cand.shape[1]
  tiled = Obs(*(jnp.repeat(x[:, None], k, axis=1) for x in obs))
  seen = Candidates(model, tiled, cand, progress, extra or {}, cfg)
  if scores:
    s = functools.reduce(lambda acc, i: jnp.where(flags.score == i, SCORES[scores[i]].fn(seen), acc),
                         range(1, len(scores)), SCORES[scores[0]].fn(seen))
  else:
    s = jnp.zeros(cand.shape[:2], jnp.float32)
  if cfg.temperature > 0:
    best = jax.random.categorical(k_pick, s / cfg.temperature, axis=-1)
  else:
    best = jnp.argmax(s, axis=-1)
  pick = jnp.where(flags.curious, best, 0)
  take = lambda a: jnp.take_along_axis(a, pick[:, None, None] if a.ndim == 3 else pick[:, None], axis=1)[:, 0]
  return take(cand), take(s)


def _surprise(c: Candidates):
  return c.model.expected_log_surprise(c.obs, c.actions)


def _progress(c: Candidates):
  return alp(c.progress)[c.obs.stage[..., 0][:, None], bin_of(c.actions, c.cfg.bins)]


def _gamma_progress(c: Candidates):
  g = c.extra["gamma_progress"]
  table = jnp.where(g.visits > 0, g.fast, UNVISITED)
  return table[c.obs.stage[..., 0][:, None], bin_of(c.actions, c.cfg.bins)]


def _disagreement(c: Candidates):
  delta = c.extra["ensemble"](c.obs, c.actions)                 # [E, envs, K, N, 13]
  mask = c.obs.mask.astype(jnp.float32)
  per_object = jnp.var(delta, axis=0).mean(-1)
  return jnp.sum(per_object * mask, -1) / jnp.maximum(mask.sum(-1), 1.0)


register_score("surprise", _surprise, "expected surprise")
register_score("progress", _progress, "learning progress")
register_score("disagreement", _disagreement, "ensemble disagreement", needs=("ensemble",))
register_score("gamma_progress", _gamma_progress, "gamma-progress", needs=("old_model",))
register_regime("curiosity", "surprise")
register_regime("progress", "progress")
register_regime("random", None)
register_regime("fixed_order", "surprise", adaptive=False)
register_regime("disagreement", "disagreement")
register_regime("gamma_progress", "gamma_progress")
