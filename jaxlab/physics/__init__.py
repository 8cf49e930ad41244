"""MuJoCo worlds for the developmental-physics spec: materials, procedural scenes for the four
curriculum stages, breaking, probes, and two backends (MuJoCo C through mujoco.rollout, MJX)
behind one API (api.py): the interface jaxlab.developmental builds on."""

from __future__ import annotations

import jax

from jaxlab.physics.api import ACTION_DIM, OBJ_DIM, Observation, SimSpec, Transition
from jaxlab.physics.config import PhysicsConfig
from jaxlab.physics.materials import LIBRARY, MATERIALS, Material
from jaxlab.physics.scenes import SHAPES, STAGES

BACKENDS = ("c", "mjx")


def default_backend() -> str:
  """The C engine on CPUs (MJX on CPU is ~20x slower); MJX on accelerators."""
  return "c" if jax.default_backend() == "cpu" else "mjx"


def make_sim(stage: int, num_envs: int, *, backend: str | None = None, seed=0, config: PhysicsConfig | None = None):
  """num_envs envs of the stage (0 drop, 1 push, 2 stack, 3 tool), reset from seed."""
  backend = backend or default_backend()
  # Each backend is imported when asked for: MJX's import alone costs seconds, and a C run needs none of it.
  if backend == "c":
    from jaxlab.physics.sim_c import CSim
    return CSim(stage, num_envs, seed=seed, config=config)
  if backend == "mjx":
    from jaxlab.physics.sim_mjx import MjxSim
    return MjxSim(stage, num_envs, seed=seed, config=config)
  raise ValueError(f"backend: must be one of {BACKENDS}, got {backend!r}")


__all__ = ["ACTION_DIM", "BACKENDS", "LIBRARY", "MATERIALS", "Material", "OBJ_DIM", "Observation",
           "PhysicsConfig", "SHAPES", "STAGES", "SimSpec", "Transition", "default_backend", "make_sim"]
