"""core.checkpoint.scan_chunked: chunked, sharded scans resume from a saved chunk bit for bit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlab.core import checkpoint, mesh


def _step(state, t):
  """A noisy random walk per row with a bool and an int leaf, so every dtype round-trips."""
  def one(s):
    key = jax.random.fold_in(jax.random.wrap_key_data(s["key"]), t)
    x = s["x"] * 0.9 + jax.random.normal(key, s["x"].shape)
    return {"key": s["key"], "x": x, "up": x.sum() > 0, "n": s["n"] + (x.sum() > 0)}, {"x": x.sum(), "t": t}
  return jax.vmap(one)(state)


def _state(rows=5):
  keys = jax.vmap(lambda i: jax.random.key_data(jax.random.fold_in(jax.random.key(0), i)))(jnp.arange(rows))
  return {"key": np.asarray(keys), "x": np.zeros((rows, 3), np.float32), "up": np.zeros(rows, bool),
          "n": np.zeros(rows, np.int32)}


@pytest.fixture(scope="module")
def devices():
  return mesh.make_mesh()


def test_scan_chunked_matches_a_plain_scan(tmp_path, devices):
  state, out = checkpoint.scan_chunked(_step, _state(), 7, 3, tmp_path, key="a", mesh=devices, block=2)
  ref_state, ref_out = jax.lax.scan(_step, jax.tree.map(jnp.asarray, _state()), jnp.arange(7))
  assert out["x"].shape == (5, 7)
  np.testing.assert_array_equal(out["t"], np.tile(np.arange(7), (5, 1)))
  np.testing.assert_allclose(out["x"], np.asarray(ref_out["x"]).T, rtol=1e-5, atol=1e-5)
  np.testing.assert_array_equal(state["n"], np.asarray(ref_state["n"]))
  assert state["up"].dtype == bool


def test_a_restart_from_a_saved_chunk_is_bitwise_identical(tmp_path, devices):
  whole = checkpoint.scan_chunked(_step, _state(), 7, 3, tmp_path / "whole", key="a", mesh=devices, block=2)
  first = checkpoint.scan_chunked(_step, _state(), 7, 3, tmp_path / "cut", key="a", mesh=devices, block=2,
                                  stop_after=1)
  assert first is None                                         # interrupted after one chunk
  resumed = checkpoint.scan_chunked(_step, _state(), 7, 3, tmp_path / "cut", key="a", mesh=devices, block=2)
  for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(resumed)):
    np.testing.assert_array_equal(a, b)
  lines = (tmp_path / "cut" / "progress.jsonl").read_text().splitlines()
  assert len(lines) == 3                                       # chunks 1, then 2 and 3 on resume
  with pytest.raises(RuntimeError, match="another sweep"):
    checkpoint.scan_chunked(_step, _state(), 7, 3, tmp_path / "cut", key="b", mesh=devices, block=2)
