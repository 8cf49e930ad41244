"""The pretraining rows of the small base model: prompt formats,
the word-level tokenizer, and the encoded curriculum stages.

Formats (the latent pager uses the same ones, see docs/lm.md):

  qa, fact_qa   {context}\n\nQuestion: {q1}\nAnswer: {a1}<eos>Question: {q2}\nAnswer: {a2}<eos>...
  extract       {context}\n\nKey facts: {fact}. {fact}.<eos>
  document      {context}<eos>

The whitespace pre-tokenizer drops newlines, so `prompt(context, q)` tokenizes exactly as the head of
a training row. Each row carries a flag per token: set on answers, key facts and <eos> (the targets),
clear on the context and questions, whose loss is scaled by `data.context_loss_weight`. A row that
would pass `seq_len` keeps as many whole question/answer pairs as fit; an example whose first pair
does not fit is right-truncated.

The curriculum is a list of stages (share of the steps, seq_len, fewest and most window words): short
windows in short rows first, then longer ones. Each stage has its own rows, generated from its own
seed, so the batch of a step depends only on (seed, stage, step).
"""

from __future__ import annotations

import numpy as np
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from jaxlab.data import long_doc_qa

SPECIALS = ("<pad>", "<eos>", "<unk>")
PAD, EOS = 0, 1


def prompt(context: str, question: str) -> str:
  """What the model is asked with; it answers `' ' + answer` then <eos>."""
  return f"{context}\n\nQuestion: {question}\nAnswer:"


def extract_prompt(context: str) -> str:
  """What the model is asked for key facts with; it answers the facts then <eos>."""
  return f"{context}\n\nKey facts:"


def segments(ex: dict) -> list[list[tuple[str, bool]]]:
  """An example as groups of (text, is_target) pieces; groups are the units truncation keeps whole.
  The text "<eos>" stands for the EOS token."""
  if ex["kind"] in ("qa", "fact_qa"):
    pairs = zip(ex["question"].split("\n"), ex["target"].split("\n"))
    return [[(prompt(ex["context"], q) if i == 0 else f"Question: {q}\nAnswer:", False), (a, True),
             ("<eos>", True)] for i, (q, a) in enumerate(pairs)]
  if ex["kind"] == "extract":
    return [[(extract_prompt(ex["context"]), False), (ex["target"], True), ("<eos>", True)]]
  return [[(ex["context"], True), ("<eos>", True)]]


def stage_examples(config, stage: int, split: str, num: int) -> list[dict]:
  _, _, lo, hi = config.data.stages[stage]
  cfg = long_doc_qa.LongDocQAConfig(
      name=f"lm_pretrain_{stage}", corpus="pretrain", seed=config.seed * 1000 + stage,
      distractor_ratio=config.data.distractor_ratio, min_window_tokens=lo, window_tokens=hi,
      questions_per_window=config.data.questions_per_window, train_wordings=config.data.train_wordings)
  return list(long_doc_qa.generate_pretrain(cfg, split, num, tuple(config.data.kinds)))


def texts(examples: list[dict]):
  """The text pieces of `examples` as rows hold them: "<eos>" is the EOS token, not text (read as
  text it would add "<", "eos" and ">" to the vocabulary, words no row holds, whose embeddings no
  step trains)."""
  return (t for ex in examples for g in segments(ex) for t, _ in g if t != "<eos>")


def train_tokenizer(texts) -> Tokenizer:
  """Word-level: the generated world has about a thousand words, so each is one token."""
  tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
  tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
  tokenizer.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=list(SPECIALS)))
  assert [tokenizer.token_to_id(s) for s in SPECIALS] == [PAD, EOS, 2]
  return tokenizer


def encode_rows(tokenizer: Tokenizer, examples: list[dict], seq_len: int) -> tuple[np.ndarray, np.ndarray]:
  """(N, seq_len) int32 ids right-padded with <pad>, and the (N, seq_len) bool target flags."""
  groups = [segments(ex) for ex in examples]
  encoded = iter(enc.ids for enc in tokenizer.encode_batch(list(texts(examples))))
  ids = np.full((len(examples), seq_len), PAD, np.int32)
  flags = np.zeros((len(examples), seq_len), bool)
  for r, g in enumerate(groups):
    row, flag = [], []
    for k, group in enumerate(g):
      pieces = [([EOS] if t == "<eos>" else next(encoded), target) for t, target in group]
      new = [i for p, _ in pieces for i in p]
      if k == 0 or len(row) + len(new) <= seq_len:
        row += new
        flag += [target for p, target in pieces for _ in p]
    ids[r, :min(len(row), seq_len)] = row[:seq_len]
    flags[r, :min(len(row), seq_len)] = flag[:seq_len]
  return ids, flags


def stage_bounds(config) -> list[int]:
  """The first step of each stage, then config.steps."""
  shares = np.cumsum([s[0] for s in config.data.stages])
  return [0] + [int(round(config.steps * x / shares[-1])) for x in shares]


def stage_of(bounds: list[int], step: int) -> int:
  return int(np.searchsorted(bounds, step, side="right") - 1)


def batch_rows(n: int, batch_size: int, seed: int, stage: int, step: int) -> np.ndarray:
  """Row indices of the `step`-th batch of a stage: a fresh permutation per epoch of its rows."""
  per_epoch = n // batch_size
  if per_epoch == 0:
    raise ValueError(f"data.num_train gives {n} rows to a stage, fewer than batch_size={batch_size}")
  epoch, i = divmod(step, per_epoch)
  order = np.random.default_rng([seed, stage, epoch]).permutation(n)
  return order[i * batch_size:(i + 1) * batch_size]
