"""Pages of the chunks a scorer picks, alone or beside expanded text: the `paged` and `hybrid`
readers of the `references` mode (selective expansion with pages, REFRAG's layout); and pages of
pages of every chunk: the `tree` reader.

The expansion scorer (`expansion`) ranks a document's chunks for the question. Then:
- `paged`: the pager reads the pages of the top `expansion.page_chunks` chunks, in document order
  ([pages | question], the pager's own prompt `prompts.pager`);
- `hybrid`: the top `expansion.hybrid_text_chunks` chunks are read back as text and the pages of
  the next `expansion.hybrid_page_chunks` chunks go before them ([pages | text | question]): the
  text sits beside the question as every text reader's context does, in `prompts.answer`. The
  text is the chunks' own characters, joined by `text_buffer.separator`, tokenized with the
  prompt.

Pages stay query-independent (each chunk's pages depend on the chunk alone, so a server encodes
a chunk once); only the choice of chunks reads the question. The pager is the `pager.*` design
(`pointer` from its shipped pretrained encoder, with its bridge and sufficiency head), fine-tuned
per reader on the training questions, each reading what the reader picks on its document
(`train.*` with one question a row and `expansion.pager_epochs` epochs), the best by validation
F1 kept (`train.fit`, in WORKDIR/<reader>/). Its abstention confidence is `eval.pager_confidence`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from flax import nnx

from jaxlab.core.config import repo_path
from jaxlab.data.documents import chunk_spans
from jaxlab.paging import expansion, pager as pager_lib, pretrain, train as train_lib, tree as tree_lib
from jaxlab.paging.spec import PagerSpec

READERS = ("paged", "hybrid", "tree")
SCORED = ("paged", "hybrid")   # the readers that read by the expansion scorer's choice


def layout(config, reader: str) -> tuple[int, int]:
  """(chunks read as text, chunks read as pages) of `reader`; the tree's pages: its capacity."""
  e = config.expansion
  if reader == "tree":
    return 0, tree_lib.capacity(int(e.tree_fanout), int(e.tree_depth), int(e.tree_nodes))
  return (0, int(e.page_chunks)) if reader == "paged" else (int(e.hybrid_text_chunks), int(e.hybrid_page_chunks))


def level0(setup, config) -> tree_lib.ChunkPages:
  """The tree's level 0: the chunks' pages from the shipped encoder (`pager.init`), frozen."""
  if not config.pager.init:
    raise ValueError("expansion.tree_*: the tree reads the pages of a pretrained encoder; set pager.init")
  spec = dataclasses.replace(PagerSpec.of(config), decoder_lora_rank=0)
  graphdef, params = nnx.split(pager_lib.build(spec, setup.lm))
  made = pretrain.load(repo_path(config.pager.init), config)
  params = train_lib.load_into(params, {path: v for path, v in made.items() if path[0] == "encoder"})
  return tree_lib.ChunkPages(setup.lm, nnx.merge(graphdef, params), config.pages.chunk_tokens, setup.pad,
                             int(config.pages.batch_size))


def picks(scores: np.ndarray, text: int, paged: int) -> tuple[list[int], list[int]]:
  """(the chunks read as text, the chunks read as pages), each in document order: the `text` best
  scored, then the `paged` next best (a tie goes to the earlier chunk)."""
  order = [int(i) for i in np.argsort(-np.asarray(scores), kind="stable")]
  return sorted(order[:text]), sorted(order[text:text + paged])


class Chosen:
  """Per record, the chunk ids of the chunks it reads as pages (the pager's document inputs)."""

  def __init__(self, items: list[list[list[int]]], chunk_tokens: int, pad_id: int):
    self.items, self.chunk_tokens, self.pad_id = items, chunk_tokens, pad_id

  def __len__(self):
    return len(self.items)

  def batch(self, rows, max_pages: int) -> dict:
    return pager_lib.chunk_inputs([self.items[i] for i in rows], max_pages, self.chunk_tokens, self.pad_id)


def inputs(setup, config, reader: str, records: list[dict], scores: list[np.ndarray] | None,
           level0: tree_lib.ChunkPages | None = None) -> tuple[Chosen | tree_lib.Documents, list[str]]:
  """(the pages each record reads, its prompt text up to "Answer:"), from its chunk scores (the
  tree reads every chunk, through `level0`)."""
  text, paged = layout(config, reader)
  c = config.pages
  if reader == "tree":
    items = [setup.store.chunks(r["document"]) for r in records]
    return (tree_lib.Documents(items, level0, paged, "expansion.tree_nodes"),
            [config.prompts.pager.format(question=r["question"]) for r in records])
  items, prompts = [], []
  for r, s in zip(records, scores):
    chunks = setup.store.chunks(r["document"])
    as_text, as_pages = picks(s, text, paged)
    items.append([chunks[i] for i in as_pages])
    if not text:
      prompts.append(config.prompts.pager.format(question=r["question"]))
      continue
    offsets = setup.tokenizer.encode(r["document"]).offsets
    spans = chunk_spans(len(offsets), c.chunk_tokens, c.chunk_overlap)
    context = config.text_buffer.separator.join(
        r["document"][offsets[spans[i][0]][0]:offsets[spans[i][1] - 1][1]] for i in as_text)
    prompts.append(config.prompts.answer.format(context=context, question=r["question"]))
  return Chosen(items, c.chunk_tokens, setup.pad), prompts


# The prompts arrive formatted; the pager's functions format a template's {question} with them.
WHOLE = "{question}"


def split(setup, config, reader: str, records: list[dict], scores, level0=None) -> train_lib.Split:
  """`records` as pager rows of one question each, reading `reader`'s picks."""
  docs, prompts = inputs(setup, config, reader, records, scores, level0)
  texts = [[(*pager_lib.target_ids(setup.tokenizer, WHOLE, p, r["gold_answer"], setup.eos),
             bool(r.get("answerable", True)))] for p, r in zip(prompts, records)]
  return train_lib.Split(docs, texts, [{**r, "question": p} for p, r in zip(prompts, records)])


def first_questions(records: list[dict], per_document: int) -> list[int]:
  """Indices of each document's first `per_document` questions, in order (0: every question)."""
  seen: dict[str, int] = {}
  keep = []
  for i, r in enumerate(records):
    seen[r["document"]] = seen.get(r["document"], 0) + 1
    if not per_document or seen[r["document"]] <= per_document:
      keep.append(i)
  return keep


def training_config(config, reader: str = "paged"):
  """`config` as the reader's pager trains and answers: one question a row, `expansion.pager_epochs`
  epochs, its prompts arriving whole; the tree's pager reads given pages through its tree."""
  c = config.copy_and_resolve_references()
  c.train.update(dict(questions_per_row=1, epochs=int(config.expansion.pager_epochs), steps=0))
  c.prompts.pager = WHOLE
  if reader == "tree":
    e = config.expansion
    with c.unlocked():
      c.pager.update(dict(tree_fanout=int(e.tree_fanout), tree_depth=int(e.tree_depth), given_pages=True))
  return c


def fit(setup, config, workdir: Path, reader: str, splits: dict, scored: dict, restore_only: bool = False) -> dict:
  """The reader's pager, fine-tuned (or restored) in WORKDIR/<reader>; `scored`: per split, the
  records' chunk scores (the tree reads none). {"graphdef", "params", "history", "max_pages",
  "q_width", "level0"}."""
  c = training_config(config, reader)
  rows = {s: [r for r in splits[s] if not r.get("probe")] for s in ("train", "validation")}
  keep = first_questions(rows["train"], int(config.expansion.get("pager_questions_per_document", 0)))
  rows["train"] = [rows["train"][i] for i in keep]
  scores = {"train": None, "validation": None}
  if reader in SCORED:
    scores = {"train": [scored["train"][i] for i in keep], "validation": scored["validation"]}
  pages = level0(setup, config) if reader == "tree" else None
  tr, va = (split(setup, config, reader, rows[s], scores[s], pages) for s in ("train", "validation"))
  max_pages = max(layout(c, reader)[1], 1)
  q_width = pager_lib.question_width(setup.tokenizer, WHOLE, tr.records + va.records)
  init = pretrain.load(repo_path(c.pager.init), c) if c.pager.init and not restore_only else None
  if init is not None and reader == "tree":   # the chunk encoder stays in level 0, frozen
    init = {path: v for path, v in init.items() if path[0] != "encoder"}
  graphdef, params, history = train_lib.fit(c, Path(workdir) / reader, setup.lm, setup.tokenizer, tr, va,
                                            max_pages=max_pages, q_width=q_width, settings=setup.settings,
                                            pad_id=setup.pad, mesh=setup.mesh, abstain=setup.abstain,
                                            init_params=init, restore_only=restore_only)
  return {"graphdef": graphdef, "params": params, "history": history, "max_pages": max_pages, "q_width": q_width,
          "level0": pages}


def answer(setup, config, reader: str, trained: dict, records: list[dict], scores, model=None,
           batch_size: int | None = None) -> dict:
  """{"answers", "confidence"} of the reader's trained pager on `records`, in batches of
  `batch_size` (default `eval.batch_size`); `model`: its `pager.Reader`, made once by the caller
  that answers many times (made here when None)."""
  docs, prompts = inputs(setup, config, reader, records, scores, trained.get("level0"))
  width = max(trained["q_width"], pager_lib.question_width(setup.tokenizer, WHOLE, [{"question": p} for p in prompts]))
  model = model or pager_lib.Reader(setup.lm, trained["graphdef"], trained["params"], setup.settings,
                                    config.eval.pager_confidence)
  answers, conf = model.answer(setup.tokenizer, docs, list(range(len(records))), prompts, WHOLE,
                               max_pages=trained["max_pages"], width=width,
                               batch_size=batch_size or config.eval.batch_size, abstain=setup.abstain)
  return {"answers": answers, "confidence": conf.tolist()}


def evidence_read(tokenizer, config, reader: str, records: list[dict], scores) -> float | None:
  """How often the reader's chunks (text and pages) hold every chunk of the evidence, over the
  answerable records (None without one)."""
  if reader not in SCORED:
    return None   # the tree reads every chunk
  held = expansion.evidence_of(tokenizer, records, config.pages.chunk_tokens, config.pages.chunk_overlap)
  got = [set(h) <= set(sum(picks(s, *layout(config, reader)), [])) for r, h, s in zip(records, held, scores)
         if r.get("answerable", True)]
  return float(np.mean(got)) if got else None
