"""The world model and the self-model (developmental-physics.md, "Developmental Learning Through
Simulation": 1. World Model, 2. Self-Model).

World model: from the objects' state, the scene's visible context, the hand, the action and the
stage, it predicts each object's state change over one interaction (position, orientation, linear
and angular velocity, each scaled by a fixed unit) and two event logits per object: "it breaks" and
"it touches something". Surprise is its prediction error on what really happened: the mean over
an env's objects of the squared scaled state error plus the event cross-entropies. Two kinds:
  relational  an interaction network (Battaglia et al. 2016, "Interaction Networks for Learning
              about Objects, Relations and Physics"): one MLP per ordered pair of objects on their
              relative position and velocity, orientations, spins and the other's context, summed
              into a message per object; one MLP per object on its own state, context, the hand
              and the goal relative to it, the action, the stage and its message. The same weights
              serve every object and pair, so what is learnt about a block on a block holds for any.
  mlp         one MLP on everything flattened (the first design).

Self-model: a small MLP on the flat input predicts the log surprise the world model will have,
before the action is taken. Curiosity ranks candidate actions with it (curiosity.py).

Both train online with one optax optimizer (Adam, global-norm clipping) on each batch of
environments plus a replay sample; the self-model's target is the world model's surprise with the
gradient stopped, so it never pushes the world model.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxlab.developmental.batch import HAND_DIM, OBJ_DIM, Batch, Dims, Obs

LOG_EPS = 1e-4   # floor inside log(surprise): the self-model's target stays finite at zero error


KINDS = ("relational", "mlp")


@dataclasses.dataclass(frozen=True)
class ModelConfig:
  kind: str = "relational"
  hidden: int = 128                # per-object MLP (relational) or the one MLP (mlp): width and depth
  depth: int = 2
  edge_hidden: int = 64            # per-pair MLP of the relational model (two layers)
  surprise_hidden: int = 128
  # Units of (position m, orientation quaternion, linear velocity m/s, angular velocity rad/s):
  # inputs are divided by input_scale; state changes by the stage's calibrated scale (RMS change
  # under random actions, see `delta_scale`), floored at delta_floor.
  input_scale: tuple = (1.0, 1.0, 2.0, 10.0)
  delta_floor: tuple = (1e-3, 1e-3, 1e-2, 1e-1)
  event_weight: float = 1.0        # weight of the break and contact cross-entropies in surprise
  learning_rate: float = 1e-3
  clip_norm: float = 1.0


GROUPS = np.repeat(np.arange(4), [3, 4, 3, 3])   # the group (pos, quat, vel, angvel) of each state dim


def _per_dim(scale) -> jnp.ndarray:
  """Four group scales [..., 4] -> one per state dimension [..., 13]."""
  return jnp.asarray(scale, jnp.float32)[..., GROUPS]


def delta_scale(batch: Batch, n_stages: int, cfg: ModelConfig) -> np.ndarray:
  """[stages, 13]: per stage and group, the RMS state change over real objects of valid
  transitions (the error of predicting "nothing changes" is then about 1), floored."""
  out = np.tile(np.asarray(cfg.delta_floor, np.float32), (n_stages, 1))
  delta = np.asarray(batch.next - batch.objects, np.float64)
  for s in range(n_stages):
    rows = delta[(batch.stage == s) & batch.valid][batch.mask[(batch.stage == s) & batch.valid]]
    for g in range(4):
      if rows.size:
        out[s, g] = max(out[s, g], float(np.sqrt(np.mean(rows[:, GROUPS == g] ** 2))))
  return out[:, GROUPS]


CONTEXT = 10     # per object: material one-hot (4), shape one-hot (3), size (3); then the goal (3)


def _parts(obs: Obs, dims: Dims, cfg: ModelConfig):
  """(objects scaled [..., N, 13], mask [..., N], per-object context [..., N, 10], goal [..., 3],
  hand scaled [..., 6], stage one-hot [..., S])."""
  mask = obs.mask.astype(jnp.float32)
  scale = _per_dim(cfg.input_scale)
  objects = obs.objects / scale * mask[..., None]
  lead = mask.shape[:-1]
  context = obs.context[..., :dims.objects * CONTEXT].reshape(*lead, dims.objects, CONTEXT)
  hand = obs.hand / jnp.concatenate([scale[:3], scale[7:10]])
  return objects, mask, context, obs.context[..., -3:], hand, jax.nn.one_hot(obs.stage, dims.stages)


def features(obs: Obs, action, dims: Dims, cfg: ModelConfig):
  """Flat model input of padded observations and actions (any leading axes)."""
  objects, mask, _, _, hand, stage = _parts(obs, dims, cfg)
  return jnp.concatenate([objects.reshape(*mask.shape[:-1], -1), mask, obs.context, hand, action, stage], axis=-1)


class MLP(nnx.Module):
  def __init__(self, d_in: int, hidden: int, depth: int, d_out: int, rngs: nnx.Rngs):
    sizes = [d_in] + [hidden] * depth
    self.layers = nnx.List([nnx.Linear(a, b, rngs=rngs) for a, b in zip(sizes[:-1], sizes[1:])])
    self.out = nnx.Linear(sizes[-1], d_out, rngs=rngs)

  def __call__(self, x):
    for layer in self.layers:
      x = nnx.gelu(layer(x))
    return self.out(x)


class Relational(nnx.Module):
  """Per-object outputs [..., N, 15] from per-pair messages and per-object updates."""
  EDGE_IN = 3 + 3 + 4 + 4 + 3 + 3 + CONTEXT + CONTEXT

  def __init__(self, dims: Dims, cfg: ModelConfig, rngs: nnx.Rngs):
    self.dims, self.cfg = dims, cfg
    node_in = OBJ_DIM + CONTEXT + 3 + 3 + 3 + dims.action + dims.stages
    self.edge = MLP(self.EDGE_IN, cfg.edge_hidden, 1, cfg.edge_hidden, rngs)
    self.node = MLP(node_in + cfg.edge_hidden, cfg.hidden, cfg.depth, OBJ_DIM + 2, rngs)

  def __call__(self, obs: Obs, action):
    objects, mask, context, goal, hand, stage = _parts(obs, self.dims, self.cfg)
    n = self.dims.objects
    pos, quat, vel, spin = objects[..., :3], objects[..., 3:7], objects[..., 7:10], objects[..., 10:]
    pair = lambda x: (jnp.broadcast_to(x[..., :, None, :], x.shape[:-1] + (n, x.shape[-1])),   # i
                      jnp.broadcast_to(x[..., None, :, :], x.shape[:-1] + (n, x.shape[-1])))   # j
    (pi, pj), (vi, vj), (qi, qj), (si, sj), (ci, cj) = map(pair, (pos, vel, quat, spin, context))
    edges = jnp.concatenate([pj - pi, vj - vi, qi, qj, si, sj, ci, cj], -1)             # [..., N, N, E]
    real = mask[..., None, :] * (1.0 - jnp.eye(n))                                       # j real, j != i
    message = jnp.sum(self.edge(edges) * real[..., None], axis=-2)
    glob = lambda x: jnp.broadcast_to(x[..., None, :], x.shape[:-1] + (n, x.shape[-1]))
    nodes = jnp.concatenate([objects, context, glob(hand[..., :3]) - pos, glob(hand[..., 3:]), glob(goal) - pos,
                             glob(action), glob(stage), message], -1)
    return self.node(nodes)


class WorldModel(nnx.Module):
  """dynamics: per object (13 scaled deltas, break logit, contact logit); surprise: the self-model."""

  def __init__(self, dims: Dims, cfg: ModelConfig, rngs: nnx.Rngs):
    self.dims, self.kind = dims, cfg.kind
    d_in = dims.objects * (OBJ_DIM + 1) + dims.context + HAND_DIM + dims.action + dims.stages
    if cfg.kind == "relational":
      self.dynamics = Relational(dims, cfg, rngs)
    else:
      self.dynamics = MLP(d_in, cfg.hidden, cfg.depth, dims.objects * (OBJ_DIM + 2), rngs)
    self.surprise = MLP(d_in, cfg.surprise_hidden, 2, 1, rngs)
    self.cfg = cfg

  def predict(self, obs: Obs, action):
    if self.kind == "relational":
      out = self.dynamics(obs, action)
    else:
      x = features(obs, action, self.dims, self.cfg)
      out = self.dynamics(x).reshape(*x.shape[:-1], self.dims.objects, OBJ_DIM + 2)
    return out[..., :OBJ_DIM], out[..., OBJ_DIM], out[..., OBJ_DIM + 1]

  def expected_log_surprise(self, obs: Obs, action):
    return self.surprise(features(obs, action, self.dims, self.cfg))[..., 0]


def obs_of(batch: Batch) -> Obs:
  return Obs(batch.objects, batch.mask, batch.context, batch.hand, batch.stage)


def errors(model: WorldModel, batch: Batch, scale, cfg: ModelConfig):
  """(per-object error [..., N], surprise per env [...]) of the model on real transitions;
  `scale` [stages, 13] is the unit of each stage's state changes."""
  delta, break_logit, contact_logit = model.predict(obs_of(batch), batch.action)
  target = (batch.next - batch.objects) / scale[batch.stage][..., None, :]
  state_err = jnp.mean((delta - target) ** 2, axis=-1)
  event_err = (optax.sigmoid_binary_cross_entropy(break_logit, batch.broken.astype(jnp.float32))
               + optax.sigmoid_binary_cross_entropy(contact_logit, batch.contact.astype(jnp.float32)))
  per_object = (state_err + cfg.event_weight * event_err) * batch.mask
  surprise = per_object.sum(-1) / jnp.maximum(batch.mask.sum(-1), 1)
  return per_object, surprise


def loss(model: WorldModel, batch: Batch, scale, cfg: ModelConfig):
  """Mean surprise over valid envs, plus the self-model's squared error in log surprise."""
  _, surprise = errors(model, batch, scale, cfg)
  target = jnp.log(jax.lax.stop_gradient(surprise) + LOG_EPS)
  self_err = (model.expected_log_surprise(obs_of(batch), batch.action) - target) ** 2
  w = batch.valid.astype(jnp.float32)
  n = jnp.maximum(w.sum(), 1.0)
  world = jnp.sum(surprise * w) / n
  return world + jnp.sum(self_err * w) / n, (world, jnp.sum(self_err * w) / n)


def optimizer(cfg: ModelConfig) -> optax.GradientTransformation:
  return optax.chain(optax.clip_by_global_norm(cfg.clip_norm), optax.adam(cfg.learning_rate))


def graphdef_of(dims: Dims, cfg: ModelConfig):
  """The model's static structure (the same for every key), without drawing any weights."""
  return nnx.split(nnx.eval_shape(lambda: WorldModel(dims, cfg, nnx.Rngs(0))))[0]


def init(key, dims: Dims, cfg: ModelConfig):
  """(params, optimizer state) of a fresh model; jax.vmap over keys gives a runs axis."""
  params = nnx.split(WorldModel(dims, cfg, nnx.Rngs(params=key)))[1]
  return params, optimizer(cfg).init(params)


def update(graphdef, params, opt_state, batch: Batch, scale, cfg: ModelConfig):
  """One optax step on `batch`; returns new params, optimizer state and (world, self) losses."""
  grad_fn = jax.grad(lambda p: loss(nnx.merge(graphdef, p), batch, scale, cfg), has_aux=True)
  grads, parts = grad_fn(params)
  updates, opt_state = optimizer(cfg).update(grads, opt_state, params)
  return optax.apply_updates(params, updates), opt_state, parts
