"""PhysicsConfig: every physics setting of the developmental-physics worlds in one frozen dataclass.

The learner's ml_collections `physics` block converts with `PhysicsConfig.from_section`; values are
checked here once, and an error names the field (`physics.<field>`).
"""

from __future__ import annotations

import dataclasses
import math

from jaxlab.core.config import ConfigError
from jaxlab.physics.materials import LIBRARY, MATERIALS


def _range(v) -> bool:
  """A finite range (low, high) with 0 < low <= high."""
  return (isinstance(v, (tuple, list)) and len(v) == 2
          and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v)
          and 0 < v[0] <= v[1])


@dataclasses.dataclass(frozen=True)
class PhysicsConfig:
  timestep: float = 0.001                     # s per physics step (0.002 lets stiff or bouncy stacks jitter apart)
  iterations: int = 4                         # Newton iterations (>= 4: stacks stay up)
  ls_iterations: int = 8                      # line-search iterations (>= 8)
  # MJX's Newton solver converges more slowly than MuJoCo C's on the same contacts: at 4 iterations
  # a hand pushing one object left residual impulses that kicked resting objects elsewhere in the
  # scene (up to 0.3 m/s in one step); at 16 every untouched object stays within 0.01 m/s, as on C
  mjx_iterations: int = 16
  # per stage: drop, push, stack, tool. A drop from 0.35 m lands within 0.3 s; the stage's cost is
  # mostly objects resting on the floor after landing, so a longer drop interaction buys little
  steps_per_interaction: tuple[int, ...] = (320, 50, 50, 50)
  drop_height: tuple[float, float] = (0.05, 0.35)   # m of free fall of the lowest point, action -1 .. 1
  materials: tuple[str, ...] = MATERIALS      # the materials scenes draw from
  friction_scale: tuple[float, float] = (0.8, 1.25)   # per-env domain randomization ranges
  damping_scale: tuple[float, float] = (0.9, 1.1)     # of the material's solref damping
  mass_scale: tuple[float, float] = (0.8, 1.25)
  gravity: tuple[float, float] = (9.6, 10.0)          # m/s^2
  break_scale: tuple[float, float] = (0.9, 1.1)       # of the material's break speed
  break_window: int = 20                      # physics steps one impact is summed over (20 ms)
  contact_accel: float = 0.5                  # m/s^2 of non-gravity acceleration that counts as contact
  hand_force: float = 30.0                    # N at action 1 (metal objects resist about that much)
  hand_damping: float = 60.0                  # N s/m: the hand's top speed is hand_force / hand_damping
  arena: float = 1.5                          # m: an object further out (or below -arena) is invalid
  max_speed: float = 30.0                     # m/s: an object faster than this exploded; the env is invalid
  max_spin: float = 500.0                     # rad/s: likewise for spinning

  def __post_init__(self):
    def bad(field, expected):
      raise ConfigError(f"physics.{field}", f"must be {expected}, got {getattr(self, field)!r}")
    for field in ("timestep", "contact_accel", "hand_force", "hand_damping", "arena", "max_speed", "max_spin"):
      v = getattr(self, field)
      if not (isinstance(v, (int, float)) and v > 0 and math.isfinite(v)):
        bad(field, "a positive number")
    if not (isinstance(self.iterations, int) and self.iterations >= 4):
      bad("iterations", "an integer >= 4 (fewer Newton iterations let stacks collapse)")
    if not (isinstance(self.ls_iterations, int) and self.ls_iterations >= 8):
      bad("ls_iterations", "an integer >= 8")
    if not (isinstance(self.mjx_iterations, int) and self.mjx_iterations >= self.iterations):
      bad("mjx_iterations", "an integer >= iterations (MJX's solver needs at least as many as C's)")
    if not (isinstance(self.break_window, int) and self.break_window >= 1):
      bad("break_window", "an integer >= 1")
    steps = self.steps_per_interaction
    if not (len(steps) == 4 and all(isinstance(s, int) and s >= self.break_window for s in steps)):
      bad("steps_per_interaction", "four integers (drop, push, stack, tool) >= break_window")
    for field in ("drop_height", "friction_scale", "damping_scale", "mass_scale", "gravity", "break_scale"):
      if not _range(getattr(self, field)):
        bad(field, "a finite range (low, high) with 0 < low <= high")
    if not self.materials or any(m not in LIBRARY for m in self.materials):
      bad("materials", f"a non-empty tuple of names from {MATERIALS}")

  @classmethod
  def from_section(cls, section) -> "PhysicsConfig":
    """From a mapping (ml_collections block or dict) holding some of the fields; lists become tuples."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(section.keys()) - names)
    if unknown:
      raise ConfigError(f"physics.{unknown[0]}", f"no such field; known: {sorted(names)}")
    return cls(**{k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in section.items()})
