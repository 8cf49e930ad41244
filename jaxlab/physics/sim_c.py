"""The C backend: MuJoCo's C engine stepping every env's own MjModel copy in parallel threads
through `mujoco.rollout` (developmental-physics spec, "efficient engines"; the CPU default).

Envs can be reset and stepped in subsets (`envs=`), so one CSim per stage can hold the envs of a
whole population of learners and step, in one rollout call, the rows of every learner that plays
that stage this round. Each env remembers the key its scene came from, its index under that key
and its interaction count, so an invalid env restarts from fold_in(fold_in(key, count), index):
the rule the MJX backend uses, so both give the same scenes from the same keys.
"""

from __future__ import annotations

import copy
import os

import jax
import mujoco
import numpy as np
from mujoco import rollout

from jaxlab.physics import api, randomize, scenes
from jaxlab.physics.config import PhysicsConfig

FULL = mujoco.mjtState.mjSTATE_FULLPHYSICS


def as_key(seed_or_key, field: str = "seed"):
  """A typed JAX key from an integer seed (or a key, passed through); a clear error otherwise."""
  if isinstance(seed_or_key, (int, np.integer)) and not isinstance(seed_or_key, (bool, np.bool_)):
    if not 0 <= int(seed_or_key) < 2**63:
      raise ValueError(f"{field}: must be a non-negative integer below 2**63, got {seed_or_key!r}")
    return jax.random.key(int(seed_or_key))
  if isinstance(seed_or_key, jax.Array) and jax.dtypes.issubdtype(seed_or_key.dtype, jax.dtypes.prng_key):
    return seed_or_key
  raise ValueError(f"{field}: must be a non-negative integer or a jax.random.key, got {seed_or_key!r}")


def check_actions(actions, n: int) -> np.ndarray:
  """Actions as float32 [n, 3], every entry in [-1, 1]; an error naming the offending value otherwise
  (so a transition always records exactly the action that was applied)."""
  try:
    a = np.asarray(actions, np.float32)
  except (TypeError, ValueError):
    raise ValueError(f"actions: must be numbers, got {actions!r}") from None
  if a.shape != (n, api.ACTION_DIM):
    raise ValueError(f"actions: must have shape [{n}, {api.ACTION_DIM}], got {a.shape}")
  bad = ~(np.abs(a) <= 1)     # NaN included
  if bad.any():
    env, dim = np.argwhere(bad)[0]
    raise ValueError(f"actions: must be finite and in [-1, 1], got {float(a[env, dim])!r} at env {env}, dim {dim}")
  return a


def check_envs(envs, n: int) -> np.ndarray:
  rows = np.arange(n) if envs is None else np.asarray(envs)
  if rows.ndim != 1 or not np.issubdtype(rows.dtype, np.integer) or len(np.unique(rows)) != len(rows) or (
      len(rows) and (rows.min() < 0 or rows.max() >= n)):
    raise ValueError(f"envs: must be distinct env indices in 0..{n - 1}, got {envs!r}")
  return rows


_fold = jax.jit(jax.vmap(jax.random.fold_in))


class CSim:
  """num_envs envs of one stage on the C engine; see api.py for the interaction."""

  def __init__(self, stage: int, num_envs: int, *, seed=0, config: PhysicsConfig | None = None,
               nthread: int | None = None):
    if not (isinstance(num_envs, int) and num_envs >= 1):
      raise ValueError(f"num_envs: must be a positive integer, got {num_envs!r}")
    self.config = config or PhysicsConfig()
    self.spec = api.spec(stage, self.config)
    self.stage, self.num_envs = stage, num_envs
    self.base = scenes.base_model(stage, self.config)
    self.models = [copy.copy(self.base) for _ in range(num_envs)]
    nthread = min(nthread or os.cpu_count() or 1, num_envs)
    self.datas = [mujoco.MjData(self.base) for _ in range(nthread)]
    self.pool = rollout.Rollout(nthread=nthread if nthread > 1 else 0)
    self.nstate = mujoco.mj_stateSize(self.base, FULL)
    self.qpos = np.zeros((num_envs, self.base.nq))
    self.qvel = np.zeros((num_envs, self.base.nv))
    self.keys = jax.random.split(jax.random.key(0), num_envs)   # every env's scene key, index, count
    self.index = np.zeros(num_envs, np.int64)
    self.count = np.zeros(num_envs, np.int64)
    self.scene = None
    self.reset(seed)

  def close(self):
    self.pool.close()

  def _install(self, scene, rows, keys, index) -> None:
    """Puts the NumPy scenes (one per row) into the env state and the rows' model copies."""
    if self.scene is None:
      self.scene = jax.tree.map(np.array, scene)
    else:
      for name, new in zip(randomize.Scene._fields, scene):
        if name == "fields":
          for f, v in new.items():
            self.scene.fields[f][rows] = v
        else:
          getattr(self.scene, name)[rows] = new
    self.qpos[rows] = scene.qpos
    self.qvel[rows] = 0.0
    self.keys = self.keys.at[rows].set(keys)
    self.index[rows], self.count[rows] = index, 0
    randomize.write_c_models(self.models, self.scene, rows)

  def reset(self, seed_or_key=0, envs=None) -> api.Observation:
    """Fresh scenes from the key: the j-th reset env gets fold_in(key, j) (with envs=None, env i
    gets fold_in(key, i): the same scenes as the MJX backend from the same key)."""
    rows = check_envs(envs, self.num_envs)
    key = as_key(seed_or_key)
    self.reset_keys(jax.numpy.broadcast_to(key, (len(rows),)), np.arange(len(rows)), rows)
    return self.obs

  def reset_keys(self, keys, index, envs) -> None:
    """Fresh scenes for the envs: env envs[j] gets the scene of fold_in(keys[j], index[j]), env
    index[j] of a batch drawn from keys[j] (so one call can reset the env blocks of several
    learners, each from its own key)."""
    rows = check_envs(envs, self.num_envs)
    if self.scene is None and len(rows) != self.num_envs:
      raise ValueError("envs: the first reset must reset every env")
    index = np.asarray(index, np.int32)
    self._install(randomize.draw_keys(_fold(keys, index), self.stage, self.config), rows, keys, index)

  def set_qpos(self, qpos) -> api.Observation:
    """Places every env at rest at qpos [n, nq] (probes and tests build exact situations)."""
    qpos = np.array(qpos, np.float64)
    if qpos.size != self.num_envs * self.base.nq or not np.isfinite(qpos).all():
      raise ValueError(f"qpos: must be finite with {self.num_envs} x {self.base.nq} entries, got shape {qpos.shape}")
    self.qpos = qpos.reshape(self.num_envs, self.base.nq)
    self.qvel = np.zeros((self.num_envs, self.base.nv))
    return self.obs

  def set_field(self, name: str, value) -> None:
    """Overrides one randomized model field (a name in randomize.FIELDS) for every env; the
    value is checked (finite, and masses, inertias and friction non-negative)."""
    value = randomize.check_field(name, value, self.scene.fields, self.num_envs, self.stage)
    self.scene.fields[name][...] = value
    randomize.write_c_models(self.models, self.scene, range(self.num_envs))

  def observe(self, envs=None) -> api.Observation:
    rows = check_envs(envs, self.num_envs)
    return api.Observation(api.objects(self.qpos[rows], self.qvel[rows], self.spec.num_objects, np),
                           api.context(self.stage, self.scene.material[rows], self.scene.goal[rows], np),
                           api.hand(self.qpos[rows], self.qvel[rows], self.stage, self.config, np))

  @property
  def obs(self) -> api.Observation:
    return self.observe()

  def simulate(self, qpos, qvel, ctrl, envs=None):
    """Trajectories qpos [n, T+1, nq], qvel [n, T+1, nv] of the envs from the start state, ctrl held."""
    rows = check_envs(envs, self.num_envs)
    m, n, t = self.base, len(rows), self.spec.steps_per_interaction
    init = np.zeros((n, self.nstate))
    init[:, 1:1 + m.nq], init[:, 1 + m.nq:1 + m.nq + m.nv] = qpos, qvel
    control = np.repeat(ctrl[:, None].astype(np.float64), t, axis=1) if m.nu else None
    state, _ = self.pool.rollout([self.models[i] for i in rows], self.datas, init, control, nstep=t,
                                 initial_warmstart=np.zeros((n, m.nv)))
    qpos_traj = np.concatenate([qpos[:, None], state[..., 1:1 + m.nq]], 1)
    qvel_traj = np.concatenate([qvel[:, None], state[..., 1 + m.nq:1 + m.nq + m.nv]], 1)
    return qpos_traj, qvel_traj

  def act(self, actions, envs=None) -> api.Transition:
    """One interaction of the envs (every env when None) with actions [len(envs), 3] in [-1, 1]."""
    rows = check_envs(envs, self.num_envs)
    a = check_actions(actions, len(rows))
    obs = self.observe(rows)
    qpos, qvel, ctrl = api.start(self.stage, self.config, self.qpos[rows], self.qvel[rows],
                                 self.scene.drop_quat[rows], a, np)
    qpos_traj, qvel_traj = self.simulate(qpos, qvel, ctrl, rows)
    contact, broken, valid = api.outcome(self.stage, self.config, qpos_traj, qvel_traj,
                                         self.scene.fields["opt.gravity"][rows], self.scene.break_speed[rows], np)
    self.qpos[rows], self.qvel[rows] = np.nan_to_num(qpos_traj[:, -1]), np.nan_to_num(qvel_traj[:, -1])
    nxt = self.observe(rows)
    self.count[rows] += 1
    bad = rows[~valid]
    if len(bad):
      # an exploded env restarts from fold_in(fold_in(its key, its count), its index), as in sim_mjx.step
      count = self.count[bad]
      fresh = _fold(_fold(self.keys[bad], count.astype(np.int32)), self.index[bad].astype(np.int32))
      self._install(randomize.draw_keys(fresh, self.stage, self.config), bad, self.keys[bad], self.index[bad])
      self.count[bad] = count
    return api.Transition(obs, a, nxt, broken & valid[:, None], contact & valid[:, None], valid)
