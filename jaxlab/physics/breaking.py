"""Contact and break events (developmental-physics spec, Stage 2 "fragility: breaks vs. bounces").

Mechanism: a recorded break event. A fragile object (finite break speed) breaks when the speed
change its contacts cause within `break_window` physics steps (one impact: the contact's
non-gravity velocity change, summed over the window) passes its per-env break speed. The event is
recorded in Transition.broken; the pieces are not simulated apart (see docs/physics.md: it keeps
every object one rigid body on both backends, so C and MJX stay step-for-step comparable).
An object is in contact during an interaction when it felt a non-gravity acceleration above
config.contact_accel at any step. Both are computed from the velocity trajectory alone, with the
same code on NumPy (C backend) and jax.numpy (MJX backend): `xp` is the array module.
"""

from __future__ import annotations


def contact_dv(vel, gravity, dt: float):
  """Per-step velocity change not caused by gravity: vel [n, T+1, k, 3] (start included),
  gravity [n, 3] -> [n, T, k, 3]."""
  return vel[:, 1:] - vel[:, :-1] - dt * gravity[:, None, None, :]


def events(vel, gravity, break_speed, dt: float, window: int, contact_accel: float, xp):
  """(contact bool [n, k], broken bool [n, k], impact m/s [n, k]) over one interaction.

  vel: [n, T+1, k, 3] linear velocities of the k objects from the interaction's start;
  break_speed: [n, k] (inf for unbreakable objects)."""
  dv = contact_dv(vel, gravity, dt)
  contact = xp.any(xp.linalg.norm(dv, axis=-1) > contact_accel * dt, axis=1)
  total = xp.cumsum(dv, axis=1)
  zero = xp.zeros_like(total[:, :1])
  total = xp.concatenate([zero, total], axis=1)               # [n, T+1, k, 3]
  w = min(window, total.shape[1] - 1)
  impact = xp.max(xp.linalg.norm(total[:, w:] - total[:, :-w], axis=-1), axis=1)
  return contact, impact > break_speed, impact
