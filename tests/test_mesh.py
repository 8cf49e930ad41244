import jax
import jax.numpy as jnp
import numpy as np

from jaxlab.core import mesh


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
