"""Pictures of the developmental-physics worlds: frames of a few episodes per stage to PNG and an
animated GIF with MuJoCo's renderer, for the report and for seeing what the learner played.

The OpenGL backend: MUJOCO_GL if the user set it before MuJoCo was imported; otherwise EGL (a GPU,
or Mesa's llvmpipe on a CPU) and then OSMesa (needs libosmesa6) are tried in turn. Where none
works, `Frames` raises RenderUnavailable with a message saying what to install; callers then fall
back to plots of the state trajectories.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import mujoco
import numpy as np
from mujoco.rendering.classic import gl_context

from jaxlab.physics import api, scenes
from jaxlab.physics.materials import LIBRARY, MATERIALS


class RenderUnavailable(RuntimeError):
  pass


def _contexts():
  """GL context classes to try, the user's choice first."""
  if os.environ.get("MUJOCO_GL"):
    return [("MUJOCO_GL=" + os.environ["MUJOCO_GL"], getattr(gl_context, "GLContext", None))]
  found = []
  for name in ("egl", "osmesa"):
    try:
      module = __import__(f"mujoco.{name}", fromlist=["GLContext"])
      found.append((name, module.GLContext))
    except Exception as e:   # a missing library or a PyOpenGL platform already fixed elsewhere
      found.append((name, e))
  return found


def _renderer(model, height: int, width: int) -> mujoco.Renderer:
  errors = []
  for name, cls in _contexts():
    if not isinstance(cls, type):
      errors.append(f"{name}: {cls}")
      continue
    saved = getattr(gl_context, "GLContext", None)
    gl_context.GLContext = cls
    try:
      return mujoco.Renderer(model, height, width)
    except Exception as e:
      errors.append(f"{name}: {e}")
    finally:
      gl_context.GLContext = saved
  raise RenderUnavailable("no OpenGL backend for MuJoCo's renderer (" + "; ".join(errors) + "). "
                          "Install Mesa's EGL (libegl1) or OSMesa (apt-get install libosmesa6) and set "
                          "MUJOCO_GL=egl or MUJOCO_GL=osmesa; the state-trajectory plots still work.")


class Frames:
  """Renders env states of a sim of either backend (through a C copy of the stage's model)."""

  def __init__(self, sim, height: int = 240, width: int = 320):
    self.sim = sim
    self.model = copy.copy(scenes.base_model(sim.stage, sim.config))
    self.geoms = scenes.indices(sim.stage, sim.config).geoms
    self.renderer = _renderer(self.model, height, width)
    self.data = mujoco.MjData(self.model)
    self.camera = mujoco.MjvCamera()
    self.camera.lookat[:] = (0.0, 0.0, 0.15)
    self.camera.distance, self.camera.azimuth, self.camera.elevation = 2.2, 90.0, -25.0

  def close(self):
    self.renderer.close()

  def _paint(self, env: int):
    """Object colours from their materials."""
    for g, m in zip(self.geoms, self.sim.scene.material[env]):
      self.model.geom_rgba[g] = LIBRARY[MATERIALS[m]].rgba

  def frame(self, env: int, qpos=None) -> np.ndarray:
    """An RGB image [H, W, 3] of env's current state (or of qpos)."""
    self._paint(env)
    self.data.qpos[:] = self.sim.qpos[env] if qpos is None else qpos
    mujoco.mj_forward(self.model, self.data)
    self.renderer.update_scene(self.data, self.camera)
    return self.renderer.render()


def episode(sim, env: int, actions, every: int = 20, height: int = 240, width: int = 320) -> list[np.ndarray]:
  """Frames every `every` physics steps of env while a C-backend sim plays `actions` [T, n, 3]."""
  frames = Frames(sim, height, width)
  try:
    out = [frames.frame(env)]
    for a in actions:
      qpos, qvel, ctrl = api.start(sim.stage, sim.config, sim.qpos, sim.qvel, sim.scene.drop_quat, a, np)
      traj, _ = sim.simulate(qpos, qvel, ctrl)
      out += [frames.frame(env, q) for q in traj[env, ::every]]
      sim.act(a)
    return out
  finally:
    frames.close()


def save(frames: list[np.ndarray], directory, name: str, fps: int = 20) -> list[Path]:
  """Writes name_000.png ... and name.gif; returns the paths."""
  from PIL import Image
  directory = Path(directory)
  directory.mkdir(parents=True, exist_ok=True)
  images = [Image.fromarray(f) for f in frames]
  paths = []
  for i, image in enumerate(images):
    paths.append(directory / f"{name}_{i:03d}.png")
    image.save(paths[-1])
  paths.append(directory / f"{name}.gif")
  images[0].save(paths[-1], save_all=True, append_images=images[1:], duration=int(1000 / fps), loop=0)
  return paths

