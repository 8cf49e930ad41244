"""Questions for the latent-pager comparison: the synthetic long-document QA set (TFDS) or local
JSONL files in the published schema, plus the consistency probes.

Synthetic: `jaxlab.data.long_doc_qa` is built (offline, deterministic) with the config's
document lengths, chunk size (words, which sets how far apart multi-hop evidence lies),
distractor ratio and horizon. JSONL: `data.jsonl_dir` holds train.jsonl, validation.jsonl and
test.jsonl, read by `jaxlab.data.jsonl.read_jsonl` (a malformed line names file and line);
`export_jsonl` writes a run's own splits in that layout, and `export_test` a config's test world
(`jaxlab data`: a folder for `jaxlab eval --data`).

Test world: `data.test_seed` >= 0 draws the synthetic test split from its own world seed while
train and validation stay the run's (`seed`); -1 is the run's seed, the data of runs before the field.

Held-out wording (`load_held_out`): the run's test split with each question worded by the held-out
templates of its relation or chain (`lexicon.HELD_OUT_*_QUESTIONS`, never in training data), the
same documents, gold answers and ids otherwise.

Training wordings: `data.train_wordings` = k > 1 words each synthetic training question in one of
the first k training wordings (`lexicon.TRAINING_WORDINGS`); validation and test never use them.

Consistency probes (synthetic test set only): for each multi-hop question, its second hop asked
directly about the true bridge entity ("Where is Corvin Systems headquartered?" beside "Where is
the organisation that Mara Okafor works for headquartered?"). Both have the same gold answer on
the same document, so a consistent reader answers both alike. Probes are marked `probe` and kept
out of every other metric.
"""

from __future__ import annotations

import dataclasses
import json
import re
import string
import tempfile
from pathlib import Path

from jaxlab.core import checkpoint
from jaxlab.core.config import repo_path
from jaxlab.data import jsonl, lexicon, long_doc_qa

SPLITS = ("train", "validation", "test")


def _template_regex(template: str, fixed: dict[str, str]) -> re.Pattern:
  """A fact or question template as a regex: {s} captured (repeats must match the first), the
  fields in `fixed` literal, {a} an article."""
  out, seen_s = "", False
  for literal, field, _, _ in string.Formatter().parse(template):
    out += re.escape(literal)
    if field == "s":
      out += "(?P=s)" if seen_s else "(?P<s>.+?)"
      seen_s = True
    elif field == "a":
      out += "(?:a|an)"
    elif field is not None:
      out += re.escape(fixed[field])
  return re.compile(out, re.IGNORECASE)


def probe(record: dict, wording: str = "train") -> dict | None:
  """The second hop of a synthetic multi-hop record as its own question, or None. `wording` names
  the templates the record's question was written in (a key of `lexicon.QUESTION_WORDINGS`); the
  probe is asked in the same wording, so a held-out record's probe is held out too."""
  if record["task_type"] != "multi_hop" or len(record.get("evidence", [])) != 2:
    return None
  single, multi = lexicon.QUESTION_WORDINGS[wording]
  for (_, second), question in multi.items():
    if not _template_regex(question, {}).fullmatch(record["question"]):
      continue
    for template in lexicon.FACT_TEMPLATES[second]:
      m = _template_regex(template, {"o": record["gold_answer"]}).fullmatch(record["evidence"][1])
      if m:
        bridge = m.group("s")
        # A sentence-initial capital comes from rendering, not from the name.
        bridge = bridge if bridge in record["document"] else bridge[0].lower() + bridge[1:]
        return {"id": record["id"] + "-probe", "document": record["document"],
                "question": single[second].format(s=bridge),
                "gold_answer": record["gold_answer"], "task_type": "single_fact", "probe": True}
  return None


ABSTENTION_KNOBS = ("unanswerable_fraction", "abstain_answer", "questions_per_document")
# Builder knobs named in a builder's name only when set away from their defaults, so data built
# before a knob existed keeps its name.
OPTIONAL_KNOBS = ABSTENTION_KNOBS + ("question_wording", "train_wordings")
OPTIONAL_DEFAULTS = {k: long_doc_qa.LongDocQAConfig.__dataclass_fields__[k].default for k in OPTIONAL_KNOBS}


@dataclasses.dataclass(frozen=True)
class DataSpec:
  """Where a run's questions come from: `data.*` and the run's `seed`, read once from its config
  (`of`). Values keep the config's types, since the builder's name is a fingerprint of them."""
  seed: int                 # the world of train and validation
  test_seed: int            # -1: the run's seed (`data.test_seed`; absent in configs written before it)
  jsonl_dir: str            # "": the synthetic set
  tfds_dir: str             # "": WORKDIR/tfds
  min_tokens: int
  max_tokens: int
  distractor_ratio: float
  chunk_words: int
  horizon: float            # < 0: a horizon per example
  num_train: int | None     # documents per split (None: all)
  num_validation: int | None
  num_test: int | None
  unanswerable_fraction: float
  abstain_answer: str
  questions_per_document: int
  question_wording: str
  train_wordings: int

  @classmethod
  def of(cls, config) -> DataSpec:
    d = config.data.to_dict()
    return cls(seed=config.seed, test_seed=d.get("test_seed", -1), jsonl_dir=d.get("jsonl_dir", ""),
               tfds_dir=d.get("tfds_dir", ""), **{k: d[k] for k in KNOBS},
               **{k: d.get(k, OPTIONAL_DEFAULTS[k]) for k in OPTIONAL_KNOBS})


KNOBS = ("min_tokens", "max_tokens", "distractor_ratio", "chunk_words", "horizon", "num_train", "num_validation",
         "num_test")


def synthetic_config(spec: DataSpec, seed: int | None = None, **override) -> long_doc_qa.LongDocQAConfig:
  """The TFDS config of the run's synthetic set (`seed`: the world seed, None for the run's `seed`;
  `override`: data fields replaced, e.g. a context-rot cell's distractor ratio and horizon, or the
  builder's `question_wording`). The name is a fingerprint of what fixes the records."""
  d = dataclasses.asdict(dataclasses.replace(spec, **override))
  seed = spec.seed if seed is None else seed
  knobs = {k: d[k] for k in KNOBS if k != "horizon"}
  extra = {k: d[k] for k in OPTIONAL_KNOBS if d[k] != OPTIONAL_DEFAULTS[k]}
  name = "latent_pager_" + checkpoint.fingerprint({"seed": seed, **knobs, "horizon": d["horizon"], **extra})
  return long_doc_qa.LongDocQAConfig(
      name=name, min_tokens=d["min_tokens"], max_tokens=d["max_tokens"], distractor_ratio=d["distractor_ratio"],
      horizon=None if d["horizon"] < 0 else d["horizon"], chunk_tokens=d["chunk_words"], num_train=d["num_train"],
      num_validation=d["num_validation"], num_test=d["num_test"], seed=seed,
      unanswerable_fraction=d["unanswerable_fraction"], abstain_answer=d["abstain_answer"],
      questions_per_document=d["questions_per_document"], question_wording=d["question_wording"],
      train_wordings=d["train_wordings"])


def _test_seed(spec: DataSpec) -> int:
  """The world seed of the test split: `data.test_seed`, or the run's `seed` where it is -1."""
  return spec.seed if spec.test_seed < 0 else spec.test_seed


def test_config(spec: DataSpec, question_wording: str = "train", **override) -> long_doc_qa.LongDocQAConfig:
  """The TFDS config whose test split the run is scored on: the run's own (`synthetic_config`) when
  the test world is the run's and the wording the training one; otherwise a config of the test
  seed and `question_wording` whose train and validation splits are one document each (never read),
  so it is one builder whatever `data.train_wordings` is."""
  seed = _test_seed(spec)
  if seed == spec.seed and question_wording == "train":
    return synthetic_config(spec, **override)
  return synthetic_config(spec, seed=seed, **{**override, "num_train": 1, "num_validation": 1,
                                              "question_wording": question_wording, "train_wordings": 1})


def test_world(spec: DataSpec, **override) -> dict:
  """The world the run's test split comes from: {"seed", "builder"} (the TFDS config name); for
  JSONL data, the folder's world.json (`export_jsonl`), or both None."""
  if spec.jsonl_dir:
    path = repo_path(spec.jsonl_dir) / WORLD_FILE
    return json.loads(path.read_text()) if path.is_file() else {"seed": None, "builder": None}
  return {"seed": _test_seed(spec), "builder": test_config(spec, **override).name}


def _tfds_dir(spec: DataSpec, workdir: Path) -> str:
  return str(repo_path(spec.tfds_dir) if spec.tfds_dir else Path(workdir) / "tfds")


def _read(builder_config: long_doc_qa.LongDocQAConfig, data_dir: str, splits) -> dict[str, list[dict]]:
  """{split: records in id order} of a synthetic builder config, built first where it is not yet."""
  source = long_doc_qa.build(builder_config, data_dir).as_data_source()
  return {s: sorted((long_doc_qa.decode_example(source[s][i]) for i in range(len(source[s]))), key=lambda r: r["id"])
          for s in splits}


def _first_documents(records: list[dict], n: int | None) -> list[dict]:
  """The records of the first `n` documents (None: all); a document may carry several questions."""
  keep = set(list(dict.fromkeys(r["document"] for r in records))[:n])
  return [r for r in records if r["document"] in keep]


def load(spec: DataSpec, workdir: Path, splits=SPLITS, **override) -> dict[str, list[dict]]:
  """{split: records} of `splits` (JSONL: only their files are read); the test split ends with its
  consistency probes. The synthetic set is built under data.tfds_dir ("" = WORKDIR/tfds), its test
  split from the test world (`test_config`). `num_*` count documents (an override of None keeps
  them all): a training document may carry `questions_per_document` questions."""
  if spec.jsonl_dir:
    out = {s: jsonl.read_jsonl(repo_path(spec.jsonl_dir) / f"{s}.jsonl") for s in splits}
  else:
    run_config, test = synthetic_config(spec, **override), test_config(spec, **override)
    own = [s for s in splits if s != "test" or test.name == run_config.name]
    out = _read(run_config, _tfds_dir(spec, workdir), own) if own else {}
    if len(own) < len(splits):
      out["test"] = _read(test, _tfds_dir(spec, workdir), ("test",))["test"]
    out = {s: out[s] for s in splits}
  for split, n in zip(SPLITS, (spec.num_train, spec.num_validation, spec.num_test)):
    if split in out:
      out[split] = _first_documents(out[split], override.get(f"num_{split}", n))
  if "test" in out:
    out["test"] = out["test"] + [p for p in map(probe, out["test"]) if p is not None]
  return out


WORLD_FILE, HELD_OUT_FILE = "world.json", "held_out.jsonl"   # beside a JSONL folder's splits


def load_held_out(spec: DataSpec, workdir: Path, **override) -> list[dict]:
  """The run's test split (from its test world) with every question, unanswerable ones included,
  worded by the held-out templates, followed by its consistency probes, asked in the held-out
  wording too (same ids, bridges and gold answers as the original probes). The documents, gold
  answers, ids, task types and `answerable` flags are those of `load(...)["test"]`. JSONL data:
  `data.jsonl_dir`/held_out.jsonl (as `export_jsonl` writes it)."""
  if spec.jsonl_dir:
    path = repo_path(spec.jsonl_dir) / HELD_OUT_FILE
    if not path.is_file():
      raise FileNotFoundError(f"{path} not found: held-out wordings of JSONL data are a held_out.jsonl beside "
                              "test.jsonl")
    test = jsonl.read_jsonl(path)
  else:
    test = _read(test_config(spec, "held_out", **override), _tfds_dir(spec, workdir), ("test",))["test"]
  test = _first_documents(test, override.get("num_test", spec.num_test))
  return test + [p for p in (probe(r, "held_out") for r in test) if p is not None]


def export_jsonl(splits: dict[str, list[dict]], folder: str | Path, world: dict | None = None,
                 held_out: list[dict] | None = None) -> Path:
  """Writes each split as `folder/{split}.jsonl` in the layout `data.jsonl_dir` reads, the
  consistency probes left out (loading appends them again); with `world` (`test_world`) also
  world.json, so a run reading the folder names the world its test split came from, and with
  `held_out` (`load_held_out`) held_out.jsonl. Returns the folder."""
  folder = Path(folder)
  folder.mkdir(parents=True, exist_ok=True)
  for split, records in splits.items():
    jsonl.write_jsonl([r for r in records if not r.get("probe")], folder / f"{split}.jsonl")
  if held_out is not None:
    jsonl.write_jsonl([r for r in held_out if not r.get("probe")], folder / HELD_OUT_FILE)
  if world is not None:
    (folder / WORLD_FILE).write_text(json.dumps(world, indent=1, sort_keys=True) + "\n")
  return folder


def export_test(config, folder: str | Path) -> Path:
  """The config's test split (from its test world, `data.test_seed`: `data.num_test` documents),
  the same questions in the held-out wordings, and world.json, written to `folder` in the layout
  `jaxlab eval --data` reads (`export_jsonl`). The synthetic set is built under `data.tfds_dir`, or
  in a temporary folder where that is "". Returns the folder."""
  spec = DataSpec.of(config)
  if spec.jsonl_dir:
    raise ValueError(f"the config reads JSONL data already (data.jsonl_dir = {spec.jsonl_dir!r}): nothing to write")
  with tempfile.TemporaryDirectory(prefix="jaxlab-data-") as scratch:
    workdir = Path(scratch)   # only where the synthetic set is built when data.tfds_dir is ""
    return export_jsonl(load(spec, workdir, splits=("test",)), folder, world=test_world(spec),
                        held_out=load_held_out(spec, workdir))
