"""Play on the MJX backend: one jitted program per chunk of episodes, PureJaxRL style
(developmental-physics.md, "Parallel simulation"; luchris429/purejaxrl's make_train shape).

Per run, a chunk is `lax.scan` over blocks of `eval_every` episodes, each block `lax.scan` over
episodes, each episode `lax.scan` over its rounds:
  act (learner.act) -> MJX physics (sim_mjx.transition, every env of the run, vmapped) -> pad ->
  learn (learner.learn: surprise, learning progress, replay insert, Adam updates, curriculum)
and after each block the held-out evaluation (learner.heldout). The learner functions are the ones
the C backend's host loop drives (play.py); only the physics differs.

The stage a run plays is its curriculum's choice, so it differs between runs. Each run keeps the
MJX state of every stage and `lax.switch`es on its stage: a real branch, because runs are mapped
one at a time (`core.mesh.map_runs` with block 1: each device loops over its runs; the envs of a
run are the vmapped axis). Vmapping over runs would turn the switch into a select that steps the
physics of all four stages. The population is sharded over every device of every process by
`map_runs`, and each run's result does not depend on the device count.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxlab import physics
from jaxlab.core import mesh as mesh_lib
from jaxlab.developmental import batch as batch_lib
from jaxlab.developmental import keys as keys_lib
from jaxlab.developmental.learner import clock
from jaxlab.physics import sim_mjx


class MjxWorld:
  """The physics of one run inside the program: the MJX state of every stage; the run's stage
  picks one with `lax.switch` (a real branch: runs are mapped one at a time)."""

  def __init__(self, physics_config, envs: int, dims):
    self.pcfg, self.envs, self.dims = physics_config, envs, dims
    self.stages = range(len(physics.STAGES))

  def _switch(self, stage, branch, *args):
    return jax.lax.switch(stage, [branch(s) for s in self.stages], *args)

  def init(self, row):
    """A placeholder state per stage (every episode resets its stage's before playing)."""
    return tuple(sim_mjx.reset(jax.random.key(0), s, self.pcfg, self.envs) for s in self.stages)

  def reset(self, envs, stage, key):
    def branch(s):
      return lambda envs: envs[:s] + (sim_mjx.reset(key, s, self.pcfg, self.envs),) + envs[s + 1:]
    return self._switch(stage, branch, envs)

  def observe(self, envs, stage):
    def branch(s):
      return lambda envs: batch_lib.obs(sim_mjx.observe(envs[s], s, self.pcfg), s, self.dims, jnp)
    return self._switch(stage, branch, envs)

  def step(self, envs, stage, action):
    def branch(s):
      def run(envs, action):
        new, tr = sim_mjx.transition(envs[s], action, s, self.pcfg)
        return envs[:s] + (new,) + envs[s + 1:], batch_lib.transition(tr, s, self.dims, jnp)
      return run
    return self._switch(stage, branch, envs, action)


class Fused:
  """The chunk program of one experiment: `play(rows)` maps it over the runs.

  `rows`: {"state": learner.State, "flags": curiosity.Flags, "seed": i32 seed index,
  "first": i32 first episode of the chunk, and whatever the world reads in `init`}, one row per
  run (NumPy). `world` is the physics (MjxWorld; anything with its four methods); `heldout` the
  padded held-out batch every run is evaluated on."""

  def __init__(self, learner, world, heldout: batch_lib.Batch, *, seed: int, envs: int, rounds: int,
               episodes_per_chunk: int, eval_every: int, n_episodes: int, mesh=None, monitor=None):
    self.learner, self.world = learner, world
    self.heldout = jax.tree.map(jnp.asarray, heldout)
    self.monitor = None if monitor is None else jax.tree.map(jnp.asarray, monitor)
    self.seed, self.envs, self.rounds = seed, envs, rounds
    self.per_chunk, self.eval_every, self.n_episodes = episodes_per_chunk, eval_every, n_episodes
    self.mesh = mesh
    # map_runs caches its compiled program on the function: one long-lived function per instance.
    # Jitted, so map_runs' shape query and its call reuse one trace of the chunk (seconds per stage).
    self.fn = jax.jit(functools.partial(_mapped, self))

  def play(self, rows):
    return mesh_lib.map_runs(self.fn, rows, self.mesh, block=1)

  def run(self, row):
    """One run's chunk: its new learner state and its logs."""
    learner, world, flags, seed = self.learner, self.world, row["flags"], row["seed"]
    root = keys_lib.root(self.seed)

    def round_(carry, rnd):
      state, envs, stage = carry
      obs = world.observe(envs, stage)
      action, score = learner.act(state, obs, keys_lib.round_key(root, seed, rnd, keys_lib.ACT), flags)
      envs, batch = world.step(envs, stage, action)
      state, metrics = learner.learn(state, batch, keys_lib.round_key(root, seed, rnd, keys_lib.LEARN),
                                     clock(rnd, self.rounds, self.envs, self.n_episodes), flags)
      return (state, envs, stage), {**metrics, "score": score.mean()}

    def episode(carry, ep):
      state, envs = carry
      stage = state.curr.stage
      envs = world.reset(envs, stage, keys_lib.scene_key(root, keys_lib.TRAIN, seed, stage, state.curr.seen[stage]))
      (state, envs, _), metrics = jax.lax.scan(round_, (state, envs, stage), ep * self.rounds + jnp.arange(self.rounds))
      return (state, envs), (metrics, stage)

    def block(carry, first):
      carry, (metrics, stages) = jax.lax.scan(episode, carry, first + jnp.arange(self.eval_every))
      by_stage, by_material = learner.heldout(carry[0], self.heldout)
      if self.monitor is not None:           # the curriculum's `heldout` signal
        carry = (learner.monitor(carry[0], self.monitor), carry[1])
      return carry, (metrics, stages, by_stage, by_material)

    firsts = row["first"] + self.eval_every * jnp.arange(self.per_chunk // self.eval_every)
    (state, _), (metrics, stages, by_stage, by_material) = jax.lax.scan(block, (row["state"], world.init(row)), firsts)
    logs = {k: v.reshape(-1) for k, v in metrics.items()}       # [rounds of the chunk]
    logs.update(stage=stages.reshape(-1), eval_stage=by_stage, eval_material=by_material)
    return {"state": state, "logs": logs}


def _mapped(fused: Fused, rows):
  """map_runs' function: a block of one run."""
  out = fused.run(jax.tree.map(lambda x: x[0], rows))
  return jax.tree.map(lambda x: x[None], out)


def rows_of(state, flags, seed_index, first: int) -> dict:
  """The map_runs rows of a population (host NumPy state)."""
  n = len(np.asarray(seed_index))
  return {"state": state, "flags": flags, "seed": np.asarray(seed_index, np.int32),
          "first": np.full(n, first, np.int32)}


class Driver:
  """The MJX backend behind the experiment's chunk loop (experiment.py): the population's state
  crosses to the host once per chunk (map_runs gathers it), where it is checkpointed."""

  def __init__(self, config, population, flags, seed_index, physics_config, heldout, mesh=None, monitor=None):
    p = config.play
    self.pop, self.flags, self.seed_index = population, flags, np.asarray(seed_index, np.int32)
    world = MjxWorld(physics_config, p.envs, population.learner.dims)
    self.fused = Fused(population.learner, world, heldout, seed=config.seed, envs=p.envs,
                       rounds=p.episode_rounds, episodes_per_chunk=p.episodes_per_chunk, eval_every=p.eval_every,
                       n_episodes=p.episodes, mesh=mesh, monitor=monitor)

  def init(self, keys, scale):
    return self.pop.host(self.pop.init(keys, scale))

  def host(self, state):
    return state

  def device(self, host_state):
    return host_state

  def play(self, state, first: int, count: int):
    if count != self.fused.per_chunk:
      raise ValueError(f"the MJX program plays chunks of {self.fused.per_chunk} episodes, asked for {count}")
    out = self.fused.play(rows_of(state, self.flags, self.seed_index, first))
    return out["state"], out["logs"]

  def seconds(self) -> dict:
    return {}                 # one program: no split between learner and physics

  def close(self):
    pass
