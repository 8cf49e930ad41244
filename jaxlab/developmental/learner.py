"""The learner's jitted programs over a runs axis (regimes x seeds): act, learn, evaluate.

A run's state is a pytree (`State`): world-model parameters and Adam state, a lagged copy of the
parameters (an exponential moving average, for the learning-progress score), a replay ring buffer
of padded transitions, and the curriculum. Every program is `jit(vmap(...))` over runs, so the
regimes differ only in traced flags and one compilation serves them all. The physics (NumPy, the C
backend) runs between the calls, on the host (play.py).

Online training, per interaction round: the new batch of environments goes into the replay
buffer, then `updates_per_round` Adam steps each see the new batch plus `replay_batch` rows drawn
from the buffer (replay keeps earlier stages from being forgotten when the curriculum moves on).
Surprise, the signal curiosity and the curriculum use, is measured on the new batch before the
model trains on it.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import nnx

from jaxlab.developmental import curiosity, curriculum, world_model
from jaxlab.developmental import batch as batch_lib
from jaxlab.developmental.batch import Batch, Dims, Obs


@dataclasses.dataclass(frozen=True)
class LearnerConfig:
  model: world_model.ModelConfig
  curiosity: curiosity.CuriosityConfig
  curriculum: curriculum.CurriculumConfig
  replay_size: int = 4096       # transitions kept per run (a multiple of the env count)
  replay_batch: int = 128       # replay rows added to each update's batch
  updates_per_round: int = 2
  lag: float = 0.99             # EMA decay of the lagged parameters


class State(NamedTuple):
  params: nnx.State
  opt: tuple
  lagged: nnx.State
  replay: Batch
  replay_n: jnp.ndarray        # transitions ever inserted
  curr: curriculum.Curriculum
  scale: jnp.ndarray           # [stages, 13] the unit of state changes (world_model.delta_scale)


class Programs:
  """The compiled programs of one (dims, learner config); built once and cached."""

  def __init__(self, dims: Dims, cfg: LearnerConfig):
    self.dims, self.cfg = dims, cfg
    self.graphdef = world_model.graphdef_of(dims, cfg.model)
    self.init = jax.jit(jax.vmap(self._init, in_axes=(0, None)))
    self.act = jax.jit(jax.vmap(self._act, in_axes=(0, 0, None, 0, 0)))
    self.learn = jax.jit(jax.vmap(self._learn, in_axes=(0, 0, 0, None, None, 0, None, None)))
    self.evaluate = jax.jit(jax.vmap(self._evaluate, in_axes=(0, None)))

  def model(self, params):
    return nnx.merge(self.graphdef, params)

  def _init(self, key, scale) -> State:
    params, opt = world_model.init(key, self.dims, self.cfg.model)
    replay = jax.tree.map(jnp.asarray, batch_lib.empty(self.cfg.replay_size, self.dims))
    return State(params, opt, params, replay, jnp.int32(0), curriculum.init(self.dims.stages),
                 jnp.asarray(scale, jnp.float32))

  def _act(self, state: State, obs: Obs, action_mask, curious, key):
    """Actions [envs, A] and their scores for one run; `action_mask` is [stages, A]."""
    return curiosity.choose(key, self.model(state.params), self.model(state.lagged), obs,
                            action_mask[obs.stage], curious, self.cfg.curiosity, self.cfg.model)

  def _learn(self, state: State, batch: Batch, key, env_steps, episode_end, adaptive, episode, n_episodes):
    """One round: measure surprise on `batch`, store it, train, advance the curriculum."""
    cfg = self.cfg
    _, surprise = world_model.errors(self.model(state.params), batch, state.scale, cfg.model)
    valid = batch.valid.astype(jnp.float32)
    mean_surprise = jnp.sum(surprise * valid) / jnp.maximum(valid.sum(), 1.0)

    n_env = batch.valid.shape[0]
    at = state.replay_n % cfg.replay_size
    replay = jax.tree.map(lambda buf, x: jax.lax.dynamic_update_slice_in_dim(buf, x, at, 0), state.replay, batch)
    filled = jnp.minimum(state.replay_n + n_env, cfg.replay_size)

    def step(carry, k):
      params, opt = carry
      rows = jax.random.randint(k, (cfg.replay_batch,), 0, filled)
      mixed = jax.tree.map(lambda a, r: jnp.concatenate([a, r[rows]]), batch, replay)
      params, opt, parts = world_model.update(self.graphdef, params, opt, mixed, state.scale, cfg.model)
      return (params, opt), parts

    (params, opt), (world, self_err) = jax.lax.scan(
        step, (state.params, state.opt), jax.random.split(key, cfg.updates_per_round))
    lagged = jax.tree.map(lambda l, p: cfg.lag * l + (1 - cfg.lag) * p, state.lagged, params)

    curr = curriculum.observe(state.curr, mean_surprise)
    ended = curriculum.end_episode(curr, env_steps, adaptive, episode, n_episodes, cfg.curriculum)
    curr = jax.tree.map(lambda a, b: jnp.where(episode_end, a, b), ended, curr)
    metrics = {"surprise": mean_surprise, "loss_world": world[-1], "loss_self": self_err[-1],
               "valid": valid.mean()}
    return State(params, opt, lagged, replay, state.replay_n + n_env, curr, state.scale), metrics

  def _evaluate(self, state: State, batch: Batch):
    """(per-object error [H, N], surprise per transition [H]) on held-out or probe transitions."""
    return world_model.errors(self.model(state.params), batch, state.scale, self.cfg.model)


@functools.lru_cache(maxsize=None)
def programs(dims: Dims, cfg: LearnerConfig) -> Programs:
  return Programs(dims, cfg)
