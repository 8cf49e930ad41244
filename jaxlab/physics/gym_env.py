"""A Gymnasium single-environment wrapper over the C backend, for users who bring their own RL code
(developmental-physics spec, "MuJoCo + Gymnasium for developmental learning").

Observation: the flat float32 vector [objects (k x 13), hand (6), context]. Action: Box(-1, 1, (3,)),
one interaction per step (api.py). Reward: the spec's stages reward learning, not a task, so only the
tool stage has a task reward (minus the target's distance to the goal, m); elsewhere it is 0 and
users add their own (prediction error, curiosity). An episode is truncated after `max_steps`
interactions; an invalid (exploded) interaction terminates it.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from jaxlab.physics import api
from jaxlab.physics.config import PhysicsConfig
from jaxlab.physics.sim_c import CSim


def flat(obs: api.Observation) -> np.ndarray:
  return np.concatenate([obs.objects.reshape(len(obs.objects), -1), obs.hand, obs.context], -1)


class DevelopmentalEnv(gym.Env):
  metadata = {"render_modes": ["rgb_array"], "render_fps": 20}

  def __init__(self, stage: int = 0, max_steps: int = 100, config: PhysicsConfig | None = None,
               render_mode: str | None = None):
    self.sim = CSim(stage, 1, seed=0, config=config, nthread=1)
    self.stage, self.max_steps, self.render_mode = stage, max_steps, render_mode
    spec = self.sim.spec
    size = spec.num_objects * spec.obj_dim + api.HAND_DIM + spec.context_dim
    # every sane state lies within the sanity limits (an invalid one is clipped and ends the episode)
    self._bound = float(max(self.sim.config.max_spin, self.sim.config.max_speed, self.sim.config.arena))
    self.observation_space = gym.spaces.Box(-self._bound, self._bound, (size,), np.float32)
    self.action_space = gym.spaces.Box(-1.0, 1.0, (spec.action_dim,), np.float32)
    self._steps = 0
    self._renderer = None

  def reset(self, *, seed: int | None = None, options=None):
    super().reset(seed=seed)
    obs = self.sim.reset(int(self.np_random.integers(2**31)))
    self._steps = 0
    return self._flat(obs), {}

  def _flat(self, obs: api.Observation) -> np.ndarray:
    return np.clip(flat(obs)[0], -self._bound, self._bound)

  def _reward(self, obs: api.Observation) -> float:
    if self.stage != 3:
      return 0.0
    return -float(np.linalg.norm(obs.objects[0, 1, :2] - obs.context[0, -3:-1]))

  def step(self, action):
    t = self.sim.act(np.asarray(action, np.float32).reshape(1, -1))
    self._steps += 1
    info = {"broken": t.broken[0], "contact": t.contact[0], "valid": bool(t.valid[0])}
    return self._flat(t.next), self._reward(t.next), not t.valid[0], self._steps >= self.max_steps, info

  def render(self):
    from jaxlab.physics import render   # only when a frame is asked for: it opens an OpenGL context
    if self._renderer is None:
      self._renderer = render.Frames(self.sim)
    return self._renderer.frame(0)

  def close(self):
    if self._renderer is not None:
      self._renderer.close()
    self.sim.close()
