"""One generation path for both systems (latent-pager.md, "The Repetition Penalty Breakthrough").

The published run answered with different settings per system (the text buffer 256 tokens without
a repetition penalty or sentence dedup; the pager 128 tokens with penalty 1.3 and dedup). Here
every answer of either system goes through `answer_texts` with the one `Settings` built from the
config's `generation` block: greedy, the same max new tokens, repetition penalty and EOS, then the
same truncation at the first repeated sentence.
"""

from __future__ import annotations

import dataclasses

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


def decode(tokenizer, tokens, settings: Settings) -> list[str]:
  texts = tok_lib.decode_batch(tokenizer, tokens, settings.eos_id)
  return [truncate_repeats(t) if settings.truncate_repeats else t for t in texts]
