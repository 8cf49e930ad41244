"""Latency of the `references` mode's systems at one question per document (its timing.json).

Each system does all of its work for the document and the question, with nothing cached from an
earlier question, and answers one question at a time (an answer batch of one); the systems take
turns question by question (`timing._timed`), on the first `eval.latency_questions` test
questions (one per document), after an untimed pass that compiles every program:
- the text buffer under the rule chosen on validation: notes extracted from every chunk of the
  document (generation), kept by its rule, then the answer;
- `retrieval`: BM25 over the document's chunks, then the answer from the best;
- `expanded`: the scorer (the question's LM states, the chunks' keys, the scores), then the
  answer from its chunks;
- `extracted`: the scorer, then its sentences (the names, the chunks' order), then the answer;
- `iterative`: the scorer, `expanded`'s answer where it is the second query (the draft), BM25 of
  the second query over the chunks (or the trained second hop's scores given the top chunk), then
  the answer from the scorer's top chunk and that best;
- `paged`, `hybrid`: the scorer, the pages of the chunks it picks (the frozen LM and the encoder
  over those chunks only), then the pager's answer and its sufficiency head;
- `tree`: the pages of every chunk of the document (no page kept from an earlier question), the
  tree over them, then the pager's answer and its sufficiency head.
The oracle is not timed (it reads the labels). `ratio_<system>`: the text buffer's mean seconds
per question over the system's, with a bootstrap interval over the timed questions (a
resampled question brings both systems' figures). Wall time, and the process's CPU time beside it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxlab.core.stats import bootstrap_claim
from jaxlab.paging import expansion, figures as figures_lib, hybrid, pager as pager_lib, timing

FILE = "timing.json"


def measure(setup, config, records: list[dict], buffer_rule: str, read, chooser=None,
            trained: dict | None = None, second_round=None, second=None) -> dict:
  """timing.json of a `references` run: {"ids", "text_buffer": its rule's name, "systems": {name:
  {"wall_s", "cpu_s"}: seconds per question}}; `read` the mode's text reader
  (`references.read`), `chooser` the trained `expansion.Expander`, `trained` {reader: its
  trained pager} (`hybrid.fit`), `second_round` the iterative reader's scores
  (`references.iterative_scores`), `second` its trained second hop, if any."""
  c = config
  one = config.copy_and_resolve_references()
  one.eval.batch_size = 1
  keep = buffer_rule.removeprefix("text_buffer_")
  tb = dataclasses.replace(setup.text_buffer(records, keep="" if keep == "first" else keep), answer_batch_size=1)

  def text_buffer(r):
    tb.buffers = {}   # the notes are extracted again
    return tb.answer([r])

  systems = {buffer_rule: text_buffer}
  readers = tuple(c.references.readers)
  if "retrieval" in readers:
    systems["retrieval"] = lambda r: read(setup, one, [r], "retrieval", tb, batch_size=1)
  scorer = chooser and chooser.one_at_a_time()
  hop = second and second.one_at_a_time()
  for reader in [r for r in ("expanded", "extracted") if r in readers]:
    systems[reader] = lambda r, reader=reader: read(setup, one, [r], reader, tb, scorer.scores([r]), batch_size=1)
  if "iterative" in readers:
    def iterative(r):
      first = scorer.scores([r])
      draft = read(setup, one, [r], "expanded", tb, first, batch_size=1)["answers"] if drafts else None
      return read(setup, one, [r], "iterative", tb, second_round(setup.tokenizer, one, [r], first, draft, hop),
                  batch_size=1)
    drafts = expansion.needs_draft(c)
    systems["iterative"] = iterative
  for reader in [r for r in readers if r in hybrid.READERS]:
    got = trained[reader]
    if got.get("level0") is not None:
      got = {**got, "level0": got["level0"].fresh()}   # every chunk's pages made again per question
    model = pager_lib.Reader(setup.lm, got["graphdef"], got["params"], setup.settings, c.eval.pager_confidence)
    scores_of = (lambda r: scorer.scores([r])) if reader in hybrid.SCORED else (lambda r: None)
    systems[reader] = lambda r, reader=reader, got=got, model=model, scores_of=scores_of: hybrid.answer(
        setup, one, reader, got, [r], scores_of(r), model=model, batch_size=1)
  seconds = timing._timed({s: (fn, records) for s, fn in systems.items()}, records)
  return {"ids": [r["id"] for r in records], "text_buffer": buffer_rule,
          "systems": {s: {"wall_s": wall, "cpu_s": cpu} for s, (wall, cpu) in seconds.items()}}


def summarize(timed: dict, resamples: int, seed: int) -> dict:
  """{"latency": {system: mean seconds per question with its interval}, "ratio": {"ratio_<system>":
  the text buffer's mean over the system's, with its interval}} (wall clock)."""
  wall = {s: np.asarray(t["wall_s"], np.float64) for s, t in timed["systems"].items()}
  base = wall[timed["text_buffer"]]
  ratio = {}
  for s, x in wall.items():
    if s != timed["text_buffer"]:
      out = bootstrap_claim(lambda idx, x=x: base[idx].mean(axis=-1) / x[idx].mean(axis=-1), len(x), resamples, seed)
      ratio[f"ratio_{s}"] = {"mean": out["diff"], "ci": out["ci"], "n": out["n"]}
  return {"latency": {s: figures_lib.mean_ci(x, resamples, seed) for s, x in wall.items()}, "ratio": ratio}
