"""Pages of pages: a tree over a document's chunk pages, so a document of any length reaches the LM
in a bounded number of soft tokens (latent-pager.md's hierarchical pages, a B-tree of memory).

Level 0 is each chunk's m pages, made by the chunk encoder. A node of the next level reads `fanout`
consecutive nodes of the level below (fanout x m pages) and writes m pages; `depth` levels, so a
document of P chunks reaches the LM as ceil(P / fanout^depth) nodes of m pages, at most `nodes` of
them. Each level is a `pointer` slot encoder (`encoders.SlotEncoder`) whose tokens are the children's
pages (one layer of states, and the pages themselves as the embeddings it points into): a sharp
pointer passes a child's page through unchanged, and at the start (gate 0) a node's page is a
pointer-weighted blend of its children's. A node depends on its chunks alone, so pages are
cacheable per chunk and per node; only the question, after them, is new per question.

`ChunkPages` makes level 0 with a frozen chunk encoder (a pretrained pager's), once per document
when `keep`, or afresh per call (the latency of a document nothing was cached for).
"""

from __future__ import annotations

import copy

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxlab.paging import pages as pages_lib
from jaxlab.paging.encoders import SlotEncoder
from jaxlab.paging.modules import _keys


def capacity(fanout: int, depth: int, nodes: int) -> int:
  """The most chunks a tree of `nodes` top nodes covers."""
  return nodes * fanout ** depth


def top_nodes(chunks: int, fanout: int, depth: int) -> int:
  """The top level's node count for a document of `chunks` chunks."""
  n = chunks
  for _ in range(depth):
    n = -(-n // fanout)
  return n


class PageTree(nnx.Module):
  def __init__(self, fanout: int, depth: int, slots: int, d_lm: int, encoder_depth: int, heads: int, ffn: int,
               rate: float, embed_rms: float, *, rngs: nnx.Rngs):
    if fanout < 2 or depth < 1:
      raise ValueError(f"a page tree needs fanout >= 2 and depth >= 1, got fanout={fanout}, depth={depth}")
    self.fanout = fanout
    self.levels = nnx.List([SlotEncoder(1, d_lm, fanout * slots, slots, encoder_depth, heads, ffn, rate, embed_rms,
                                        pointer=True, rngs=rngs) for _ in range(depth)])

  def __call__(self, pages, page_mask, key=None):
    """Pages (B, P, m, D) and their mask (B, P) -> the top level's nodes (B, ceil(P / k^depth), m, D)
    and their mask: a node is real when any chunk under it is."""
    k = self.fanout
    for level, lk in zip(self.levels, _keys(key, len(self.levels))):
      b, p, m, d = pages.shape
      n = -(-p // k) * k
      pages = jnp.pad(pages, ((0, 0), (0, n - p), (0, 0), (0, 0)))
      page_mask = jnp.pad(page_mask, ((0, 0), (0, n - p)))
      children = pages.reshape(b, n // k, k * m, d)
      mask = jnp.repeat(page_mask, m, axis=1).reshape(b, n // k, k * m)
      pages = level(children[..., None, :], mask, lk, children)
      page_mask = mask.any(-1)
    return pages, page_mask


class ChunkPages:
  """Level 0 of the tree: each chunk's pages from a frozen chunk encoder (`model.pages`), in calls
  of `batch` chunks (one compiled shape); per document (n_chunks, m, D) float32."""

  def __init__(self, lm, model, chunk_tokens: int, pad_id: int, batch: int, keep: bool = True):
    lm_graphdef, lm_state = nnx.split(lm)
    graphdef, params = nnx.split(model)

    @jax.jit
    def encode(params, lm_state, ids, mask):
      pages, _ = nnx.merge(graphdef, params).pages(nnx.merge(lm_graphdef, lm_state),
                                                   {"chunk_ids": ids[None], "chunk_mask": mask[None]})
      return pages[0]

    self._encode = lambda ids, mask: encode(params, lm_state, ids, mask)
    self.chunk_tokens, self.pad_id, self.batch, self.keep = chunk_tokens, pad_id, batch, keep
    self.kept: dict[tuple, np.ndarray] = {}

  def fresh(self) -> ChunkPages:
    """The same encoder, keeping nothing: every call makes its pages again."""
    out = copy.copy(self)
    out.keep, out.kept = False, {}
    return out

  def __call__(self, chunks: list[list[int]]) -> np.ndarray:
    key = tuple(map(tuple, chunks))
    if key in self.kept:
      return self.kept[key]
    out = []
    for s in range(0, len(chunks), self.batch):
      part = chunks[s:s + self.batch]
      ids = np.full((self.batch, self.chunk_tokens), self.pad_id, np.int32)
      mask = np.zeros((self.batch, self.chunk_tokens), bool)
      for i, c in enumerate(part):
        ids[i, :len(c)], mask[i, :len(c)] = c, True
      out.append(np.asarray(self._encode(ids, mask))[:len(part)])
    pages = np.concatenate(out).astype(np.float32)
    if self.keep:
      self.kept[key] = pages
    return pages


class Documents:
  """Per record, every chunk of its document as tree inputs: {"pages": (B, P, m, D), "page_mask":
  (B, P)}, the chunks' pages from `ChunkPages`, P = the tree's capacity."""

  def __init__(self, items: list[list[list[int]]], pages: ChunkPages, capacity: int, field: str):
    too_long = [i for i, chunks in enumerate(items) if len(chunks) > capacity]
    if too_long:
      raise ValueError(f"a document of {len(items[too_long[0]])} chunks exceeds the page tree's capacity of "
                       f"{capacity} chunks: raise {field}")
    self.items, self.pages = items, pages

  def __len__(self):
    return len(self.items)

  def batch(self, rows, max_pages: int) -> dict:
    pages, mask = pages_lib.batch_pages([self.pages(self.items[i]) for i in rows], max_pages)
    return {"pages": pages, "page_mask": mask}
