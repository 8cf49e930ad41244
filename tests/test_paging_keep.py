"""The state a fine-tuned system answers with (`train.keep`): the best validation F1 or the last
step's, from the same checkpoints, which either rule reads back."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxlab.core import mesh as mesh_lib
from jaxlab.paging import train
from jaxlab.paging.spec import TrainSpec, kept


def _spec(keep: str) -> TrainSpec:
  return TrainSpec(epochs=1, steps=6, batch_size=1, questions_per_row=1, eval_every=2, learning_rate=0.1,
                   warmup_steps=1, weight_decay=0.0, clip_norm=1.0, seed=0, keep=keep)


def _fine_tune(workdir, keep: str, restore_only: bool = False):
  """Six steps of a linear map toward 1, evaluated every two with a validation F1 that peaks at
  step 2 (0.9) and ends lower (0.4 at step 6)."""
  graphdef, params = nnx.split(nnx.Linear(2, 1, rngs=nnx.Rngs(0)))
  lm = nnx.Linear(1, 1, rngs=nnx.Rngs(1))   # the frozen part the loss may read; this one ignores it

  def loss_fn(params, graphdef, lm_graphdef, lm_state, batch, key, suff_weight):
    return jnp.mean((nnx.merge(graphdef, params)(batch["x"]) - 1.0) ** 2)

  scripted = iter([0.9, 0.5, 0.4])
  return train.fine_tune(_spec(keep), workdir, lm, graphdef, params, rows=4,
                         batch_of=lambda rows: {"x": np.ones((len(rows), 2), np.float32)}, loss_fn=loss_fn,
                         val_loss=lambda p: 0.0, val_f1=lambda p: next(scripted), mesh=mesh_lib.training_mesh(
                             devices=jax.devices()[:1]), fingerprint="fp", restore_only=restore_only)


def _kernel(params) -> np.ndarray:
  return np.asarray(params["kernel"][...])


def test_keep_answers_with_the_best_f1_or_the_last_step(tmp_path):
  best, history = _fine_tune(tmp_path / "f1", "val_f1")
  last, history_last = _fine_tune(tmp_path / "last", "last")
  assert history == history_last and [r["step"] for r in history] == [2, 4, 6]
  assert kept(history)["step"] == 2 and kept(history, "last")["step"] == 6
  assert not np.array_equal(_kernel(best), _kernel(last))
  # Either rule reads either finished run back: the same checkpoints, the state its rule names.
  for workdir in ("f1", "last"):
    np.testing.assert_array_equal(_kernel(_fine_tune(tmp_path / workdir, "val_f1", restore_only=True)[0]),
                                  _kernel(best))
    np.testing.assert_array_equal(_kernel(_fine_tune(tmp_path / workdir, "last", restore_only=True)[0]),
                                  _kernel(last))


def test_keep_stays_out_of_the_checkpoints_fingerprint():
  from configs import latent_pager
  config = latent_pager.get_config("smoke")
  before = train.fingerprint(config, train.FINGERPRINT_FIELDS)
  with config.unlocked():
    config.train.keep = "last"
  assert train.fingerprint(config, train.FINGERPRINT_FIELDS) == before
  with config.unlocked():
    config.train.learning_rate *= 2
  assert train.fingerprint(config, train.FINGERPRINT_FIELDS) != before


@pytest.mark.parametrize("history, keep, step", [
    ([{"step": 0, "val_f1": 0.3}, {"step": 5, "val_f1": 0.3}], "val_f1", 0),   # ties: the earlier step
    ([{"step": 5, "val_f1": 0.1}, {"step": 0, "val_f1": 0.3}], "last", 5),
])
def test_kept_record(history, keep, step):
  assert kept(history, keep)["step"] == step
