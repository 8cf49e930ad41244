"""The text-buffer baseline (latent-pager.md: "runs the LM to generate a text summary for each chunk,
concatenates all the summaries, and runs the LM again to generate a final answer").

Each chunk (the same token chunks the pager reads, in calls of the same `pages.batch_size` chunks)
is put into the `prompts.extract` template and the frozen LM generates its key facts; a document's
extractions are joined with `text_buffer.separator` and cut to the first
`text_buffer.max_context_tokens` tokens (published: 4,096 for Qwen3-1.7B); the answer is generated
from the `prompts.answer` template with the generation settings shared with the pager
(`jaxlab.paging.generation`), in batches of `eval.batch_size` like the pager's. Extractions depend
only on the document, so every question on a document reuses them.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from tqdm.auto import tqdm

from jaxlab.paging import generation
from jaxlab.paging.generation import Settings
from jaxlab.paging.pager import fixed_batches, left_padded


def _enc(tokenizer, text: str) -> list[int]:
  return tokenizer.encode(text).ids if text else []


def wrap(tokenizer, template: str, field: str, inner: list[int], **fields) -> list[int]:
  """Token ids of `template` with already-tokenized `inner` at {field} (it is not re-tokenized)."""
  before, sep, after = template.partition("{" + field + "}")
  if not sep:
    raise ValueError(f"prompt template {template!r} has no {{{field}}}")
  return _enc(tokenizer, before.format(**fields)) + list(inner) + _enc(tokenizer, after.format(**fields))


def round_up(n: int, multiple: int = 32) -> int:
  return -(-n // multiple) * multiple


def generate_rows(generator: generation.Generator, tokenizer, rows: list[list[int]], batch_size: int, width: int,
                  desc: str, abstain: generation.Abstain | None = None,
                  confidence: bool = False) -> tuple[list[str], np.ndarray | None]:
  """Generated text for each prompt (token ids), in batches of one shape (batch_size, width), and
  with `confidence` the log-probability of each generated answer (returned by generation itself)."""
  ids, mask = left_padded(rows, width)
  out, conf = [], []
  for idx, keep in tqdm(fixed_batches(len(rows), batch_size), desc=desc, unit="batch", leave=False,
                        disable=len(rows) <= batch_size):
    got = generator(ids[idx], mask[idx])
    out += generation.decode(tokenizer, got.tokens, generator.settings, abstain)[:keep]
    if confidence:
      conf.append(got.logprob[:keep])
  return out, (np.concatenate(conf) if confidence else None)


@dataclasses.dataclass
class TextBuffer:
  lm: object
  tokenizer: object
  store: object            # jaxlab.paging.pages.PageStore: the same chunks as the pager
  settings: Settings       # the answer settings shared with the pager
  extract_settings: Settings
  prompts: dict
  separator: str
  max_context_tokens: int
  answer_batch_size: int
  answer_width: int        # see `answer_width`
  abstain: generation.Abstain | None = None
  extract_batch_size: int = 0  # chunks per extraction call; 0: `pages.batch_size`

  def __post_init__(self):
    self.buffers: dict[str, list[int]] = {}
    self.extractor = generation.Generator(self.lm, self.extract_settings)
    self.answerer = generation.Generator(self.lm, self.settings)

  @property
  def extract_width(self) -> int:
    return round_up(self.store.settings.chunk_tokens + len(wrap(self.tokenizer, self.prompts["extract"], "chunk", [])))

  def buffer_ids(self, documents: list[str]) -> list[list[int]]:
    """Joined, truncated extractions per document (computed once per document)."""
    missing = [d for d in dict.fromkeys(documents) if d not in self.buffers]
    if missing:
      chunks = [self.store.chunks(d) for d in missing]
      rows = [wrap(self.tokenizer, self.prompts["extract"], "chunk", c) for cs in chunks for c in cs]
      texts, _ = generate_rows(self.extractor, self.tokenizer, rows,
                               self.extract_batch_size or self.store.settings.batch_size, self.extract_width, "extract")
      at = 0
      for doc, cs in zip(missing, chunks):
        joined = self.separator.join(t.strip() for t in texts[at:at + len(cs)])
        at += len(cs)
        self.buffers[doc] = _enc(self.tokenizer, joined)[:self.max_context_tokens]
    return [self.buffers[d] for d in documents]

  def answer(self, records: list[dict], confidence: bool = True) -> tuple[list[str], np.ndarray | None]:
    """Answers and (with `confidence`) their log-probabilities."""
    buffers = self.buffer_ids([r["document"] for r in records])
    rows = [wrap(self.tokenizer, self.prompts["answer"], "context", b, question=r["question"])
            for b, r in zip(buffers, records)]
    return generate_rows(self.answerer, self.tokenizer, rows, self.answer_batch_size, self.answer_width,
                         "answer", self.abstain, confidence)


def answer_width(tokenizer, template: str, max_context_tokens: int, records) -> int:
  """The one width of every answer prompt of a run: the longest question with a full buffer."""
  return round_up(max_context_tokens + max(len(wrap(tokenizer, template, "context", [], question=r["question"]))
                                           for r in records))


def full_prompt(tokenizer, template: str, record: dict) -> list[int]:
  return wrap(tokenizer, template, "context", _enc(tokenizer, record["document"]), question=record["question"])


def fits(tokenizer, record: dict, template: str, settings: Settings, context_tokens: int) -> bool:
  """Whether the document, the question and the answer budget fit in the LM's window."""
  return len(full_prompt(tokenizer, template, record)) + settings.max_new_tokens <= context_tokens


def full_context(generator: generation.Generator, tokenizer, records: list[dict], template: str, context_tokens: int,
                 batch_size: int, abstain: generation.Abstain | None = None) -> tuple[list, list]:
  """The full-context reference: the whole document in the LM's window, where the prompt and
  `max_new_tokens` fit in `context_tokens`; (answers, log-probabilities) with None where it does not.
  `generator` is the frozen LM's with the answer settings (a text buffer's `answerer`)."""
  settings = generator.settings
  rows = [full_prompt(tokenizer, template, r) for r in records]
  fits = [i for i, row in enumerate(rows) if len(row) + settings.max_new_tokens <= context_tokens]
  answers, conf = [None] * len(records), [None] * len(records)
  if fits:
    width = round_up(max(len(rows[i]) for i in fits))
    got, logp = generate_rows(generator, tokenizer, [rows[i] for i in fits], batch_size, width, "full context",
                              abstain, confidence=True)
    for i, a, c in zip(fits, got, logp):
      answers[i], conf[i] = a, float(c)
  return answers, conf
