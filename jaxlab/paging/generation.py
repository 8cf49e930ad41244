"""One generation path for both systems (latent-pager.md, "The Repetition Penalty Breakthrough").

The published run answered with different settings per system (the text buffer 256 tokens without
a repetition penalty or sentence dedup; the pager 128 tokens with penalty 1.3 and dedup). Here
every answer of either system goes through `answer_texts` with the one `Settings` built from the
config's `generation` block: greedy, the same max new tokens, repetition penalty and EOS, then the
same truncation at the first repeated sentence.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxlab.lm import tokenizer as tok_lib
from jaxlab.lm.generate import generate
from jaxlab.paging import programs


@dataclasses.dataclass(frozen=True)
class Settings:
  max_new_tokens: int
  repetition_penalty: float
  eos_id: int
  pad_id: int
  truncate_repeats: bool


def settings_from(config, eos_id: int, pad_id: int) -> Settings:
  g = config.generation
  return Settings(g.max_new_tokens, float(g.repetition_penalty), eos_id, pad_id, bool(g.truncate_repeats))


def truncate_repeats(text: str) -> str:
  """Cut before the first sentence (split on ". ") that repeats an earlier one, compared stripped
  and lower-cased; sentences of 10 characters or fewer never count, as in the published code."""
  kept, seen = [], set()
  for sentence in text.split(". "):
    key = sentence.strip().lower()
    if key in seen and len(key) > 10:
      break
    seen.add(key)
    kept.append(sentence)
  return ". ".join(kept)


def _program(lm, settings: Settings, ids, mask, prefix):
  graphdef, state = nnx.split(lm)
  prefix = jnp.zeros((ids.shape[0], 0, lm.cfg.hidden_size), lm.dtype) if prefix is None else prefix

  def fn(state, ids, mask, prefix):
    return generate(nnx.merge(graphdef, state), ids, mask, max_new_tokens=settings.max_new_tokens,
                    prefix_embeds=prefix, eos_id=settings.eos_id, pad_id=settings.pad_id, greedy=True,
                    repetition_penalty=settings.repetition_penalty)

  return ("generate", (graphdef, settings), fn, state, jnp.asarray(ids, jnp.int32), jnp.asarray(mask, bool),
          jnp.asarray(prefix, lm.dtype))


def generate_tokens(lm, ids, mask, settings: Settings, prefix_embeds=None) -> np.ndarray:
  """Greedy tokens (B, N) with the settings' penalty and EOS (the only generation call here)."""
  return np.asarray(programs.call(*_program(lm, settings, ids, mask, prefix_embeds)))


def generate_bytes(lm, settings: Settings, rows: int, width: int, prefix: int) -> int:
  """Peak device memory of the generation program of that shape."""
  ids = np.zeros((rows, width), np.int32)
  soft = jnp.zeros((rows, prefix, lm.cfg.hidden_size), lm.dtype)
  return programs.peak_bytes(*_program(lm, settings, ids, ids.astype(bool), soft))


@dataclasses.dataclass(frozen=True)
class Abstain:
  """The abstain answer as text and as the token ids the LM says it with. A closed word-level
  vocabulary may spell it with `<unk>` ("unknown" is no word of the synthetic world), so an
  abstention is recognised by its ids, not by decoding them."""
  text: str
  ids: tuple[int, ...]


def abstain_from(tokenizer, text: str) -> Abstain:
  return Abstain(text, tuple(tokenizer.encode(f"Answer: {text}").ids[len(tokenizer.encode("Answer:").ids):]))


def decode(tokenizer, tokens, settings: Settings, abstain: Abstain | None = None) -> list[str]:
  texts = tok_lib.decode_batch(tokenizer, tokens, settings.eos_id)
  texts = [truncate_repeats(t) if settings.truncate_repeats else t for t in texts]
  if abstain is None:
    return texts
  rows = np.asarray(tokens).tolist()
  cut = [row[:row.index(settings.eos_id)] if settings.eos_id in row else row for row in rows]
  return [abstain.text if tuple(c) == abstain.ids else t for c, t in zip(cut, texts)]


def _logprob_program(lm, ids, mask, target, prefix):
  graphdef, state = nnx.split(lm)

  def fn(state, ids, mask, target, prefix):
    lm = nnx.merge(graphdef, state)
    k = prefix.shape[1]
    embeds = jnp.concatenate([prefix.astype(lm.dtype), lm.embed(ids)], axis=1)
    full = jnp.concatenate([jnp.ones(prefix.shape[:2], bool), mask], axis=1)
    logits, _ = lm(inputs_embeds=embeds, attention_mask=full)
    logp = jax.nn.log_softmax(logits[:, k:-1].astype(jnp.float32), axis=-1)
    picked = jnp.take_along_axis(logp, ids[:, 1:, None], axis=-1)[..., 0]
    return jnp.sum(jnp.where(target[:, 1:], picked, 0.0), axis=1)

  prefix = jnp.zeros((ids.shape[0], 0, lm.cfg.hidden_size), lm.dtype) if prefix is None else prefix
  return ("logprob", graphdef, fn, state, jnp.asarray(ids, jnp.int32), jnp.asarray(mask, bool),
          jnp.asarray(target, bool), jnp.asarray(prefix, lm.dtype))


def answer_logprob(lm, prompts: list[list[int]], answers: list[list[int]], width: int, settings: Settings,
                   prefix_embeds=None) -> np.ndarray:
  """Log-probability of each generated answer (its tokens and the EOS that ended it, if any)
  after its prompt, teacher forced: the confidence of a text-reading system. One batch."""
  rows = [p + a for p, a in zip(prompts, answers)]
  ids = np.full((len(rows), width), settings.pad_id, np.int32)
  mask, target = np.zeros((len(rows), width), bool), np.zeros((len(rows), width), bool)
  for i, (row, p) in enumerate(zip(rows, prompts)):
    if len(row) > width:
      raise ValueError(f"a prompt and answer of {len(row)} tokens exceed the width {width}")
    ids[i, width - len(row):], mask[i, width - len(row):] = row, True  # left padded, as generated
    target[i, width - len(row) + len(p):] = True
  return np.asarray(programs.call(*_logprob_program(lm, ids, mask, target, prefix_embeds)))


def answer_tokens(tokens, settings: Settings) -> list[list[int]]:
  """Generated rows cut after their EOS (kept: its probability is part of the answer's)."""
  rows = np.asarray(tokens).tolist()
  return [row[:row.index(settings.eos_id) + 1] if settings.eos_id in row else row for row in rows]
