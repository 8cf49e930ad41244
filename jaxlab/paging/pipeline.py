"""What every latent-pager mode is built from: `Setup` (the mesh, the frozen LM, its tokenizer, the
page store and the shared generation settings), the pager's QA fine-tuning (`train_pager`), every
system's answers on a split (`answer_split`), the test answers with their timing (`answer_test`),
the predictions file, and `compare`, the mode the others repeat (`seeds`), sweep (`frontier`) or
read back (`rot`, and `evaluate` on other data)."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp

from jaxlab.core import mesh as mesh_lib
from jaxlab.core.config import ConfigError, repo_path
from jaxlab.data import lexicon
from jaxlab.lm import checkpoint_io, tokenizer as tok_lib
from jaxlab.paging import (bar as bar_lib, data, figures as figures_lib, generation, grounding, pages,
                           pager as pager_lib, pretrain, reporting as pager_report, text_bridge, text_buffer,
                           timing, train)

DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}


def token_id(tokenizer, config, field: str) -> int:
  token = config.model[field]
  i = tokenizer.token_to_id(token)
  if i is None:
    raise ConfigError(f"model.{field}", f"{token!r} is not in {config.model.path}/tokenizer.json")
  return i


def check_wordings(tokenizer, config) -> None:
  """Every word of the training wordings a run draws from (`data.train_wordings`) is in the LM's
  vocabulary: a word-level base model reads another's composed wordings as unknown tokens."""
  unk = tokenizer.token_to_id("<unk>")
  if unk is None:
    return
  for wording in lexicon.TRAINING_WORDINGS[:config.data.train_wordings]:
    for table in lexicon.QUESTION_WORDINGS[wording]:
      for template in table.values():
        encoding = tokenizer.encode(template.replace("{s}", " "))
        unknown = [t for t, i in zip(encoding.tokens, encoding.ids) if i == unk]
        if unknown:
          raise ConfigError("data.train_wordings", f"wording {wording!r} uses {unknown[0]!r}, which is not in "
                            f"{config.model.path}/tokenizer.json: its base model was not trained on it")


class Setup:
  """What every mode loads: the mesh, the frozen LM, its tokenizer and the shared settings."""

  def __init__(self, config, workdir: Path):
    self.config, self.workdir = config, workdir
    self.mesh = mesh_lib.training_mesh(config.mesh)
    self.lm = checkpoint_io.load(repo_path(config.model.path), dtype=DTYPES[config.model.dtype], mesh=self.mesh)
    self.tokenizer = tok_lib.load_tokenizer(repo_path(config.model.path))
    check_wordings(self.tokenizer, config)
    self.eos, self.pad = token_id(self.tokenizer, config, "eos_token"), token_id(self.tokenizer, config, "pad_token")
    self.abstain = generation.abstain_from(self.tokenizer, config.data.abstain_answer)
    self.settings = generation.settings_from(config, self.eos, self.pad, self.abstain)
    store_dir = repo_path(config.pages.store_dir) if config.pages.store_dir else workdir / "page_store"
    self.store = pages.PageStore(store_dir, self.lm, self.tokenizer, pages.settings_from(config),
                                 pages.model_fingerprint(repo_path(config.model.path)), self.pad)
    self.text_bridge = None   # the text buffer's trained LoRA bridge (`text_bridge.fit`), when it has one

  def documents(self, config, documents: list[str], desc: str = "pages") -> pager_lib.Documents:
    return pager_lib.Documents(config.pager.encoder, self.store, documents, desc=desc)

  def text_buffer(self, records, bridge=None, keep: str | None = None) -> text_buffer.TextBuffer:
    """The text buffer answering `records`, with `bridge` (default: the trained `text_bridge`, if any)
    and the budget rule `keep` (default: `text_buffer.keep`)."""
    c, t = self.config, self.config.text_buffer
    extract = generation.Settings(t.extract_max_tokens, float(t.extract_repetition_penalty), self.eos, self.pad,
                                  self.settings.truncate_repeats)
    width = text_buffer.answer_width(self.tokenizer, c.prompts.answer, t.max_context_tokens, records)
    return text_buffer.TextBuffer(self.lm, self.tokenizer, self.store, self.settings, extract, dict(c.prompts),
                                  t.separator, t.max_context_tokens, c.eval.batch_size, width, self.abstain,
                                  bridge=self.text_bridge if bridge is None else bridge,
                                  keep=t.get("keep", "") if keep is None else keep)


def train_pager(setup: Setup, config, workdir: Path, splits: dict, restore_only: bool = False) -> dict:
  """QA fine-tuning; {"graphdef", "params", "history", "docs": {split: Documents}, "max_pages", "q_width"}.
  `restore_only`: the finished run in `workdir` read back, never trained (`core.train.Unfinished`
  otherwise); the widths come from `splits`, so records to answer beyond the run's fit them."""
  c = config
  docs_for = lambda desc: (lambda documents: setup.documents(c, documents, desc))
  per_row = c.train.questions_per_row
  tr = train.Split.of(splits["train"], docs_for("pages (train)"), setup.tokenizer, c.prompts.pager, setup.eos,
                      per_row, c.data.abstain_answer)
  # Training evaluates on the first `train.eval_questions` validation questions (0: all of them).
  evaluated = splits["validation"][:c.train.get("eval_questions", 0) or None]
  va = train.Split.of(evaluated, docs_for("pages (validation)"), setup.tokenizer, c.prompts.pager,
                      setup.eos, 1, c.data.abstain_answer)
  # The page padding and question width training sees come from train and the validation it reads
  # only, never the test's: answering computes its own (`answer_split`, `fit_to`).
  max_pages = c.pages.max_pages or most_pages(setup, splits["train"] + evaluated)
  q_width = pager_lib.question_width(setup.tokenizer, c.prompts.pager, splits["train"] + evaluated)
  # Restored params replace every leaf, so a finished run is read back without its encoder folder.
  init = pretrain.load(repo_path(c.pager.init), c) if c.pager.init and not restore_only else None
  graphdef, params, history = train.fit(c, workdir, setup.lm, setup.tokenizer, tr, va, max_pages=max_pages,
                                        q_width=q_width, settings=setup.settings, pad_id=setup.pad, mesh=setup.mesh,
                                        abstain=setup.abstain, init_params=init, restore_only=restore_only)
  return {"graphdef": graphdef, "params": params, "history": history, "max_pages": max_pages, "q_width": q_width,
          "validation_docs": va.docs if len(evaluated) == len(splits["validation"]) else None}


def most_pages(setup: Setup, records: list[dict]) -> int:
  """The most chunks of any document of `records`."""
  return max(len(setup.store.chunks(d)) for d in {r["document"] for r in records})


def fit_to(setup: Setup, config, trained: dict, records: list[dict]) -> dict:
  """`trained` padding pages to `records`' longest document too where `pages.max_pages` = 0 (an
  aggregator reads any number of pages; training padded to its own splits' longest)."""
  if config.pages.max_pages or not records:
    return trained
  return {**trained, "max_pages": max(trained["max_pages"], most_pages(setup, records))}


ALL_SYSTEMS = ("latent_pager", "text_buffer", "full_context")


def answer_split(setup: Setup, config, trained: dict | None, records: list[dict], docs=None, tb=None,
                 systems=ALL_SYSTEMS) -> dict:
  """Each system's answers and confidences on `records`: {system: {"answers", "confidence"}}
  (the full context only when `eval.full_context`); with `eval.decline_unknown_names`, every
  system declines the questions that name what their document never mentions (`grounding`)."""
  c, out = config, {}
  if "latent_pager" in systems:
    trained = fit_to(setup, c, trained, records)
    docs = docs or setup.documents(c, [r["document"] for r in records])
    answers, conf = pager_lib.answer(setup.lm, setup.tokenizer, trained["graphdef"], trained["params"], docs,
                                     list(range(len(records))), [r["question"] for r in records], c.prompts.pager,
                                     max_pages=trained["max_pages"],
                                     width=max(trained["q_width"], pager_lib.question_width(
                                         setup.tokenizer, c.prompts.pager, records)), settings=setup.settings,
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
  if c.eval.get("decline_unknown_names", False):
    out = grounding.decline(out, grounding.unknown_names(records))
  return out


def write_predictions(path: Path, records: list[dict], answered: dict) -> None:
  with open(path, "w") as f:
    for i, r in enumerate(records):
      row = {k: r[k] for k in ("id", "document", "question", "gold_answer", "task_type")}
      row.update(probe=bool(r.get("probe")), answerable=bool(r.get("answerable", True)),
                 answers={s: a["answers"][i] for s, a in answered.items()},
                 confidence={s: (None if a["confidence"] is None else a["confidence"][i]) for s, a in answered.items()})
      f.write(json.dumps(row) + "\n")


def answer_test(setup: Setup, config, trained: dict, test: list[dict], tb=None) -> tuple[dict, dict]:
  """Every system's answers on the test records, and timing.json's content: `timing.served` on
  the first `eval.latency_questions` of them that are not probes. `tb`: the test's text buffer
  (made here when None)."""
  tb = tb or setup.text_buffer(test)
  trained = fit_to(setup, config, trained, test)
  answered = answer_split(setup, config, trained, test, tb=tb)
  timed = [r for r in test if not r.get("probe")][:config.eval.latency_questions]
  measured = timing.served(setup, timing.TimingSpec.of(config), trained, tb, timed)
  return answered, {**measured, "documents_computed": setup.store.computed, "max_pages": trained["max_pages"]}


def write_test(workdir: Path, test: list[dict], answered: dict, timed: dict) -> None:
  write_predictions(workdir / "predictions.jsonl", test, answered)
  (workdir / "timing.json").write_text(json.dumps(timed, indent=1) + "\n")


def compare(config, workdir: Path):
  """The `compare` mode: fine-tune the pager, answer validation and test with every system, time a
  subset, write the predictions and the report."""
  if jax.process_index() == 0:
    print(bar_lib.declared_text(config.bar.to_dict()), flush=True)   # declared before any result
  setup = Setup(config, workdir)
  spec = data.DataSpec.of(config)
  splits = data.load(spec, workdir)
  trained = train_pager(setup, config, workdir, splits)
  if config.text_buffer.lora_rank:   # every text buffer made from here on answers with it
    setup.text_bridge, _ = text_bridge.fit(setup, config, workdir, splits)
  val = answer_split(setup, config, trained, splits["validation"], docs=trained["validation_docs"])
  tb = setup.text_buffer(splits["test"])
  answered, timed = answer_test(setup, config, trained, splits["test"], tb=tb)
  held = held_out(setup, config, spec, workdir, trained, tb) if config.eval.held_out_wordings else None
  if jax.process_index() != 0:
    return None
  write_predictions(workdir / "validation.jsonl", splits["validation"], val)
  (workdir / "history.json").write_text(json.dumps(trained["history"], indent=1) + "\n")
  if held is not None:
    write_predictions(workdir / figures_lib.HELD_OUT, *held)
  write_test(workdir, splits["test"], answered, timed)
  return pager_report.write(workdir)


def held_out(setup: Setup, config, spec: data.DataSpec, workdir: Path, trained: dict, tb) -> tuple[list[dict], dict]:
  """(records, every system's answers) of the test set in the held-out wordings
  (`data.load_held_out`); the text buffer reuses the test's notes (they depend on the document
  only)."""
  records = data.load_held_out(spec, workdir)
  reworded = setup.text_buffer(records)
  reworded.buffers = dict(tb.buffers)
  return records, answer_split(setup, config, trained, records, tb=reworded)
