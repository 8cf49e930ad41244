"""The value function of proactive-memory-value.md: V_i(t) = I_i D_i(t) + U_i(t) + C_i(t) + N_i(t) - F_i(t).

Every function takes the whole store and one time t (hours) and returns one value per memory.
The spec fixes D exactly; U, C, N and F are named with their intent only, and the shapes chosen
here are marked READING (docs/proactive_memory.md lists them).
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxlab.memory.proactive.records import Constants, Memories


def in_hours(t, start, length):
  """Whether clock time t (hours, any day) lies in [start, start + length) modulo 24."""
  return jnp.mod(t - start, 24.0) < length


def quiet(t, k: Constants):
  return in_hours(t, k.quiet_start, k.quiet_len)


def alive(mem: Memories, t):
  return t >= mem.created


def envelope(mem: Memories, t):
  """The non-oscillating envelope e^{-lambda_i tau_i}, tau_i = t - t_i^created."""
  return jnp.exp(-mem.decay * (t - mem.created))


def revival(mem: Memories, t):
  """D_i(t) = e^{-lambda tau} (1 + A sin(omega tau + phi))_+ : the spec's temporal envelope."""
  tau = t - mem.created
  return envelope(mem, t) * jnp.maximum(1.0 + mem.amplitude * jnp.sin(mem.omega * tau + mem.phase), 0.0)


def urgency(mem: Memories, t, k: Constants):
  """U_i: READING a linear ramp from 0 (urgency_window_h before the deadline) to k.urgency at the
  deadline, then an exponential fade with urgency_fade_h: a missed deadline stops pressing."""
  to_go = mem.deadline - t
  ramp = jnp.clip(1.0 - to_go / k.urgency_window_h, 0.0, 1.0)
  fade = jnp.exp(-jnp.maximum(-to_go, 0.0) / k.urgency_fade_h)
  return k.urgency * jnp.where(to_go >= 0, ramp, fade)     # NO_DEADLINE keeps ramp at 0


def context(mem: Memories, t, k: Constants):
  """C_i: k.context inside the memory's preferred hours (calendar overlap is stubbed, as in the spec)."""
  return k.context * in_hours(t, mem.pref_start, mem.pref_len)


def novelty(mem: Memories, t, k: Constants):
  """N_i: READING a spike k.novelty at creation, decaying with novelty_h (fresh news is worth telling)."""
  return k.novelty * jnp.exp(-jnp.maximum(t - mem.created, 0.0) / k.novelty_h)


def fatigue(mem: Memories, t, k: Constants):
  """F_i: k.fatigue per past surfacing, each decaying with fatigue_h (anti-spam)."""
  age = t - mem.surfaced
  return k.fatigue * jnp.sum(jnp.where(age >= 0, jnp.exp(-jnp.maximum(age, 0.0) / k.fatigue_h), 0.0), axis=-1)


def base_value(mem: Memories, t, k: Constants):
  """V_i without fatigue: what the relaxed learner adds its own soft fatigue to."""
  return (mem.importance * revival(mem, t) + urgency(mem, t, k) + context(mem, t, k)
          + novelty(mem, t, k))


def value(mem: Memories, t, k: Constants):
  """V_i(t) for every memory; memories not yet created get -inf (they cannot fire)."""
  v = base_value(mem, t, k) - fatigue(mem, t, k)
  return jnp.where(alive(mem, t), v, -jnp.inf)


def terms(mem: Memories, t, k: Constants) -> dict:
  """Each term separately (for tests and the report)."""
  return dict(D=revival(mem, t), U=urgency(mem, t, k), C=context(mem, t, k), N=novelty(mem, t, k),
              F=fatigue(mem, t, k), V=value(mem, t, k))
