"""Loads a local Hugging Face Qwen3 checkpoint folder into a `jaxlab.lm.qwen3.Qwen3`.

The folder holds `config.json` and either `model.safetensors` or a sharded
`model.safetensors.index.json` with its shard files. The model is first built abstractly
(`nnx.eval_shape`, no memory); then each parameter is read on its own from a memory-mapped
safetensors file and placed straight onto the mesh with `jax.make_array_from_callback`, so no
unsharded copy of the whole model exists on any device or on the host at any time.

safetensors files are read by this module's own header parser rather than the `safetensors`
package's NumPy API, because that API refuses bf16 tensors (NumPy has no bfloat16), and real
Qwen3 checkpoints are bf16; `ml_dtypes` (a JAX dependency) gives NumPy the dtype.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from flax import nnx
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P

from jaxlab.core.mesh import make_mesh
from jaxlab.lm.qwen3 import Qwen3, Qwen3Config

_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16, "F64": np.float64}


def read_config(folder: str | Path) -> Qwen3Config:
  """`config.json` of a Qwen3 checkpoint; a ValueError for a missing file or another family."""
  path = Path(folder) / "config.json"
  if not path.is_file():
    raise ValueError(f"{path}: no such file")
  hf = json.loads(path.read_text())
  archs = hf.get("architectures") or []
  if hf.get("model_type") != "qwen3" or any(a != "Qwen3ForCausalLM" for a in archs):
    raise ValueError(f"{path}: unsupported architecture (model_type={hf.get('model_type')!r}, "
                     f"architectures={archs}); only Qwen3ForCausalLM is supported")
  return Qwen3Config.from_hf(hf)


def _safetensors_index(path: Path) -> dict[str, tuple[np.dtype, tuple[int, ...], int]]:
  """name -> (dtype, shape, byte offset in the file) from a safetensors header."""
  with open(path, "rb") as f:
    (size,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(size))
  out = {}
  for name, info in header.items():
    if name == "__metadata__":
      continue
    if info["dtype"] not in _DTYPES:
      raise ValueError(f"{path}: tensor {name} has unsupported dtype {info['dtype']}")
    out[name] = (np.dtype(_DTYPES[info["dtype"]]), tuple(info["shape"]), 8 + size + info["data_offsets"][0])
  return out


def _tensor_files(folder: Path) -> dict[str, Path]:
  """Tensor name -> the safetensors file that holds it."""
  single, index = folder / "model.safetensors", folder / "model.safetensors.index.json"
  if single.is_file():
    return {name: single for name in _safetensors_index(single)}
  if not index.is_file():
    raise ValueError(f"{folder}: neither model.safetensors nor model.safetensors.index.json exists")
  files = {name: folder / shard for name, shard in json.loads(index.read_text())["weight_map"].items()}
  for shard in sorted(set(files.values())):
    if not shard.is_file():
      raise ValueError(f"{shard}: no such file (listed in {index})")
  return files


def hf_name(path: tuple) -> tuple[str, bool]:
  """NNX parameter path -> (Hugging Face tensor name, whether the tensor is transposed).

  The module tree mirrors Hugging Face's, so only the leaf names differ: nnx.Linear keeps its
  kernel as (in, out) where torch keeps (out, in)."""
  *head, leaf = (str(p) for p in path)
  return ".".join(head + ["weight" if leaf in ("kernel", "embedding") else leaf]), leaf == "kernel"


def load(folder: str | Path, *, dtype=jnp.float32, mesh: Mesh | None = None) -> Qwen3:
  """A Qwen3 model from a Hugging Face folder, parameters replicated over `mesh` in `dtype`."""
  folder = Path(folder)
  cfg = read_config(folder)
  files = _tensor_files(folder)
  # Auto axes: on a mesh with Explicit axes (`jax.make_mesh`'s default) the mesh becomes part of
  # every array type the params meet, and each input and cache would have to carry it too.
  mesh = mesh or make_mesh()
  mesh = mesh.update(axis_types=(AxisType.Auto,) * len(mesh.axis_names))
  sharding = NamedSharding(mesh, P())
  graphdef, abstract = nnx.split(nnx.eval_shape(lambda: Qwen3(cfg, dtype=dtype, rngs=nnx.Rngs(0))))
  headers: dict[Path, dict] = {}
  loaded = []
  for path, var in nnx.to_flat_state(abstract):
    name, transposed = hf_name(path)
    if name not in files:
      raise ValueError(f"{folder}: tensor {name} is missing from the checkpoint")
    file = files[name]
    if file not in headers:
      headers[file] = _safetensors_index(file)
    if name not in headers[file]:
      raise ValueError(f"{file}: tensor {name} is missing")
    src_dtype, shape, offset = headers[file][name]
    want = var.shape[::-1] if transposed else var.shape
    if shape != tuple(want):
      raise ValueError(f"{file}: tensor {name} has shape {shape} but the config needs {tuple(want)}")
    array = np.memmap(file, dtype=src_dtype, mode="r", offset=offset, shape=shape)
    host = array.T if transposed else array
    # Each device copies only its own slice, converted to the target dtype on the way.
    loaded.append((path, var.replace(jax.make_array_from_callback(
        var.shape, sharding, lambda index, host=host: np.asarray(host[index], dtype=dtype)))))
  return nnx.merge(graphdef, nnx.from_flat_state(loaded))
