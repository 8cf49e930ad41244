"""The world model and the self-model (developmental-physics.md, "Developmental Learning Through
Simulation": 1. World Model, 2. Self-Model).

World model: from the objects' state, the scene's visible context, the action and the stage, an
MLP predicts each object's state change over one interaction (position, orientation, linear and
angular velocity, each scaled by a fixed unit) and two event logits per object: "it breaks" and
"it touches something". Surprise is its prediction error on what really happened: the mean over
an env's objects of the squared scaled state error plus the event cross-entropies.

Self-model: a second, smaller MLP on the same input predicts the log surprise the world model will
have, before the action is taken. Curiosity ranks candidate actions with it (curiosity.py).

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


@dataclasses.dataclass(frozen=True)
class ModelConfig:
  hidden: int = 256
  depth: int = 3
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


class MLP(nnx.Module):
  def __init__(self, d_in: int, hidden: int, depth: int, d_out: int, rngs: nnx.Rngs):
    sizes = [d_in] + [hidden] * depth
    self.layers = nnx.List([nnx.Linear(a, b, rngs=rngs) for a, b in zip(sizes[:-1], sizes[1:])])
    self.out = nnx.Linear(sizes[-1], d_out, rngs=rngs)

  def __call__(self, x):
    for layer in self.layers:
      x = nnx.gelu(layer(x))
    return self.out(x)


class WorldModel(nnx.Module):
  """dynamics: features -> per object (13 scaled deltas, break logit, contact logit);
  surprise: features -> predicted log surprise."""

  def __init__(self, dims: Dims, cfg: ModelConfig, rngs: nnx.Rngs):
    self.dims = dims
    d_in = dims.objects * (OBJ_DIM + 1) + dims.context + HAND_DIM + dims.action + dims.stages
    self.dynamics = MLP(d_in, cfg.hidden, cfg.depth, dims.objects * (OBJ_DIM + 2), rngs)
    self.surprise = MLP(d_in, cfg.surprise_hidden, 2, 1, rngs)

  def predict(self, x):
    out = self.dynamics(x).reshape(*x.shape[:-1], self.dims.objects, OBJ_DIM + 2)
    return out[..., :OBJ_DIM], out[..., OBJ_DIM], out[..., OBJ_DIM + 1]

  def expected_log_surprise(self, x):
    return self.surprise(x)[..., 0]


def features(obs: Obs, action, dims: Dims, cfg: ModelConfig):
  """Flat model input of padded observations and actions (any leading axes)."""
  mask = obs.mask.astype(jnp.float32)
  scale = _per_dim(cfg.input_scale)
  objects = obs.objects / scale * mask[..., None]
  lead = mask.shape[:-1]
  hand = obs.hand / jnp.concatenate([scale[:3], scale[7:10]])
  return jnp.concatenate([objects.reshape(*lead, -1), mask, obs.context, hand, action,
                          jax.nn.one_hot(obs.stage, dims.stages)], axis=-1)


def obs_of(batch: Batch) -> Obs:
  return Obs(batch.objects, batch.mask, batch.context, batch.hand, batch.stage)


def errors(model: WorldModel, batch: Batch, scale, cfg: ModelConfig):
  """(per-object error [..., N], surprise per env [...]) of the model on real transitions;
  `scale` [stages, 13] is the unit of each stage's state changes."""
  x = features(obs_of(batch), batch.action, model.dims, cfg)
  delta, break_logit, contact_logit = model.predict(x)
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
  x = features(obs_of(batch), batch.action, model.dims, cfg)
  target = jnp.log(jax.lax.stop_gradient(surprise) + LOG_EPS)
  self_err = (model.expected_log_surprise(x) - target) ** 2
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
