"""Procedural MJCF scenes for the four stages of the developmental-physics spec's curriculum.

Every env of a batch shares one model structure (the same bodies and geom types: MJX compiles per
structure); what varies per env (materials, masses, friction, gravity, placements, goals) is drawn
by randomize.py. Shapes are sphere, box and capsule only, pairs MJX collides exactly like MuJoCo
(no cylinders against boxes); walls are boxes.

  drop  (0): a sphere, a box and a capsule, each dropped from a height the action chooses.
  push  (1): an actuated hand (3 slide joints, force motors) and a box, a sphere and a capsule.
  stack (2): the hand and three boxes stacked, each shifted off its support by a random fraction.
  tool  (3): the hand, which cannot reach the target box, a capsule stick, and a goal position.
"""

from __future__ import annotations

import dataclasses
import functools

import mujoco
import numpy as np

from jaxlab.physics.config import PhysicsConfig

STAGES = ("drop", "push", "stack", "tool")
SHAPES = ("sphere", "box", "capsule")
SIZE_FIELDS = {"sphere": 1, "box": 3, "capsule": 2}   # how many of a geom's 3 size numbers the shape uses
WALL = 0.9            # m: the arena's walls stand at +-WALL
HAND_RADIUS = 0.04
SOLIMP = "0.9 0.9 0.001"   # a constant impedance: a linear spring whose material solref sets the bounce


@dataclasses.dataclass(frozen=True)
class Slot:
  shape: str
  size: tuple[float, float, float]   # MuJoCo geom size, zero padded

  def __post_init__(self):
    if self.shape not in SHAPES:
      raise ValueError(f"Slot.shape: must be one of {SHAPES}, got {self.shape!r}")
    used = SIZE_FIELDS[self.shape]
    size = self.size
    if not (len(size) == 3 and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in size)
            and all(0 < x < np.inf for x in size[:used]) and all(x == 0 for x in size[used:])):
      raise ValueError(f"Slot.size: a {self.shape} needs {used} positive finite sizes, then zeros (3 in all), "
                       f"got {size!r}")

  @property
  def half_height(self) -> float:
    """Half extent along z when resting (capsules lie on their side)."""
    return self.size[2] if self.shape == "box" else self.size[0]

  @property
  def radius(self) -> float:
    """Bounding radius."""
    return {"sphere": self.size[0], "box": float(np.linalg.norm(self.size)),
            "capsule": self.size[0] + self.size[1]}[self.shape]


@dataclasses.dataclass(frozen=True)
class Layout:
  stage: int
  slots: tuple[Slot, ...]
  hand: bool
  hand_x: tuple[float, float] = (-0.7, 0.7)   # the hand's reach along x


LAYOUTS = (
    Layout(0, (Slot("sphere", (0.05, 0, 0)), Slot("box", (0.045, 0.045, 0.045)),
               Slot("capsule", (0.035, 0.05, 0))), hand=False),
    Layout(1, (Slot("box", (0.05, 0.05, 0.05)), Slot("sphere", (0.05, 0, 0)),
               Slot("capsule", (0.035, 0.06, 0))), hand=True),
    Layout(2, (Slot("box", (0.07, 0.07, 0.04)), Slot("box", (0.06, 0.06, 0.04)),
               Slot("box", (0.05, 0.05, 0.04))), hand=True),
    Layout(3, (Slot("capsule", (0.03, 0.2, 0)), Slot("box", (0.05, 0.05, 0.05))), hand=True,
           hand_x=(-0.7, 0.15)),
)


def layout(stage: int) -> Layout:
  if not (isinstance(stage, int) and 0 <= stage < len(STAGES)):
    raise ValueError(f"stage: must be an integer in 0..{len(STAGES) - 1} {STAGES}, got {stage!r}")
  return LAYOUTS[stage]


def _geom_size(slot: Slot) -> str:
  return " ".join(f"{s:g}" for s in slot.size[:SIZE_FIELDS[slot.shape]])


def build_xml(stage: int, config: PhysicsConfig) -> str:
  """The stage's MJCF. Object geoms collide with everything (contype 1, conaffinity 3); the hand
  (contype 2, conaffinity 0) touches objects only, never the floor or the walls."""
  lay = layout(stage)
  objects = "\n".join(
      f'<body name="obj{i}" pos="{0.3 * i} 0 {0.2 + slot.half_height}"><freejoint/>'
      f'<geom name="obj{i}" type="{slot.shape}" size="{_geom_size(slot)}" density="1000" priority="1" '
      f'solimp="{SOLIMP}" contype="1" conaffinity="3"/></body>'
      for i, slot in enumerate(lay.slots))
  walls = "\n".join(
      f'<geom type="box" size="{sx} {sy} 0.1" pos="{px} {py} 0.1" contype="1" conaffinity="1" rgba=".8 .8 .8 .3"/>'
      for sx, sy, px, py in ((0.02, WALL, WALL, 0), (0.02, WALL, -WALL, 0), (WALL, 0.02, 0, WALL),
                             (WALL, 0.02, 0, -WALL)))
  hand = actuators = ""
  if lay.hand:
    r = HAND_RADIUS
    hand = (f'<body name="hand" pos="0 0 0">'
            f'<joint name="hand_x" type="slide" axis="1 0 0" range="{lay.hand_x[0]} {lay.hand_x[1]}" '
            f'damping="{config.hand_damping}"/>'
            f'<joint name="hand_y" type="slide" axis="0 1 0" range="-0.7 0.7" damping="{config.hand_damping}"/>'
            f'<joint name="hand_z" type="slide" axis="0 0 1" range="{r} 0.4" damping="{config.hand_damping}"/>'
            f'<geom name="hand" type="sphere" size="{r}" mass="0.5" contype="2" conaffinity="0" '
            f'rgba=".95 .8 .6 1"/></body>')
    actuators = "<actuator>" + "".join(
        f'<motor joint="hand_{a}" gear="{config.hand_force}" ctrlrange="-1 1" ctrllimited="true"/>' for a in "xyz"
    ) + "</actuator>"
  return f"""<mujoco model="developmental_{STAGES[stage]}">
  <option timestep="{config.timestep}" solver="Newton" iterations="{config.iterations}" ls_iterations="{config.ls_iterations}"/>
  <compiler autolimits="true"/>
  <visual><global offwidth="640" offheight="480"/></visual>
  <worldbody>
    <light pos="0 0 3" dir="0 0 -1" directional="true"/>
    <geom name="floor" type="plane" size="{WALL} {WALL} 0.1" contype="1" conaffinity="1" rgba=".9 .9 .9 1"/>
    {walls}
    {objects}
    {hand}
  </worldbody>
  {actuators}
</mujoco>"""


@functools.lru_cache(maxsize=None)
def base_model(stage: int, config: PhysicsConfig) -> mujoco.MjModel:
  """The compiled stage model (objects at density 1000; randomize.py sets the real masses)."""
  return mujoco.MjModel.from_xml_string(build_xml(stage, config))


@dataclasses.dataclass(frozen=True)
class Indices:
  """Where the stage's objects and hand live in the model's arrays."""
  geoms: np.ndarray    # [num_objects] geom id of each object
  bodies: np.ndarray   # [num_objects] body id of each object
  hand_qpos: int       # first qpos (and qvel) address of the hand's three slide joints (-1: none)


def indices(stage: int, config: PhysicsConfig) -> Indices:
  m = base_model(stage, config)
  n = len(layout(stage).slots)
  geoms = np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, f"obj{i}") for i in range(n)])
  bodies = m.geom_bodyid[geoms]
  hand = -1 if not layout(stage).hand else int(m.jnt_qposadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, "hand_x")])
  return Indices(geoms, bodies, hand)
