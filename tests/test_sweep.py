"""core.sweep.scan_chunked: chunked, sharded scans resume from a saved chunk bit for bit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from jaxlab.core import checkpoint, mesh, sweep, train


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
  state, out = sweep.scan_chunked(_step, _state(), 7, 3, tmp_path, key="a", mesh=devices, block=2)
  ref_state, ref_out = jax.lax.scan(_step, jax.tree.map(jnp.asarray, _state()), jnp.arange(7))
  assert out["x"].shape == (5, 7)
  np.testing.assert_array_equal(out["t"], np.tile(np.arange(7), (5, 1)))
  np.testing.assert_allclose(out["x"], np.asarray(ref_out["x"]).T, rtol=1e-5, atol=1e-5)
  np.testing.assert_array_equal(state["n"], np.asarray(ref_state["n"]))
  assert state["up"].dtype == bool


def test_a_restart_from_a_saved_chunk_is_bitwise_identical(tmp_path, devices):
  whole = sweep.scan_chunked(_step, _state(), 7, 3, tmp_path / "whole", key="a", mesh=devices, block=2)
  with pytest.raises(train.Stopped, match="after 3 of 7 steps"):   # interrupted after one chunk
    sweep.scan_chunked(_step, _state(), 7, 3, tmp_path / "cut", key="a", mesh=devices, block=2, stop_after=1)
  resumed = sweep.scan_chunked(_step, _state(), 7, 3, tmp_path / "cut", key="a", mesh=devices, block=2)
  for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(resumed)):
    np.testing.assert_array_equal(a, b)
  lines = (tmp_path / "cut" / "progress.jsonl").read_text().splitlines()
  assert len(lines) == 3                                       # chunks 1, then 2 and 3 on resume
  with pytest.raises(checkpoint.CheckpointMismatch, match="another run"):
    sweep.scan_chunked(_step, _state(), 7, 3, tmp_path / "cut", key="b", mesh=devices, block=2)


@struct.dataclass
class Walk:
  key: jax.Array
  x: jax.Array


def _walk_step(state, t):
  def one(s):
    key = jax.random.fold_in(jax.random.wrap_key_data(s.key), t)
    return Walk(key=s.key, x=s.x + jax.random.normal(key, s.x.shape)), {"x": s.x.sum()}
  return jax.vmap(one)(state)


def test_state_is_saved_by_name_with_json_metadata(tmp_path, devices):
  """A dataclass state resumes into its own type; the folder holds the fingerprint as JSON."""
  s = _state()
  walk = Walk(key=s["key"], x=s["x"])
  whole = sweep.scan_chunked(_walk_step, walk, 5, 2, tmp_path / "whole", key="w", mesh=devices, block=2)
  with pytest.raises(train.Stopped):
    sweep.scan_chunked(_walk_step, walk, 5, 2, tmp_path / "cut", key="w", mesh=devices, block=2, stop_after=2)
  meta = checkpoint.Checkpoints(tmp_path / "cut" / "checkpoints", "w").meta()
  assert (meta["fingerprint"], meta["chunk"], meta["steps"]) == ("w", 2, 4)
  state, out = sweep.scan_chunked(_walk_step, walk, 5, 2, tmp_path / "cut", key="w", mesh=devices, block=2)
  assert isinstance(state, Walk)
  np.testing.assert_array_equal(state.x, whole[0].x)
  np.testing.assert_array_equal(out["x"], whole[1]["x"])
