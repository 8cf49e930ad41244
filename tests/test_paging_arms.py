"""The latent-pager arms with equal adaptation: mean-pooled pages (`mean`).

The mean pages against a hand computation; the variant is `cpu` with its one change; then a
`smoke` comparison with the `mean` pager on the tiny random Qwen3 of test_latent_pager.py.
"""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxlab.core import config as config_lib
from jaxlab.paging import experiment
from jaxlab.paging.encoders import MeanEncoder
from tests.test_latent_pager import _load, tiny_lm  # noqa: F401 (tiny_lm is a fixture)


def test_mean_pages_are_the_window_means_of_the_states_projected():
  enc = MeanEncoder(2, 8, slots=3, embed_rms=0.7, rngs=nnx.Rngs(0))
  states = jax.random.normal(jax.random.key(1), (4, 7, 2, 8))   # (chunks, C, L, D)
  lengths = [7, 5, 2, 0]   # the last chunk is padding only (a padded page)
  mask = jnp.asarray(np.arange(7)[None] < np.array(lengths)[:, None])
  out = np.asarray(enc(states, mask))
  assert out.shape == (4, 3, 8)
  # Windows [j n / 3, (j + 1) n / 3); a chunk of 2 tokens gives its first token to two windows.
  windows = {7: [[0, 1], [2, 3], [4, 5, 6]], 5: [[0], [1, 2], [3, 4]], 2: [[0], [0], [1]]}
  x = np.asarray(states).reshape(4, 7, 16)   # each token's layers side by side
  kernel, bias = np.asarray(enc.proj.kernel[...]), np.asarray(enc.proj.bias[...])
  for i, n in enumerate(lengths[:3]):
    page = np.stack([x[i, w].mean(0) for w in windows[n]]) @ kernel + bias
    page = page / np.sqrt(np.mean(page ** 2, -1, keepdims=True) + 1e-6) * 0.7
    np.testing.assert_allclose(out[i], page, rtol=1e-5, atol=1e-6)
  assert np.all(np.isfinite(out[3]))
  # Padding changes nothing; a real token changes its own window's page only.
  np.testing.assert_array_equal(np.asarray(enc(states.at[1, 5:].set(9.0), mask)), out)
  moved = np.asarray(enc(states.at[0, 3].set(9.0), mask))[0]
  assert np.array_equal(moved[[0, 2]], out[0, [0, 2]]) and not np.allclose(moved[1], out[0, 1])


def test_each_arm_is_cpu_with_its_one_change():
  cpu = config_lib.load("configs/latent_pager.py:cpu", [], experiment.validate)
  arms = {"cpu_mean": {"pager.encoder": "mean", "pager.init": ""}}
  for variant, change in arms.items():
    arm = config_lib.load(f"configs/latent_pager.py:{variant}", [], experiment.validate)
    assert config_lib.differences(cpu, arm) == sorted([*change, "variant"]), variant
    assert {f: config_lib.get(arm, f) for f in change} == change


@pytest.fixture(scope="module")
def mean_run(tiny_lm, tmp_path_factory):
  """A `smoke` comparison with the `mean` pager (with the smoke's pager bridge, as `cpu_mean`)."""
  workdir = tmp_path_factory.mktemp("arms") / "mean"
  config = _load("smoke", tiny_lm, workdir, "--config.pager.encoder=mean", "--config.pager.init=")
  experiment.run(config, workdir)
  return {"config": config, "workdir": workdir}


def _rows(workdir, name="predictions.jsonl"):
  return [json.loads(line) for line in (workdir / name).read_text().splitlines()]


def test_mean_pager_compares_end_to_end(mean_run):
  workdir = mean_run["workdir"]
  summary = json.loads((workdir / "summary.json").read_text())
  assert summary["headline"]["pager_encoder"] == "mean" and summary["headline"]["slots_per_chunk"] == 2
  history = json.loads((workdir / "history.json").read_text())
  # Nothing pretrained, so no step 0 to keep: the first evaluation follows training.
  assert [h["step"] for h in history] == [2, 4, 6] and all(np.isfinite(h["val_loss"]) for h in history)
  assert all(r["answers"]["latent_pager"] is not None for r in _rows(workdir))
