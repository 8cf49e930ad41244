"""The 72-hour simulation of proactive-memory-value.md as one pure scan over ticks.

Each tick (0.25 h) recomputes every V_i, re-arms memories whose value fell below theta - h, and
lets at most one armed memory with V_i >= theta fire (top-1 by value), unless it is quiet hours
(which raise theta by enough to mute) or today's five messages are spent. Silence is the default
action. A fired memory is disarmed and its surfacing time enters its history, so its fatigue rises.
The scripted user accepts an emit only when it is useful (inside an oracle window of that memory
not already served by an accepted nudge) and lands in the memory's preferred hours; otherwise it
is dismissed.

`simulate` returns per-tick traces and the run's metrics; `batch_fn(k)` is the vmapped program over
runs (seed, scale, per-class amplitude and omega) that `jaxlab.core.mesh` shards.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from flax import struct

from jaxlab.memory.proactive import records, value
from jaxlab.memory.proactive.records import Constants, Memories, Oracle

NOT_YET = 1e4      # first useful time of a window no useful emit has reached
METRICS = ("emits", "useful", "accepted", "trivia_emits", "max_daily", "windows",
           "hit", "precision", "recall", "accept_rate", "spam_per_day", "quiet_violations", "ttu_h",
           "reward")


@struct.dataclass
class Policy:
  """The policy's state beside the store: Schmitt arming, today's count, served windows."""
  armed: jax.Array           # (M,) bool
  count: jax.Array           # () messages sent today
  served: jax.Array          # (M, W) bool: an accepted nudge landed in the window
  first_useful: jax.Array    # (M, W) time of the first useful emit in the window


def _push(surfaced, pick, t, emit):
  """Writes t into the oldest slot of memory `pick`'s history, when it emitted."""
  row = surfaced[pick]
  slot = jnp.argmin(row)
  return surfaced.at[pick, slot].set(jnp.where(emit, t, row[slot]))


def step(mem: Memories, pol: Policy, oracle: Oracle, t, new_day, k: Constants):
  """One tick of the policy and the scripted user."""
  v = value.value(mem, t, k)
  armed = pol.armed | (v < k.theta - k.hysteresis)            # the Schmitt re-arm
  count = jnp.where(new_day, 0, pol.count)
  is_quiet = value.quiet(t, k)
  threshold = k.theta + k.quiet_raise * is_quiet
  candidate = armed & value.alive(mem, t) & (v >= threshold) & (count < k.daily_cap)
  emit = candidate.any()
  pick = jnp.argmax(jnp.where(candidate, v, -jnp.inf))         # top-1 per tick
  armed = armed.at[pick].set(armed[pick] & ~emit)
  # The scripted user.
  in_window = oracle.valid[pick] & (oracle.start[pick] <= t) & (t < oracle.end[pick])
  open_window = in_window & ~pol.served[pick]
  useful = emit & open_window.any()
  accept = useful & value.in_hours(t, mem.pref_start[pick], mem.pref_len[pick])
  served = pol.served.at[pick].set(pol.served[pick] | (open_window & accept))
  first = pol.first_useful[pick]
  first = jnp.where(open_window & useful & (first >= NOT_YET), t, first)
  pol = Policy(armed=armed, count=count + emit, served=served,
               first_useful=pol.first_useful.at[pick].set(first))
  mem = mem.replace(surfaced=_push(mem.surfaced, pick, t, emit))
  out = dict(v=v, pick=jnp.where(emit, pick, -1), useful=useful, accept=accept,
             quiet=is_quiet & emit)
  return mem, pol, out


def metrics(mem: Memories, oracle: Oracle, pol: Policy, out: dict, k: Constants) -> dict:
  """The spec's metrics for one run (NaN where a ratio has no denominator)."""
  emitted = out["pick"] >= 0
  emits, useful, accepted = emitted.sum(), out["useful"].sum(), out["accept"].sum()
  per_day = emitted.reshape(-1, int(round(24 / k.tick_h))).sum(axis=1)
  trivia = jnp.sum(emitted & (mem.tag[jnp.maximum(out["pick"], 0)] == records.TRIVIA))
  hit = oracle.valid & (pol.first_useful < NOT_YET)
  windows, n_hit = oracle.valid.sum(), hit.sum()
  ttu = jnp.sum(jnp.where(hit, pol.first_useful - oracle.start, 0.0))
  ratio = lambda a, b: jnp.where(b > 0, a / jnp.maximum(b, 1), jnp.nan)
  m = dict(emits=emits, useful=useful, accepted=accepted, trivia_emits=trivia,
           max_daily=per_day.max(), windows=windows, hit=n_hit,
           precision=ratio(useful, emits), recall=ratio(n_hit, windows),
           accept_rate=ratio(accepted, emits), spam_per_day=emits / k.days,
           quiet_violations=out["quiet"].sum(), ttu_h=ratio(ttu, n_hit),
           reward=accepted - k.dismiss_cost * (emits - accepted))
  return {name: jnp.asarray(m[name], jnp.float32) for name in METRICS}


def simulate(mem: Memories, oracle: Oracle, k: Constants):
  """Runs the horizon; returns (per-tick traces, metrics)."""
  ticks_per_day = int(round(24 / k.tick_h))
  pol = Policy(armed=jnp.ones(mem.importance.shape, bool), count=jnp.int32(0),
               served=jnp.zeros(oracle.start.shape, bool),
               first_useful=jnp.full(oracle.start.shape, NOT_YET, jnp.float32))

  def tick(carry, i):
    mem, pol = carry
    mem, pol, out = step(mem, pol, oracle, i * k.tick_h, i % ticks_per_day == 0, k)
    return (mem, pol), out

  (mem, pol), out = jax.lax.scan(tick, (mem, pol), jnp.arange(k.ticks))
  return out, metrics(mem, oracle, pol, out, k)


def make_day(row, k: Constants):
  """The run's day and policy: the seed's jittered day with the row's oscillation per tag class."""
  mem, oracle = records.draw_day(records.day_key(k, row["seed"]), row["scale"], k)
  return records.with_oscillation(mem, row["amplitude"], row["omega"]), oracle


def run_one(row, k: Constants):
  return simulate(*make_day(row, k), k)[1]


@functools.lru_cache(maxsize=None)
def batch_fn(k: Constants):
  """The batched program over a block of runs: what `core.mesh.map_runs` shards."""
  return jax.vmap(functools.partial(run_one, k=k))


def _trace_one(row, k: Constants):
  mem, oracle = make_day(row, k)
  out, m = simulate(mem, oracle, k)
  return dict(out, **{f"m_{n}": x for n, x in m.items()}, memories=mem, oracle=oracle)


@functools.lru_cache(maxsize=None)
def trace_fn(k: Constants):
  """Per-tick traces (V, emits, user responses), the day's memories and oracle, for a batch of runs."""
  return jax.jit(jax.vmap(functools.partial(_trace_one, k=k)))
