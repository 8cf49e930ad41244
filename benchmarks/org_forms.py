"""Org forms (swarm-org-forms.md): the jitted, sharded model against batched NumPy, fairly.

  python benchmarks/org_forms.py                          # CPU: 2,700 runs of the main grid
  python benchmarks/org_forms.py --scaling docs/benchmarks_org_forms.png   # + runs/s vs batch size
  python benchmarks/org_forms.py --size gpu               # 27,000 runs (JAX columns are the point there)

Runs are the `repro` main grid (3 structures x 5 coordinator x 3 specialist x 2 communicator
shares), seed-major, so any batch covers every cell. JAX runs `model.batch_fn` through
`mesh.map_runs`, worlds drawn by the jitted core; batched NumPy (`org_forms_numpy.draw_worlds` +
`simulate_batch`) draws its worlds with NumPy's generator and loops over the 200 periods with
every run on a leading axis; the loop column is `org_forms_numpy.simulate`, one run at a time.
How the columns are pinned to cores and timed: benchmarks/common.py.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import common, org_forms_numpy as ref  # noqa: E402

NAME, UNIT = "org forms", "runs"
SIZES = {"tiny": dict(runs=64, loop=2), "cpu": dict(runs=2700, loop=20), "gpu": dict(runs=27_000, loop=20)}


@functools.lru_cache(maxsize=None)
def setup():
  """(model constants, the main grid's cells as runs-table rows of seed 0)."""
  from jaxlab.core import config as config_lib
  from jaxlab.swarm.org_forms import experiment, grid
  config = config_lib.load("configs/org_forms.py:repro", ["--config.seeds=2"], experiment.validate)
  table = grid.build(config)
  main = (table["study"] == grid.STUDIES.index("main")) & (table["seed"] == 0)
  return experiment.constants(config), {key: v[main] for key, v in grid.model_inputs(table).items()}


def rows(start: int, stop: int) -> dict:
  """Runs [start, stop) of the benchmark's sweep: run i is cell i % cells at seed i // cells."""
  _, cells = setup()
  i = np.arange(start, stop)
  out = {key: v[i % len(cells["seed"])] for key, v in cells.items()}
  out["seed"] = (i // len(cells["seed"])).astype(np.int32)
  return out


def jax_sweep(size: str, n: int):
  """(batched function, runs, block) of the jitted program; block None: the platform's."""
  from jaxlab.swarm.org_forms import model
  k, _ = setup()
  return model.batch_fn(k), rows(0, n), None


def jax_program(size: str, n: int):
  return common.mapped_program(*jax_sweep(size, n))


def numpy_batched(size: str, start: int, stop: int) -> dict:
  k, _ = setup()
  r = rows(start, stop)
  return ref.simulate_batch(ref.draw_worlds(np.random.default_rng([k.root_seed, start]), r, k), r, k)


def numpy_loop(size: str, start: int, stop: int) -> list:
  k, _ = setup()
  r = rows(start, stop)
  rng = np.random.default_rng([k.root_seed, start])
  out = []
  for i in range(stop - start):
    row = {key: v[i] for key, v in r.items()}
    out.append(ref.simulate(ref.draw_world(rng, row["counts"], int(row["structure"]), k), row, k))
  return out


if __name__ == "__main__":
  common.main_for("benchmarks.org_forms", __doc__)
