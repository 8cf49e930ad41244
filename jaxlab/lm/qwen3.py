"""The Qwen3 decoder family in Flax NNX, configured from a Hugging Face `config.json`.

Implements the architecture of Hugging Face's `Qwen3ForCausalLM` (transformers
`models/qwen3/modeling_qwen3.py`): RMSNorm before attention and MLP, rotary embeddings with the
config's theta, grouped-query attention with a per-head RMSNorm on queries and keys, a SwiGLU MLP,
and tied or untied input and output embeddings. Attribute names mirror the Hugging Face module
tree, so `checkpoint_io` maps every safetensors name to a parameter path mechanically.

Every call goes through a fixed-size key/value cache (`init_cache`), so one code path serves the
plain forward pass (a cache exactly as long as the input), prefill and one-token decoding in
`generate`. Positions come from the attention mask (`cumsum(mask) - 1`, as Hugging Face's
`generate` does), so left padding, or padding between a soft-token prefix and the text, changes
nothing for the real tokens.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Sequence

import jax
import jax.numpy as jnp
from flax import nnx


@dataclasses.dataclass(frozen=True)
class Qwen3Config:
  vocab_size: int
  hidden_size: int
  intermediate_size: int
  num_hidden_layers: int
  num_attention_heads: int
  num_key_value_heads: int
  head_dim: int
  rms_norm_eps: float
  rope_theta: float
  tie_word_embeddings: bool
  attention_bias: bool = False

  @classmethod
  def from_hf(cls, hf: dict) -> "Qwen3Config":
    """From a parsed `config.json`; refuses the options this decoder does not implement."""
    # transformers 5 writes `rope_parameters`; checkpoints saved by 4.x have top-level
    # `rope_theta` and `rope_scaling`.
    rope = hf.get("rope_parameters") or hf.get("rope_scaling") or {}
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type != "default":
      raise ValueError(f"config.json: rope type {rope_type!r} is not supported (only 'default')")
    if hf.get("use_sliding_window"):
      raise ValueError("config.json: use_sliding_window=true is not supported")
    if hf.get("hidden_act", "silu") != "silu":
      raise ValueError(f"config.json: hidden_act {hf['hidden_act']!r} is not supported (only 'silu')")
    heads = hf["num_attention_heads"]
    return cls(
        vocab_size=hf["vocab_size"], hidden_size=hf["hidden_size"],
        intermediate_size=hf["intermediate_size"], num_hidden_layers=hf["num_hidden_layers"],
        num_attention_heads=heads, num_key_value_heads=hf.get("num_key_value_heads", heads),
        head_dim=hf.get("head_dim") or hf["hidden_size"] // heads,
        rms_norm_eps=hf.get("rms_norm_eps", 1e-6),
        rope_theta=rope.get("rope_theta", hf.get("rope_theta", 10000.0)),
        tie_word_embeddings=hf.get("tie_word_embeddings", False),
        attention_bias=hf.get("attention_bias", False))


class RMSNorm(nnx.Module):
  def __init__(self, dim: int, eps: float, dtype):
    self.weight = nnx.Param(jnp.ones((dim,), dtype))
    self.eps = eps

  def __call__(self, x):
    # Normalize in fp32 and cast back before the scale, in the same order as Hugging Face, so
    # bf16 results round the same way.
    x32 = x.astype(jnp.float32)
    x32 = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + self.eps)
    return self.weight[...] * x32.astype(x.dtype)


def rope(x, positions, theta: float):
  """Rotary embedding in Hugging Face's half-split layout. x: (B, T, heads, D); positions (B, T)."""
  dim = x.shape[-1]
  inv_freq = 1.0 / (theta ** (jnp.arange(0, dim, 2, dtype=jnp.float32) / dim))
  freqs = positions.astype(jnp.float32)[..., None] * inv_freq
  angles = jnp.concatenate([freqs, freqs], axis=-1)[:, :, None, :]
  cos, sin = jnp.cos(angles).astype(x.dtype), jnp.sin(angles).astype(x.dtype)
  x1, x2 = x[..., : dim // 2], x[..., dim // 2:]
  return x * cos + jnp.concatenate([-x2, x1], axis=-1) * sin


class Attention(nnx.Module):
  def __init__(self, cfg: Qwen3Config, dtype, rngs: nnx.Rngs):
    d, hd = cfg.hidden_size, cfg.head_dim
    linear = lambda i, o: nnx.Linear(i, o, use_bias=cfg.attention_bias, param_dtype=dtype, rngs=rngs)
    self.q_proj = linear(d, cfg.num_attention_heads * hd)
    self.k_proj = linear(d, cfg.num_key_value_heads * hd)
    self.v_proj = linear(d, cfg.num_key_value_heads * hd)
    self.o_proj = linear(cfg.num_attention_heads * hd, d)
    self.q_norm = RMSNorm(hd, cfg.rms_norm_eps, dtype)
    self.k_norm = RMSNorm(hd, cfg.rms_norm_eps, dtype)
    self.cfg = cfg

  def __call__(self, x, positions, allowed, cache, start):
    """x (B, T, D) written to cache slots [start, start+T); allowed (B, T, S) says which of the
    S cache slots each query may see. Returns the output and the updated (k, v) cache."""
    cfg = self.cfg
    b, t, _ = x.shape
    kvh, groups = cfg.num_key_value_heads, cfg.num_attention_heads // cfg.num_key_value_heads
    q = self.q_norm(self.q_proj(x).reshape(b, t, -1, cfg.head_dim))
    k = self.k_norm(self.k_proj(x).reshape(b, t, kvh, cfg.head_dim))
    v = self.v_proj(x).reshape(b, t, kvh, cfg.head_dim)
    q, k = rope(q, positions, cfg.rope_theta), rope(k, positions, cfg.rope_theta)
    k_cache = jax.lax.dynamic_update_slice(cache[0], k.astype(cache[0].dtype), (0, start, 0, 0))
    v_cache = jax.lax.dynamic_update_slice(cache[1], v.astype(cache[1].dtype), (0, start, 0, 0))
    # Grouped-query attention without repeating k/v: query heads are grouped by their kv head.
    q = q.reshape(b, t, kvh, groups, cfg.head_dim)
    scores = jnp.einsum("btkgd,bskd->bkgts", q, k_cache) * cfg.head_dim ** -0.5
    # The dtype's lowest value rather than -inf, as Hugging Face does: a fully masked row (a pad
    # query) then gives finite garbage instead of NaN.
    scores = jnp.where(allowed[:, None, None], scores, jnp.finfo(scores.dtype).min)
    weights = jax.nn.softmax(scores.astype(jnp.float32), axis=-1).astype(q.dtype)
    out = jnp.einsum("bkgts,bskd->btkgd", weights, v_cache).reshape(b, t, -1)
    return self.o_proj(out), (k_cache, v_cache)


class MLP(nnx.Module):
  def __init__(self, cfg: Qwen3Config, dtype, rngs: nnx.Rngs):
    linear = lambda i, o: nnx.Linear(i, o, use_bias=False, param_dtype=dtype, rngs=rngs)
    self.gate_proj = linear(cfg.hidden_size, cfg.intermediate_size)
    self.up_proj = linear(cfg.hidden_size, cfg.intermediate_size)
    self.down_proj = linear(cfg.intermediate_size, cfg.hidden_size)

  def __call__(self, x):
    return self.down_proj(jax.nn.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nnx.Module):
  def __init__(self, cfg: Qwen3Config, dtype, rngs: nnx.Rngs):
    self.self_attn = Attention(cfg, dtype, rngs)
    self.mlp = MLP(cfg, dtype, rngs)
    self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, dtype)
    self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, dtype)

  def __call__(self, x, positions, allowed, cache, start):
    h, cache = self.self_attn(self.input_layernorm(x), positions, allowed, cache, start)
    x = x + h
    return x + self.mlp(self.post_attention_layernorm(x)), cache


class Backbone(nnx.Module):
  """Hugging Face's `Qwen3Model`: embeddings, decoder layers, final norm."""

  def __init__(self, cfg: Qwen3Config, dtype, rngs: nnx.Rngs):
    self.embed_tokens = nnx.Embed(cfg.vocab_size, cfg.hidden_size, param_dtype=dtype, rngs=rngs)
    self.layers = nnx.List([DecoderLayer(cfg, dtype, rngs) for _ in range(cfg.num_hidden_layers)])
    self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, dtype)


class Qwen3(nnx.Module):
  """Hugging Face's `Qwen3ForCausalLM`."""

  def __init__(self, cfg: Qwen3Config, *, dtype=jnp.float32, rngs: nnx.Rngs):
    self.cfg = cfg
    self.model = Backbone(cfg, dtype, rngs)
    if not cfg.tie_word_embeddings:
      self.lm_head = nnx.Linear(cfg.hidden_size, cfg.vocab_size, use_bias=False, param_dtype=dtype,
                                rngs=rngs)

  @property
  def dtype(self):
    return self.model.embed_tokens.embedding.dtype

  def embed(self, input_ids):
    return self.model.embed_tokens(input_ids)

  def logits(self, h):
    if self.cfg.tie_word_embeddings:
      return self.model.embed_tokens.attend(h)
    return self.lm_head(h)

  def init_cache(self, batch: int, length: int):
    """Per layer, zero keys and values for `length` slots: ((B, S, kv_heads, head_dim),) * 2."""
    cfg = self.cfg
    shape = (batch, length, cfg.num_key_value_heads, cfg.head_dim)
    zeros = jnp.zeros(shape, self.dtype)
    return tuple((zeros, zeros) for _ in range(cfg.num_hidden_layers))

  def step(self, embeds, positions, kv_valid, cache, start, hidden_layers: Sequence[int] = ()):
    """Runs `embeds` (B, T, D) at cache slots [start, start+T) with rotary `positions` (B, T).

    kv_valid (B, S) marks the cache slots holding real tokens (after this call's writes). Returns
    the hidden states after the final norm (B, T, D), which `logits` maps to the vocabulary; the
    hidden states at `hidden_layers` (Hugging Face `output_hidden_states` indices, as a tuple in
    the order asked); and the updated cache.
    """
    t, s = embeds.shape[1], kv_valid.shape[1]
    slots = start + jnp.arange(t)
    allowed = kv_valid[:, None, :] & (jnp.arange(s)[None, :] <= slots[:, None])[None]
    n = self.cfg.num_hidden_layers + 1
    wanted = sorted({i % n for i in hidden_layers})
    states = {0: embeds} if 0 in wanted else {}
    h, new_cache = embeds, []
    for i, layer in enumerate(self.model.layers):
      h, layer_cache = layer(h, positions, allowed, cache[i], start)
      new_cache.append(layer_cache)
      if i + 1 in wanted and i + 1 < n - 1:
        states[i + 1] = h
    h = self.model.norm(h)
    # As in Hugging Face, the last hidden state is the one after the final norm.
    if n - 1 in wanted:
      states[n - 1] = h
    return h, tuple(states[i % n] for i in hidden_layers), tuple(new_cache)

  def __call__(self, input_ids=None, attention_mask=None, *, inputs_embeds=None,
               hidden_layers: Sequence[int] = ()):
    """Token ids (B, T) or input embeddings (B, T, D), and a (B, T) mask of real tokens.

    Returns logits (B, T, V) and the hidden states at `hidden_layers` (index 0: the embeddings;
    index i: the output of layer i; the last index: after the final norm; negative indices count
    from the end). Rows at padded positions are meaningless.
    """
    if (input_ids is None) == (inputs_embeds is None):
      raise ValueError("give exactly one of input_ids and inputs_embeds")
    embeds = self.embed(input_ids) if inputs_embeds is None else inputs_embeds
    b, t = embeds.shape[:2]
    mask = jnp.ones((b, t), bool) if attention_mask is None else attention_mask.astype(bool)
    h, states, _ = self.step(embeds, positions_from_mask(mask), mask, self.init_cache(b, t), 0,
                             hidden_layers)
    return self.logits(h), states


@functools.partial(nnx.jit, static_argnames=("hidden_layers",))
def forward(model: Qwen3, input_ids=None, attention_mask=None, inputs_embeds=None,
            hidden_layers: tuple[int, ...] = ()):
  """`model(...)` compiled: one XLA program instead of one dispatch per operation."""
  return model(input_ids, attention_mask, inputs_embeds=inputs_embeds, hidden_layers=hidden_layers)


def positions_from_mask(mask):
  """Rotary positions that skip padding: 0, 1, ... over the real tokens; padding gets 0."""
  return jnp.maximum(jnp.cumsum(mask.astype(jnp.int32), axis=-1) - 1, 0)

