"""The pager's trainable model, one per `pager.encoder` (the `pooled`, `slots`, `pointer`, `icae` and
`mean` encoders): chunks -> pages -> soft tokens, plus the task markers of pretraining and the
sufficiency head.

- `pooled` (the published design, the reproduction arm): the stored pooled states of each chunk
  (one vector per chosen layer) -> `modules.Pager` (PageCompressor, then a PageAggregator with
  `num_soft_tokens` learned queries), built first from `nnx.Rngs(seed)`, before any other part
  draws, so the arm's initialisation depends on the seed alone.
- `slots`: every token state of the chosen layers -> `encoders.SlotEncoder` -> `slots_per_chunk`
  pages per chunk, in the LM's embedding space.
- `pointer`: `slots` plus a pointer into the chunk: each page is the pointer-weighted mixture of
  the chunk's token embeddings plus the slot's latent vector times a learned gate.
- `icae`: the frozen LM itself, with LoRA adapters, reads each chunk followed by m memory tokens;
  the memory tokens' final states are the pages (`encoders.IcaeEncoder`).
- `mean`: the token states `slots` reads, averaged over `slots_per_chunk` contiguous windows of
  the chunk and mapped to the LM's width (`encoders.MeanEncoder`).

With `pager.tree_fanout` > 0 the chunks' pages go through a tree of pages of pages
(`tree.PageTree`) first, and its top level's nodes are read as the pages are; with
`pager.given_pages` they arrive made by a frozen encoder (inputs "pages", "page_mask") and the
model builds none.

For every encoder but `pooled` the pages become soft tokens either directly (`pager.depth = 0`:
every page of every chunk, in reading order) or through a PageAggregator of `pager.depth` layers
and `num_soft_tokens` queries. Directly, documents have different page counts, and a padded page
must not change the answer: the real pages are right-aligned (the last page sits just before the
question, whatever the document's length) and the padded positions hold a learned null page, the
same in training and generation, so the LM never sees a mask it was not trained with.

`marks` are two learned embeddings, the [AE] and [LM] task markers of pretraining (ICAE's): after
a chunk's pages, [AE] asks the frozen LM to regenerate that chunk; after earlier chunks' pages,
[LM] asks it to continue with the next chunk.

`bridge` (`pager.decoder_lora_rank` > 0): LoRA adapters of the answering LM, the pager's own,
attached to the frozen LM whenever it reads soft tokens (training, confidence, generation); the
text buffer and the full context use the LM without them.

`SufficiencyHead`: a probe on the soft tokens (their mean) and on the frozen LM's final hidden
state at the last question token (after reading the soft tokens and the question, where the
answer would start), giving the logit that the pages hold the question's answer. It must see the
question: one document has answerable and unanswerable questions.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from jaxlab.paging import encoders, modules, tree
from jaxlab.paging.spec import PagerSpec


class SufficiencyHead(nnx.Module):
  def __init__(self, d: int, hidden: int, *, rngs: nnx.Rngs):
    self.norm = nnx.LayerNorm(2 * d, epsilon=modules.LN_EPS, rngs=rngs)
    self.fc1 = modules.linear(2 * d, hidden, ("embed", "mlp"), rngs)
    self.fc2 = modules.linear(hidden, 1, ("mlp", None), rngs)

  def __call__(self, soft_mean, state):
    """soft_mean (..., D), state (..., D) -> logits (...)."""
    x = self.norm(jnp.concatenate([soft_mean, state], axis=-1).astype(jnp.float32))
    return self.fc2(jax.nn.gelu(self.fc1(x)))[..., 0]


class PagerModel(nnx.Module):
  def __init__(self, spec: PagerSpec, d_lm: int, embed_rms: float, lm=None):
    self.kind = spec.encoder
    kind = encoders.get(spec.encoder)
    if kind.stored_states:
      self.pooled = modules.Pager(len(spec.hidden_layers), d_lm, compressor_hidden=spec.compressor_hidden,
                                  d_page=spec.d_page, num_soft_tokens=spec.num_soft_tokens, depth=spec.depth,
                                  heads=spec.heads, ffn=spec.ffn, dropout_rate=spec.dropout,
                                  rngs=nnx.Rngs(spec.seed))
    rngs = nnx.Rngs(spec.seed + 1)
    self.hidden_layers = spec.hidden_layers
    if kind.build is not None and not spec.given_pages:
      self.encoder = kind.build(spec, lm, d_lm, embed_rms, rngs)
    if not kind.stored_states:
      if spec.depth > 0:
        self.aggregator = modules.PageAggregator(d_lm, d_lm, spec.num_soft_tokens, spec.depth, spec.heads, spec.ffn,
                                                 spec.dropout, rngs=rngs)
      else:
        self.null = nnx.Param(embed_rms * jax.random.normal(rngs.params(), (spec.slots_per_chunk, d_lm)),
                              **modules.axes(None, "embed"))
      self.marks = nnx.Param(embed_rms * jax.random.normal(rngs.params(), (2, d_lm)), **modules.axes(None, "embed"))
    if spec.tree_fanout:
      self.tree = tree.PageTree(spec.tree_fanout, spec.tree_depth, spec.slots_per_chunk, d_lm, spec.encoder_depth,
                                spec.heads, spec.ffn, spec.dropout, embed_rms, rngs=rngs)
    if spec.sufficiency:
      self.sufficiency = SufficiencyHead(d_lm, spec.sufficiency_hidden, rngs=rngs)
    if spec.decoder_lora_rank:
      self.bridge = encoders.lora_adapters(lm, spec.decoder_lora_rank, rngs.params())

  def decoder(self, lm):
    """The LM that answers: the frozen LM, or with the pager's own LoRA bridge attached."""
    return encoders.with_adapters(lm, self.bridge) if hasattr(self, "bridge") else lm

  def pages(self, lm, inputs, key=None):
    """Pages (B, P, m, D) and the page mask (B, P) of chunk inputs (every encoder but `pooled`):
    chunk ids and masks (B, P, C). `lm` is the frozen LM, merged from a state under stop_gradient."""
    ids, mask = inputs["chunk_ids"], inputs["chunk_mask"]
    kind = encoders.get(self.kind)
    if kind.runs_lm:
      return self.encoder(lm, ids, mask), mask.any(-1)
    b, p, c = ids.shape
    _, states = lm(ids.reshape(b * p, c), mask.reshape(b * p, c), hidden_layers=self.hidden_layers)
    states = jnp.stack(states, axis=2).reshape(b, p, c, len(self.hidden_layers), -1)
    embeds = lm.embed(ids) if kind.reads_embeds else None
    return self.encoder(states, mask, key, embeds), mask.any(-1)

  def soft_from_pages(self, pages, page_mask, key=None):
    """Pages (B, P, m, D) -> soft tokens (B, K, D)."""
    b, p, m, d = pages.shape
    if hasattr(self, "aggregator"):
      return self.aggregator(pages.reshape(b, p * m, d), jnp.repeat(page_mask, m, axis=1), key)
    n = jnp.sum(page_mask, axis=1)
    # Right-align the real pages: output page j shows page j - (P - n); earlier positions are null.
    src = (jnp.arange(p)[None] - (p - n)[:, None]) % p
    aligned = jnp.take_along_axis(pages, src[:, :, None, None], axis=1)
    real = jnp.arange(p)[None] >= (p - n)[:, None]
    aligned = jnp.where(real[:, :, None, None], aligned, self.null[...].astype(pages.dtype))
    return aligned.reshape(b, p * m, d)

  def soft_tokens(self, lm, inputs, key=None):
    """Soft tokens (B, K, D) for a batch of documents (`inputs` as `pager.document_inputs` makes)."""
    if encoders.get(self.kind).stored_states:
      return self.pooled(inputs["states"], inputs["page_mask"], key)  # stored states: no LM call
    k1, k2 = (None, None) if key is None else jax.random.split(key)
    if "pages" in inputs:   # made by a frozen encoder (`tree.ChunkPages`)
      pages, page_mask = inputs["pages"], inputs["page_mask"]
    else:
      pages, page_mask = self.pages(lm, inputs, k1)
    if hasattr(self, "tree"):
      pages, page_mask = self.tree(pages, page_mask, None if k1 is None else jax.random.fold_in(k1, 1))
    return self.soft_from_pages(pages, page_mask, k2)

  def confidence(self, soft, state):
    """Sufficiency logits from soft tokens (B, K, D) and LM states at the question's end (B, Q, D)."""
    mean = jnp.mean(soft.astype(jnp.float32), axis=1)
    return self.sufficiency(jnp.broadcast_to(mean[:, None], state.shape), state)
