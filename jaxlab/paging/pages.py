"""Pages: chunking, the frozen LM's pooled hidden states per chunk, and the persisted page store
(latent-pager.md, "How It Works"; README "Facts from the published latent-pager code").

A document is tokenized once and cut into chunks of `chunk_tokens` tokens overlapping by
`chunk_overlap` (`jaxlab.data.documents.chunk_spans` on token positions). Each chunk goes through
the frozen LM once; the hidden states at `hidden_layers` (Hugging Face `output_hidden_states`
indices: 0 is the embedding output) are pooled over the chunk's tokens, by the last real token
(published) or the mean, giving (L, D) per chunk.

Those pooled states are what is expensive, and they depend on nothing trainable, so they are the
store's unit: one `.npy` file per document, named by a hash of the LM's files, the page settings
and the document text. Every question on a document, every epoch and every later run with the
same model and settings reads the file instead of running the LM again. (The compressor that turns
states into page vectors is trained, so page vectors themselves are recomputed, cheaply, per step.)
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from tqdm.auto import tqdm

from jaxlab.data.documents import chunk_spans
from jaxlab.paging import programs

POOLINGS = ("last_token", "mean")


@dataclasses.dataclass(frozen=True)
class PageSettings:
  hidden_layers: tuple[int, ...]
  pooling: str
  chunk_tokens: int
  chunk_overlap: int
  batch_size: int  # chunks per forward call


def settings_from(config) -> PageSettings:
  p = config.pages
  return PageSettings(tuple(p.hidden_layers), p.pooling, p.chunk_tokens, p.chunk_overlap, p.batch_size)


def chunk_ids(ids: list[int], settings: PageSettings) -> list[list[int]]:
  """Token ids of each chunk of one document (at least one chunk, even for an empty document)."""
  return [ids[s:e] for s, e in chunk_spans(len(ids), settings.chunk_tokens, settings.chunk_overlap)]


def pool(states, mask, pooling: str):
  """states (N, C, D) of right-padded chunks, mask (N, C) -> (N, D)."""
  if pooling == "last_token":
    last = jnp.maximum(jnp.sum(mask, axis=1) - 1, 0)
    return jnp.take_along_axis(states, last[:, None, None], axis=1)[:, 0]
  weights = mask.astype(jnp.float32)[..., None]
  return jnp.sum(states.astype(jnp.float32) * weights, axis=1) / jnp.maximum(jnp.sum(weights, axis=1), 1.0)


class Forward:
  """The frozen LM on right-padded chunks (N, C) -> pooled hidden states (N, L, D) in float32:
  one program, made once for the LM and the page settings."""

  def __init__(self, lm, settings: PageSettings):
    graphdef, self.state = nnx.split(lm)
    self.settings = settings

    def fn(state, ids, mask):
      _, states = nnx.merge(graphdef, state)(ids, mask, hidden_layers=settings.hidden_layers)
      return jnp.stack([pool(s, mask, settings.pooling) for s in states], axis=1).astype(jnp.float32)

    self.program = programs.Program("forward", (graphdef, settings.hidden_layers, settings.pooling), fn)

  def __call__(self, ids, mask):
    return self.program(self.state, jnp.asarray(ids), jnp.asarray(mask))

  def peak_bytes(self) -> int:
    """Device memory of the program on one call of `settings.batch_size` chunks."""
    ids = np.zeros((self.settings.batch_size, self.settings.chunk_tokens), np.int32)
    return self.program.peak_bytes(self.state, jnp.asarray(ids), jnp.asarray(ids.astype(bool)))


def chunk_batch(chunks: list[list[int]], width: int, rows: int, pad_id: int):
  """Right-padded (rows, width) ids and mask; missing rows are copies of the first chunk."""
  ids = np.full((rows, width), pad_id, np.int32)
  mask = np.zeros((rows, width), bool)
  for i in range(rows):
    c = chunks[i] if i < len(chunks) else chunks[0]
    ids[i, :len(c)], mask[i, :len(c)] = c, True
  return ids, mask


def states_of_chunks(forward: Forward, chunks: list[list[int]], pad_id: int) -> np.ndarray:
  """Pooled states (len(chunks), L, D) in batches of `forward.settings.batch_size` (one shape)."""
  settings, out = forward.settings, []
  for s in range(0, len(chunks), settings.batch_size):
    part = chunks[s:s + settings.batch_size]
    ids, mask = chunk_batch(part, settings.chunk_tokens, settings.batch_size, pad_id)
    out.append(np.asarray(forward(ids, mask))[:len(part)])
  return np.concatenate(out)


def model_fingerprint(folder: str | Path) -> str:
  """A hash of the checkpoint folder's files: the store never mixes two models' states."""
  h = hashlib.sha256()
  for path in sorted(Path(folder).iterdir()):
    if path.suffix in (".json", ".safetensors") and path.is_file():
      h.update(path.name.encode())
      with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
          h.update(block)
  return h.hexdigest()[:16]


class PageStore:
  """Pooled chunk states per document, persisted under `directory` and memoized in memory."""

  def __init__(self, directory: str | Path, lm, tokenizer, settings: PageSettings, model_key: str, pad_id: int):
    self.directory = Path(directory)
    self.directory.mkdir(parents=True, exist_ok=True)
    self.lm, self.tokenizer, self.settings, self.pad_id = lm, tokenizer, settings, pad_id
    self._forward = None
    self.prefix = hashlib.sha256(f"{model_key}|{settings}".encode()).hexdigest()[:16]
    self.cache: dict[str, np.ndarray] = {}
    self.computed = 0  # documents whose states this store computed (not read back)

  def path(self, document: str) -> Path:
    return self.directory / f"{self.prefix}-{hashlib.sha256(document.encode()).hexdigest()[:24]}.npy"

  def chunks(self, document: str) -> list[list[int]]:
    return chunk_ids(self.tokenizer.encode(document).ids, self.settings)

  def get(self, documents: list[str], desc: str = "pages") -> list[np.ndarray]:
    """(chunks, L, D) per document; missing ones are computed together, then saved."""
    missing = []
    for doc in dict.fromkeys(documents):
      if doc in self.cache:
        continue
      path = self.path(doc)
      if path.is_file():
        self.cache[doc] = np.load(path)
      else:
        missing.append(doc)
    if missing:
      per_doc = [self.chunks(doc) for doc in missing]
      flat = [c for chunks in per_doc for c in chunks]
      bar = tqdm(total=len(flat), desc=desc, unit="chunk", disable=jax.process_index() != 0)
      out = []
      self._forward = self._forward or Forward(self.lm, self.settings)
      for s in range(0, len(flat), self.settings.batch_size * 8):
        out.append(states_of_chunks(self._forward, flat[s:s + self.settings.batch_size * 8], self.pad_id))
        bar.update(len(flat[s:s + self.settings.batch_size * 8]))
      bar.close()
      states = np.concatenate(out)
      offsets = np.cumsum([0] + [len(c) for c in per_doc])
      for i, doc in enumerate(missing):
        self.cache[doc] = states[offsets[i]:offsets[i + 1]]
        if jax.process_index() == 0:
          np.save(self.path(doc), self.cache[doc])
      self.computed += len(missing)
    return [self.cache[doc] for doc in documents]


def batch_pages(states: list[np.ndarray], max_pages: int) -> tuple[np.ndarray, np.ndarray]:
  """Stack documents' states into (B, max_pages, L, D) with a (B, max_pages) mask of real pages.

  A document with more chunks than `max_pages` keeps its first max_pages (the config says how
  large max_pages is; with 0 there, the longest document training, or answering, reads)."""
  l, d = states[0].shape[1:]
  out = np.zeros((len(states), max_pages, l, d), np.float32)
  mask = np.zeros((len(states), max_pages), bool)
  for i, s in enumerate(states):
    n = min(len(s), max_pages)
    out[i, :n], mask[i, :n] = s[:n], True
  return out, mask
