"""The grading standard: every branch of figure comparisons and claim verdicts, on hand-made inputs."""

import math

import numpy as np
import pytest

from jaxlab.core import report, stats


def ours(mean, sd, n):
  return {"mean": mean, "sd": sd, "n": n}


@pytest.mark.parametrize("text, step", [("0.9370", 1e-4), ("6.6024e-03", 1e-7), ("48", 1.0), (0.616, 1e-3),
                                         ("110.06", 1e-2)])
def test_printed_resolution(text, step):
  assert math.isclose(report.printed_resolution(text), step)


def test_compare_with_both_spreads_grades_by_z():
  row = report.compare("f", ("0.500", "0.100"), ours(0.55, 0.1, 8), n_published=8)
  assert row["method"] == report.Z_BOTH and row["verdict"] == "consistent"
  assert math.isclose(row["z"], 0.05 / math.sqrt(0.01 / 8 + 0.01 / 8))
  row = report.compare("f", ("0.500", "0.010"), ours(0.53, 0.01, 8), n_published=8)
  assert row["z"] > 2 and row["verdict"] == "within 10%"
  row = report.compare("f", ("0.500", "0.010"), ours(0.60, 0.01, 8), n_published=8)
  assert row["verdict"] == "differs"


def test_a_gap_within_the_published_rounding_is_consistent_even_at_large_z():
  row = report.compare("f", ("0.62", "0.0001"), ours(0.6249, 0.0001, 50), n_published=50)
  assert row["z"] > 2 and row["verdict"] == "consistent"


def test_published_spread_unknown_uses_our_standard_error_alone():
  row = report.compare("f", ("1.00", None), ours(1.05, 0.1, 4), n_published=None)
  assert row["method"] == report.Z_OURS and math.isclose(row["z"], 0.05 / (0.1 / 2))
  assert row["verdict"] == "consistent"
  row = report.compare("f", ("1.00", "0.2"), ours(1.05, 0.1, 4), n_published=None)
  assert row["method"] == report.Z_OURS_N and math.isclose(row["z"], 1.0)


@pytest.mark.parametrize("published, our, n_pub", [
    (("0.250", "0.05"), ours(0.31, 0.0, 8), 8),     # our spread is zero
    (("0.250", "0.05"), ours(0.31, None, 1), 8),    # we have one run
    (("0.250", "0"), ours(0.31, 0.02, 8), 8),       # published spread is zero
    (("0.250", "0.05"), ours(0.31, 0.02, 8), 1),    # published has one run
    (("0.250", None), ours(0.31, 0.0, 8), None),    # no spread on either side
    (("0.250", None), ours(0.31, 0.02, 8), 1),      # published is one run, printed without a spread
])
def test_zero_spread_or_one_run_is_graded_on_rounding_without_z(published, our, n_pub):
  row = report.compare("f", published, our, n_published=n_pub)
  assert row["method"] == report.ROUNDING and row["z"] is None and row["verdict"] == "differs"
  close = report.compare("f", published, dict(our, mean=0.2504), n_published=n_pub)
  assert close["verdict"] == "consistent"
  near = report.compare("f", published, dict(our, mean=0.26), n_published=n_pub)
  assert near["verdict"] == "within 10%"


def test_flat_figures_do_not_give_huge_z():
  row = report.compare("mean_coord_loss", ("0.6311", "0.0000"), ours(0.63110001, 1e-12, 8), n_published=8)
  assert row["z"] is None and row["verdict"] == "consistent"


def test_a_zero_published_mean_has_infinite_relative_gap():
  row = report.compare("f", ("0.0", None), ours(0.5, 0.0, 3))
  assert row["rel_diff"] == math.inf and row["verdict"] == "differs"


@pytest.mark.parametrize("interval, verdict", [
    ({"diff": 0.2, "ci": [0.05, 0.4], "n": 8}, "holds"),
    ({"diff": -0.2, "ci": [-0.4, -0.01], "n": 8}, "does not hold"),
    ({"diff": 0.02, "ci": [-0.01, 0.06], "n": 8}, "same direction, not resolved at n=8"),
    ({"diff": -0.02, "ci": [-0.06, 0.01], "n": 8}, "opposite direction, not resolved at n=8"),
    ({"diff": 0.0, "ci": [0.0, 0.0], "n": 8}, "opposite direction, not resolved at n=8"),
    ({"diff": 0.3, "ci": None, "n": 1}, "same direction, not resolved at n=1"),
    (None, "not resolved at n=1"),
])
def test_claim_verdicts(interval, verdict):
  assert report.claim("c", "p", "o", interval)["verdict"] == verdict


def test_claims_true_by_construction_are_marked_and_not_counted():
  rows = [report.claim("a", "p", "o", {"diff": 1.0, "ci": [0.5, 1.5], "n": 8}),
          report.claim("b", "p", "o", {"diff": 0.1, "ci": [-0.1, 0.3], "n": 8}),
          report.claim("c", "p", "o", {"diff": -0.1, "ci": [-0.3, 0.1], "n": 8}),
          report.claim("d", "p", "o", {"diff": -1.0, "ci": [-1.5, -0.5], "n": 8}),
          report.claim("e", "p", "o", None, by_construction=True)]
  assert rows[-1]["verdict"] == "by construction" and not rows[-1]["counted"]
  n = report.claim_counts(rows)
  assert (n["holds"], n["same direction, not resolved"], n["opposite direction, not resolved"],
          n["does not hold"], n["by construction"], n["counted"]) == (1, 1, 1, 1, 1, 4)
  line = report.claims_line(rows)
  assert line.startswith("1 of 4 graded claims hold, 1 do not hold, 2 are not resolved") and "1 more" in line


def test_figure_counts_split_verdicts_and_methods():
  rows = [report.compare("a", ("1.0", "0.1"), ours(1.0, 0.1, 5), 5),
          report.compare("b", ("1.0", None), ours(2.0, 0.1, 5)),
          report.compare("c", ("1.0", "0.1"), ours(1.08, 0.0, 5), 5)]
  n = report.figure_counts(rows)
  assert (n["consistent"], n["within 10%"], n["differs"]) == (1, 1, 1)
  assert (n[report.Z_BOTH], n[report.Z_OURS], n[report.ROUNDING]) == (1, 1, 1)
  heading, text = report.comparisons_section(rows)
  assert text.startswith("1 of 3 published figures are consistent with ours, 1 more are within 10%, 1 differ.")


def test_bootstrap_claim_intervals():
  rng = np.random.default_rng(0)
  a, b = rng.normal(1.0, 0.1, 20), rng.normal(0.0, 0.1, 20)
  margin = lambda i: a[i].mean(-1) - b[i].mean(-1)
  big = stats.bootstrap_claim(margin, 20, n_resamples=2000)
  assert big["ci"][0] > 0.8 and big["n"] == 20 and math.isclose(big["diff"], a.mean() - b.mean())
  # A margin written for one index set at a time gives the same interval, resample by resample.
  scalar = stats.bootstrap_claim(lambda i: float(np.mean(a[np.asarray(i)]) - np.mean(b[np.asarray(i)]))
                                 if np.ndim(i) == 1 else (_ for _ in ()).throw(ValueError()), 20, n_resamples=2000)
  assert np.allclose(scalar["ci"], big["ci"])
  noise = stats.bootstrap_claim(lambda i: a[i].mean(-1) - a[::-1][i].mean(-1), 20, n_resamples=2000)
  assert noise["ci"][0] < 0 < noise["ci"][1]
  flat = stats.bootstrap_claim(lambda i: np.ones(np.shape(i)).mean(-1) * 0.25, 8, n_resamples=500)
  assert flat["ci"] == [0.25, 0.25] and report.claim("c", "p", "o", flat)["verdict"] == "holds"
  assert stats.bootstrap_claim(lambda i: 0.3, 1)["ci"] is None
  assert stats.bootstrap_claim(margin, 20, n_resamples=500, seed=3) == stats.bootstrap_claim(margin, 20, n_resamples=500, seed=3)


def test_float_noise_spread_counts_as_zero():
  row = report.compare("mean_coord_loss", ("0.6311", None), ours(0.6320, 3e-13, 8))
  assert row["method"] == report.ROUNDING and row["z"] is None and row["verdict"] == "within 10%"


def test_a_bool_is_not_a_claims_interval():
  with pytest.raises(TypeError, match="not a bool"):
    report.claim("c", "p", "o", True)
