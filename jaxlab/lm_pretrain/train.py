"""Training a small Qwen3-architecture base model from scratch, on the core training loop.

The rows (prompt formats, word-level tokenizer, curriculum stages) are built by `data.py`; exact
match and the report live in `evaluation.py`; resume, checkpoints, metrics, the NaN stop,
preemption and the stop path are the core loop's (`jaxlab.core.train.fit`).

The run lays every device out as the training mesh of `config.mesh` (data, fsdp, tensor): batch
rows are split over data x fsdp, and parameters and optimizer state are sharded by the logical
axis rules of `jaxlab.core.mesh` (FSDP over `fsdp`, heads and MLP width over `tensor`); both are
created already sharded (abstract init, then a jitted init with those shardings). One jitted step
(AdamW, linear warmup then cosine decay, global-norm clipping) updates them in place and keeps
their layout. The loss is next-token cross-entropy with the context and question tokens scaled by
`data.context_loss_weight` (answers, key facts and <eos> weigh 1). A non-finite loss or gradient
norm stops the run with an error before anything is checkpointed. Every `checkpoint_every` steps
(and on SIGTERM) the named state {"params", "opt_state"} goes to `workdir/checkpoints` with Orbax,
and a run started again on the same workdir resumes from it, bit-identically, since the batch of
step s depends only on (seed, stage, s), on the same mesh or on another one (each device reads
only its own slices). Scalars go to `train_log.jsonl` and `tb/` (TensorBoard). Every `eval.every`
steps the model answers `eval.num_during` validation questions (logged; the test split is
measured once, at the end).

Restore order: the metadata (its fingerprint must match this config), then params and optimizer
state into their abstract, sharded targets, then the step from the metadata.

The trained model is exported as a Hugging Face folder (config.json, fp32 model.safetensors,
tokenizer.json) that `jaxlab.lm.checkpoint_io.load` reads like any Qwen3 checkpoint.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from safetensors.numpy import save_file
from tokenizers import Tokenizer

from jaxlab.core import checkpoint, mesh as mesh_lib, train as train_lib
from jaxlab.core.config import ConfigError, to_dict
from jaxlab.lm import checkpoint_io
from jaxlab.lm.qwen3 import Qwen3, Qwen3Config
from jaxlab.lm_pretrain import data as data_lib, evaluation
from jaxlab.lm_pretrain.data import EOS, PAD


def fingerprint(config) -> str:
  """What fixes the trained weights; the mesh, stop_after, logging and evaluation settings do not
  (a run may resume on another mesh)."""
  c = to_dict(config)
  return checkpoint.fingerprint({k: c[k] for k in ("seed", "steps", "batch_size", "optim", "data", "model")})


# ----------------------------------------------------------------------------- data
def prepare(config, workdir: Path) -> tuple[Tokenizer, list[tuple[np.ndarray, np.ndarray]]]:
  """Tokenizer and the encoded rows of each stage, cached in the workdir so a resume skips generation."""
  key = checkpoint.fingerprint({"seed": config.seed, "data": to_dict(config.data)})
  tok_path, data_path = workdir / "tokenizer.json", workdir / "corpus.npz"
  n = len(config.data.stages)
  if tok_path.is_file() and data_path.is_file():
    cached = np.load(data_path)
    if str(cached["key"]) == key:
      return Tokenizer.from_file(str(tok_path)), [(cached[f"ids{k}"], cached[f"flags{k}"]) for k in range(n)]
  total = sum(s[0] for s in config.data.stages)
  examples = [data_lib.stage_examples(config, k, "train", max(1, round(config.data.num_train * s[0] / total)))
              for k, s in enumerate(config.data.stages)]
  tokenizer = data_lib.train_tokenizer(data_lib.texts([ex for stage in examples for ex in stage]))
  rows = [data_lib.encode_rows(tokenizer, ex, s[1]) for ex, s in zip(examples, config.data.stages)]
  if jax.process_index() == 0:
    tokenizer.save(str(tok_path))
    np.savez(data_path, key=np.array(key), **{f"ids{k}": r[0] for k, r in enumerate(rows)},
             **{f"flags{k}": r[1] for k, r in enumerate(rows)})
  return tokenizer, rows


# ----------------------------------------------------------------------------- model
def hf_config(config, vocab_size: int) -> dict:
  """The Hugging Face `config.json` of the model (also what builds it here)."""
  m = config.model
  return {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": vocab_size,
          "hidden_size": m.hidden_size, "intermediate_size": m.intermediate_size,
          "num_hidden_layers": m.num_hidden_layers, "num_attention_heads": m.num_attention_heads,
          "num_key_value_heads": m.num_key_value_heads, "head_dim": m.head_dim,
          "rms_norm_eps": 1e-6, "rope_theta": float(m.rope_theta), "tie_word_embeddings": m.tie_word_embeddings,
          "attention_bias": False, "hidden_act": "silu", "use_sliding_window": False,
          "max_position_embeddings": max(s[1] for s in config.data.stages), "initializer_range": config.optim.init_std,
          "bos_token_id": EOS, "eos_token_id": EOS, "pad_token_id": PAD, "torch_dtype": "float32"}


def build_model(config, vocab_size: int) -> Qwen3:
  """The model with every matrix drawn N(0, init_std), as Hugging Face initializes Qwen3, and the
  per-head q/k RMSNorm scales set to `optim.qk_norm_init` (traced inside the sharded init).

  NNX's default embedding init has unit scale, which makes the tied output logits start large. With
  unit q/k-norm scales an attention logit is at most sqrt(head_dim) (5.7 at head_dim 32), too flat
  to single out one of a hundred tokens, and Adam grows a scale by only about the learning rate per
  step: a larger start lets retrieval heads form early."""
  model = Qwen3(Qwen3Config.from_hf(hf_config(config, vocab_size)), remat=config.model.remat,
                rngs=nnx.Rngs(config.seed))
  key = jax.random.key(config.seed)
  flat = []
  for i, (path, var) in enumerate(nnx.to_flat_state(nnx.state(model, nnx.Param))):
    if path[-1] in ("kernel", "embedding"):
      var = var.replace(config.optim.init_std * jax.random.normal(jax.random.fold_in(key, i), var.shape, var.dtype))
    elif "q_norm" in path or "k_norm" in path:
      var = var.replace(jnp.full_like(var[...], config.optim.qk_norm_init))
    flat.append((path, var))
  nnx.update(model, nnx.from_flat_state(flat))
  return model


def init_model(config, vocab_size: int, mesh=None) -> Qwen3:
  """`build_model` created directly in its shards on `mesh` (default: the config's training mesh)."""
  mesh = mesh or mesh_lib.training_mesh(config.mesh)
  return mesh_lib.create_sharded(lambda: build_model(config, vocab_size), mesh)


def optimizer(config) -> optax.GradientTransformation:
  o = config.optim
  return _optimizer(o.learning_rate, o.warmup_steps, config.steps, o.weight_decay, o.clip_norm)


@functools.lru_cache(maxsize=None)
def _schedule(lr, warmup, steps):
  return optax.warmup_cosine_decay_schedule(0.0, lr, max(warmup, 1), max(steps, warmup + 1), end_value=lr * 0.1)


def _is_matrix(path, _) -> bool:
  return getattr(path[-2], "key", None) in ("kernel", "embedding")


@functools.lru_cache(maxsize=None)
def _optimizer(lr, warmup, steps, weight_decay, clip_norm):
  # Cached: the jitted step takes the optimizer as a static argument, so an equal config must give
  # the same object, or every run (and every resume) would compile again.
  # Weight decay on matrices only: decaying the norm scales would pull attention back to flat.
  # (Stacked layers make norm scales 2-D, so matrices are told by name, not by rank.)
  matrices = lambda params: jax.tree_util.tree_map_with_path(_is_matrix, params)
  return optax.chain(optax.clip_by_global_norm(clip_norm),
                     optax.adamw(_schedule(lr, warmup, steps), b1=0.9, b2=0.95, weight_decay=weight_decay,
                                 mask=matrices))


def abstract_state(config, vocab_size: int, mesh):
  """(graphdef, abstract {"params", "opt_state"}, their shardings on `mesh` by the rules): what a
  checkpoint is restored into, without building anything."""
  graphdef, params = nnx.split(nnx.eval_shape(lambda: build_model(config, vocab_size)), nnx.Param)
  abstract = {"params": params, "opt_state": jax.eval_shape(optimizer(config).init, params)}
  return graphdef, abstract, mesh_lib.logical_sharding(abstract, mesh)


def learning_rate(config, step: int) -> float:
  o = config.optim
  return float(_schedule(o.learning_rate, o.warmup_steps, config.steps)(step))


def loss_fn(graphdef, params, ids, flags, context_weight):
  """Next-token cross-entropy over real target tokens (padding is id 0 and never a target), with
  non-flagged tokens (context, questions) weighted `context_weight`; also the flagged tokens' mean."""
  mask = ids != PAD
  logits, _ = nnx.merge(graphdef, params)(ids, mask)
  ce = optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1].astype(jnp.float32), ids[:, 1:])
  real, flagged = mask[:, 1:], flags[:, 1:] & mask[:, 1:]
  weight = jnp.where(flagged, 1.0, context_weight * real)
  target_loss = jnp.sum(ce * flagged) / jnp.maximum(jnp.sum(flagged), 1)
  return jnp.sum(ce * weight) / jnp.maximum(jnp.sum(weight), 1e-6), target_loss


@functools.partial(jax.jit, static_argnames=("graphdef", "tx"), donate_argnames=("params", "opt_state"))
def train_step(graphdef, tx, params, opt_state, ids, flags, context_weight):
  """One AdamW step. Traced under `jax.set_mesh` of the training mesh, where the model's
  activation constraints act and the new state keeps the logical layout of the old."""
  (loss, target_loss), grads = jax.value_and_grad(functools.partial(loss_fn, graphdef), has_aux=True)(
      params, ids, flags, context_weight)
  # Gradients in the parameters' layout: with FSDP, XLA reduce-scatters them straight into shards.
  grads = mesh_lib.constrain_state(grads)
  updates, opt_state = tx.update(grads, opt_state, params)
  params = mesh_lib.constrain_state(optax.apply_updates(params, updates))
  return params, mesh_lib.constrain_state(opt_state), {
      "loss": loss, "target_loss": target_loss, "grad_norm": optax.tree.norm(grads)}


# ----------------------------------------------------------------------------- training
@dataclasses.dataclass
class Trained:
  model: Qwen3
  tokenizer: Tokenizer
  start_step: int   # where this call began: > 0 when it resumed from a checkpoint
  step: int         # where it ended (config.steps; earlier in the `result` of a `train.Stopped`)
  losses: list[float]


def validation_em(model, tokenizer, config, records) -> dict:
  return evaluation.exact_match(evaluation.evaluate(model, tokenizer, records, config.eval.batch_size,
                                                          config.eval.max_new_tokens))


def train(config, workdir, mesh=None) -> Trained:
  """Trains, or resumes training in, `workdir` on `mesh` (default: the training mesh of
  `config.mesh`); returns the model at the last step run."""
  workdir = Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  # ---- mesh
  mesh = mesh or mesh_lib.training_mesh(config.mesh)
  rows = mesh.shape["data"] * mesh.shape["fsdp"]
  if config.batch_size % rows:
    raise ConfigError("batch_size", f"must be a multiple of data x fsdp = {rows} on this mesh "
                      f"({dict(mesh.shape)}): batch rows are split over them, got {config.batch_size}")
  # ---- input
  tokenizer, stages = prepare(config, workdir)
  bounds = data_lib.stage_bounds(config)
  vocab = tokenizer.get_vocab_size()

  # ---- model and optimizer state: abstract shapes and their shardings by the rules
  tx = optimizer(config)
  graphdef, abstract, shardings = abstract_state(config, vocab, mesh)

  # ---- state: created directly in its shards, unless a checkpoint in the workdir is restored
  def fresh():
    params = nnx.state(init_model(config, vocab, mesh), nnx.Param)
    return {"params": params, "opt_state": jax.jit(tx.init, out_shardings=shardings["opt_state"])(params)}

  # ---- update step: the batch of step s is a function of (seed, stage, s)
  context_weight = jnp.float32(config.data.context_loss_weight)
  throughput = {"tokens": 0, "seconds": 0.0, "first": None}

  def step(state, s):
    stage = data_lib.stage_of(bounds, s)
    ids, flags = stages[stage]
    batch = data_lib.batch_rows(len(ids), config.batch_size, config.seed, stage, s - bounds[stage])
    t0 = time.perf_counter()
    params, opt_state, out = train_step(graphdef, tx, state["params"], state["opt_state"],
                                        *mesh_lib.shard_batch((ids[batch], flags[batch]), mesh), context_weight)
    loss = float(out["loss"])
    # Tokens per second counts real tokens only, and skips the steps that compile (a call's
    # first step and each stage's first).
    throughput["first"] = s if throughput["first"] is None else throughput["first"]
    if s != throughput["first"] and s != bounds[stage]:
      throughput["tokens"] += int(np.count_nonzero(ids[batch]))
      throughput["seconds"] += time.perf_counter() - t0
    rate = throughput["tokens"] / max(throughput["seconds"], 1e-9)
    return {"params": params, "opt_state": opt_state}, {
        "loss": loss, "stage": stage, "target_loss": float(out["target_loss"]), "grad_norm": float(out["grad_norm"]),
        "learning_rate": learning_rate(config, s), "tokens_per_s": round(rate, 1)}

  # ---- evaluation: exact match on validation questions
  records = (evaluation.eval_questions(config, "validation", config.eval.num_during)
             if config.eval.every and config.eval.num_during else [])

  def evaluate(state, done, window):
    return {"step": done, "eval": validation_em(nnx.merge(graphdef, state["params"]), tokenizer, config, records)}

  # ---- loop: resume, steps, evaluations, checkpoints, preemption (polled with the logs: a collective)
  loop = train_lib.Loop(step, config.steps, evaluate if records else None, eval_every=config.eval.every,
                        save_every=config.checkpoint_every, log_every=config.log_every, poll_every=config.log_every,
                        stop_after=config.stop_after, name="pretrain", shown=("loss", "stage", "tokens_per_s"),
                        diverged_hint="Lower optim.learning_rate or raise optim.warmup_steps.")
  try:
    result = train_lib.fit(loop, fresh, workdir, fingerprint(config),
                           target=checkpoint.abstract_like(abstract, shardings))
  except train_lib.Stopped as stop:
    stop.result = _trained(stop.result, graphdef, tokenizer)   # the model where it stopped
    raise
  return _trained(result, graphdef, tokenizer)


def _trained(result, graphdef, tokenizer) -> Trained:
  return Trained(nnx.merge(graphdef, result.state["params"]), tokenizer, result.start, result.step,
                 [s["loss"] for s in result.scalars])


# ----------------------------------------------------------------------------- export
def export(model: Qwen3, tokenizer: Tokenizer, config, folder) -> Path:
  """A Hugging Face folder: config.json, fp32 model.safetensors (torch's (out, in) layout, one
  tensor per layer), tokenizer.json. Every process must call it (the weights are gathered from
  all of them); process 0 writes."""
  folder = Path(folder)
  tensors = {name: value.astype(np.float32) for name, value in checkpoint_io.to_hf(model).items()}
  if jax.process_index() == 0:
    folder.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(hf_config(config, model.cfg.vocab_size), indent=1) + "\n")
    tokenizer.save(str(folder / "tokenizer.json"))
  return folder
