"""One padded layout for transitions of every stage, so one world model and one compiled learner
serve the whole curriculum (developmental-physics.md, "World Model (Predictive Understanding)").

The four stages differ in how many objects, context fields and action dimensions they have
(jaxlab.physics SimSpec). Every transition is padded on the host to the largest of each (`Dims`),
with an object mask; the stage index travels with it and the model sees it as a one-hot. Padded
objects, context fields and action dimensions are zero, so they carry no signal.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

OBJ_DIM = 13      # pos 3, quat 4 (w, x, y, z), linear velocity 3, angular velocity 3 (the contract)
HAND_DIM = 6      # the hand's position 3 and velocity 3 (zeros in stages without a hand)


@dataclasses.dataclass(frozen=True)
class Dims:
  """The padded sizes: the largest over the stages' SimSpecs."""
  objects: int
  context: int
  action: int
  stages: int
  materials: int

  @classmethod
  def of(cls, specs, materials: int) -> "Dims":
    return cls(max(s.num_objects for s in specs), max(s.context_dim for s in specs),
               max(s.action_dim for s in specs), len(specs), materials)


class Batch(NamedTuple):
  """Padded transitions; every field has the same leading axes (runs, envs, ...)."""
  objects: np.ndarray    # f32 [..., N, 13] state before the interaction
  next: np.ndarray       # f32 [..., N, 13] state after it
  mask: np.ndarray       # bool [..., N]    a real object (not padding)
  context: np.ndarray    # f32 [..., C]
  hand: np.ndarray       # f32 [..., 6]     the hand before the interaction
  action: np.ndarray     # f32 [..., A]
  stage: np.ndarray      # i32 [...]
  broken: np.ndarray     # bool [..., N]
  contact: np.ndarray    # bool [..., N]
  valid: np.ndarray      # bool [...]       the physics kept the env sane
  material: np.ndarray   # i32 [..., N]     index into jaxlab.physics.MATERIALS, -1 for padding


class Obs(NamedTuple):
  """Padded observations, what the policy sees before it acts."""
  objects: np.ndarray
  mask: np.ndarray
  context: np.ndarray
  hand: np.ndarray
  stage: np.ndarray


def empty(n: int, dims: Dims) -> Batch:
  """n rows of padding (invalid, no objects)."""
  z = lambda *shape: np.zeros(shape, np.float32)
  return Batch(objects=z(n, dims.objects, OBJ_DIM), next=z(n, dims.objects, OBJ_DIM),
               mask=np.zeros((n, dims.objects), bool), context=z(n, dims.context), hand=z(n, HAND_DIM),
               action=z(n, dims.action), stage=np.zeros(n, np.int32), broken=np.zeros((n, dims.objects), bool),
               contact=np.zeros((n, dims.objects), bool), valid=np.zeros(n, bool),
               material=np.full((n, dims.objects), -1, np.int32))


def _pad(x: np.ndarray, axis: int, size: int, value=0) -> np.ndarray:
  x = np.asarray(x)
  if x.shape[axis] > size:
    raise ValueError(f"axis {axis} of shape {x.shape} is larger than the padded size {size}")
  width = [(0, 0)] * x.ndim
  width[axis] = (0, size - x.shape[axis])
  return np.pad(x, width, constant_values=value)


def obs(observation, stage: int, dims: Dims) -> Obs:
  """A jaxlab.physics Observation of `stage`, padded."""
  e, n = observation.objects.shape[:2]
  hand = np.zeros((e, HAND_DIM), np.float32) if observation.hand is None else observation.hand
  return Obs(objects=_pad(np.asarray(observation.objects, np.float32), 1, dims.objects),
             mask=_pad(np.ones((e, n), bool), 1, dims.objects, False),
             context=_pad(np.asarray(observation.context, np.float32), 1, dims.context),
             hand=np.asarray(hand, np.float32), stage=np.full(e, stage, np.int32))


def transition(tr, stage: int, dims: Dims, material: np.ndarray) -> Batch:
  """A jaxlab.physics Transition of `stage`, padded; `material` is i32 [envs, objects]."""
  o = obs(tr.obs, stage, dims)
  return Batch(objects=o.objects, next=_pad(np.asarray(tr.next.objects, np.float32), 1, dims.objects),
               mask=o.mask, context=o.context, hand=o.hand,
               action=_pad(np.asarray(tr.action, np.float32), 1, dims.action),
               stage=o.stage, broken=_pad(np.asarray(tr.broken, bool), 1, dims.objects, False),
               contact=_pad(np.asarray(tr.contact, bool), 1, dims.objects, False),
               valid=np.asarray(tr.valid, bool),
               material=_pad(np.asarray(material, np.int32), 1, dims.objects, -1))


def stack(items):
  """Stacks NamedTuples of arrays along a new leading axis."""
  return type(items[0])(*(np.stack(xs) for xs in zip(*items)))


def concat(items):
  return type(items[0])(*(np.concatenate(xs) for xs in zip(*items)))
