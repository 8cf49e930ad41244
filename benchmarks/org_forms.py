"""Org forms: the jitted, vmapped, sharded main grid against the NumPy loop it replaces.

  python benchmarks/org_forms.py                 # CPU: 2,700-run main grid; NumPy on 1 seed per cell
  python benchmarks/org_forms.py --size gpu      # 27,000 runs (300 seeds per cell) for an accelerator

Both sides run the same cells of the `repro` main grid (3 structures x 5 x 3 x 2 shares), each
drawing its own worlds. NumPy runs one run at a time (benchmarks/org_forms_numpy.py); JAX runs the
whole grid as one program sharded over every device (on a CPU, one device per core). Prints runs
per second of each and the ratio; compilation is timed apart and not counted.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import common  # noqa: E402

SIZES = {"cpu": 30, "gpu": 300}   # seeds per cell


def main():
  args = common.start(__doc__, SIZES, lambda p: p.add_argument(
      "--numpy-seeds", type=int, default=1, help="seeds per cell for the NumPy side"))
  import jax
  import numpy as np

  from benchmarks import org_forms_numpy as ref
  from jaxlab.core import config as config_lib, mesh
  from jaxlab.swarm.org_forms import experiment, grid, model

  seeds = SIZES[args.size]
  config = config_lib.load("configs/org_forms.py:repro", [f"--config.seeds={seeds}"], experiment.validate)
  table = grid.build(config)
  main_rows = table["study"] == grid.STUDIES.index("main")
  inputs = {k: v[main_rows] for k, v in grid.model_inputs(table).items()}
  k = experiment.constants(config)
  fn = model.batch_fn(k)
  m = mesh.make_mesh()
  n = len(inputs["seed"])
  print(f"devices: {m.size} x {jax.devices()[0].platform}; main grid: {n} runs")

  out, compile_s, jax_s = common.timed_twice(lambda: mesh.map_runs(fn, inputs, m, common.block_for_platform()))

  first = inputs["seed"] < args.numpy_seeds
  rng = np.random.default_rng(0)
  t0 = time.perf_counter()
  for i in np.nonzero(first)[0]:
    row = {key: v[i] for key, v in inputs.items()}
    ref.simulate(ref.draw_world(rng, row["counts"], int(row["structure"]), k), row, k)
  numpy_s = time.perf_counter() - t0
  n_numpy = int(first.sum())

  common.report("runs", n, jax_s, compile_s, n_numpy, numpy_s)
  print(f"check : mean cumulative revenue over the grid {float(np.mean(out['cum_revenue'])):.3f}")


if __name__ == "__main__":
  main()
