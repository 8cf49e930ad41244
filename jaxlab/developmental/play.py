"""Play: the host loop that alternates the learner's jitted programs with MuJoCo physics
(developmental-physics.md, "Technical Implementation: A Developmental Curriculum").

Every run (a regime and a seed) has its own environments: one jaxlab.physics Sim per (run, stage)
it has played, made on first use. All runs move in lockstep, one interaction round at a time:
  act (jitted, all runs)  ->  sim.act per run (NumPy physics)  ->  learn (jitted, all runs).
Play is cut into episodes of `episode_rounds` rounds; each episode resets its run's Sim of the
stage the curriculum chose, with a scene seed derived from (root seed, seed index, stage, how
many episodes of that stage the run has played). So runs of one seed index see the same scenes
whenever they play the same stage episode, and a resumed run rebuilds its scenes exactly.

Episodes are grouped into chunks; after each chunk the learner state and the logs so far are
saved with Orbax (jaxlab.core.checkpoint), and a restarted run goes on from the next chunk. Keys
are fold_in(root, run, round, use), so the result does not depend on where a run was resumed.
Restore order: the fingerprint, then `done` (episodes finished), then state and logs.
"""

from __future__ import annotations

import time
from pathlib import Path

import jax
import numpy as np

from jaxlab import physics
from jaxlab.core import checkpoint
from jaxlab.developmental import batch as batch_lib
from jaxlab.developmental import evaluation

TRAIN, HELDOUT, PROBE = 0, 1, 2   # scene-seed streams: training never sees a held-out scene
ACT, LEARN, INIT = 0, 1, 2        # key uses per round (INIT: the initial weights)


def scene_seed(root: int, stream: int, *parts: int) -> int:
  return int(np.random.SeedSequence([root, stream, *parts]).generate_state(1)[0])


class Worlds:
  """The Sims of every (run, stage), made on first use."""

  def __init__(self, physics_config, n_envs: int, backend: str, root: int):
    self.physics_config, self.n_envs, self.backend, self.root = physics_config, n_envs, backend, root
    self.sims = {}

  def sim(self, run: int, stage: int):
    if (run, stage) not in self.sims:
      self.sims[run, stage] = physics.make_sim(stage, self.n_envs, backend=self.backend,
                                               seed=scene_seed(self.root, TRAIN, run, stage),
                                               config=self.physics_config)
    return self.sims[run, stage]


def fingerprint(config) -> str:
  """What fixes the results: the config less stop_after (a time limit, not a setting)."""
  return checkpoint.fingerprint({k: v for k, v in config.to_dict().items() if k != "stop_after"})


def action_masks(specs, dims: batch_lib.Dims) -> np.ndarray:
  """[stages, A]: 1 on the action dimensions a stage has."""
  mask = np.zeros((dims.stages, dims.action), np.float32)
  for s, spec in enumerate(specs):
    mask[s, :spec.action_dim] = 1.0
  return mask


@jax.jit
def _keys(root, seed_index, rnd, use):
  fold = jax.random.fold_in
  return jax.vmap(lambda i: fold(fold(fold(root, i), rnd), use))(seed_index)


class Play:
  """The lockstep loop of all runs; per run a policy flag (curious), a schedule flag (adaptive)
  and a seed index. `scale` [stages, 13] is the unit of state changes (world_model.delta_scale)."""

  def __init__(self, config, progs, specs, curious, adaptive, seed_index, scale):
    self.config, self.progs, self.specs, self.scale = config, progs, specs, scale
    self.curious, self.adaptive = np.asarray(curious), np.asarray(adaptive)
    self.seed_index = np.asarray(seed_index)
    self.n_runs = len(self.curious)
    p = config.play
    self.rounds, self.episodes = p.episode_rounds, p.episodes
    self.n_envs = p.envs
    self.masks = action_masks(specs, progs.dims)
    self.root = jax.random.key(config.seed)

  def keys(self, rnd: int, use: int):
    """Per run: fold_in(root, seed index, round, use). Runs of one seed index share their draws
    (the curious policy ranks the same candidates the random one takes the first of)."""
    return _keys(self.root, self.seed_index, rnd, use)

  def empty_logs(self) -> dict:
    r, n_rounds, n_evals = self.n_runs, self.episodes * self.rounds, self.episodes // self.config.play.eval_every
    s, m = self.progs.dims.stages, self.progs.dims.materials
    return {"surprise": np.zeros((r, n_rounds), np.float32), "loss_world": np.zeros((r, n_rounds), np.float32),
            "loss_self": np.zeros((r, n_rounds), np.float32), "valid": np.zeros((r, n_rounds), np.float32),
            "score": np.zeros((r, n_rounds), np.float32), "stage": np.zeros((r, self.episodes), np.int32),
            "eval_stage": np.zeros((r, n_evals, s), np.float32),
            "eval_material": np.zeros((r, n_evals, s, m), np.float32)}

  def episode(self, state, worlds: Worlds, ep: int, logs: dict):
    """Plays episode `ep` of every run; returns the new learner state (logs filled in place)."""
    stages = np.asarray(state.curr.stage)
    seen = np.asarray(state.curr.seen)
    sims = [worlds.sim(r, int(stages[r])) for r in range(self.n_runs)]
    obs = [sim.reset(scene_seed(self.config.seed, TRAIN, int(self.seed_index[r]), int(stages[r]),
                                int(seen[r, stages[r]])))
           for r, sim in enumerate(sims)]
    logs["stage"][:, ep] = stages
    dims = self.progs.dims
    for t in range(self.rounds):
      rnd = ep * self.rounds + t
      padded = batch_lib.stack([batch_lib.obs(o, int(s), dims) for o, s in zip(obs, stages)])
      actions, score = jax.device_get(self.progs.act(state, padded, self.masks, self.curious, self.keys(rnd, ACT)))
      trans = [sim.act(actions[r, :, :sim.spec.action_dim]) for r, sim in enumerate(sims)]
      padded = batch_lib.stack([batch_lib.transition(tr, int(s), dims, evaluation.materials(tr.obs, int(s)))
                                for tr, s in zip(trans, stages)])
      state, metrics = self.progs.learn(state, padded, self.keys(rnd, LEARN), (rnd + 1) * self.n_envs,
                                        t == self.rounds - 1, self.adaptive, ep, self.episodes)
      for name, value in jax.device_get(metrics).items():
        logs[name][:, rnd] = value
      logs["score"][:, rnd] = score.mean(-1)
      obs = [sim.obs for sim in sims]   # = tr.next, except for invalid envs the physics reset
    return state

  def run(self, workdir, worlds: Worlds, heldout: batch_lib.Batch):
    """Plays every episode, resuming from workdir's checkpoint, or `stop_after` chunks of them;
    returns (state, logs, episodes done)."""
    p = self.config.play
    n_chunks = -(-self.episodes // p.episodes_per_chunk)
    key = fingerprint(self.config)
    chunks = checkpoint.Chunks(Path(workdir), "checkpoints", key, n_chunks,
                                f"{self.config.experiment}:{self.config.variant}")
    # Runs of one seed index start from the same weights (paired comparisons across regimes).
    state = self.progs.init(_keys(self.root, self.seed_index, 0, INIT), self.scale)
    leaves, treedef = jax.tree.flatten(state)
    logs, done = self.empty_logs(), 0
    saved = chunks.restore()
    if saved is not None:
      done = int(saved["done"])
      state = treedef.unflatten([np.asarray(saved["state"][str(i)]).astype(x.dtype) for i, x in enumerate(leaves)])
      logs = {k: np.array(saved["logs"][k]) for k in logs}
    start = done // p.episodes_per_chunk
    with chunks(start):
      for c in range(start, n_chunks):
        t0 = time.perf_counter()
        for ep in range(c * p.episodes_per_chunk, min((c + 1) * p.episodes_per_chunk, self.episodes)):
          state = self.episode(state, worlds, ep, logs)
          if (ep + 1) % p.eval_every == 0:
            i = (ep + 1) // p.eval_every - 1
            logs["eval_stage"][:, i], logs["eval_material"][:, i] = evaluation.heldout_errors(
                self.progs, state, heldout)
          done = ep + 1
        flat = {str(i): np.asarray(x) for i, x in enumerate(jax.tree.leaves(jax.device_get(state)))}
        chunks.save(c, t0, {"done": np.int64(done), "state": flat, "logs": logs}, episodes=done)
        if self.config.stop_after and c + 1 - start >= self.config.stop_after:
          break
    return state, logs, done
