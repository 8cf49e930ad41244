"""Equal arms: each system in each of its forms, the forms chosen on validation, and the headline
between the best pager and the best text buffer.

Each arm is one `compare` run in WORKDIR/arms/<arm> (resumable, with its own summary and report),
on the same data: the pager's forms (`arms.pager`) and the text buffer's (`arms.text_buffer`)
are the config's with the overrides of `PAGER` and `TEXT_BUFFER`. Every run answers with both
systems; a text-buffer arm's run keeps the config's pager (its training is that of the first
pager arm, the same fingerprint) and a pager arm's run the frozen text buffer.

Choice, on validation only: the arm of each system with the highest F1 at the bar's coverage over
every validation question (`selective.f1_at_coverage`: each answers its most confident share, an
unanswerable question's gold answer being the abstain string), ties to the earlier arm. The
headline, bar and targets are then `analysis.summarize` on the test questions with the chosen
pager arm's pager answers beside the chosen text-buffer arm's text-buffer answers (and the full
context, which is the same in every run), so the best of one system meets the best of the other
on the questions both answered, each with its own validation threshold. The latency part is the
chosen pair's runs' timed questions (timing.json).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jax
import ml_collections
import numpy as np

from jaxlab.core import report as report_lib
from jaxlab.core.config import derive, to_dict
from jaxlab.paging import (analysis, bar as bar_lib, figures as figures_lib, latency as latency_lib, metrics,
                           pipeline, reporting as pager_report, selective)

# The other schedule the pager's fine-tune was chosen against on validation (its own: two epochs
# at 1e-3, 30 warmup steps), for the text buffer's bridge: so each system's bridge gets the same tries.
SLOW_SCHEDULE = {"epochs": 1, "learning_rate": 3e-4, "warmup_steps": 20}

# arm: the config fields it changes.
PAGER = {
    "bridge": {},                                          # the config's pager (cpu: a rank-8 LoRA bridge)
    "no_bridge": {"pager.decoder_lora_rank": 0},           # answers through the frozen LM
    "mean": {"pager.encoder": "mean", "pager.init": ""},   # mean-pooled pages, nothing pretrained
    # mean-pooled pages pretrained at the pointer's budget (configs/latent_pager.py:pretrain_mean)
    "mean_pretrained": {"pager.encoder": "mean", "pager.init": "models/latent_pager_mean"},
}
TEXT_BUFFER = {
    "frozen": {},                                          # the frozen LM answers from the notes
    "bridge": {"text_buffer.lora_rank": None},             # a LoRA bridge (`arms.text_buffer_rank`) on the QA rows
    "bridge_slow": {"text_buffer.lora_rank": None, "text_buffer.train": SLOW_SCHEDULE},   # on the other schedule
}
# Sections only some configs carry (read with `.get`), so an arm adds them where `derive` would
# refuse a field the config lacks.
OPTIONAL = ("text_buffer.train",)


def arm_config(config, changes: dict):
  rank = config.arms.text_buffer_rank
  changes = {f: rank if v is None else v for f, v in changes.items()}
  derived = derive(config, {"mode": "compare", **{f: v for f, v in changes.items() if f not in OPTIONAL}})
  with derived.unlocked():
    for field in OPTIONAL:
      if field in changes:
        section, name = field.split(".")
        derived[section][name] = ml_collections.ConfigDict(changes[field])
  return derived


def runs(config) -> dict[str, dict]:
  """{run name: {"system", "arm", "changes"}}: one run per pager arm, then one per text-buffer arm
  beyond the first (the first pager arm's run holds the first text-buffer arm)."""
  out = {f"pager_{a}": {"system": "latent_pager", "arm": a, "changes": PAGER[a]} for a in config.arms.pager}
  first = config.arms.text_buffer[0]
  for a in config.arms.text_buffer:
    changes = {**PAGER[config.arms.pager[0]], **TEXT_BUFFER[a]}
    out.setdefault(f"pager_{config.arms.pager[0]}" if a == first else f"text_buffer_{a}",
                   {"system": "text_buffer", "arm": a, "changes": changes})
  return out


def run_dir(workdir: Path, name: str) -> Path:
  return Path(workdir) / "arms" / name


def run(config, workdir: Path):
  for name, spec in runs(config).items():
    sub = run_dir(workdir, name)
    sub.mkdir(parents=True, exist_ok=True)
    c = arm_config(config, spec["changes"])
    if jax.process_index() == 0:
      (sub / "config.json").write_text(json.dumps(to_dict(c), indent=1) + "\n")
    if not (sub / "summary.json").is_file():
      pipeline.compare(c, sub)
  return report(workdir) if jax.process_index() == 0 else None


# ----------------------------------------------------------------------------- choice and report
def validation_score(val: list[dict], system: str, coverage: float) -> float:
  """F1 at `coverage` over every validation question, most confident first."""
  keep = [r for r in val if r["confidence"].get(system) is not None]
  conf = np.array([r["confidence"][system] for r in keep], np.float64)
  f1 = np.array([metrics.token_f1(r["answers"][system], r["gold_answer"]) for r in keep])
  return float(selective.f1_at_coverage(conf, f1, coverage))


def arms_of(config: dict) -> dict[str, dict[str, str]]:
  """{system: {arm: run name}}: where each arm's answers are."""
  out = {"latent_pager": {a: f"pager_{a}" for a in config["arms"]["pager"]}, "text_buffer": {}}
  for a in config["arms"]["text_buffer"]:
    out["text_buffer"][a] = (f"pager_{config['arms']['pager'][0]}" if a == config["arms"]["text_buffer"][0]
                             else f"text_buffer_{a}")
  return out


def best(scores: dict) -> str:
  """The key with the highest validation score, the earlier on a tie (`max` keeps the first)."""
  return max(scores, key=scores.get)


def choose(config: dict, loaded: dict) -> dict:
  """{system: {"scores": {arm: validation score}, "chosen": arm}}."""
  coverage = config["bar"]["coverage"]
  out = {}
  for system, arms in arms_of(config).items():
    scores = {a: validation_score(loaded[name][2], system, coverage) for a, name in arms.items()}
    out[system] = {"scores": scores, "chosen": best(scores)}
  return out


def merged(rows_by_system: dict[str, list[dict]]) -> list[dict]:
  """Rows whose answers and confidences come, per system, from that system's chosen run (the
  questions are the same in every run, in the same order)."""
  base = next(iter(rows_by_system.values()))
  for rows in rows_by_system.values():
    if [r["id"] for r in rows] != [r["id"] for r in base]:
      raise ValueError("the arms' runs answered different questions; they must share the data")
  out = []
  for i, r in enumerate(base):
    row = copy.deepcopy(r)
    for system, rows in rows_by_system.items():
      row["answers"][system], row["confidence"][system] = rows[i]["answers"][system], rows[i]["confidence"][system]
    out.append(row)
  return out


def report(workdir) -> Path:
  workdir = Path(workdir)
  config = json.loads((workdir / "config.json").read_text())
  names = sorted({n for arms in arms_of(config).values() for n in arms.values()})
  loaded = {n: analysis.load(run_dir(workdir, n)) for n in names}
  chosen = choose(config, loaded)
  source = {s: arms_of(config)[s][c["chosen"]] for s, c in chosen.items()}
  pick = lambda index: merged({s: loaded[source[s]][index] for s in ("latent_pager", "text_buffer")})
  rows, val = pick(1), pick(2)
  held = {s: figures_lib.read_rows(run_dir(workdir, source[s]) / figures_lib.HELD_OUT) for s in source}
  held = merged(held) if all(held.values()) else None
  timing = {s: loaded[source[s]][4][s] for s in source}   # the same timed documents in every run
  timing["questions_per_document"] = loaded[source["latent_pager"]][4]["questions_per_document"]
  summary = analysis.summarize({**config, "variant": config.get("variant")}, rows, val,
                               loaded[source["latent_pager"]][3], {**timing}, held=held)
  summary["arms"] = {s: {**c, "run": source[s]} for s, c in chosen.items()}
  report_lib.write_json(workdir / "summary.json", summary)
  ratio = latency_lib.latency_ratio(timing, config["eval"]["bootstrap"], config["seed"])
  report_lib.write_json(workdir / "timing.json", {**timing, "latency_ratio": ratio,
                                                  "latency_bar": bar_lib.latency_bar(ratio, config["bar"]["speedup"])})
  per_arm = []
  for system, arms in arms_of(config).items():
    for a, name in arms.items():
      h = json.loads((run_dir(workdir, name) / "summary.json").read_text())["headline"]
      prefix = "pager" if system == "latent_pager" else "text_buffer"
      per_arm.append([figures_lib.LABELS[system], a + (" (chosen)" if chosen[system]["chosen"] == a else ""),
                      f"{chosen[system]['scores'][a]:.4f}", figures_lib.ci_text(h.get(f"{prefix}_f1_ungated")),
                      figures_lib.ci_text(h.get(f"{prefix}_{figures_lib.coverage_key(config['bar']['coverage'])}")),
                      figures_lib.ci_text(h.get(f"{prefix}_hallucination"))])
  ratio_text = "n/a" if not ratio else f"{figures_lib.ci_text(ratio, 2)}x"
  sections = [
      ("What ran", f"Each system in each of its arms, one `compare` run per arm in `arms/<run>/` (own report): "
                   f"pager arms {tuple(config['arms']['pager'])}, text-buffer arms "
                   f"{tuple(config['arms']['text_buffer'])}; the data and the test world are the same in every run. "
                   "Each system's arm is chosen on validation by F1 at the bar's coverage; the headline compares the "
                   "chosen pager with the chosen text buffer on the test questions."),
      pager_report.targets_section(summary, {"latency_ratio": ratio}, config["bar"]["speedup"]),
      ("Arms", report_lib.markdown_table(
          ["system", "arm", f"validation F1 at {config['bar']['coverage']:.0%} coverage (the choice)",
           "test F1 before abstaining", f"test F1 at {config['bar']['coverage']:.0%} coverage",
           "test hallucination as served"], per_arm)
          + f"\n\nLatency of the chosen pair (one question per document, their runs' timing): {ratio_text}."),
      ("Headline: the chosen pager against the chosen text buffer",
       pager_report.headline_section(summary["headline"], summary["bar"],
                                     {"latency_ratio": ratio,
                                      "latency_bar": bar_lib.latency_bar(ratio, config["bar"]["speedup"])},
                                     config["bar"])),
  ]
  return report_lib.write_report(workdir, "Latent pager: equal arms, the best of each", sections)
