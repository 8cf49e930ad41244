"""Lowering a jitted program for accelerators this machine does not have, and its bytes per device.

`jax.export` lowers a `jax.jit` function for a platform without that platform's devices: given
abstract arguments (`jax.ShapeDtypeStruct`s whose `NamedSharding`s lie on a mesh of this
machine's devices, forced CPU devices for instance), it traces the program and emits StableHLO for
`cuda` or `tpu`, lowered for the mesh's device count with every sharding in it. A program that
lowers has passed every platform-specific lowering rule (custom calls, collectives, the sharding of
every argument). It has not been compiled by that platform's XLA, nor run: memory, speed and
numerics there stay unchecked.

`lower(name, fn, args, groups=...)` exports `fn(*args)` once per platform (so one platform's
failure does not hide the other's result) and returns a JSON-ready record:

  platforms  {platform: {ok, error (its first line), seconds, devices, custom_calls, outputs}}:
             `custom_calls` are the module's custom-call targets other than sharding markers;
             `outputs` the global bytes of the results
  groups     {name: {global, per_device, shards, unsharded, consistent}} for the argument groups
             the caller names (parameters, optimizer state, runs, batch), from shapes and
             shardings alone: a leaf's per-device bytes are its shard's
             (`sharding.shard_shape`), its shards the product of the mesh axes its spec splits it
             over, and `consistent` says per-device bytes x shards = global bytes for every leaf
             (`shards` is the largest leaf's split, `unsharded` the bytes of leaves kept whole)
  memory     XLA's buffer assignment for the same program compiled for this machine's devices
             (`compiled.memory_analysis()` of the CPU compile, per device): arguments, outputs,
             aliased (donated) bytes, temporaries; `largest` is the largest single buffer of the
             partitioned, per-device program (an activation, a stacked scan residual, or a
             parameter if none is larger); peak
             = arguments + outputs - aliased + temporaries. None when the compile is skipped or
             fails (`memory_error` then says why)
  fits       {accelerator: bool}: the peak (without a compile: the argument groups alone, a lower
             bound; `fits_basis` says which) within `HEADROOM` of each chip's memory in
             `ACCELERATORS`

The CPU compile stands in for the accelerator's: the program, its sharding and the per-device
shapes are the same, but XLA fuses and reuses buffers differently on a GPU or TPU, so its figures
are estimates, not measurements.
"""

from __future__ import annotations

import contextlib
import math
import re
import time

import jax
from jax.sharding import NamedSharding

PLATFORMS = ("cuda", "tpu")
# Memory per chip, in bytes (1 GB = 1e9 bytes): an H200 SXM and a TPU v5e.
ACCELERATORS = {"H200": 141e9, "TPU v5e": 16e9}
# A program fits when its peak is at most this share of a chip's memory: the runtime, the
# collectives' buffers and fragmentation take the rest (as benchmarks/lm.py's fit table assumes).
HEADROOM = 0.9

# Sharding markers that every sharded program carries; not kernels a platform must provide.
_SHARDING_CALLS = {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "LocalToGlobalShape",
                   "GlobalToLocalShape"}
_HLO_BYTES = {"pred": 1, "s4": 1, "u4": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "s32": 4, "u32": 4, "s64": 8,
              "u64": 8, "f8e4m3fn": 1, "f8e5m2": 1, "bf16": 2, "f16": 2, "f32": 4, "f64": 8, "c64": 8, "c128": 16}
_HLO_ARRAY = re.compile(r"\b(" + "|".join(sorted(_HLO_BYTES, key=len, reverse=True)) + r")\[([0-9,]*)\]")


def first_line(error: BaseException) -> str:
  text = str(error).strip()
  return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


def shards(sharding) -> int:
  """How many pieces a sharding cuts an array into: the product of the sizes of the mesh axes its
  spec names (1: replicated). Shardings other than `NamedSharding` count as replicated only
  when they are."""
  if sharding is None or sharding.is_fully_replicated:
    return 1
  if not isinstance(sharding, NamedSharding):
    raise TypeError(f"cannot count the shards of a {type(sharding).__name__}")
  total = 1
  for entry in sharding.spec:
    for axis in (entry,) if isinstance(entry, str) else tuple(entry or ()):
      total *= sharding.mesh.shape[axis]
  return total


def leaf_bytes(x) -> tuple[int, int, int]:
  """(global bytes, bytes of one device's shard, shards) of an array or `jax.ShapeDtypeStruct`."""
  itemsize = x.dtype.itemsize
  whole = math.prod(x.shape) * itemsize
  sharding = getattr(x, "sharding", None)
  if sharding is None:
    return whole, whole, 1
  return whole, math.prod(sharding.shard_shape(tuple(x.shape))) * itemsize, shards(sharding)


def tree_bytes(tree) -> dict:
  """Global and per-device bytes of a pytree's leaves (see the module docstring)."""
  leaves = [leaf_bytes(x) for x in jax.tree.leaves(tree)]
  return {"global": sum(g for g, _, _ in leaves), "per_device": sum(p for _, p, _ in leaves),
          "shards": max((s for _, _, s in leaves), default=1), "leaves": len(leaves),
          "unsharded": sum(g for g, _, s in leaves if s == 1),
          "consistent": all(p * s == g for g, p, s in leaves)}


def custom_calls(module_text: str) -> list[str]:
  """The custom-call targets of a StableHLO module's text, less the sharding markers."""
  names = set(re.findall(r"stablehlo\.custom_call @([\w.$-]+)", module_text))
  names |= set(re.findall(r'call_target_name = "([^"]+)"', module_text))
  return sorted(n for n in names if n not in _SHARDING_CALLS and not n.startswith(("xla.sdy.", "sdy.")))


def largest_array(hlo_text: str) -> int:
  """Bytes of the largest buffer of a compiled HLO module's text: the largest result of an
  instruction outside fused computations (what a fusion computes inside is never stored whole)."""
  fused = set(re.findall(r"\bfusion\(.*?calls=(%[\w.\-]+)", hlo_text))
  best, skip = 0, False
  for line in hlo_text.splitlines():
    if line.endswith("{") and not line.startswith(" "):          # a computation's header
      name = line.split()[1] if line.startswith("ENTRY ") else line.split()[0]
      skip = name in fused
    elif not skip and line.startswith("  ") and " = " in line:
      result = line.split(" = ", 1)[1].split(", metadata=")[0]
      for dtype, dims in _HLO_ARRAY.findall(result):
        best = max(best, math.prod(int(d) for d in dims.split(",") if d) * _HLO_BYTES[dtype])
  return best


def compiled_memory(fn, args) -> dict:
  """XLA's per-device buffer assignment of `fn(*args)` compiled for this machine's devices."""
  compiled = fn.trace(*args).lower().compile()
  m = compiled.memory_analysis()
  out = {"arguments": int(m.argument_size_in_bytes), "outputs": int(m.output_size_in_bytes),
         "aliased": int(m.alias_size_in_bytes), "temporaries": int(m.temp_size_in_bytes),
         "largest": largest_array(compiled.as_text())}
  out["peak"] = out["arguments"] + out["outputs"] - out["aliased"] + out["temporaries"]
  return out


def fits(record: dict, accelerators=None, headroom: float = HEADROOM) -> tuple[dict, str]:
  """({accelerator: fits}, the basis): the compiled peak, or the argument groups alone."""
  accelerators = ACCELERATORS if accelerators is None else accelerators
  if record.get("memory"):
    need, basis = record["memory"]["peak"], "peak of the CPU compile"
  else:
    need, basis = sum(g["per_device"] for g in record["groups"].values()), "arguments only (a lower bound)"
  return {name: need <= headroom * size for name, size in accelerators.items()}, basis


def _devices(args) -> int:
  for x in jax.tree.leaves(args):
    sharding = getattr(x, "sharding", None)
    if sharding is not None:
      return sharding.num_devices
  return 1


def lower(name: str, fn, args: tuple, *, groups: dict | None = None, platforms=PLATFORMS, mesh=None,
          compile: bool = True, accelerators=None) -> dict:
  """Exports the jitted `fn(*args)` for each of `platforms` and returns its record (see the
  module docstring). `args` are `jax.ShapeDtypeStruct`s with shardings (and any static
  arguments `fn` declares); `groups` names subtrees of them for the byte accounting; `mesh`, if
  given, is set (`jax.set_mesh`) while tracing, for programs whose sharding constraints read it."""
  record = {"name": name, "devices": _devices(args), "platforms": {},
            "groups": {k: tree_bytes(v) for k, v in (groups or {}).items()}, "memory": None}
  if mesh is not None:
    record["mesh"] = {k: int(v) for k, v in mesh.shape.items()}
  scope = jax.set_mesh(mesh) if mesh is not None else contextlib.nullcontext()
  with scope:
    for platform in platforms:
      t0 = time.perf_counter()
      try:
        exported = jax.export.export(fn, platforms=(platform,))(*args)
        outputs = sum(math.prod(a.shape) * a.dtype.itemsize for a in exported.out_avals)
        record["platforms"][platform] = {
            "ok": True, "error": None, "seconds": round(time.perf_counter() - t0, 2), "devices": exported.nr_devices,
            "custom_calls": custom_calls(exported.mlir_module()), "outputs": int(outputs)}
      except Exception as e:   # a failure to lower is a result: record its first line
        record["platforms"][platform] = {"ok": False, "error": first_line(e),
                                         "seconds": round(time.perf_counter() - t0, 2)}
    if compile:
      t0 = time.perf_counter()
      try:
        record["memory"] = compiled_memory(fn, args)
      except Exception as e:
        record["memory_error"] = first_line(e)
      record["compile_seconds"] = round(time.perf_counter() - t0, 2)
  record["fits"], record["fits_basis"] = fits(record, accelerators)
  return record
