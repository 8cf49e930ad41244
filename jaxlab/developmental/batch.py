"""One padded layout for transitions of every stage, so one world model and one compiled learner
serve the whole curriculum (developmental-physics.md, "World Model (Predictive Understanding)").

The four stages differ in how many objects, context fields and action dimensions they have
(jaxlab.physics SimSpec). Every transition is padded (on the host with NumPy, or inside the fused
program with jax.numpy) to the largest of each (`Dims`), with an object mask; the stage index
travels with it and the model sees it as a one-hot. Padded objects, context fields and action
dimensions are zero, so they carry no signal; the context's per-object blocks are padded and the
goal stays last, so every field sits at the same place in every stage.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from jaxlab.physics.api import HAND_DIM, OBJ_DIM   # object state: pos 3, quat 4, velocity 3, spin 3
from jaxlab.physics.materials import MATERIALS

N_MATERIALS = len(MATERIALS)


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


def empty(shape, dims: Dims) -> Batch:
  """Rows of padding (invalid, no objects); `shape` is the leading axes (an int or a tuple)."""
  lead = (shape,) if isinstance(shape, int) else tuple(shape)
  z = lambda *rest: np.zeros(lead + rest, np.float32)
  return Batch(objects=z(dims.objects, OBJ_DIM), next=z(dims.objects, OBJ_DIM),
               mask=np.zeros(lead + (dims.objects,), bool), context=z(dims.context), hand=z(HAND_DIM),
               action=z(dims.action), stage=np.zeros(lead, np.int32), broken=np.zeros(lead + (dims.objects,), bool),
               contact=np.zeros(lead + (dims.objects,), bool), valid=np.zeros(lead, bool),
               material=np.full(lead + (dims.objects,), -1, np.int32))


def _pad(x, axis: int, size: int, xp, value=0):
  if x.shape[axis] > size:
    raise ValueError(f"axis {axis} of shape {x.shape} is larger than the padded size {size}")
  width = [(0, 0)] * x.ndim
  width[axis] = (0, size - x.shape[axis])
  return xp.pad(x, width, constant_values=value)


def materials(context, k: int, xp=np):
  """i32 [envs, k]: each object's index into jaxlab.physics.MATERIALS, read from the context (per
  object: material one-hot, shape one-hot, size 3; then the goal 3: jaxlab.physics.api)."""
  n, per_object = context.shape[0], (context.shape[1] - 3) // k
  block = context[:, :k * per_object].reshape(n, k, per_object)
  return block[..., :N_MATERIALS].argmax(-1).astype(xp.int32)


def obs(observation, stage: int, dims: Dims, xp=np) -> Obs:
  """A jaxlab.physics Observation of `stage`, padded (NumPy, or jax.numpy inside a program)."""
  objects = xp.asarray(observation.objects, xp.float32)
  e, n = objects.shape[:2]
  hand = xp.zeros((e, HAND_DIM), xp.float32) if observation.hand is None else xp.asarray(observation.hand, xp.float32)
  # per-object context blocks padded to the widest stage, the goal (last 3) kept last
  context = xp.asarray(observation.context, xp.float32)
  blocks = _pad(context[:, :-3], 1, dims.context - 3, xp)
  return Obs(objects=_pad(objects, 1, dims.objects, xp),
             mask=_pad(xp.ones((e, n), bool), 1, dims.objects, xp, False),
             context=xp.concatenate([blocks, context[:, -3:]], 1),
             hand=hand, stage=xp.full(e, stage, xp.int32))


def transition(tr, stage: int, dims: Dims, xp=np) -> Batch:
  """A jaxlab.physics Transition of `stage`, padded."""
  o = obs(tr.obs, stage, dims, xp)
  k = tr.obs.objects.shape[1]
  return Batch(objects=o.objects, next=_pad(xp.asarray(tr.next.objects, xp.float32), 1, dims.objects, xp),
               mask=o.mask, context=o.context, hand=o.hand,
               action=_pad(xp.asarray(tr.action, xp.float32), 1, dims.action, xp),
               stage=o.stage, broken=_pad(xp.asarray(tr.broken, bool), 1, dims.objects, xp, False),
               contact=_pad(xp.asarray(tr.contact, bool), 1, dims.objects, xp, False),
               valid=xp.asarray(tr.valid, bool),
               material=_pad(materials(xp.asarray(tr.obs.context), k, xp), 1, dims.objects, xp, -1))


def stack(items):
  """Stacks NamedTuples of arrays along a new leading axis."""
  return type(items[0])(*(np.stack(xs) for xs in zip(*items)))


def concat(items):
  return type(items[0])(*(np.concatenate(xs) for xs in zip(*items)))
