"""The expansion scorer over pages: what its scores ignore (padding, the order of a chunk's pages),
that it learns to point at a chunk from the question, and its config errors."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from jaxlab.core import config as config_lib
from jaxlab.paging import expansion, experiment


def _scorer(dq=6, d=5, dim=4, seed=0):
  return expansion.Scorer(dq, d, dim, rngs=nnx.Rngs(seed))


@nnx.jit
def _scores(scorer, q, qm, p, pm, key_mask):
  return scorer(q, qm, scorer.keys(p), key_mask, pm)


def _score(scorer, q, qm, p, pm, key_mask=None):
  key_mask = np.broadcast_to(pm[..., None], p.shape[:-1]) if key_mask is None else key_mask
  return np.asarray(_scores(scorer, q, qm, p, pm, key_mask))


def test_scores_ignore_padding_and_the_order_of_a_chunks_pages():
  rng = np.random.default_rng(0)
  scorer = _scorer()
  q = rng.normal(size=(2, 5, 6)).astype(np.float32)
  qm = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
  p = rng.normal(size=(2, 4, 3, 5)).astype(np.float32)
  pm = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], bool)
  base = _score(scorer, q, qm, p, pm)
  assert np.isneginf(base[0, 3]) and np.isfinite(base[0, :3]).all() and np.isfinite(base[1]).all()
  q2, p2 = q.copy(), p.copy()
  q2[0, 3:] = 100.0           # padded question tokens
  p2[0, 3] = -7.0             # a padded chunk
  np.testing.assert_array_equal(_score(scorer, q2, qm, p2, pm), base)
  # The max over a chunk's pages: reordering them changes nothing (exactly: the same products).
  np.testing.assert_array_equal(_score(scorer, q, qm, p[:, :, ::-1], pm), base)
  # A masked key never matches: one chunk's keys, but for its first, masked, score as without it.
  key_mask = np.broadcast_to(pm[..., None], p.shape[:-1]).copy()
  key_mask[1, 2, 0] = False
  alone = _score(scorer, q[1:], qm[1:], p[1:, 2:3, 1:], pm[1:, 2:3])
  np.testing.assert_allclose(_score(scorer, q, qm, p, pm, key_mask)[1, 2], alone[0, 0], rtol=1e-5)
  # A batch row is scored alone (to float32 rounding: another batch size may block the products
  # otherwise).
  np.testing.assert_allclose(_score(scorer, q[1:], qm[1:], p[1:], pm[1:]), base[1:], rtol=1e-5, atol=1e-6)


def test_the_scorer_learns_which_chunk_shares_a_page_with_the_question():
  """Each question holds one page of its target chunk among tokens of a subspace no page fills
  alone (function words, say); after training on such questions, held-out ones point at their
  target."""
  rng = np.random.default_rng(1)
  d, chunks, slots, tokens = 8, 6, 3, 4

  def make(n):
    p = rng.normal(size=(n, chunks, slots, d)).astype(np.float32)
    target = rng.integers(0, chunks, n)
    q = rng.normal(size=(n, tokens, d)).astype(np.float32)
    q[..., d // 2:] = 0.0
    q[np.arange(n), 0] = p[np.arange(n), target, rng.integers(0, slots, n)]
    return {"question": q, "question_mask": np.ones((n, tokens), bool), "pages": p,
            "page_mask": np.ones((n, chunks), bool), "target": np.eye(chunks, dtype=np.float32)[target]}, target

  graphdef, params = nnx.split(_scorer(d, d, 16, seed=2))
  train, _ = make(512)
  tx = optax.adam(3e-2)
  opt = tx.init(params)

  @jax.jit
  def step(params, opt):
    loss, g = jax.value_and_grad(expansion.loss_fn)(params, graphdef, None, None, train)   # page keys: no LM
    updates, opt = tx.update(g, opt, params)
    return optax.apply_updates(params, updates), opt, loss

  first = None
  for _ in range(200):
    params, opt, loss = step(params, opt)
    first = float(loss) if first is None else first
  test, target = make(256)
  picked = np.argmax(_score(nnx.merge(graphdef, params), test["question"], test["question_mask"], test["pages"],
                            test["page_mask"]), axis=1)
  assert float(loss) < 0.25 * first
  assert np.mean(picked == target) > 0.8          # chance: 1/6
  sums, counts = expansion.eval_ce(params, graphdef, None, None, {k: jnp.asarray(v) for k, v in test.items()})
  assert np.all(np.asarray(counts) == 1.0) and np.all(np.asarray(sums) >= 0.0)


def test_expansion_config_errors_name_the_field():
  with pytest.raises(config_lib.ConfigError, match=r"expansion\.question_layers"):
    config_lib.load("configs/latent_pager.py:long", ["--config.expansion.question_layers=()"], experiment.validate)
  with pytest.raises(config_lib.ConfigError, match=r"expansion\.batch_size"):
    config_lib.load("configs/latent_pager.py:long", ["--config.expansion.batch_size=0"], experiment.validate)
  with pytest.raises(config_lib.ConfigError, match=r"references\.readers"):
    config_lib.load("configs/latent_pager.py:smoke", ["--config.mode=references", "--config.references.keep=('',)",
                                                      "--config.references.readers=('expanded',)"], experiment.validate)
  with pytest.raises(config_lib.ConfigError, match=r"expansion\.index"):
    config_lib.load("configs/latent_pager.py:long", ["--config.expansion.index=words"], experiment.validate)
  with pytest.raises(config_lib.ConfigError, match=r"expansion\.key_layers"):     # state keys name their layers
    config_lib.load("configs/latent_pager.py:long", ["--config.expansion.index=states"], experiment.validate)
  with pytest.raises(config_lib.ConfigError, match=r"expansion\.second_layers"):  # so does a learned second hop
    config_lib.load("configs/latent_pager.py:long", ["--config.expansion.second_query=learned"], experiment.validate)
  with pytest.raises(config_lib.ConfigError, match=r"expansion\.second_query"):
    config_lib.load("configs/latent_pager.py:long", ["--config.expansion.second_query=guess"], experiment.validate)
  with pytest.raises(config_lib.ConfigError, match=r"pager\.encoder"):
    config_lib.load("configs/latent_pager.py:long_smoke", ["--config.expansion.index=pages",
                                                           "--config.pager.encoder=pooled", "--config.pager.depth=1"],
                    experiment.validate)
