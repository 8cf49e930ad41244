"""The latent pager as a system: document inputs, question rows, the training loss, confidence and
answers (latent-pager.md, "How It Works"; README "Soft prompt" and "Training").

A row is the document's K soft tokens, then its questions in the base model's multi-question
format: `prompts.pager` ("Question: <q>\nAnswer:") followed, in training, by the answer and EOS,
then the next question (`train.questions_per_row` of them; the published run used one). The loss
is the cross-entropy of the answer and EOS tokens only (the published run appended no EOS, so its
model never learned to stop), plus `sufficiency.loss_weight` times the sufficiency head's binary
cross-entropy at each question's last prompt token (label: the question is answerable). An
unanswerable question's answer is the abstain string, so the pager can also say it in words.

Rows are right padded in training and left padded in generation; both give the real tokens the
same positions, since positions come from the attention mask. The frozen LM enters every
function as a separate state under `stop_gradient`: gradients reach the soft tokens through it,
but its arrays are constants, never differentiated or updated.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxlab.paging import encoders, generation, pages, programs
from jaxlab.paging.model import PagerModel
from jaxlab.paging.spec import PagerSpec


def embed_rms(lm) -> float:
  """The RMS of the LM's token embeddings: the scale a soft token should enter at."""
  return float(jnp.sqrt(jnp.mean(jnp.square(lm.model.embed_tokens.embedding[...].astype(jnp.float32)))))


def build(spec: PagerSpec, lm) -> PagerModel:
  return PagerModel(spec, lm.cfg.hidden_size, embed_rms(lm), lm)


class Documents:
  """Per-document pager inputs: stored pooled states (`pooled`) or chunk token ids (the others)."""

  def __init__(self, kind: str, store: pages.PageStore, documents: list[str], desc: str = "pages"):
    self.kind, self.store = encoders.get(kind), store
    if self.kind.stored_states:
      self.items = store.get(documents, desc=desc)
    else:
      chunks = {d: store.chunks(d) for d in dict.fromkeys(documents)}
      self.items = [chunks[d] for d in documents]

  def __len__(self):
    return len(self.items)

  def num_pages(self, i: int) -> int:
    return len(self.items[i])

  def batch(self, rows, max_pages: int) -> dict:
    if self.kind.stored_states:
      states, mask = pages.batch_pages([self.items[i] for i in rows], max_pages)
      return {"states": states, "page_mask": mask}
    return chunk_inputs([self.items[i] for i in rows], max_pages, self.store.settings.chunk_tokens,
                        self.store.pad_id)


def chunk_inputs(docs: list[list[list[int]]], max_pages: int, width: int, pad_id: int) -> dict:
  """Chunk ids (B, P, C) right padded, and their mask; a document keeps its first max_pages chunks."""
  ids = np.full((len(docs), max_pages, width), pad_id, np.int32)
  mask = np.zeros((len(docs), max_pages, width), bool)
  for i, chunks in enumerate(docs):
    for j, c in enumerate(chunks[:max_pages]):
      ids[i, j, :len(c)], mask[i, j, :len(c)] = c, True
  return {"chunk_ids": ids, "chunk_mask": mask}


def prompt_ids(tokenizer, template: str, question: str) -> list[int]:
  return tokenizer.encode(template.format(question=question)).ids


def target_ids(tokenizer, template: str, question: str, answer: str, eos_id: int) -> tuple[list[int], list[int]]:
  """(prompt ids, answer ids + EOS); the answer is tokenized after the prompt and a space."""
  prompt = template.format(question=question)
  full = tokenizer.encode(f"{prompt} {answer}").ids
  n = len(tokenizer.encode(prompt).ids)
  return full[:n], full[n:] + [eos_id]


def make_batch(inputs: dict, texts: list[list[tuple[list[int], list[int], bool]]], width: int, pad_id: int,
               num_questions: int) -> dict:
  """Host arrays of one batch: the document inputs, right-padded text ids (B, T) with their mask,
  the target (answer + EOS) mask, and per question (B, Q) the position of its last prompt token,
  whether it is in the row, and whether it is answerable. `texts` holds, per row, its questions as
  (prompt ids, answer ids + EOS, answerable); a question that does not fit whole is dropped."""
  b = len(texts)
  ids = np.full((b, width), pad_id, np.int32)
  mask, target = np.zeros((b, width), bool), np.zeros((b, width), bool)
  probe = np.zeros((b, num_questions), np.int32)
  valid, answerable = np.zeros((b, num_questions), bool), np.zeros((b, num_questions), bool)
  for i, questions in enumerate(texts):
    at = 0
    for q, (prompt, answer, ok) in enumerate(questions[:num_questions]):
      row = (prompt + answer)[:width - at] if q == 0 else prompt + answer
      if q and at + len(row) > width:
        break
      ids[i, at:at + len(row)], mask[i, at:at + len(row)] = row, True
      target[i, at + len(prompt):at + len(row)] = True
      probe[i, q], valid[i, q], answerable[i, q] = at + len(prompt) - 1, True, ok
      at += len(row)
  return {**inputs, "ids": ids, "mask": mask, "target": target, "probe": probe, "probe_valid": valid,
          "answerable": answerable}


def text_forward(model, lm, soft, batch):
  """The LM over [soft | text]: (logits at text positions predicting each text token, final
  states at the probe positions or None without a sufficiency head)."""
  lm = model.decoder(lm)
  soft = soft.astype(lm.dtype)
  k = soft.shape[1]
  embeds = jnp.concatenate([soft, lm.embed(batch["ids"])], axis=1)
  mask = jnp.concatenate([jnp.ones(soft.shape[:2], bool), batch["mask"]], axis=1)
  want = (-1,) if hasattr(model, "sufficiency") else ()
  logits, states = lm(inputs_embeds=embeds, attention_mask=mask, hidden_layers=want)
  probe_states = None
  if want:
    probe_states = jnp.take_along_axis(states[0], (batch["probe"] + k)[..., None], axis=1)
  # Position k - 1 + j predicts text token j.
  return logits[:, k - 1:-1], probe_states


def qa_ce(model, lm, soft, batch):
  """Per-row sums of the target tokens' cross-entropy and target counts, and the per-question
  sufficiency logits (None without a head), from soft tokens already made."""
  logits, probe_states = text_forward(model, lm, soft, batch)
  ce = optax.softmax_cross_entropy_with_integer_labels(logits.astype(jnp.float32), batch["ids"])
  weight = batch["target"].astype(jnp.float32)
  suff = None if probe_states is None else model.confidence(soft, probe_states)
  return jnp.sum(ce * weight, axis=1), jnp.sum(weight, axis=1), suff


def target_ce(params, graphdef, lm_graphdef, lm_state, batch, key):
  """`qa_ce` of the pager's own soft tokens for the batch."""
  model = nnx.merge(graphdef, params)
  lm = nnx.merge(lm_graphdef, jax.lax.stop_gradient(lm_state))
  return qa_ce(model, lm, model.soft_tokens(lm, batch, key), batch)


def sufficiency_bce(logits, batch):
  """Sum of the head's binary cross-entropy over the questions in the batch, and their count."""
  w = batch["probe_valid"].astype(jnp.float32)
  bce = optax.sigmoid_binary_cross_entropy(logits, batch["answerable"].astype(jnp.float32))
  return jnp.sum(bce * w), jnp.sum(w)


def qa_loss(sums, counts, suff, batch, suff_weight: float):
  """Mean cross-entropy over the batch's target tokens (+ the weighted mean sufficiency BCE)."""
  loss = jnp.sum(sums) / jnp.maximum(jnp.sum(counts), 1.0)
  if suff is not None and suff_weight:
    bce, n = sufficiency_bce(suff, batch)
    loss = loss + suff_weight * bce / jnp.maximum(n, 1.0)
  return loss


def loss_fn(params, graphdef, lm_graphdef, lm_state, batch, key, suff_weight: float = 0.0):
  return qa_loss(*target_ce(params, graphdef, lm_graphdef, lm_state, batch, key), batch, suff_weight)


@functools.partial(jax.jit, static_argnames=("graphdef", "lm_graphdef"))
def eval_ce(params, graphdef, lm_graphdef, lm_state, batch):
  """`target_ce` without dropout: per-row CE sums and target counts."""
  sums, counts, _ = target_ce(params, graphdef, lm_graphdef, lm_state, batch, None)
  return sums, counts


# ----------------------------------------------------------------------------- answering
CONFIDENCES = ("head", "answer", "head+answer")


class Reader:
  """The trained pager answering questions, its programs made once: soft tokens from document
  inputs, generation by its decoder (the frozen LM, or with the pager's bridge) after them, and
  the sufficiency head on the state generation returns. `confidence` is what `answer` reports:
  `head`, the sufficiency head's probability (None without a head); `answer`, the
  log-probability of the generated answer after the soft tokens and the question (as the text
  systems' confidence); `head+answer`, their sum in log space (the head's log-probability plus
  the answer's). Generation returns the answer's log-probability and the state the head reads
  (the final state at the question's last token), so neither costs a pass of its own."""

  def __init__(self, lm, graphdef, params, settings: generation.Settings, confidence: str = "head"):
    if confidence not in CONFIDENCES:
      raise ValueError(f"confidence {confidence!r} is not one of {CONFIDENCES}")
    model = nnx.merge(graphdef, params)
    self.head = hasattr(model, "sufficiency") and confidence != "answer"
    if confidence == "head+answer" and not self.head:
      raise ValueError("confidence 'head+answer' needs the sufficiency head (sufficiency.enabled)")
    self.confidence, self.params, self.dtype = confidence, params, lm.dtype
    lm_graphdef, self.lm_state = nnx.split(lm)

    def soft(params, lm_state, inputs):
      return nnx.merge(graphdef, params).soft_tokens(nnx.merge(lm_graphdef, lm_state), inputs).astype(self.dtype)

    def head(params, soft, state):
      return jax.nn.sigmoid(nnx.merge(graphdef, params).confidence(soft, state[:, None])[:, 0])

    self.soft_program = programs.Program("soft_tokens", (graphdef, lm_graphdef), soft)
    self.head_program = programs.Program("sufficiency", graphdef, head)
    self.generator = generation.Generator(model.decoder(lm), settings)

  def soft_tokens(self, inputs):
    """Soft tokens (B, K, D) of a batch of document inputs, without dropout, in the LM's dtype."""
    return self.soft_program(self.params, self.lm_state, {k: jnp.asarray(v) for k, v in inputs.items()})

  def answer(self, tokenizer, docs: Documents, rows: list[int], questions: list[str], template: str, *,
             max_pages: int, width: int, batch_size: int,
             abstain: generation.Abstain | None = None) -> tuple[list[str], np.ndarray | None]:
    """Greedy answers from soft tokens + question, in batches of one shape, and a confidence per
    question (`rows[i]` is question i's document)."""
    ids, mask = left_padded([prompt_ids(tokenizer, template, q) for q in questions], width)
    out, conf = [], []
    for idx, keep in fixed_batches(len(questions), batch_size):
      soft = self.soft_tokens(docs.batch([rows[i] for i in idx], max_pages))
      texts, score = self._generate(tokenizer, soft, ids[idx], mask[idx], abstain)
      out += texts[:keep]
      if score is not None:
        conf.append(score[:keep])
    return out, (np.concatenate(conf) if conf else None)

  def answer_from(self, tokenizer, soft, questions: list[str], template: str, *, width: int,
                  abstain: generation.Abstain | None = None) -> tuple[list[str], np.ndarray | None]:
    """`answer` of one batch from soft tokens already made (B, K, D), row i for question i: a
    document's soft tokens depend on the document alone, so a server makes them once and keeps
    them for every question on it."""
    ids, mask = left_padded([prompt_ids(tokenizer, template, q) for q in questions], width)
    return self._generate(tokenizer, soft, ids, mask, abstain)

  def _generate(self, tokenizer, soft, ids, mask, abstain) -> tuple[list[str], np.ndarray | None]:
    got = self.generator(ids, mask, prefix_embeds=soft)
    texts = generation.decode(tokenizer, got.tokens, self.generator.settings, abstain)
    if self.confidence == "head" and not self.head:
      return texts, None
    score = 0.0
    if self.head:
      p = np.asarray(self.head_program(self.params, soft, jnp.asarray(got.last_state)))
      score = p if self.confidence == "head" else np.log(np.maximum(p, np.finfo(np.float32).tiny))
    if self.confidence != "head":
      score = score + got.logprob
    return texts, generation.served_confidence(score, got, self.generator.settings)

  def peak_bytes(self, inputs, q_width: int) -> int:
    """The largest of its programs' device memory for one batch of `inputs`."""
    args = (self.params, self.lm_state, {k: jnp.asarray(v) for k, v in inputs.items()})
    soft = self.soft_program(*args)
    b, k = soft.shape[:2]
    out = [self.soft_program.peak_bytes(*args), self.generator.peak_bytes(b, q_width, k)]
    if self.head:
      out.append(self.head_program.peak_bytes(self.params, soft, jnp.zeros((b, soft.shape[-1]), self.dtype)))
    return max(out)


def question_width(tokenizer, template: str, records) -> int:
  """The one prompt width (a multiple of 16) of every pager generation call of a run."""
  return -(-max(len(prompt_ids(tokenizer, template, r["question"])) for r in records) // 16) * 16


def fixed_batches(n: int, batch_size: int) -> list[tuple[np.ndarray, int]]:
  """(row indices, rows to keep) of each batch of `batch_size` rows over n rows: one shape for
  every batch, a short last batch repeating its first row."""
  out = []
  for s in range(0, n, batch_size):
    idx = np.arange(s, s + batch_size)
    out.append((np.where(idx < n, idx, s), min(batch_size, n - s)))
  return out


def left_padded(rows: list[list[int]], width: int) -> tuple[np.ndarray, np.ndarray]:
  ids = np.zeros((len(rows), width), np.int32)
  mask = np.zeros((len(rows), width), bool)
  for i, row in enumerate(rows):
    if len(row) > width:
      raise ValueError(f"a prompt of {len(row)} tokens exceeds the width {width}")
    if row:
      ids[i, width - len(row):], mask[i, width - len(row):] = row, True
  return ids, mask


def answer(lm, tokenizer, graphdef, params, docs: Documents, rows: list[int], questions: list[str], template: str, *,
           max_pages: int, width: int, settings: generation.Settings, batch_size: int,
           abstain: generation.Abstain | None = None, confidence: str = "head") -> tuple[list[str], np.ndarray | None]:
  """`Reader(...).answer(...)` in one call: answers and confidences (see `Reader`)."""
  return Reader(lm, graphdef, params, settings, confidence).answer(
      tokenizer, docs, rows, questions, template, max_pages=max_pages, width=width, batch_size=batch_size,
      abstain=abstain)
