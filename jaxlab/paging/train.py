"""Training the pager on the frozen LM (issue 8, "Training and evaluation"; latent-pager.md,
"Training Dynamics").

Only the pager's parameters enter the optimizer (optax AdamW, linear warmup then cosine decay to
0.1x, global-norm clipping, as published); the LM's state is an argument under `stop_gradient`.
Batches hold `train.batch_size` questions (the published run used one), padded pages and padded
text with masks; rows are sharded over the mesh (data parallel), parameters replicated. The step
key is fold_in(seed, step), and the epoch order a function of (seed, epoch), so a resumed run
repeats the same steps.

After every epoch: the validation loss (teacher forced) and validation token-F1 (greedy answers
with the shared generation settings), then an Orbax checkpoint of the latest state (for resuming)
and, when validation F1 is the best so far, of the pager alone. The kept model is the best by
validation F1, never by validation loss (the published run's val loss fell until epoch 8 while
its F1 peaked at epoch 2). Restore order on resume: the fingerprint, then the epoch and history,
then params and optimizer state into the structure of a freshly built state.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import jax
import numpy as np
import optax
import orbax.checkpoint as ocp
from flax import nnx
from tqdm.auto import tqdm

from jaxlab.core import checkpoint, mesh as mesh_lib
from jaxlab.core.config import to_dict
from jaxlab.paging import metrics, pager as pager_lib


def optimizer(config, total_steps: int):
  """(AdamW with warmup and cosine decay to 0.1x, its schedule)."""
  t = config.train
  return _optimizer(t.learning_rate, t.warmup_steps, total_steps, t.weight_decay, t.clip_norm)


@functools.lru_cache(maxsize=None)
def _optimizer(lr, warmup, total, weight_decay, clip_norm):
  # Cached: the step takes the optimizer as a static argument, so an equal config must give the
  # same object, or every fit would compile again. `optax.flatten` runs the update on one raveled
  # vector: the same arithmetic (decay applies to every parameter, as PyTorch's AdamW), but one
  # fused update instead of one per parameter array, which cuts the step's compile time on CPU.
  schedule = optax.warmup_cosine_decay_schedule(0.0, lr, max(warmup, 1), max(total, warmup + 1), end_value=0.1 * lr)
  tx = optax.chain(optax.clip_by_global_norm(clip_norm), optax.adamw(schedule, weight_decay=weight_decay))
  return optax.flatten(tx), schedule


@functools.partial(jax.jit, static_argnames=("graphdef", "lm_graphdef", "tx"), donate_argnames=("params", "opt_state"))
def train_step(params, opt_state, lm_state, batch, key, *, graphdef, lm_graphdef, tx):
  loss, grads = jax.value_and_grad(pager_lib.loss_fn)(params, graphdef, lm_graphdef, lm_state, batch, key)
  updates, opt_state = tx.update(grads, opt_state, params)
  return optax.apply_updates(params, updates), opt_state, loss, optax.tree.norm(grads)


class Examples:
  """A split's questions as pager inputs: stored pooled states and (prompt, answer + EOS) ids."""

  def __init__(self, records, states, tokenizer, template: str, eos_id: int):
    self.records, self.states = records, states
    self.texts = [pager_lib.target_ids(tokenizer, template, r["question"], r["gold_answer"], eos_id)
                  for r in records]

  def batch(self, rows, max_pages: int, width: int, pad_id: int) -> dict:
    return pager_lib.make_batch([self.states[i] for i in rows], [self.texts[i] for i in rows],
                                max_pages, width, pad_id)


def epoch_rows(n: int, batch_size: int, seed: int, epoch: int) -> list[np.ndarray]:
  order = np.random.default_rng([seed, epoch]).permutation(n)
  return [order[i * batch_size:(i + 1) * batch_size] for i in range(n // batch_size)]


def validation_loss(params, graphdef, lm_graphdef, lm_state, val: Examples, batch_size, max_pages, width, pad_id, mesh):
  total, count = 0.0, 0.0
  n = len(val.records)
  for s in range(0, n, batch_size):
    rows = [(s + i) % n for i in range(batch_size)]
    real = np.arange(batch_size) < min(batch_size, n - s)
    batch = mesh_lib.shard_rows(val.batch(rows, max_pages, width, pad_id), mesh)
    sums, counts = jax.device_get(pager_lib.eval_ce(params, graphdef, lm_graphdef, lm_state, batch))
    total, count = total + float(np.sum(sums[real])), count + float(np.sum(counts[real]))
  return total / max(count, 1.0)


def _flat(tree) -> dict:
  return {str(i): np.asarray(x) for i, x in enumerate(jax.tree.leaves(jax.device_get(tree)))}


def _unflat(like, saved: dict, sharding):
  leaves = [np.asarray(saved[str(i)]) for i in range(len(saved))]
  return jax.device_put(jax.tree.unflatten(jax.tree.structure(like), leaves), sharding)


def _bytes(text: str) -> np.ndarray:
  return np.frombuffer(text.encode(), np.uint8).copy()


def fit(config, workdir: Path, lm, tokenizer, train: Examples, val: Examples, *, max_pages: int, width: int,
        q_width: int, settings, pad_id: int, mesh) -> tuple[object, dict, list[dict]]:
  """Trains (or resumes) the pager; returns its graphdef, the best-by-val-F1 params and the history."""
  t = config.train
  if t.batch_size % mesh.size:
    raise ValueError(f"train.batch_size={t.batch_size} must be a multiple of the {mesh.size} devices")
  per_epoch = len(train.records) // t.batch_size
  if per_epoch == 0:
    raise ValueError(f"{len(train.records)} training questions are fewer than train.batch_size={t.batch_size}")
  replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
  lm_graphdef, lm_state = nnx.split(lm)
  d_lm = lm.cfg.hidden_size
  graphdef, params = nnx.split(pager_lib.build(config, len(config.pages.hidden_layers), d_lm))
  params = jax.device_put(params, replicated)
  tx, schedule = optimizer(config, per_epoch * t.epochs)
  opt_state = jax.device_put(tx.init(params), replicated)
  key = checkpoint.fingerprint({k: to_dict(config)[k] for k in ("seed", "model", "data", "pages", "pager", "train",
                                                                 "prompts", "generation")})
  ckpt = Path(workdir).absolute() / "checkpoints"
  latest, best = checkpoint.manager(ckpt / "latest"), checkpoint.manager(ckpt / "best")
  history, start = [], 0
  if latest.latest_step() is not None:
    saved = latest.restore(latest.latest_step(), args=ocp.args.StandardRestore())
    if bytes(np.asarray(saved["key"])).decode() != key:
      raise RuntimeError(f"{workdir} holds checkpoints of another pager run; use a new --workdir")
    start = int(saved["epoch"])
    history = json.loads(bytes(np.asarray(saved["history"])).decode())
    params, opt_state = _unflat(params, saved["params"], replicated), _unflat(opt_state, saved["opt_state"], replicated)

  # Dropout keys use the "rbg" generator (XLA's RngBitGenerator): the same stream for a given seed,
  # and far less to compile than threefry, which inlines every draw into the step.
  root = jax.random.key(config.seed, impl="rbg")
  lead = jax.process_index() == 0
  for epoch in range(start, t.epochs):
    losses = []
    bar = tqdm(epoch_rows(len(train.records), t.batch_size, config.seed, epoch), desc=f"epoch {epoch + 1}/{t.epochs}",
               unit="step", disable=not lead, leave=False)
    for i, rows in enumerate(bar):
      step = epoch * per_epoch + i
      batch = mesh_lib.shard_rows(train.batch(rows, max_pages, width, pad_id), mesh)
      params, opt_state, loss, gnorm = train_step(params, opt_state, lm_state, batch, jax.random.fold_in(root, step),
                                                  graphdef=graphdef, lm_graphdef=lm_graphdef, tx=tx)
      loss = float(loss)
      if not (math.isfinite(loss) and math.isfinite(float(gnorm))):
        raise FloatingPointError(f"pager training diverged at step {step + 1}: loss={loss}, gradient norm={float(gnorm)}")
      losses.append(loss)
      bar.set_postfix(loss=f"{loss:.3f}")
    val_loss = validation_loss(params, graphdef, lm_graphdef, lm_state, val, t.batch_size, max_pages, width, pad_id, mesh)
    answers = pager_lib.answer(lm, tokenizer, graphdef, params, val.states, [r["question"] for r in val.records],
                               config.prompts.pager, max_pages=max_pages, width=q_width, settings=settings,
                               batch_size=config.eval.batch_size)
    val_f1 = float(np.mean([metrics.token_f1(a, r["gold_answer"]) for a, r in zip(answers, val.records)]))
    history.append({"epoch": epoch + 1, "train_loss": float(np.mean(losses)), "val_loss": val_loss, "val_f1": val_f1,
                    "lr": float(schedule((epoch + 1) * per_epoch - 1))})
    if lead:
      print(json.dumps(history[-1]))
    if val_f1 > max((h["val_f1"] for h in history[:-1]), default=-1.0):
      best.save(epoch + 1, args=ocp.args.StandardSave({"params": _flat(params)}))
      best.wait_until_finished()
    latest.save(epoch + 1, args=ocp.args.StandardSave({
        "key": _bytes(key), "epoch": np.int64(epoch + 1), "history": _bytes(json.dumps(history)),
        "params": _flat(params), "opt_state": _flat(opt_state)}))
    latest.wait_until_finished()
  saved = best.restore(best.latest_step(), args=ocp.args.StandardRestore())
  latest.close()
  best.close()
  return graphdef, _unflat(params, saved["params"], replicated), history
