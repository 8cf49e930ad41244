"""`jaxlab eval WORKDIR --data DIR --out OUT`: a finished `compare` run scored on another test set,
with nothing trained and nothing chosen again; a finished `seeds` study, each of its runs so
(OUT/seeds/seed_<s>), then graded over seeds as the study grades its own (`seeds.report`).

From the run: the pager's best-by-validation params (WORKDIR's Orbax checkpoints, read back by
`pipeline.train_pager(restore_only=True)`: a run short of its last step is refused, never
trained), every setting (WORKDIR/config.json: the LM, pages, pager, text buffer, generation,
prompts), its page store (a cache keyed by model, page settings and text: pages of new documents
are added to it), and the abstention thresholds: WORKDIR/validation.jsonl is copied to OUT
unchanged, so the thresholds `analysis.thresholds` chooses from it are the run's own. A text buffer trained with
its own bridge (`text_buffer.lora_rank`) has it read back the same way. The run's
train and validation splits are read again from its own data source, only for what restoring
needs (the training loop's length) and for the page and question widths, which also cover DIR's
records so a longer document or question fits.

DIR needs only test.jsonl, in the layout `data.jsonl_dir` reads (`jaxlab.data.jsonl`); beside it,
held_out.jsonl (the same questions in other wordings) is scored too where the run reports held-out
wordings, and world.json names the world the questions came from (`data.export_jsonl` writes
both; `jaxlab data`, a config's test world). Every document of test.jsonl and held_out.jsonl is
scored (the run's `data.num_test` cuts neither), followed by the consistency probes `data.load`
appends. OUT gets config.json (the run's, with `data.jsonl_dir` set to DIR),
evaluated.json (the run and the folder scored: its path, test.jsonl's sha256, the question and
probe counts, how many of its documents the pager trained on), validation.jsonl and history.json
(copied), predictions.jsonl, timing.json (measured again on DIR's questions by the same
`timing.served` as `compare`: latencies belong to these documents on this machine, not to the
run's) and the report (`reporting.write`: summary.json, report.md, plots). Scored on its own test
split (`data.export_jsonl`), a run gives its summary.json byte for byte.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import jax

from jaxlab.core import config as config_lib
from jaxlab.paging import data, figures as figures_lib, pipeline, reporting as pager_report, seeds, text_bridge

COPIED = ("validation.jsonl", "history.json")


def evaluate(workdir, data_dir, out) -> Path | None:
  """Scores DIR/test.jsonl with the finished `compare` run in `workdir`; writes `out` and returns
  its report (None on processes other than 0). Refusals raise FileNotFoundError or ValueError (a
  bad JSONL line names file:line), `core.train.Unfinished` for a run still training, and
  `core.checkpoint.CheckpointMismatch` for checkpoints that are not its config's."""
  workdir, data_dir, out = Path(workdir), Path(data_dir).absolute(), Path(out)
  path = workdir / "config.json"
  if not path.is_file():
    raise FileNotFoundError(f"{path} not found: is {workdir} the workdir of a run?")
  raw = json.loads(path.read_text())
  if raw.get("experiment") != "latent_pager" or raw.get("mode") not in ("compare", "seeds"):
    raise ValueError(f"{workdir} is a {raw.get('experiment')} run in mode {raw.get('mode')!r}; "
                     "`jaxlab eval` scores a latent_pager run in mode 'compare' or a 'seeds' study")
  test_path = data_dir / "test.jsonl"
  if not test_path.is_file():
    raise FileNotFoundError(f"{test_path} not found: --data takes a folder holding test.jsonl")
  if out.absolute() == workdir.absolute():
    raise ValueError(f"--out {out} is the run's own workdir; give a new folder")
  if raw["mode"] == "seeds":
    return _study(workdir, raw, data_dir, out)
  config = config_lib.from_dict(raw)
  scored = _on(raw, data_dir)
  run_data = data.DataSpec.of(config)
  scored_data = dataclasses.replace(run_data, jsonl_dir=str(data_dir), num_test=None)   # every document, reworded too
  test = data.load(scored_data, out, splits=("test",))["test"]

  setup = pipeline.Setup(config, workdir)
  splits = {**data.load(run_data, workdir, splits=("train", "validation")), "test": test}
  trained = pipeline.train_pager(setup, config, workdir, splits, restore_only=True)
  if config.text_buffer.lora_rank:   # the text buffer's own bridge, read back like the pager
    setup.text_bridge, _ = text_bridge.fit(setup, config, workdir, splits, restore_only=True)
  for name in COPIED:
    if not (workdir / name).is_file():
      raise FileNotFoundError(f"{workdir / name} not found: the run stopped after training; "
                              "its `jaxlab run` command finishes it")
  tb = setup.text_buffer(test)
  answered, timed = pipeline.answer_test(setup, config, trained, test, tb=tb)
  reworded = data_dir / data.HELD_OUT_FILE
  held = (pipeline.held_out(setup, config, scored_data, out, trained, tb)
          if config.eval.held_out_wordings and reworded.is_file() else None)
  if jax.process_index() != 0:
    return None
  out.mkdir(parents=True, exist_ok=True)
  (out / "config.json").write_text(json.dumps(scored, indent=1, sort_keys=True) + "\n")
  trained_on = {r["document"] for r in splits["train"]}
  documents = {r["document"] for r in test}
  probes = sum(bool(r.get("probe")) for r in test)
  (out / "evaluated.json").write_text(json.dumps({
      "workdir": str(workdir.absolute()), "data_dir": str(data_dir),
      "test_sha256": hashlib.sha256(test_path.read_bytes()).hexdigest(),
      "questions": len(test) - probes, "probes": probes, "documents": len(documents),
      "documents_in_training": len(documents & trained_on)}, indent=1) + "\n")
  for name in COPIED:
    shutil.copyfile(workdir / name, out / name)
  if held is not None:
    pipeline.write_predictions(out / figures_lib.HELD_OUT, *held)
  pipeline.write_test(out, test, answered, timed)
  return pager_report.write(out)


def _study(workdir: Path, raw: dict, data_dir: Path, out: Path) -> Path | None:
  """A finished `seeds` study scored on DIR: each training seed's run by `evaluate`, then the study's
  config (with `data.jsonl_dir` set to DIR) and its grading over seeds."""
  for s in raw["seeds"]["train_seeds"]:
    evaluate(seeds.seed_dir(workdir, s), data_dir, seeds.seed_dir(out, s))
  if jax.process_index() != 0:
    return None
  (out / "config.json").write_text(json.dumps(_on(raw, data_dir), indent=1, sort_keys=True) + "\n")
  return seeds.report(out)


def _on(raw: dict, data_dir: Path) -> dict:
  """The run's config as scored on DIR: `data.jsonl_dir` set to it."""
  return {**raw, "data": {**raw["data"], "jsonl_dir": str(data_dir)}}
