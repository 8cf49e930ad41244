"""One system across two finished runs, paired on the same test questions (`jaxlab compare RUN_A
RUN_B --system NAME`): A minus B before abstaining, at each of the runs' coverages and in
hallucination as served, with the paired-bootstrap intervals a run's own report uses
(`references.paired`). Each run's threshold for the system is its own, chosen on its own
validation answers; the two runs must have answered the same test questions in the same order
(a declared pair: two designs scored on one test world), and the intervals use run A's
`eval.bootstrap` and seed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from jaxlab.paging import figures as figures_lib, references

_SAME = ("id", "document", "question", "gold_answer")   # what a test row must share with its pair


def compare(run_a, run_b, system: str, out=None) -> str:
  """`jaxlab compare`: the lines it prints; with `out`, the whole result also as JSON there."""
  result = paired_runs(run_a, run_b, system)
  if out is not None:
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(result, indent=1) + "\n")
  return table(result)


def paired_runs(run_a, run_b, system: str) -> dict:
  """The paired differences A - B of `system` (see the module docstring); FileNotFoundError or
  ValueError names what does not pair."""
  runs = [_read(Path(run), system) for run in (run_a, run_b)]
  (config, rows, val), (config_b, rows_b, val_b) = runs
  keys, keys_b = ([tuple(r[k] for k in _SAME) for r in x] for x in (rows, rows_b))
  if keys != keys_b:
    differ = next((i for i, (x, y) in enumerate(zip(keys, keys_b)) if x != y), min(len(keys), len(keys_b)))
    raise ValueError(f"{run_a} and {run_b} answered different test questions ({len(keys)} and {len(keys_b)}; "
                     f"the first difference at row {differ}): a paired comparison needs one test world")
  ev = config["eval"]
  (chosen, q), (chosen_b, q_b) = (references.per_question(c, r, v, [system]) for c, r, v in runs)
  for run, x in zip((run_a, run_b), (q, q_b)):
    missing = int(np.isnan(x[system]["conf"]).sum())
    if missing:
      raise ValueError(f"{run}: {system} gave no answer or confidence on {missing} test questions; "
                       f"`jaxlab compare` pairs a system that answered every one")
  return {"system": system, "runs": [str(run_a), str(run_b)], "questions": len(q[system]["conf"]),
          "thresholds": [chosen.get(system), chosen_b.get(system)],
          "figures": [{"f1_raw": figures_lib.mean_ci(x[system]["raw"], ev["bootstrap"], config["seed"]),
                       "hallucination": figures_lib.mean_ci(x[system]["halluc"], ev["bootstrap"], config["seed"])}
                      for x in (q, q_b)],
          "differences": references.paired(q[system], q_b[system], ev["coverages"], ev["bootstrap"], config["seed"])}


def _read(workdir: Path, system: str):
  for name in ("config.json", "predictions.jsonl", "validation.jsonl"):
    if not (workdir / name).is_file():
      raise FileNotFoundError(f"{workdir / name} not found: is {workdir} a finished latent_pager run?")
  config, rows, val = figures_lib.read_run(workdir)
  systems = list(rows[0]["answers"]) if rows else []
  if system not in systems:
    raise ValueError(f"{workdir} has no answers of {system!r}; its systems: {', '.join(systems)}")
  return config, rows, val


def table(result: dict) -> str:
  """The comparison as printed lines."""
  a, b = result["runs"]
  lines = [f"{result['system']}, {result['questions']} test questions paired: A = {a}, B = {b}"]
  for name, figures in zip("AB", result["figures"]):
    lines.append(f"{name}: F1 before abstaining {figures_lib.ci_text(figures['f1_raw'], 3)}, "
                 f"hallucination as served {figures_lib.ci_text(figures['hallucination'], 3)}")
  differences = result["differences"]
  lines += [f"A - B {name.replace('coverage/', '')}: {figures_lib.diff_text(differences, name, 3)}"
            for name in differences]
  return "\n".join(lines)
