"""Latent Pager Memory against the text buffer as a jaxlab experiment: validate, run, report
(latent-pager.md).

`config.mode` picks the program:
- `compare`: load the frozen LM, the questions and the page inputs; fine-tune the pager on QA
  (from a pretrained encoder when `pager.init` names one; best by validation F1); answer the
  validation and test questions with the pager, the text buffer and (where the document fits the
  LM's window) the full-context reference, each with its confidence; time a subset; write
  predictions.jsonl, validation.jsonl, history.json and timing.json. `report` rebuilds
  summary.json (thresholds chosen on validation, every figure, paired bootstraps, the headline),
  report.md and the plots from them.
- `pretrain`: pretrain the encoder (`pretrain.py`) and export it to WORKDIR/encoder.
- `frontier`: the compression sweep (`frontier.py`).
- `rot`: the context-rot grid on a trained pager (`rot.py`).
- `seeds`: `compare` once per training seed (`seeds.py`).
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp

from jaxlab.core import mesh as mesh_lib
from jaxlab.core.config import (ConfigError, int_at_least, is_non_negative, is_positive, is_probability, repo_path,
                                require, require_int, tuple_of)
from jaxlab.lm import checkpoint_io, tokenizer as tok_lib
from jaxlab.paging import (analysis, data, generation, pages, pager as pager_lib, pretrain, text_buffer, timing,
                           train)
from jaxlab.paging.model import ENCODERS

DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}
MODES = ("compare", "pretrain", "frontier", "rot", "seeds")


def validate(config) -> None:
  require(config, "mode", lambda v: v in MODES, f"one of {MODES}")
  require_int(config, "seed", 0)
  require(config, "model.path", lambda v: isinstance(v, str) and v, "a checkpoint folder")
  require(config, "model.dtype", lambda v: v in DTYPES, f"one of {sorted(DTYPES)}")
  for field in ("model.eos_token", "model.pad_token"):
    require(config, field, lambda v: isinstance(v, str) and v, "a token of the tokenizer")
  require_int(config, "model.context_tokens", 8)
  d = config.data
  for field in ("num_train", "num_validation", "num_test", "questions_per_document"):
    require_int(config, f"data.{field}", 1)
  require(config, "data.unanswerable_fraction", lambda v: is_probability(v) and v < 1, "in [0, 1)")
  require(config, "data.abstain_answer", lambda v: isinstance(v, str) and v.strip(), "a non-empty string")
  if not d.jsonl_dir:
    require_int(config, "data.min_tokens", 1)
    require(config, "data.max_tokens", lambda v: isinstance(v, int) and v >= d.min_tokens, ">= data.min_tokens")
    require_int(config, "data.chunk_words", 1)
    require(config, "data.distractor_ratio", is_probability, "in [0, 1]")
    require(config, "data.horizon", lambda v: v == -1 or is_probability(v), "in [0, 1], or -1 for random")
  p = config.pages
  require(config, "pages.hidden_layers", tuple_of(None, int_at_least(0)),
          "a non-empty tuple of hidden-state indices (0 = embeddings)")
  require(config, "pages.pooling", lambda v: v in pages.POOLINGS, f"one of {pages.POOLINGS}")
  require_int(config, "pages.chunk_tokens", 2)
  require(config, "pages.chunk_overlap", lambda v: isinstance(v, int) and 0 <= v < p.chunk_tokens,
          "an integer in [0, pages.chunk_tokens)")
  require_int(config, "pages.batch_size", 1)
  require_int(config, "pages.max_pages", 0, "0: the most chunks of any document")
  g = config.pager
  require(config, "pager.encoder", lambda v: v in ENCODERS, f"one of {ENCODERS}")
  for field in ("compressor_hidden", "d_page", "num_soft_tokens", "heads", "ffn", "slots_per_chunk",
                "encoder_depth", "lora_rank"):
    require_int(config, f"pager.{field}", 1)
  require_int(config, "pager.depth", 1 if g.encoder == "pooled" else 0,
              "0 (pages are the soft tokens) is for slots and icae")
  require_int(config, "pager.decoder_lora_rank", 0)
  require(config, "pager.dropout", lambda v: is_probability(v) and v < 1, "in [0, 1)")
  require(config, "pager.init", lambda v: v == "" or g.encoder != "pooled", "'' for the pooled encoder")
  if g.encoder != "pooled" and g.depth == 0 and p.max_pages == 0 and config.mode != "pretrain":
    raise ConfigError("pages.max_pages", "must be set (> 0) when pages are the soft tokens (pager.depth = 0)")
  require_int(config, "sufficiency.hidden", 1)
  require(config, "sufficiency.loss_weight", is_non_negative, ">= 0")
  for field in ("epochs", "batch_size", "questions_per_row"):
    require_int(config, f"train.{field}", 1)
  require_int(config, "train.eval_every", 0, "0: after each epoch")
  require_int(config, "train.steps", 0, "0: train.epochs x the rows per epoch")
  require_int(config, "train.warmup_steps", 0)
  for field in ("learning_rate", "clip_norm"):
    require(config, f"train.{field}", is_positive, "positive")
  require(config, "train.weight_decay", is_non_negative, ">= 0")
  require_int(config, "train.seed", -1, "-1: the run's seed")
  require(config, "seeds.train_seeds", lambda v: tuple_of(None, int_at_least(0))(v) and len(set(v)) == len(v),
          "a tuple of distinct non-negative training seeds")
  t = config.pretrain
  for field in ("documents", "eval_documents", "steps", "batch_size", "eval_every"):
    require_int(config, f"pretrain.{field}", 1)
  require_int(config, "pretrain.seed", 0)
  require_int(config, "pretrain.warmup_steps", 0)
  for field in ("learning_rate", "clip_norm"):
    require(config, f"pretrain.{field}", is_positive, "positive")
  for field in ("weight_decay", "ae_weight", "continuation_weight", "qa_weight"):
    require(config, f"pretrain.{field}", is_non_negative, ">= 0")
  if config.mode == "pretrain" and g.encoder == "pooled":
    raise ConfigError("pager.encoder", "pretraining needs a slots or icae encoder (pooled pages are one vector)")
  require_int(config, "generation.max_new_tokens", 1)
  require(config, "generation.repetition_penalty", is_positive, "positive (1.0: none)")
  require_int(config, "text_buffer.extract_max_tokens", 1)
  require(config, "text_buffer.extract_repetition_penalty", is_positive, "positive (1.0: none)")
  require_int(config, "text_buffer.max_context_tokens", 1)
  for field, slot in (("extract", "chunk"), ("answer", "context"), ("pager", "question")):
    require(config, f"prompts.{field}", lambda v, s=slot: "{" + s + "}" in v, f"a template with {{{slot}}}")
  require(config, "prompts.answer", lambda v: "{question}" in v, "a template with {question}")
  require_int(config, "eval.batch_size", 1)
  require_int(config, "eval.latency_questions", 2, "one warm-up question is timed apart")
  require_int(config, "eval.bootstrap", 100)
  require(config, "eval.pager_confidence", lambda v: v in pager_lib.CONFIDENCES, f"one of {pager_lib.CONFIDENCES}")
  require(config, "eval.pager_confidence", lambda v: v != "head+answer" or config.sufficiency.enabled,
          "'head' or 'answer' without the sufficiency head (sufficiency.enabled)")
  f = config.frontier
  require(config, "frontier.encoders", tuple_of(None, lambda e: e in ENCODERS), f"a tuple of {ENCODERS}")
  for field in ("slots_per_chunk", "pointer_slots_per_chunk", "icae_slots_per_chunk"):
    require(config, f"frontier.{field}", tuple_of(None, int_at_least(1)), "a tuple of positive integers")
  require(config, "frontier.hidden_layers", tuple_of(None, tuple_of(None, int_at_least(0))),
          "a tuple of layer tuples")
  require(config, "frontier.depths", tuple_of(None, int_at_least(0)), "a tuple of aggregator depths (0: none)")
  for field in ("pretrain_steps", "train_steps", "num_train", "num_validation", "num_test"):
    require_int(config, f"frontier.{field}", 1)
  r = config.rot
  for field in ("distractor_ratios", "horizons"):
    require(config, f"rot.{field}", tuple_of(None, is_probability), "a tuple in [0, 1]")
  require_int(config, "rot.questions_per_cell", 1)
  del f, r, t


def token_id(tokenizer, config, field: str) -> int:
  token = config.model[field]
  i = tokenizer.token_to_id(token)
  if i is None:
    raise ConfigError(f"model.{field}", f"{token!r} is not in {config.model.path}/tokenizer.json")
  return i


class Setup:
  """What every mode loads: the mesh, the frozen LM, its tokenizer and the shared settings."""

  def __init__(self, config, workdir: Path):
    self.config, self.workdir = config, workdir
    self.mesh = mesh_lib.training_mesh(config.mesh)
    self.lm = checkpoint_io.load(repo_path(config.model.path), dtype=DTYPES[config.model.dtype], mesh=self.mesh)
    self.tokenizer = tok_lib.load_tokenizer(repo_path(config.model.path))
    self.eos, self.pad = token_id(self.tokenizer, config, "eos_token"), token_id(self.tokenizer, config, "pad_token")
    self.settings = generation.settings_from(config, self.eos, self.pad)
    self.abstain = generation.abstain_from(self.tokenizer, config.data.abstain_answer)
    store_dir = repo_path(config.pages.store_dir) if config.pages.store_dir else workdir / "page_store"
    self.store = pages.PageStore(store_dir, self.lm, self.tokenizer, pages.settings_from(config),
                                 pages.model_fingerprint(repo_path(config.model.path)), self.pad)

  def documents(self, config, documents: list[str], desc: str = "pages") -> pager_lib.Documents:
    return pager_lib.Documents(config.pager.encoder, self.store, documents, desc=desc)

  def text_buffer(self, records) -> text_buffer.TextBuffer:
    c, t = self.config, self.config.text_buffer
    extract = generation.Settings(t.extract_max_tokens, float(t.extract_repetition_penalty), self.eos, self.pad,
                                  self.settings.truncate_repeats)
    width = text_buffer.answer_width(self.tokenizer, c.prompts.answer, t.max_context_tokens, records)
    return text_buffer.TextBuffer(self.lm, self.tokenizer, self.store, self.settings, extract, dict(c.prompts),
                                  t.separator, t.max_context_tokens, c.eval.batch_size, width, self.abstain)


def train_pager(setup: Setup, config, workdir: Path, splits: dict) -> dict:
  """QA fine-tuning; {"graphdef", "params", "history", "docs": {split: Documents}, "max_pages", "q_width"}."""
  c = config
  docs_for = lambda desc: (lambda documents: setup.documents(c, documents, desc))
  per_row = c.train.questions_per_row
  tr = train.Split.of(splits["train"], docs_for("pages (train)"), setup.tokenizer, c.prompts.pager, setup.eos,
                      per_row, c.data.abstain_answer)
  va = train.Split.of(splits["validation"], docs_for("pages (validation)"), setup.tokenizer, c.prompts.pager,
                      setup.eos, 1, c.data.abstain_answer)
  every = [r for recs in splits.values() for r in recs]
  max_pages = c.pages.max_pages or max(len(setup.store.chunks(d)) for d in {r["document"] for r in every})
  q_width = pager_lib.question_width(setup.tokenizer, c.prompts.pager, every)
  init = pretrain.load(repo_path(c.pager.init), c) if c.pager.init else None
  graphdef, params, history = train.fit(c, workdir, setup.lm, setup.tokenizer, tr, va, max_pages=max_pages,
                                        q_width=q_width, settings=setup.settings, pad_id=setup.pad, mesh=setup.mesh,
                                        abstain=setup.abstain, init_params=init)
  return {"graphdef": graphdef, "params": params, "history": history, "max_pages": max_pages, "q_width": q_width,
          "validation_docs": va.docs}


ALL_SYSTEMS = ("latent_pager", "text_buffer", "full_context")


def answer_split(setup: Setup, config, trained: dict | None, records: list[dict], docs=None, tb=None,
                 systems=ALL_SYSTEMS) -> dict:
  """Each system's answers and confidences on `records`: {system: {"answers", "confidence"}}
  (the full context only when `eval.full_context`)."""
  c, out = config, {}
  if "latent_pager" in systems:
    docs = docs or setup.documents(c, [r["document"] for r in records])
    answers, conf = pager_lib.answer(setup.lm, setup.tokenizer, trained["graphdef"], trained["params"], docs,
                                     list(range(len(records))), [r["question"] for r in records], c.prompts.pager,
                                     max_pages=trained["max_pages"], width=trained["q_width"], settings=setup.settings,
                                     batch_size=c.eval.batch_size, abstain=setup.abstain,
                                     confidence=c.eval.pager_confidence)
    out["latent_pager"] = {"answers": answers, "confidence": None if conf is None else conf.tolist()}
  tb = tb or setup.text_buffer(records)
  if "text_buffer" in systems:
    answers, conf = tb.answer(records)
    out["text_buffer"] = {"answers": answers, "confidence": conf.tolist()}
  if "full_context" in systems and c.eval.full_context:
    # The frozen LM with the answer settings: the text buffer's answerer, on the whole document.
    answers, conf = text_buffer.full_context(tb.answerer, setup.tokenizer, records, c.prompts.answer,
                                             c.model.context_tokens, c.eval.batch_size, setup.abstain)
    out["full_context"] = {"answers": answers, "confidence": conf}
  return out


def write_predictions(path: Path, records: list[dict], answered: dict) -> None:
  with open(path, "w") as f:
    for i, r in enumerate(records):
      row = {k: r[k] for k in ("id", "document", "question", "gold_answer", "task_type")}
      row.update(probe=bool(r.get("probe")), answerable=bool(r.get("answerable", True)),
                 answers={s: a["answers"][i] for s, a in answered.items()},
                 confidence={s: (None if a["confidence"] is None else a["confidence"][i]) for s, a in answered.items()})
      f.write(json.dumps(row) + "\n")


def compare(config, workdir: Path):
  setup = Setup(config, workdir)
  splits = data.load(config, workdir)
  trained = train_pager(setup, config, workdir, splits)
  val = answer_split(setup, config, trained, splits["validation"], docs=trained["validation_docs"])
  test = splits["test"]
  tb = setup.text_buffer(test)
  answered = answer_split(setup, config, trained, test, tb=tb)
  timed = [r for r in test if not r.get("probe")][:config.eval.latency_questions]
  measured = timing.measure(setup, config, trained, tb, timed)
  if jax.process_index() != 0:
    return None
  write_predictions(workdir / "validation.jsonl", splits["validation"], val)
  write_predictions(workdir / "predictions.jsonl", test, answered)
  (workdir / "history.json").write_text(json.dumps(trained["history"], indent=1) + "\n")
  (workdir / "timing.json").write_text(json.dumps({**measured, "documents_computed": setup.store.computed,
                                                   "max_pages": trained["max_pages"]}, indent=1) + "\n")
  return report(workdir)


def run(config, workdir):
  workdir = Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  try:
    return _run(config, workdir)
  except train.Stopped as stop:
    print(stop)
    return None


def _run(config, workdir: Path):
  if config.mode == "compare":
    return compare(config, workdir)
  if config.mode == "pretrain":
    from jaxlab.paging import pretrain_report
    setup = Setup(config, workdir)
    pretrain.run(config, workdir, setup.lm, setup.tokenizer, setup.store, setup.eos, setup.mesh)
    return pretrain_report.write(workdir) if jax.process_index() == 0 else None
  if config.mode == "frontier":
    from jaxlab.paging import frontier
    return frontier.run(config, workdir, Setup(config, workdir))
  if config.mode == "seeds":
    from jaxlab.paging import seeds
    return seeds.run(config, workdir)
  from jaxlab.paging import rot
  return rot.run(config, workdir)


def report(workdir):
  workdir = Path(workdir)
  mode = json.loads((workdir / "config.json").read_text()).get("mode", "compare")
  if mode == "pretrain":
    from jaxlab.paging import pretrain_report
    return pretrain_report.write(workdir)
  if mode == "frontier":
    from jaxlab.paging import frontier
    return frontier.report(workdir)
  if mode == "seeds":
    from jaxlab.paging import seeds
    return seeds.report(workdir)
  if mode == "rot":
    from jaxlab.paging import rot
    return rot.report(workdir)
  return analysis.write(workdir)
