"""Finished runs compared on the same test questions.

`jaxlab compare RUN_A RUN_B --system NAME`: one system across two runs, A minus B before
abstaining, at each of the runs' coverages and in hallucination as served, with the
paired-bootstrap intervals a run's own report uses (`references.paired`). The two runs must have
answered the same test questions in the same order (a declared pair: two designs scored on one
test world).

`jaxlab seeds RUN ... --system NAME --against OTHER`: runs of one design that differ only in their
training seed (and in which other readers they ran), each scored on the same test questions; the
system minus the other within each run, seed by seed with its paired-bootstrap intervals, and over
the seeds with a nested bootstrap (`core.stats.nested_bootstrap`: seeds and questions resampled
together, as the `seeds` study grades), so the interval holds the spread between training runs as
well as the questions'. `--against text_buffer` on a `references` run is the text buffer rule that
run chose on validation. Where the other system answered every question alike in every run (a
text reader does not train), it is one reference shared by the seeds, as in the `seeds` study.
On `references` runs that declare the long-document bar, its answer parts for a paging reader
(`long_bar.parts`) are graded over the seeds the same way.

Each run's thresholds are its own, chosen on its own validation answers; the intervals use the
first run's `eval.bootstrap` and seed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from jaxlab.core import config as config_lib
from jaxlab.core.stats import describe, nested_bootstrap
from jaxlab.paging import figures as figures_lib, hybrid, long_bar, references, seeds as seeds_lib
from jaxlab.paging.spec import training_seed

_SAME = ("id", "document", "question", "gold_answer")   # what a test row must share with its pair
# What runs of one design may differ in, for `jaxlab seeds`: besides these, one config throughout.
_MAY_DIFFER = ("variant", "train.seed", "references.readers")


def compare(run_a, run_b, system: str, out=None) -> str:
  """`jaxlab compare`: the lines it prints; with `out`, the whole result also as JSON there."""
  return table(_kept(paired_runs(run_a, run_b, system), out))


def paired_runs(run_a, run_b, system: str) -> dict:
  """The paired differences A - B of `system` (see the module docstring); FileNotFoundError or
  ValueError names what does not pair."""
  runs = [_read(Path(run), system) for run in (run_a, run_b)]
  _same_questions([run_a, run_b], [rows for _, rows, _ in runs])
  (chosen, q), (chosen_b, q_b) = (_answered(run, *x, [system]) for run, x in zip((run_a, run_b), runs))
  config = runs[0][0]
  ev = config["eval"]
  return {"system": system, "runs": [str(run_a), str(run_b)], "questions": len(q[system]["conf"]),
          "thresholds": [chosen.get(system), chosen_b.get(system)],
          "figures": [{"f1_raw": figures_lib.mean_ci(x[system]["raw"], ev["bootstrap"], config["seed"]),
                       "hallucination": figures_lib.mean_ci(x[system]["halluc"], ev["bootstrap"], config["seed"])}
                      for x in (q, q_b)],
          "differences": references.paired(q[system], q_b[system], ev["coverages"], ev["bootstrap"], config["seed"])}


def over_seeds(runs, system: str, against: str, out=None) -> str:
  """`jaxlab seeds`: the lines it prints; with `out`, the whole result also as JSON there."""
  return seed_table(_kept(seed_runs(runs, system, against), out))


def _kept(result: dict, out) -> dict:
  """`result`, also written as JSON to `out` unless it is None."""
  if out is not None:
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(result, indent=1) + "\n")
  return result


def seed_runs(runs, system: str, against: str) -> dict:
  """`system` minus `against` within each run and over the runs as training seeds (see the module
  docstring); FileNotFoundError or ValueError names what does not pair."""
  if len(runs) < 2:
    raise ValueError(f"`jaxlab seeds` grades over training seeds: it needs two runs or more, got {len(runs)}")
  read = [_read(Path(run), system) for run in runs]
  _same_questions(runs, [rows for _, rows, _ in read])
  trained = [_design_seed(runs[0], read[0][0], run, config) for run, (config, _, _) in zip(runs, read)]
  if len(set(trained)) < len(trained):
    raise ValueError(f"two of the runs share training seed {max(trained, key=trained.count)}: the same seed twice "
                     "is one run, not two")
  others = [_other(run, config, val, rows, against) for run, (config, rows, val) in zip(runs, read)]
  declared = _declared_bar(read[0], system)
  buffers = [_other(run, config, val, rows, "text_buffer") for run, (config, rows, val) in zip(runs, read)] \
      if declared else [None] * len(runs)
  # Each run's systems scored once: the two compared and, for the bar, its text buffer, retrieval and oracle.
  scored = [_answered(run, *x, list(dict.fromkeys([system, other] + ([buffer, "retrieval", "oracle"] if declared
                                                                    else []))))
            for run, x, other, buffer in zip(runs, read, others, buffers)]
  config = read[0][0]
  boots, rseed, coverages = config["eval"]["bootstrap"], config["seed"], config["eval"]["coverages"]
  a = _stacked(scored, [system] * len(runs))
  over, shared = _nested(a, _stacked(scored, others), coverages, boots, rseed)
  bar = _bar_over_seeds(declared, system, buffers, scored, a, boots, rseed) if declared else {}
  per_seed = [{"run": str(run), "training_seed": seed, "against": other, "thresholds": [chosen.get(system),
               chosen.get(other)],
               "f1_raw": figures_lib.mean_ci(q[system]["raw"], boots, rseed),
               "hallucination": figures_lib.mean_ci(q[system]["halluc"], boots, rseed),
               "differences": references.paired(q[system], q[other], coverages, boots, rseed)}
              for run, seed, other, (chosen, q) in zip(runs, trained, others, scored)]
  return {"system": system, "against": against, "questions": int(a["conf"].shape[1]),
          "reference_shared_by_seeds": bool(shared), "per_seed": per_seed,
          "over_seeds": {"f1_raw": describe(np.nanmean(a["raw"], axis=1)),
                         "hallucination": describe(a["halluc"].mean(axis=1))},
          "differences_over_seeds": over, **bar}


def _stacked(scored, systems) -> dict:
  """(seeds, questions) arrays of `references.per_question`'s figures, run i's of systems[i]."""
  return {k: np.stack([q[s][k] for (_, q), s in zip(scored, systems)]) for k in ("raw", "halluc", "conf", "util")}


def _nested(a: dict, b: dict, coverages, boots: int, rseed: int) -> tuple[dict, bool]:
  """(a - b over seeds, nested over seeds and questions: F1 before abstaining over the answerable
  questions, hallucination as served, F1 at each coverage; whether b is one reference shared by
  every seed, which it is where it answered alike in every run)."""
  n = len(a["conf"])
  shared = all(np.array_equal(b[k][0], b[k][i], equal_nan=True) for k in b for i in range(n))
  ref = {k: v[0] for k, v in b.items()} if shared else b
  answerable = ~np.isnan(a["raw"][0])
  out = {}
  for name, key, cols in (("f1_raw", "raw", answerable), ("hallucination", "halluc", slice(None))):
    d = a[key][:, cols] - (ref[key][cols][None] if shared else ref[key][:, cols])
    out[name] = nested_bootstrap(seeds_lib.seed_unit_mean(d), n, d.shape[1], boots, rseed)
  for c in coverages:
    out[f"coverage/{figures_lib.coverage_key(c)}"] = nested_bootstrap(
        seeds_lib.seed_coverage_margin(a["conf"], a["util"], ref["conf"], ref["util"], c), n, a["conf"].shape[1],
        boots, rseed)
  return out, shared


def _declared_bar(first_run, system: str) -> dict | None:
  """The long-document bar the runs declare (`references` runs), where `system` is a paging reader
  and retrieval and the oracle answered; None otherwise."""
  config, rows, _ = first_run
  declared = config.get("bar", {})
  systems = list(rows[0]["answers"]) if rows else []
  if system not in hybrid.READERS or "oracle_share" not in declared or not {"retrieval", "oracle"} <= set(systems):
    return None
  return {k: declared[k] for k in ("coverage", "f1_margin", "oracle_share", "speedup", "compression")}


def _bar_over_seeds(declared: dict, system: str, buffers: list[str], scored, a: dict, boots: int, rseed: int) -> dict:
  """{"bar_over_seeds": the long-document bar's answer parts for `system` graded over seeds}:
  against each run's chosen text buffer, retrieval, and the declared share of the oracle's F1."""
  n = len(buffers)
  intervals = {}
  for label, names, coverages in (("text_buffer", buffers, [declared["coverage"]]), ("retrieval", ["retrieval"] * n, [])):
    over, _ = _nested(a, _stacked(scored, names), coverages, boots, rseed)
    intervals.update({f"{k}/{system}-{label}": v for k, v in over.items()})
  answerable = ~np.isnan(a["raw"][0])
  d = a["raw"][:, answerable] - declared["oracle_share"] * _stacked(scored, ["oracle"] * n)["raw"][:, answerable]
  intervals[f"f1_raw/{system}-oracle_share"] = nested_bootstrap(seeds_lib.seed_unit_mean(d), n, d.shape[1], boots,
                                                                rseed)
  buffer = " / ".join(sorted(set(buffers)))
  keys = [key for _, key, _, _ in long_bar.parts(declared, system, buffer)]
  return {"bar_over_seeds": {"declared": declared, "intervals": {k: intervals[k] for k in keys},
                             "targets": long_bar.targets(declared, system, buffer, intervals)}}


def _same_questions(runs, rows_of) -> None:
  """ValueError unless every run answered the first run's test questions in the same order."""
  keys = [tuple(r[k] for k in _SAME) for r in rows_of[0]]
  for run, rows in zip(runs[1:], rows_of[1:]):
    other = [tuple(r[k] for k in _SAME) for r in rows]
    if other != keys:
      differ = next((i for i, (x, y) in enumerate(zip(keys, other)) if x != y), min(len(keys), len(other)))
      raise ValueError(f"{runs[0]} and {run} answered different test questions ({len(keys)} and {len(other)}; "
                       f"the first difference at row {differ}): a paired comparison needs one test world")


def _answered(run, config, rows, val, systems):
  """`references.per_question` of `systems`; ValueError where one left a test question unanswered."""
  chosen, q = references.per_question(config, rows, val, systems)
  for system in systems:
    missing = int(np.isnan(q[system]["conf"]).sum())
    if missing:
      raise ValueError(f"{run}: {system} gave no answer or confidence on {missing} test questions; "
                       f"a paired comparison needs a system that answered every one")
  return chosen, q


def _design_seed(first, first_config: dict, run, config: dict) -> int:
  """The run's training seed (`spec.training_seed`); ValueError naming the first field in which
  its config differs from the first run's, other than `_MAY_DIFFER`."""
  differ = [f for f in config_lib.differences(first_config, config) if f not in _MAY_DIFFER]
  if differ:
    a, b = (config_lib.fields(c).get(differ[0]) for c in (first_config, config))
    raise ValueError(f"{first} and {run} differ in {differ[0]} ({a!r} and {b!r}): "
                     f"`jaxlab seeds` grades runs of one design that differ only in {', '.join(_MAY_DIFFER)}")
  return training_seed(config_lib.from_dict(config))


def _other(run, config: dict, val: list[dict], rows: list[dict], against: str) -> str:
  """The system `against` names in this run: itself, or on a `references` run `text_buffer`, the
  text buffer rule the run chose on validation."""
  systems = list(rows[0]["answers"]) if rows else []
  if against in systems:
    return against
  if against == "text_buffer" and any(s.startswith("text_buffer_") for s in systems):
    return references.chosen_buffer(val, systems, config["bar"]["coverage"])[0]
  raise ValueError(f"{run} has no answers of {against!r}; its systems: {', '.join(systems)}")


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


def seed_table(result: dict) -> str:
  """The over-seeds comparison as printed lines."""
  system, against = result["system"], result["against"]
  lines = [f"{system} - {against}, {result['questions']} test questions paired, {len(result['per_seed'])} training "
           f"seeds" + (f" ({against} the same in every run)" if result["reference_shared_by_seeds"] else "")]
  for row in result["per_seed"]:
    d = row["differences"]
    lines.append(f"seed {row['training_seed']} ({row['run']}; {against}: {row['against']}): F1 before abstaining "
                 f"{figures_lib.ci_text(row['f1_raw'], 3)}; - {against} "
                 + ", ".join(f"{name.replace('coverage/', '')} {figures_lib.diff_text(d, name, 3)}" for name in d))
  over = result["over_seeds"]
  lines.append(f"over seeds: {system} F1 before abstaining {figures_lib.num(over['f1_raw']['mean'])} "
               f"(sd {figures_lib.num(over['f1_raw']['sd'])}), hallucination as served "
               f"{figures_lib.num(over['hallucination']['mean'])} (sd {figures_lib.num(over['hallucination']['sd'])})")
  differences = result["differences_over_seeds"]
  lines += [f"{system} - {against} over seeds, {name.replace('coverage/', '')}: "
            f"{figures_lib.diff_text(differences, name, 3)}" for name in differences]
  bar = result.get("bar_over_seeds")
  if bar:
    verdict = {True: "met", False: "not met", None: "cannot be judged"}
    lines.append(f"the long-document bar over seeds: {sum(r['met'] is True for r in bar['targets'])} of "
                 f"{len(bar['targets'])} answer parts met (latency is judged per run, from its timing.json)")
    lines += [f"  {r['target']}: {r['ours']} ({verdict[r['met']]})" for r in bar["targets"]]
  return "\n".join(lines)
