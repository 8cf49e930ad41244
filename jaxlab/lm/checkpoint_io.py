"""Loads a local Hugging Face Qwen3 checkpoint folder into a `jaxlab.lm.qwen3.Qwen3`, sharded.

The folder holds `config.json` (and optionally `generation_config.json`, whose EOS ids generation
uses) and either `model.safetensors` or a sharded `model.safetensors.index.json` with its shard
files. The model is first built abstractly (`nnx.eval_shape`, no memory); each parameter's
sharding on the mesh comes from its logical axis names (`jaxlab.core.mesh.logical_sharding`, FSDP
over all devices by default). Then `jax.make_array_from_callback` asks, for each local device,
for that device's slice only, which is read through the `safetensors` library
(`safe_open(..., framework="numpy").get_slice`: memory-mapped, bf16 included through ml_dtypes)
from the per-layer tensors of the file. So no process ever holds more than its own devices'
slices: no unsharded copy of the model exists on any device or on the host (a replicated
parameter is, by definition, whole on each device).

Damaged inputs raise a ValueError that names the file and the problem: an empty, truncated or
cut-in-its-header safetensors file, an index or config that is not JSON, a config missing a
required field, a missing tensor or shard, a shape that disagrees with the config.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.sharding import AxisType, Mesh
from safetensors import SafetensorError, safe_open

from jaxlab.core import mesh as mesh_lib
from jaxlab.lm.qwen3 import BASE, Qwen3, Qwen3Config, token_ids

# safetensors dtype names -> the JAX dtypes parameters are built in (float64 would become float32
# anyway without jax_enable_x64).
DTYPES = {"F32": jnp.float32, "BF16": jnp.bfloat16, "F16": jnp.float16, "F64": jnp.float32}
REQUIRED = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")


def _read_json(path: Path) -> dict:
  try:
    value = json.loads(path.read_text())
  except json.JSONDecodeError as e:
    raise ValueError(f"{path}: not valid JSON ({e})") from None
  if not isinstance(value, dict):
    raise ValueError(f"{path}: expected a JSON object, got {type(value).__name__}")
  return value


def read_config(folder: str | Path) -> Qwen3Config:
  """`config.json` of a Qwen3 checkpoint (EOS ids from `generation_config.json` when it has them,
  as Hugging Face's `generate` does); a ValueError naming the file for a missing or invalid file,
  a missing field, or another model family."""
  path = Path(folder) / "config.json"
  if not path.is_file():
    raise ValueError(f"{path}: no such file")
  hf = _read_json(path)
  archs = hf.get("architectures") or []
  if hf.get("model_type") != "qwen3" or any(a != "Qwen3ForCausalLM" for a in archs):
    raise ValueError(f"{path}: unsupported architecture (model_type={hf.get('model_type')!r}, "
                     f"architectures={archs}); only Qwen3ForCausalLM is supported")
  missing = [k for k in REQUIRED if k not in hf]
  if missing:
    raise ValueError(f"{path}: missing required field(s) {', '.join(missing)}")
  try:
    cfg = Qwen3Config.from_hf(hf)
  except (TypeError, ValueError) as e:
    raise ValueError(f"{path}: {e}") from None
  generation = Path(folder) / "generation_config.json"
  if generation.is_file():
    eos = _read_json(generation).get("eos_token_id")
    if eos is not None:
      cfg = Qwen3Config(**{**cfg.__dict__, "eos_token_ids": token_ids(eos)})
  return cfg


def _damage(path: Path, error: Exception) -> str:
  """What is wrong with a safetensors file the library refused, in words."""
  size = path.stat().st_size
  text = str(error)
  if size == 0:
    return "the file is empty (0 bytes)"
  if "header too small" in text or "invalid header length" in text:
    return f"the file ends inside its header ({size} bytes): it was cut off while being written or copied"
  if "not fully covered" in text or "incomplete metadata" in text:
    return (f"the file is truncated (or has extra bytes): its {size} bytes do not match the tensor data "
            "its header lists")
  return f"not a readable safetensors file ({text})"


class _Files:
  """The open safetensors files of a checkpoint folder, by tensor name."""

  def __init__(self, folder: Path, stack: contextlib.ExitStack):
    self.folder, self.stack, self.handles = folder, stack, {}
    single, index = folder / "model.safetensors", folder / "model.safetensors.index.json"
    if single.is_file():
      self.files = {name: single for name in self.open(single).keys()}
      return
    if not index.is_file():
      raise ValueError(f"{folder}: neither model.safetensors nor model.safetensors.index.json exists")
    weight_map = _read_json(index).get("weight_map")
    if not isinstance(weight_map, dict):
      raise ValueError(f"{index}: no weight_map")
    self.files = {name: folder / shard for name, shard in weight_map.items()}
    for shard in sorted(set(self.files.values())):
      if not shard.is_file():
        raise ValueError(f"{shard}: no such file (listed in {index})")

  def open(self, path: Path):
    if path not in self.handles:
      try:
        self.handles[path] = self.stack.enter_context(safe_open(str(path), framework="numpy"))
      except SafetensorError as e:
        raise ValueError(f"{path}: {_damage(path, e)}") from None
    return self.handles[path]

  def tensor(self, name: str, shape: tuple[int, ...]):
    """A lazy slice of tensor `name`, checked to have `shape`."""
    if name not in self.files:
      raise ValueError(f"{self.folder}: tensor {name} is missing from the checkpoint")
    file = self.files[name]
    handle = self.open(file)
    if name not in handle.keys():
      raise ValueError(f"{file}: tensor {name} is missing")
    part = handle.get_slice(name)
    if tuple(part.get_shape()) != tuple(shape):
      raise ValueError(f"{file}: tensor {name} has shape {tuple(part.get_shape())} but the config needs {tuple(shape)}")
    return part


def hf_names(path: tuple, num_layers: int) -> tuple[list[str], bool, bool]:
  """NNX parameter path -> (Hugging Face tensor names, whether each is transposed, whether the
  parameter is stacked over layers: then there is one name per layer, in order).

  The module tree mirrors Hugging Face's, so only the leaf names and the layer index differ:
  nnx.Linear keeps its kernel as (in, out) where torch keeps (out, in), and the scanned layers keep
  one stacked parameter where Hugging Face keeps `model.layers.{i}.…`."""
  *head, leaf = (str(p) for p in path)
  tail = ["weight" if leaf in ("kernel", "embedding") else leaf]
  transposed = leaf == "kernel"
  if head[:2] == ["model", "layers"]:
    return [".".join(["model", "layers", str(i)] + head[2:] + tail) for i in range(num_layers)], transposed, True
  return [".".join(head + tail)], transposed, False


def _reader(parts, transposed: bool, stacked: bool, dtype):
  """The callback of `make_array_from_callback`: a device's index -> its slice, as `dtype`."""
  def one(part, index):
    # A transposed kernel's (in, out) slice is the (out, in) slice of the stored tensor, flipped.
    return part[index[::-1]].T if transposed else part[index]

  def read(index):
    index = tuple(index)
    if stacked:
      layers = range(len(parts))[index[0]]
      value = np.stack([one(parts[i], index[1:]) for i in layers])
    else:
      value = one(parts[0], index)
    return np.asarray(value, dtype=dtype)
  return read


def load(folder: str | Path, *, dtype=None, mesh: Mesh | None = None, remat: str = "none") -> Qwen3:
  """A Qwen3 model from a Hugging Face folder, its parameters sharded over `mesh` by the logical
  axis rules (None: `mesh.training_mesh()`, FSDP over every device; a mesh without the training
  axes, such as the runs mesh, replicates them). `dtype=None` keeps the checkpoint's dtype (that of
  its embedding: bf16 stays bf16); give one to convert on the way. `remat` as in `Qwen3`, for
  gradients through the loaded model (e.g. into soft tokens)."""
  folder = Path(folder)
  cfg = read_config(folder)
  # Auto axes: on a mesh with Explicit axes (`jax.make_mesh`'s default) the mesh becomes part of
  # every array type the params meet, and each input and cache would have to carry it too.
  mesh = mesh or mesh_lib.training_mesh()
  mesh = mesh.update(axis_types=(AxisType.Auto,) * len(mesh.axis_names))
  with contextlib.ExitStack() as stack:
    files = _Files(folder, stack)
    if dtype is None:
      stored = files.tensor("model.embed_tokens.weight", (cfg.vocab_size, cfg.hidden_size)).get_dtype()
      if stored not in DTYPES:
        raise ValueError(f"{files.files['model.embed_tokens.weight']}: unsupported dtype {stored}")
      dtype = DTYPES[stored]
    graphdef, abstract = nnx.split(nnx.eval_shape(lambda: Qwen3(cfg, dtype=dtype, remat=remat, rngs=nnx.Rngs(0))))
    shardings = dict(nnx.to_flat_state(mesh_lib.logical_sharding(abstract, mesh)))
    loaded = []
    for path, var in nnx.to_flat_state(abstract):
      names, transposed, stacked = hf_names(path, cfg.num_hidden_layers)
      shape = var.shape[1:] if stacked else var.shape
      want = tuple(shape[::-1]) if transposed else tuple(shape)
      parts = [files.tensor(name, want) for name in names]
      array = jax.make_array_from_callback(var.shape, shardings[path], _reader(parts, transposed, stacked, dtype))
      loaded.append((path, var.replace(array)))
  return nnx.merge(graphdef, nnx.from_flat_state(loaded))


def to_hf(model: Qwen3) -> dict[str, np.ndarray]:
  """The model's base weights as Hugging Face tensors (torch's (out, in) layout, one per layer),
  gathered to host NumPy on every process (a collective: every process must call it). The same
  name mapping `load` uses, so the two cannot drift apart."""
  flat = nnx.to_flat_state(nnx.state(model, BASE))
  values = mesh_lib.gather_rows([var[...] for _, var in flat])
  tensors = {}
  for (path, _), value in zip(flat, values):
    names, transposed, stacked = hf_names(path, model.cfg.num_hidden_layers)
    for i, name in enumerate(names):
      v = value[i] if stacked else value
      tensors[name] = np.ascontiguousarray(v.T if transposed else v)
  return tensors
