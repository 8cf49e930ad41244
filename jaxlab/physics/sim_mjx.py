"""The MJX backend: pure, jittable `reset(key)` / `step(state, action)` over a batch of envs,
vmapped, with the env axis sharded over the mesh (developmental-physics spec, "parallel
simulation"; for GPUs and TPUs: on CPU the C backend is ~20x faster).

Each env's model is the shared mjx.Model with only randomize.FIELDS batched (randomize.batched_model).
The interaction logic (api.start, api.outcome) is the same code the C backend runs, on jax.numpy.
"""

from __future__ import annotations

import copy
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P
from mujoco import mjx

from jaxlab.core import mesh as mesh_lib
from jaxlab.physics import api, cholesky, randomize, scenes
from jaxlab.physics.config import PhysicsConfig
from jaxlab.physics.sim_c import as_key, check_actions


class EnvState(NamedTuple):
  qpos: jax.Array            # [n, nq]
  qvel: jax.Array            # [n, nv]
  scene: randomize.Scene     # per-env scene (materials, model fields, goal)
  key: jax.Array             # the key scenes are drawn from
  count: jax.Array           # interactions so far (fresh scenes for invalid envs use fold_in(key, count))


class StepOut(NamedTuple):
  objects: jax.Array         # [n, k, 13] after the interaction (NaN-cleaned)
  hand: jax.Array            # [n, 6]
  broken: jax.Array          # bool [n, k]
  contact: jax.Array         # bool [n, k]
  valid: jax.Array           # bool [n]


@functools.lru_cache(maxsize=None)
def _base(stage: int, config: PhysicsConfig) -> mjx.Model:
  """The stage's mjx.Model, built eagerly even when first asked for inside a trace: a cached value
  made under jit or shard_map would hold that trace's tracers, and every later program that
  reached it would fail with UnexpectedTracerError."""
  model = copy.copy(scenes.base_model(stage, config))
  model.opt.iterations = config.mjx_iterations     # see PhysicsConfig.mjx_iterations
  with jax.ensure_compile_time_eval():
    return mjx.put_model(model)


def reset(key, stage: int, config: PhysicsConfig, n: int, first=0) -> EnvState:
  """Fresh envs first .. first+n-1; env i's scene comes from fold_in(key, i), as on the C backend."""
  scene = randomize.draw_pure(key, stage, randomize.tables(config), first, n)
  nv = scenes.base_model(stage, config).nv
  return EnvState(scene.qpos, jnp.zeros((n, nv), scene.qpos.dtype), scene, key, jnp.zeros((), jnp.int32))


def simulate(stage: int, config: PhysicsConfig, fields: dict, qpos, qvel, ctrl):
  """Trajectories qpos [n, T+1, nq] and qvel [n, T+1, nv] from the start state, ctrl held."""
  base = _base(stage, config)
  model, axes = randomize.batched_model(base, fields)
  data0 = mjx.make_data(base)

  def one(m, q, v, c):
    def body(d, _):
      d = mjx.step(m, d)
      return d, (d.qpos, d.qvel)
    _, (qs, vs) = jax.lax.scan(body, data0.replace(qpos=q, qvel=v, ctrl=c), None,
                               length=config.steps_per_interaction[stage])
    return jnp.concatenate([q[None], qs]), jnp.concatenate([v[None], vs])

  with cholesky.pure_jax():
    return jax.vmap(one, in_axes=(axes, 0, 0, 0))(model, qpos, qvel, ctrl)


def step(state: EnvState, action, stage: int, config: PhysicsConfig, first=0):
  """One interaction of every env: (new state, StepOut). Invalid envs restart from fresh scenes
  (env i, the first+i-th of the whole batch, from fold_in(fold_in(key, count), first + i))."""
  new, out, _ = interact(state, action, stage, config, first)
  return new, out


def interact(state: EnvState, action, stage: int, config: PhysicsConfig, first=0):
  """`step`, also returning the interaction's trajectories (qpos [n, T+1, nq], qvel [n, T+1, nv])."""
  k, n = len(scenes.layout(stage).slots), state.qpos.shape[0]
  qpos, qvel, ctrl = api.start(stage, config, state.qpos, state.qvel, state.scene.drop_quat, action, jnp)
  qs, vs = simulate(stage, config, state.scene.fields, qpos, qvel, ctrl)
  contact, broken, valid = api.outcome(stage, config, qs, vs, state.scene.fields["opt.gravity"],
                                       state.scene.break_speed, jnp)
  qpos_end, qvel_end = jnp.nan_to_num(qs[:, -1]), jnp.nan_to_num(vs[:, -1])
  out = StepOut(api.objects(qpos_end, qvel_end, k, jnp), api.hand(qpos_end, qvel_end, stage, config, jnp),
                broken & valid[:, None], contact & valid[:, None], valid)
  count = state.count + 1
  fresh = randomize.draw_pure(jax.random.fold_in(state.key, count), stage, randomize.tables(config), first, n)
  keep = lambda old, new: jnp.where(valid.reshape((-1,) + (1,) * (old.ndim - 1)), old, new)
  scene = jax.tree.map(keep, state.scene, fresh)
  new = EnvState(keep(qpos_end, fresh.qpos), keep(qvel_end, jnp.zeros_like(qvel_end)), scene, state.key, count)
  return new, out, (qs, vs)


def observe(state: EnvState, stage: int, config: PhysicsConfig) -> api.Observation:
  """The envs' observation (jax.numpy)."""
  k = len(scenes.layout(stage).slots)
  return api.Observation(api.objects(state.qpos, state.qvel, k, jnp),
                         api.context(stage, state.scene.material, state.scene.goal, jnp),
                         api.hand(state.qpos, state.qvel, stage, config, jnp))


def transition(state: EnvState, action, stage: int, config: PhysicsConfig, first=0):
  """`step`, returning (new state, api.Transition) like the C backend's act (pure, jittable)."""
  obs = observe(state, stage, config)
  new, out = step(state, action, stage, config, first)
  nxt = api.Observation(out.objects, obs.context, out.hand)
  return new, api.Transition(obs, action, nxt, out.broken, out.contact, out.valid)


class MjxSim:
  """num_envs envs of one stage on MJX, the env axis sharded over every device of the mesh; the
  same methods and NumPy results as sim_c.CSim."""

  def __init__(self, stage: int, num_envs: int, *, seed=0, config: PhysicsConfig | None = None):
    if not (isinstance(num_envs, int) and num_envs >= 1):
      raise ValueError(f"num_envs: must be a positive integer, got {num_envs!r}")
    self.config = config or PhysicsConfig()
    self.spec = api.spec(stage, self.config)
    self.stage, self.num_envs = stage, num_envs
    self.mesh = mesh_lib.make_mesh()
    self.size = mesh_lib.padded_size(num_envs, self.mesh)      # whole rows per device
    local = self.size // self.mesh.size
    first = lambda: jax.lax.axis_index(mesh_lib.AXIS) * local
    # each device runs its own rows (shard_map), so per-env code never sees a sharded axis
    shape = jax.eval_shape(lambda k: reset(k, stage, self.config, local), jax.random.key(0))
    specs = jax.tree.map(lambda s: P(mesh_lib.AXIS) if s.ndim else P(), shape)
    rows = P(mesh_lib.AXIS)
    self.shardings = jax.tree.map(lambda p: NamedSharding(self.mesh, p), specs)
    self.rows = NamedSharding(self.mesh, rows)
    shard = functools.partial(jax.shard_map, mesh=self.mesh, check_vma=False)
    self._reset = jax.jit(shard(lambda k: reset(k, stage, self.config, local, first()), in_specs=P(), out_specs=specs))
    self._step = jax.jit(shard(lambda s, a: transition(s, a, stage, self.config, first()), in_specs=(specs, rows),
                               out_specs=(specs, rows)), donate_argnums=0)
    self.reset(seed)

  def reset(self, seed_or_key=0) -> api.Observation:
    self.state = self._reset(as_key(seed_or_key))
    return self.obs

  def _host(self, x):
    return np.asarray(x)[:self.num_envs]

  @property
  def qpos(self) -> np.ndarray:
    return self._host(self.state.qpos)

  @property
  def scene(self) -> randomize.Scene:
    return jax.tree.map(self._host, self.state.scene)

  @property
  def obs(self) -> api.Observation:
    return jax.tree.map(self._host, observe(self.state, self.stage, self.config))

  def _pad(self, x):
    x = np.asarray(x)
    return np.concatenate([x, np.repeat(x[:1], self.size - len(x), axis=0)]) if self.size > len(x) else x

  def _put(self, **changes):
    self.state = jax.device_put(self.state._replace(**changes), self.shardings)

  def set_qpos(self, qpos) -> api.Observation:
    qpos = self._pad(np.asarray(qpos, np.float32).reshape(self.num_envs, -1))
    self._put(qpos=qpos, qvel=np.zeros_like(np.asarray(self.state.qvel)))
    return self.obs

  def set_field(self, name: str, value) -> None:
    value = randomize.check_field(name, value, self.state.scene.fields, self.num_envs, self.stage)
    full = np.array(self.state.scene.fields[name])
    full[:self.num_envs] = value
    self._put(scene=self.state.scene._replace(fields={**self.state.scene.fields, name: full}))

  def act(self, actions) -> api.Transition:
    a = check_actions(actions, self.num_envs)
    self.state, out = self._step(self.state, jax.device_put(self._pad(a), self.rows))
    return jax.tree.map(self._host, out)._replace(action=a)
