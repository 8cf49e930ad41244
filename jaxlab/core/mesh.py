"""The runs axis on a `jax.sharding` Mesh: one device, many, or many hosts.

Every experiment puts its independent runs (cells x seeds, population members, environments,
batch rows) on the leading axis of a pytree and calls `map_runs(fn, runs)`. The leading axis is
padded to whole blocks per device (with copies of row 0, so padding never feeds a computation
values it could not see), sharded over the mesh axis `runs`, computed with `shard_map` so each
device runs `fn` on its own rows, block by block, gathered back to every host as NumPy and
unpadded. Because each row's randomness comes from its own key and every row is computed by the
same code, the result does not depend on how many devices or processes there are.
"""

from __future__ import annotations

import functools
import itertools
import os
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from orbax.checkpoint import multihost as ocp_multihost
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

AXIS = "runs"


def initialize_distributed(coordinator: str | None = None, num_processes: int | None = None,
                           process_id: int | None = None) -> None:
  """Joins this process to a multi-process JAX job (before any other JAX call).

  With no arguments JAX detects the cluster (TPU pods, SLURM, Open MPI, Kubernetes). On CPU the
  collectives go through gloo, which is what the two-process localhost test uses.
  """
  # CPU collectives only (GPUs and TPUs ignore both): gloo, and a long wait in a collective,
  # since one process may still be compiling while another already gathers. Both must be set
  # before the backend starts.
  jax.config.update("jax_cpu_collectives_implementation", "gloo")
  if "xla_cpu_collective_timeout_seconds" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_cpu_collective_timeout_seconds=1800"
  jax.distributed.initialize(coordinator_address=coordinator, num_processes=num_processes,
                             process_id=process_id)


def make_mesh() -> Mesh:
  """A 1-D mesh over every device of every process, axis name `runs`."""
  return jax.make_mesh((jax.device_count(),), (AXIS,))


def padded_size(n: int, mesh: Mesh, block: int = 0) -> int:
  """n rounded up so every device gets the same rows: whole blocks, and at least two of them
  (XLA compiles a one-trip loop differently, which would change the last bit of results)."""
  if block == 0:
    return -(-n // mesh.size) * mesh.size
  step = mesh.size * block
  return max(2, -(-n // step)) * step


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


_gathers = itertools.count()


def gather_rows(tree):
  """Global arrays -> NumPy on every process."""
  if jax.process_count() == 1:
    return jax.tree.map(np.asarray, tree)
  # Meet at a barrier of the coordination service (gRPC, patient) before the gather: gloo gives
  # up connecting after 30 s, and one process can still be compiling that long after another
  # has finished its rows. Every process gathers in the same order, so the counters agree.
  barrier = ocp_multihost.get_barrier_sync_fn()
  barrier(key=f"jaxlab_gather_{next(_gathers)}", timeout_ms=3_600_000)
  return jax.tree.map(np.asarray, multihost_utils.process_allgather(tree, tiled=True))


@functools.lru_cache(maxsize=None)
def _compiled(fn: Callable, mesh: Mesh, block: int):
  def per_device(rows, count):
    # Each device runs fn on blocks of `block` rows in turn, so a row is computed by the same code
    # at the same lane whatever the device count, process count or chunking, and results are
    # bitwise identical across them (a different batch shape lets XLA vectorize differently,
    # which moves the last float bit). The loop's trip count is a runtime value: with a static
    # count XLA would inline a one-block loop and compile its body differently.
    if block == 0:  # the device's whole slice at once, for accelerators
      return fn(rows)
    blocks = jax.tree.map(lambda x: x.reshape(-1, block, *x.shape[1:]), rows)
    first = jax.tree.map(lambda x: x[0], blocks)
    out = jax.tree.map(lambda s: jnp.zeros((blocks_of(rows),) + s.shape, s.dtype), jax.eval_shape(fn, first))

    def body(i, out):
      result = fn(jax.tree.map(lambda x: jax.lax.dynamic_index_in_dim(x, i, keepdims=False), blocks))
      return jax.tree.map(lambda o, r: jax.lax.dynamic_update_index_in_dim(o, r, i, 0), out, result)

    out = jax.lax.fori_loop(0, count[0], body, out)
    return jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), out)

  def blocks_of(rows):
    return len(jax.tree.leaves(rows)[0]) // block

  # Rows are independent, so no collective is needed; check_vma=False lets per-row code start
  # scans from constants without marking them as varying over the mesh axis.
  return jax.jit(jax.shard_map(per_device, mesh=mesh, in_specs=(P(AXIS), P()), out_specs=P(AXIS),
                               check_vma=False))


def map_runs(fn: Callable, runs, mesh: Mesh | None = None, block: int = 32):
  """`fn` maps a batch of runs (leading axis) to outputs with the same leading axis.

  Returns NumPy outputs for exactly the rows given. Rows are padded so each device gets whole
  blocks of `block` rows (0: one block per device). `fn` must be a module-level or otherwise
  long-lived function: its compiled form is cached on (fn, mesh, block).
  """
  mesh = mesh or make_mesh()
  n = len(jax.tree.leaves(runs)[0])
  size = padded_size(n, mesh, block)
  count = np.array([size // mesh.size // max(block, 1)], np.int32)   # blocks per device
  out = _compiled(fn, mesh, block)(shard_rows(pad_rows(runs, size), mesh), count)
  return jax.tree.map(lambda x: x[:n], gather_rows(out))
