"""One learner of the population, as pure per-run functions: init, act, learn, evaluate
(developmental-physics.md, "Developmental Learning Through Simulation": a world model and a
self-model trained online by play).

A run's state is a pytree (`State`): world-model parameters and Adam state, a replay ring buffer of
padded transitions, the curriculum, the learning-progress tables, and the units of state changes.
Every function here is written for ONE run; both play loops drive exactly these functions:
  play.py   (C backend)  the host loop: population programs vmap them over the runs axis
                         (population.py), MuJoCo's C engine steps every run's envs between calls;
  fused.py  (MJX)        one jitted program per chunk: act -> MJX physics -> learn in lax.scan over
                         rounds, per run, the runs spread over the mesh by core.mesh.map_runs.

Online training, per interaction round: surprise (the signal curiosity, learning progress and the
curriculum use) is measured on the new batch before training on it; the batch goes into the
replay buffer; then `updates_per_round` Adam steps each see the new batch plus `replay_batch`
rows drawn from the buffer (replay keeps earlier stages from being forgotten when the curriculum
moves on).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxlab.developmental import curiosity, curriculum, distractor, world_model
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
  replay: str = "ring"          # "ring": the latest replay_size transitions; "stage": replay_size / stages per
                                # stage, the latest of each, and replay rows drawn from the stages equally
  scores: tuple = ("surprise", "progress")   # the curiosity scores the population computes (scores_of(regimes))
  distractor: distractor.DistractorConfig = distractor.DistractorConfig()


REPLAYS = ("ring", "stage")
DISTRACT = 7     # fold_in of a round's learning key for the distractor's noise (apart from its splits)


class State(NamedTuple):
  params: nnx.State
  opt: tuple
  replay: Batch
  replay_n: jax.Array          # transitions ever inserted
  curr: curriculum.Curriculum
  progress: curiosity.Progress
  scale: jax.Array             # [stages, 13] the unit of state changes (world_model.delta_scale)
  extra: dict                  # what the replay kind and the scores need, by name (empty for the ring and
                               # surprise or learning progress): "replay_count" i32 [stages] inserted per stage,
                               # "ensemble" (params, optimizer state) stacked over members, "old_model" params,
                               # "gamma_progress" a curiosity.Progress table


class Clock(NamedTuple):
  """Where a round sits in play (the same for every run of the population)."""
  env_steps: jax.Array         # environment steps per run after this round
  episode_end: jax.Array       # bool: the round ends an episode
  episode: jax.Array           # index of the episode
  n_episodes: jax.Array        # episodes in the whole run


def clock(rnd, rounds: int, envs: int, n_episodes: int) -> Clock:
  """The clock of round `rnd` (counted from the start of play) in episodes of `rounds` rounds."""
  return Clock(jnp.int32((rnd + 1) * envs), jnp.bool_(rnd % rounds == rounds - 1), jnp.int32(rnd // rounds),
               jnp.int32(n_episodes))


class Learner:
  """The pure functions of one run for a (dims, config); `learner(dims, cfg)` caches one per pair,
  so the programs built on them compile once."""

  def __init__(self, dims: Dims, cfg: LearnerConfig, action_dims: tuple[int, ...]):
    self.dims, self.cfg = dims, cfg
    self.graphdef = world_model.graphdef_of(dims, cfg.model)
    mask = np.zeros((dims.stages, dims.action), np.float32)
    for s, a in enumerate(action_dims):
      mask[s, :a] = 1.0
    self.action_mask = mask          # [stages, A]: 1 on the action dimensions a stage has
    self.needs = curiosity.needs_of(cfg.scores)

  def model(self, params):
    return nnx.merge(self.graphdef, params)

  def init(self, key, scale) -> State:
    cfg, d = self.cfg, self.dims
    params, opt = world_model.init(key, d, cfg.model)
    replay = jax.tree.map(jnp.asarray, batch_lib.empty(cfg.replay_size, d))
    extra = {}
    if cfg.replay == "stage":
      extra["replay_count"] = jnp.zeros(d.stages, jnp.int32)
    if "ensemble" in self.needs:     # members drawn from keys apart from the world model's
      members = jax.random.split(jax.random.fold_in(key, 1), cfg.curiosity.ensemble)
      extra["ensemble"] = jax.vmap(lambda k: world_model.init(k, d, cfg.model))(members)
    if "old_model" in self.needs:
      extra["old_model"] = params
      extra["gamma_progress"] = curiosity.init_progress(d.stages, d.action, cfg.curiosity)
    return State(params, opt, replay, jnp.int32(0), curriculum.init(d.stages),
                 curiosity.init_progress(d.stages, d.action, cfg.curiosity), jnp.asarray(scale, jnp.float32), extra)

  def _score_parts(self, state: State) -> dict:
    out = {}
    if "ensemble" in self.needs:
      members = state.extra["ensemble"][0]
      out["ensemble"] = lambda obs, actions: jax.vmap(lambda p: self.model(p).predict(obs, actions)[0])(members)
    if "old_model" in self.needs:
      out["gamma_progress"] = state.extra["gamma_progress"]
    return out

  def act(self, state: State, obs: Obs, key, flags: curiosity.Flags):
    """Actions [envs, A] and their scores for one run's padded observations."""
    mask = jnp.asarray(self.action_mask)[obs.stage]
    return curiosity.choose(key, self.model(state.params), obs, mask, flags, state.progress, self.cfg.curiosity,
                            self.cfg.scores, self._score_parts(state))

  def _insert(self, state: State, batch: Batch):
    """(replay, rows filled, extra) after storing `batch` (one stage's envs)."""
    cfg, n_env = self.cfg, batch.valid.shape[0]
    if cfg.replay == "stage":
      part = cfg.replay_size // self.dims.stages
      stage, count = batch.stage[0], state.extra["replay_count"]
      at = stage * part + count[stage] % part
      filled = jnp.minimum(count.at[stage].add(n_env), part)
      extra = {**state.extra, "replay_count": count.at[stage].add(n_env)}
    else:
      at = state.replay_n % cfg.replay_size
      filled = jnp.minimum(state.replay_n + n_env, cfg.replay_size)
      extra = state.extra
    replay = jax.tree.map(lambda buf, x: jax.lax.dynamic_update_slice_in_dim(buf, x, at, 0), state.replay, batch)
    return replay, filled, extra

  def _replay_rows(self, k, filled):
    """Indices of `replay_batch` replay rows: uniform over the ring, or a stage (with rows) uniformly,
    then a row of it."""
    cfg = self.cfg
    if cfg.replay != "stage":
      return jax.random.randint(k, (cfg.replay_batch,), 0, filled)
    part = cfg.replay_size // self.dims.stages
    k_stage, k_row = jax.random.split(k)
    stage = jax.random.categorical(k_stage, jnp.where(filled > 0, 0.0, -jnp.inf), shape=(cfg.replay_batch,))
    row = jnp.floor(jax.random.uniform(k_row, (cfg.replay_batch,)) * filled[stage]).astype(jnp.int32)
    return stage * part + jnp.minimum(row, filled[stage] - 1)

  def learn(self, state: State, batch: Batch, key, clock: Clock, flags: curiosity.Flags):
    """One round: measure surprise on `batch`, update learning progress, store, train, and advance
    the curriculum at the episode's end. Returns (state, metrics)."""
    cfg = self.cfg
    if cfg.distractor.share > 0:     # the world's random part, before anything sees the batch
      batch, hit = distractor.apply(batch, jax.random.fold_in(key, DISTRACT), state.scale, cfg.distractor)
    _, surprise = world_model.errors(self.model(state.params), batch, state.scale, cfg.model)
    valid = batch.valid.astype(jnp.float32)
    mean_surprise = jnp.sum(surprise * valid) / jnp.maximum(valid.sum(), 1.0)
    progress = curiosity.update_progress(state.progress, batch.stage[0],
                                         curiosity.bin_of(batch.action, cfg.curiosity.bins), surprise,
                                         batch.valid, cfg.curiosity)

    n_env = batch.valid.shape[0]
    extra = dict(state.extra)
    if "old_model" in self.needs:    # gamma-progress: the old model's error minus the new one's, before training
      _, old = world_model.errors(self.model(extra["old_model"]), batch, state.scale, cfg.model)
      extra["gamma_progress"] = curiosity.update_progress(extra["gamma_progress"], batch.stage[0],
                                                          curiosity.bin_of(batch.action, cfg.curiosity.bins),
                                                          old - surprise, batch.valid, cfg.curiosity)
    replay, filled, inserted = self._insert(state._replace(extra=extra), batch)
    extra.update(inserted)

    def step(carry, k):
      params, opt, extra = carry
      rows = self._replay_rows(k, filled)
      mixed = jax.tree.map(lambda a, r: jnp.concatenate([a, r[rows]]), batch, replay)
      params, opt, parts = world_model.update(self.graphdef, params, opt, mixed, state.scale, cfg.model)
      if "ensemble" in self.needs:   # each member on its own bootstrap of the rows
        keep = jax.random.bernoulli(jax.random.fold_in(k, 1), cfg.curiosity.bootstrap,
                                    (cfg.curiosity.ensemble, mixed.valid.shape[0]))
        def member(p, o, keep):
          return world_model.update(self.graphdef, p, o, mixed._replace(valid=mixed.valid & keep), state.scale,
                                    cfg.model)[:2]
        extra = {**extra, "ensemble": jax.vmap(member)(*extra["ensemble"], keep)}
      if "old_model" in self.needs:
        g = cfg.curiosity.gamma
        extra = {**extra, "old_model": jax.tree.map(lambda o, p: g * o + (1 - g) * p, extra["old_model"], params)}
      return (params, opt, extra), parts

    (params, opt, extra), (world, self_err) = jax.lax.scan(
        step, (state.params, state.opt, extra), jax.random.split(key, cfg.updates_per_round))

    curr = curriculum.observe(state.curr, mean_surprise)
    ended = curriculum.end_episode(curr, clock.env_steps, flags.adaptive, clock.episode, clock.n_episodes,
                                   cfg.curriculum)
    curr = jax.tree.map(lambda a, b: jnp.where(clock.episode_end, a, b), ended, curr)
    metrics = {"surprise": mean_surprise, "loss_world": world[-1], "loss_self": self_err[-1],
               "valid": valid.mean()}
    if cfg.distractor.share > 0:
      metrics["distracted"] = jnp.sum(hit * valid) / jnp.maximum(valid.sum(), 1.0)
    return State(params, opt, replay, state.replay_n + n_env, curr, progress, state.scale, extra), metrics

  def evaluate(self, state: State, batch: Batch):
    """(per-object error [rows, N], surprise per transition [rows]) on held-out or probe transitions."""
    return world_model.errors(self.model(state.params), batch, state.scale, self.cfg.model)

  def heldout(self, state: State, heldout: Batch):
    """(error per stage [S], error per stage and material [S, M]; NaN where absent) on the
    held-out transitions."""
    per_object, surprise = self.evaluate(state, heldout)
    d = self.dims
    rows = (heldout.stage[:, None] == jnp.arange(d.stages)) & heldout.valid[:, None]          # [H, S]
    by_stage = jnp.sum(surprise[:, None] * rows, 0) / jnp.sum(rows, 0)
    objs = (rows[:, None, :, None] & heldout.mask[:, :, None, None]
            & (heldout.material[:, :, None, None] == jnp.arange(d.materials)))             # [H, N, S, M]
    by_material = jnp.sum(per_object[:, :, None, None] * objs, (0, 1)) / jnp.sum(objs, (0, 1))
    return by_stage, by_material

  def monitor(self, state: State, monitor: Batch) -> State:
    """The `heldout` curriculum signal: every stage's error on the monitor transitions, folded
    into the curriculum's averages (curriculum.observe_stages)."""
    by_stage, _ = self.heldout(state, monitor)
    return state._replace(curr=curriculum.observe_stages(state.curr, by_stage, self.cfg.curriculum))


@functools.lru_cache(maxsize=None)
def learner(dims: Dims, cfg: LearnerConfig, action_dims: tuple[int, ...]) -> Learner:
  return Learner(dims, cfg, action_dims)
