"""What every training loop shares: named Orbax checkpoints, metrics, the NaN stop, preemption.

Used by base-model pretraining, the pager and the developmental learner; each keeps its own step
function and data, and calls these pieces in the big_vision order (mesh, model, shard, update
step, checkpoint, evals, loop).

**Checkpoints.** `Checkpoints(directory, fingerprint, best=...)` is one Orbax `CheckpointManager`
whose steps hold two items: `state`, any pytree of arrays saved under its own names (an
`nnx.State` of parameters, an optax state, a dict of both), and `meta`, JSON (the fingerprint of
what fixes the run, the step, the metrics, anything the loop needs to resume, such as a history).
It keeps the latest step for resuming and, when `best` names a metric, the best step by that
metric too (Orbax's `best_fn` and a preservation policy; no second manager). `restore(target)`
reads into `target`'s structure, dtypes and shardings: pass the abstract state of a freshly built
model (`jax.ShapeDtypeStruct`s carrying `NamedSharding`s, e.g. from `abstract_like`), and every
device reads only its own slice, with no host round trip, onto whatever mesh the target names
(saved on 8 devices as fsdp=8, restored as data=2 x fsdp=4 or on one device).

Restore order, in every loop: the metadata first (its fingerprint must match: a workdir holds one
run, never a silent mix), then the state into the abstract target, then the loop's position from
the metadata.

**Metrics.** `Metrics(workdir, name)` writes scalars as JSON lines (`workdir/name.jsonl`) and as
TensorBoard event files (`workdir/tb/`, tensorboardX: no TensorFlow), from process 0 only, so
`tensorboard --logdir WORKDIR` shows loss, learning rate, throughput and evaluations.

**Stops.** `check_finite` raises `FloatingPointError` naming the step and the values when loss or
gradient norm is not finite (before anything is saved). `Preemption` turns SIGTERM (what SLURM
and cloud schedulers send before a kill) into a flag the loop polls: it saves and returns, and the
same command resumes.
"""

from __future__ import annotations

import json
import math
import signal
import threading
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp
from orbax.checkpoint import checkpoint_managers

from jaxlab.core.checkpoint import fingerprint  # noqa: F401  (re-exported: loops fingerprint their config)


class CheckpointMismatch(RuntimeError):
  """The workdir holds checkpoints of another run (a different fingerprint)."""


def _jsonable(x):
  if isinstance(x, dict):
    return {str(k): _jsonable(v) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [_jsonable(v) for v in x]
  if isinstance(x, (np.generic, jax.Array)) and np.ndim(x) == 0:
    x = np.asarray(x).item()
  if isinstance(x, float) and not math.isfinite(x):
    return str(x)
  return x


def abstract_like(tree, shardings=None):
  """`jax.ShapeDtypeStruct`s of a pytree of arrays, the target `Checkpoints.restore` reads into.

  `shardings`: None keeps each array's own sharding; one `Sharding` applies to all; or a pytree
  with the tree's structure down to its leaves or to its NNX variables (what
  `mesh.logical_sharding` returns).
  """
  def leaf(x, sharding):
    return jax.ShapeDtypeStruct(np.shape(x), x.dtype, sharding=sharding)

  if shardings is None:
    return jax.tree.map(lambda x: leaf(x, getattr(x, "sharding", None)), tree)
  if isinstance(shardings, jax.sharding.Sharding):
    return jax.tree.map(lambda x: leaf(x, shardings), tree)
  return jax.tree.map(lambda s, sub: jax.tree.map(lambda x: leaf(x, s), sub), shardings, tree,
                      is_leaf=lambda x: isinstance(x, jax.sharding.Sharding))


class Checkpoints:
  """Named training state + JSON metadata in one Orbax manager: the latest step, and the best.

  `best`: a metric name in the `metrics` given to `save`; `mode` "max" or "min". `keep`: how many
  latest steps to keep besides the best.
  """

  def __init__(self, directory, fingerprint: str, *, best: str | None = None, mode: str = "max", keep: int = 1):
    if mode not in ("max", "min"):
      raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
    self.directory, self.fingerprint, self.best = Path(directory).absolute(), fingerprint, best
    policies = [checkpoint_managers.LatestN(keep)]
    best_fn = None
    if best is not None:
      best_fn = lambda metrics: float(metrics[best])
      policies.append(checkpoint_managers.BestN(get_metric_fn=best_fn, reverse=mode == "min", n=1))
    options = ocp.CheckpointManagerOptions(
        create=True, best_fn=best_fn, best_mode=mode,
        preservation_policy=checkpoint_managers.AnyPreservationPolicy(policies))
    self.mgr = ocp.CheckpointManager(self.directory, options=options, item_names=("state", "meta"))

  def latest_step(self) -> int | None:
    return self.mgr.latest_step()

  def best_step(self) -> int | None:
    """The step with the best metric (ties: the later step); None before any save."""
    return self.mgr.best_step() if self.best is not None else self.mgr.latest_step()

  def meta(self, step: int | None = None) -> dict | None:
    """The JSON metadata of `step` (default: the latest), checked against this run's fingerprint."""
    step = self.latest_step() if step is None else step
    if step is None:
      return None
    meta = self.mgr.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))["meta"]
    if meta.get("fingerprint") != self.fingerprint:
      raise CheckpointMismatch(
          f"{self.directory} holds checkpoints of another run (fingerprint {meta.get('fingerprint')} != "
          f"{self.fingerprint}): use a new --workdir, or delete that folder to start over")
    return meta

  def restore(self, target, step: int | None = None) -> tuple[Any, dict]:
    """(state, metadata) of `step` (default: the latest), read into `target`'s structure and
    shardings (see `abstract_like`); the fingerprint is checked first."""
    step = self.latest_step() if step is None else step
    if step is None:
      raise FileNotFoundError(f"{self.directory}: no checkpoint to restore")
    meta = self.meta(step)
    state = self.mgr.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore(target)))["state"]
    return state, meta

  def save(self, step: int, state, *, metrics: dict | None = None, **meta) -> None:
    """Saves `state` and {"fingerprint", "step", "metrics", **meta} as step `step`, and waits."""
    record = _jsonable({"fingerprint": self.fingerprint, "step": int(step), "metrics": metrics or {}, **meta})
    self.mgr.save(int(step), args=ocp.args.Composite(state=ocp.args.StandardSave(state),
                                                     meta=ocp.args.JsonSave(record)),
                  metrics=None if metrics is None else _jsonable(metrics), force=True)
    self.mgr.wait_until_finished()

  def close(self) -> None:
    self.mgr.close()

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.close()


def _flatten(scalars: dict, prefix: str = "") -> dict:
  out = {}
  for k, v in scalars.items():
    if isinstance(v, dict):
      out.update(_flatten(v, f"{prefix}{k}/"))
    elif isinstance(v, (int, float, np.generic, jax.Array)) and not isinstance(v, bool) and np.ndim(v) == 0:
      out[f"{prefix}{k}"] = float(v)
  return out


class Metrics:
  """Scalars as JSON lines (`workdir/name.jsonl`) and TensorBoard events (`workdir/tb/`), process 0.

  `write(step, **values)` takes numbers and nested dicts of numbers (written to TensorBoard as
  `outer/inner`); other values (strings, lists) go to the JSON line only.
  """

  def __init__(self, workdir, name: str = "train_log"):
    self.lead = jax.process_index() == 0
    self.log = self.tb = None
    if self.lead:
      workdir = Path(workdir)
      workdir.mkdir(parents=True, exist_ok=True)
      self.log = (workdir / f"{name}.jsonl").open("a")
      from tensorboardX import SummaryWriter  # imported here: only process 0 writes events

      self.tb = SummaryWriter(str(workdir / "tb"), flush_secs=30)

  def write(self, step: int, **values) -> None:
    if not self.lead:
      return
    self.log.write(json.dumps(_jsonable({"step": int(step), **values})) + "\n")
    self.log.flush()
    for tag, value in _flatten(values).items():
      self.tb.add_scalar(tag, value, int(step))

  def close(self) -> None:
    if self.lead:
      self.log.close()
      self.tb.close()

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.close()


def check_finite(step: int, hint: str = "", **values) -> None:
  """Raises FloatingPointError naming the step and every value when one is NaN or infinite."""
  values = {k: float(v) for k, v in values.items()}
  if all(math.isfinite(v) for v in values.values()):
    return
  shown = ", ".join(f"{k}={v}" for k, v in values.items())
  raise FloatingPointError(f"training diverged at step {step}: {shown}; nothing from this step was saved."
                           f"{' ' + hint if hint else ''}")


class Preemption:
  """A context in which SIGTERM sets `.requested` instead of killing the process, so a loop can
  save and return; outside the main thread (where signals cannot be caught) it never fires."""

  def __init__(self):
    self.requested = False
    self._old = None

  def _handle(self, signum, frame):
    self.requested = True

  def __enter__(self):
    if threading.current_thread() is threading.main_thread():
      self._old = signal.signal(signal.SIGTERM, self._handle)
    return self

  def should_stop(self) -> bool:
    """Whether any process was asked to stop (every process must call it at the same steps)."""
    if jax.process_count() == 1:
      return self.requested
    from jax.experimental import multihost_utils

    return bool(np.any(multihost_utils.process_allgather(np.array(self.requested))))

  def __exit__(self, *exc):
    if self._old is not None:
      signal.signal(signal.SIGTERM, self._old)
