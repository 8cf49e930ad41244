"""Orbax checkpoints of named state: restored onto other meshes, the latest and the best step
kept, another run's checkpoints refused."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec as P

from jaxlab.core import checkpoint, compile_cache, mesh as mesh_lib


class Tiny(nnx.Module):
  def __init__(self, rngs):
    init = nnx.with_partitioning(nnx.initializers.normal(1.0), ("embed", "mlp"))
    self.up = nnx.Linear(16, 32, kernel_init=init, use_bias=False, rngs=rngs)
    self.scale = nnx.Param(jnp.ones((32,)))


def _sharded_state(mesh):
  """Params and AdamW state of Tiny created sharded by the rules on `mesh`."""
  params = nnx.state(mesh_lib.create_sharded(lambda: Tiny(nnx.Rngs(0)), mesh), nnx.Param)
  tx = optax.adamw(1e-2)
  opt = jax.jit(tx.init)(params)
  grads = jax.tree.map(jnp.ones_like, params)
  updates, opt = tx.update(grads, opt, params)
  return {"params": optax.apply_updates(params, updates), "opt": opt}


def test_named_state_restores_onto_other_meshes(tmp_path):
  saved = _sharded_state(mesh_lib.training_mesh({"data": 1, "fsdp": 8, "tensor": 1}))
  kernel = saved["params"]["up"]["kernel"]
  assert kernel.sharding.spec[0] == "fsdp" and not kernel.sharding.is_fully_replicated
  with checkpoint.Checkpoints(tmp_path / "ckpt", "abc") as ckpt:
    ckpt.save(5, saved, metrics={"loss": 1.5}, history=[1, 2])
  for spec in ({"data": 2, "fsdp": 4, "tensor": 1}, {"data": 1, "fsdp": 2, "tensor": 4}):
    mesh = mesh_lib.training_mesh(spec)
    shapes = jax.eval_shape(lambda: saved)
    target = checkpoint.abstract_like(shapes, mesh_lib.logical_sharding(shapes, mesh))
    with checkpoint.Checkpoints(tmp_path / "ckpt", "abc") as ckpt:
      state, meta = ckpt.restore(target)
    assert meta["step"] == 5 and meta["history"] == [1, 2] and meta["metrics"] == {"loss": 1.5}
    assert state["params"]["up"]["kernel"].sharding == target["params"]["up"]["kernel"].sharding
    for a, b in zip(jax.tree.leaves(saved), jax.tree.leaves(state)):
      np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  one = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))
  target = checkpoint.abstract_like(jax.eval_shape(lambda: saved), NamedSharding(one, P()))
  with checkpoint.Checkpoints(tmp_path / "ckpt", "abc") as ckpt:
    state, _ = ckpt.restore(target)
  assert state["params"]["up"]["kernel"].sharding.mesh.size == 1
  for a, b in zip(jax.tree.leaves(saved), jax.tree.leaves(state)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("mode, best", [("max", 2), ("min", 1)])
def test_keeps_the_latest_and_the_best(tmp_path, mode, best):
  state = {"w": np.arange(4.0)}
  with checkpoint.Checkpoints(tmp_path, "fp", best="f1", mode=mode) as ckpt:
    for step, f1 in enumerate([0.1, 0.5, 0.3, 0.2], start=1):
      ckpt.save(step, {"w": state["w"] * step}, metrics={"f1": f1})
  with checkpoint.Checkpoints(tmp_path, "fp", best="f1", mode=mode) as ckpt:
    assert ckpt.latest_step() == 4 and ckpt.best_step() == best
    assert set(ckpt.mgr.all_steps()) == {best, 4}
    restored, meta = ckpt.restore({"w": np.zeros(4)}, step=ckpt.best_step())
  np.testing.assert_array_equal(restored["w"], state["w"] * best)
  assert meta["metrics"]["f1"] == [0.1, 0.5, 0.3, 0.2][best - 1]


def test_another_runs_checkpoints_are_refused(tmp_path):
  with checkpoint.Checkpoints(tmp_path, "run-a") as ckpt:
    ckpt.save(1, {"w": np.zeros(2)})
  with (checkpoint.Checkpoints(tmp_path, "run-b") as ckpt,
        pytest.raises(checkpoint.CheckpointMismatch, match="another run")):
    ckpt.restore({"w": np.zeros(2)})


def test_a_small_replicated_state_saves_without_compiling_and_restores_bitwise(tmp_path):
  """Orbax would cut each replicated array into one slice per device, each slice a compiled
  program of its own; below `REPLICA_SLICE_MIN_BYTES` a replica writes it whole."""
  mesh = mesh_lib.training_mesh({"data": 8, "fsdp": 1, "tensor": 1})
  replicated = NamedSharding(mesh, P())
  state = {f"w{i}": jax.device_put(np.arange(8 * (i + 3), dtype=np.float32).reshape(8, i + 3) / 7, replicated)
           for i in range(4)}
  clock = compile_cache.Clock()
  with checkpoint.Checkpoints(tmp_path / "ckpt", "abc") as ckpt:
    ckpt.save(1, state)
    clock.stop()
    back, _ = ckpt.restore(checkpoint.abstract_like(state))
  assert "compile" not in clock.seconds
  for k in state:
    assert back[k].sharding.is_fully_replicated
    np.testing.assert_array_equal(np.asarray(back[k]), np.asarray(state[k]))
