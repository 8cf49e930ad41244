"""Lowering for accelerators on this CPU (jaxlab/core/export.py, benchmarks/export.py): a small
sweep and a small LM training step lower for cuda and for tpu on the tests' 8 forced CPU devices
(conftest.py), the bytes per device of their shardings add up to the global bytes, a program that
cannot lower is reported, not raised, and a rematerialized LM step's memory grows linearly with
depth."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

from benchmarks import export as export_cmd
from jaxlab.core import export


def test_bytes_per_device_times_shards_is_the_global_bytes():
  mesh = jax.make_mesh((2, 4), ("a", "b"))
  tree = {"both": jax.ShapeDtypeStruct((8, 12), jnp.float32, sharding=NamedSharding(mesh, P("b", "a"))),
          "joint": jax.ShapeDtypeStruct((16, 3), jnp.bfloat16, sharding=NamedSharding(mesh, P(("a", "b")))),
          "one": jax.ShapeDtypeStruct((4, 6), jnp.int32, sharding=NamedSharding(mesh, P(None, "a"))),
          "whole": jax.ShapeDtypeStruct((5,), jnp.float32, sharding=NamedSharding(mesh, P()))}
  assert [export.leaf_bytes(tree[k]) for k in ("both", "joint", "one", "whole")] == [
      (384, 48, 8), (96, 12, 8), (96, 48, 2), (20, 20, 1)]
  total = export.tree_bytes(tree)
  assert total == {"global": 596, "per_device": 128, "shards": 8, "leaves": 4, "unsharded": 20, "consistent": True}


def test_a_sweep_lowers_for_cuda_and_tpu_on_every_device():
  record = export_cmd.export_one("org_forms", "tiny", compile=False)
  for platform in export.PLATFORMS:
    assert record["platforms"][platform]["ok"], record["platforms"][platform]["error"]
    assert record["platforms"][platform]["devices"] == jax.device_count() == 8
  runs = record["groups"]["runs"]
  assert runs["consistent"] and runs["shards"] == 8 and runs["unsharded"] == 0
  assert runs["per_device"] * 8 == runs["global"]          # every row leaf is split over the 8 devices
  assert record["memory"] is None and record["fits_basis"].startswith("arguments only")


def test_the_lm_step_lowers_with_its_state_sharded_and_its_memory_estimated():
  fn, args, groups, mesh = export_cmd.build("lm_1x8x1", "tiny")
  record = export.lower("lm", fn, args, groups=groups, mesh=mesh)
  for platform in export.PLATFORMS:
    assert record["platforms"][platform]["ok"], record["platforms"][platform]["error"]
    assert record["platforms"][platform]["devices"] == 8
  assert record["mesh"] == {"data": 1, "fsdp": 8, "tensor": 1}
  for name in ("params", "optimizer", "batch"):
    assert record["groups"][name]["consistent"], name
  # Leaf by leaf: the matrices are split 8 ways (fsdp), the norm scales kept whole.
  for path, leaf in jax.tree_util.tree_flatten_with_path(groups["params"])[0]:
    whole, piece, n = export.leaf_bytes(leaf)
    assert piece * n == whole
    assert n == (8 if {"kernel", "embedding"} & {getattr(k, "key", None) for k in path} else 1), path
  params = record["groups"]["params"]
  assert params["per_device"] == params["unsharded"] + (params["global"] - params["unsharded"]) // 8
  m = record["memory"]
  assert m["arguments"] >= sum(g["per_device"] for g in record["groups"].values()) and m["temporaries"] > 0
  assert m["peak"] == m["arguments"] + m["outputs"] - m["aliased"] + m["temporaries"] and m["largest"] > 0
  assert record["fits"] == {"H200": True, "TPU v5e": True} and record["fits_basis"] == "peak of the CPU compile"
  table = export_cmd.markdown({"date": "d", "machine": "m", "jax": jax.__version__, "size": "tiny", "seconds": 1,
                               "programs": [dict(record, name="lm_1x8x1")]})
  assert "| lm_1x8x1 | 8 (1x8x1) | lowers" in table


def test_a_program_that_cannot_lower_is_reported():
  mesh = jax.make_mesh((8,), ("runs",))
  x = jax.ShapeDtypeStruct((8,), jnp.float32, sharding=NamedSharding(mesh, P("runs")))
  host = jax.jit(lambda x: jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x))
  record = export.lower("callback", host, (x,), groups={"x": x}, compile=False)
  for platform in export.PLATFORMS:
    assert not record["platforms"][platform]["ok"]
    assert record["platforms"][platform]["error"].startswith("ValueError: ")   # its first line only
    assert "\n" not in record["platforms"][platform]["error"]


def test_rematerialized_layers_keep_the_step_memory_linear_in_depth():
  # A rematerialized layer keeps its inputs for the backward pass; the stacked KV cache must not
  # be one of them, or each layer saves every layer's keys and values (memory quadratic in depth).
  from flax import nnx
  from jaxlab.lm.qwen3 import Qwen3, Qwen3Config

  def temporaries(layers: int) -> int:
    cfg = Qwen3Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=8, rms_norm_eps=1e-6, rope_theta=1e4,
                      tie_word_embeddings=True)
    graphdef, params = nnx.split(nnx.eval_shape(lambda: Qwen3(cfg, remat="full", rngs=nnx.Rngs(0))))
    loss = lambda params, ids: jnp.mean(nnx.merge(graphdef, params)(ids)[0] ** 2)
    ids = jax.ShapeDtypeStruct((4, 256), jnp.int32)
    return jax.jit(jax.grad(loss)).lower(params, ids).compile().memory_analysis().temp_size_in_bytes

  assert temporaries(32) < 4 * temporaries(8)   # 4x the layers: at most 4x the memory
