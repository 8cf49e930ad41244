from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxlab.core import cpu_threads, mesh


def _rowwise(x):
  return {"y": jnp.sin(x["a"]) * x["b"][:, None], "s": x["a"].sum(1)}


def test_map_runs_pads_and_unpads_to_the_rows_given():
  rows = {"a": np.arange(13 * 3, dtype=np.float32).reshape(13, 3), "b": np.arange(13, dtype=np.float32)}
  full = mesh.map_runs(_rowwise, rows)
  assert jax.device_count() == 8 and full["y"].shape == (13, 3)
  one = mesh.map_runs(_rowwise, rows, jax.sharding.Mesh(np.array(jax.devices()[:1]), (mesh.AXIS,)))
  expected = jax.jit(_rowwise)(rows)
  for out in (full, one):
    np.testing.assert_allclose(out["y"], expected["y"], rtol=1e-6)
    np.testing.assert_allclose(out["s"], expected["s"], rtol=1e-6)


def test_pad_rows_repeats_the_first_row():
  padded = mesh.pad_rows({"a": np.array([[1, 2], [3, 4], [5, 6]])}, 5)
  np.testing.assert_array_equal(padded["a"][3:], [[1, 2], [1, 2]])


def test_training_mesh_fills_the_rest_and_rejects_bad_shapes():
  import pytest
  m = mesh.training_mesh({"data": 2, "fsdp": -1, "tensor": 2})
  assert dict(m.shape) == {"data": 2, "fsdp": 2, "tensor": 2}
  assert dict(mesh.training_mesh().shape) == {"data": 1, "fsdp": 8, "tensor": 1}
  for bad in ({"data": 3, "fsdp": -1, "tensor": 1}, {"data": 2, "fsdp": 2, "tensor": 1},
              {"data": -1, "fsdp": -1, "tensor": 1}, {"data": 1, "fsdp": 8, "pipeline": 1}):
    with pytest.raises(ValueError, match="mesh"):
      mesh.training_mesh(bad)


def test_logical_names_map_to_mesh_axes_once_per_array():
  P = jax.sharding.PartitionSpec
  assert mesh.spec_of(("embed", "mlp")) == P("fsdp", "tensor")
  assert mesh.spec_of(("embed", "embed")) == P("fsdp", None)   # a mesh axis shards one dimension
  assert mesh.spec_of(("batch", "length", "embed")) == P(("data", "fsdp"), None, None)


def test_fitted_spec_leaves_out_axes_that_do_not_fit_and_batches_split_over_data_and_fsdp():
  P = jax.sharding.PartitionSpec
  shape = {"data": 2, "fsdp": 4, "tensor": 1}
  assert mesh.fitted_spec(("embed", "mlp"), (64, 96), shape) == P("fsdp", "tensor")
  assert mesh.fitted_spec(("embed", "mlp"), (6, 96), shape) == P(None, "tensor")    # 6 % 4
  assert mesh.fitted_spec(("batch", "length"), (4, 9), shape) == P("data", None)   # 4 rows: data only
  assert mesh.fitted_spec(("embed",), (64,), {"runs": 8}) == P(None)               # no such axis
  m = mesh.training_mesh({"data": 2, "fsdp": 4, "tensor": 1})
  rows = mesh.shard_batch(np.arange(16 * 3).reshape(16, 3), m)
  assert rows.sharding.spec == P(("data", "fsdp"), None) and rows.addressable_shards[0].data.shape == (2, 3)
  with jax.set_mesh(m):
    odd = jax.jit(lambda x: mesh.constrain(x * 2, "batch", "length"))(np.ones((3, 5)))
  np.testing.assert_array_equal(odd, 2 * np.ones((3, 5)))


def test_forced_cpu_devices_get_threads_of_their_own_unless_nproc_is_set():
  flags = "--xla_force_host_platform_device_count=2 --xla_cpu_enable_fast_math=false" \
          " --xla_force_host_platform_device_count=8"
  assert cpu_threads.forced_devices(flags) == 8 and cpu_threads.forced_devices("") == 1
  env = {"XLA_FLAGS": flags}
  cpu_threads.ensure(env)
  assert int(env["NPROC"]) >= cpu_threads.THREADS_PER_DEVICE * 8
  mine = {"XLA_FLAGS": flags, "NPROC": "3"}
  cpu_threads.ensure(mine)
  assert mine["NPROC"] == "3"
  one = {"XLA_FLAGS": "--xla_force_host_platform_device_count=1"}
  cpu_threads.ensure(one)
  assert "NPROC" not in one


def test_this_session_runs_its_forced_devices_on_a_pool_that_has_room_for_them():
  # conftest sized the pool (NPROC); XLA names the CPU client's pool threads "tf_XLAEigen".
  jax.devices()
  names = [p.read_text().strip() for p in Path("/proc/self/task").glob("*/comm")]
  assert sum(n == "tf_XLAEigen" for n in names) >= cpu_threads.THREADS_PER_DEVICE * jax.device_count()


def _rowwise_sum(x):
  return {"s": jnp.tanh(x["a"]).sum(1) * x["b"], "y": jnp.cumsum(x["a"], 1)}


def test_map_runs_compiles_once_for_sweeps_of_sizes_in_one_bucket_and_its_result_does_not_depend_on_the_calls(
    monkeypatch):
  rng = np.random.default_rng(0)
  rows = {"a": rng.normal(size=(300, 5)).astype(np.float32), "b": rng.normal(size=300).astype(np.float32)}
  program = mesh._compiled(_rowwise_sum, mesh.make_mesh(), 4)
  for n in (33, 50, 64):                   # 2 blocks of 4 rows per device on 8 devices
    mesh.map_runs(_rowwise_sum, jax.tree.map(lambda x: x[:n], rows), block=4)
  assert mesh.call_blocks(33, mesh.make_mesh(), 4) == [2] and program._cache_size() == 1
  whole = mesh.map_runs(_rowwise_sum, rows, block=4)
  monkeypatch.setattr(mesh, "MAX_BLOCKS", 2)    # the same rows through five calls of 64
  assert mesh.call_blocks(300, mesh.make_mesh(), 4) == [2] * 5
  split = mesh.map_runs(_rowwise_sum, rows, block=4)
  one = mesh.map_runs(_rowwise_sum, rows, jax.sharding.Mesh(np.array(jax.devices()[:1]), (mesh.AXIS,)), block=4)
  for out in (split, one):
    for k in whole:
      np.testing.assert_array_equal(out[k], whole[k])
  # NumPy sums in another order.
  np.testing.assert_allclose(whole["s"], np.tanh(rows["a"]).sum(1) * rows["b"], rtol=1e-5, atol=1e-6)


def test_call_blocks_are_powers_of_two_up_to_the_cap():
  m = mesh.make_mesh()
  assert mesh.call_blocks(1, m, 32) == [2]
  assert mesh.call_blocks(8 * 32 * 5, m, 32) == [8]
  assert mesh.call_blocks(8 * 32 * (2 * mesh.MAX_BLOCKS + 3), m, 32) == [mesh.MAX_BLOCKS] * 2 + [4]
