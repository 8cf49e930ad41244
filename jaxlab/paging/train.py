"""QA fine-tuning of the pager on the frozen LM (tens of thousands of generated questions;
latent-pager.md, "Training Dynamics"), on the shared training pieces of `jaxlab.core.train`.

Only the pager's parameters enter the optimizer (optax AdamW, linear warmup then cosine decay to
0.1x, global-norm clipping, as published); the LM's state is an argument under `stop_gradient`.
A row is one document's soft tokens and up to `train.questions_per_row` of its questions (the
published run used one question per step); rows are sharded over the mesh's batch axes (data x
fsdp), parameters by their logical axis names under the LM's rules (`Placement`). The step key is
fold_in(seed, step) and the epoch order a function of (seed, epoch), so a resumed run repeats the
same steps; the seed is `train.seed` (`spec.training_seed`: the run's `seed` unless set).

`train.steps` (when > 0) replaces `train.epochs` x the rows per epoch as the length of the run.
Every `train.eval_every` steps (0: at the end of each epoch): the validation loss (teacher
forced) and validation token-F1 (greedy answers with the shared generation settings; an
unanswerable question's gold answer is the abstain string), then one checkpoint holding the
params and optimizer state by name, with the history in its metadata. One manager keeps the
latest (for resuming) and the best by validation F1 (never validation loss: the published run's
val F1 peaked at epoch 2 while its val loss reached its minimum at epoch 3 and stayed within
0.01 of it to epoch 10). `train.keep` names the state the run answers with (`spec.KEEP`): that best
(the default, as published) or the last step's. It trains nothing, so it stays out of the
checkpoints' fingerprint: a finished run reads back under either rule. Restore order on resume:
the metadata (its fingerprint must match), then the state into the abstract target of a freshly
built one, then the loop's position.

`fine_tune` is that loop for any trainable part beside the frozen LM: the pager here, and the
text buffer's LoRA bridge (`text_bridge`), which reads the same rows (`question_rows`) in the
same order under the same `train.*` settings.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import jax
import numpy as np
import optax
from flax import nnx

from jaxlab.core import checkpoint, mesh as mesh_lib, train as train_lib
from jaxlab.core.config import to_dict
from jaxlab.paging import metrics, pager as pager_lib
from jaxlab.paging.spec import PagerSpec, TrainSpec


def optimizer(t: TrainSpec, total_steps: int):
  """(AdamW with warmup and cosine decay to 0.1x, its schedule)."""
  return adamw(t.learning_rate, t.warmup_steps, total_steps, t.weight_decay, t.clip_norm)


@functools.lru_cache(maxsize=None)
def adamw(lr, warmup, total, weight_decay, clip_norm):
  """(AdamW with warmup and cosine decay to 0.1x, its schedule) for every trainer of the pager."""
  # Cached: the step takes the optimizer as a static argument, so an equal config must give the
  # same object, or every fit would compile again. `optax.flatten` runs the update on one raveled
  # vector: the same arithmetic (decay applies to every parameter, as PyTorch's AdamW), but one
  # fused update instead of one per parameter array, which cuts the step's compile time on CPU.
  schedule = optax.warmup_cosine_decay_schedule(0.0, lr, max(warmup, 1), max(total, warmup + 1), end_value=0.1 * lr)
  tx = optax.chain(optax.clip_by_global_norm(clip_norm), optax.adamw(schedule, weight_decay=weight_decay))
  return optax.flatten(tx), schedule


@dataclasses.dataclass(frozen=True)
class Placement:
  """Where a trainable state lives on the training mesh: each parameter by its logical axis names
  under the LM's rules (`core.mesh.logical_sharding`), the optimizer state (one raveled vector,
  `optimizer`) replicated. Hashable, so a jitted step takes it as a static argument."""

  treedef: object
  leaves: tuple
  opt: jax.sharding.NamedSharding

  @classmethod
  def of(cls, params, mesh) -> Placement:
    leaves, treedef = jax.tree.flatten(mesh_lib.logical_sharding(params, mesh))
    return cls(treedef, tuple(map(_canonical, leaves)), jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec()))

  @property
  def params(self):
    return jax.tree.unflatten(self.treedef, self.leaves)

  def put(self, params, opt_state=None):
    """`params` (and `opt_state`) placed on the mesh."""
    params = jax.device_put(params, self.params)
    return params if opt_state is None else (params, jax.device_put(opt_state, self.opt))

  def keep(self, params, opt_state):
    """Inside a step: the new state where the old one was. Left to itself, XLA may return some of it
    laid out otherwise, and the next step, given differently placed arguments, compiles again."""
    return jax.lax.with_sharding_constraint(params, self.params), jax.lax.with_sharding_constraint(opt_state, self.opt)


def _canonical(sharding):
  """The sharding as a step's outputs carry it (no mesh axis of size 1, no trailing unsharded
  dimension): placed so, the second step's arguments match the first's and reuse its program."""
  sizes = dict(sharding.mesh.shape)
  spec = []
  for entry in sharding.spec:
    axes = [a for a in ((entry,) if isinstance(entry, str) else tuple(entry or ())) if sizes[a] > 1]
    spec.append(None if not axes else axes[0] if len(axes) == 1 else tuple(axes))
  while spec and spec[-1] is None:
    spec.pop()
  return jax.sharding.NamedSharding(sharding.mesh, jax.sharding.PartitionSpec(*spec))


@functools.partial(jax.jit, static_argnames=("graphdef", "lm_graphdef", "tx", "suff_weight", "placement", "loss_fn"),
                   donate_argnames=("params", "opt_state"))
def train_step(params, opt_state, lm_state, batch, key, *, graphdef, lm_graphdef, tx, suff_weight, placement=None,
               loss_fn=pager_lib.loss_fn):
  """One AdamW step on `loss_fn(params, graphdef, lm_graphdef, lm_state, batch, key, suff_weight)`
  (the pager's by default); the new state stays where `placement` put the old one."""
  loss, grads = jax.value_and_grad(loss_fn)(params, graphdef, lm_graphdef, lm_state, batch, key, suff_weight)
  updates, opt_state = tx.update(grads, opt_state, params)
  params = optax.apply_updates(params, updates)
  if placement is not None:
    params, opt_state = placement.keep(params, opt_state)
  return params, opt_state, loss, optax.tree.norm(grads)


def question_rows(records, per_row: int) -> list[list[dict]]:
  """The training rows: questions grouped by document (in order of first appearance), `per_row`
  per row. Every system trained on QA (the pager, the text buffer's bridge) reads these rows."""
  groups: dict[str, list[dict]] = {}
  for r in records:
    groups.setdefault(r["document"], []).append(r)
  return [g[i:i + per_row] for g in groups.values() for i in range(0, len(g), per_row)]


@dataclasses.dataclass
class Split:
  """A split as pager rows: the documents' inputs, and per row its document and questions as
  (prompt ids, answer ids + EOS, answerable); `records[i]` is row i's first question."""

  docs: pager_lib.Documents
  texts: list[list[tuple[list[int], list[int], bool]]]
  records: list[dict]

  @classmethod
  def of(cls, records, docs_for, tokenizer, template: str, eos_id: int, per_row: int, abstain: str):
    """Questions grouped by document, `per_row` per row (`question_rows`)."""
    rows = question_rows(records, per_row)
    texts = [[(*pager_lib.target_ids(tokenizer, template, r["question"], r["gold_answer"], eos_id),
               bool(r.get("answerable", True))) for r in row] for row in rows]
    return cls(docs_for([row[0]["document"] for row in rows]), texts, [row[0] for row in rows])

  def batch(self, rows, max_pages: int, width: int, pad_id: int, per_row: int) -> dict:
    return pager_lib.make_batch(self.docs.batch(rows, max_pages), [self.texts[i] for i in rows], width, pad_id,
                                per_row)

  def width(self, per_row: int) -> int:
    """The longest row, rounded up to a multiple of 8."""
    n = max(sum(len(p) + len(a) for p, a, _ in t[:per_row]) for t in self.texts)
    return -(-n // 8) * 8


def epoch_rows(n: int, batch_size: int, seed: int, epoch: int) -> list[np.ndarray]:
  order = np.random.default_rng([seed, epoch]).permutation(n)
  return [order[i * batch_size:(i + 1) * batch_size] for i in range(n // batch_size)]


def validation_loss(ce, batch_of, n: int, batch_size: int, mesh) -> float:
  """Mean cross-entropy per target token over n rows: `batch_of(rows)` -> a host batch, `ce(batch)`
  -> per-row (sums, counts); batches of one shape, a short last one repeating earlier rows (not
  counted)."""
  total, count = 0.0, 0.0
  for s in range(0, n, batch_size):
    rows = [(s + i) % n for i in range(batch_size)]
    real = np.arange(batch_size) < min(batch_size, n - s)
    sums, counts = jax.device_get(ce(mesh_lib.shard_batch(batch_of(rows), mesh)))
    total, count = total + float(np.sum(sums[real])), count + float(np.sum(counts[real]))
  return total / max(count, 1.0)


def validation_f1(lm, tokenizer, graphdef, params, val: Split, config, *, max_pages, q_width, settings, abstain):
  answers, _ = pager_lib.answer(lm, tokenizer, graphdef, params, val.docs, list(range(len(val.records))),
                                [r["question"] for r in val.records], config.prompts.pager, max_pages=max_pages,
                                width=q_width, settings=settings, batch_size=config.eval.batch_size, abstain=abstain)
  return mean_f1(answers, val.records)


def mean_f1(answers, records) -> float:
  return float(np.mean([metrics.token_f1(a, r["gold_answer"]) for a, r in zip(answers, records)]))


# `expansion`, where a config has it: what the `paged` and `hybrid` readers' pagers read.
FINGERPRINT_FIELDS = ("seed", "model", "data", "pages", "pager", "sufficiency", "train", "prompts", "generation",
                      "expansion")


def fingerprint(config, fields) -> str:
  """The hash a run's checkpoints are kept under: the config's sections that fix what it trains
  (`train.keep` left out: it chooses among the checkpoints)."""
  parts = {k: to_dict(config)[k] for k in fields if k in config}
  if "train" in parts:
    parts["train"] = {k: v for k, v in parts["train"].items() if k != "keep"}
  return checkpoint.fingerprint(parts)


def fit(config, workdir: Path, lm, tokenizer, train: Split, val: Split, *, max_pages: int, q_width: int, settings,
        pad_id: int, mesh, abstain=None, init_params=None,
        restore_only: bool = False) -> tuple[object, object, list[dict]]:
  """Trains (or resumes) the pager on the core loop; returns its graphdef, the kept params
  (`train.keep`) and the history. `init_params`: a pretrained encoder's parameters to start from (see
  `pretrain`). `restore_only`: read a finished run back without training (`core.train.Unfinished`
  when it has not finished)."""
  t = TrainSpec.of(config)
  per_row = t.questions_per_row
  check_rows(t, len(train.texts), mesh)
  width = max(train.width(per_row), val.width(1))
  lm_graphdef, lm_state = nnx.split(lm)
  graphdef, params = nnx.split(pager_lib.build(PagerSpec.of(config), lm))
  if init_params is not None:
    params = load_into(params, init_params)

  def val_loss(params):
    return validation_loss(lambda b: pager_lib.eval_ce(params, graphdef, lm_graphdef, lm_state, b),
                           lambda rows: val.batch(rows, max_pages, width, pad_id, 1), len(val.texts), t.batch_size,
                           mesh)

  def val_f1(params):
    return validation_f1(lm, tokenizer, graphdef, params, val, config, max_pages=max_pages, q_width=q_width,
                         settings=settings, abstain=abstain)

  best, history = fine_tune(
      t, workdir, lm, graphdef, params, rows=len(train.texts),
      batch_of=lambda rows: train.batch(rows, max_pages, width, pad_id, per_row), loss_fn=pager_lib.loss_fn,
      suff_weight=float(config.sufficiency.loss_weight) if config.sufficiency.enabled else 0.0,
      val_loss=val_loss, val_f1=val_f1, mesh=mesh, fingerprint=fingerprint(config, FINGERPRINT_FIELDS),
      # the pretrained encoder as it ships: kept if fine-tuning never beats it on validation
      eval_at_start=init_params is not None, name="pager", restore_only=restore_only)
  return graphdef, best, history


def check_rows(t: TrainSpec, rows: int, mesh) -> int:
  """Steps per epoch of `rows` training rows, after checking the batch fits the devices and the rows."""
  if t.batch_size % mesh.size:
    raise ValueError(f"train.batch_size={t.batch_size} must be a multiple of the {mesh.size} devices")
  if rows < t.batch_size:
    raise ValueError(f"{rows} training rows are fewer than train.batch_size={t.batch_size}")
  return rows // t.batch_size


def fine_tune(t: TrainSpec, workdir: Path, lm, graphdef, params, *, rows: int, batch_of, loss_fn, val_loss, val_f1,
              mesh, fingerprint: str, suff_weight: float = 0.0, eval_at_start: bool = False, name: str = "train",
              restore_only: bool = False) -> tuple[object, list[dict]]:
  """The QA fine-tuning every trained system shares (the pager, the text buffer's bridge), on the
  core loop: `t` (`train.*`: steps or epochs, batch size, AdamW schedule, clipping, seed), the epoch
  order, the step key, an evaluation every `train.eval_every` steps (or epoch) recording the
  validation loss and F1, and the best by validation F1. `params` (of `graphdef`) are the
  trainable state; `lm` the frozen LM, an argument under `stop_gradient`; `batch_of(rows)` the
  host batch of training rows (indices below `rows`); `loss_fn` as `train_step` takes it;
  `val_loss(params)`, `val_f1(params)` floats. Returns the kept params (`t.keep`) and the history."""
  per_epoch = check_rows(t, rows, mesh)
  total = t.steps or per_epoch * t.epochs
  lm_graphdef, lm_state = nnx.split(lm)
  placement = Placement.of(params, mesh)
  tx, schedule = optimizer(t, total)
  params, opt_state = placement.put(params, tx.init(params))
  state = {"params": params, "opt_state": opt_state}
  # Dropout keys use the "rbg" generator (XLA's RngBitGenerator): the same stream for a given seed,
  # and far less to compile than threefry, which inlines every draw into the step.
  root = jax.random.key(t.seed, impl="rbg")

  def step(state, s):
    epoch, i = divmod(s, per_epoch)
    batch = mesh_lib.shard_batch(batch_of(epoch_rows(rows, t.batch_size, t.seed, epoch)[i]), mesh)
    params, opt_state, loss, gnorm = train_step(state["params"], state["opt_state"], lm_state, batch,
                                                jax.random.fold_in(root, s), graphdef=graphdef,
                                                lm_graphdef=lm_graphdef, tx=tx, suff_weight=suff_weight,
                                                placement=placement, loss_fn=loss_fn)
    return {"params": params, "opt_state": opt_state}, {"loss": loss, "grad_norm": gnorm}

  def evaluate(state, done, window):
    params = state["params"]
    loss = val_loss(params)   # before F1, as the records have always been made
    return {"step": done, "epoch": done / per_epoch if t.eval_every else done // per_epoch,
            "train_loss": float(np.mean([w["loss"] for w in window])) if window else None,
            "val_loss": loss, "val_f1": val_f1(params), "lr": float(schedule(max(done - 1, 0))),
            "questions": done * t.batch_size * t.questions_per_row}

  loop = train_lib.Loop(step, total, evaluate, eval_every=t.eval_every or per_epoch, eval_at_start=eval_at_start,
                        best=lambda record: selection(record["val_f1"], record["step"]), name=name)
  result = train_lib.fit(loop, state, workdir, fingerprint, restore_only=restore_only)
  return (result.state if t.keep == "last" else result.best)["params"], result.history


def selection(val_f1: float, step: int) -> float:
  """The score the best checkpoint is kept by: validation F1, ties broken toward the earlier step
  (Orbax's best policy keeps the later one). The offset is far below any difference of two F1
  means over a validation set."""
  return val_f1 - 1e-12 * step


def load_into(params, pretrained: dict):
  """`params` with every leaf that a pretrained state holds (by path) replaced by its value."""
  flat = dict(nnx.to_flat_state(params))
  for path, value in pretrained.items():
    if path not in flat:
      raise ValueError(f"the pretrained encoder has {'/'.join(map(str, path))}, which this pager does not")
    shape = tuple(flat[path].shape)
    if tuple(np.shape(value)) != shape and not (shape == () and np.size(value) == 1):  # safetensors has no 0-d
      raise ValueError(f"{'/'.join(map(str, path))}: pretrained shape {np.shape(value)} != {shape}")
    flat[path] = flat[path].replace(np.asarray(value, flat[path].dtype).reshape(shape))
  return nnx.from_flat_state(flat)
