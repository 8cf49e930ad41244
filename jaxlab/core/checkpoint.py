"""Orbax checkpoints of named state: the one place the codebase saves and restores arrays.

`Checkpoints(directory, fingerprint, best=...)` is one Orbax `CheckpointManager` whose steps hold
two items: `state`, any pytree of arrays saved under its own names (an `nnx.State` of parameters,
an optax state, a dict of both, a sweep's results so far), and `meta`, JSON (the fingerprint of
what fixes the run, the step, the metrics, anything a loop needs to resume, such as a history).
It keeps the latest step for resuming and, when `best` names a metric, the best step by that
metric too (Orbax's `best_fn` and a preservation policy; no second manager). `restore(target)`
reads into `target`'s structure, dtypes and shardings: pass the abstract state of a freshly built
model (`jax.ShapeDtypeStruct`s carrying `NamedSharding`s, e.g. from `abstract_like`), and every
device reads only its own slice, with no host round trip, onto whatever mesh the target names
(saved on 8 devices as fsdp=8, restored as data=2 x fsdp=4 or on one device).

Restore order, everywhere: the metadata first (its fingerprint must match: a workdir holds one
run, never a silent mix; `fingerprint` hashes what fixes a run), then the state into the abstract
target, then the caller's position from the metadata.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp
from orbax.checkpoint import checkpoint_managers
from orbax.checkpoint._src.metadata import array_metadata_store  # the default handler's store; no public name
from orbax.checkpoint._src.serialization import type_handler_registry  # its `add` can skip the override warning

# On CPU and TPU Orbax writes a replicated array in slices, one per replica, each cut by a slice
# program compiled for its own offsets (hundreds of programs for a small state on 8 devices); an
# array whose slices would be smaller than this is written whole by one replica. The values saved
# are the same either way, and a restore reads either layout.
REPLICA_SLICE_MIN_BYTES = 4 << 20
type_handler_registry.GLOBAL_TYPE_HANDLER_REGISTRY.add(jax.Array, ocp.type_handlers.ArrayHandler(
    array_metadata_store=array_metadata_store.Store(), min_slice_bytes_for_replica_parallel=REPLICA_SLICE_MIN_BYTES),
    override=True, ignore_warnings=True)   # the override is meant: no warning on every import


def fingerprint(*parts) -> str:
  """A stable hash of JSON-able parts and NumPy arrays (the config and the runs table)."""
  h = hashlib.sha256()
  for part in parts:
    for leaf in jax.tree.leaves(part):
      if isinstance(leaf, np.ndarray):
        h.update(str((leaf.dtype, leaf.shape)).encode())
        h.update(np.ascontiguousarray(leaf).tobytes())
      else:
        h.update(json.dumps(leaf, sort_keys=True, default=str).encode())
  return h.hexdigest()[:16]


class CheckpointMismatch(RuntimeError):
  """The workdir holds checkpoints of another run (a different fingerprint)."""


def jsonable(x):
  """JSON-able values: NumPy and JAX scalars as numbers, non-finite floats as strings."""
  if isinstance(x, dict):
    return {str(k): jsonable(v) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [jsonable(v) for v in x]
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
    record = jsonable({"fingerprint": self.fingerprint, "step": int(step), "metrics": metrics or {}, **meta})
    self.mgr.save(int(step), args=ocp.args.Composite(state=ocp.args.StandardSave(state),
                                                     meta=ocp.args.JsonSave(record)),
                  metrics=None if metrics is None else jsonable(metrics), force=True)
    self.mgr.wait_until_finished()

  def close(self) -> None:
    self.mgr.close()

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.close()
