"""A sweep's results: `runs.npz` on disk, the `Runs` selector over it, and the report preamble.

`runs.npz` holds the runs table and every run's outputs; `jaxlab report DIR` rebuilds summaries,
tables and plots from it and `config.json`, so a report can change without rerunning the sweep.
`Runs` picks rows by their labels in seed order, so cells that share seeds pair up (the paired
intervals of `core.margins` rely on it); `comparisons` puts an experiment's published figures
beside its own; `label` prints a cell's coordinate the same way everywhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np

from jaxlab.core import sweep
from jaxlab.core import config as config_lib
from jaxlab.core import report as report_lib


def label(x) -> str:
  """A cell coordinate as figure names print it: 0.0625 -> "0.0625", 2.0 -> "2", float32 noise dropped."""
  return f"{float(np.round(float(x), 6)):g}"


class Runs:
  """Rows of a runs table by their labels; each selection comes back ordered by seed.

  `keys` names the label columns that `index` takes positionally (a subclass sets it, e.g.
  ("study",) or ("policy", "split")); `names` maps a label column stored as an index to its
  names, so `index(structure="flat")` works on a column of 0, 1, 2. Float labels match with
  `np.isclose` (tables store them as float32).
  """

  keys: tuple[str, ...] = ()
  names: dict[str, tuple[str, ...]] = {}

  def __init__(self, config, table, results):
    self.config, self.table, self.results = config, table, results

  def index(self, *positional, **labels) -> np.ndarray:
    if len(positional) > len(self.keys):
      raise TypeError(f"{type(self).__name__}.index takes at most {len(self.keys)} positional labels {self.keys}")
    labels = {**dict(zip(self.keys, positional)), **labels}
    mask = np.ones(len(self.table["seed"]), bool)
    for key, value in labels.items():
      if isinstance(value, str):
        value = self.names[key].index(value)
      mask &= np.isclose(self.table[key], value)
    idx = np.nonzero(mask)[0]
    return idx[np.argsort(self.table["seed"][idx], kind="stable")]

  def values(self, metric, *positional, **labels) -> np.ndarray:
    """The metric of the selected runs, in seed order."""
    return self.results[metric][self.index(*positional, **labels)]

  def mean(self, metric, *positional, **labels) -> float:
    return float(np.mean(self.values(metric, *positional, **labels)))


def comparisons(published: dict, figures: dict, prefix: str = "") -> list[dict]:
  """`report.compare` rows for the published figures this run has.

  `published`: figure name -> (mean, sd, n) as the source prints them (sd or n None when it gives
  none); `prefix` is put before each name to find ours (e.g. "rho=0/"). A published figure the
  run's grid does not contain is left out, not compared with nothing.
  """
  return [report_lib.compare(prefix + name, (mean, sd), figures[prefix + name], n)
          for name, (mean, sd, n) in published.items() if prefix + name in figures]


def save(workdir, table: dict, results: dict) -> None:
  if jax.process_index() != 0:
    return
  arrays = {f"table/{k}": np.asarray(v) for k, v in table.items()}
  arrays.update({f"results/{k}": np.asarray(v) for k, v in results.items()})
  np.savez_compressed(Path(workdir) / "runs.npz", **arrays)


def sweep_and_report(config, workdir, table: dict, inputs: dict, batch_fn, report, extra: dict | None = None):
  """A grid experiment's run: every row of `table` through `batch_fn` as one sharded, chunked,
  resumable sweep (`sweep.sweep`), saved with `extra` results to runs.npz, then
  `report(workdir)` on process 0 (None on the others)."""
  out = sweep.sweep(config, batch_fn, table, inputs, workdir)
  save(workdir, table, {**out, **(extra or {})})
  return report(workdir) if jax.process_index() == 0 else None


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
