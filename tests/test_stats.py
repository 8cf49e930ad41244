import numpy as np
import pytest

from jaxlab.core import stats


def test_describe_uses_sample_sd():
  d = stats.describe([1.0, 2.0, 3.0, 4.0])
  assert d == {"mean": 2.5, "sd": pytest.approx(np.std([1, 2, 3, 4], ddof=1)), "n": 4}
  assert stats.describe([5.0])["sd"] is None


def test_wilson_known_values():
  lo, hi = stats.wilson(np.array([1, 14, 0]), np.array([1, 20, 0]))
  np.testing.assert_allclose(lo, [0.2065, 0.4810, 0.0], atol=5e-4)
  assert float(hi[0]) == pytest.approx(1.0) and float(hi[2]) == 1.0
  assert np.all(np.asarray(lo) <= np.asarray(hi))
  lo, hi = stats.wilson(np.array([0, 7]), np.array([7, 7]))
  assert float(lo[0]) == 0.0 and float(hi[1]) == 1.0   # exact, not a few ulp off


def test_paired_bootstrap_detects_shift_and_is_deterministic():
  rng = np.random.default_rng(0)
  a = rng.normal(size=40)
  same = stats.paired_bootstrap(a, a)
  assert same["diff"] == 0 and same["p"] == 1.0
  b = a + rng.normal(scale=0.1, size=40)
  shifted = stats.paired_bootstrap(a + 1.0, b)
  assert shifted["p"] < 0.01 and shifted["ci"][0] > 0.5
  assert shifted == stats.paired_bootstrap(a + 1.0, b)


def test_paired_bootstrap_rejects_unpaired():
  with pytest.raises(ValueError):
    stats.paired_bootstrap(np.ones(3), np.ones(4))
