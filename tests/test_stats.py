import numpy as np
import pytest
from scipy import stats as sps

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


def test_stratified_resamples_keep_each_unit_in_its_stratum():
  strata = np.array([0, 1, 1, 0, 1, 2])
  idx = stats.resample_indices(6, 500, seed=3, strata=strata)
  assert idx.shape == (500, 6)
  np.testing.assert_array_equal(strata[idx], np.broadcast_to(strata, idx.shape))
  # Every member of a stratum is drawn somewhere, the lone member always.
  assert set(idx[:, [1, 2, 4]].ravel()) == {1, 2, 4} and set(idx[:, 5]) == {5}
  np.testing.assert_array_equal(idx, stats.resample_indices(6, 500, seed=3, strata=strata))
  # Without strata: the draws every bootstrap here has always made.
  np.testing.assert_array_equal(stats.resample_indices(6, 50, seed=3),
                                np.random.default_rng(3).integers(0, 6, size=(50, 6)))
  with pytest.raises(ValueError, match="one label per unit"):
    stats.resample_indices(6, 5, strata=[0, 1])


def test_stratified_claim_interval_resamples_groups_apart():
  a, b = np.full(30, 1.0), np.r_[np.zeros(10), np.ones(10)]    # group b's mean varies, group a's never
  units, label = np.r_[a, b], np.r_[np.zeros(30), np.ones(20)]
  margin = lambda idx: units[idx[..., label == 0]].mean(-1) - units[idx[..., label == 1]].mean(-1)
  out = stats.bootstrap_claim(margin, 50, 2000, seed=0, strata=label)
  assert out["diff"] == pytest.approx(0.5) and 0.2 < out["ci"][0] < 0.5 < out["ci"][1] < 0.8


def test_nested_bootstrap_counts_the_spread_between_seeds():
  rng = np.random.default_rng(0)
  units = rng.normal(scale=0.5, size=200)                    # each question's own difficulty
  mean = lambda d: (lambda s, u: d[s[..., :, None], u[..., None, :]].mean(axis=(-2, -1)))
  alike = units[None] + rng.normal(scale=0.01, size=(4, 200))
  apart = units[None] + np.array([-1.0, -0.5, 0.5, 1.0])[:, None]   # seeds that disagree
  a, b = (stats.nested_bootstrap(mean(d), 4, 200, 2_000) for d in (alike, apart))
  assert a["diff"] == pytest.approx(alike.mean()) and a["n_seeds"] == 4 and a["n"] == 200
  # With seeds alike the interval is the questions' own; seeds that disagree widen it.
  per_question = stats.bootstrap_claim(lambda idx: alike.mean(0)[idx].mean(-1), 200, 2_000)
  width = lambda r: r["ci"][1] - r["ci"][0]
  assert width(a) == pytest.approx(width(per_question), rel=0.25)
  assert width(b) > 4 * width(a)
  assert b == stats.nested_bootstrap(mean(apart), 4, 200, 2_000)
  assert stats.nested_bootstrap(mean(alike[:1]), 1, 200)["ci"] is None
  # Seeds that disagree make the interval Student t's at 4 seeds, wider than the percentile's.
  plain = stats.nested_bootstrap(mean(apart), 4, 200, 2_000, method="percentile")
  assert width(b) > 1.3 * width(plain)


@pytest.mark.parametrize("n", [stats.MIN_UNITS, 8, 10, 30])
def test_the_claim_interval_covers_95_percent(n):
  """Zero-effect samples (NumPy only, fixed seed): the expanded interval covers 0 about 95% of the
  time from MIN_UNITS units up, where the plain percentile interval falls short."""
  c = stats.coverages(n, ("expanded", "percentile"), sims=2000, n_resamples=1000, seed=0)
  assert 0.93 <= c["expanded"] <= 0.97
  if n <= 10:
    assert c["percentile"] < 0.92


def test_coverage_of_one_method_and_bad_names():
  assert stats.coverage("t", 8, sims=500, n_resamples=10) == stats.coverages(8, ("t",), sims=500, n_resamples=10)["t"]
  with pytest.raises(ValueError, match="unknown method"):
    stats.coverage("studentized", 8)
  with pytest.raises(ValueError, match="unknown interval method"):
    stats.bootstrap_claim(lambda i: np.mean(i, -1), 8, 100, method="bca")


@pytest.mark.parametrize("n, shift, seed", [(8, 0.3, 1), (10, 0.5, 0), (30, -0.3, 0), (12, 0.0, 1), (9, 1.0, 2)])
def test_p_value_agrees_with_the_interval(n, shift, seed):
  """The 1 - a interval excludes 0 exactly when p < a, for every a, where resamples reach zero."""
  x = np.random.default_rng(seed).normal(shift, 1.0, n)
  margin = lambda idx: x[idx].mean(-1)
  p = stats.bootstrap_claim(margin, n, 2000, seed=seed)["p"]
  assert 0 < p <= 1
  for a in np.geomspace(1e-3, 0.9, 60):
    lo, hi = stats.bootstrap_claim(margin, n, 2000, seed=seed, confidence=1 - a)["ci"]
    assert (lo > 0 or hi < 0) == (p < a), (a, p, lo, hi)


def test_p_value_beyond_every_resample_is_the_t_test():
  """With no resample across zero the p-value comes from a normal fitted to the resamples, which
  for a mean is Student's t-test."""
  x = np.random.default_rng(0).normal(3.0, 1.0, 8)
  out = stats.bootstrap_claim(lambda idx: x[idx].mean(-1), 8, 10_000)
  assert out["ci"][0] > 0
  assert out["p"] == pytest.approx(sps.ttest_1samp(x, 0).pvalue, rel=0.1)
  flat = stats.bootstrap_claim(lambda idx: np.full(np.shape(idx)[:-1], 0.5), 8, 100)
  zero = stats.bootstrap_claim(lambda idx: np.zeros(np.shape(idx)[:-1]), 8, 100)
  assert (flat["p"], zero["p"]) == (0.0, 1.0)


def test_paired_bootstrap_matches_the_claim_interval():
  rng = np.random.default_rng(4)
  a, b = rng.normal(0.2, 1, 12), rng.normal(0, 1, 12)
  paired = stats.paired_bootstrap(a, b, 3000, seed=5)
  claim = stats.bootstrap_claim(lambda i: a[i].mean(-1) - b[i].mean(-1), 12, 3000, seed=5)
  assert paired["ci"] == pytest.approx(claim["ci"]) and paired["p"] == pytest.approx(claim["p"])
  assert stats.paired_bootstrap([1.0], [0.0])["ci"] is None


def test_holm_against_a_hand_worked_example():
  # m = 5, alpha = 0.05. Sorted: 0.001 <= 0.01, 0.008 <= 0.0125, 0.012 <= 0.0167, then 0.04 > 0.025
  # stops, so 0.041 is kept too although it is below its own threshold of 0.05.
  p = [0.04, 0.001, 0.041, 0.012, 0.008]
  np.testing.assert_array_equal(stats.holm(p, 0.05), [False, True, False, True, True])
  # Bonferroni would keep only 0.02 of the first pair; Holm compares the second with alpha itself.
  np.testing.assert_array_equal(stats.holm([0.03, 0.02], 0.05), [True, True])
  np.testing.assert_array_equal(stats.holm([0.03, 0.04], 0.05), [False, False])
  assert stats.holm([], 0.05).shape == (0,)
  with pytest.raises(ValueError, match="p = 1"):
    stats.holm([0.01, float("nan")])
