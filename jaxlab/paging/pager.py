"""The latent pager as a system: soft tokens from stored pages, the training loss, and answers
(latent-pager.md, "How It Works"; README "Soft prompt" and "Training").

The k soft tokens come first, then the embedded `prompts.pager` text ("Question: <q>\nAnswer:"
for the published model), then, in training, the answer tokens followed by EOS: the loss is the
cross-entropy of the answer and EOS tokens only (the published run appended no EOS, so its model
never learned to stop). Rows are right padded in training and left padded in generation; both
give the real tokens the same positions, since positions come from the attention mask.

The frozen LM enters every function as a separate state with `stop_gradient`: gradients reach
the soft tokens through it, but its arrays are constants, never differentiated or updated.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxlab.paging import generation, pages, programs
from jaxlab.paging.modules import Pager


def build(config, num_layers: int, d_lm: int) -> Pager:
  p = config.pager
  return Pager(num_layers, d_lm, compressor_hidden=p.compressor_hidden, d_page=p.d_page,
               num_soft_tokens=p.num_soft_tokens, depth=p.depth, heads=p.heads, ffn=p.ffn,
               dropout_rate=p.dropout, rngs=nnx.Rngs(config.seed))


def prompt_ids(tokenizer, template: str, question: str) -> list[int]:
  return tokenizer.encode(template.format(question=question)).ids


def target_ids(tokenizer, template: str, question: str, answer: str, eos_id: int) -> tuple[list[int], list[int]]:
  """(prompt ids, answer ids + EOS); the answer is tokenized after the prompt and a space."""
  prompt = template.format(question=question)
  full = tokenizer.encode(f"{prompt} {answer}").ids
  n = len(tokenizer.encode(prompt).ids)
  return full[:n], full[n:] + [eos_id]


def make_batch(states: list[np.ndarray], texts: list[tuple[list[int], list[int]]], max_pages: int,
               width: int, pad_id: int) -> dict:
  """Host arrays of one batch: pooled states (B, P, L, D), page mask (B, P), right-padded text ids
  (B, T) with their mask, and the mask of the target (answer + EOS) tokens."""
  st, page_mask = pages.batch_pages(states, max_pages)
  ids = np.full((len(texts), width), pad_id, np.int32)
  mask = np.zeros((len(texts), width), bool)
  target = np.zeros((len(texts), width), bool)
  for i, (prompt, answer) in enumerate(texts):
    row = (prompt + answer)[:width]
    ids[i, :len(row)], mask[i, :len(row)] = row, True
    target[i, len(prompt):len(row)] = True
  return {"states": st, "page_mask": page_mask, "ids": ids, "mask": mask, "target": target}


def target_ce(params, graphdef, lm_graphdef, lm_state, batch, key):
  """Per-row sums of the target tokens' cross-entropy, and per-row target counts."""
  pager = nnx.merge(graphdef, params)
  lm = nnx.merge(lm_graphdef, jax.lax.stop_gradient(lm_state))
  soft = pager(batch["states"], batch["page_mask"], key).astype(lm.dtype)
  k = soft.shape[1]
  embeds = jnp.concatenate([soft, lm.embed(batch["ids"])], axis=1)
  mask = jnp.concatenate([jnp.ones(soft.shape[:2], bool), batch["mask"]], axis=1)
  logits, _ = lm(inputs_embeds=embeds, attention_mask=mask)
  # Position k - 1 + j predicts text token j.
  ce = optax.softmax_cross_entropy_with_integer_labels(logits[:, k - 1:-1].astype(jnp.float32), batch["ids"])
  weight = batch["target"].astype(jnp.float32)
  return jnp.sum(ce * weight, axis=1), jnp.sum(weight, axis=1)


def loss_fn(params, graphdef, lm_graphdef, lm_state, batch, key):
  """Mean cross-entropy over the target tokens of the batch."""
  sums, counts = target_ce(params, graphdef, lm_graphdef, lm_state, batch, key)
  return jnp.sum(sums) / jnp.maximum(jnp.sum(counts), 1.0)


@functools.partial(jax.jit, static_argnames=("graphdef", "lm_graphdef"))
def eval_ce(params, graphdef, lm_graphdef, lm_state, batch):
  """`target_ce` without dropout."""
  return target_ce(params, graphdef, lm_graphdef, lm_state, batch, None)


def _soft(graphdef, params, states, page_mask):
  fn = lambda params, states, page_mask: nnx.merge(graphdef, params)(states, page_mask)
  return "soft_tokens", graphdef, fn, params, jnp.asarray(states), jnp.asarray(page_mask)


def soft_tokens(graphdef, params, states, page_mask):
  """Soft tokens (B, k, D) from pooled states (B, P, L, D), without dropout."""
  return programs.call(*_soft(graphdef, params, states, page_mask))


def soft_bytes(graphdef, params, rows: int, max_pages: int, num_layers: int, d_lm: int) -> int:
  return programs.peak_bytes(*_soft(graphdef, params, np.zeros((rows, max_pages, num_layers, d_lm), np.float32),
                                    np.ones((rows, max_pages), bool)))


def question_width(tokenizer, template: str, records) -> int:
  """The one prompt width (a multiple of 16) of every pager generation call of a run."""
  return -(-max(len(prompt_ids(tokenizer, template, r["question"])) for r in records) // 16) * 16


def answer(lm, tokenizer, graphdef, params, states: list[np.ndarray], questions: list[str], template: str, *,
           max_pages: int, width: int, settings: generation.Settings, batch_size: int) -> list[str]:
  """Greedy answers from soft tokens + question, in batches of one shape."""
  rows = [prompt_ids(tokenizer, template, q) for q in questions]
  ids = np.zeros((len(rows), width), np.int32)
  mask = np.zeros((len(rows), width), bool)
  for i, row in enumerate(rows):
    ids[i, width - len(row):], mask[i, width - len(row):] = row, True
  out = []
  for s in range(0, len(rows), batch_size):
    idx = np.arange(s, s + batch_size)
    idx = np.where(idx < len(rows), idx, s)  # a short last batch repeats its first row
    st, page_mask = pages.batch_pages([states[i] for i in idx], max_pages)
    soft = soft_tokens(graphdef, params, st, page_mask)
    tokens = generation.generate_tokens(lm, ids[idx], mask[idx], settings, prefix_embeds=soft.astype(lm.dtype))
    out += generation.decode(tokenizer, tokens, settings)[:min(batch_size, len(rows) - s)]
  return out
