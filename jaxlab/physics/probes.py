"""Violation-of-expectation probes in the IntPhys style (developmental-physics spec: "track
surprise when predictions fail"). Each kind gives matched pairs: the same start state and action;
the possible event is simulated, the impossible one differs by one physically impossible change.

  fall_through_floor         stage 0 drop. Impossible: the objects fall on as if the floor were not
                             there: the exact free-fall continuation (MuJoCo's semi-implicit Euler)
                             from the drop pose, no contact.
  hover                      stage 0 drop. Impossible: the released objects stay at their drop pose,
                             at rest, unsupported, no contact.
  glass_bounces_like_rubber  stage 0 drop of glass objects (context says glass). Impossible: the same
                             drop simulated with rubber's restitution (solref) and friction, and no
                             break event.
  rubber_shatters            stage 0 drop of rubber objects (context says rubber). Impossible: the same
                             drop, every object breaking (rubber never breaks), contacts as simulated.
  offcentre_stack_stays      stage 2: the top block is set 1.15 to 1.4 of its support's half width
                             past the middle block's centre and two interactions run (it starts
                             tipping). Impossible: in the next interaction it stays where it is, at rest.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxlab.physics import api, make_sim, scenes
from jaxlab.physics.config import PhysicsConfig
from jaxlab.physics.materials import LIBRARY

KINDS = ("fall_through_floor", "hover", "glass_bounces_like_rubber", "offcentre_stack_stays", "rubber_shatters")
ONLY = {"glass_bounces_like_rubber": "glass", "rubber_shatters": "rubber"}   # probes of one material


def _replace_next(t: api.Transition, objects, contact=None, broken=None) -> api.Transition:
  nothing = np.zeros_like(t.contact)
  return t._replace(next=t.next._replace(objects=objects.astype(np.float32)),
                    contact=nothing if contact is None else contact,
                    broken=nothing if broken is None else broken)


def _drop_pose(sim, action):
  """Object poses [n, k, 7] the drop starts from."""
  poses = np.asarray(sim.obs.objects[..., :7], np.float64).reshape(sim.num_envs, -1)
  qpos, _, _ = api.start(0, sim.config, poses, np.zeros((sim.num_envs, 6 * sim.spec.num_objects)),
                         np.asarray(sim.scene.drop_quat), action, np)
  return qpos.reshape(sim.num_envs, -1, 7)


def _rest(pose):
  return np.concatenate([pose, np.zeros(pose.shape[:-1] + (6,))], -1)


def _free_fall(sim, pose):
  """States after steps_per_interaction semi-implicit Euler steps of free fall from rest."""
  t, dt = sim.spec.steps_per_interaction, sim.spec.dt
  g = np.asarray(sim.scene.fields["opt.gravity"], np.float64)[:, None, :]
  out = _rest(pose)
  out[..., :3] += g * dt * dt * t * (t + 1) / 2
  out[..., 7:10] = g * dt * t
  return out


def _material(config, kind):
  return dataclasses.replace(config, materials=(ONLY[kind],)) if kind in ONLY else config


def probe_pairs(kind: str, n: int, seed: int, config: PhysicsConfig | None = None, backend: str = "c"):
  """(possible, impossible) Transitions of n matched events of the kind."""
  if kind not in KINDS:
    raise ValueError(f"kind: must be one of {KINDS}, got {kind!r}")
  config = _material(config or PhysicsConfig(), kind)
  rng = np.random.default_rng(seed)
  if kind == "offcentre_stack_stays":
    sim = make_sim(2, n, backend=backend, seed=seed, config=config)
    qpos = np.array(sim.qpos, np.float64)
    obj = qpos[:, :21].reshape(n, 3, 7)
    obj[:, 1, :2] = obj[:, 0, :2]
    half = scenes.layout(2).slots[1].size[0]
    angle = rng.uniform(0, 2 * np.pi, n)
    shift = rng.uniform(1.15, 1.4, n) * half
    obj[:, 2, :2] = obj[:, 1, :2] + shift[:, None] * np.stack([np.cos(angle), np.sin(angle)], -1) / np.maximum(
        np.abs(np.cos(angle)), np.abs(np.sin(angle)))[:, None]
    qpos[:, :21] = obj.reshape(n, 21)
    sim.set_qpos(qpos)
    action = np.zeros((n, api.ACTION_DIM), np.float32)
    for _ in range(2):                    # the stack starts tipping
      sim.act(action)
    possible = sim.act(action)
    still = possible.obs.objects.copy()
    still[..., 7:] = 0.0
    return possible, _replace_next(possible, still, contact=possible.contact)
  sim = make_sim(0, n, backend=backend, seed=seed, config=config)
  action = rng.uniform(0.0, 1.0, (n, api.ACTION_DIM)).astype(np.float32)   # drops of 0.55 to 1.0 m
  if kind == "glass_bounces_like_rubber":
    twin = make_sim(0, n, backend=backend, seed=seed, config=config)
    rubber, geoms = LIBRARY["rubber"], scenes.indices(0, config).geoms
    solref = np.array(twin.scene.fields["geom_solref"])
    solref[:, geoms] = [-rubber.stiffness, -rubber.damping]
    friction = np.array(twin.scene.fields["geom_friction"])
    friction[:, geoms] = rubber.friction
    twin.set_field("geom_solref", solref)
    twin.set_field("geom_friction", friction)
    possible, bouncy = sim.act(action), twin.act(action)
    return possible, _replace_next(possible, bouncy.next.objects, contact=bouncy.contact)
  if kind == "rubber_shatters":
    possible = sim.act(action)
    real = np.ones_like(possible.broken, dtype=bool)
    return possible, _replace_next(possible, possible.next.objects, contact=possible.contact, broken=real)
  pose = _drop_pose(sim, action)
  possible = sim.act(action)
  impossible = _free_fall(sim, pose) if kind == "fall_through_floor" else _rest(pose)
  return possible, _replace_next(possible, impossible)
