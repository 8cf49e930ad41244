"""Batched text generation from a `jaxlab.lm.qwen3.Qwen3` with a fixed-size key/value cache.

One jitted function prefills the prompt (an optional prefix of input embeddings, the soft tokens,
followed by left-padded token ids) into a cache of prefix + prompt + max_new_tokens slots, then
decodes one token per `lax.while_loop` step until every row has emitted EOS or the budget is
spent. Choosing a token follows Hugging Face's `generate`: the repetition penalty (over every
real prompt token and every token generated so far, dividing positive logits and multiplying
negative ones), then temperature, top-k and top-p, then sampling, or argmax when greedy. After
EOS a row emits `pad_id`, as Hugging Face does. By default generation stops at the checkpoint's
EOS ids (`model.cfg.eos_token_ids`, from its generation_config.json or config.json; several are
allowed, as Qwen3's chat checkpoints list two). `begin_suppress` is Hugging Face's
`begin_suppress_tokens`: ids that can never be a row's first new token (EOS there makes an empty
answer); the scores then also say which token the row would have begun with.

Inputs are checked on the host: a row whose last column is padding (right padding) is an error,
since generation continues from the last column; sampling needs an explicit key. The
check is skipped when `generate` is itself traced inside another jit (the caller's values are
not known then).

With `return_scores=True` the same program also returns what a caller scoring its own answer
needs, so it costs no second pass: each row's log-probability of the tokens it generated (up to
and including its EOS) under the model's own distribution, the raw logits before the repetition
penalty or temperature (what teacher forcing the answer after its prompt gives), and the
prompt's last hidden state after the final norm (the state that predicted the first new token),
and the first new token each row would choose without `begin_suppress` (its own first token when
nothing is suppressed).

One difference from Hugging Face: its repetition penalty also counts the pad ids of left padding,
which belong to no prompt; here only tokens the mask marks real are counted.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxlab.core.mesh import constrain
from jaxlab.lm.qwen3 import Qwen3, on_mesh, positions_from_mask, token_ids


class Scored(NamedTuple):
  """Generation with its scores (`generate(..., return_scores=True)`)."""
  tokens: jax.Array      # (B, max_new_tokens) int32, `pad_id` after a row's EOS
  logprob: jax.Array     # (B,) float32: sum of log p(token) over the row's tokens, its EOS included
  last_state: jax.Array  # (B, D): the prompt's last hidden state, after the final norm
  first: jax.Array       # (B,) int32: the first new token the row would choose without `begin_suppress`


def generate(model: Qwen3, input_ids, attention_mask, *, max_new_tokens: int, prefix_embeds=None,
             eos_id: int | Sequence[int] | None = None, pad_id: int = 0, greedy: bool = True,
             temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0, repetition_penalty: float = 1.0,
             key=None, lora: bool = True, return_scores: bool = False, begin_suppress: Sequence[int] = ()):
  """New tokens (B, max_new_tokens), int32, `pad_id` after a row's EOS; with `return_scores` a
  `Scored` of the tokens, their log-probability and the prompt's last state.

  input_ids, attention_mask: (B, T), left padded. prefix_embeds: (B, K, D) soft tokens that come
  before the ids. eos_id: None uses the checkpoint's EOS ids; an id or a list of ids replaces
  them; () never stops early. `key` seeds sampling (greedy=False; required then); top_k=0 and
  top_p=1 switch those off. lora=False ignores LoRA adapters (`qwen3.add_lora`). begin_suppress:
  ids whose logits are -inf at the first new token (its log-probability still reads the model's
  own distribution).
  """
  if not greedy and key is None:
    raise ValueError("sampling (greedy=False) needs an explicit key=jax.random.key(...)")
  if not isinstance(attention_mask, jax.core.Tracer):
    # Generation continues from the last column, so it must hold every row's last real token
    # (padding elsewhere, e.g. between a soft-token prefix and the text, is fine).
    mask = np.asarray(attention_mask, bool)
    rows = np.nonzero(~mask[:, -1])[0] if mask.shape[1] else []
    if len(rows):
      raise ValueError(f"attention_mask rows {rows.tolist()[:5]} end in padding (right padded?): generation "
                       "continues from the last column, so prompts must be left padded, as "
                       "jaxlab.lm.tokenizer.encode_batch makes them")
  eos = model.cfg.eos_token_ids if eos_id is None else token_ids(eos_id)
  graphdef, state = nnx.split(model)
  b = input_ids.shape[0]
  if prefix_embeds is None:
    prefix_embeds = jnp.zeros((b, 0, model.cfg.hidden_size), model.dtype)
  key = jax.random.key(0) if key is None else key   # unused when greedy
  return _run(model, graphdef, state, jnp.asarray(input_ids, jnp.int32), jnp.asarray(attention_mask, bool),
              jnp.asarray(prefix_embeds), key, jnp.asarray(eos, jnp.int32).reshape(-1), jnp.int32(pad_id),
              jnp.float32(temperature), jnp.int32(top_k), jnp.float32(top_p), jnp.float32(repetition_penalty),
              max_new=max_new_tokens, greedy=greedy, lora=lora, scores=return_scores,
              begin_suppress=tuple(sorted(set(int(i) for i in begin_suppress))))


@on_mesh
def _run(model, *args, **kwargs):
  del model  # only its mesh: `on_mesh` runs the program under it, so the constraints act
  return _generate(*args, **kwargs)


def penalize_repeats(logits, seen, penalty):
  """Hugging Face's: logits of `seen` tokens move toward less likely by the factor `penalty`."""
  return jnp.where(seen, jnp.where(logits > 0, logits / penalty, logits * penalty), logits)


def choose(logits, seen, key, temperature, top_k, top_p, penalty, *, greedy: bool):
  """One token per row from logits (B, V); `seen` (B, V) marks the tokens to penalize."""
  logits = logits.astype(jnp.float32)
  logits = penalize_repeats(logits, seen, penalty)
  if greedy:
    return jnp.argmax(logits, axis=-1).astype(jnp.int32)
  logits = logits / temperature
  # One descending sort serves both filters, and keeps top_k a traced value (no recompiling).
  order = jnp.sort(logits, axis=-1)[:, ::-1]
  kth = order[:, jnp.clip(top_k - 1, 0, logits.shape[-1] - 1)][:, None]
  logits = jnp.where((top_k > 0) & (logits < kth), -jnp.inf, logits)
  order = jnp.where((top_k > 0) & (order < kth), -jnp.inf, order)
  # Top-p keeps the smallest set of most likely tokens whose probability reaches top_p: a token
  # stays if the probability of the tokens strictly more likely than it is below top_p.
  probs = jax.nn.softmax(order, axis=-1)
  before = jnp.cumsum(probs, axis=-1) - probs
  cutoff = jnp.min(jnp.where(before < top_p, order, jnp.inf), axis=-1, keepdims=True)
  logits = jnp.where(logits < cutoff, -jnp.inf, logits)
  return jax.random.categorical(key, logits).astype(jnp.int32)


@functools.partial(jax.jit, static_argnames=("graphdef", "max_new", "greedy", "lora", "scores", "begin_suppress"))
def _generate(graphdef, state, ids, mask, prefix, key, eos_ids, pad_id, temperature, top_k, top_p,
              penalty, *, max_new: int, greedy: bool, lora: bool, scores: bool = False,
              begin_suppress: tuple[int, ...] = ()):
  model = nnx.merge(graphdef, state)
  b, k = prefix.shape[:2]
  prompt = jnp.concatenate([prefix.astype(model.dtype), model.embed(ids)], axis=1)
  prompt_mask = jnp.concatenate([jnp.ones((b, k), bool), mask], axis=1)
  start = prompt.shape[1]
  kv_valid = jnp.concatenate([prompt_mask, jnp.zeros((b, max_new), bool)], axis=1)
  h, _, cache = model.step(prompt, positions_from_mask(prompt_mask), kv_valid,
                           model.init_cache(b, start + max_new), 0, lora=lora)
  # Logits of the last position only: over a long prompt, (B, T, vocab) would dwarf the cache.
  logits = model.logits(h[:, -1])
  vocab = logits.shape[-1]
  rows = jnp.arange(b)[:, None]
  # Padding is sent out of range, where the scatter drops it.
  seen = jnp.zeros((b, vocab), bool).at[rows, jnp.where(mask, ids, vocab)].set(True, mode="drop")
  next_pos = jnp.sum(prompt_mask, axis=1, dtype=jnp.int32)
  banned = np.isin(np.arange(vocab), begin_suppress)   # the first new token's suppressed ids
  if scores and begin_suppress:   # the first token as chosen without suppression
    first = choose(logits, seen, jax.random.fold_in(key, 0), temperature, top_k, top_p, penalty, greedy=greedy)

  def cond(carry):
    t, done = carry[0], carry[1]
    return (t < max_new) & ~jnp.all(done)

  def body(carry):
    t, done, out, seen, logits, kv_valid, cache, logprob = carry
    allowed = logits
    if begin_suppress:   # static: without it the program is unchanged
      allowed = jnp.where((t == 0) & banned[None, :], -jnp.inf, logits)
    token = choose(allowed, seen, jax.random.fold_in(key, t), temperature, top_k, top_p, penalty,
                   greedy=greedy)
    token = jnp.where(done, pad_id, token)
    if scores:
      picked = jnp.take_along_axis(jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1), token[:, None], 1)[:, 0]
      logprob = logprob + jnp.where(done, 0.0, picked)
    out = out.at[:, t].set(token)
    seen = seen.at[jnp.arange(b), token].set(True)
    done = done | jnp.isin(token, eos_ids)
    kv_valid = kv_valid.at[:, start + t].set(True)
    h, _, cache = model.step(model.embed(token[:, None]), (next_pos + t)[:, None], kv_valid, cache,
                             start + t, lora=lora)
    return t + 1, done, out, seen, model.logits(h[:, -1]), kv_valid, cache, logprob

  out = jnp.full((b, max_new), pad_id, jnp.int32)
  carry = (jnp.int32(0), jnp.zeros((b,), bool), out, seen, logits, kv_valid, cache, jnp.zeros((b,), jnp.float32))
  carry = jax.lax.while_loop(cond, body, carry)
  # Replicated, so every process can read them (the model may span processes).
  if not scores:
    return constrain(carry[2])
  if not begin_suppress:
    first = carry[2][:, 0]
  return Scored(constrain(carry[2]), constrain(carry[7]), constrain(h[:, -1]), constrain(first))
