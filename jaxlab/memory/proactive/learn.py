"""Learning oscillation amplitude and frequency per tag class (the spec's first open question).

The hard policy is a step function of the parameters, so the learner trains on a smooth relaxation
of the same tick loop: the Schmitt trigger becomes a soft armed level a_i in [0, 1] (re-armed by
sigmoid((theta - h - V) / T), spent by firing), firing is a_i sigmoid((V - theta_eff) / T), top-1 is
a softmax over the candidates weighted by how likely each fires, the daily cap is a sigmoid gate on
the soft count, fatigue is the same exponential kernel fed by soft emits, and the scripted user's
accept or dismiss enters as the reward accepts - dismiss_cost x dismissals. Gradients reach A and
omega through V. The learner sees the user's response to every possible nudge on the training
days (full-information feedback, the best case for learning); held-out days are never seen.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxlab.memory.proactive import records, value
from jaxlab.memory.proactive.records import Constants, Memories, Oracle


@dataclasses.dataclass(frozen=True)
class LearnConstants:
  steps: int = 200
  learning_rate: float = 0.05      # peak; cosine decay to 0 over the steps
  clip_norm: float = 1.0
  temperature: float = 0.05        # of the trigger and the top-1 softmax, in units of V
  cap_temperature: float = 0.1     # of the daily-cap gate, in messages


def relaxed_reward(mem: Memories, oracle: Oracle, k: Constants, lk: LearnConstants):
  """The smooth tick loop of one day; returns its soft accepts - dismiss_cost x dismissals."""
  T, ticks_per_day = lk.temperature, int(round(24 / k.tick_h))
  carry_decay = np.exp(-k.tick_h / k.fatigue_h)

  def tick(carry, i):
    armed, fat, count, served, reward = carry
    t = i * k.tick_h
    count = jnp.where(i % ticks_per_day == 0, 0.0, count)
    v = value.base_value(mem, t, k) - fat
    live = value.alive(mem, t)
    armed = armed + (1 - armed) * jax.nn.sigmoid((k.theta - k.hysteresis - v) / T)
    threshold = k.theta + k.quiet_raise * value.quiet(t, k)
    gate = jax.nn.sigmoid((k.daily_cap - 0.5 - count) / lk.cap_temperature)
    p = jnp.where(live, armed * jax.nn.sigmoid((v - threshold) / T), 0.0) * gate
    fire = 1 - jnp.prod(1 - p)
    emit = fire * jax.nn.softmax(jnp.where(live, jnp.log(p + 1e-12) + v / T, -1e9))
    in_window = (oracle.valid & (oracle.start <= t) & (t < oracle.end)).astype(jnp.float32)
    useful = 1 - jnp.prod(1 - in_window * (1 - served), axis=1)
    pref = value.in_hours(t, mem.pref_start, mem.pref_len).astype(jnp.float32)
    accept = useful * pref
    reward = reward + jnp.sum(emit * (accept - k.dismiss_cost * (1 - accept)))
    served = served + (1 - served) * in_window * (emit * accept)[:, None]
    armed = jnp.clip(armed - emit, 0.0, 1.0)
    fat = (fat + k.fatigue * emit) * carry_decay      # = the hard fatigue kernel on soft emits
    return (armed, fat, count + emit.sum(), served, reward), None

  m = mem.importance.shape[0]
  init = (jnp.ones(m), jnp.zeros(m), jnp.float32(0), jnp.zeros(oracle.start.shape), jnp.float32(0))
  (*_, reward), _ = jax.lax.scan(tick, init, jnp.arange(k.ticks))
  return reward


def oscillation(params):
  """Unconstrained parameters -> (amplitude >= 0, omega in rad/h) per tag class."""
  return jax.nn.softplus(params["raw_amplitude"]), 2 * jnp.pi / jnp.exp(params["log_period"])


def init_params(amplitude, period_h):
  a = np.asarray(amplitude, np.float32)
  # softplus^-1; a tiny floor keeps A = 0 representable without log(0).
  return {"raw_amplitude": np.log(np.expm1(np.maximum(a, 1e-4))).astype(np.float32),
          "log_period": np.log(np.asarray(period_h, np.float32))}


def objective(params, days, k: Constants, lk: LearnConstants):
  """Mean relaxed reward per training day at these parameters."""
  amplitude, omega = oscillation(params)
  mem, oracle = days
  mem = jax.vmap(records.with_oscillation, in_axes=(0, None, None))(mem, amplitude, omega)
  return jnp.mean(jax.vmap(relaxed_reward, in_axes=(0, 0, None, None))(mem, oracle, k, lk))


@functools.lru_cache(maxsize=None)
def train_fn(k: Constants, lk: LearnConstants):
  """jit(train)(params, seeds) -> (final params, objective per step, params per step).

  The objective has steps + 1 entries: before each update and after the last one.
  """
  # The soft trigger is sharp (temperature 0.05), so gradients spike when a revival peak slides
  # across a threshold crossing; clipping and a cosine decay keep late steps from undoing progress.
  opt = optax.chain(optax.clip_by_global_norm(lk.clip_norm),
                    optax.adam(optax.cosine_decay_schedule(lk.learning_rate, lk.steps)))

  def train(params, seeds):
    days = jax.vmap(lambda s: records.draw_day(records.day_key(k, s), 1.0, k))(seeds)
    value_and_grad = jax.value_and_grad(lambda p: -objective(p, days, k, lk))

    def update(carry, _):
      params, state = carry
      loss, grads = value_and_grad(params)
      updates, state = opt.update(grads, state, params)
      return (optax.apply_updates(params, updates), state), (-loss, params)

    (params, _), (curve, history) = jax.lax.scan(update, (params, opt.init(params)), None, lk.steps)
    final = objective(params, days, k, lk)
    return params, jnp.append(curve, final), history

  return jax.jit(train)
