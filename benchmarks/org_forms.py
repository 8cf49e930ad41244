"""Org forms: the jitted, vmapped, sharded main grid against the NumPy loop it replaces.

  python benchmarks/org_forms.py                 # CPU: 2,700-run main grid; NumPy on 1 seed per cell
  python benchmarks/org_forms.py --size gpu      # 27,000 runs (300 seeds per cell) for an accelerator

Both sides run the same cells of the `repro` main grid (3 structures x 5 x 3 x 2 shares), each
drawing its own worlds. NumPy runs one run at a time (benchmarks/org_forms_numpy.py); JAX runs the
whole grid as one program sharded over every device (on a CPU, one device per core). Prints runs
per second of each and the ratio; compilation is timed apart and not counted.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--size", choices=("cpu", "gpu"), default="cpu")
  parser.add_argument("--numpy-seeds", type=int, default=1, help="seeds per cell for the NumPy side")
  parser.add_argument("--cpu-devices", type=int, default=os.cpu_count(),
                      help="CPU devices to force (one per core shards the grid over all cores)")
  args = parser.parse_args()
  os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                             + f" --xla_force_host_platform_device_count={args.cpu_devices}")
  sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
  import jax
  import numpy as np

  from benchmarks import org_forms_numpy as ref
  from jaxlab.core import config as config_lib, mesh
  from jaxlab.swarm.org_forms import experiment, grid, model

  seeds = 30 if args.size == "cpu" else 300
  config = config_lib.load("configs/org_forms.py:repro", [f"--config.seeds={seeds}"], experiment.validate)
  table = grid.build(config)
  main_rows = table["study"] == grid.STUDIES.index("main")
  inputs = {k: v[main_rows] for k, v in grid.model_inputs(table).items()}
  k = experiment.constants(config)
  fn = model.batch_fn(k)
  m = mesh.make_mesh()
  n = len(inputs["seed"])
  print(f"devices: {m.size} x {jax.devices()[0].platform}; main grid: {n} runs")

  t0 = time.perf_counter()
  mesh.map_runs(fn, inputs, m)
  compile_s = time.perf_counter() - t0
  t0 = time.perf_counter()
  out = mesh.map_runs(fn, inputs, m)
  jax_s = time.perf_counter() - t0

  first = inputs["seed"] < args.numpy_seeds
  rng = np.random.default_rng(0)
  t0 = time.perf_counter()
  for i in np.nonzero(first)[0]:
    row = {key: v[i] for key, v in inputs.items()}
    ref.simulate(ref.draw_world(rng, row["counts"], int(row["structure"]), k), row, k)
  numpy_s = time.perf_counter() - t0
  n_numpy = int(first.sum())

  jax_rate, numpy_rate = n / jax_s, n_numpy / numpy_s
  print(f"jax   : {n:6d} runs in {jax_s:7.3f} s = {jax_rate:9.1f} runs/s  (compile + first call {compile_s:.1f} s)")
  print(f"numpy : {n_numpy:6d} runs in {numpy_s:7.3f} s = {numpy_rate:9.1f} runs/s")
  print(f"ratio : {jax_rate / numpy_rate:.1f}x runs per second")
  print(f"check : mean cumulative revenue over the grid {float(np.mean(out['cum_revenue'])):.3f}")


if __name__ == "__main__":
  main()
