"""Latency per question and peak device memory, measured the same way for both systems
(issue 8, "latency per question and peak device memory ... on the same device").

Latency: questions answered one at a time (answer batch of one) from the document text with
nothing cached: the pager runs the frozen LM over the chunks, the text buffer generates every
chunk's extraction, both in calls of `pages.batch_size` chunks; then each generates its answer.
One warm-up question first, so no compile is timed; wall time until the answer text exists.

Peak memory: XLA's own account (arguments + outputs + temporaries - aliased) of each compiled
program a system ran for those questions, and the largest of them. The same measure on CPU, GPU
and TPU, independent of what else the process holds (a process-wide peak counter would carry the
first system's peak into the second's).
"""

from __future__ import annotations

import dataclasses
import time

from jaxlab.paging import generation, pager as pager_lib, pages
from jaxlab.paging.text_buffer import TextBuffer


def _timed(fn, records) -> list[float]:
  fn(records[0])  # compiles
  out = []
  for r in records:
    t0 = time.perf_counter()
    fn(r)
    out.append(time.perf_counter() - t0)
  return out


def measure(lm, tokenizer, store: pages.PageStore, graphdef, params, tb: TextBuffer, records, *, template: str,
            max_pages: int, width: int, num_soft_tokens: int, settings, pad_id: int) -> dict:
  """{system: {"latency_s": [...], "peak_bytes": int}} over `records`."""

  def pager_question(r):
    states = pages.states_of_chunks(lm, store.chunks(r["document"]), store.settings, pad_id)
    return pager_lib.answer(lm, tokenizer, graphdef, params, [states], [r["question"]], template, max_pages=max_pages,
                            width=width, settings=settings, batch_size=1)

  def text_question(r):
    return dataclasses.replace(tb, answer_batch_size=1).answer([r])  # a fresh, empty buffer cache

  latency = {"latent_pager": _timed(pager_question, records), "text_buffer": _timed(text_question, records)}
  peak = {
      "latent_pager": max(pages.forward_bytes(lm, store.settings),
                          pager_lib.soft_bytes(graphdef, params, 1, max_pages, len(store.settings.hidden_layers),
                                               lm.cfg.hidden_size),
                          generation.generate_bytes(lm, settings, 1, width, num_soft_tokens)),
      "text_buffer": max(generation.generate_bytes(lm, tb.extract_settings, store.settings.batch_size,
                                                   tb.extract_width, 0),
                         generation.generate_bytes(lm, settings, 1, tb.answer_width, 0)),
  }
  return {s: {"latency_s": latency[s], "peak_bytes": peak[s]} for s in latency}
