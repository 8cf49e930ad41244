"""Hidden gems (swarm-hidden-gems.md): the jitted, sharded sweep against batched NumPy, fairly.

  python benchmarks/hidden_gems.py                        # CPU: 2,048 runs (seeds x 6 correlations)
  python benchmarks/hidden_gems.py --scaling docs/benchmarks_hidden_gems.png   # + runs/s vs batch size
  python benchmarks/hidden_gems.py --size gpu             # 262,144 runs for an accelerator

A run is one seed at one voter correlation with the `repro` constants: a world of 20 candidates
and three conditions of 4 worlds x 150 raters. JAX runs `model.batch_fn` through `mesh.map_runs`,
uniforms drawn by the jitted core (threefry); batched NumPy (`hidden_gems_numpy.simulate_batch`)
draws the same blocks of uniforms with NumPy's generator and loops over the raters of the social
conditions with every run x condition x world on a leading axis; the loop column is
`hidden_gems_numpy.numpy_run`, one run, world and condition at a time.
How the columns are pinned to cores and timed: benchmarks/common.py.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import common, hidden_gems_numpy as ref  # noqa: E402
from benchmarks.hidden_gems_numpy import numpy_run  # noqa: E402,F401  (tests/test_hidden_gems.py reads it here)

NAME, UNIT = "hidden gems", "runs"
SIZES = {"tiny": dict(runs=48, loop=2), "cpu": dict(runs=2048, loop=24), "gpu": dict(runs=262_144, loop=24)}
RHOS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


@functools.lru_cache(maxsize=None)
def constants():
  from jaxlab.core import config as config_lib
  from jaxlab.swarm.hidden_gems import experiment
  return experiment.constants(config_lib.load("configs/hidden_gems.py:repro", validate=experiment.validate))


def rows(start: int, stop: int) -> dict:
  """Runs [start, stop): run i is seed i at correlation RHOS[i % 6]."""
  i = np.arange(start, stop)
  return {"seed": i.astype(np.int32), "rho": np.asarray(RHOS, np.float32)[i % len(RHOS)]}


def jax_sweep(size: str, n: int):
  """(batched function, runs, block) of the jitted program; block None: the platform's."""
  from jaxlab.swarm.hidden_gems import model
  return model.batch_fn(constants()), rows(0, n), None


def jax_program(size: str, n: int):
  return common.mapped_program(*jax_sweep(size, n))


def numpy_batched(size: str, start: int, stop: int) -> dict:
  k = constants()
  u = ref.draw_uniforms(np.random.default_rng([k.root_seed, start]), stop - start, k)
  return ref.simulate_batch(u, rows(start, stop)["rho"], k)


def numpy_loop(size: str, start: int, stop: int) -> list:
  k = constants()
  u = ref.draw_uniforms(np.random.default_rng([k.root_seed, start]), stop - start, k)
  rho = rows(start, stop)["rho"]
  return [numpy_run({name: x[i] for name, x in u.items()}, float(rho[i]), k) for i in range(stop - start)]


if __name__ == "__main__":
  common.main_for("benchmarks.hidden_gems", __doc__)
