"""Harness versus brain (evolution-harness-vs-brain.md): the jitted, sharded evolutionary sweep
against batched NumPy, fairly.

  python benchmarks/harness_vs_brain.py                   # CPU: 160 runs = the `repro` budget
  python benchmarks/harness_vs_brain.py --scaling docs/benchmarks_harness_vs_brain.png   # + runs/s vs batch
  python benchmarks/harness_vs_brain.py --size gpu        # 160 runs at population 65,536 (`gpu` variant)

A run is one evolutionary run of a table regime (the five of the spec; the MLP regime needs an
evosax strategy, which NumPy has not) at one K and seed: 48 generations of population 32 on the
seed's tasks. Run i is regime i % 5 at K = (1, 2, 4, 8)[i // 5 % 4], seed i // 20, so the `cpu`
size is exactly the repro sweep's table rows. JAX runs the five regimes' program
(`experiment.programs`, `sweep.batch_run`: init and every generation as one jitted program, no
checkpoints) through `mesh.map_runs`; batched NumPy
(`harness_vs_brain_numpy.evolve`) draws tasks, genomes and mutations with NumPy's generator and
loops over generations with every run x individual on leading axes; the loop column is
`harness_vs_brain_numpy.np_run`, one individual at a time.
How the columns are pinned to cores and timed: benchmarks/common.py.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import common, harness_vs_brain_numpy as ref  # noqa: E402

NAME, UNIT = "harness vs brain", "runs"
SIZES = {"tiny": dict(runs=20, loop=1, variant="smoke"), "cpu": dict(runs=160, loop=5, variant="repro"),
         "gpu": dict(runs=160, loop=5, variant="gpu")}


@functools.lru_cache(maxsize=None)
def config_of(size: str):
  from jaxlab.core import config as config_lib
  from jaxlab.evolution import strategies
  from jaxlab.evolution.harness_vs_brain import experiment
  return config_lib.load(f"configs/harness_vs_brain.py:{SIZES[size]['variant']}",
                         [f"--config.regimes={strategies.PUBLISHED}"], validate=experiment.validate)


def rows(size: str, start: int, stop: int) -> dict:
  """The runs table (regime, n_slots, seed) of runs start..stop-1."""
  ks = np.asarray(config_of(size).ks, np.int32)
  i = np.arange(start, stop)
  return {"regime": (i % 5).astype(np.int32), "n_slots": ks[i // 5 % len(ks)],
          "seed": (i // (5 * len(ks))).astype(np.int32)}


def jax_inputs(config, r: dict):
  """The five regimes' program and its row inputs for the runs `r` (`experiment.programs`)."""
  from jaxlab.evolution.harness_vs_brain import experiment
  table = {"regime": r["regime"], "capacity": r["n_slots"], "seed": r["seed"]}
  [(_, program, _, inputs)] = experiment.programs(config, table)
  return program, inputs


def jax_sweep(size: str, n: int):
  """(batched function, runs, block) of the jitted program: the config's block on every platform."""
  from jaxlab.evolution.harness_vs_brain import sweep
  config = config_of(size)
  program, inputs = jax_inputs(config, rows(size, 0, n))
  return sweep.batch_run(program, config.generations), inputs, config.block


def jax_program(size: str, n: int):
  return common.mapped_program(*jax_sweep(size, n))


def regime_settings(config) -> dict:
  """{regime: {GA field: value, "myopic": bool}} of the five published regimes, as registered."""
  from jaxlab.evolution.harness_vs_brain import experiment
  return {r.name: {**{f: np.asarray(getattr(r.params, f)).item() for f in r.params.__dataclass_fields__},
                   "myopic": r.myopic} for r in experiment.regimes(config)}


def numpy_batched(size: str, start: int, stop: int) -> dict:
  config = config_of(size)
  r = rows(size, start, stop)
  draws = ref.NumpyDraws([config.seed, start], stop - start, config.population)
  return ref.evolve(r, ref.params_of(regime_settings(config), r["regime"]), draws, config.generations, config.elite)


def numpy_loop(size: str, start: int, stop: int) -> list:
  config = config_of(size)
  r, regimes = rows(size, start, stop), regime_settings(config)
  draws = ref.NumpyDraws([config.seed, start], stop - start, config.population)
  tasks = ref.draw_tasks(draws.tasks())
  from jaxlab.evolution import strategies
  return [ref.np_run(regimes[strategies.PUBLISHED[r["regime"][i]]], int(r["n_slots"][i]),
                     {key: v[i] for key, v in tasks.items()}, draws.rng, config.population,
                     config.generations, config.elite) for i in range(stop - start)]


if __name__ == "__main__":
  common.main_for("benchmarks.harness_vs_brain", __doc__)
