"""The shared training pieces: named Orbax state restored onto other meshes, best-by-metric,
fingerprint checks, JSONL + TensorBoard metrics, the NaN stop and the preemption flag."""

import json
import os
import signal
import struct

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec as P

from jaxlab.core import mesh as mesh_lib, train


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
  with train.Checkpoints(tmp_path / "ckpt", "abc") as ckpt:
    ckpt.save(5, saved, metrics={"loss": 1.5}, history=[1, 2])
  for spec in ({"data": 2, "fsdp": 4, "tensor": 1}, {"data": 1, "fsdp": 2, "tensor": 4}):
    mesh = mesh_lib.training_mesh(spec)
    shapes = jax.eval_shape(lambda: saved)
    target = train.abstract_like(shapes, mesh_lib.logical_sharding(shapes, mesh))
    with train.Checkpoints(tmp_path / "ckpt", "abc") as ckpt:
      state, meta = ckpt.restore(target)
    assert meta["step"] == 5 and meta["history"] == [1, 2] and meta["metrics"] == {"loss": 1.5}
    assert state["params"]["up"]["kernel"].sharding == target["params"]["up"]["kernel"].sharding
    for a, b in zip(jax.tree.leaves(saved), jax.tree.leaves(state)):
      np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  one = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))
  target = train.abstract_like(jax.eval_shape(lambda: saved), NamedSharding(one, P()))
  with train.Checkpoints(tmp_path / "ckpt", "abc") as ckpt:
    state, _ = ckpt.restore(target)
  assert state["params"]["up"]["kernel"].sharding.mesh.size == 1
  for a, b in zip(jax.tree.leaves(saved), jax.tree.leaves(state)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("mode, best", [("max", 2), ("min", 1)])
def test_keeps_the_latest_and_the_best(tmp_path, mode, best):
  state = {"w": np.arange(4.0)}
  with train.Checkpoints(tmp_path, "fp", best="f1", mode=mode) as ckpt:
    for step, f1 in enumerate([0.1, 0.5, 0.3, 0.2], start=1):
      ckpt.save(step, {"w": state["w"] * step}, metrics={"f1": f1})
  with train.Checkpoints(tmp_path, "fp", best="f1", mode=mode) as ckpt:
    assert ckpt.latest_step() == 4 and ckpt.best_step() == best
    assert set(ckpt.mgr.all_steps()) == {best, 4}
    restored, meta = ckpt.restore({"w": np.zeros(4)}, step=ckpt.best_step())
  np.testing.assert_array_equal(restored["w"], state["w"] * best)
  assert meta["metrics"]["f1"] == [0.1, 0.5, 0.3, 0.2][best - 1]


def test_another_runs_checkpoints_are_refused(tmp_path):
  with train.Checkpoints(tmp_path, "run-a") as ckpt:
    ckpt.save(1, {"w": np.zeros(2)})
  with train.Checkpoints(tmp_path, "run-b") as ckpt, pytest.raises(train.CheckpointMismatch, match="another run"):
    ckpt.restore({"w": np.zeros(2)})


def _events(folder):
  """Scalar (tag, step, value) records from TensorBoard event files (TFRecord framing)."""
  from tensorboardX.proto import event_pb2

  out = []
  for path in sorted(folder.iterdir()):
    data = path.read_bytes()
    pos = 0
    while pos < len(data):
      (length,) = struct.unpack("<Q", data[pos:pos + 8])
      event = event_pb2.Event.FromString(data[pos + 12:pos + 12 + length])
      pos += 12 + length + 4
      out += [(v.tag, event.step, v.simple_value) for v in event.summary.value]
  return out


def test_metrics_go_to_json_lines_and_tensorboard(tmp_path):
  with train.Metrics(tmp_path, "log") as m:
    m.write(1, loss=2.5, lr=np.float32(0.01), eval={"f1": 0.25}, note="text")
    m.write(2, loss=1.5)
  lines = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
  assert lines[0] == {"step": 1, "loss": 2.5, "lr": pytest.approx(0.01), "eval": {"f1": 0.25}, "note": "text"}
  events = _events(tmp_path / "tb")
  assert ("loss", 2, 1.5) in events and ("eval/f1", 1, 0.25) in events


def test_non_finite_values_stop_with_the_step_named():
  train.check_finite(3, loss=1.0, grad_norm=2.0)
  with pytest.raises(FloatingPointError, match="step 7: loss=nan, grad_norm=1.0; nothing"):
    train.check_finite(7, loss=float("nan"), grad_norm=1.0)


def test_sigterm_becomes_a_flag():
  with train.Preemption() as pre:
    assert not pre.should_stop()
    os.kill(os.getpid(), signal.SIGTERM)
    assert pre.requested and pre.should_stop()
  assert signal.getsignal(signal.SIGTERM) is not pre._handle
