"""One generation path for both systems (latent-pager.md, "The Repetition Penalty Breakthrough").

The published run answered with different settings per system (the text buffer 256 tokens without
a repetition penalty or sentence dedup; the pager 128 tokens with penalty 1.3 and dedup). Here
every answer of either system goes through a `Generator` with the one `Settings` built from the
config's `generation` block: greedy, the same max new tokens, repetition penalty and EOS, then the
same truncation at the first repeated sentence. The same call scores each answer (its
log-probability) and returns the prompt's last state, so no system pays a second pass to decide
whether to abstain.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxlab.lm import tokenizer as tok_lib
from jaxlab.lm.generate import Scored, generate
from jaxlab.paging import programs


@dataclasses.dataclass(frozen=True)
class Settings:
  max_new_tokens: int
  repetition_penalty: float
  eos_id: int
  pad_id: int
  truncate_repeats: bool
  begin_suppress: tuple[int, ...] = ()   # ids no answer may start with (`generate`'s)
  decline: tuple[int, ...] = ()          # of those, the ones that, chosen first unsuppressed, decline


BEGIN_SUPPRESS = ("eos", "pad", "abstain")   # what `generation.begin_suppress` and `decline` may name


def settings_from(config, eos_id: int, pad_id: int, abstain: Abstain | None = None) -> Settings:
  """The config's `generation` block. `begin_suppress` names what no answer may start with: "eos"
  (an empty answer), "pad" (a token no training row holds, so an answer made of it decodes
  empty) and "abstain" (the abstain answer's first token): with all three, every system answers
  every question in words, so F1 before abstaining reads answers alone. `decline` names those of
  them that, where the LM would have begun with one, mean the system declines to answer as
  served (`served_confidence`): the answer in words is still what F1 before abstaining scores."""
  g = config.generation
  names, decline = tuple(g.get("begin_suppress", ())), tuple(g.get("decline", ()))
  if not set(decline) <= set(names):
    raise ValueError(f"generation.decline {decline} names what generation.begin_suppress {names} does not")
  if "abstain" in names and abstain is None:
    raise ValueError("generation.begin_suppress names 'abstain': settings_from needs the abstain answer")
  ids = {"eos": eos_id, "pad": pad_id, "abstain": abstain.ids[0] if abstain else None}
  begin, declined = (tuple(sorted({ids[name] for name in n})) for n in (names, decline))
  return Settings(g.max_new_tokens, float(g.repetition_penalty), eos_id, pad_id, bool(g.truncate_repeats), begin,
                  declined)


def served_confidence(confidence, got: Scored, settings: Settings) -> np.ndarray:
  """`confidence` where the LM's own first token (before `begin_suppress`) is none of
  `settings.decline`, -inf where it is one: the system declined, and no threshold serves that
  answer (`selective.serves`); it ranks below every other answer."""
  confidence = np.asarray(confidence)
  if not settings.decline:
    return confidence
  return np.where(np.isin(got.first, settings.decline), -np.inf, confidence).astype(confidence.dtype)


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


class Generator:
  """Greedy generation by one LM with one `Settings` (penalty, EOS, length): the only generation
  call here. Made once per system and called per batch. Each call returns the tokens (B, N), each
  answer's log-probability (its tokens and the EOS that ended it, under the LM's own
  distribution: a text-reading system's confidence) and the prompt's last state (what the
  pager's sufficiency head reads), all from the one generation program: scoring costs no second
  pass."""

  def __init__(self, lm, settings: Settings):
    self.settings = settings
    graphdef, self.state = nnx.split(lm)
    self.width, self.dtype = lm.cfg.hidden_size, lm.dtype

    def fn(state, ids, mask, prefix):
      return generate(nnx.merge(graphdef, state), ids, mask, max_new_tokens=settings.max_new_tokens,
                      prefix_embeds=prefix, eos_id=settings.eos_id, pad_id=settings.pad_id, greedy=True,
                      repetition_penalty=settings.repetition_penalty, return_scores=True,
                      begin_suppress=settings.begin_suppress)

    self.program = programs.Program("generate", (graphdef, settings), fn)

  def _args(self, ids, mask, prefix):
    prefix = jnp.zeros((len(ids), 0, self.width), self.dtype) if prefix is None else prefix
    return self.state, jnp.asarray(ids, jnp.int32), jnp.asarray(mask, bool), jnp.asarray(prefix, self.dtype)

  def __call__(self, ids, mask, prefix_embeds=None) -> Scored:
    return Scored(*(np.asarray(x) for x in self.program(*self._args(ids, mask, prefix_embeds))))

  def peak_bytes(self, rows: int, width: int, prefix: int) -> int:
    """Peak device memory of the generation program of that shape."""
    ids = np.zeros((rows, width), np.int32)
    return self.program.peak_bytes(*self._args(ids, ids.astype(bool), jnp.zeros((rows, prefix, self.width),
                                                                                 self.dtype)))


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
