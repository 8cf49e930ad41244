"""Memory records and synthetic user days of proactive-memory-value.md.

`Memories` is a struct-of-arrays pytree: every field has the memory index on its leading axis, so
the whole store is a handful of (M,) arrays and one (M, K) surfacing history. `Oracle` holds what
the agent never sees: the windows in which a nudge about each memory would have been useful.

The spec plants eight memories over a 72-hour "day" (commitments with deadlines, a soft cafe
intention, a gym plan, low-value chatter) but leaves every number open. `PLANTED` is our choice,
made once from what the memories are, not tuned against the published table; docs/proactive_memory.md
gives the reasons. `draw_day(key, scale, k)` jitters the planted day (scale 0 returns it exactly),
so many random days carry a spread instead of one day's anecdote.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

COMMITMENT, PLAN, TRIVIA = range(3)
TAGS = ("commitment", "plan", "trivia")
NO_DEADLINE = 1e4      # hours: far past the horizon but finite, so no inf reaches a gradient
NEVER = -1e4           # an empty surfacing slot: exp(-(t - NEVER) / tau) underflows to 0

# name, tag, created (h since day-1 midnight), importance, decay (1/h), deadline (h or None),
# preferred hours (start, length), oracle windows [(start, end), ...] in absolute hours.
PLANTED = (
    ("blog draft", COMMITMENT, 9.0, 0.8, 0.02, 60.0, (9.0, 3.0), ((32.0, 38.0), (55.0, 60.0))),
    ("pay bill", COMMITMENT, 10.5, 0.9, 0.03, 42.0, (12.0, 2.0), ((12.0, 18.0), (32.0, 42.0))),
    ("call mom", COMMITMENT, 8.0, 0.7, 0.015, 68.0, (18.0, 3.0), ((41.0, 46.0), (64.0, 68.0))),
    ("standup prep", COMMITMENT, 19.0, 0.6, 0.08, 33.0, (7.0, 2.0), ((30.0, 33.0),)),
    ("cafe intention", PLAN, 11.0, 0.4, 0.01, None, (14.0, 3.0), ((36.0, 42.0), (60.0, 66.0))),
    ("gym plan", PLAN, 7.5, 0.5, 0.01, None, (17.0, 2.0), ((16.0, 20.0), (64.0, 68.0))),
    ("article trivia", TRIVIA, 13.0, 0.2, 0.05, None, (12.0, 2.0), ()),
    ("old restaurant tip", TRIVIA, 30.0, 0.25, 0.03, None, (20.0, 2.0), ()),
)
NAMES = tuple(p[0] for p in PLANTED)
N_MEMORIES, N_WINDOWS = len(PLANTED), 2


@dataclasses.dataclass(frozen=True)
class Constants:
  """Everything fixed across the runs of one sweep (hashable: it keys the compiled program)."""
  root_seed: int = 0
  horizon_h: float = 72.0
  tick_h: float = 0.25
  theta: float = 0.6             # fire threshold
  hysteresis: float = 0.15       # re-arm only below theta - hysteresis
  quiet_start: float = 22.0      # quiet hours: [22:00, 07:00)
  quiet_len: float = 9.0
  quiet_raise: float = 1e3       # what quiet hours add to theta: enough to mute any memory
  daily_cap: int = 5
  urgency: float = 0.5           # U at the deadline
  urgency_window_h: float = 24.0
  urgency_fade_h: float = 2.0
  context: float = 0.25          # C inside preferred hours
  novelty: float = 0.3           # N at creation
  novelty_h: float = 1.0
  fatigue: float = 0.4           # F added per surfacing, decaying with fatigue_h
  fatigue_h: float = 6.0
  history: int = 16              # surfacing slots per memory (>= daily_cap x days, so none drop)
  jitter_h: float = 2.0          # random days: per-memory schedule shift, uniform +- jitter_h
  importance_jitter: float = 0.25
  decay_jitter: float = 0.3
  window_drop: float = 0.2       # random days: chance an oracle window is absent
  dismiss_cost: float = 0.5      # objective = accepts - dismiss_cost x dismissals

  @property
  def ticks(self) -> int:
    return int(round(self.horizon_h / self.tick_h))

  @property
  def days(self) -> float:
    return self.horizon_h / 24.0


@struct.dataclass
class Memories:
  """The memory store, one entry per memory on the leading axis."""
  importance: jax.Array     # I_i
  decay: jax.Array          # lambda_i (1/h)
  amplitude: jax.Array      # A_i
  omega: jax.Array          # omega_i (rad/h)
  phase: jax.Array          # phi_i
  deadline: jax.Array       # hours; NO_DEADLINE when none
  pref_start: jax.Array     # preferred hours start (clock hour)
  pref_len: jax.Array       # preferred hours length (h)
  tag: jax.Array            # index into TAGS
  created: jax.Array        # t_i^created (h)
  surfaced: jax.Array       # (M, K) surfacing times, NEVER in empty slots


@struct.dataclass
class Oracle:
  """Where a nudge would be useful: per memory up to N_WINDOWS windows [start, end)."""
  start: jax.Array          # (M, W)
  end: jax.Array            # (M, W)
  valid: jax.Array          # (M, W) bool


def _template():
  col = lambda i: np.array([p[i] for p in PLANTED], np.float32)
  deadline = np.array([NO_DEADLINE if p[5] is None else p[5] for p in PLANTED], np.float32)
  pref = np.array([p[6] for p in PLANTED], np.float32)
  win = np.zeros((N_MEMORIES, N_WINDOWS, 2), np.float32)
  valid = np.zeros((N_MEMORIES, N_WINDOWS), bool)
  for i, p in enumerate(PLANTED):
    for j, w in enumerate(p[7]):
      win[i, j], valid[i, j] = w, True
  return dict(tag=np.array([p[1] for p in PLANTED], np.int32), created=col(2), importance=col(3),
              decay=col(4), deadline=deadline, pref_start=pref[:, 0], pref_len=pref[:, 1],
              win=win, valid=valid)


TEMPLATE = _template()


def with_oscillation(mem: Memories, amplitude, omega) -> Memories:
  """Sets A_i and omega_i from per-tag-class values; phi_i puts the first revival peak after
  creation at the middle of the memory's preferred hours.

  READING: the spec leaves phi_i open; tying the revival to the hours the user likes hearing about
  a memory is the hand-set design the mechanism suggests. The peak clock time stays fixed when a
  learner changes omega, so with a period other than 24 h later peaks drift across the day.
  """
  a, w = jnp.asarray(amplitude)[mem.tag], jnp.asarray(omega)[mem.tag]
  mid = mem.pref_start + mem.pref_len / 2
  first_peak = jnp.mod(mid - mem.created, 24.0)        # hours from creation to the first peak
  return mem.replace(amplitude=a, omega=w, phase=jnp.pi / 2 - w * first_peak)


def draw_day(key, scale, k: Constants) -> tuple[Memories, Oracle]:
  """A synthetic day: the planted memories jittered by `scale` (0 gives the planted day).

  Each memory's whole schedule (creation, deadline, preferred hours, oracle windows) shifts by one
  uniform offset, so the memory stays coherent; importance and decay get log-uniform noise; each
  window is absent with probability scale x window_drop. Oscillation is zero here: the policy
  sets it with `with_oscillation`.
  """
  t = TEMPLATE
  m = N_MEMORIES
  # One draw for the whole day: each threefry call costs about a second of CPU compile time.
  u = jax.random.uniform(key, (m, 3 + N_WINDOWS))
  signed = lambda x: 2.0 * x - 1.0                      # uniform on [-1, 1), sd 1/sqrt(3)
  shift = scale * k.jitter_h * signed(u[:, 0])
  # Log-uniform noise with sd importance_jitter (decay_jitter) in log space.
  importance = t["importance"] * jnp.exp(scale * k.importance_jitter * np.sqrt(3) * signed(u[:, 1]))
  decay = t["decay"] * jnp.exp(scale * k.decay_jitter * np.sqrt(3) * signed(u[:, 2]))
  keep = u[:, 3:] >= scale * k.window_drop
  has_deadline = t["deadline"] < NO_DEADLINE
  zeros = jnp.zeros((m,), jnp.float32)
  mem = Memories(
      importance=jnp.clip(importance, 0.05, 1.0), decay=decay, amplitude=zeros, omega=zeros,
      phase=zeros, deadline=jnp.where(has_deadline, t["deadline"] + shift, NO_DEADLINE),
      pref_start=jnp.mod(t["pref_start"] + shift, 24.0), pref_len=jnp.asarray(t["pref_len"]),
      tag=jnp.asarray(t["tag"]), created=jnp.maximum(t["created"] + shift, 0.0),
      surfaced=jnp.full((m, k.history), NEVER, jnp.float32))
  oracle = Oracle(start=t["win"][..., 0] + shift[:, None], end=t["win"][..., 1] + shift[:, None],
                  valid=jnp.asarray(t["valid"]) & keep)
  return mem, oracle


def day_key(k: Constants, seed):
  """Run keys are fold_in(root, seed): the day a seed names never depends on sharding or chunks."""
  return jax.random.fold_in(jax.random.key(k.root_seed), seed)
