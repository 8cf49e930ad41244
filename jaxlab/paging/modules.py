"""The latent pager's trainable modules (latent-pager.md, "How It Works"; shapes from the published code).

PageCompressor: one chunk's pooled hidden states of the chosen layers, flattened (L x D), ->
Linear(L*D, hidden) -> SiLU -> LayerNorm -> Linear(hidden, d_page) -> LayerNorm; the published
hidden width is 2048.

PageAggregator: pages -> Linear(d_page, D) (the projection to the frozen LM's hidden size), then k
learned queries (init N(0, 0.02)) through `depth` post-LN Transformer decoder layers (as PyTorch's
`nn.TransformerDecoderLayer`: self-attention among the queries, cross-attention to the pages,
GELU feed-forward, dropout on attention weights and residual branches), no positional encodings,
then a final LayerNorm: k soft tokens of width D. A padded page (page_mask False) is never
attended to.

Dropout takes an explicit PRNG key; `key=None` is the deterministic (evaluation) mode.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from jaxlab.lm.qwen3 import logical_axes as axes

LN_EPS = 1e-5  # PyTorch's LayerNorm default, as published


def dropout(x, rate: float, key):
  if key is None or rate == 0.0:
    return x
  keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
  return jnp.where(keep, x / (1.0 - rate), 0.0)


def linear(i: int, o: int, names: tuple, rngs: nnx.Rngs) -> nnx.Linear:
  """nnx.Linear (with bias) whose kernel and bias name their logical axes (`core.mesh.RULES`), so
  the pager's parameters shard on a training mesh as the LM's do; the values are nnx.Linear's."""
  return nnx.Linear(i, o, rngs=rngs, kernel_metadata=axes(*names), bias_metadata=axes(names[1]))


def _keys(key, n: int):
  return (None,) * n if key is None else tuple(jax.random.split(key, n))


class PageCompressor(nnx.Module):
  def __init__(self, in_dim: int, hidden: int, d_page: int, *, rngs: nnx.Rngs):
    self.fc1 = linear(in_dim, hidden, ("embed", "mlp"), rngs)
    self.norm1 = nnx.LayerNorm(hidden, epsilon=LN_EPS, rngs=rngs)
    self.fc2 = linear(hidden, d_page, ("mlp", "embed"), rngs)
    self.norm2 = nnx.LayerNorm(d_page, epsilon=LN_EPS, rngs=rngs)

  def __call__(self, states):
    """states (..., L, D) -> pages (..., d_page)."""
    x = states.reshape(*states.shape[:-2], -1).astype(jnp.float32)
    return self.norm2(self.fc2(self.norm1(jax.nn.silu(self.fc1(x)))))


class Attention(nnx.Module):
  """Multi-head attention with biases, as PyTorch's nn.MultiheadAttention."""

  def __init__(self, d: int, heads: int, *, rngs: nnx.Rngs):
    if d % heads:
      raise ValueError(f"aggregator width {d} is not a multiple of {heads} heads")
    self.q, self.k, self.v = (linear(d, d, ("embed", "heads"), rngs) for _ in range(3))
    self.out = linear(d, d, ("heads", "embed"), rngs)
    self.heads = heads

  def __call__(self, x, memory, mask, rate: float, key):
    """x (B, Q, D) attends to memory (B, M, D); mask (B, M) marks the memory rows it may see."""
    b, q, d = x.shape
    split = lambda t: t.reshape(b, t.shape[1], self.heads, d // self.heads)
    qh, kh, vh = split(self.q(x)), split(self.k(memory)), split(self.v(memory))
    scores = jnp.einsum("bqhd,bmhd->bhqm", qh, kh) * (d // self.heads) ** -0.5
    scores = jnp.where(mask[:, None, None, :], scores, jnp.finfo(scores.dtype).min)
    weights = dropout(jax.nn.softmax(scores, axis=-1), rate, key)
    return self.out(jnp.einsum("bhqm,bmhd->bqhd", weights, vh).reshape(b, q, d))


class DecoderLayer(nnx.Module):
  """PyTorch's nn.TransformerDecoderLayer (post-LN, GELU) without positional encodings."""

  def __init__(self, d: int, heads: int, ffn: int, rate: float, *, rngs: nnx.Rngs):
    self.self_attn = Attention(d, heads, rngs=rngs)
    self.cross_attn = Attention(d, heads, rngs=rngs)
    self.fc1 = linear(d, ffn, ("embed", "mlp"), rngs)
    self.fc2 = linear(ffn, d, ("mlp", "embed"), rngs)
    self.norm1, self.norm2, self.norm3 = (nnx.LayerNorm(d, epsilon=LN_EPS, rngs=rngs) for _ in range(3))
    self.rate = rate

  def __call__(self, x, pages, page_mask, key):
    r = self.rate
    k = _keys(key, 7)
    every = jnp.ones(x.shape[:2], bool)
    x = self.norm1(x + dropout(self.self_attn(x, x, every, r, k[0]), r, k[1]))
    x = self.norm2(x + dropout(self.cross_attn(x, pages, page_mask, r, k[2]), r, k[3]))
    h = self.fc2(dropout(jax.nn.gelu(self.fc1(x), approximate=False), r, k[4]))
    return self.norm3(x + dropout(h, r, k[5]))


class PageAggregator(nnx.Module):
  def __init__(self, d_page: int, d_model: int, num_queries: int, depth: int, heads: int, ffn: int,
               rate: float, *, rngs: nnx.Rngs):
    self.page_proj = linear(d_page, d_model, ("embed", "embed"), rngs)
    self.queries = nnx.Param(0.02 * jax.random.normal(rngs.params(), (num_queries, d_model)), **axes(None, "embed"))
    self.layers = nnx.List([DecoderLayer(d_model, heads, ffn, rate, rngs=rngs) for _ in range(depth)])
    self.norm = nnx.LayerNorm(d_model, epsilon=LN_EPS, rngs=rngs)

  def __call__(self, pages, page_mask, key=None):
    """pages (B, P, d_page), page_mask (B, P) -> soft tokens (B, k, D)."""
    memory = self.page_proj(pages)
    x = jnp.broadcast_to(self.queries[...], (pages.shape[0], *self.queries.shape))
    for layer, k in zip(self.layers, _keys(key, len(self.layers))):
      x = layer(x, memory, page_mask, k)
    return self.norm(x)


class Pager(nnx.Module):
  """Compressor then aggregator: pooled chunk states (B, P, L, D_lm) -> soft tokens (B, k, D_lm)."""

  def __init__(self, num_layers: int, d_lm: int, *, compressor_hidden: int, d_page: int, num_soft_tokens: int,
               depth: int, heads: int, ffn: int, dropout_rate: float, rngs: nnx.Rngs):
    self.compressor = PageCompressor(num_layers * d_lm, compressor_hidden, d_page, rngs=rngs)
    self.aggregator = PageAggregator(d_page, d_lm, num_soft_tokens, depth, heads, ffn, dropout_rate, rngs=rngs)

  def __call__(self, states, page_mask, key=None):
    return self.aggregator(self.compressor(states), page_mask, key)
