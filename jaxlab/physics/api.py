"""The environment API both physics backends share (developmental-physics spec).

An interaction: the action is applied (stage 0: it sets the drop heights of the three objects, which
are placed at rest at their drop poses; stages 1-3: it is the hand's motor command, held for the
interaction), then `steps_per_interaction` physics steps run. The functions here take the array
module `xp` (NumPy for the C backend, jax.numpy for MJX) so both backends share one definition.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from jaxlab.physics import breaking, scenes
from jaxlab.physics.config import PhysicsConfig
from jaxlab.physics.materials import MATERIALS

OBJ_DIM = 13       # pos 3, quat 4 (w, x, y, z), linear velocity 3, angular velocity 3 (world frame)
ACTION_DIM = 3     # stage 0: drop height per object; stages 1-3: hand force x, y, z
HAND_DIM = 6       # hand position 3, velocity 3 (zeros in stage 0, which has no hand)


class Observation(NamedTuple):
  objects: np.ndarray           # [n, num_objects, 13]
  context: np.ndarray           # [n, context_dim] static visible properties (see context())
  hand: np.ndarray | None = None   # [n, 6]


class Transition(NamedTuple):
  obs: Observation
  action: np.ndarray            # [n, 3]
  next: Observation
  broken: np.ndarray            # bool [n, num_objects]
  contact: np.ndarray           # bool [n, num_objects]
  valid: np.ndarray             # bool [n]


@dataclasses.dataclass(frozen=True)
class SimSpec:
  stage: int
  num_objects: int
  obj_dim: int
  action_dim: int
  context_dim: int
  steps_per_interaction: int
  dt: float


def spec(stage: int, config: PhysicsConfig) -> SimSpec:
  k = len(scenes.layout(stage).slots)
  return SimSpec(stage, k, OBJ_DIM, ACTION_DIM, k * (len(MATERIALS) + len(scenes.SHAPES) + 3) + 3,
                 config.steps_per_interaction[stage], config.timestep)


def context(stage: int, material, goal, xp):
  """Per object: material one-hot, shape one-hot, geom size (3); then the goal position (3)."""
  lay = scenes.layout(stage)
  n = material.shape[0]
  shape = np.array([[s == t for t in scenes.SHAPES] + list(s.size) for s in lay.slots], np.float32)
  onehot = (material[..., None] == xp.arange(len(MATERIALS))).astype(xp.float32)
  per_object = xp.concatenate([onehot, xp.broadcast_to(xp.asarray(shape), (n,) + shape.shape)], -1)
  return xp.concatenate([per_object.reshape(n, -1), goal.astype(xp.float32)], -1)


def rotate(quat, v, xp):
  """Rotates vectors v [..., 3] by unit quaternions quat [..., 4] (w, x, y, z)."""
  w, u = quat[..., :1], quat[..., 1:]
  t = 2 * xp.cross(u, v)
  return v + w * t + xp.cross(u, t)


def objects(qpos, qvel, k: int, xp):
  """Free-object states [n, k, 13] from qpos [n, nq] and qvel [n, nv] (objects come first)."""
  pose = qpos[:, :7 * k].reshape(-1, k, 7)
  vel = qvel[:, :6 * k].reshape(-1, k, 6)
  # MuJoCo gives a free joint's angular velocity in the body frame; the contract uses the world frame
  angvel = rotate(pose[..., 3:], vel[..., 3:], xp)
  return xp.concatenate([pose, vel[..., :3], angvel], -1).astype(xp.float32)


def hand(qpos, qvel, stage: int, config: PhysicsConfig, xp):
  adr = scenes.indices(stage, config).hand_qpos
  if adr < 0:
    return xp.zeros((qpos.shape[0], HAND_DIM), xp.float32)
  nv_adr = adr - (qpos.shape[1] - qvel.shape[1])   # each free joint has one more qpos than qvel
  return xp.concatenate([qpos[:, adr:adr + 3], qvel[:, nv_adr:nv_adr + 3]], -1).astype(xp.float32)


def drop_heights(action, stage: int, config: PhysicsConfig, xp):
  lo, hi = config.drop_height
  radius = xp.asarray([s.radius for s in scenes.layout(stage).slots])
  return lo + (xp.clip(action, -1, 1) + 1) / 2 * (hi - lo) + radius


def start(stage: int, config: PhysicsConfig, qpos, qvel, drop_quat, action, xp):
  """(qpos, qvel, ctrl) at the start of an interaction."""
  if stage != 0:
    return qpos, qvel, xp.clip(action, -1, 1)
  k = drop_quat.shape[1]
  pose = qpos.reshape(-1, k, 7)
  z = drop_heights(action, stage, config, xp)
  pose = xp.concatenate([pose[..., :2], z[..., None], drop_quat], -1)
  return pose.reshape(qpos.shape), xp.zeros_like(qvel), xp.zeros_like(qpos[:, :0])


def sane(pos, vel, config: PhysicsConfig, xp):
  """bool [n]: finite, inside the arena, moving slower than max_speed and spinning slower than
  max_spin at every step; object positions pos [n, T, k, 3], velocities vel [n, T, k, 6]."""
  finite = xp.all(xp.isfinite(pos), axis=(1, 2, 3)) & xp.all(xp.isfinite(vel), axis=(1, 2, 3))
  inside = xp.all(xp.abs(xp.nan_to_num(pos)) < config.arena, axis=(1, 2, 3))
  speed = xp.abs(xp.nan_to_num(vel))
  slow = (xp.all(speed[..., :3] < config.max_speed, axis=(1, 2, 3))
          & xp.all(speed[..., 3:] < config.max_spin, axis=(1, 2, 3)))
  return finite & inside & slow


def outcome(stage: int, config: PhysicsConfig, qpos_traj, qvel_traj, gravity, break_speed, xp):
  """(contact, broken, valid) from the trajectories [n, T+1, nq|nv] of one interaction."""
  k = len(scenes.layout(stage).slots)
  n, t1 = qvel_traj.shape[:2]
  vel = qvel_traj[..., :6 * k].reshape(n, t1, k, 6)
  contact, broken, _ = breaking.events(vel[..., :3], gravity, break_speed, config.timestep, config.break_window,
                                       config.contact_accel, xp)
  valid = sane(qpos_traj[..., :7 * k].reshape(n, t1, k, 7)[..., :3], vel, config, xp)
  return contact, broken, valid
