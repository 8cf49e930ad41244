"""The C backend: MuJoCo's C engine stepping every env's own MjModel copy in parallel threads
through `mujoco.rollout` (developmental-physics spec, "efficient engines"; the CPU default)."""

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


def as_key(seed_or_key):
  if isinstance(seed_or_key, (int, np.integer)):
    return jax.random.key(int(seed_or_key))
  return seed_or_key


def check_actions(actions, n: int) -> np.ndarray:
  a = np.asarray(actions, np.float32)
  if a.shape != (n, api.ACTION_DIM) or not np.all(np.isfinite(a)):
    raise ValueError(f"actions: must be finite float32 [{n}, {api.ACTION_DIM}] in [-1, 1], got shape {a.shape}")
  return a


class CSim:
  """num_envs envs of one stage on the C engine; see api.py for the interaction."""

  def __init__(self, stage: int, num_envs: int, *, seed: int = 0, config: PhysicsConfig | None = None,
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
    self.reset(seed)

  def close(self):
    self.pool.close()

  def _set_scene(self, scene, envs):
    """Installs the scene rows `envs` (NumPy Scene) into the env state and model copies."""
    for name, new in zip(randomize.Scene._fields, scene):
      if name == "fields":
        for f, v in new.items():
          self.scene.fields[f][envs] = v[envs]
      else:
        getattr(self.scene, name)[envs] = new[envs]
    self.qpos[envs] = scene.qpos[envs]
    self.qvel[envs] = 0.0
    randomize.write_c_models(self.models, self.scene, envs)

  def reset(self, seed_or_key=0) -> api.Observation:
    """Every env gets a fresh scene drawn from the key (same key, same scenes as the MJX backend)."""
    self.key = as_key(seed_or_key)
    self.count = 0
    scene = randomize.draw(self.key, self.stage, self.config, self.num_envs)
    self.scene = scene
    self.qpos = scene.qpos.astype(np.float64)
    self.qvel = np.zeros((self.num_envs, self.base.nv))
    randomize.write_c_models(self.models, scene, range(self.num_envs))
    return self.obs

  def set_qpos(self, qpos) -> api.Observation:
    """Places every env at rest at qpos [n, nq] (probes and tests build exact situations)."""
    self.qpos = np.array(qpos, np.float64).reshape(self.num_envs, self.base.nq)
    self.qvel = np.zeros((self.num_envs, self.base.nv))
    return self.obs

  def set_field(self, name: str, value) -> None:
    """Overrides one randomized model field (a name in randomize.FIELDS) for every env."""
    if name not in randomize.FIELDS:
      raise ValueError(f"name: must be one of {randomize.FIELDS}, got {name!r}")
    self.scene.fields[name][...] = value
    randomize.write_c_models(self.models, self.scene, range(self.num_envs))

  @property
  def obs(self) -> api.Observation:
    return api.Observation(api.objects(self.qpos, self.qvel, self.spec.num_objects, np),
                           api.context(self.stage, self.scene.material, self.scene.goal, np),
                           api.hand(self.qpos, self.qvel, self.stage, self.config, np))

  def simulate(self, qpos, qvel, ctrl):
    """Trajectories qpos [n, T+1, nq], qvel [n, T+1, nv] from the start state, ctrl held."""
    m, n, t = self.base, self.num_envs, self.spec.steps_per_interaction
    init = np.zeros((n, self.nstate))
    init[:, 1:1 + m.nq], init[:, 1 + m.nq:1 + m.nq + m.nv] = qpos, qvel
    control = np.repeat(ctrl[:, None].astype(np.float64), t, axis=1) if m.nu else None
    state, _ = self.pool.rollout(self.models, self.datas, init, control, nstep=t,
                                 initial_warmstart=np.zeros((n, m.nv)))
    qpos_traj = np.concatenate([qpos[:, None], state[..., 1:1 + m.nq]], 1)
    qvel_traj = np.concatenate([qvel[:, None], state[..., 1 + m.nq:1 + m.nq + m.nv]], 1)
    return qpos_traj, qvel_traj

  def act(self, actions) -> api.Transition:
    a = check_actions(actions, self.num_envs)
    obs = self.obs
    qpos, qvel, ctrl = api.start(self.stage, self.config, self.qpos, self.qvel, self.scene.drop_quat, a, np)
    qpos_traj, qvel_traj = self.simulate(qpos, qvel, ctrl)
    contact, broken, valid = api.outcome(self.stage, self.config, qpos_traj, qvel_traj,
                                         self.scene.fields["opt.gravity"], self.scene.break_speed, np)
    self.qpos, self.qvel = np.nan_to_num(qpos_traj[:, -1]), np.nan_to_num(qvel_traj[:, -1])
    nxt = self.obs
    self.count += 1
    bad = np.flatnonzero(~valid)
    if len(bad):
      fresh = randomize.draw(jax.random.fold_in(self.key, self.count), self.stage, self.config, self.num_envs)
      self._set_scene(fresh, bad)
    return api.Transition(obs, a, nxt, broken & valid[:, None], contact & valid[:, None], valid)
