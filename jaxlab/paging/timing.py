"""Latency and peak device memory, measured the same way for every system on the same device
(latent-pager.md's latency and memory columns). `served` times the `compare` run (its timing.json;
the report's latency tables, the latency ratio of its headline and the bar's latency part);
`measure` times the frontier's points one question at a time.

Latency as served (`served`): a workload of Q questions per document, for each Q of
`eval.questions_per_document_timed`. Each system keeps what depends on the document alone and
does that work once per document (ingestion), then answers the document's questions one at a
time (answer batch of one), each answer timed on its own, with no answer kept: the pager makes
the document's soft tokens (its pages per chunk: the frozen LM over the chunks, then the
encoder, and the aggregator where it has one; the stored pooled states of the published arm are
recomputed, never read from the page store) and answers every question from them, asking its
sufficiency head (when it has one) about the state generation returned; the text buffer
generates every chunk's extraction and joins them into its notes, then generates each answer
from the notes, whose log-probability (its confidence) the answer's generation returns. A
document's chunks go in one call of `max_pages` rows (the pager's own layout; the text buffer's
extraction and the published arm's forward get the same).

Questions: the test split holds one question per document, so a document's j-th question is
its own questions in turn (with one, the same question asked Q times). Every answer does the
same work whether or not the question was asked before (nothing is cached but the document's
memory), so repeating a question measures answering as honestly as another question on the
document would, with no question invented for timing.

One workload covers every Q: per document, ingestion, then max(Q) answers, then the first-token
call below; at Q the figures read the first Q answers (what a workload of Q questions would have
timed, since later answers come after them). Per system and Q, each document gives:
- ingestion: the seconds of the document work;
- per question: the mean seconds of its first Q answers (answering only);
- time to first token (TTFT): ingestion plus one answer call of the first question with
  `max_new_tokens = 1` (the prompt's prefill and the first decode step; generation runs its
  decode loop inside one compiled program, so the first token of a longer answer is not exposed
  apart). The same for every Q;
- end to end per question: (ingestion + its first Q answers) / Q.

The whole workload runs `eval.latency_repeats` times over the same documents. The systems take
turns document by document, and which goes first alternates from repeat to repeat, so a change
in the load of a shared machine reaches both alike. Wall time until the answer text exists, and
the process's CPU time beside it. Every program is made and compiled before the first timed
document (one untimed pass of the first document per system). A document's figure is its mean
over the repeats; the intervals (`latency.served_latency`) resample documents (a repeat of a
document is not a new document: repeats only average out the timing noise).

Latency per question (`measure`, the frontier's points): questions answered one at a time with
nothing cached: each system redoes all its document work per question; the full-context
reference (on questions whose document fits the window) answers from the whole document. The
systems take turns question by question.

Peak memory: XLA's own account (arguments + outputs + temporaries - aliased) of each compiled
program a system ran, and the largest of them. The same measure on CPU, GPU and TPU, independent
of what else the process holds (a process-wide peak counter would carry the first system's peak
into the second's).
"""

from __future__ import annotations

import dataclasses
import time

import jax
import numpy as np

from jaxlab.paging import encoders, pager as pager_lib, pages, text_buffer

SERVED = ("latent_pager", "text_buffer")


@dataclasses.dataclass(frozen=True)
class TimingSpec:
  """What the timing reads of a run's config (`of`)."""
  questions_per_document: tuple[int, ...]   # `eval.questions_per_document_timed`: the Q of `served`
  repeats: int                              # `eval.latency_repeats`
  encoder: str                              # `pager.encoder`
  pager_confidence: str                     # `eval.pager_confidence`
  pager_prompt: str                         # `prompts.pager`
  answer_prompt: str                        # `prompts.answer`
  max_pages: int                            # `pages.max_pages` (0: the page store's batch)
  full_context: bool                        # `eval.full_context`
  context_tokens: int                       # `model.context_tokens`

  @classmethod
  def of(cls, config) -> TimingSpec:
    e = config.eval
    return cls(questions_per_document=tuple(int(q) for q in e.questions_per_document_timed),
               repeats=int(e.latency_repeats), encoder=config.pager.encoder, pager_confidence=e.pager_confidence,
               pager_prompt=config.prompts.pager, answer_prompt=config.prompts.answer,
               max_pages=config.pages.max_pages, full_context=bool(e.full_context),
               context_tokens=config.model.context_tokens)
PARTS = ("ingest", "answer", "first_token")
CLOCKS = ("wall_s", "cpu_s")


class _Fresh(pager_lib.Documents):
  """One document's pager inputs computed from its text now, never read from the page store:
  its chunks, or (an encoder of stored states) the frozen `forward` over them."""

  def __init__(self, kind, store, document, forward, pad):
    chunks = store.chunks(document)
    self.kind, self.store = kind, store
    self.items = [pages.states_of_chunks(forward, chunks, pad) if forward else chunks]


def _clocked(fn, *args):
  """(fn(*args), wall seconds, CPU seconds)."""
  t0, c0 = time.perf_counter(), time.process_time()
  out = fn(*args)
  return out, time.perf_counter() - t0, time.process_time() - c0


def _one_token(settings):
  return dataclasses.replace(settings, max_new_tokens=1)


def _by_document(records) -> tuple[list[dict], dict]:
  """The first record of each document, in order, and each document's questions."""
  questions, first = {}, []
  for r in records:
    if r["document"] not in questions:
      first.append(r)
    questions.setdefault(r["document"], []).append(r["question"])
  return first, questions


def served(setup, spec: TimingSpec, trained: dict, tb: text_buffer.TextBuffer, records) -> dict:
  """timing.json of `compare` (see the module docstring): {"questions_per_document", "repeats",
  system: {"ids", "wall_s" and "cpu_s": {"ingest": (repeats, documents), "answer": (repeats,
  documents, max Q), "first_token": (repeats, documents)}, "peak_bytes"}} over the documents of
  `records` (one per document: the first record on it)."""
  lm, tok, store = setup.lm, setup.tokenizer, setup.store
  qs, repeats = list(spec.questions_per_document), spec.repeats
  most = max(qs)
  timed, asked = _by_document(records)
  question = lambda r, j: asked[r["document"]][j % len(asked[r["document"]])]

  rows = trained["max_pages"]
  q_width = max(trained["q_width"], pager_lib.question_width(tok, spec.pager_prompt, records))
  per_document = dataclasses.replace(store.settings, batch_size=rows)
  kind = encoders.get(spec.encoder)
  args = (lm, trained["graphdef"], trained["params"])
  reader = pager_lib.Reader(*args, setup.settings, spec.pager_confidence)
  first = pager_lib.Reader(*args, _one_token(setup.settings), "answer")
  forward = pages.Forward(lm, per_document) if kind.stored_states else None

  def pager_ingest(document):
    return jax.block_until_ready(reader.soft_tokens(_Fresh(kind, store, document, forward, setup.pad).batch([0], rows)))

  def pager_answer(soft, q, model=reader):
    return model.answer_from(tok, soft, [q], spec.pager_prompt, width=q_width, abstain=setup.abstain)

  one = dataclasses.replace(tb, answer_batch_size=1, extract_batch_size=rows)
  one_first = dataclasses.replace(one, settings=_one_token(tb.settings))

  def text_ingest(document):
    one.buffers = {}   # the notes are generated again
    one.buffer_ids([document])
    one_first.buffers = one.buffers
    return document

  def text_answer(document, q, model=one, confidence=True):
    return model.answer([{"document": document, "question": q}], confidence)

  systems = {"latent_pager": (pager_ingest, pager_answer, lambda soft, q: pager_answer(soft, q, first)),
             "text_buffer": (text_ingest, text_answer, lambda d, q: text_answer(d, q, one_first, False))}
  for ingest, answer, first_token in systems.values():   # makes and compiles every program, untimed
    memory = ingest(timed[0]["document"])
    answer(memory, question(timed[0], 0))
    first_token(memory, question(timed[0], 0))
  seconds = {s: {p: np.zeros((repeats, len(timed), *((most,) if p == "answer" else ()), len(CLOCKS))) for p in PARTS}
             for s in systems}
  for rep in range(repeats):
    for d, r in enumerate(timed):
      for s in (SERVED if rep % 2 == 0 else SERVED[::-1]):   # in turn; the first alternates by repeat
        ingest, answer, first_token = systems[s]
        t = seconds[s]
        memory, *ingested = _clocked(ingest, r["document"])
        t["ingest"][rep, d] = ingested
        for j in range(most):
          t["answer"][rep, d, j] = _clocked(answer, memory, question(r, j))[1:]
        t["first_token"][rep, d] = _clocked(first_token, memory, question(r, 0))[1:]
  peak = {"latent_pager": _pager_peak(setup, kind, trained, reader, forward), "text_buffer": _text_peak(one, rows)}
  ids = [r["id"] for r in timed]
  return {"questions_per_document": qs, "repeats": repeats,
          **{s: {"ids": ids, **{k: {p: seconds[s][p][..., i].tolist() for p in PARTS} for i, k in enumerate(CLOCKS)},
                 "peak_bytes": peak[s]} for s in systems}}


# ----------------------------------------------------------------------------- one question at a time
def _timed(systems: dict, records) -> dict:
  """{system: (wall seconds, CPU seconds)} per question, the systems in turn on each question.
  `systems` maps a name to (answer function, the records it answers)."""
  for fn, mine in systems.values():
    fn(mine[0])  # compiles
  out = {s: ([], []) for s in systems}
  for r in records:
    for s, (fn, mine) in systems.items():
      if any(r is m for m in mine):
        _, wall, cpu = _clocked(fn, r)
        out[s][0].append(wall)
        out[s][1].append(cpu)
  return out


ALL = ("latent_pager", "text_buffer", "full_context")


def measure(setup, spec: TimingSpec, trained: dict | None, tb: text_buffer.TextBuffer, records, systems=ALL) -> dict:
  """{system: {"latency_s": [...], "cpu_s": [...], "ids": [...], "peak_bytes": int}} over `records`
  (the full context on those whose document fits, when `eval.full_context`), nothing cached."""
  lm, tok, store = setup.lm, setup.tokenizer, setup.store
  timed, peak = {}, {}

  rows = trained["max_pages"] if trained else spec.max_pages or store.settings.batch_size
  per_question = dataclasses.replace(store.settings, batch_size=rows)
  if "latent_pager" in systems:
    reader = pager_lib.Reader(lm, trained["graphdef"], trained["params"], setup.settings, spec.pager_confidence)
    kind = encoders.get(spec.encoder)
    forward = pages.Forward(lm, per_question) if kind.stored_states else None

    width = max(trained["q_width"], pager_lib.question_width(tok, spec.pager_prompt, records))

    def pager_question(r):
      docs = _Fresh(kind, store, r["document"], forward, setup.pad)
      return reader.answer(tok, docs, [0], [r["question"]], spec.pager_prompt, max_pages=trained["max_pages"],
                           width=width, batch_size=1, abstain=setup.abstain)

    timed["latent_pager"] = (pager_question, records)
    peak["latent_pager"] = _pager_peak(setup, kind, trained, reader, forward)
  one = dataclasses.replace(tb, answer_batch_size=1, extract_batch_size=rows)
  if "text_buffer" in systems:

    def text_question(r):
      one.buffers = {}  # nothing cached: every extraction is generated again
      return one.answer([r])

    timed["text_buffer"] = (text_question, records)
    peak["text_buffer"] = _text_peak(one, rows)
  if "full_context" in systems and spec.full_context:
    fits = [r for r in records if text_buffer.fits(tok, r, spec.answer_prompt, setup.settings, spec.context_tokens)]
    if len(fits) >= 2:
      timed["full_context"] = (lambda r: text_buffer.full_context(
          one.answerer, tok, [r], spec.answer_prompt, spec.context_tokens, 1, setup.abstain), fits)
  seconds = _timed(timed, records)
  return {s: {"latency_s": seconds[s][0], "cpu_s": seconds[s][1], "ids": [r["id"] for r in mine],
              **({"peak_bytes": peak[s]} if s in peak else {})} for s, (_, mine) in timed.items()}


def _text_peak(one: text_buffer.TextBuffer, rows: int) -> int:
  return max(one.extractor.peak_bytes(rows, one.extract_width, 0), one.answerer.peak_bytes(1, one.answer_width, 0))


def _pager_peak(setup, kind, trained, reader, forward) -> int:
  lm, store = setup.lm, setup.store
  if kind.stored_states:
    inputs = dict(zip(("states", "page_mask"), pages.batch_pages(
        [np.zeros((1, len(store.settings.hidden_layers), lm.cfg.hidden_size), np.float32)], trained["max_pages"])))
  else:
    inputs = pager_lib.chunk_inputs([[[setup.pad]]], trained["max_pages"], store.settings.chunk_tokens, setup.pad)
  out = [reader.peak_bytes(inputs, trained["q_width"])]
  if forward is not None:
    out.append(forward.peak_bytes())
  return max(out)
