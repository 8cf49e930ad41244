"""Margins of published claims over seeds (or days), for the 95% intervals claims are graded on.

`report.claim` grades a statement on a margin that is positive on the published side, with an
interval from `stats.bootstrap_claim`, which resamples units (seeds, days) and calls the margin
with their indices. Most published statements have one of a few shapes, built here as margin
functions of those indices:

  difference(a, b)   "a beats b": mean(a) - mean(b)
  peak(cells, at)    "peaks at X": the mean at X minus the best other cell's
  trough(cells, at)  "X is the worst": the worst other cell's mean minus the mean at X
  every(cells)       "in every cell": the smallest cell mean (cells hold per-cell margins)
  count(cells, k)    "in k of the n cells": the k-th largest cell mean is above zero and the
                     (k+1)-th below, so the margin is the smaller of the two distances
  both(f, g, ...)    several statements at once: the smallest of their margins

`cells` is an array (cells, units) and `a`, `b` are arrays (units,); unit j must be the same seed
(or day) in every cell, which is what `results.Runs` returns, so one resampled index set serves
every cell and cells that share seeds are paired. Margins of "both" mix units (revenue and
discovery); only their sign matters. `interval(margin, n_units)` is the bootstrap interval, the
expanded percentile interval whose coverage `stats.coverages` measures (docs/grading.md), with the
p-value report.py's Holm column uses. A margin that is a min or max over cells (peak, every,
count, both) is not smooth in the data; its coverage is not measured there, only a mean's is.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from jaxlab.core import stats

Margin = Callable[[np.ndarray], np.ndarray]


def means(values, idx) -> np.ndarray:
  """Means over resampled units: values (..., units), idx (units,) or (resamples, units) ->
  (...) or (..., resamples)."""
  return np.take(np.asarray(values, np.float64), idx, axis=-1).mean(-1)


def _cells(cells) -> np.ndarray:
  cells = np.asarray(cells, np.float64)
  if cells.ndim != 2 or cells.shape[0] < 1:
    raise ValueError(f"cells must be (cells, units), got shape {cells.shape}")
  return cells


def difference(a, b) -> Margin:
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  if a.shape != b.shape or a.ndim != 1:
    raise ValueError(f"a paired difference needs two (units,) arrays, got {a.shape} and {b.shape}")
  return lambda idx: means(a, idx) - means(b, idx)


def mean_of(values) -> Margin:
  """A margin that is already per unit (e.g. a paired difference or a share minus one half)."""
  values = np.asarray(values, np.float64)
  return lambda idx: means(values, idx)


def peak(cells, at: int) -> Margin:
  cells = _cells(cells)
  if cells.shape[0] < 2:
    raise ValueError("a peak needs at least two cells")

  def margin(idx):
    m = means(cells, idx)
    return m[at] - np.delete(m, at, axis=0).max(0)
  return margin


def trough(cells, at: int) -> Margin:
  """The worst other cell's mean minus the mean at `at`: a peak of the negated cells."""
  return peak(-_cells(cells), at)


def every(cells) -> Margin:
  cells = _cells(cells)
  return lambda idx: means(cells, idx).min(0)


def count(cells, k: int) -> Margin:
  cells = _cells(cells)
  n = cells.shape[0]
  if not 0 <= k <= n:
    raise ValueError(f"k must be in [0, {n}], got {k}")

  def margin(idx):
    s = -np.sort(-means(cells, idx), axis=0)          # cell means, largest first
    if k == n:
      return s[n - 1]
    if k == 0:
      return -s[0]
    return np.minimum(s[k - 1], -s[k])
  return margin


def both(*margins: Margin) -> Margin:
  return lambda idx: np.minimum.reduce([np.asarray(f(idx), np.float64) for f in margins])


def interval(margin: Margin, n_units: int, n_resamples: int = 10_000, seed: int = 0) -> dict:
  """{"diff", "ci", "p", "n"}: the margin on all units, its 95% bootstrap interval over units and the
  interval's two-sided p-value (`stats.bootstrap_claim`)."""
  return stats.bootstrap_claim(margin, n_units, n_resamples=n_resamples, seed=seed)
