"""A sweep's raw results on disk: `runs.npz` holds the runs table and every run's outputs.

`jaxlab report DIR` rebuilds summaries, tables and plots from this file and `config.json`, so a
report can change without rerunning the sweep.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np

from jaxlab.core import config as config_lib
from jaxlab.core import report as report_lib


def save(workdir, table: dict, results: dict) -> None:
  if jax.process_index() != 0:
    return
  arrays = {f"table/{k}": np.asarray(v) for k, v in table.items()}
  arrays.update({f"results/{k}": np.asarray(v) for k, v in results.items()})
  np.savez_compressed(Path(workdir) / "runs.npz", **arrays)


def load(workdir):
  """(config, table, results) of a finished run in `workdir`."""
  workdir = Path(workdir)
  for name in ("config.json", "runs.npz"):
    if not (workdir / name).is_file():
      raise FileNotFoundError(f"{workdir / name} is missing: is {workdir} the workdir of a finished run?")
  config = config_lib.from_dict(json.loads((workdir / "config.json").read_text()))
  with np.load(workdir / "runs.npz") as data:
    table = {k.split("/", 1)[1]: data[k] for k in data.files if k.startswith("table/")}
    results = {k.split("/", 1)[1]: data[k] for k in data.files if k.startswith("results/")}
  return config, table, results


def summarize(workdir, analysis, plots):
  """The common first half of a swept experiment's report: load runs.npz, write summary.json from
  `analysis.summarize`, draw `plots.draw_all` over `analysis.Runs`.
  Returns (config, table, summary, runs, images)."""
  config, table, res = load(workdir)
  summary = analysis.summarize(config, table, res)
  report_lib.write_json(Path(workdir) / "summary.json", summary)
  runs = analysis.Runs(config, table, res)
  return config, table, summary, runs, plots.draw_all(runs, workdir)
