"""The Qwen3 decoder family in Flax NNX, configured from a Hugging Face `config.json`.

Implements the architecture of Hugging Face's `Qwen3ForCausalLM` (transformers
`models/qwen3/modeling_qwen3.py`): RMSNorm before attention and MLP, rotary embeddings with the
config's theta, grouped-query attention with a per-head RMSNorm on queries and keys, a SwiGLU MLP,
and tied or untied input and output embeddings. Attribute names mirror the Hugging Face module
tree, so `checkpoint_io` maps every safetensors name to a parameter path mechanically.

**Scanned layers.** The decoder layers are one `DecoderLayer` whose parameters are stacked on a
leading `layers` axis (built with `nnx.vmap`) and run with `nnx.scan`, so compile time does not
grow with depth. `Qwen3(..., remat="full" | "dots")` rematerializes each layer in the backward pass
(`jax.checkpoint_policies.nothing_saveable`, or `dots_with_no_batch_dims_saveable`: keep the
projections' outputs, recompute attention and elementwise work); "none" saves everything.

**Sharding.** Every parameter names its logical axes (`out_sharding` metadata: `vocab`, `embed`,
`heads`, `kv_heads`, `head_dim`, `mlp`, `norm`, and `layers` for the stacked axis), which
`jaxlab.core.mesh.RULES` maps to the (data, fsdp, tensor) training mesh; `mesh.logical_sharding`
turns them into shardings. Activations are constrained where the collectives are decided (the
embedding output, queries/keys/values by head, the attention output, the MLP hidden layer, each
layer's output, the logits and the KV cache); the constraints act under `jax.set_mesh`, which
`forward` and `generate` enter by themselves when the parameters live on a training mesh.

**Cache.** Calls go through a fixed-size key/value cache (`init_cache`: keys and values
stacked over layers, (layers, B, S, kv_heads, head_dim)), so one code path serves the plain
forward pass (a cache exactly as long as the input), prefill and one-token decoding in
`generate`; a plain pass with rematerialized layers attends without one (see `__call__`).
Positions come from the attention mask (`cumsum(mask) - 1`, as Hugging Face's `generate` does),
so left padding, or padding between a soft-token prefix and the text, changes nothing for the
real tokens.

**LoRA.** `add_lora(model, rank, key)` gives the attention projections (q, k, v, o) of every
layer a rank-`rank` adapter (`nnx.LoRA`, stacked over layers like the rest; B starts at zero, so
the adapted model starts equal to the base). The adapters live in the same model object, next to
the base weights, which are therefore shared, never copied; their parameters are `nnx.LoRAParam`,
so they are trained and saved apart from the frozen base:

    model = checkpoint_io.load(folder)
    add_lora(model, rank=8, key=jax.random.key(0))
    graphdef, adapters, base = nnx.split(model, nnx.LoRAParam, ...)   # train `adapters` only
    logits, _ = model(ids, mask)               # with the adapters
    logits, _ = model(ids, mask, lora=False)   # the frozen base model, same object

`BASE` (every `nnx.Param` that is not a `LoRAParam`) selects the base weights.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Sequence

import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import NamedSharding

from jaxlab.core import mesh as mesh_lib
from jaxlab.core.mesh import constrain

# The base weights: what checkpoints hold and what LoRA training leaves frozen.
BASE = nnx.All(nnx.Param, nnx.Not(nnx.LoRAParam))

REMAT_POLICIES = {
    "none": None,
    "full": jax.checkpoint_policies.nothing_saveable,
    "dots": jax.checkpoint_policies.dots_with_no_batch_dims_saveable,
}


def logical_axes(*names):
  """Variable metadata naming the logical axes. Not sharded at creation (eager sharding would
  need a mesh in scope): `mesh.logical_sharding` places the variables."""
  return {"out_sharding": names, "eager_sharding": False}


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
  # Generation stops at any of these (config.json's `eos_token_id`, which may be a list, or
  # generation_config.json's, which `checkpoint_io.read_config` prefers, as Hugging Face does).
  eos_token_ids: tuple[int, ...] = ()

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
        attention_bias=hf.get("attention_bias", False),
        eos_token_ids=token_ids(hf.get("eos_token_id")))


def token_ids(value) -> tuple[int, ...]:
  """A config's token id field (an int, a list of ints, or None) as a tuple."""
  if value is None:
    return ()
  return tuple(int(v) for v in value) if isinstance(value, (list, tuple)) else (int(value),)


class RMSNorm(nnx.Module):
  def __init__(self, dim: int, eps: float, dtype, name: str = "norm"):
    self.weight = nnx.Param(jnp.ones((dim,), dtype), **logical_axes(name))
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


def _linear(i, o, names, dtype, rngs, bias=False):
  return nnx.Linear(i, o, use_bias=bias, param_dtype=dtype, rngs=rngs, kernel_metadata=logical_axes(*names),
                    bias_metadata=logical_axes(names[1]))


# Each attention projection: (in, out) sizes from the config and the logical names of its kernel.
def _projections(cfg: "Qwen3Config") -> dict[str, tuple[int, int, tuple[str, str]]]:
  d, q, kv = cfg.hidden_size, cfg.num_attention_heads * cfg.head_dim, cfg.num_key_value_heads * cfg.head_dim
  return {"q_proj": (d, q, ("embed", "heads")), "k_proj": (d, kv, ("embed", "kv_heads")),
          "v_proj": (d, kv, ("embed", "kv_heads")), "o_proj": (q, d, ("heads", "embed"))}


class Adapters(nnx.Module):
  """Rank-r LoRA adapters of one layer's attention projections (`add_lora`)."""

  def __init__(self, cfg: "Qwen3Config", rank: int, dtype, rngs: nnx.Rngs):
    for name, (i, o, (n_in, n_out)) in _projections(cfg).items():
      setattr(self, name, nnx.LoRA(i, rank, o, param_dtype=dtype, rngs=rngs, a_metadata=logical_axes(n_in, None),
                                   b_metadata=logical_axes(None, n_out)))


class Attention(nnx.Module):
  def __init__(self, cfg: Qwen3Config, dtype, rngs: nnx.Rngs):
    for name, (i, o, names) in _projections(cfg).items():
      setattr(self, name, _linear(i, o, names, dtype, rngs, bias=cfg.attention_bias))
    self.q_norm = RMSNorm(cfg.head_dim, cfg.rms_norm_eps, dtype, "head_dim")
    self.k_norm = RMSNorm(cfg.head_dim, cfg.rms_norm_eps, dtype, "head_dim")
    self.cfg = cfg

  def project(self, name: str, x, lora: bool):
    out = getattr(self, name)(x)
    adapters = getattr(self, "lora", None)
    if lora and adapters is not None:
      out = out + getattr(adapters, name)(x).astype(out.dtype)
    return out

  def __call__(self, x, positions, allowed, cache, layer, start, lora: bool):
    """x (B, T, D) is written to slots [start, start+T) of this layer's entry of the stacked
    `cache` = (keys, values), each (layers, B, S, kv_heads, head_dim); allowed (B, T, S) says which
    of the S slots each query may see. Returns the output and the updated cache; with `cache`
    None, the queries attend to this call's own keys and values (S = T, start 0) and no cache
    is returned."""
    cfg = self.cfg
    b, t, _ = x.shape
    kvh = cfg.num_key_value_heads
    q = self.q_norm(self.project("q_proj", x, lora).reshape(b, t, -1, cfg.head_dim))
    k = self.k_norm(self.project("k_proj", x, lora).reshape(b, t, kvh, cfg.head_dim))
    v = self.project("v_proj", x, lora).reshape(b, t, kvh, cfg.head_dim)
    q = constrain(rope(q, positions, cfg.rope_theta), "batch", "length", "heads", "head_dim")
    k = constrain(rope(k, positions, cfg.rope_theta), "batch", "length", "kv_heads", "head_dim")
    v = constrain(v, "batch", "length", "kv_heads", "head_dim")
    if cache is None:   # a plain pass from slot 0: the keys and values are this call's own
      return self._attend(q, k, v, allowed, lora), None
    # Only the new tokens are written into the stacked cache (in place inside the layer scan);
    # then this layer's keys and values are read back.
    new = []
    for stacked, x_new in zip(cache, (k, v)):
      stacked = jax.lax.dynamic_update_slice(stacked, x_new[None].astype(stacked.dtype), (layer, 0, start, 0, 0))
      new.append(constrain(stacked, "layers", "batch", "length", "kv_heads", "head_dim"))
    keys, values = (jax.lax.dynamic_index_in_dim(c, layer, keepdims=False) for c in new)
    return self._attend(q, keys, values, allowed, lora), tuple(new)

  def _attend(self, q, keys, values, allowed, lora: bool):
    """Grouped-query attention of q (B, T, heads, D) over keys and values (B, S, kv_heads, D)."""
    cfg = self.cfg
    b, t = q.shape[:2]
    kvh, groups = cfg.num_key_value_heads, cfg.num_attention_heads // cfg.num_key_value_heads
    # Grouped-query attention without repeating k/v: query heads are grouped by their kv head.
    q = q.reshape(b, t, kvh, groups, cfg.head_dim)
    scores = jnp.einsum("btkgd,bskd->bkgts", q, keys) * cfg.head_dim ** -0.5
    # The dtype's lowest value rather than -inf, as Hugging Face does: a fully masked row (a pad
    # query) then gives finite garbage instead of NaN.
    scores = jnp.where(allowed[:, None, None], scores, jnp.finfo(scores.dtype).min)
    weights = jax.nn.softmax(scores.astype(jnp.float32), axis=-1).astype(q.dtype)
    out = jnp.einsum("bkgts,bskd->btkgd", weights, values).reshape(b, t, -1)
    out = constrain(out, "batch", "length", "heads")
    return self.project("o_proj", out, lora)


class MLP(nnx.Module):
  def __init__(self, cfg: Qwen3Config, dtype, rngs: nnx.Rngs):
    self.gate_proj = _linear(cfg.hidden_size, cfg.intermediate_size, ("embed", "mlp"), dtype, rngs)
    self.up_proj = _linear(cfg.hidden_size, cfg.intermediate_size, ("embed", "mlp"), dtype, rngs)
    self.down_proj = _linear(cfg.intermediate_size, cfg.hidden_size, ("mlp", "embed"), dtype, rngs)

  def __call__(self, x):
    hidden = constrain(jax.nn.silu(self.gate_proj(x)) * self.up_proj(x), "batch", "length", "mlp")
    return self.down_proj(hidden)


class DecoderLayer(nnx.Module):
  def __init__(self, cfg: Qwen3Config, dtype, rngs: nnx.Rngs):
    self.self_attn = Attention(cfg, dtype, rngs)
    self.mlp = MLP(cfg, dtype, rngs)
    self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, dtype)
    self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, dtype)

  def __call__(self, x, positions, allowed, cache, layer, start, lora: bool):
    h, cache = self.self_attn(self.input_layernorm(x), positions, allowed, cache, layer, start, lora)
    x = x + h
    x = x + self.mlp(self.post_attention_layernorm(x))
    return constrain(x, "batch", "length", "embed"), cache


def _stacked(n: int, make):
  """`make(rngs)` built `n` times with its variables stacked on a leading `layers` axis."""
  @nnx.split_rngs(splits=n)
  @nnx.vmap(in_axes=(0,), out_axes=0, transform_metadata={nnx.PARTITION_NAME: "layers"})
  def build(rngs):
    return make(rngs)
  return build


class Backbone(nnx.Module):
  """Hugging Face's `Qwen3Model`: embeddings, decoder layers (stacked), final norm."""

  def __init__(self, cfg: Qwen3Config, dtype, rngs: nnx.Rngs):
    self.embed_tokens = nnx.Embed(cfg.vocab_size, cfg.hidden_size, param_dtype=dtype, rngs=rngs,
                                  embedding_metadata=logical_axes("vocab", "embed"))
    self.layers = _stacked(cfg.num_hidden_layers, lambda r: DecoderLayer(cfg, dtype, r))(rngs)
    self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, dtype)


class Qwen3(nnx.Module):
  """Hugging Face's `Qwen3ForCausalLM`."""

  def __init__(self, cfg: Qwen3Config, *, dtype=jnp.float32, remat: str = "none", rngs: nnx.Rngs):
    if remat not in REMAT_POLICIES:
      raise ValueError(f"remat={remat!r}: choose one of {sorted(REMAT_POLICIES)}")
    self.cfg = cfg
    self.remat = remat
    self.model = Backbone(cfg, dtype, rngs)
    if not cfg.tie_word_embeddings:
      self.lm_head = _linear(cfg.hidden_size, cfg.vocab_size, ("embed", "vocab"), dtype, rngs)

  @property
  def dtype(self):
    return self.model.embed_tokens.embedding.dtype

  def embed(self, input_ids):
    return constrain(self.model.embed_tokens(input_ids), "batch", "length", "embed")

  def logits(self, h):
    out = self.model.embed_tokens.attend(h) if self.cfg.tie_word_embeddings else self.lm_head(h)
    return constrain(out, *("batch", "length", "vocab")[-out.ndim:])

  def init_cache(self, batch: int, length: int):
    """Zero keys and values for `length` slots: (keys, values), each (layers, B, S, kv_heads, head_dim)."""
    cfg = self.cfg
    shape = (cfg.num_hidden_layers, batch, length, cfg.num_key_value_heads, cfg.head_dim)
    zeros = constrain(jnp.zeros(shape, self.dtype), "layers", "batch", "length", "kv_heads", "head_dim")
    return zeros, zeros

  def step(self, embeds, positions, kv_valid, cache, start, hidden_layers: Sequence[int] = (),
           lora: bool = True):
    """Runs `embeds` (B, T, D) at cache slots [start, start+T) with rotary `positions` (B, T).

    kv_valid (B, S) marks the cache slots holding real tokens (after this call's writes); a `cache`
    of None attends to this call's tokens alone (start 0, S = T) and returns None for it. Returns
    the hidden states after the final norm (B, T, D), which `logits` maps to the vocabulary; the
    hidden states at `hidden_layers` (Hugging Face `output_hidden_states` indices, as a tuple in
    the order asked); and the updated cache. `lora=False` ignores the adapters of `add_lora`.
    """
    t, s = embeds.shape[1], kv_valid.shape[1]
    slots = start + jnp.arange(t)
    allowed = kv_valid[:, None, :] & (jnp.arange(s)[None, :] <= slots[:, None])[None]
    num_layers = self.cfg.num_hidden_layers
    n = num_layers + 1
    wanted = sorted({i % n for i in hidden_layers})
    # States after layers 1 .. L-1 are collected inside the scan into one buffer: layer i writes
    # slot `where[i]`, and layers nobody asked for write a spare last slot (one small write per
    # layer, no branch, and no (layers, B, T, D) stack of every state).
    inner = [i for i in wanted if 0 < i < n - 1]
    where = jnp.array([inner.index(i + 1) if i + 1 in inner else len(inner) for i in range(num_layers)],
                      jnp.int32)
    buffer = jnp.zeros((len(inner) + 1,) + embeds.shape, embeds.dtype) if inner else None
    policy = REMAT_POLICIES[self.remat]

    def run_layer(layer, h, cache, i):
      return layer(h, positions, allowed, cache, i, start, lora)

    if self.remat != "none":
      run_layer = nnx.remat(run_layer, policy=policy, prevent_cse=False, graph=False)

    # Tree mode (graph=False): the layers are a plain pytree here, so variables that come from an
    # outer trace (base weights closed over by a jax.grad of LoRA adapters, a model merged before a
    # while_loop) are fine; graph mode refuses them.
    @nnx.scan(in_axes=(nnx.Carry, 0, 0), out_axes=nnx.Carry, graph=False)
    def body(carry, layer, i):
      h, buffer, cache = carry
      h, cache = run_layer(layer, h, cache, i)
      if buffer is not None:
        buffer = jax.lax.dynamic_update_index_in_dim(buffer, h, where[i], 0)
      return h, buffer, cache

    h, buffer, new_cache = body((embeds, buffer, None if cache is None else tuple(cache)), self.model.layers,
                                jnp.arange(num_layers, dtype=jnp.int32))
    h = self.model.norm(h)
    states = {i: buffer[inner.index(i)] for i in inner}
    states[0] = embeds
    # As in Hugging Face, the last hidden state is the one after the final norm.
    states[n - 1] = h
    return h, tuple(states[i % n] for i in hidden_layers), new_cache

  def __call__(self, input_ids=None, attention_mask=None, *, inputs_embeds=None,
               hidden_layers: Sequence[int] = (), lora: bool = True):
    """Token ids (B, T) or input embeddings (B, T, D), and a (B, T) mask of real tokens.

    Returns logits (B, T, V) and the hidden states at `hidden_layers` (index 0: the embeddings;
    index i: the output of layer i; the last index: after the final norm; negative indices count
    from the end). Rows at padded positions are meaningless. `lora=False` runs the base model
    without the adapters of `add_lora`.
    """
    if (input_ids is None) == (inputs_embeds is None):
      raise ValueError("give exactly one of input_ids and inputs_embeds")
    embeds = self.embed(input_ids) if inputs_embeds is None else inputs_embeds
    b, t = embeds.shape[:2]
    mask = jnp.ones((b, t), bool) if attention_mask is None else attention_mask.astype(bool)
    # Rematerialized layers attend without a cache: remat keeps a layer's inputs for the backward
    # pass, and a stacked cache among them is the whole (layers, B, T, kv_heads, head_dim) array
    # saved at every layer, memory quadratic in depth (52.6 GB per device for a Qwen3-1.7B step of
    # 8 x 2,048 tokens, docs/scaling.md). A plain pass's keys and values are its own, so the cache
    # adds nothing else. Without remat the pass still writes one, as before: a cache-free pass
    # gives the same logits but moves the gradients' last float bits, which every run made
    # without remat would then see.
    cache = self.init_cache(b, t) if self.remat == "none" else None
    h, states, _ = self.step(embeds, positions_from_mask(mask), mask, cache, 0, hidden_layers, lora)
    return self.logits(h), states


def model_mesh(model: nnx.Module):
  """The training mesh the model's parameters live on, or None (one device, another mesh, or
  traced values inside someone else's jit)."""
  leaves = jax.tree.leaves(nnx.state(model))
  if not leaves or isinstance(leaves[0], jax.core.Tracer) or not isinstance(leaves[0], jax.Array):
    return None
  sharding = leaves[0].sharding
  if isinstance(sharding, NamedSharding) and set(mesh_lib.TRAINING_AXES) <= set(sharding.mesh.axis_names):
    return sharding.mesh
  return None


def on_mesh(fn):
  """Runs `fn(model, ...)` under `jax.set_mesh` of the model's training mesh (if any), so the
  activation constraints inside take effect."""
  @functools.wraps(fn)
  def wrapped(model, *args, **kwargs):
    mesh = model_mesh(model)
    if mesh is None:
      return fn(model, *args, **kwargs)
    with jax.set_mesh(mesh):
      return fn(model, *args, **kwargs)
  return wrapped


@functools.partial(nnx.jit, static_argnames=("hidden_layers", "lora"))
def _forward(model: Qwen3, input_ids=None, attention_mask=None, inputs_embeds=None,
             hidden_layers: tuple[int, ...] = (), lora: bool = True):
  return model(input_ids, attention_mask, inputs_embeds=inputs_embeds, hidden_layers=hidden_layers, lora=lora)


@on_mesh
def forward(model: Qwen3, input_ids=None, attention_mask=None, inputs_embeds=None,
            hidden_layers: tuple[int, ...] = (), lora: bool = True):
  """`model(...)` compiled: one XLA program instead of one dispatch per operation."""
  return _forward(model, input_ids, attention_mask, inputs_embeds, hidden_layers=tuple(hidden_layers), lora=lora)


def positions_from_mask(mask):
  """Rotary positions that skip padding: 0, 1, ... over the real tokens; padding gets 0."""
  return jnp.maximum(jnp.cumsum(mask.astype(jnp.int32), axis=-1) - 1, 0)


def add_lora(model: Qwen3, rank: int, key, *, dtype=jnp.float32) -> Qwen3:
  """Gives every layer's q/k/v/o projections a rank-`rank` LoRA adapter (A: He-uniform, B: zero),
  in place, and returns the model. The adapters' parameters are `nnx.LoRAParam` in `dtype` (fp32
  by default, whatever the base dtype; their outputs are cast to it) and are created already
  sharded like the projections they adapt when the model lives on a training mesh."""
  if rank < 1:
    raise ValueError(f"LoRA rank must be >= 1, got {rank}")
  if getattr(model.model.layers.self_attn, "lora", None) is not None:
    raise ValueError("the model already has LoRA adapters")
  cfg = model.cfg
  build = _stacked(cfg.num_hidden_layers, lambda r: Adapters(cfg, rank, dtype, r))

  graphdef, abstract = nnx.split(nnx.eval_shape(lambda: build(nnx.Rngs(0))))
  mesh = model_mesh(model)
  shardings = mesh_lib.logical_sharding(abstract, mesh) if mesh is not None else None
  state = jax.jit(lambda key: nnx.state(build(nnx.Rngs(key))), out_shardings=shardings)(key)
  model.model.layers.self_attn.lora = nnx.merge(graphdef, state)
  return model
