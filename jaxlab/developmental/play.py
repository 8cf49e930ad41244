"""Play on the C backend: the host loop that alternates the population's learner programs with
MuJoCo's C engine (developmental-physics.md, "Technical Implementation: A Developmental
Curriculum"). MuJoCo's C engine runs on the host CPU only, so its physics cannot live inside a
jitted program; everything else is the same learner step the fused MJX program runs (learner.py).

All runs move in lockstep, one interaction round at a time, in three calls per round:
  act    (one program for the whole population, sharded by run: population.py)
  physics (per stage, ONE mujoco.rollout call over the envs of every run playing that stage)
  learn  (one program for the whole population)
An episode is `episode_rounds` rounds in scenes reset from keys.scene_key(stream TRAIN, seed
index, stage, how many episodes of that stage the run has played), so runs of one seed index see
the same scenes whenever they play the same stage episode, and a resumed run rebuilds its scenes.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxlab import physics
from jaxlab.developmental import batch as batch_lib
from jaxlab.developmental import keys as keys_lib
from jaxlab.developmental.learner import clock


class Worlds:
  """One C simulator per stage holding `envs` envs for each of `n_runs` runs (run r's envs are
  rows r*envs .. (r+1)*envs - 1), made on first use."""

  def __init__(self, physics_config, n_runs: int, envs: int):
    self.physics_config, self.n_runs, self.envs = physics_config, n_runs, envs
    self.sims = {}

  def sim(self, stage: int):
    if stage not in self.sims:
      self.sims[stage] = physics.make_sim(stage, self.n_runs * self.envs, backend="c", config=self.physics_config)
    return self.sims[stage]

  def rows(self, runs) -> np.ndarray:
    return (np.asarray(runs)[:, None] * self.envs + np.arange(self.envs)).reshape(-1)

  def reset(self, stage: int, runs, scene_keys) -> None:
    """Run runs[j]'s envs get the scenes of scene_keys[j] (env i: fold_in(key, i))."""
    self.sim(stage).reset_keys(jnp.repeat(scene_keys, self.envs, axis=0), np.tile(np.arange(self.envs), len(runs)),
                               self.rows(runs))

  def close(self):
    for sim in self.sims.values():
      sim.close()


def _scatter(full, part, runs, envs: int):
  """Writes the padded rows `part` ([len(runs) * envs, ...] per field) into `full` ([R, envs, ...])."""
  for f, p in zip(full, part):
    f[runs] = np.asarray(p).reshape((len(runs), envs) + p.shape[1:])


class Play:
  """The lockstep C-backend loop over a Population (population.py). `flags` are the runs' traced
  regime flags (already sharded: population.rows), `seed_index` [R] each run's seed index."""

  def __init__(self, config, population, flags, seed_index, worlds: Worlds):
    self.config, self.pop, self.flags, self.worlds = config, population, flags, worlds
    self.seed_index = np.asarray(seed_index, np.int32)
    self.root = keys_lib.root(config.seed)
    self.dims = population.learner.dims
    p = config.play
    self.rounds, self.envs, self.n_episodes = p.episode_rounds, p.envs, p.episodes
    self.seconds = {"learner": 0.0, "physics": 0.0}     # wall time of the learner calls and the C physics

  def _by_stage(self, stages):
    for s in np.unique(stages):
      yield int(s), np.flatnonzero(stages == s)

  def observe(self, stages) -> batch_lib.Obs:
    n, e, d = len(stages), self.envs, self.dims
    out = batch_lib.Obs(np.zeros((n, e, d.objects, batch_lib.OBJ_DIM), np.float32), np.zeros((n, e, d.objects), bool),
                        np.zeros((n, e, d.context), np.float32), np.zeros((n, e, batch_lib.HAND_DIM), np.float32),
                        np.zeros((n, e), np.int32))
    for s, runs in self._by_stage(stages):
      sim = self.worlds.sim(s)
      _scatter(out, batch_lib.obs(sim.observe(self.worlds.rows(runs)), s, d), runs, e)
    return out

  def step(self, stages, actions) -> batch_lib.Batch:
    """One interaction of every run's envs: per stage one rollout over all its runs."""
    n, e = len(stages), self.envs
    out = batch_lib.empty((n, e), self.dims)
    for s, runs in self._by_stage(stages):
      sim = self.worlds.sim(s)
      tr = sim.act(actions[runs, :, :sim.spec.action_dim].reshape(len(runs) * e, -1), self.worlds.rows(runs))
      _scatter(out, batch_lib.transition(tr, s, self.dims), runs, e)
    return out

  def episode(self, state, ep: int):
    """Plays episode `ep` of every run; returns (state, per-round metrics [R, rounds] by name, stages [R])."""
    curr = self.pop.host(state.curr)
    stages = np.asarray(curr.stage)
    seen = np.asarray(curr.seen)[np.arange(len(stages)), stages]
    scene = keys_lib.scene_keys(self.root, keys_lib.TRAIN, self.seed_index, stages, seen)
    for s, runs in self._by_stage(stages):
      self.worlds.reset(s, runs, scene[runs])
    logs = []
    for t in range(self.rounds):
      rnd = ep * self.rounds + t
      t0 = time.perf_counter()
      obs = self.observe(stages)
      actions, score = self.pop.act(state, obs, keys_lib.round_keys(self.root, self.seed_index, rnd, keys_lib.ACT),
                                    self.flags)
      t1 = time.perf_counter()
      batch = self.step(stages, actions)
      t2 = time.perf_counter()
      keys = keys_lib.round_keys(self.root, self.seed_index, rnd, keys_lib.LEARN)
      state, metrics = self.pop.learn(state, batch, keys, clock(rnd, self.rounds, self.envs, self.n_episodes),
                                      self.flags)
      logs.append({**metrics, "score": score.mean(-1)})
      self.seconds["learner"] += (t1 - t0) + (time.perf_counter() - t2)
      self.seconds["physics"] += t2 - t1
    return state, {k: np.stack([m[k] for m in logs], 1) for k in logs[0]}, stages


class Driver:
  """The C backend behind the experiment's chunk loop (experiment.py): the population's state
  lives on the devices, sharded by run; `play` plays a chunk of episodes with evaluations."""

  def __init__(self, config, population, flags, seed_index, physics_config, heldout, monitor=None):
    self.config, self.pop = config, population
    self.worlds = Worlds(physics_config, population.n, config.play.envs)
    self.game = Play(config, population, population.rows(flags), seed_index, self.worlds)
    self.heldout = jax.tree.map(jnp.asarray, heldout)
    self.monitor = None if monitor is None else jax.tree.map(jnp.asarray, monitor)

  def init(self, keys, scale):
    return self.pop.init(keys, scale)

  def host(self, state):
    return self.pop.host(state)

  def device(self, host_state):
    return self.pop.rows(host_state)

  def play(self, state, first: int, count: int):
    """Episodes first .. first+count-1 of every run: (state, logs as in fused.Fused.run, runs first)."""
    rounds, stages, evals = [], [], []
    for ep in range(first, first + count):
      state, metrics, stage = self.game.episode(state, ep)
      rounds.append(metrics)
      stages.append(stage)
      if (ep + 1) % self.config.play.eval_every == 0:
        evals.append(self.pop.heldout(state, self.heldout))
        if self.monitor is not None:         # the curriculum's `heldout` signal
          state = self.pop.monitor(state, self.monitor)
    logs = {k: np.concatenate([m[k] for m in rounds], 1) for k in rounds[0]}     # [runs, rounds]
    logs.update(stage=np.stack(stages, 1), eval_stage=np.stack([e[0] for e in evals], 1),
                eval_material=np.stack([e[1] for e in evals], 1))
    return state, logs

  def seconds(self) -> dict:
    """Wall seconds spent in the learner programs and in the physics since the last call."""
    out = {k: round(v, 2) for k, v in self.game.seconds.items()}
    self.game.seconds = dict.fromkeys(out, 0.0)
    return out

  def close(self):
    self.worlds.close()
