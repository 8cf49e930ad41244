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
- `arms`: `compare` once per arm of each system, the best of each chosen on validation (`arms.py`).
"""

from __future__ import annotations

import json
from pathlib import Path

import jax

from jaxlab.core.config import (ConfigError, import_modules, int_at_least, is_non_negative, is_positive, is_probability,
                                require, require_int, tuple_of)
from jaxlab.data import lexicon
from jaxlab.paging import (arms, encoders, expansion, frontier, generation, hybrid, pager as pager_lib, pages, pipeline,
                           pretrain, pretrain_report, references, reporting as pager_report, rot, seeds, selective,
                           text_bridge, text_buffer)
from jaxlab.paging.pipeline import DTYPES
from jaxlab.paging.spec import KEEP


def _pretrain(config, workdir: Path):
  setup = pipeline.Setup(config, workdir)
  pretrain.run(config, workdir, setup.lm, setup.tokenizer, setup.store, setup.eos, setup.mesh)
  return pretrain_report.write(workdir) if jax.process_index() == 0 else None


# mode: (run(config, workdir), report(workdir)); each mode's module builds on `pipeline`.
MODES = {
    "compare": (pipeline.compare, pager_report.write),
    "pretrain": (_pretrain, pretrain_report.write),
    "frontier": (lambda config, workdir: frontier.run(config, workdir, pipeline.Setup(config, workdir)),
                 frontier.report),
    "rot": (rot.run, rot.report),
    "seeds": (seeds.run, seeds.report),
    "arms": (arms.run, arms.report),
    "references": (references.run, references.report),
}


def validate(config) -> None:
  require(config, "mode", lambda v: v in MODES, f"one of {tuple(MODES)}")
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
  require_int(config, "data.test_seed", -1, "-1: the run's seed")
  require(config, "data.train_wordings", lambda v: int_at_least(1)(v) and v <= len(lexicon.TRAINING_WORDINGS),
          f"an integer in [1, {len(lexicon.TRAINING_WORDINGS)}] (the training wordings drawn from)")
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
  require_int(config, "pages.max_pages", 0, "0: the most chunks of a train or validation document")
  g = config.pager
  import_modules(config)
  require(config, "pager.encoder", lambda v: v in encoders.names(),
          f"one of {encoders.names()} (a module listed in `imports` can register more)")
  stored = encoders.get(g.encoder).stored_states
  for field in ("compressor_hidden", "d_page", "num_soft_tokens", "heads", "ffn", "slots_per_chunk",
                "encoder_depth", "lora_rank"):
    require_int(config, f"pager.{field}", 1)
  require_int(config, "pager.depth", 1 if stored else 0,
              "0 (pages are the soft tokens) is for slots and icae")
  require_int(config, "pager.decoder_lora_rank", 0)
  require(config, "pager.dropout", lambda v: is_probability(v) and v < 1, "in [0, 1)")
  require(config, "pager.init", lambda v: v == "" or not stored, f"'' for the {g.encoder} encoder")
  if not stored and g.depth == 0 and p.max_pages == 0 and config.mode != "pretrain":
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
  for system, table in (("pager", arms.PAGER), ("text_buffer", arms.TEXT_BUFFER)):
    require(config, f"arms.{system}", lambda v, t=table: tuple_of(None, lambda a: a in t)(v) and len(set(v)) == len(v),
            f"a tuple of distinct arms of {tuple(table)}")
  require_int(config, "arms.text_buffer_rank", 1)
  t = config.pretrain
  for field in ("documents", "eval_documents", "steps", "batch_size", "eval_every"):
    require_int(config, f"pretrain.{field}", 1)
  require_int(config, "pretrain.seed", 0)
  require_int(config, "pretrain.warmup_steps", 0)
  for field in ("learning_rate", "clip_norm"):
    require(config, f"pretrain.{field}", is_positive, "positive")
  for field in ("weight_decay", "ae_weight", "continuation_weight", "qa_weight"):
    require(config, f"pretrain.{field}", is_non_negative, ">= 0")
  if "chunks" in t:
    require(config, "pretrain.chunks", lambda v: v in ("first", "evidence"),
            '"first" (a document\'s first pages.max_pages chunks) or "evidence" (those holding its evidence, '
            'then random ones)')
  if config.mode == "pretrain" and stored:
    raise ConfigError("pager.encoder", "pretraining needs a slots or icae encoder (pooled pages are one vector)")
  if "eval_questions" in config.train:
    require_int(config, "train.eval_questions", 0, "0: every validation question")
  if "keep" in config.train:
    require(config, "train.keep", lambda v: v in KEEP, f"one of {', '.join(KEEP)}")
  require_int(config, "generation.max_new_tokens", 1)
  require(config, "generation.repetition_penalty", is_positive, "positive (1.0: none)")
  suppressed = tuple(config.generation.get("begin_suppress", ()))
  for field, names in (("begin_suppress", generation.BEGIN_SUPPRESS), ("decline", suppressed)):
    if field in config.generation:
      require(config, f"generation.{field}", lambda v, names=names: isinstance(v, (tuple, list)) and
              all(x in names for x in v), f"a tuple of names from {names} (empty: none)")
  require_int(config, "text_buffer.extract_max_tokens", 1)
  require(config, "text_buffer.extract_repetition_penalty", is_positive, "positive (1.0: none)")
  require_int(config, "text_buffer.max_context_tokens", 1)
  require_int(config, "text_buffer.lora_rank", 0, "0: the frozen LM answers")
  require(config, "text_buffer.keep", lambda v: v in text_buffer.KEEP, f"one of {text_buffer.KEEP}")
  for field in (config.text_buffer.get("train") or {}):
    where = f"text_buffer.train.{field}"
    if field not in text_bridge.OWN_SCHEDULE:
      raise ConfigError(where, f"the bridge's own schedule takes only {', '.join(text_bridge.OWN_SCHEDULE)}")
    if field == "learning_rate":
      require(config, where, is_positive, "positive")
    else:
      require_int(config, where, 1 if field == "epochs" else 0)
  for field, names in (("keep", text_buffer.KEEP), ("readers", references.READERS)):
    require(config, f"references.{field}",
            lambda v, n=names: isinstance(v, tuple) and all(x in n for x in v) and len(set(v)) == len(v)
            and (v or config.mode != "references"), f"a tuple of distinct values of {names} (non-empty in mode "
            "'references')")
  readers = tuple(config.references.readers)
  if "iterative" in readers:
    require(config, "expansion.second_query", lambda v: v in expansion.SECOND_QUERIES,
            f"one of {expansion.SECOND_QUERIES}")
    if expansion.needs_draft(config) and "expanded" not in readers[:readers.index("iterative")]:
      raise ConfigError("references.readers", "'iterative' reads the draft answers of 'expanded': list 'expanded' "
                        "before it")
  scored = [r for r in config.references.readers if r in references.SCORED]
  if scored:
    if "expansion" not in config:
      raise ConfigError("references.readers", f"{scored[0]!r} needs the scorer's `expansion` block (as `long` has)")
    require(config, "expansion.index", lambda v: v in expansion.INDEXES, f"one of {expansion.INDEXES}")
    layered = ("question_layers",) + (("second_layers",) if expansion.learned_second(config) else ()) + (
        ("key_layers",) if config.expansion.index == "states" else ())
    for field in layered:
      require(config, f"expansion.{field}", lambda v: tuple_of(None, int_at_least(0))(v) and len(v) > 0,
              "a non-empty tuple of LM layer indices (0: the embedding output)")
    for field in ("dim", "epochs", "batch_size"):
      require_int(config, f"expansion.{field}", 1)
    require_int(config, "expansion.eval_every", 0, "0: after each epoch")
    require(config, "expansion.learning_rate", is_positive, "positive")
    if stored and config.expansion.index == "pages":
      raise ConfigError("pager.encoder", "the expanded reader scores pages: it needs an encoder that keeps several "
                        "per chunk (slots, pointer, mean, icae), not pooled")
  paged = [r for r in config.references.readers if r in hybrid.READERS]
  if paged and "expansion" not in config:
    raise ConfigError("references.readers", f"{paged[0]!r} needs the `expansion` block (as `long` has)")
  if "tree" in paged:
    require_int(config, "expansion.tree_fanout", 2)
    require_int(config, "expansion.tree_depth", 1)
    require_int(config, "expansion.tree_nodes", 1)
    require(config, "pager.init", bool, "a pretrained encoder's folder: the tree reads its pages")
  if paged:
    for field in ("pager_epochs",) + (("page_chunks", "hybrid_text_chunks", "hybrid_page_chunks")
                                      if set(paged) & set(hybrid.SCORED) else ()):
      require_int(config, f"expansion.{field}", 1)
    if "pager_questions_per_document" in config.expansion:
      require_int(config, "expansion.pager_questions_per_document", 0, "0: every training question")
    if stored:
      raise ConfigError("pager.encoder", f"the {paged[0]} reader reads each chosen chunk's pages: it needs an encoder "
                        "that keeps several per chunk (slots, pointer, mean, icae), not pooled")
    for reader in paged:
      text, pages_read = hybrid.layout(config, reader)
      if reader == "tree":
        pages_read = int(config.expansion.tree_nodes)   # the top level's nodes, each a chunk's page count
      need = pages_read * config.pager.slots_per_chunk + text * config.pages.chunk_tokens
      if need + config.generation.max_new_tokens > config.model.context_tokens:
        field = {"paged": "expansion.page_chunks", "hybrid": "expansion.hybrid_page_chunks",
                 "tree": "expansion.tree_nodes"}[reader]
        raise ConfigError(field, f"the {reader} reader's {need} context vectors and {config.generation.max_new_tokens} "
                          f"answer tokens exceed the LM's window of {config.model.context_tokens}")
  for field, slot in (("extract", "chunk"), ("answer", "context"), ("pager", "question")):
    require(config, f"prompts.{field}", lambda v, s=slot: "{" + s + "}" in v, f"a template with {{{slot}}}")
  require(config, "prompts.answer", lambda v: "{question}" in v, "a template with {question}")
  require_int(config, "eval.batch_size", 1)
  require_int(config, "eval.latency_questions", 2, "timed documents: an interval needs two")
  require(config, "eval.questions_per_document_timed",
          lambda v: tuple_of(None, int_at_least(1))(v) and 1 in v and len(set(v)) == len(v),
          "a tuple of distinct question counts >= 1 holding 1 (the bar's latency part is judged at 1)")
  require_int(config, "eval.latency_repeats", 1)
  require_int(config, "eval.bootstrap", 100)
  require(config, "eval.pager_confidence", lambda v: v in pager_lib.CONFIDENCES, f"one of {pager_lib.CONFIDENCES}")
  require(config, "eval.pager_confidence", lambda v: v != "head+answer" or config.sufficiency.enabled,
          "'head' or 'answer' without the sufficiency head (sufficiency.enabled)")
  if "decline_unknown_names" in config.eval:
    require(config, "eval.decline_unknown_names", lambda v: isinstance(v, bool), "true or false")
  require(config, "eval.threshold_rule", lambda v: v in selective.RULES, f"one of {selective.RULES}")
  require(config, "eval.target_coverage", lambda v: is_probability(v) and v > 0, "in (0, 1]")
  if config.eval.threshold_rule == "recall" and "target_recall" not in config.eval:
    raise ConfigError("eval.threshold_rule", "is 'recall', and this config has no eval.target_recall "
                      "(use a variant that sets it, e.g. cpu_detect)")
  if "target_recall" in config.eval:
    require(config, "eval.target_recall", lambda v: is_probability(v) and v > 0,
            "in (0, 1]: the share of unanswerable validation questions the rule 'recall' abstains on")
  require(config, "eval.coverages", tuple_of(None, lambda v: is_probability(v) and v > 0),
          "a tuple of shares in (0, 1]")
  require(config, "eval.held_out_wordings", lambda v: isinstance(v, bool),
          "True or False (JSONL data: True reads held_out.jsonl beside test.jsonl)")
  for field in ("f1_margin", "hallucination_margin", "wording_margin"):
    require(config, f"bar.{field}", is_non_negative, ">= 0")
  require(config, "bar.coverage", lambda v: v in tuple(config.eval.coverages), "one of eval.coverages")
  require(config, "bar.speedup", is_positive, "positive")
  f = config.frontier
  require(config, "frontier.encoders", tuple_of(None, lambda e: e in encoders.names()),
          f"a tuple of {encoders.names()}")
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


def run(config, workdir):
  workdir = Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  return MODES[config.mode][0](config, workdir)


def report(workdir):
  workdir = Path(workdir)
  mode = json.loads((workdir / "config.json").read_text()).get("mode", "compare")
  return MODES[mode][1](workdir)
