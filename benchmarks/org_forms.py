"""Org forms (swarm-org-forms.md): the jitted, sharded model against batched NumPy and Mesa, fairly.

  python benchmarks/org_forms.py                          # CPU: 2,700 runs of the main grid
  python benchmarks/org_forms.py --scaling docs/benchmarks_org_forms.png   # + runs/s vs batch size, Mesa's too
  python benchmarks/org_forms.py --size gpu               # 27,000 runs (JAX columns are the point there)

Runs are the `repro` main grid (3 structures x 5 coordinator x 3 specialist x 2 communicator
shares), seed-major, so any batch covers every cell. JAX runs `model.batch_fn` through
`mesh.map_runs`, worlds drawn by the jitted core; batched NumPy (`org_forms_numpy.draw_worlds` +
`simulate_batch`) draws its worlds with NumPy's generator and loops over the 200 periods with
every run on a leading axis; the loop column is `org_forms_numpy.simulate`, one run at a time.
How the columns are pinned to cores and timed: benchmarks/common.py.

The Mesa columns are the model as agent-based modellers write it (`org_forms_mesa.py`, Mesa 3,
one agent per person), swept by `mesa.batch_run` over 1 process and over one per core, in a fresh
process pinned like the others. Mesa is slow, so it runs fewer runs (the main grid's cells times
`mesa_seeds` seeds; `tiny`: the first cell of each structure) and every ratio is one of runs per
second. batch_run starts its process pool inside each call, so that start is in its time, as it
is for its users. Without Mesa installed (`pip install -e '.[bench]'`) the columns are skipped.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import common, org_forms_numpy as ref  # noqa: E402

NAME, UNIT = "org forms", "runs"
SIZES = {"tiny": dict(runs=64, loop=2, mesa_seeds=1), "cpu": dict(runs=2700, loop=20, mesa_seeds=2),
         "gpu": dict(runs=27_000, loop=20, mesa_seeds=2)}


@functools.lru_cache(maxsize=None)
def repro():
  """The repro config (its runs table is built with 2 seeds; the benchmark picks its own)."""
  from jaxlab.core import config as config_lib
  from jaxlab.swarm.org_forms import experiment
  return config_lib.load("configs/org_forms.py:repro", ["--config.seeds=2"], experiment.validate)


@functools.lru_cache(maxsize=None)
def setup():
  """(model constants, the main grid's cells as runs-table rows of seed 0)."""
  from jaxlab.swarm.org_forms import experiment, grid
  config = repro()
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


# ---------------------------------------------------------------------------------------------
# The Mesa columns.

def mesa_grid(axes: int, seeds: int) -> dict:
  """`mesa.batch_run` parameters: every structure, the first `axes` of the main grid's share axes
  (coordinators, specialists, communicators) in full and the others at their first value, and
  `seeds` seeds."""
  config = repro()
  g = config.grid
  shares = [list(v) if i < axes else list(v[:1]) for i, v in enumerate((g.coord_shares, g.spec_shares, g.comm_shares))]
  return dict(structure=list(g.structures), coord_share=shares[0], spec_share=shares[1], comm_share=shares[2],
              alpha=config.alpha, gamma=config.gamma, seed=list(range(seeds)))


def mesa_parameters(size: str) -> dict:
  """The Mesa columns' parameters: the main grid (`tiny`: the first share of each axis) with
  SIZES[size]["mesa_seeds"] seeds."""
  return mesa_grid(0 if size == "tiny" else 3, SIZES[size]["mesa_seeds"])


def mesa_runs(parameters: dict) -> int:
  return math.prod(len(v) for v in parameters.values() if isinstance(v, list))


def mesa_worker(parameters: dict, processes: int) -> dict:
  """Times one `org_forms_mesa.batch` over `parameters` on `processes` processes, in this process."""
  from benchmarks import org_forms_mesa
  from jaxlab.swarm.org_forms import model
  k, _ = setup()
  constants = org_forms_mesa.constants(k, model.PROTOTYPES)
  cpu0, t0 = common._cpu_seconds(), time.perf_counter()
  runs = org_forms_mesa.batch(parameters, constants, processes)
  seconds, cpu = time.perf_counter() - t0, common._cpu_seconds() - cpu0
  return dict(runs=len(runs), seconds=seconds, cpu_s=cpu, cores_used=cpu / seconds, processes=processes)


def measure_mesa(parameters: dict, cores: int) -> dict:
  """`mesa_worker` in a fresh process limited to `cores` cores, with one process per core."""
  allowed = ",".join(str(c) for c in sorted(os.sched_getaffinity(0))[:cores])
  code = ("import json, sys; from benchmarks import org_forms; "
          "print(json.dumps(org_forms.mesa_worker(json.loads(sys.argv[1]), int(sys.argv[2]))))")
  env = {**os.environ, **common.ONE_THREAD, "PYTHONPATH": str(common.ROOT), "JAX_PLATFORMS": "cpu"}
  # `python -c`: batch_run's spawned workers re-import no main script, only org_forms_mesa (no JAX).
  done = subprocess.run(["taskset", "-c", allowed, sys.executable, "-c", code, json.dumps(parameters), str(cores)],
                        env=env, cwd=common.ROOT, capture_output=True, text=True)
  if done.returncode != 0:
    raise RuntimeError(f"mesa worker ({mesa_runs(parameters)} runs, {cores} cores) failed:\n{done.stdout[-2000:]}\n"
                       f"{done.stderr[-4000:]}")
  return json.loads(done.stdout.strip().splitlines()[-1])


# The Mesa scaling curve's batches as (full share axes, seeds): 3, 15, 45, 90, 180 and 360 runs.
MESA_CURVE = ((0, 1), (1, 1), (2, 1), (3, 1), (3, 2), (3, 4))


def extra_curves(size: str, cap_s: float, log=print) -> dict:
  """Mesa's runs per second against batch size, on 1 process and on one per core (each batch in a
  fresh pinned process, batch_run's pool start included); {} when Mesa is not installed. A curve
  stops growing once one batch took longer than `cap_s` seconds."""
  if importlib.util.find_spec("mesa") is None:
    log("  mesa: not installed (pip install -e '.[bench]'); no Mesa curve")
    return {}
  curves = {}
  for key, cores in (("mesa_1core", 1), ("mesa_all", common.CORES)):
    curves[key] = []
    for axes, seeds in MESA_CURVE[:2] if size == "tiny" else MESA_CURVE:
      if curves[key] and curves[key][-1]["seconds"] > cap_s:
        break
      m = measure_mesa(mesa_grid(axes, seeds), cores)
      curves[key].append(dict(runs=m["runs"], seconds=m["seconds"], rate=m["runs"] / m["seconds"], compile_s=None))
      log(f"  {key:10s} {m['runs']:6d} {UNIT}: {m['runs'] / m['seconds']:11.1f} {UNIT}/s "
          f"(batch_run on {m['processes']} process(es))")
  return curves


def mesa_columns(size: str, compared: dict, log=print) -> dict | None:
  """The Mesa columns on 1 core and on all cores, and JAX's runs per second over theirs; None
  (and one line saying so) when Mesa is not installed."""
  if importlib.util.find_spec("mesa") is None:
    log("  mesa: not installed (pip install -e '.[bench]'); the Mesa columns are skipped")
    return None
  cols = {}
  for key, cores in (("mesa_1core", 1), ("mesa_all", common.CORES)):
    cols[key] = m = measure_mesa(mesa_parameters(size), cores)
    log(f"  {key:12s} {m['runs']:7d} {UNIT} in {m['seconds']:8.3f} s = {m['runs'] / m['seconds']:11.1f} {UNIT}/s "
        f"({m['cores_used']:.2f} cores busy; mesa.batch_run on {m['processes']} process(es))")
  rate = lambda m: m["runs"] / m["seconds"]
  jax = compared["rates"]
  r = dict(columns=cols, runs=cols["mesa_1core"]["runs"], ratio_1core=jax["jax_1core"] / rate(cols["mesa_1core"]),
           ratio_all=jax["jax_all"] / rate(cols["mesa_all"]))
  log(f"  jax/mesa compares runs per second: Mesa timed on {r['runs']} {UNIT}, "
      f"JAX on {compared['columns']['jax_1core']['runs']}")
  return r


def ratio_line(compared: dict, mesa: dict | None) -> str:
  """The benchmark's last line: common's NumPy ratios, then JAX over Mesa (or that it was not measured)."""
  line = common.ratio_line(NAME, compared)
  if mesa is None:
    return line + "; jax/mesa: not measured (mesa is not installed)"
  return (line + f"; jax/mesa = {mesa['ratio_1core']:.1f}x (1 core), {mesa['ratio_all']:.1f}x (all cores) "
          f"(throughput ratios, runs per second; Mesa timed on {mesa['runs']} {UNIT})")


def with_mesa(size: str, result: dict) -> str:
  """The Mesa columns after the fair comparison; the last line with both ratios."""
  print(f"Mesa on {mesa_runs(mesa_parameters(size))} {UNIT}")
  result["mesa"] = mesa_columns(size, result["compare"])
  return ratio_line(result["compare"], result["mesa"])


def main() -> None:
  common.main_for("benchmarks.org_forms", __doc__, more=with_mesa)


if __name__ == "__main__":
  main()
