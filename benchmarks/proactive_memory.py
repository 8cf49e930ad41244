"""Proactive memory: the jitted, vmapped, sharded 72-hour simulation against a plain NumPy loop.

  python benchmarks/proactive_memory.py                # CPU: 16,384 random days; NumPy on 100
  python benchmarks/proactive_memory.py --size gpu     # 1,048,576 days for an accelerator

Both sides simulate the same random days (drawn by the JAX core, policy `full`). NumPy is the
straightforward implementation: one day at a time, a Python loop over the 288 ticks, the eight
memories vectorized within a tick (`numpy_day`). JAX runs all days as one program sharded over
every device (on a CPU, one device per core). Prints days per second of each and the ratio;
compilation is timed apart and not counted. `numpy_day` is also an independent rewrite of the
tick loop: the script (and tests/test_proactive_memory.py) checks both pick the same memory at
every tick.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import common  # noqa: E402

SIZES = {"cpu": dict(jax_days=16_384, numpy_days=100), "gpu": dict(jax_days=1_048_576, numpy_days=100)}


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


def main():
  args = common.start(__doc__, SIZES)
  import jax

  from jaxlab.core import config as config_lib, mesh
  from jaxlab.memory.proactive import experiment, grid, sim

  size = SIZES[args.size]
  config = config_lib.load("configs/proactive_memory.py:repro", validate=experiment.validate)
  k = experiment.constants(config)
  params = grid.policy_params(config, config.policy.amplitude, grid.omega_of(config.policy.period_h))["full"]

  def rows(n):
    return {"seed": np.arange(n, dtype=np.int32), "scale": np.ones(n, np.float32),
            "amplitude": np.tile(params[0], (n, 1)), "omega": np.tile(params[1], (n, 1))}

  m = mesh.make_mesh()
  inputs = rows(size["jax_days"])
  print(f"devices: {m.size} x {jax.devices()[0].platform}; {size['jax_days']} days")
  out, compile_s, jax_s = common.timed_twice(
      lambda: mesh.map_runs(sim.batch_fn(k), inputs, m, common.block_for_platform()))

  traces = jax.device_get(sim.trace_fn(k)(rows(size["numpy_days"])))
  mem, oracle = traces["memories"], traces["oracle"]
  agree = 0
  t0 = time.perf_counter()
  for d in range(size["numpy_days"]):
    picks = numpy_day({f: getattr(mem, f)[d] for f in mem.__dataclass_fields__},
                      {f: getattr(oracle, f)[d] for f in oracle.__dataclass_fields__}, k)
    agree += int(np.array_equal(picks, traces["pick"][d]))
  numpy_s = time.perf_counter() - t0

  common.report("days", size["jax_days"], jax_s, compile_s, size["numpy_days"], numpy_s)
  print(f"check : same pick at every tick on {agree} of {size['numpy_days']} days; "
        f"mean spam/day over the JAX days {float(np.mean(out['spam_per_day'])):.3f}")


if __name__ == "__main__":
  main()
