"""The text buffer's LoRA bridge: the adaptation the pager's answering LM gets (its
`pager.decoder_lora_rank` bridge), given to the text buffer, so that the two systems can be
compared with the same adaptation budget.

With `text_buffer.lora_rank` > 0, `fit` trains rank-`lora_rank` LoRA adapters of the LM's
attention projections (`encoders.lora_adapters`; B starts at zero, so training starts from the
frozen text buffer), and `TextBuffer` answers with them attached (`TextBuffer.bridge`); its notes
are still extracted by the frozen LM.

**Rows.** The pager's training rows (`train.question_rows`: a document's questions,
`train.questions_per_row` to a row, in the same epoch order), each row's context the text
buffer's own notes for its document: extracted once by `TextBuffer` with the frozen LM, exactly
as at test time, and kept in WORKDIR/text_bridge/notes.json under a key of everything extraction
depends on, block by block, so a resumed run does not extract them again. A row reads as the base
model's QA training does: `prompts.answer` with the notes and the first question (the text
buffer's own prompt at test time), its answer and EOS, then each further question in the
`prompts.pager` form with its answer and EOS ("{notes}\\n\\nQuestion: q1\\nAnswer: a1<eos>Question:
q2\\nAnswer: a2<eos>..."). A row longer than the LM's window (`model.context_tokens`) keeps the
questions that fit whole. The loss is the teacher-forced cross-entropy of the answer and EOS
tokens; an unanswerable question's answer is the abstain string, as the pager's is.

**Training.** `train.fine_tune`, the pager's loop: the same `train.*` settings (steps or epochs,
batch size, learning rate, warmup, weight decay, clipping, seed), except those a
`text_buffer.train` section names (`OWN_SCHEDULE`: the bridge's own length, rate and warmup, so it
can be tuned on validation as the pager's were), the same evaluation cadence,
each evaluation recording the validation loss (teacher forced, one question per row) and the
validation F1 (the text buffer answering every validation question with the bridge, from notes
made the same way), and the best by validation F1 kept. Step 0, the frozen text buffer, is
evaluated too, and kept if no step beats it. The LM's weights are an argument under
`stop_gradient`, never updated. Checkpoints, the metrics log and history.json live in
WORKDIR/text_bridge/.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from jaxlab.core import checkpoint
from jaxlab.paging import encoders, pager as pager_lib, train as train_lib
from jaxlab.paging.spec import TrainSpec
from jaxlab.paging.text_buffer import TextBuffer, wrap

FOLDER = "text_bridge"
# The `train.*` settings a `text_buffer.train` section may replace for the bridge alone.
OWN_SCHEDULE = ("epochs", "steps", "learning_rate", "warmup_steps")
NOTES = "notes.json"
FINGERPRINT_FIELDS = ("seed", "model", "data", "pages", "train", "prompts", "generation", "text_buffer")
NOTES_BLOCK = 256   # documents extracted between two saves of the notes


def answer_ce(params, graphdef, lm_graphdef, lm_state, batch):
  """Per-row sums of the answer tokens' cross-entropy and their counts, the LM reading each row
  with the bridge (`params` of `graphdef`) attached."""
  lm = nnx.merge(lm_graphdef, jax.lax.stop_gradient(lm_state))
  logits, _ = encoders.with_adapters(lm, nnx.merge(graphdef, params))(batch["ids"], batch["mask"])
  # Position j predicts token j + 1.
  ce = optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1].astype(jnp.float32), batch["ids"][:, 1:])
  weight = batch["target"][:, 1:].astype(jnp.float32)
  return jnp.sum(ce * weight, axis=1), jnp.sum(weight, axis=1)


def loss_fn(params, graphdef, lm_graphdef, lm_state, batch, key=None, suff_weight: float = 0.0):
  """Mean cross-entropy over the batch's answer tokens (`train.train_step`'s loss; the bridge has
  no dropout and no sufficiency head)."""
  del key, suff_weight
  sums, counts = answer_ce(params, graphdef, lm_graphdef, lm_state, batch)
  return pager_lib.qa_loss(sums, counts, None, batch, 0.0)


@functools.partial(jax.jit, static_argnames=("graphdef", "lm_graphdef"))
def eval_ce(params, graphdef, lm_graphdef, lm_state, batch):
  return answer_ce(params, graphdef, lm_graphdef, lm_state, batch)


def notes_key(tb: TextBuffer) -> str:
  """What a document's notes depend on: the LM and page settings (the store's key), the
  extraction's generation settings, template, separator, length and budget rule (named only when
  not the first tokens', so notes saved before the rule existed keep their key)."""
  return checkpoint.fingerprint({"store": tb.store.prefix, "extract": dataclasses.asdict(tb.extract_settings),
                                 "template": tb.prompts["extract"], "separator": tb.separator,
                                 "max_context_tokens": tb.max_context_tokens, **({"keep": tb.keep} if tb.keep else {})})


def load_notes(tb: TextBuffer, documents: list[str], path: Path) -> None:
  """Fills `tb.buffers` with the notes of `documents`: those `path` holds under this text buffer's
  key are read, the others extracted by `tb` (the frozen LM), `NOTES_BLOCK` documents at a time,
  `path` rewritten after each block."""
  key = notes_key(tb)
  name = lambda d: hashlib.sha256(d.encode()).hexdigest()[:24]
  saved = {}
  if path.is_file():
    stored = json.loads(path.read_text())
    saved = stored["notes"] if stored.get("key") == key else {}
  for d in dict.fromkeys(documents):
    if name(d) in saved:
      tb.buffers.setdefault(d, saved[name(d)])
  missing = [d for d in dict.fromkeys(documents) if d not in tb.buffers]
  for s in range(0, len(missing), NOTES_BLOCK):
    block = missing[s:s + NOTES_BLOCK]
    tb.buffer_ids(block)
    if jax.process_index() == 0:
      saved.update({name(d): tb.buffers[d] for d in block})
      tmp = path.with_suffix(".tmp")
      tmp.write_text(json.dumps({"key": key, "notes": saved}))
      tmp.replace(path)


def row_texts(rows: list[list[dict]], tb: TextBuffer, tokenizer, prompts, eos_id: int):
  """Per row, its questions as (prompt ids, answer ids + EOS, answerable) (`pager.make_batch`'s
  rows): the first with the notes `tb` keeps for it in `prompts.answer`, the rest in the
  `prompts.pager` form."""
  after = prompts["answer"].partition("{context}")[2]
  out = []
  for row in rows:
    texts = []
    for q, r in enumerate(row):
      if q == 0:
        notes = tb.context_ids(r, tb.buffers[r["document"]])
        prompt = wrap(tokenizer, prompts["answer"], "context", notes, question=r["question"])
        answer = pager_lib.target_ids(tokenizer, after, r["question"], r["gold_answer"], eos_id)[1]
      else:
        prompt, answer = pager_lib.target_ids(tokenizer, prompts["pager"], r["question"], r["gold_answer"], eos_id)
      texts.append((prompt, answer, bool(r.get("answerable", True))))
    out.append(texts)
  return out


def width_of(texts, per_row: int, window: int) -> int:
  """The longest row (a multiple of 8), at most the LM's window."""
  n = max(sum(len(p) + len(a) for p, a, _ in t[:per_row]) for t in texts)
  return min(-(-n // 8) * 8, window)


def schedule(config) -> TrainSpec:
  """The pager's `TrainSpec` with the fields of `text_buffer.train`, where the config has one."""
  return dataclasses.replace(TrainSpec.of(config), **dict(config.text_buffer.get("train") or {}))


def fit(setup, config, workdir: Path, splits: dict, restore_only: bool = False):
  """Trains (or resumes) the text buffer's bridge in WORKDIR/text_bridge; returns the
  best-by-validation-F1 adapters (a module for `TextBuffer.bridge`) and the history.
  `restore_only`: a finished run read back, nothing trained or written (`core.train.Unfinished`
  otherwise)."""
  c, t = config, schedule(config)
  folder = Path(workdir) / FOLDER
  per_row = t.questions_per_row
  train_rows = train_lib.question_rows(splits["train"], per_row)
  val_records = splits["validation"]
  val_rows = train_lib.question_rows(val_records, 1)
  frozen = setup.text_buffer(val_records).with_bridge(None)
  tr = va = []
  width = 0
  if not restore_only:
    folder.mkdir(parents=True, exist_ok=True)
    load_notes(frozen, [row[0]["document"] for row in train_rows + val_rows], folder / NOTES)
    prompts = dict(c.prompts)
    tr = row_texts(train_rows, frozen, setup.tokenizer, prompts, setup.eos)
    va = row_texts(val_rows, frozen, setup.tokenizer, prompts, setup.eos)
    width = max(width_of(tr, per_row, c.model.context_tokens), width_of(va, 1, c.model.context_tokens))
  lm_graphdef, lm_state = nnx.split(setup.lm)
  graphdef, params = nnx.split(encoders.lora_adapters(setup.lm, c.text_buffer.lora_rank,
                                                      nnx.Rngs(t.seed).params()))

  def val_loss(params):
    return train_lib.validation_loss(lambda b: eval_ce(params, graphdef, lm_graphdef, lm_state, b),
                                     lambda rows: pager_lib.make_batch({}, [va[i] for i in rows], width, setup.pad, 1),
                                     len(va), t.batch_size, setup.mesh)

  def val_f1(params):
    answers, _ = frozen.with_bridge(nnx.merge(graphdef, params)).answer(val_records, confidence=False)
    return train_lib.mean_f1(answers, val_records)

  best, history = train_lib.fine_tune(
      t, folder, setup.lm, graphdef, params, rows=len(train_rows),
      batch_of=lambda rows: pager_lib.make_batch({}, [tr[i] for i in rows], width, setup.pad, per_row),
      loss_fn=loss_fn, val_loss=val_loss, val_f1=val_f1, mesh=setup.mesh,
      fingerprint=train_lib.fingerprint(c, FINGERPRINT_FIELDS), eval_at_start=True, name="text bridge",
      restore_only=restore_only)
  if not restore_only and jax.process_index() == 0:
    (folder / "history.json").write_text(json.dumps(history, indent=1) + "\n")
  return nnx.merge(graphdef, best), history
