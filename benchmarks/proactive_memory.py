"""Proactive memory (proactive-memory-value.md): the jitted, sharded 72-hour simulation against
batched NumPy, fairly.

  python benchmarks/proactive_memory.py                   # CPU: 16,384 random days
  python benchmarks/proactive_memory.py --scaling docs/benchmarks_proactive_memory.png   # + days/s vs batch
  python benchmarks/proactive_memory.py --size gpu        # 1,048,576 days for an accelerator

A run is one random day (jitter scale 1) under the `full` policy of the `repro` config. JAX runs
`sim.batch_fn` through `mesh.map_runs`, days drawn by the jitted core; batched NumPy
(`proactive_memory_numpy.draw_days` + `simulate_batch`) draws the same uniforms with NumPy's
generator and loops over the 288 ticks with every day on a leading axis; the loop column is
`proactive_memory_numpy.numpy_day`, one day at a time (its days drawn the batched way).
How the columns are pinned to cores and timed: benchmarks/common.py.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import common, proactive_memory_numpy as ref  # noqa: E402
# tests/test_proactive_memory.py reads `numpy_day` here.
from benchmarks.proactive_memory_numpy import numpy_day  # noqa: E402,F401

NAME, UNIT = "proactive memory", "days"
SIZES = {"tiny": dict(runs=64, loop=2), "cpu": dict(runs=16_384, loop=50), "gpu": dict(runs=1_048_576, loop=50)}


@functools.lru_cache(maxsize=None)
def setup():
  """(model constants, the `full` policy's per-class amplitude and omega)."""
  from jaxlab.core import config as config_lib
  from jaxlab.memory.proactive import experiment, grid
  config = config_lib.load("configs/proactive_memory.py:repro", validate=experiment.validate)
  return experiment.constants(config), grid.policy_params(config, config.policy.amplitude,
                                                          grid.omega_of(config.policy.period_h))["full"]


def rows(start: int, stop: int) -> dict:
  _, (amplitude, omega) = setup()
  n = stop - start
  return {"seed": np.arange(start, stop, dtype=np.int32), "scale": np.ones(n, np.float32),
          "amplitude": np.tile(amplitude, (n, 1)), "omega": np.tile(omega, (n, 1))}


def jax_sweep(size: str, n: int):
  """(batched function, runs, block) of the jitted program; block None: the platform's."""
  from jaxlab.memory.proactive import sim
  k, _ = setup()
  return sim.batch_fn(k), rows(0, n), None


def jax_program(size: str, n: int):
  return common.mapped_program(*jax_sweep(size, n))


def _days(start: int, stop: int):
  from jaxlab.memory.proactive import records
  k, _ = setup()
  r = rows(start, stop)
  u = np.random.default_rng([k.root_seed, start]).random((stop - start, records.N_MEMORIES, 3 + records.N_WINDOWS),
                                                          np.float32)
  return ref.draw_days(u, r["scale"], r["amplitude"], r["omega"], k)


def numpy_batched(size: str, start: int, stop: int):
  return ref.simulate_batch(*_days(start, stop), setup()[0])


def numpy_loop(size: str, start: int, stop: int) -> list:
  mem, oracle = _days(start, stop)
  k, _ = setup()
  return [numpy_day({f: x[d] for f, x in mem.items()}, {f: x[d] for f, x in oracle.items()}, k)
          for d in range(stop - start)]


if __name__ == "__main__":
  common.main_for("benchmarks.proactive_memory", __doc__)
