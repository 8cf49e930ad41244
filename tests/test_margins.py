"""core.margins: each claim shape on hand-made cells, and the pairing that one index set gives."""

import numpy as np
import pytest

from jaxlab.core import margins, report

ALL = np.arange(4)


def test_shapes_on_known_means():
  cells = np.array([[1.0, 1.0, 1.0, 1.0], [3.0, 3.0, 5.0, 5.0], [2.0, 2.0, 2.0, 2.0]])   # means 1, 4, 2
  assert margins.peak(cells, 1)(ALL) == 2.0                   # 4 - best other (2)
  assert margins.peak(cells, 2)(ALL) == -2.0                  # 2 - 4
  assert margins.trough(cells, 0)(ALL) == 1.0                 # worst other (2) - 1
  assert margins.every(cells - 1.5)(ALL) == -0.5              # the smallest cell decides
  assert margins.difference(cells[1], cells[0])(ALL) == 3.0
  assert margins.both(margins.peak(cells, 1), margins.trough(cells, 0))(ALL) == 1.0


@pytest.mark.parametrize("k, expected", [(3, -1.0), (2, 1.0), (1, -2.0), (0, -4.0)])
def test_count_is_the_distance_to_k_of_n(k, expected):
  cells = np.array([[4.0] * 4, [2.0] * 4, [-1.0] * 4])        # two cells above zero, one below
  assert margins.count(cells, k)(ALL) == expected


def test_resampled_indices_give_one_margin_per_resample():
  cells = np.random.default_rng(0).normal(size=(3, 10))
  idx = np.random.default_rng(1).integers(0, 10, size=(7, 10))
  batched = margins.peak(cells, 0)(idx)
  assert batched.shape == (7,)
  np.testing.assert_allclose(batched, [margins.peak(cells, 0)(i) for i in idx])


def test_cells_sharing_seeds_are_paired():
  """A small effect on top of a large per-seed common term: resolved when seeds pair the cells."""
  rng = np.random.default_rng(0)
  common = rng.normal(0, 10, 30)
  a, b = common + 0.5 + rng.normal(0, 0.1, 30), common + rng.normal(0, 0.1, 30)
  paired = margins.interval(margins.difference(a, b), 30, n_resamples=2000)
  assert report.claim_verdict(paired) == "holds"
  shuffled = margins.interval(margins.difference(a, rng.permutation(b)), 30, n_resamples=2000)
  assert shuffled["ci"][0] < 0 < shuffled["ci"][1]


def test_bad_shapes_are_errors():
  with pytest.raises(ValueError, match="two cells"):
    margins.peak(np.ones((1, 4)), 0)
  with pytest.raises(ValueError, match=r"\(cells, units\)"):
    margins.every(np.ones(4))
  with pytest.raises(ValueError, match="k must be"):
    margins.count(np.ones((2, 4)), 3)
  with pytest.raises(ValueError, match="paired difference"):
    margins.difference(np.ones(4), np.ones(5))
