import jax
import numpy as np
import pytest

from jaxlab.core import random


@pytest.mark.parametrize("shape", [0.4, 1.0, 1.7, 20.0])
def test_gamma_moments(shape):
  a = np.full((200_000,), shape, np.float32)
  x = np.asarray(jax.jit(random.gamma)(jax.random.key(0), a))
  assert np.all(x > 0)
  se = np.sqrt(shape / x.size)
  assert abs(x.mean() - shape) < 5 * se
  assert abs(x.var() - shape) < 0.05 * shape


def test_dirichlet_rows_sum_to_one_with_right_mean():
  alpha = np.array([20.0, 0.4, 0.4, 1.0], np.float32)
  x = np.asarray(random.dirichlet(jax.random.key(1), alpha, (50_000,)))
  np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-5)
  np.testing.assert_allclose(x.mean(0), alpha / alpha.sum(), atol=3e-3)
