"""Pretraining a small Qwen3-architecture base model from scratch.

The rows (prompt formats, word-level tokenizer, curriculum stages) are built by
`jaxlab.lm.pretrain_data`; exact match and the report live in `jaxlab.lm.pretrain_eval`; the
checkpoints, metrics, NaN stop and preemption flag are the shared ones of `jaxlab.core.train`.

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
from tqdm.auto import tqdm

from jaxlab.core import mesh as mesh_lib, report as report_lib, train as train_lib
from jaxlab.core.config import ConfigError, require, require_int, to_dict
from jaxlab.data import long_doc_qa
from jaxlab.lm import checkpoint_io, pretrain_data as data_lib, pretrain_eval, qwen3
from jaxlab.lm.pretrain_data import EOS, PAD
from jaxlab.lm.pretrain_eval import report
from jaxlab.lm.qwen3 import Qwen3, Qwen3Config


# ----------------------------------------------------------------------------- config
def _stage_ok(stage) -> bool:
  share, seq_len, lo, hi = stage
  return share > 0 and int(seq_len) == seq_len >= 16 and int(lo) == lo and int(hi) == hi and 8 <= lo <= hi


def validate(config) -> None:
  require_int(config, "seed", 0)
  require_int(config, "steps", 1)
  require_int(config, "batch_size", 1)
  require_int(config, "checkpoint_every", 1)
  require_int(config, "log_every", 1)
  require_int(config, "stop_after", 0, "0: no limit")
  require(config, "optim.learning_rate", lambda v: v > 0, "a positive number")
  require_int(config, "optim.warmup_steps", 0)
  require(config, "optim.weight_decay", lambda v: v >= 0, "a number >= 0")
  require(config, "optim.clip_norm", lambda v: v > 0, "a positive number")
  require(config, "optim.init_std", lambda v: v > 0, "a positive number")
  require(config, "optim.qk_norm_init", lambda v: v > 0, "a positive number")
  require_int(config, "data.num_train", 1)
  require(config, "data.stages", lambda v: len(v) > 0 and all(len(s) == 4 and _stage_ok(s) for s in v),
          "a non-empty list of (share > 0, seq_len >= 16, fewest words >= 8, most words >= fewest)")
  require_int(config, "data.questions_per_window", 1)
  require(config, "data.context_loss_weight", lambda v: 0 <= v <= 1, "in [0, 1]")
  require(config, "data.distractor_ratio", lambda v: 0 <= v <= 1, "in [0, 1]")
  require(config, "data.kinds", lambda v: len(v) > 0 and set(v) <= set(long_doc_qa.KINDS),
          f"a non-empty list of kinds from {long_doc_qa.KINDS} (repeat one to weight it)")
  for field in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "head_dim"):
    require_int(config, f"model.{field}", 1)
  require(config, "model.num_attention_heads",
          lambda v: v % config.model.num_key_value_heads == 0, "a multiple of model.num_key_value_heads")
  require(config, "model.remat", lambda v: v in qwen3.REMAT_POLICIES, f"one of {sorted(qwen3.REMAT_POLICIES)}")
  require(config, "mesh", lambda v: set(v) == set(mesh_lib.TRAINING_AXES) and all(
      int(x) == x and (x >= 1 or x == -1) for x in v.values()) and list(v.values()).count(-1) <= 1,
          "a block {data, fsdp, tensor} of sizes >= 1, at most one of them -1 (the devices left)")
  require_int(config, "eval.window_tokens", 8)
  require_int(config, "eval.num_questions", 0)
  require_int(config, "eval.num_during", 0)
  require_int(config, "eval.every", 0, "0: no evaluation during training")
  require_int(config, "eval.batch_size", 1)
  require_int(config, "eval.max_new_tokens", 1)


def fingerprint(config) -> str:
  """What fixes the trained weights; the mesh, stop_after, logging and evaluation settings do not
  (a run may resume on another mesh)."""
  c = to_dict(config)
  return train_lib.fingerprint({k: c[k] for k in ("seed", "steps", "batch_size", "optim", "data", "model")})


# ----------------------------------------------------------------------------- data
def prepare(config, workdir: Path) -> tuple[Tokenizer, list[tuple[np.ndarray, np.ndarray]]]:
  """Tokenizer and the encoded rows of each stage, cached in the workdir so a resume skips generation."""
  key = train_lib.fingerprint({"seed": config.seed, "data": to_dict(config.data)})
  tok_path, data_path = workdir / "tokenizer.json", workdir / "corpus.npz"
  n = len(config.data.stages)
  if tok_path.is_file() and data_path.is_file():
    cached = np.load(data_path)
    if str(cached["key"]) == key:
      return Tokenizer.from_file(str(tok_path)), [(cached[f"ids{k}"], cached[f"flags{k}"]) for k in range(n)]
  total = sum(s[0] for s in config.data.stages)
  examples = [data_lib.stage_examples(config, k, "train", max(1, round(config.data.num_train * s[0] / total)))
              for k, s in enumerate(config.data.stages)]
  tokenizer = data_lib.train_tokenizer(
      t for stage in examples for ex in stage for g in data_lib.segments(ex) for t, _ in g)
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
  step: int         # where it ended (config.steps, or earlier with stop_after or SIGTERM)
  losses: list[float]


def validation_em(model, tokenizer, config, records) -> dict:
  return pretrain_eval.exact_match(pretrain_eval.evaluate(model, tokenizer, records, config.eval.batch_size,
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

  # ---- checkpoint: resume, or create the state directly in its shards
  ckpt = train_lib.Checkpoints(workdir / "checkpoints", fingerprint(config))
  if ckpt.latest_step() is not None:
    state, meta = ckpt.restore(train_lib.abstract_like(abstract, shardings))
    params, opt_state, start = state["params"], state["opt_state"], int(meta["step"])
  else:
    params = nnx.state(init_model(config, vocab, mesh), nnx.Param)
    opt_state = jax.jit(tx.init, out_shardings=shardings["opt_state"])(params)
    start = 0

  # ---- loop
  end = config.steps if not config.stop_after else min(config.steps, start + config.stop_after)
  lead = jax.process_index() == 0
  records = (pretrain_eval.eval_questions(config, "validation", config.eval.num_during)
             if config.eval.every and config.eval.num_during else [])
  metrics = train_lib.Metrics(workdir, "train_log")
  bar = tqdm(total=config.steps, initial=start, desc="pretrain", unit="step", disable=not lead)
  context_weight = jnp.float32(config.data.context_loss_weight)
  losses, tokens, seconds, t_start = [], 0, 0.0, time.perf_counter()
  step = start
  with train_lib.Preemption() as preemption, jax.set_mesh(mesh):
    for step in range(start, end):
      stage = data_lib.stage_of(bounds, step)
      ids, flags = stages[stage]
      batch = data_lib.batch_rows(len(ids), config.batch_size, config.seed, stage, step - bounds[stage])
      t0 = time.perf_counter()
      params, opt_state, out = train_step(graphdef, tx, params, opt_state,
                                          *mesh_lib.shard_batch((ids[batch], flags[batch]), mesh), context_weight)
      loss, grad_norm = float(out["loss"]), float(out["grad_norm"])
      train_lib.check_finite(step + 1, f"Nothing after step {ckpt.latest_step() or 0} was saved. Lower "
                             "optim.learning_rate or raise optim.warmup_steps.", loss=loss, grad_norm=grad_norm)
      losses.append(loss)
      # Tokens per second counts real tokens only, and skips the steps that compile (a call's
      # first step and each stage's first).
      if step != start and step != bounds[stage]:
        tokens, seconds = tokens + int(np.count_nonzero(ids[batch])), seconds + time.perf_counter() - t0
      rate = tokens / max(seconds, 1e-9)
      bar.update(1)
      bar.set_postfix(loss=f"{loss:.3f}", stage=stage, tok_s=f"{rate:,.0f}")
      done = step + 1
      if done % config.log_every == 0 or done == end:
        metrics.write(done, stage=stage, loss=loss, target_loss=float(out["target_loss"]), grad_norm=grad_norm,
                      learning_rate=learning_rate(config, step), tokens_per_s=round(rate, 1),
                      elapsed_s=round(time.perf_counter() - t_start, 1))
      if records and (done % config.eval.every == 0 or done == config.steps):
        em = validation_em(nnx.merge(graphdef, params), tokenizer, config, records)
        bar.write(f"step {done}: validation exact match " + ", ".join(
            f"{t} {v['mean']:.2f} (n={v['n']})" for t, v in em.items() if v["n"]))
        metrics.write(done, eval=em, elapsed_s=round(time.perf_counter() - t_start, 1))
      # Every process polls the preemption flag at the same steps (it is a collective).
      stop = done % config.log_every == 0 and preemption.should_stop()
      if done % config.checkpoint_every == 0 or done == end or stop:
        ckpt.save(done, {"params": params, "opt_state": opt_state}, metrics={"loss": loss})
      if stop:
        end = done
        break
  bar.close()
  metrics.close()
  ckpt.close()
  return Trained(nnx.merge(graphdef, params), tokenizer, start, max(end, start), losses)


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


# ----------------------------------------------------------------------------- experiment
def run(config, workdir) -> Path:
  workdir = Path(workdir)
  trained = train(config, workdir)
  if trained.step < config.steps:
    print(f"stopped at step {trained.step} of {config.steps} (stop_after or SIGTERM); run again to resume")
    return workdir
  export(trained.model, trained.tokenizer, config, workdir / "hf")
  for split in ("validation", "test"):
    results = pretrain_eval.evaluate(trained.model, trained.tokenizer,
                                     pretrain_eval.eval_questions(config, split, config.eval.num_questions),
                                     config.eval.batch_size, config.eval.max_new_tokens)
    if jax.process_index() == 0:
      report_lib.write_json(workdir / f"eval_{split}.json", results)
  return report(workdir) if jax.process_index() == 0 else workdir / "report.md"
