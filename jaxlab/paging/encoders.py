"""Page encoders that keep several slots per chunk (`slots`, `pointer`, `icae`, `mean`), and the
registry of every encoder (`Kind`, `register`, `get`; the published `pooled` design included).

`SlotEncoder`: a per-chunk cross-attention compressor. The frozen LM reads a chunk once; the
hidden states of the chosen layers at **every** token (not one pooled vector) are concatenated per
token, projected to the LM's width and given a learned position embedding; `slots_per_chunk`
learned queries then go through `depth` post-LN decoder layers (self-attention among the queries,
cross-attention to the chunk's tokens with its padding mask, GELU FFN: the same layer as the
published aggregator), and a final LayerNorm and linear map put each slot in the LM's input
embedding space, scaled to the RMS of the LM's token embeddings so a slot enters the frozen LM
at the size a word does. Each chunk becomes `slots_per_chunk` page vectors of width D.

`IcaeEncoder` (ICAE, Ge et al. 2024, "In-context Autoencoder for Context Compression in a Large
Language Model"): the frozen LM itself, with LoRA adapters on its attention projections, reads a
chunk followed by m learned memory tokens; their final states are the chunk's pages.

`pointer`: a `SlotEncoder` whose pages can carry the chunk's exact words. Each slot also points
into its chunk (one attention head from the slot's final state to the chunk's token states) and
takes the pointer-weighted mixture of the frozen LM's **input embeddings** of those tokens; the
page is that mixture plus the slot's latent vector times a learned gate (0 at the start). A sharp
pointer hands the LM a word it knows exactly (a name it has never seen together with this
question); a diffuse one, a blend; the latent part carries what no single word does.

`mean` (mean-pooled pages, the compression literature's plain baseline): the same token states as
`slots` reads (the chosen layers, concatenated per token), averaged over `slots_per_chunk`
contiguous windows of the chunk's real tokens (`window_weights`), then one trainable linear map
(shared by every page) to the LM's width, each page put at the embeddings' RMS times a learned
scale as the slots encoder does. Nothing to pretrain: it learns in the QA fine-tune.

Compression ratio = chunk tokens / pages per chunk (96 / 16 = 6x on `cpu`).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
from flax import nnx

from jaxlab.lm import qwen3
from jaxlab.paging.modules import LN_EPS, DecoderLayer, _keys, axes, linear


class SlotEncoder(nnx.Module):
  def __init__(self, num_layers: int, d_lm: int, chunk_tokens: int, slots: int, depth: int, heads: int, ffn: int,
               rate: float, embed_rms: float, pointer: bool = False, *, rngs: nnx.Rngs):
    self.proj = linear(num_layers * d_lm, d_lm, ("mlp", "embed"), rngs)
    self.position = nnx.Param(0.02 * jax.random.normal(rngs.params(), (chunk_tokens, d_lm)), **axes(None, "embed"))
    self.in_norm = nnx.LayerNorm(d_lm, epsilon=LN_EPS, rngs=rngs)
    self.queries = nnx.Param(0.02 * jax.random.normal(rngs.params(), (slots, d_lm)), **axes(None, "embed"))
    self.layers = nnx.List([DecoderLayer(d_lm, heads, ffn, rate, rngs=rngs) for _ in range(depth)])
    self.out_norm = nnx.LayerNorm(d_lm, epsilon=LN_EPS, rngs=rngs)
    self.out = linear(d_lm, d_lm, ("embed", "embed"), rngs)
    self.scale = nnx.Param(jnp.asarray(embed_rms, jnp.float32))
    if pointer:
      self.point_q = linear(d_lm, d_lm, ("embed", "heads"), rngs)
      self.point_k = linear(d_lm, d_lm, ("embed", "heads"), rngs)
      self.gate = nnx.Param(jnp.zeros((), jnp.float32))

  def __call__(self, states, mask, key=None, embeds=None):
    """states (..., C, L, D) of one chunk's tokens, mask (..., C) -> pages (..., slots, D); a
    `pointer` encoder also takes the LM's input embeddings of the chunk's tokens (..., C, D)."""
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
    if hasattr(self, "gate"):
      scores = jnp.einsum("bsd,bcd->bsc", self.point_q(q), self.point_k(memory)) * d ** -0.5
      weights = jax.nn.softmax(jnp.where(m[:, None], scores, jnp.finfo(scores.dtype).min), axis=-1)
      words = jnp.einsum("bsc,bcd->bsd", weights, embeds.reshape(-1, c, d).astype(jnp.float32))
      pages = words + self.gate[...] * pages
    return pages.reshape(*lead, *pages.shape[1:])


def window_weights(mask, windows: int):
  """(N, C) masks of right-padded chunks -> (N, windows, C) weights averaging each window.

  A chunk of n real tokens is cut into `windows` contiguous windows, window j holding tokens
  [floor(j n / m), floor((j + 1) n / m)) (m = windows), so windows differ in size by at most one
  token and never reach the padding. A chunk shorter than m leaves some windows without a token
  of their own: such a window takes the one token where it starts (floor(j n / m)), so every page
  is a mean of real tokens and some tokens serve two pages. A chunk with no real token (a padded
  page, masked downstream) gets zero weights."""
  c = mask.shape[-1]
  n = jnp.sum(mask, axis=-1, dtype=jnp.int32)[:, None, None]
  j = jnp.arange(windows, dtype=jnp.int32)[None, :, None]
  start = j * n // windows
  end = jnp.maximum((j + 1) * n // windows, start + 1)
  t = jnp.arange(c, dtype=jnp.int32)[None, None, :]
  inside = ((t >= start) & (t < end) & (t < n)).astype(jnp.float32)
  return inside / jnp.maximum(jnp.sum(inside, axis=-1, keepdims=True), 1.0)


class MeanEncoder(nnx.Module):
  """Mean-pooled pages: window means of a chunk's token states (`window_weights`), one linear
  map to the LM's width, each page at the embeddings' RMS times a learned scale."""

  def __init__(self, num_layers: int, d_lm: int, slots: int, embed_rms: float, *, rngs: nnx.Rngs):
    self.proj = linear(num_layers * d_lm, d_lm, ("mlp", "embed"), rngs)
    self.scale = nnx.Param(jnp.asarray(embed_rms, jnp.float32))
    self.slots = slots

  def __call__(self, states, mask, key=None, embeds=None):
    """states (..., C, L, D) of one chunk's tokens, mask (..., C) -> pages (..., slots, D), as
    `SlotEncoder` takes them (no dropout, no embeddings)."""
    del key, embeds
    lead, (c, l, d) = states.shape[:-3], states.shape[-3:]
    x = states.reshape(-1, c, l * d).astype(jnp.float32)
    means = jnp.einsum("nmc,ncx->nmx", window_weights(mask.reshape(-1, c), self.slots), x)
    pages = self.proj(means)
    pages = pages * jax.lax.rsqrt(jnp.mean(pages * pages, axis=-1, keepdims=True) + 1e-6) * self.scale[...]
    return pages.reshape(*lead, self.slots, d)


def lora_adapters(lm, rank: int, key):
  """Rank-`rank` LoRA adapters (`nnx.LoRAParam`) for every attention projection of `lm`'s layers,
  as a module of their own: `qwen3.add_lora` applied to an abstract copy of the LM, so the base
  weights are neither copied nor held (`with_adapters` attaches them to the frozen LM per call)."""
  shadow = nnx.eval_shape(lambda: qwen3.Qwen3(lm.cfg, dtype=lm.dtype, rngs=nnx.Rngs(0)))
  qwen3.add_lora(shadow, rank, key)
  return shadow.model.layers.self_attn.lora


def with_adapters(lm, adapters):
  """A second handle on the frozen LM's arrays with `adapters` attached (the LM itself stays plain)."""
  adapted = nnx.merge(*nnx.split(lm))
  adapted.model.layers.self_attn.lora = adapters
  return adapted


class IcaeEncoder(nnx.Module):
  """ICAE's encoder: the frozen LM with LoRA adapters reads [chunk tokens | m memory tokens]; the
  memory tokens' final hidden states (after the final norm) are the chunk's m pages. The memory
  embeddings and the adapters are the trainable parameters; each page is put at the RMS of the
  LM's token embeddings (times a learned scale), as the slots encoder's are."""

  def __init__(self, lm, slots: int, rank: int, embed_rms: float, *, rngs: nnx.Rngs):
    self.lora = lora_adapters(lm, rank, rngs.params())
    self.memory = nnx.Param(embed_rms * jax.random.normal(rngs.params(), (slots, lm.cfg.hidden_size)),
                             **axes(None, "embed"))
    self.scale = nnx.Param(jnp.asarray(embed_rms, jnp.float32))

  def __call__(self, lm, ids, mask):
    """ids, mask (B, P, C) of right-padded chunks -> pages (B, P, m, D). Padding sits between a
    chunk and its memory tokens, which changes nothing: positions skip it."""
    b, p, c = ids.shape
    m, d = self.memory.shape
    adapted = with_adapters(lm, self.lora)
    embeds = jnp.concatenate([adapted.embed(ids.reshape(b * p, c)),
                              jnp.broadcast_to(self.memory[...].astype(adapted.dtype), (b * p, m, d))], axis=1)
    full = jnp.concatenate([mask.reshape(b * p, c), jnp.ones((b * p, m), bool)], axis=1)
    _, (h,) = adapted(inputs_embeds=embeds, attention_mask=full, hidden_layers=(-1,))
    pages = h[:, c:].astype(jnp.float32)
    pages = pages * jax.lax.rsqrt(jnp.mean(pages * pages, axis=-1, keepdims=True) + 1e-6) * self.scale[...]
    return pages.reshape(b, p, m, d)


# --- the registry: each encoder as the pipeline sees it ---------------------------------------

@dataclasses.dataclass(frozen=True)
class Kind:
  """One page encoder, as every part of the pipeline reads it (the model, the page inputs, the
  timing, pretraining's checks and the frontier's sweep): a new encoder is one `register` call."""
  name: str
  build: Callable | None         # (spec.PagerSpec, lm, d_lm, embed_rms, rngs) -> the per-chunk encoder module
  stored_states: bool = False    # reads the LM's pooled chunk states from the page store (the published
                                 # `pooled`, whose whole pager `modules.Pager` is); else the chunks' token ids
  runs_lm: bool = False          # runs the frozen LM on the chunk itself (gets no hidden states)
  reads_embeds: bool = False     # also gets the chunk tokens' input embeddings
  fields: tuple = ()             # config fields that fix a pretrained encoder's meaning (checked on load)
  frontier_counts: str | None = None   # the frontier's field of pages-per-chunk values to sweep


KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> None:
  if kind.name in KINDS:
    raise ValueError(f"page encoder {kind.name!r} is already registered")
  KINDS[kind.name] = kind


def get(name: str) -> Kind:
  if name not in KINDS:
    raise KeyError(f"no page encoder {name!r}; registered: {tuple(KINDS)}")
  return KINDS[name]


def names() -> tuple[str, ...]:
  return tuple(KINDS)


def _slots(pointer: bool):
  def build(spec, lm, d_lm, embed_rms, rngs):
    return SlotEncoder(len(spec.hidden_layers), d_lm, spec.chunk_tokens, spec.slots_per_chunk, spec.encoder_depth,
                       spec.heads, spec.ffn, spec.dropout, embed_rms, pointer, rngs=rngs)
  return build


SLOT_FIELDS = ("pager.slots_per_chunk", "pager.encoder_depth", "pager.heads", "pages.hidden_layers",
               "pages.chunk_tokens")
register(Kind("pooled", None, stored_states=True))
register(Kind("slots", _slots(False), fields=SLOT_FIELDS, frontier_counts="slots_per_chunk"))
register(Kind("pointer", _slots(True), reads_embeds=True, fields=SLOT_FIELDS,
              frontier_counts="pointer_slots_per_chunk"))
register(Kind("mean", lambda spec, lm, d_lm, embed_rms, rngs: MeanEncoder(
    len(spec.hidden_layers), d_lm, spec.slots_per_chunk, embed_rms, rngs=rngs),
              fields=("pager.slots_per_chunk", "pages.hidden_layers"), frontier_counts="slots_per_chunk"))
register(Kind("icae", lambda spec, lm, d_lm, embed_rms, rngs: IcaeEncoder(
    lm, spec.slots_per_chunk, spec.lora_rank, embed_rms, rngs=rngs), runs_lm=True,
              fields=("pager.slots_per_chunk", "pager.lora_rank"), frontier_counts="icae_slots_per_chunk"))
