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
    ({"diff": 0.3, "ci": None, "n": 40}, "same direction, not resolved at n=40"),
    ({"diff": 0.2, "ci": [0.05, 0.4], "n": stats.MIN_UNITS - 1},
     f"too few seeds to grade, not resolved at n={stats.MIN_UNITS - 1}"),
    ({"diff": 0.2, "ci": [0.05, 0.4], "n": 200, "n_seeds": 4}, "too few seeds to grade, not resolved at n=4"),
    ({"diff": 0.3, "ci": None, "n": 1}, "too few seeds to grade, not resolved at n=1"),
    (None, "too few seeds to grade, not resolved at n=1"),
])
def test_claim_verdicts(interval, verdict):
  row = report.claim("c", "p", "o", interval)
  assert row["verdict"] == verdict and report.verdict_kind(verdict) in report.CLAIM_VERDICTS
  assert row["counted"] == (report.verdict_kind(verdict) != report.TOO_FEW)


def test_claims_true_by_construction_or_on_too_few_seeds_are_marked_and_not_counted():
  rows = [report.claim("a", "p", "o", {"diff": 1.0, "ci": [0.5, 1.5], "n": 8, "p": 0.001}),
          report.claim("b", "p", "o", {"diff": 0.1, "ci": [-0.1, 0.3], "n": 8, "p": 0.3}),
          report.claim("c", "p", "o", {"diff": -0.1, "ci": [-0.3, 0.1], "n": 8, "p": 0.3}),
          report.claim("d", "p", "o", {"diff": -1.0, "ci": [-1.5, -0.5], "n": 8, "p": 0.001}),
          report.claim("e", "p", "o", None, by_construction=True),
          report.claim("f", "p", "o", {"diff": 1.0, "ci": [0.5, 1.5], "n": 3, "p": 0.001})]
  assert rows[4]["verdict"] == "by construction" and not rows[4]["counted"]
  assert report.verdict_kind(rows[5]["verdict"]) == report.TOO_FEW and not rows[5]["counted"]
  n = report.claim_counts(rows)
  assert (n["holds"], n["same direction, not resolved"], n["opposite direction, not resolved"],
          n["does not hold"], n[report.TOO_FEW], n["by construction"], n["counted"]) == (1, 1, 1, 1, 1, 1, 4)
  line = report.claims_line(rows)
  assert line.startswith("1 of 4 graded claims hold (1 after Holm's correction at 5% familywise), 1 do not hold, "
                         "2 are not resolved")
  assert f"1 more have too few seeds to grade (n < {stats.MIN_UNITS})" in line and "1 more are true by" in line


def holm_rows(ps):
  """Claims that hold on their 95% interval, with the given p-values (None: the interval has none)."""
  return [report.claim(f"c{i}", "p", "o", {"diff": 1.0, "ci": [0.1, 2.0], "n": 10, **({} if p is None else {"p": p})})
          for i, p in enumerate(ps)]


def test_holm_column_over_the_counted_claims():
  # Four graded claims, all holding on their own intervals: Holm at 5% keeps 0.001 (<= 0.0125),
  # 0.01 (<= 0.0167), then stops at 0.03 (> 0.025), so 0.04 goes too.
  rows = holm_rows([0.01, 0.04, 0.001, 0.03])
  assert report.holds_after_holm(rows) == [True, False, True, False]
  # Claims that are not counted stay out of the family: the same four are judged alike.
  extra = [report.claim("x", "p", "o", {"diff": 1.0, "ci": [0.1, 2.0], "n": 3, "p": 0.5}),
           report.claim("y", "p", "o", None, by_construction=True)]
  assert report.holds_after_holm(rows + extra) == [True, False, True, False, None, None]
  # A claim without a p-value is in the family as p = 1: shown as unknown, and it tightens the rest.
  no_p = holm_rows([0.01, 0.001, None])
  assert report.holds_after_holm(no_p) == [True, True, None]
  assert report.holds_after_holm(holm_rows([0.03, 0.001])) == [True, True]
  assert report.holds_after_holm(holm_rows([0.03, 0.001, None])) == [False, True, None]
  # A rejected claim whose interval lies below zero does not hold after Holm either.
  below = report.claim("d", "p", "o", {"diff": -1.0, "ci": [-2.0, -0.1], "n": 10, "p": 0.001})
  assert report.holds_after_holm([below]) == [False]
  line = report.claims_line(no_p)
  assert line.startswith("3 of 3 graded claims hold (2 after Holm's correction at 5% familywise)")
  assert "1 graded claims carry no p-value and count as not holding after Holm" in line
  heading, text = report.claims_section(rows + extra + no_p[2:])
  table = text.split("\n\n")[1].splitlines()
  assert table[0].endswith("| verdict | holds after Holm |")
  assert [row.rsplit("|", 2)[1].strip() for row in table[2:]] == ["yes", "no", "yes", "no", "—", "—", "—"]
  assert "(n=10, p=0.001)" in table[4]


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
  claim = lambda: stats.bootstrap_claim(margin, 20, n_resamples=500, seed=3)
  assert claim() == claim()


def test_float_noise_spread_counts_as_zero():
  row = report.compare("mean_coord_loss", ("0.6311", None), ours(0.6320, 3e-13, 8))
  assert row["method"] == report.ROUNDING and row["z"] is None and row["verdict"] == "within 10%"


def test_a_bool_is_not_a_claims_interval():
  with pytest.raises(TypeError, match="not a bool"):
    report.claim("c", "p", "o", True)
