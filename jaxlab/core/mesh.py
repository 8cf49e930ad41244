"""The runs axis on a `jax.sharding` Mesh: one device, many, or many hosts.

Every experiment puts its independent runs (cells x seeds, population members, environments,
batch rows) on the leading axis of a pytree and calls `map_runs(fn, runs)`. The leading axis is
padded to a multiple of the device count (with copies of row 0, so padding never feeds a
computation values it could not see), sharded over the mesh axis `runs`, computed with
`shard_map` so each device runs `fn` on its own block, gathered back to every host as NumPy and
unpadded. Because each row's randomness comes from its own key, the result does not depend on
how many devices or processes there are.
"""

from __future__ import annotations

import functools
from typing import Callable

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

AXIS = "runs"


def initialize_distributed(coordinator: str | None = None, num_processes: int | None = None,
                           process_id: int | None = None) -> None:
  """Joins this process to a multi-process JAX job (before any other JAX call).

  With no arguments JAX detects the cluster (TPU pods, SLURM, Open MPI, Kubernetes). On CPU the
  collectives go through gloo, which is what the two-process localhost test uses.
  """
  # Only CPU collectives read this flag; it must be set before the backend starts.
  jax.config.update("jax_cpu_collectives_implementation", "gloo")
  jax.distributed.initialize(coordinator_address=coordinator, num_processes=num_processes,
                             process_id=process_id)


def make_mesh() -> Mesh:
  """A 1-D mesh over every device of every process, axis name `runs`."""
  return jax.make_mesh((jax.device_count(),), (AXIS,))


def padded_size(n: int, mesh: Mesh) -> int:
  return -(-n // mesh.size) * mesh.size


def pad_rows(tree, size: int):
  """Pads every leaf's leading axis to `size` with copies of row 0."""
  def pad(x):
    x = np.asarray(x)
    extra = size - x.shape[0]
    return x if extra == 0 else np.concatenate([x, np.repeat(x[:1], extra, axis=0)])
  return jax.tree.map(pad, tree)


def shard_rows(tree, mesh: Mesh):
  """Host NumPy rows (identical on every process) -> global arrays sharded along `runs`."""
  sharding = NamedSharding(mesh, P(AXIS))
  def put(x):
    x = np.asarray(x)
    return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])
  return jax.tree.map(put, tree)


def gather_rows(tree):
  """Global arrays -> NumPy on every process."""
  if jax.process_count() == 1:
    return jax.tree.map(np.asarray, tree)
  return jax.tree.map(np.asarray, multihost_utils.process_allgather(tree, tiled=True))


@functools.lru_cache(maxsize=None)
def _compiled(fn: Callable, mesh: Mesh):
  # Rows are independent, so no collective is needed; check_vma=False lets per-row code start
  # scans from constants without marking them as varying over the mesh axis.
  return jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=P(AXIS), out_specs=P(AXIS), check_vma=False))


def map_runs(fn: Callable, runs, mesh: Mesh | None = None):
  """`fn` maps a batch of runs (leading axis) to outputs with the same leading axis.

  Returns NumPy outputs for exactly the rows given. `fn` must be a module-level or otherwise
  long-lived function: its compiled form is cached on (fn, mesh).
  """
  mesh = mesh or make_mesh()
  n = len(jax.tree.leaves(runs)[0])
  padded = pad_rows(runs, padded_size(n, mesh))
  out = _compiled(fn, mesh)(shard_rows(padded, mesh))
  return jax.tree.map(lambda x: x[:n], gather_rows(out))
