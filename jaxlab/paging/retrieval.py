"""Query-aware selection of a document's pieces within a token budget: BM25 (the `bm25s` library,
Lucene's variant with its default k1 = 1.5, b = 0.75 and English stopwords) over the pieces of one
document, and the oracle's pieces, those that hold the question's evidence.

A piece is a chunk of the document (the page store's token chunks: the top-k retrieval reference)
or one chunk's note (the text buffer's `bm25` budget rule). The index is built per document, so a
word's IDF is its rarity among that document's pieces. `select` keeps the best-scoring pieces that
fit the budget, in document order (the order they were written in); ties go to the earlier piece.
"""

from __future__ import annotations

import logging
import re

import bm25s
import numpy as np

from jaxlab.data.documents import chunk_spans

# bm25s sets its own logger to DEBUG: every per-document index would print a line once anything
# has configured the root logger (absl's first warning does).
logging.getLogger("bm25s").setLevel(logging.WARNING)


# A name: two or more capitalised words ("Mara Okafor", "Corvin Systems", "Alder Falls"); a
# sentence: a run up to its full stop (a chunk may start or end inside one).
NAME = re.compile(r"[A-Z][a-z]+(?: [A-Z][a-z]+)+")
SENTENCE = re.compile(r"[^.!?]+[.!?]?")


def bridge_names(question: str, text: str) -> list[str]:
  """The names in the sentences of `text` that mention a name of `question`, other than the
  question's own, in order of first mention: where a two-hop question's bridge entity stands
  beside its subject (the first evidence sentence names both)."""
  asked = NAME.findall(question)
  found = [n for sentence in SENTENCE.findall(text) if any(a in sentence for a in asked)
           for n in NAME.findall(sentence) if n not in asked]
  return list(dict.fromkeys(found))


def sentence_spans(text: str) -> list[tuple[int, int]]:
  """The character spans of `text`'s sentences, the whitespace around each left out."""
  out = []
  for m in SENTENCE.finditer(text):
    piece = m.group()
    start, end = m.start() + len(piece) - len(piece.lstrip()), m.end() - len(piece) + len(piece.rstrip())
    if end > start:
      out.append((start, end))
  return out


def substitute(question: str, name: str) -> str:
  """`question` with each of its names replaced by `name`: the question asked of a bridge entity."""
  return NAME.sub(name, question)


def _tokens(texts: list[str]) -> list[list[str]]:
  return bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)


def bm25_scores(pieces: list[str], query: str) -> np.ndarray:
  """The BM25 score of each piece for `query` (zeros for a query with no word in any piece)."""
  index = bm25s.BM25()
  index.index(bm25s.tokenize(pieces, stopwords="en", show_progress=False), show_progress=False)
  return np.asarray(index.get_scores(_tokens([query])[0]), np.float64)


def second_round(first, second) -> np.ndarray:
  """Scores that rank the piece `first` scores highest above all, then the rest by `second`
  (ties, and a `second` of zeros: by `first`, then the earlier): the order of a two-round reader
  (`select` keeps pieces in this order while they fit)."""
  first, second = np.asarray(first, np.float64), np.asarray(second, np.float64)
  top = int(np.argmax(first))
  order = [top] + sorted((i for i in range(len(first)) if i != top), key=lambda i: (-second[i], -first[i], i))
  out = np.empty(len(first), np.float64)
  out[order] = np.arange(len(first), 0, -1)
  return out


def select(scores, sizes: list[int], budget: int) -> list[int]:
  """Indices of the pieces kept: by score, highest first (ties: earlier), each kept while the
  kept sizes fit `budget`; returned in document order. A piece larger than the budget is never
  kept."""
  order = sorted(range(len(sizes)), key=lambda i: (-float(scores[i]), i))
  kept, used = [], 0
  for i in order:
    if used + sizes[i] <= budget:
      kept.append(i)
      used += sizes[i]
  return sorted(kept)


def merged_ids(ids: list[int], spans: list[tuple[int, int]], kept: list[int], separator: list[int]) -> list[int]:
  """The document's token ids of the kept spans, overlapping or adjacent spans merged into one
  run (an overlap is read once), runs joined by `separator`."""
  runs: list[list[int]] = []
  for s, e in (spans[i] for i in kept):
    if runs and s <= runs[-1][1]:
      runs[-1][1] = max(runs[-1][1], e)
    else:
      runs.append([s, e])
  out: list[int] = []
  for j, (s, e) in enumerate(runs):
    out += (separator if j else []) + ids[s:e]
  return out


def evidence_chunks(offsets: list[tuple[int, int]], record: dict, chunk_tokens: int, overlap: int) -> list[int]:
  """For each evidence sentence of `record` (its character spans), the chunk holding most of its
  tokens (the earlier on a tie); `offsets` are the document's token character spans (the
  tokenizer's). Empty for a question without evidence (an unanswerable one)."""
  spans = chunk_spans(len(offsets), chunk_tokens, overlap)
  out = []
  for start, end in zip(record.get("evidence_char_start", []), record.get("evidence_char_end", [])):
    inside = [t for t, (a, b) in enumerate(offsets) if a < end and b > start]
    if not inside:
      continue
    held = [len(set(range(s, e)) & set(inside)) for s, e in spans]
    best = int(np.argmax(held))
    if best not in out:
      out.append(best)
  return sorted(out)
