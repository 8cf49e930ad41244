"""Per-env scenes and domain randomization (developmental-physics spec: "domain randomization").

`draw(key, stage, config, n)` gives every env its own materials, real-valued model fields and
placements, as one pure JAX function, so the C and MJX backends get identical scenes from one key.
Only the fields in FIELDS are batched (mujoco_playground's way): MJX vmaps over a Model whose
batched leaves are exactly these arrays (`batched_model`), every other field stays shared.

Fields per env: geom_friction and geom_solref of the objects (material x friction_scale,
material damping x damping_scale), body_mass and body_inertia (density x volume x mass_scale; the
inertia scales with the mass, the shape being fixed), and opt.gravity (magnitude in config.gravity).
The constants MuJoCo derives from masses at compile time (mj_setConst: subtree masses, inverse
weights, dof_M0, which MuJoCo 4 steps simple bodies with) are scaled along, so the changed masses
really act: without it a heavier object falls faster.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxlab.physics import scenes
from jaxlab.physics.config import PhysicsConfig
from jaxlab.physics.materials import LIBRARY, MATERIALS

FIELDS = ("geom_friction", "geom_solref", "body_mass", "body_inertia", "body_subtreemass", "body_invweight0",
          "dof_invweight0", "dof_M0", "opt.gravity")
_DEFAULT = PhysicsConfig()
F32 = jnp.float32
LYING = np.array([np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0])   # capsule axis along x


class Scene(NamedTuple):
  """One scene per env (leading axis)."""
  material: jax.Array      # int32 [n, num_objects], index into materials.MATERIALS
  fields: dict             # name in FIELDS -> [n, ...] the model field's per-env values
  break_speed: jax.Array   # [n, num_objects] m/s (inf: unbreakable)
  qpos: jax.Array          # [n, nq] the starting configuration (velocities start at zero)
  drop_quat: jax.Array     # [n, num_objects, 4] orientation objects are dropped with (stage 0)
  goal: jax.Array          # [n, 3] where the target should go (stage 3; zeros elsewhere)


class Tables(NamedTuple):
  """The config's numbers draw() needs, as arrays (dynamic, so a new config does not recompile)."""
  allowed: np.ndarray       # int [m] material indices scenes draw from
  density: np.ndarray       # [len(MATERIALS)]
  friction: np.ndarray      # [len(MATERIALS), 3]
  solref: np.ndarray        # [len(MATERIALS), 2]
  break_speed: np.ndarray   # [len(MATERIALS)]
  ranges: dict              # name -> (low, high)


def tables(config: PhysicsConfig) -> Tables:
  mats = [LIBRARY[m] for m in MATERIALS]
  ranges = {f: np.array(getattr(config, f), np.float32)
            for f in ("friction_scale", "damping_scale", "mass_scale", "gravity", "break_scale")}
  return Tables(np.array([MATERIALS.index(m) for m in config.materials], np.int32),
                np.array([m.density for m in mats], np.float32), np.array([m.friction for m in mats], np.float32),
                np.array([[-m.stiffness, -m.damping] for m in mats], np.float32),
                np.array([m.break_speed for m in mats], np.float32), ranges)


class _Stream:
  """Uniform numbers from one threefry call per env, handed out in order (one random call instead
  of thirty keeps XLA's compile of draw() short)."""
  SIZE = 48

  def __init__(self, key):
    # float32 whatever jax_enable_x64 says: the same key draws the same scenes in both modes
    self.u, self.i = jax.random.uniform(key, (self.SIZE,), F32), 0

  def take(self, rng, shape=()):
    size = int(np.prod(shape))
    assert self.i + size <= self.SIZE
    x = self.u[self.i:self.i + size].reshape(shape)
    self.i += size
    return rng[0] + x * (rng[1] - rng[0])

  def quat(self):
    """A uniformly random unit quaternion (Shoemake)."""
    u1, u2, u3 = self.take((0, 1)), self.take((0, 2 * np.pi)), self.take((0, 2 * np.pi))
    a, b = jnp.sqrt(1 - u1), jnp.sqrt(u1)
    return jnp.stack([a * jnp.sin(u2), a * jnp.cos(u2), b * jnp.sin(u3), b * jnp.cos(u3)])


def _placement(r: _Stream, stage: int, lay: scenes.Layout):
  """Object poses [num_objects, 7], hand position [3] (or None), goal [3]."""
  f32 = lambda x: jnp.asarray(x, F32)
  resting = [f32(LYING if s.shape == "capsule" else [1.0, 0, 0, 0]) for s in lay.slots]
  z = f32([s.half_height for s in lay.slots])
  goal = jnp.zeros(3, F32)
  hand = None
  if stage == 0:
    xy = f32([[-0.5, 0.0], [0.0, 0.0], [0.5, 0.0]]) + r.take((-0.05, 0.05), (3, 2))
  elif stage == 1:
    x = f32([-0.35, 0.0, 0.35]) + r.take((-0.08, 0.08), (3,))
    xy = jnp.stack([x, r.take((-0.35, 0.35), (3,))], -1)
    hand = jnp.stack([r.take((-0.5, 0.5)), f32(-0.6), f32(scenes.HAND_RADIUS)])
  elif stage == 2:
    base = r.take((-0.2, 0.2), (2,))
    half = f32([s.size[0] for s in lay.slots])
    # each block shifted off the one below by up to 1.2 of that block's half width in x and y: past 1, it tips
    shift = r.take((-1.2, 1.2), (2, 2)) * half[:2, None]
    xy = jnp.stack([base, base + shift[0], base + shift[0] + shift[1]])
    heights = f32([2 * s.size[2] for s in lay.slots])
    z = jnp.cumsum(heights) - heights / 2 + f32([0.0, 1e-4, 2e-4])
    hand = jnp.stack([r.take((-0.5, 0.5)), f32(-0.6), f32(scenes.HAND_RADIUS)])
  else:
    y = r.take((-0.3, 0.3))
    stick = jnp.stack([r.take((0.0, 0.08)), y + r.take((-0.05, 0.05))])
    target = jnp.stack([0.38 + r.take((0.0, 0.1)), y + r.take((-0.03, 0.03))])
    xy = jnp.stack([stick, target])
    goal = jnp.stack([r.take((0.6, 0.75)), y + r.take((-0.1, 0.1)), f32(lay.slots[1].half_height)])
    hand = jnp.stack([r.take((-0.45, -0.3)), stick[1], f32(scenes.HAND_RADIUS)])
  poses = jnp.concatenate([xy, z[:, None], jnp.stack(resting)], -1)
  return poses, hand, goal


@functools.lru_cache(maxsize=None)
def _float32_fields(stage: int) -> SimpleNamespace:
  """The base model's arrays draw() starts from, as float32 NumPy (MuJoCo keeps float64; float32
  here keeps the scenes identical with and without jax_enable_x64)."""
  model = scenes.base_model(stage, _DEFAULT)
  return SimpleNamespace(**{name: np.asarray(getattr(model, name), np.float32) for name in (
      "body_mass", "body_inertia", "body_subtreemass", "body_invweight0", "dof_invweight0", "dof_M0",
      "geom_friction", "geom_solref")}, body_dofadr=model.body_dofadr)


def _one(key, stage: int, t: Tables):
  # the fields drawn here do not depend on the config's solver or hand settings: any config's
  # base model gives the same arrays
  model, idx, lay = _float32_fields(stage), scenes.indices(stage, _DEFAULT), scenes.layout(stage)
  n = len(lay.slots)
  r = _Stream(key)
  material = t.allowed[jnp.minimum((r.take((0, 1), (n,)) * len(t.allowed)).astype(jnp.int32), len(t.allowed) - 1)]
  volume = model.body_mass[idx.bodies] / 1000.0        # the base model was compiled at density 1000
  mass = t.density[material] * volume * r.take(t.ranges['mass_scale'], (n,))
  ratio = mass / model.body_mass[idx.bodies]
  dofs = (model.body_dofadr[idx.bodies][:, None] + np.arange(6)).reshape(-1)
  dof_ratio = jnp.repeat(ratio, 6)
  subtree = jnp.asarray(model.body_subtreemass).at[idx.bodies].set(mass)
  fields = {
      "geom_friction": jnp.asarray(model.geom_friction).at[idx.geoms].set(
          t.friction[material] * r.take(t.ranges['friction_scale'], (n, 1))),
      "geom_solref": jnp.asarray(model.geom_solref).at[idx.geoms].set(
          t.solref[material] * jnp.stack([jnp.ones(n, F32), r.take(t.ranges['damping_scale'], (n,))], -1)),
      "body_mass": jnp.asarray(model.body_mass).at[idx.bodies].set(mass),
      "body_inertia": jnp.asarray(model.body_inertia).at[idx.bodies].set(
          model.body_inertia[idx.bodies] * (mass / model.body_mass[idx.bodies])[:, None]),
      "body_subtreemass": subtree.at[0].add(jnp.sum(mass) - model.body_mass[idx.bodies].sum()),
      "body_invweight0": jnp.asarray(model.body_invweight0).at[idx.bodies].divide(ratio[:, None]),
      "dof_invweight0": jnp.asarray(model.dof_invweight0).at[dofs].divide(dof_ratio),
      "dof_M0": jnp.asarray(model.dof_M0).at[dofs].multiply(dof_ratio),
      "opt.gravity": jnp.asarray([0.0, 0.0, -1.0], F32) * r.take(t.ranges['gravity']),
  }
  poses, hand, goal = _placement(r, stage, lay)
  qpos = poses.reshape(-1) if hand is None else jnp.concatenate([poses.reshape(-1), hand])
  drop_quat = jnp.stack([r.quat() for _ in range(n)])
  breaks = t.break_speed[material] * r.take(t.ranges['break_scale'], (n,))
  return Scene(material.astype(jnp.int32), fields, breaks, qpos, drop_quat, goal)


def env_keys(key, first, n: int):
  """The keys of envs first .. first+n-1 of a batch drawn from `key`: env i's is fold_in(key, i)."""
  return jax.vmap(lambda i: jax.random.fold_in(key, i))(first + jnp.arange(n, dtype=jnp.int32))


def draw_each(keys, stage: int, t: Tables) -> Scene:
  """One scene per key (jittable)."""
  t = jax.tree.map(jnp.asarray, t)
  return jax.vmap(lambda k: _one(k, stage, t))(keys)


def draw_pure(key, stage: int, t: Tables, first, n: int) -> Scene:
  """Scenes of envs first .. first+n-1: env i's scene comes from fold_in(key, i) (jittable)."""
  return draw_each(env_keys(key, first, n), stage, t)


BLOCK = 64
_draw_block = jax.jit(draw_each, static_argnums=1)


def draw_keys(keys, stage: int, config: PhysicsConfig) -> Scene:
  """One scene per key as NumPy, in blocks of BLOCK keys so every count shares one compiled program."""
  keys = np.asarray(jax.random.key_data(keys))
  n = len(keys)
  padded = np.concatenate([keys, np.repeat(keys[:1], -n % BLOCK, axis=0)])
  t = tables(config)
  blocks = [_draw_block(jax.random.wrap_key_data(padded[i:i + BLOCK]), stage, t) for i in range(0, len(padded), BLOCK)]
  return jax.tree.map(lambda *x: np.concatenate([np.asarray(b) for b in x])[:n], *blocks)


def draw(key, stage: int, config: PhysicsConfig, n: int) -> Scene:
  """n scenes as NumPy: env i's from fold_in(key, i), as draw_pure."""
  return draw_keys(env_keys(key, 0, n), stage, config)


def batched_model(base, fields: dict):
  """An mjx.Model whose FIELDS leaves carry the env axis, and its vmap in_axes (0 there, None
  elsewhere). Built outside any vmap: a vmapped function returning a Model would batch every leaf."""
  model = base.tree_replace(fields)
  axes = jax.tree.map(lambda _: None, base).tree_replace({name: 0 for name in fields})
  return model, axes


def write_c_models(models, scene_np: Scene, envs) -> None:
  """Writes the FIELDS of the given envs into the C backend's per-env MjModel copies."""
  for i in envs:
    m = models[i]
    for name, value in scene_np.fields.items():
      target = m.opt.gravity if name == "opt.gravity" else getattr(m, name)
      target[...] = value[i]


# What a per-env field may hold (set_field): every field finite; these also non-negative.
_NON_NEGATIVE = ("geom_friction", "body_mass", "body_inertia", "body_subtreemass", "body_invweight0",
                 "dof_invweight0", "dof_M0")


def check_field(name: str, value, fields: dict, n: int, stage: int) -> np.ndarray:
  """`value` for the per-env field `name`, broadcast to the shape [n, ...] of n envs' values in
  `fields` and checked, so a bad value is an error here rather than an exploded scene that the
  sanity check would silently replace with a fresh one."""
  if name not in FIELDS:
    raise ValueError(f"set_field: name must be one of {FIELDS}, got {name!r}")
  current = np.asarray(fields[name])[:n]
  try:
    v = np.broadcast_to(np.asarray(value, np.float64), current.shape)
  except ValueError:
    raise ValueError(f"set_field({name!r}): value of shape {np.shape(value)} does not broadcast to the "
                     f"field's per-env shape {current.shape}") from None
  def bad(what, where):
    at = np.argwhere(where)[0]
    raise ValueError(f"set_field({name!r}): {what}, got {float(v[tuple(at)])!r} at [env, ...] index {at.tolist()}")
  if not np.isfinite(v).all():
    bad("values must be finite", ~np.isfinite(v))
  if name in _NON_NEGATIVE and (v < 0).any():
    bad("values must be non-negative", v < 0)
  objects = np.zeros(v.shape, bool)
  if name in ("body_mass", "body_inertia"):
    objects[:, scenes.indices(stage, _DEFAULT).bodies] = True
    if (objects & (v <= 0)).any():
      bad("every object needs a positive mass and inertia", objects & (v <= 0))
  if name == "geom_solref":
    rows = v[:, scenes.indices(stage, _DEFAULT).geoms]
    mixed = ~(((rows[..., 0] > 0) & (rows[..., 1] > 0)) | ((rows[..., 0] < 0) & (rows[..., 1] < 0)))
    if mixed.any():
      raise ValueError(f"set_field('geom_solref'): an object's solref must be (timeconst, dampratio) > 0 or "
                       f"(-stiffness, -damping) < 0, got {rows[mixed][0].tolist()}")
  return v.astype(current.dtype)
