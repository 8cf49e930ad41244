"""Latent Pager Memory against the text buffer as a jaxlab experiment: validate, run, report
(latent-pager.md; issue 8).

run: load the frozen LM and its tokenizer, the questions (synthetic TFDS set or JSONL), the
pooled chunk states of every document (page store), train the pager (best by validation F1), answer
the test questions with both systems under the same generation settings, time a subset, and write
predictions.jsonl, history.json and timing.json; report rebuilds summary.json, report.md and the
training-curve plot from them.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp

from jaxlab.core import mesh as mesh_lib
from jaxlab.core.config import ConfigError, require, require_int
from jaxlab.lm import checkpoint_io, tokenizer as tok_lib
from jaxlab.paging import analysis, data, generation, pager as pager_lib, pages, text_buffer, timing, train

DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}


def _positive(v):
  return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0


def validate(config) -> None:
  require_int(config, "seed", 0)
  require(config, "model.path", lambda v: isinstance(v, str) and v, "a checkpoint folder")
  require(config, "model.dtype", lambda v: v in DTYPES, f"one of {sorted(DTYPES)}")
  for field in ("model.eos_token", "model.pad_token"):
    require(config, field, lambda v: isinstance(v, str) and v, "a token of the tokenizer")
  d = config.data
  for field in ("num_train", "num_validation", "num_test"):
    require_int(config, f"data.{field}", 1)
  if not d.jsonl_dir:
    require_int(config, "data.min_tokens", 1)
    require(config, "data.max_tokens", lambda v: isinstance(v, int) and v >= d.min_tokens, ">= data.min_tokens")
    require_int(config, "data.chunk_words", 1)
    require(config, "data.distractor_ratio", lambda v: 0 <= v <= 1, "in [0, 1]")
    require(config, "data.horizon", lambda v: v == -1 or 0 <= v <= 1, "in [0, 1], or -1 for random")
  p = config.pages
  require(config, "pages.hidden_layers", lambda v: len(v) > 0 and all(isinstance(i, int) for i in v),
          "a non-empty tuple of hidden-state indices (0 = embeddings)")
  require(config, "pages.pooling", lambda v: v in pages.POOLINGS, f"one of {pages.POOLINGS}")
  require_int(config, "pages.chunk_tokens", 2)
  require(config, "pages.chunk_overlap", lambda v: isinstance(v, int) and 0 <= v < p.chunk_tokens,
          "an integer in [0, pages.chunk_tokens)")
  require_int(config, "pages.batch_size", 1)
  require_int(config, "pages.max_pages", 0, "0: the most chunks of any document")
  for field in ("compressor_hidden", "d_page", "num_soft_tokens", "depth", "heads", "ffn"):
    require_int(config, f"pager.{field}", 1)
  require(config, "pager.dropout", lambda v: 0 <= v < 1, "in [0, 1)")
  for field in ("epochs", "batch_size"):
    require_int(config, f"train.{field}", 1)
  require_int(config, "train.warmup_steps", 0)
  for field in ("learning_rate", "clip_norm"):
    require(config, f"train.{field}", _positive, "positive")
  require(config, "train.weight_decay", lambda v: v >= 0, ">= 0")
  require_int(config, "generation.max_new_tokens", 1)
  require(config, "generation.repetition_penalty", _positive, "positive (1.0: none)")
  require_int(config, "text_buffer.extract_max_tokens", 1)
  require(config, "text_buffer.extract_repetition_penalty", _positive, "positive (1.0: none)")
  require_int(config, "text_buffer.max_context_tokens", 1)
  for field, slot in (("extract", "chunk"), ("answer", "context"), ("pager", "question")):
    require(config, f"prompts.{field}", lambda v, s=slot: "{" + s + "}" in v, f"a template with {{{slot}}}")
  require(config, "prompts.answer", lambda v: "{question}" in v, "a template with {question}")
  require_int(config, "eval.batch_size", 1)
  require_int(config, "eval.latency_questions", 2, "one warm-up question is timed apart")
  require_int(config, "eval.bootstrap", 100)


def token_id(tokenizer, config, field: str) -> int:
  token = config.model[field]
  i = tokenizer.token_to_id(token)
  if i is None:
    raise ConfigError(f"model.{field}", f"{token!r} is not in {config.model.path}/tokenizer.json")
  return i


def run(config, workdir):
  workdir = Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  mesh = mesh_lib.make_mesh(auto=True)
  lm = checkpoint_io.load(config.model.path, dtype=DTYPES[config.model.dtype], mesh=mesh)
  tokenizer = tok_lib.load_tokenizer(config.model.path)
  eos, pad = token_id(tokenizer, config, "eos_token"), token_id(tokenizer, config, "pad_token")
  settings = generation.settings_from(config, eos, pad)
  splits = data.load(config, workdir)

  store_dir = config.pages.store_dir or str(workdir / "page_store")
  store = pages.PageStore(store_dir, lm, tokenizer, pages.settings_from(config),
                          pages.model_fingerprint(config.model.path), pad)
  states = {s: store.get([r["document"] for r in recs], desc=f"pages ({s})") for s, recs in splits.items()}
  max_pages = config.pages.max_pages or max(len(x) for xs in states.values() for x in xs)

  examples = {s: train.Examples(splits[s], states[s], tokenizer, config.prompts.pager, eos)
              for s in ("train", "validation")}
  width = max(len(p) + len(a) for ex in examples.values() for p, a in ex.texts)
  width = -(-width // 8) * 8
  q_width = pager_lib.question_width(tokenizer, config.prompts.pager, [r for recs in splits.values() for r in recs])
  graphdef, params, history = train.fit(config, workdir, lm, tokenizer, examples["train"], examples["validation"],
                                        max_pages=max_pages, width=width, q_width=q_width, settings=settings,
                                        pad_id=pad, mesh=mesh)

  test = splits["test"]
  every = [r for recs in splits.values() for r in recs]
  answers = {"latent_pager": pager_lib.answer(lm, tokenizer, graphdef, params, states["test"],
                                              [r["question"] for r in test], config.prompts.pager, max_pages=max_pages,
                                              width=q_width, settings=settings, batch_size=config.eval.batch_size)}
  t = config.text_buffer
  extract = generation.Settings(t.extract_max_tokens, float(t.extract_repetition_penalty), eos, pad,
                                settings.truncate_repeats)
  tb = text_buffer.TextBuffer(lm, tokenizer, store, settings, extract, dict(config.prompts), t.separator,
                              t.max_context_tokens, config.eval.batch_size,
                              text_buffer.answer_width(tokenizer, config.prompts.answer, t.max_context_tokens, every))
  answers["text_buffer"] = tb.answer(test)
  timed = [r for r in test if not r.get("probe")][:config.eval.latency_questions]
  measured = timing.measure(lm, tokenizer, store, graphdef, params, tb, timed, template=config.prompts.pager,
                            max_pages=max_pages, width=q_width, num_soft_tokens=config.pager.num_soft_tokens,
                            settings=settings, pad_id=pad)
  if jax.process_index() != 0:
    return None
  with open(workdir / "predictions.jsonl", "w") as f:
    for i, r in enumerate(test):
      row = {k: r[k] for k in ("id", "document", "question", "gold_answer", "task_type")}
      f.write(json.dumps({**row, "probe": bool(r.get("probe")),
                          "answers": {s: answers[s][i] for s in answers}}) + "\n")
  (workdir / "history.json").write_text(json.dumps(history, indent=1) + "\n")
  (workdir / "timing.json").write_text(json.dumps({**measured, "documents_computed": store.computed,
                                                   "max_pages": max_pages}, indent=1) + "\n")
  return report(workdir)


def report(workdir):
  return analysis.write(Path(workdir))
