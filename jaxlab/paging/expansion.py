"""Selective expansion: a query-conditioned scorer over each chunk's cached keys picks the chunks
read back as text within the context budget (the `expanded` reader of the `references` mode).

**Keys** (`expansion.index`), made once per chunk and independent of any question, so a document's
keys are made once and every question on it only scores them:
- `tokens`: the chunk's tokens through the frozen LM's input embedding table (its own embeddings;
  the index is the chunk's token ids);
- `pages`: the chunk's pages from the page encoder `pager.encoder` with its shipped pretrained
  weights (`pager.init`; fresh ones when it is ""), `slots_per_chunk` vectors per chunk;
- `states`: the frozen LM's states of the chunk's tokens, the chunk read alone, at
  `expansion.key_layers` (concatenated), kept in float16: contextual token keys, as ColBERT's
  are, where a name's key can carry the sentence it stands in.

**Query.** The frozen LM's states of the question's tokens (the question alone) at
`expansion.question_layers` (Hugging Face indices: 0 is the embedding output), concatenated.

**Score** of chunk c for question q: t times the sum over the question's tokens j of w_j max_s
cos(A q_j, B k_cs), with k_cs the chunk's keys, A and B learned maps to `expansion.dim` (each input
layer-normalized first), w a softmax over the question's tokens of a learned linear weight and t a
learned temperature (10 at the start): late interaction (ColBERT's MaxSim over unit vectors). The
chunks then go through `retrieval.select` as BM25's scores do: the best that fit the budget, read
in document order.

**Training.** The answerable training questions (an unanswerable one has no evidence to point at),
each labelled by the chunks that hold its evidence (`retrieval.evidence_chunks`); the loss is the
mean over those chunks of -log softmax over the document's chunks. The loop is `train.fine_tune`,
the QA fine-tuning every trained system shares, with `expansion.*`'s epochs, batch size and
learning rate and `train.*`'s warmup, weight decay, clipping and seed; evaluations record the
validation loss and the validation F1 of the frozen LM reading the chosen chunks (every validation
question), and the best by that F1 is kept. The LM and the page encoder are never updated.
Checkpoints, the metrics log and history.json live in WORKDIR/expansion/.

**A second hop** (the `iterative` reader with `expansion.second_query = "learned"`: a multi-hop
dense retriever's second query, the question with the first passage). A second scorer of the same
form whose query is the question followed by the first scorer's top chunk, through the frozen LM
in that order (so the chunk's states at a later layer have read the question), at
`expansion.second_layers`; the top chunk itself is never a candidate. A two-hop question names its
subject, and its second evidence sentence names the bridge entity, which only the first chunk
does. It trains like the first scorer, on the same questions, each with the first scorer's top
chunk on its own document as the query's chunk and the evidence chunks other than that one as its
labels (a question whose top chunk holds all its evidence has none and is left out): what the
reader sees when it answers. Its folder is WORKDIR/expansion_second/.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from tqdm.auto import tqdm

from jaxlab.core.config import ConfigError, repo_path
from jaxlab.paging import pager as pager_lib, pages, pretrain, retrieval, train as train_lib
from jaxlab.paging.modules import LN_EPS, linear
from jaxlab.paging.spec import PagerSpec, TrainSpec

FOLDER = "expansion"
SECOND_FOLDER = "expansion_second"
FINGERPRINT_FIELDS = ("seed", "model", "data", "pages", "pager", "expansion", "train", "prompts", "text_buffer")


INDEXES = ("tokens", "pages", "states")
SECOND_QUERIES = ("draft", "bridge", "entity", "learned")   # the iterative reader's second query (`references.iterative_scores`)


def second_query(config) -> str:
  return config.expansion.get("second_query", "draft")


def needs_draft(config) -> bool:
  """Whether the iterative reader's second query is the expanded reader's draft answer."""
  return second_query(config) == "draft"


def learned_second(config) -> bool:
  """Whether the iterative reader's second query is a trained second-hop scorer's."""
  return "iterative" in tuple(config.references.readers) and second_query(config) == "learned"


class Scorer(nnx.Module):
  def __init__(self, d_question: int, d_key: int, dim: int, *, rngs: nnx.Rngs):
    self.query_norm = nnx.LayerNorm(d_question, epsilon=LN_EPS, rngs=rngs)
    self.key_norm = nnx.LayerNorm(d_key, epsilon=LN_EPS, rngs=rngs)
    self.query = linear(d_question, dim, ("mlp", "embed"), rngs)
    self.key = linear(d_key, dim, ("embed", "mlp"), rngs)
    self.weight = linear(d_question, 1, ("mlp", None), rngs)
    self.log_temperature = nnx.Param(jnp.log(jnp.asarray(10.0, jnp.float32)))

  def keys(self, x):
    """Key vectors (..., D) -> unit vectors (..., dim)."""
    return _unit(self.key(self.key_norm(x.astype(jnp.float32))))

  def __call__(self, question, question_mask, keys, key_mask, page_mask):
    """question (B, T, Dq) with mask (B, T); unit keys (B, P, S, dim) (`keys`) with mask (B, P, S);
    page_mask (B, P) -> scores (B, P); a padded chunk scores -inf, a padded key never matches."""
    x = self.query_norm(question.astype(jnp.float32))
    q = _unit(self.query(x))
    sim = jnp.einsum("btk,bpsk->btps", q, keys)
    sim = jnp.where(key_mask[:, None], sim, -2.0)          # below any cosine
    per_token = jnp.max(sim, axis=-1) * jnp.exp(self.log_temperature[...])    # (B, T, P)
    w = jax.nn.softmax(jnp.where(question_mask, self.weight(x)[..., 0], -jnp.inf), axis=-1)
    scores = jnp.einsum("bt,btp->bp", w, per_token)
    return jnp.where(page_mask, scores, -jnp.inf)


def _unit(x):
  return x * jax.lax.rsqrt(jnp.sum(x * x, axis=-1, keepdims=True) + 1e-12)


def scores_of(params, graphdef, lm_graphdef, lm_state, batch):
  """(B, P) chunk scores of a batch: keys from its `pages` (with their `key_mask` where some are
  padding), or from its `chunk_ids` through the frozen LM's input embedding table (projected
  once, then gathered)."""
  scorer = nnx.merge(graphdef, params)
  if "pages" in batch:
    keys = scorer.keys(batch["pages"])
    key_mask = batch.get("key_mask", jnp.broadcast_to(batch["page_mask"][..., None], keys.shape[:-1]))
  else:
    lm = nnx.merge(lm_graphdef, jax.lax.stop_gradient(lm_state))
    keys, key_mask = scorer.keys(lm.model.embed_tokens.embedding[...])[batch["chunk_ids"]], batch["chunk_mask"]
  return scorer(batch["question"], batch["question_mask"], keys, key_mask, batch["page_mask"])


def evidence_ce(params, graphdef, lm_graphdef, lm_state, batch):
  """Per-row (sum over the row's evidence chunks of -log softmax over its document's chunks, their
  count)."""
  logp = jax.nn.log_softmax(scores_of(params, graphdef, lm_graphdef, lm_state, batch), axis=-1)
  target = batch["target"].astype(jnp.float32)
  return -jnp.sum(jnp.where(target > 0, logp, 0.0) * target, axis=-1), jnp.sum(target, axis=-1)


def loss_fn(params, graphdef, lm_graphdef, lm_state, batch, key=None, suff_weight: float = 0.0):
  """Mean over the batch's evidence chunks (`train.train_step`'s loss)."""
  del key, suff_weight
  sums, counts = evidence_ce(params, graphdef, lm_graphdef, lm_state, batch)
  return jnp.sum(sums) / jnp.maximum(jnp.sum(counts), 1.0)


eval_ce = jax.jit(evidence_ce, static_argnames=("graphdef", "lm_graphdef"))
_scores = jax.jit(scores_of, static_argnames=("graphdef", "lm_graphdef"))


@dataclasses.dataclass(frozen=True)
class ExpansionSpec:
  index: str                      # the keys: "tokens" or "pages" (`INDEXES`)
  question_layers: tuple[int, ...]
  dim: int
  epochs: int
  batch_size: int
  learning_rate: float
  eval_every: int

  @classmethod
  def of(cls, config, second: bool = False) -> ExpansionSpec:
    """The first scorer's spec; with `second`, the second hop's (its query at `second_layers`)."""
    e = config.expansion
    field = "second_layers" if second else "question_layers"
    layers = tuple(e.get(field, e.question_layers))
    if max(layers) > config_layers(config):
      raise ConfigError(f"expansion.{field}", f"{layers}: {config.model.path} has layers "
                        f"0-{config_layers(config)} (0 is the embedding output)")
    return cls(e.index, layers, int(e.dim), int(e.epochs), int(e.batch_size),
               float(e.learning_rate), int(e.eval_every))

  def train(self, config) -> TrainSpec:
    """`train.*` with this scorer's epochs, batch size, learning rate and cadence; one question a row."""
    return dataclasses.replace(TrainSpec.of(config), epochs=self.epochs, steps=0, batch_size=self.batch_size,
                               questions_per_row=1, learning_rate=self.learning_rate, eval_every=self.eval_every)


def config_layers(config) -> int:
  return int(json.loads((repo_path(config.model.path) / "config.json").read_text())["num_hidden_layers"])


class Features:
  """The scorer's inputs: each document's keys (its chunk ids, or its pages (chunks, S, D) made once
  per document) and each question's LM states, all at one padded shape (`max_pages` chunks, the
  longest question of `records` in tokens; with `follow`, a chunk's tokens after it: the second
  hop's query)."""

  def __init__(self, setup, config, spec: ExpansionSpec, records: list[dict], follow: bool = False):
    self.setup, self.spec = setup, spec
    self.encoder = {"pages": page_encoder, "states": state_encoder}.get(spec.index, lambda *a: None)(setup, config)
    self._chunks: dict[str, list[list[int]]] = {}
    self.max_pages = max(len(self.chunks(d)) for d in {r["document"] for r in records})
    self.question_width = max(len(setup.tokenizer.encode(r["question"]).ids) for r in records)
    follows = setup.store.settings.chunk_tokens if follow else 0
    self.width = -(-(self.question_width + follows) // 8) * 8
    self.pages: dict[str, np.ndarray] = {}
    self.key_masks: dict[str, np.ndarray] = {}   # per document (chunks, C): a `states` key's token is real
    # A chunk's token states are many (C per chunk, not a few pages): kept in float16, half the
    # memory; the scorer reads them in float32.
    self.stored = np.float16 if spec.index == "states" else np.float32
    lm_graphdef, lm_state = nnx.split(setup.lm)
    layers = spec.question_layers

    @jax.jit
    def question_states(lm_state, ids, mask):
      _, states = nnx.merge(lm_graphdef, lm_state)(ids, mask, hidden_layers=layers)
      return jnp.concatenate(states, axis=-1).astype(jnp.float32)

    self._questions = lambda ids, mask: question_states(lm_state, jnp.asarray(ids), jnp.asarray(mask))

  def chunks(self, document: str) -> list[list[int]]:
    """The document's chunk ids (the page store's chunking), tokenized once."""
    if document not in self._chunks:
      self._chunks[document] = self.setup.store.chunks(document)
    return self._chunks[document]

  def document_pages(self, documents: list[str]) -> None:
    """Keys of every document not made yet, `pages.batch_size` chunks per call (with `pages` or
    `states` keys)."""
    if self.encoder is None:
      return
    missing = [d for d in dict.fromkeys(documents) if d not in self.pages]
    per_doc = [self.chunks(d) for d in missing]
    flat = [c for chunks in per_doc for c in chunks]
    settings = self.setup.store.settings
    out, masks = [], []
    for s in tqdm(range(0, len(flat), settings.batch_size), desc=f"expansion {self.spec.index}", unit="batch",
                  leave=False, disable=len(flat) <= settings.batch_size or jax.process_index() != 0):
      part = flat[s:s + settings.batch_size]
      ids, mask = pages.chunk_batch(part, settings.chunk_tokens, settings.batch_size, self.setup.pad)
      out.append(np.asarray(self.encoder(ids, mask))[:len(part)].astype(self.stored))
      masks.append(mask[:len(part)])
    made = np.concatenate(out) if out else None
    made_masks = np.concatenate(masks) if masks else None
    offsets = np.cumsum([0] + [len(c) for c in per_doc])
    for i, d in enumerate(missing):
      self.pages[d] = made[offsets[i]:offsets[i + 1]]
      self.key_masks[d] = made_masks[offsets[i]:offsets[i + 1]]

  def batch(self, records: list[dict], targets: list[list[int]] | None = None,
            firsts: list[int] | None = None) -> dict:
    """The scorer's host batch for `records` (with `targets`: their evidence chunks; with `firsts`:
    per record, the chunk whose tokens follow the question in the query, never a candidate)."""
    if self.encoder is None:
      keys = pager_lib.chunk_inputs([self.chunks(r["document"]) for r in records], self.max_pages,
                                    self.setup.store.settings.chunk_tokens, self.setup.pad)
      keys["page_mask"] = keys["chunk_mask"].any(-1)
    else:
      self.document_pages([r["document"] for r in records])
      states, page_mask = pages.batch_pages([self.pages[r["document"]] for r in records], self.max_pages)
      keys = {"pages": states, "page_mask": page_mask}
      if self.spec.index == "states":
        masks, _ = pages.batch_pages([self.key_masks[r["document"]][..., None] for r in records], self.max_pages)
        keys["key_mask"] = masks[..., 0] > 0
    rows = [self.setup.tokenizer.encode(r["question"]).ids[:self.question_width] for r in records]
    if firsts is not None:
      rows = [(row + self.chunks(r["document"])[f])[:self.width] for row, r, f in zip(rows, records, firsts)]
      keys["page_mask"][np.arange(len(records)), firsts] = False
    ids = np.full((len(rows), self.width), self.setup.pad, np.int32)
    mask = np.zeros((len(rows), self.width), bool)
    for i, row in enumerate(rows):
      ids[i, :len(row)], mask[i, :len(row)] = row, True
    out = {"question": np.asarray(self._questions(ids, mask)), "question_mask": mask, **keys}
    if targets is not None:
      out["target"] = np.zeros((len(records), self.max_pages), np.float32)
      for i, held in enumerate(targets):
        out["target"][i, [h for h in held if h < self.max_pages]] = 1.0
    return out


def page_encoder(setup, config):
  """chunk ids (N, C), mask (N, C) -> the chunks' pages (N, S, D): the pager's encoder with its
  pretrained weights (`pager.init`), frozen."""
  model = pager_lib.build(PagerSpec.of(config), setup.lm)
  graphdef, params = nnx.split(model)
  if config.pager.init:
    params = train_lib.load_into(params, pretrain.load(repo_path(config.pager.init), config))
  lm_graphdef, lm_state = nnx.split(setup.lm)

  @jax.jit
  def encode(params, lm_state, ids, mask):
    model, lm = nnx.merge(graphdef, params), nnx.merge(lm_graphdef, lm_state)
    got, _ = model.pages(lm, {"chunk_ids": ids[:, None], "chunk_mask": mask[:, None]})
    return got[:, 0]

  return lambda ids, mask: encode(params, lm_state, jnp.asarray(ids), jnp.asarray(mask))


def state_encoder(setup, config):
  """chunk ids (N, C), mask (N, C) -> the frozen LM's states of each chunk's tokens (N, C, D x
  layers) at `expansion.key_layers`, each chunk read alone."""
  lm_graphdef, lm_state = nnx.split(setup.lm)
  layers = tuple(config.expansion.key_layers)
  if max(layers) > config_layers(config):
    raise ConfigError("expansion.key_layers", f"{layers}: {config.model.path} has layers 0-{config_layers(config)}")

  @jax.jit
  def encode(lm_state, ids, mask):
    _, states = nnx.merge(lm_graphdef, lm_state)(ids, mask, hidden_layers=layers)
    return jnp.concatenate(states, axis=-1).astype(jnp.float32)

  return lambda ids, mask: encode(lm_state, jnp.asarray(ids), jnp.asarray(mask))


def evidence_of(tokenizer, records: list[dict], chunk_tokens: int, overlap: int) -> list[list[int]]:
  return [retrieval.evidence_chunks(tokenizer.encode(r["document"]).offsets, r, chunk_tokens, overlap)
          for r in records]


class Expander:
  """A trained scorer: `scores(records)` gives each record's chunk scores (its real chunks only;
  for a second hop, `firsts` are the records' first chunks, which score -inf)."""

  def __init__(self, features: Features, graphdef, params, batch_size: int):
    self.features, self.graphdef, self.params, self.batch_size = features, graphdef, params, batch_size

  def one_at_a_time(self) -> Expander:
    return Expander(self.features, self.graphdef, self.params, 1)

  def scores(self, records: list[dict], firsts: list[int] | None = None) -> list[np.ndarray]:
    out = []
    lm_graphdef, lm_state = nnx.split(self.features.setup.lm)
    for s in range(0, len(records), self.batch_size):
      part = records[s:s + self.batch_size]
      fill = self.batch_size - len(part)
      padded = part + [part[0]] * fill   # one shape for every call
      first = None if firsts is None else list(firsts[s:s + len(part)]) + [firsts[s]] * fill
      got = np.asarray(_scores(self.params, self.graphdef, lm_graphdef, lm_state,
                               self.features.batch(padded, firsts=first)))
      out += [got[i, :len(self.features.chunks(r["document"]))].astype(np.float64)
              for i, r in enumerate(part)]
    return out


def tops(scores: list[np.ndarray]) -> list[int]:
  """Each record's best chunk (the earlier on a tie)."""
  return [int(np.argmax(s)) for s in scores]


def fit(setup, config, workdir: Path, splits: dict, val_f1, restore_only: bool = False,
        first: Expander | None = None) -> tuple[Expander, list]:
  """Trains (or resumes) the scorer in WORKDIR/expansion on the answerable training questions with
  recorded evidence; `val_f1(scores_of)` is the validation F1 of reading the chunks that the
  per-record scores `scores_of(records)` choose. With `first` (the first scorer), the second hop's
  scorer in WORKDIR/expansion_second, its query's chunk each question's top chunk by `first`
  (`scores_of` then gives second-hop scores). Returns the best-by-validation-F1 scorer and the
  history."""
  c, spec = config, ExpansionSpec.of(config, second=first is not None)
  t = spec.train(config)
  p = c.pages
  every = [r for s in ("train", "validation", "test") for r in splits.get(s, [])]
  features = Features(setup, config, spec, every, follow=first is not None)
  firsts_of = (lambda records: tops(first.scores(records))) if first is not None else (lambda records: None)
  train, held, train_firsts = labelled(setup, splits["train"], p, firsts_of)
  val, val_held, val_firsts = labelled(setup, splits["validation"], p, firsts_of)
  pick = lambda firsts, rows: None if firsts is None else [firsts[i] for i in rows]
  if not restore_only:
    features.document_pages([r["document"] for r in every])
  d = setup.lm.cfg.hidden_size
  d_key = d * (len(c.expansion.key_layers) if spec.index == "states" else 1)
  graphdef, params = nnx.split(Scorer(len(spec.question_layers) * d, d_key, spec.dim, rngs=nnx.Rngs(t.seed)))
  lm_graphdef, lm_state = nnx.split(setup.lm)

  def val_loss(params):
    return train_lib.validation_loss(
        lambda b: eval_ce(params, graphdef, lm_graphdef, lm_state, b),
        lambda rows: features.batch([val[i] for i in rows], [val_held[i] for i in rows], pick(val_firsts, rows)),
        len(val), t.batch_size, setup.mesh)

  def f1(params):
    scorer = Expander(features, graphdef, params, t.batch_size)
    return val_f1(lambda records: scorer.scores(records, firsts_of(records)))

  folder = Path(workdir) / (FOLDER if first is None else SECOND_FOLDER)
  best, history = train_lib.fine_tune(
      t, folder, setup.lm, graphdef, params, rows=len(train),
      batch_of=lambda rows: features.batch([train[i] for i in rows], [held[i] for i in rows],
                                           pick(train_firsts, rows)),
      loss_fn=loss_fn, val_loss=val_loss, val_f1=f1, mesh=setup.mesh,
      fingerprint=train_lib.fingerprint(c, FINGERPRINT_FIELDS), eval_at_start=True,
      name="expansion scorer" if first is None else "second-hop scorer", restore_only=restore_only)
  if not restore_only and jax.process_index() == 0:
    (folder / "history.json").write_text(json.dumps(history, indent=1) + "\n")
  return Expander(features, graphdef, best, t.batch_size), history


def labelled(setup, records: list[dict], p, firsts_of) -> tuple[list[dict], list[list[int]], list[int] | None]:
  """The answerable records of a split with recorded evidence, their labels (the evidence chunks,
  less each record's first chunk where `firsts_of(records)` gives them; a record left with none
  is dropped) and those first chunks (None without them)."""
  rows = [r for r in records if r.get("answerable", True) and not r.get("probe")]
  held = evidence_of(setup.tokenizer, rows, p.chunk_tokens, p.chunk_overlap)
  rows, held = [r for r, h in zip(rows, held) if h], [h for h in held if h]
  firsts = firsts_of(rows)
  if firsts is not None:
    held = [[c for c in h if c != f] for h, f in zip(held, firsts)]
    kept = [i for i, h in enumerate(held) if h]
    rows, held, firsts = [rows[i] for i in kept], [held[i] for i in kept], [firsts[i] for i in kept]
  return rows, held, firsts
