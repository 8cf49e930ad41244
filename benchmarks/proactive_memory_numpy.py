"""The proactive-memory simulation (proactive-memory-value.md) in NumPy, twice: one day at a time, and batched.

`numpy_day` is the straightforward implementation: one day, a Python loop over the 288 ticks,
the eight memories vectorized within a tick. It is the per-run reference column of
`benchmarks/proactive_memory.py` and an independent rewrite of `sim.step`.

`draw_days` / `simulate_batch` are what a good NumPy programmer would write to sweep it: every
day on a leading axis, float32 like the jitted core, the same formulas as `value.py` and
`sim.py`, and a Python loop only over the ticks, which are sequential (each tick's arming,
daily count and fatigue depend on the one before). `draw_days` takes the uniforms
`records.draw_day` draws (the benchmark draws them with NumPy's generator); the tests feed
`simulate_batch` the days JAX draws and check every pick and metric.
"""

from __future__ import annotations

import numpy as np

from jaxlab.memory.proactive import records, sim

F32 = np.float32


def numpy_day(mem: dict, oracle: dict, k) -> np.ndarray:
  """The tick loop of `sim.step` in NumPy (float32, like the core); returns the pick per tick."""
  f32 = np.float32
  m = len(mem["importance"])
  armed, count = np.ones(m, bool), 0
  served = np.zeros_like(oracle["valid"])
  surfaced = [[] for _ in range(m)]
  picks = np.full(k.ticks, -1)
  per_day = int(round(24 / k.tick_h))
  for i in range(k.ticks):
    t = f32(i * k.tick_h)
    if i % per_day == 0:
      count = 0
    tau = t - mem["created"]
    osc = np.maximum(f32(1) + mem["amplitude"] * np.sin(mem["omega"] * tau + mem["phase"]), 0)
    d = np.exp(-mem["decay"] * tau) * osc
    to_go = mem["deadline"] - t
    u = f32(k.urgency) * np.where(to_go >= 0, np.clip(1 - to_go / f32(k.urgency_window_h), 0, 1),
                                  np.exp(-np.maximum(-to_go, 0) / f32(k.urgency_fade_h)))
    pref = np.mod(t - mem["pref_start"], f32(24)) < mem["pref_len"]
    n = f32(k.novelty) * np.exp(-np.maximum(tau, 0) / f32(k.novelty_h))
    fat = np.array([sum(np.exp(-(t - s) / f32(k.fatigue_h)) for s in hist) for hist in surfaced], f32)
    v = mem["importance"] * d + u + f32(k.context) * pref + n - f32(k.fatigue) * fat
    alive = t >= mem["created"]
    v = np.where(alive, v, -np.inf)
    armed |= v < f32(k.theta) - f32(k.hysteresis)
    quiet = np.mod(t - f32(k.quiet_start), f32(24)) < f32(k.quiet_len)
    threshold = f32(k.theta) + (f32(k.quiet_raise) if quiet else f32(0))
    candidate = armed & alive & (v >= threshold) & (count < k.daily_cap)
    if not candidate.any():
      continue
    pick = int(np.argmax(np.where(candidate, v, -np.inf)))
    picks[i], armed[pick], count = pick, False, count + 1
    surfaced[pick].append(t)
    window = oracle["valid"][pick] & (oracle["start"][pick] <= t) & (t < oracle["end"][pick]) & ~served[pick]
    if window.any() and pref[pick]:
      served[pick] |= window
  return picks


# ---------------------------------------------------------------------------------------------
# Batched: every day on a leading axis (d), float32, a loop over ticks only.

def draw_days(u, scale, amplitude, omega, k) -> tuple[dict, dict]:
  """`records.draw_day` + `records.with_oscillation` for a batch of days: u (d, M, 3 + W) uniforms,
  scale (d,), amplitude and omega (d, tag classes). Returns (memories, oracle) as dicts of arrays."""
  t = records.TEMPLATE
  scale = np.asarray(scale, F32)[:, None]
  signed = lambda x: F32(2) * x - F32(1)
  shift = scale * F32(k.jitter_h) * signed(u[..., 0])
  importance = t["importance"] * np.exp(scale * F32(k.importance_jitter * np.sqrt(3)) * signed(u[..., 1]))
  decay = t["decay"] * np.exp(scale * F32(k.decay_jitter * np.sqrt(3)) * signed(u[..., 2]))
  keep = u[..., 3:] >= (scale * F32(k.window_drop))[..., None]
  has_deadline = t["deadline"] < records.NO_DEADLINE
  d, m = u.shape[:2]
  tag = np.broadcast_to(t["tag"], (d, m))
  created = np.maximum(t["created"] + shift, F32(0))
  pref_start = np.mod(t["pref_start"] + shift, F32(24))
  pref_len = np.broadcast_to(t["pref_len"], (d, m))
  a, w = np.take_along_axis(amplitude, tag, 1), np.take_along_axis(omega, tag, 1)
  first_peak = np.mod(pref_start + pref_len / 2 - created, F32(24))
  mem = dict(importance=np.clip(importance, F32(0.05), F32(1)), decay=decay, amplitude=a, omega=w,
             phase=F32(np.pi / 2) - w * first_peak,
             deadline=np.where(has_deadline, t["deadline"] + shift, F32(records.NO_DEADLINE)),
             pref_start=pref_start, pref_len=pref_len, tag=tag, created=created,
             surfaced=np.full((d, m, k.history), records.NEVER, F32))
  oracle = dict(start=t["win"][..., 0] + shift[..., None], end=t["win"][..., 1] + shift[..., None],
                valid=t["valid"] & keep)
  return mem, oracle


def simulate_batch(mem: dict, oracle: dict, k) -> tuple[np.ndarray, dict]:
  """Every day's picks (d, ticks; -1 for silence) and metrics (`sim.METRICS`, each (d,))."""
  f = {name: np.asarray(v, F32) if np.asarray(v).dtype.kind == "f" else np.asarray(v) for name, v in mem.items()}
  d, m = f["importance"].shape
  rows = np.arange(d)
  per_day = int(round(24 / k.tick_h))
  surfaced = f["surfaced"].copy()
  start, end, valid = (np.asarray(oracle[x]) for x in ("start", "end", "valid"))
  armed = np.ones((d, m), bool)
  count = np.zeros(d, np.int64)
  served = np.zeros(valid.shape, bool)
  first_useful = np.full(valid.shape, sim.NOT_YET, F32)
  picks = np.full((d, k.ticks), -1)
  useful_n, accept_n, quiet_n = np.zeros(d, np.int64), np.zeros(d, np.int64), np.zeros(d, np.int64)
  rearm, quiet_start = F32(k.theta - k.hysteresis), F32(k.quiet_start)
  for i in range(k.ticks):
    t = F32(i * k.tick_h)
    tau = t - f["created"]
    revival = np.exp(-f["decay"] * tau) * np.maximum(1 + f["amplitude"] * np.sin(f["omega"] * tau + f["phase"]), F32(0))
    to_go = f["deadline"] - t
    urgency = F32(k.urgency) * np.where(to_go >= 0, np.clip(1 - to_go / F32(k.urgency_window_h), F32(0), F32(1)),
                                        np.exp(-np.maximum(-to_go, F32(0)) / F32(k.urgency_fade_h)))
    pref = np.mod(t - f["pref_start"], F32(24)) < f["pref_len"]
    novelty = F32(k.novelty) * np.exp(-np.maximum(tau, F32(0)) / F32(k.novelty_h))
    age = t - surfaced
    fatigue = F32(k.fatigue) * np.where(age >= 0, np.exp(-np.maximum(age, F32(0)) / F32(k.fatigue_h)), F32(0)).sum(-1)
    alive = t >= f["created"]
    v = np.where(alive, f["importance"] * revival + urgency + F32(k.context) * pref + novelty - fatigue, -np.inf)
    armed |= v < rearm
    if i % per_day == 0:
      count[:] = 0
    quiet = np.mod(t - quiet_start, F32(24)) < F32(k.quiet_len)
    threshold = F32(k.theta + k.quiet_raise * quiet)
    candidate = armed & alive & (v >= threshold) & (count < k.daily_cap)[:, None]
    emit = candidate.any(1)
    pick = np.argmax(np.where(candidate, v, -np.inf), axis=1)
    armed[rows, pick] &= ~emit
    in_window = valid[rows, pick] & (start[rows, pick] <= t) & (t < end[rows, pick])     # (d, W)
    open_window = in_window & ~served[rows, pick]
    useful = emit & open_window.any(1)
    accept = useful & pref[rows, pick]
    served[rows, pick] |= open_window & accept[:, None]
    first = first_useful[rows, pick]
    first_useful[rows, pick] = np.where(open_window & useful[:, None] & (first >= sim.NOT_YET), t, first)
    count += emit
    slot = np.argmin(surfaced[rows, pick], axis=1)
    surfaced[rows, pick, slot] = np.where(emit, t, surfaced[rows, pick, slot])
    picks[:, i] = np.where(emit, pick, -1)
    useful_n += useful
    accept_n += accept
    quiet_n += quiet & emit
  emitted = picks >= 0
  emits = emitted.sum(1)
  hit = valid & (first_useful < sim.NOT_YET)
  windows, n_hit = valid.sum((1, 2)), hit.sum((1, 2))
  ttu = np.where(hit, first_useful - start, F32(0)).sum((1, 2))
  ratio = lambda a, b: np.where(b > 0, a / np.maximum(b, 1), np.nan)
  trivia = (emitted & (np.take_along_axis(f["tag"], np.maximum(picks, 0), 1) == records.TRIVIA)).sum(1)
  metrics = dict(emits=emits, useful=useful_n, accepted=accept_n, trivia_emits=trivia,
                 max_daily=emitted.reshape(d, -1, per_day).sum(2).max(1), windows=windows, hit=n_hit,
                 precision=ratio(useful_n, emits), recall=ratio(n_hit, windows),
                 accept_rate=ratio(accept_n, emits), spam_per_day=emits / F32(k.days),
                 quiet_violations=quiet_n, ttu_h=ratio(ttu, n_hit),
                 reward=accept_n - F32(k.dismiss_cost) * (emits - accept_n))
  return picks, {name: np.asarray(metrics[name], F32) for name in sim.METRICS}
