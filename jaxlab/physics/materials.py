"""The material library of the developmental-physics spec (Stage 2, "material properties").

Each material maps to MJCF contact and inertia fields: density (kg/m^3), sliding/torsional/rolling
friction, and restitution through MuJoCo's negative `solref` = (-stiffness, -damping): a damped
spring per unit mass whose damping sets how much of the impact speed comes back. Object geoms get
`priority="1"`, so their own solref and friction win over the floor's (with equal priority,
negative solrefs combine by element-wise minimum and the floor's value would decide).
Fragility is a break speed: a fragile object breaks when the speed change its contacts cause within
a short window passes it (see breaking.py). Add a material by adding one line to LIBRARY.
"""

from __future__ import annotations

import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class Material:
  density: float                          # kg/m^3
  friction: tuple[float, float, float]    # sliding, torsional, rolling
  stiffness: float                        # solref[0] = -stiffness (1/s^2)
  damping: float                          # solref[1] = -damping (1/s): more damping, less bounce
  break_speed: float = math.inf           # m/s of contact speed change in one impact; inf: unbreakable
  rgba: tuple[float, float, float, float] = (0.5, 0.5, 0.5, 1.0)

  def __post_init__(self):
    def number(v):
      return isinstance(v, (int, float)) and not isinstance(v, bool)
    for field in ("density", "stiffness", "damping"):
      v = getattr(self, field)
      if not (number(v) and 0 < v < math.inf):
        raise ValueError(f"Material.{field}: must be a positive finite number, got {v!r}")
    if not (number(self.break_speed) and self.break_speed > 0):   # inf: unbreakable
      raise ValueError(f"Material.break_speed: must be a positive number (inf: unbreakable), got {self.break_speed!r}")
    f = self.friction
    if not (len(f) == 3 and all(number(x) and 0 <= x < math.inf for x in f)):
      raise ValueError(f"Material.friction: must be three non-negative finite numbers, got {f!r}")
    if not (len(self.rgba) == 4 and all(number(x) and 0 <= x <= 1 for x in self.rgba)):
      raise ValueError(f"Material.rgba: must be four numbers in [0, 1], got {self.rgba!r}")


# Bounce fractions (rebound height / drop height) from a 1 m drop measured with these values:
# see docs/physics.md. Rubber is soft and barely damped; glass is stiff and heavily damped, and
# breaks when dropped from above about 0.2 m (never from 0.05 m, nearly always from 0.35 m).
LIBRARY: dict[str, Material] = {
    "wood": Material(600.0, (0.6, 0.005, 0.0001), 5e4, 110.0, rgba=(0.62, 0.42, 0.22, 1)),
    "rubber": Material(1100.0, (0.9, 0.01, 0.001), 5e4, 30.0, rgba=(0.85, 0.2, 0.2, 1)),
    "glass": Material(2500.0, (0.4, 0.002, 0.0001), 2e5, 650.0, break_speed=2.2, rgba=(0.6, 0.85, 0.95, 0.6)),
    "metal": Material(7800.0, (0.5, 0.004, 0.0001), 2e5, 190.0, rgba=(0.7, 0.7, 0.75, 1)),
}
MATERIALS = tuple(LIBRARY)


def material_index(name: str, field: str = "material") -> int:
  """The index of a material name in MATERIALS; a clear error for an unknown one."""
  if name not in LIBRARY:
    raise ValueError(f"{field}: unknown material {name!r}; known: {MATERIALS}")
  return MATERIALS.index(name)
