"""Page encoders that keep several slots per chunk (issue 13, "Page encoders"): `slots`.

`SlotEncoder`: a per-chunk cross-attention compressor. The frozen LM reads a chunk once; the
hidden states of the chosen layers at **every** token (not one pooled vector) are concatenated per
token, projected to the LM's width and given a learned position embedding; `slots_per_chunk`
learned queries then go through `depth` post-LN decoder layers (self-attention among the queries,
cross-attention to the chunk's tokens with its padding mask, GELU FFN: the same layer as the
published aggregator), and a final LayerNorm and linear map put each slot in the LM's input
embedding space, scaled to the RMS of the LM's token embeddings so a slot enters the frozen LM
at the size a word does. Each chunk becomes `slots_per_chunk` page vectors of width D.

Compression ratio = chunk tokens / slots per chunk (96 / 16 = 6x on `cpu`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from jaxlab.paging.modules import LN_EPS, DecoderLayer, _keys


class SlotEncoder(nnx.Module):
  def __init__(self, num_layers: int, d_lm: int, chunk_tokens: int, slots: int, depth: int, heads: int, ffn: int,
               rate: float, embed_rms: float, *, rngs: nnx.Rngs):
    self.proj = nnx.Linear(num_layers * d_lm, d_lm, rngs=rngs)
    self.position = nnx.Param(0.02 * jax.random.normal(rngs.params(), (chunk_tokens, d_lm)))
    self.in_norm = nnx.LayerNorm(d_lm, epsilon=LN_EPS, rngs=rngs)
    self.queries = nnx.Param(0.02 * jax.random.normal(rngs.params(), (slots, d_lm)))
    self.layers = nnx.List([DecoderLayer(d_lm, heads, ffn, rate, rngs=rngs) for _ in range(depth)])
    self.out_norm = nnx.LayerNorm(d_lm, epsilon=LN_EPS, rngs=rngs)
    self.out = nnx.Linear(d_lm, d_lm, rngs=rngs)
    self.scale = nnx.Param(jnp.asarray(embed_rms, jnp.float32))

  def __call__(self, states, mask, key=None):
    """states (..., C, L, D) of one chunk's tokens, mask (..., C) -> pages (..., slots, D)."""
    lead, (c, l, d) = states.shape[:-3], states.shape[-3:]
    x = states.reshape(-1, c, l * d).astype(jnp.float32)
    m = mask.reshape(-1, c)
    memory = self.in_norm(self.proj(x) + self.position[:c])
    q = jnp.broadcast_to(self.queries[...], (x.shape[0], *self.queries.shape))
    for layer, k in zip(self.layers, _keys(key, len(self.layers))):
      q = layer(q, memory, m, k)
    pages = self.out(self.out_norm(q))
    # Unit RMS per slot, then the embeddings' RMS: the frozen LM meets a slot at a word's scale.
    pages = pages * jax.lax.rsqrt(jnp.mean(pages * pages, axis=-1, keepdims=True) + 1e-6) * self.scale[...]
    return pages.reshape(*lead, *pages.shape[1:])
