"""Latency per question and peak device memory, measured the same way for every system on the
same device (latent-pager.md's latency and memory columns; the latency ratio of the report's
headline and bar is computed from these latencies).

Latency: questions answered one at a time (answer batch of one) from the document text with
nothing cached: the pager runs the frozen LM over the chunks (the stored pooled states of the
published arm are recomputed; `slots` reads the token states inside its encoder), makes its soft
tokens and generates, then asks its sufficiency head (when it has one) about the state generation
returned; the text buffer generates every chunk's extraction, then its answer, whose
log-probability (its confidence for abstaining, the counterpart of the pager's head) the answer's
generation returns; the full-context reference (on questions whose document fits the window)
answers from the whole document and scores its answer the same way. A question's chunks go in
one call of `max_pages` rows (the pager's own layout; the text buffer's extraction and the
published arm's forward get the same, rather than the `pages.batch_size` rows of bulk
evaluation, which would make one document pay for 64 rows). Every system's programs are made
before the first question (`pager.Reader`, the text buffer's generators), and one warm-up
question per system compiles them, so no compile and no setup is timed; wall time until the
answer text exists, and the process's CPU time beside it. The systems take turns question by question, so a
change in the load of a shared machine reaches all of them alike instead of whichever system's
block of questions ran at the time (two runs of `cpu` timed in blocks gave ratios of 3.05 and
1.83, each with a tight interval of its own).

Peak memory: XLA's own account (arguments + outputs + temporaries - aliased) of each compiled
program a system ran, and the largest of them. The same measure on CPU, GPU and TPU, independent
of what else the process holds (a process-wide peak counter would carry the first system's peak
into the second's).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from jaxlab.paging import encoders, pager as pager_lib, pages, text_buffer


def _timed(systems: dict, records) -> dict:
  """{system: (wall seconds, CPU seconds)} per question, the systems in turn on each question.
  `systems` maps a name to (answer function, the records it answers)."""
  for fn, mine in systems.values():
    fn(mine[0])  # compiles
  out = {s: ([], []) for s in systems}
  for r in records:
    for s, (fn, mine) in systems.items():
      if any(r is m for m in mine):
        t0, c0 = time.perf_counter(), time.process_time()
        fn(r)
        out[s][0].append(time.perf_counter() - t0)
        out[s][1].append(time.process_time() - c0)
  return out


ALL = ("latent_pager", "text_buffer", "full_context")


def measure(setup, config, trained: dict | None, tb: text_buffer.TextBuffer, records, systems=ALL) -> dict:
  """{system: {"latency_s": [...], "cpu_s": [...], "ids": [...], "peak_bytes": int}} over `records`
  (the full context on those whose document fits, when `eval.full_context`)."""
  lm, tok, store, c = setup.lm, setup.tokenizer, setup.store, config
  timed, peak = {}, {}

  rows = trained["max_pages"] if trained else c.pages.max_pages or store.settings.batch_size
  per_question = dataclasses.replace(store.settings, batch_size=rows)
  if "latent_pager" in systems:
    reader = pager_lib.Reader(lm, trained["graphdef"], trained["params"], setup.settings, c.eval.pager_confidence)
    stored = encoders.get(c.pager.encoder).stored_states
    forward = pages.Forward(lm, per_question) if stored else None

    class Fresh(pager_lib.Documents):
      """One document's inputs computed from its text now (pooled: the LM over its chunks)."""

      def __init__(self, document):
        self.kind, self.store = encoders.get(c.pager.encoder), store
        chunks = store.chunks(document)
        self.items = [pages.states_of_chunks(forward, chunks, setup.pad) if stored else chunks]

    def pager_question(r):
      return reader.answer(tok, Fresh(r["document"]), [0], [r["question"]], c.prompts.pager,
                           max_pages=trained["max_pages"], width=trained["q_width"], batch_size=1,
                           abstain=setup.abstain)

    timed["latent_pager"] = (pager_question, records)
    peak["latent_pager"] = _pager_peak(setup, config, trained, reader, forward)
  one = dataclasses.replace(tb, answer_batch_size=1, extract_batch_size=rows)
  if "text_buffer" in systems:

    def text_question(r):
      one.buffers = {}  # nothing cached: every extraction is generated again
      return one.answer([r])

    timed["text_buffer"] = (text_question, records)
    peak["text_buffer"] = max(one.extractor.peak_bytes(rows, tb.extract_width, 0),
                              one.answerer.peak_bytes(1, tb.answer_width, 0))
  if "full_context" in systems and c.eval.full_context:
    fits = [r for r in records if text_buffer.fits(tok, r, c.prompts.answer, setup.settings, c.model.context_tokens)]
    if len(fits) >= 2:
      timed["full_context"] = (lambda r: text_buffer.full_context(
          one.answerer, tok, [r], c.prompts.answer, c.model.context_tokens, 1, setup.abstain), fits)
  seconds = _timed(timed, records)
  return {s: {"latency_s": seconds[s][0], "cpu_s": seconds[s][1], "ids": [r["id"] for r in mine],
              **({"peak_bytes": peak[s]} if s in peak else {})} for s, (_, mine) in timed.items()}


def _pager_peak(setup, config, trained, reader, forward) -> int:
  lm, store, c = setup.lm, setup.store, config
  if encoders.get(c.pager.encoder).stored_states:
    inputs = dict(zip(("states", "page_mask"), pages.batch_pages(
        [np.zeros((1, len(store.settings.hidden_layers), lm.cfg.hidden_size), np.float32)], trained["max_pages"])))
  else:
    inputs = pager_lib.chunk_inputs([[[setup.pad]]], trained["max_pages"], store.settings.chunk_tokens, setup.pad)
  out = [reader.peak_bytes(inputs, trained["q_width"])]
  if forward is not None:
    out.append(forward.peak_bytes())
  return max(out)
