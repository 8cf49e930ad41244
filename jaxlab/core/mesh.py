"""Meshes: the runs axis of sweeps, and the (data, fsdp, tensor) mesh of training.

**Sweeps.**
Every experiment puts its independent runs (cells x seeds, population members, environments,
batch rows) on the leading axis of a pytree and calls `map_runs(fn, runs)`. The rows go through
calls of a few fixed sizes (one compiled program serves sweeps of many sizes), each laid out as
whole blocks per device (padded with copies of a real row, so padding never feeds a computation
values it could not see), sharded over the mesh axis `runs`, computed with `shard_map` so each
device runs `fn` on its own rows, block by block (blocks of padding are skipped), gathered back
to every host as NumPy and unpadded. Because each row's randomness comes from its own key and
every row is computed by the same code, the result does not depend on how many devices or
processes there are.

**Training.** `training_mesh(config.mesh)` lays every device of every process out as
(data, fsdp, tensor): batch rows are split over data x fsdp, parameters and optimizer state are
sharded over fsdp (ZeRO-3 style: each device holds a slice of every large matrix and XLA gathers
it for the layer that needs it) and split Megatron-style over tensor (heads, MLP width). Models
name the logical axes of their parameters (`nnx.with_partitioning`, `out_sharding=`) and
`RULES` maps each logical name to mesh axes, in one table; `logical_sharding` turns an abstract
state's names into `NamedSharding`s on a mesh. Its axes are Auto (XLA propagates shardings
from the parameters and the `constrain` hints), so inputs need not carry the mesh in their types.
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
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P

AXIS = "runs"
TRAINING_AXES = ("data", "fsdp", "tensor")

# Logical axis name -> mesh axes (None: replicated). The one table of sharding rules: a model names
# its axes, never mesh axes. fsdp shards the large dimension of every matrix; tensor splits heads
# and MLP width (column-parallel in, row-parallel out, Megatron style); batch rows use data x fsdp.
RULES: dict[str, str | tuple[str, ...] | None] = {
    "batch": ("data", "fsdp"),
    "vocab": "tensor",
    "embed": "fsdp",
    "heads": "tensor",
    "kv_heads": "tensor",
    "head_dim": None,
    "mlp": "tensor",
    "norm": None,
    "layers": None,
    "length": None,
}


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


def make_mesh(auto: bool = False) -> Mesh:
  """A 1-D mesh over every device of every process, axis name `runs`. `auto=True` gives it an Auto
  axis: with an Explicit one (`jax.make_mesh`'s default) the mesh becomes part of the type of every
  array it meets, so every input of a model placed on it would have to carry it too."""
  if auto:
    return jax.make_mesh((jax.device_count(),), (AXIS,), axis_types=(AxisType.Auto,))
  return jax.make_mesh((jax.device_count(),), (AXIS,))


def training_mesh(spec=None, devices=None) -> Mesh:
  """A (data, fsdp, tensor) mesh over every device of every process (or over `devices`).

  `spec` is a config block (or dict) with integer fields `data`, `fsdp`, `tensor`; one of them may
  be -1 for whatever the others leave; None puts every device on fsdp. The product must equal the
  device count.
  """
  spec = {"data": 1, "fsdp": -1, "tensor": 1} if spec is None else dict(spec)
  names = set(spec) - set(TRAINING_AXES)
  if names:
    raise ValueError(f"mesh: unknown axes {sorted(names)}; the axes are {TRAINING_AXES}")
  sizes = [int(spec.get(a, 1)) for a in TRAINING_AXES]
  n = jax.device_count() if devices is None else len(devices)
  if sizes.count(-1) > 1 or any(s == 0 or s < -1 for s in sizes):
    raise ValueError(f"mesh: sizes must be positive, with at most one -1, got {dict(zip(TRAINING_AXES, sizes))}")
  known = int(np.prod([s for s in sizes if s != -1]))
  if -1 in sizes:
    if n % known:
      raise ValueError(f"mesh: {dict(zip(TRAINING_AXES, sizes))} does not divide the {n} devices")
    sizes[sizes.index(-1)] = n // known
  if int(np.prod(sizes)) != n:
    raise ValueError(f"mesh: data x fsdp x tensor = {int(np.prod(sizes))}, but there are {n} devices")
  return jax.make_mesh(tuple(sizes), TRAINING_AXES, axis_types=(AxisType.Auto,) * 3, devices=devices)


def spec_of(names, rules=None) -> P:
  """Logical axis names (one per array dimension, None for unnamed) -> a PartitionSpec.
  A mesh axis is used at most once per array: a later dimension that maps to one already used
  stays unsharded (e.g. a square (embed, embed) matrix)."""
  rules = RULES if rules is None else rules
  used, out = set(), []
  for name in names or ():
    axes = rules.get(name) if name is not None else None
    axes = (axes,) if isinstance(axes, str) else tuple(axes or ())
    axes = tuple(a for a in axes if a not in used)
    used.update(axes)
    out.append(None if not axes else axes[0] if len(axes) == 1 else axes)
  return P(*out)


def fitted_spec(names, shape, mesh_shape, rules=None) -> P:
  """`spec_of(names)` for an array of `shape` on a mesh of `mesh_shape` (axis name -> size): mesh
  axes the mesh lacks, and axes whose size does not divide the dimension, are left out (the
  dimension is replicated over them) rather than failing, so tiny test models and odd batch sizes
  run on any mesh, and a model placed on a mesh without these axes is replicated."""
  spec = list(spec_of(names, rules))[:len(shape)]
  spec += [None] * (len(shape) - len(spec))
  for i, axes in enumerate(spec):
    kept, size = [], 1
    for a in ((axes,) if isinstance(axes, str) else tuple(axes or ())):
      if a in mesh_shape and shape[i] % (size * mesh_shape[a]) == 0:
        kept.append(a)
        size *= mesh_shape[a]
    spec[i] = None if not kept else kept[0] if len(kept) == 1 else tuple(kept)
  return P(*spec)


def logical_names(var) -> tuple:
  """The logical axis names of an NNX variable (its `out_sharding` metadata), or ()."""
  meta = var.get_metadata() if hasattr(var, "get_metadata") else {}
  return tuple(meta.get("out_sharding") or meta.get("sharding_names") or ())


def logical_sharding(abstract_state, mesh: Mesh, rules=None):
  """NamedShardings for an (abstract) NNX state whose variables carry logical axis names as
  `out_sharding` metadata (`nnx.with_partitioning`, or `kernel_metadata={"out_sharding": ...}`);
  variables without names, and other leaves, are replicated. See `fitted_spec` for axes that do
  not fit."""
  from flax import nnx

  def one(var):
    shape = var.shape if hasattr(var, "shape") else var[...].shape
    return NamedSharding(mesh, fitted_spec(logical_names(var), shape, dict(mesh.shape), rules))

  return jax.tree.map(one, abstract_state, is_leaf=lambda x: isinstance(x, nnx.Variable))


def create_sharded(init_fn: Callable, mesh: Mesh, rules=None):
  """An NNX module built by `init_fn()` directly in its shards: the module is first built
  abstractly (`nnx.eval_shape`, no memory), its variables' logical names give their shardings
  (`logical_sharding`), and one jitted init with those `out_shardings` makes each device compute
  only its own slices, so no full copy exists on any device or on the host.

  Flax's eager sharding (variables placed as they are created, by Flax's own rules) is switched
  off here: the rules are this module's table, which also skips axes that do not divide.
  """
  from flax import nnx

  with nnx.use_eager_sharding(False):
    graphdef, abstract = nnx.split(nnx.eval_shape(init_fn))
    shardings = logical_sharding(abstract, mesh, rules)
    state = jax.jit(lambda: nnx.split(init_fn())[1], out_shardings=shardings)()
  return nnx.merge(graphdef, state)


def constrain(x, *names, rules=None):
  """`with_sharding_constraint` by logical names, under the mesh set by `jax.set_mesh`; a no-op
  outside one. Activations named here tell XLA where the collectives go. Axes that do not divide
  the dimension are dropped (a batch of 3 on 8 devices stays replicated)."""
  mesh = jax.sharding.get_abstract_mesh()
  if mesh is None or mesh.empty or set(TRAINING_AXES) - set(mesh.axis_names):
    return x
  return jax.lax.with_sharding_constraint(x, fitted_spec(names, x.shape, dict(mesh.shape), rules))


def constrain_state(tree, rules=None):
  """Every NNX variable in `tree` constrained to its logical sharding (as `logical_sharding` lays
  it out), under the mesh set by `jax.set_mesh`: a jitted update step returns parameters and
  optimizer state laid out exactly as they came in, so the next step neither reshards nor
  recompiles. Other leaves are left to XLA."""
  from flax import nnx

  def one(x):
    if isinstance(x, nnx.Variable):
      return x.replace(constrain(x[...], *logical_names(x), rules=rules))
    return x

  return jax.tree.map(one, tree, is_leaf=lambda x: isinstance(x, nnx.Variable))


def shard_batch(tree, mesh: Mesh, rules=None):
  """Host NumPy rows (identical on every process) -> global arrays on a training mesh, the leading
  axis split by the `batch` rule (data x fsdp); each process supplies only its own devices' rows."""
  def put(x):
    x = np.asarray(x)
    spec = fitted_spec(("batch",), x.shape, dict(mesh.shape), rules)
    return jax.make_array_from_callback(x.shape, NamedSharding(mesh, spec), lambda index: x[index])
  return jax.tree.map(put, tree)


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

    out = jax.lax.fori_loop(0, count[0], body, out)   # blocks past count stay zeros, cut off on the host
    return jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), out)

  def blocks_of(rows):
    return len(jax.tree.leaves(rows)[0]) // block

  # Rows are independent, so no collective is needed; check_vma=False lets per-row code start
  # scans from constants without marking them as varying over the mesh axis.
  return jax.jit(jax.shard_map(per_device, mesh=mesh, in_specs=(P(AXIS), P(AXIS)), out_specs=P(AXIS),
                               check_vma=False))


def runs_program(fn: Callable, runs, mesh: Mesh | None = None, block: int = 32):
  """The jitted program and the abstract arguments `map_runs(fn, runs, mesh, block)` would call,
  without placing anything: `(program, (rows, count))`, where `rows` are `jax.ShapeDtypeStruct`s
  padded and sharded along `runs` as `map_runs` lays them out. `runs` may hold arrays or
  `ShapeDtypeStruct`s; `rows` are those of map_runs' first call. For ahead-of-time lowering (`jaxlab.core.export`)."""
  mesh = mesh or make_mesh()
  n = jax.tree.leaves(runs)[0].shape[0]
  size = padded_size(n, mesh, 0) if block == 0 else mesh.size * block * call_blocks(n, mesh, block)[0]
  sharding = NamedSharding(mesh, P(AXIS))
  dtype = lambda x: jax.dtypes.canonicalize_dtype(x.dtype, allow_extended_dtype=True)
  rows = jax.tree.map(lambda x: jax.ShapeDtypeStruct((size, *x.shape[1:]), dtype(x), sharding=sharding), runs)
  count = jax.ShapeDtypeStruct((mesh.size,), np.int32, sharding=sharding)
  return _compiled(fn, mesh, block), (rows, count)


# Blocks per device in one call of the compiled program. A sweep's rows go through calls of this
# many blocks, the rest through the smallest power of two (at least 2) that holds it, so any
# sweep compiles at most log2(MAX_BLOCKS) programs per (fn, mesh, block), most of them one.
MAX_BLOCKS = 64


def call_blocks(n: int, mesh: Mesh, block: int) -> list[int]:
  """Blocks per device of each call `map_runs` makes for n rows (block > 0)."""
  per_device = max(1, -(-n // (mesh.size * block)))
  full, rest = divmod(per_device, MAX_BLOCKS)
  bucket = [] if rest == 0 else [max(2, 1 << (rest - 1).bit_length())]
  return [MAX_BLOCKS] * full + bucket


def calls(n: int, mesh: Mesh, block: int) -> list[tuple[int, int, np.ndarray, np.ndarray]]:
  """The calls `map_runs` makes for n rows (block > 0): (first row, blocks per device, each device's
  first row within the call, each device's row count). Each device takes whole blocks of
  consecutive rows, as evenly as the blocks allow, at its slice's start (so row i keeps lane
  i % block); it computes ceil(count / block) blocks."""
  out, start = [], 0
  for blocks in call_blocks(n, mesh, block):
    m = min(n, start + mesh.size * blocks * block) - start
    per = -(-m // (mesh.size * block)) * block            # rows per device, whole blocks
    starts = np.minimum(np.arange(mesh.size) * per, m)
    out.append((start, blocks, starts, np.minimum(starts + per, m) - starts))
    start += m
  return out


def map_runs(fn: Callable, runs, mesh: Mesh | None = None, block: int = 32):
  """`fn` maps a batch of runs (leading axis) to outputs with the same leading axis.

  Returns NumPy outputs for exactly the rows given. Each device computes `fn` on its rows in
  blocks of `block` rows, skipping blocks that hold no row; the rows go through calls of a few
  fixed sizes (`call_blocks`), so sweeps of different sizes share compiled programs (block 0:
  one call, each device's whole slice at once, for accelerators). `fn` must be a module-level or
  otherwise long-lived function: its compiled form is cached on (fn, mesh, block).
  """
  mesh = mesh or make_mesh()
  n = len(jax.tree.leaves(runs)[0])
  program = _compiled(fn, mesh, block)
  if block == 0:
    size = padded_size(n, mesh, 0)
    count = np.ones(mesh.size, np.int32)
    out = program(shard_rows(pad_rows(runs, size), mesh), shard_rows(count, mesh))
    return jax.tree.map(lambda x: x[:n], gather_rows(out))
  outs = []
  for start, blocks, starts, counts in calls(n, mesh, block):   # every call dispatched before any is gathered
    slot = blocks * block
    at = np.arange(slot)
    index = np.where(at < counts[:, None], start + starts[:, None] + at, start).ravel()
    rows = jax.tree.map(lambda x: np.asarray(x)[index], runs)   # padding: copies of the call's first row
    count = (-(-counts // block)).astype(np.int32)
    outs.append((counts, slot, program(shard_rows(rows, mesh), shard_rows(count, mesh))))
  parts = []
  for counts, slot, out in outs:
    out = gather_rows(out)
    parts += [jax.tree.map(lambda x: x[d * slot:d * slot + c], out) for d, c in enumerate(counts) if c]
  return jax.tree.map(lambda *xs: np.concatenate(xs), *parts)
