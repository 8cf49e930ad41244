"""Statistics every experiment reports with: mean and sample sd, Wilson interval, paired bootstrap,
a bootstrap over two levels (training seeds, and the units each seed was scored on), Holm's
correction, and the coverage simulation that chose the bootstrap interval (docs/grading.md).

`wilson` is written with jax.numpy so experiments can also call it inside jitted code; the others
work on host NumPy arrays of finished results. `bootstrap_claim` is the interval every published
claim is graded on (`report.claim`).

The bootstrap intervals are Hesterberg's expanded percentile intervals (Hesterberg 2015, "What
teachers should know about the bootstrap", The American Statistician 69(4)): the percentile
interval taken at the tail level Phi(-sqrt(n / (n - 1)) t_{n-1, 1 - a/2}) instead of a/2, which
widens it to Student t's width at small n. The plain percentile interval is too narrow there (89%
coverage at 8 units, 75% at 3, for a nominal 95%); `coverages` measures both.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from scipy import special

METHODS = ("expanded", "percentile")
# The fewest units (seeds, days) a claim is graded on: the smallest n whose measured coverage of the
# expanded interval clears 0.93 by more than the measurement's noise (docs/grading.md: 0.942 at 7
# units, 0.933 at 6, 0.920 at 5). Below it the interval covers clearly less than its nominal 95%.
MIN_UNITS = 7


def describe(values) -> dict:
  """{"mean", "sd", "n"} of a 1-D sample; sd is the sample sd (n - 1), None when n < 2."""
  x = np.asarray(values, dtype=np.float64).ravel()
  n = int(x.size)
  if n == 0:
    return {"mean": None, "sd": None, "n": 0}
  sd = float(np.std(x, ddof=1)) if n > 1 else None
  return {"mean": float(np.mean(x)), "sd": sd, "n": n}


def wilson(successes, n, z: float = 1.96):
  """Wilson score interval (lower, upper) for k successes in n trials; (0, 1) when n = 0."""
  k = jnp.asarray(successes, dtype=jnp.float32)
  n = jnp.asarray(n, dtype=jnp.float32)
  safe_n = jnp.maximum(n, 1.0)
  p = k / safe_n
  denom = 1.0 + z**2 / safe_n
  centre = (p + z**2 / (2 * safe_n)) / denom
  half = z * jnp.sqrt(p * (1 - p) / safe_n + z**2 / (4 * safe_n**2)) / denom
  # At k = 0 (k = n) the lower (upper) bound is exactly 0 (1); rounding would leave a few ulp.
  lower = jnp.where((n > 0) & (k > 0), jnp.clip(centre - half, 0.0, 1.0), 0.0)
  upper = jnp.where((n > 0) & (k < n), jnp.clip(centre + half, 0.0, 1.0), 1.0)
  return lower, upper


# ----------------------------------------------------------------------------- the interval
def _shape(n_units: int, method: str) -> tuple[float, float]:
  """(df, inflate): the tails of `method`'s interval over n units are those of Student t with df
  degrees of freedom, scaled by inflate (the bootstrap's sd is the sample sd times
  sqrt((n - 1) / n)). The percentile interval is the normal's, unscaled."""
  if method == "percentile":
    return math.inf, 1.0
  if method == "expanded":
    return n_units - 1.0, math.sqrt(n_units / (n_units - 1.0))
  raise ValueError(f"unknown interval method {method!r}; one of {METHODS}")


def _tail(confidence: float, df: float, inflate: float) -> float:
  """The quantile level of the interval's lower end: Phi(-inflate * t_{df, 1 - a/2})."""
  return float(special.ndtr(-inflate * special.stdtrit(df, 1 - (1 - confidence) / 2)))


def _share_beyond_zero(margins: np.ndarray) -> np.ndarray:
  """The quantile level at which the resamples' quantile function (np.quantile's, linear between
  order statistics) crosses zero, from the nearer end: the interval whose lower end sits at level
  t excludes 0 exactly when t exceeds it. margins (..., B), sorted along the last axis."""
  b = margins.shape[-1]

  def crossing(count):   # the level where the line through order statistics count-1, count meets 0
    k = np.clip(count, 1, b - 1)
    lo = np.take_along_axis(margins, (k - 1)[..., None], -1)[..., 0]
    hi = np.take_along_axis(margins, k[..., None], -1)[..., 0]
    frac = np.divide(-lo, hi - lo, out=np.ones_like(lo), where=hi > lo)
    return np.where(count == 0, 0.0, np.where(count == b, 1.0, (k - 1 + frac) / (b - 1)))

  below = crossing(np.sum(margins <= 0, -1))     # sup of the levels whose quantile is <= 0
  above = crossing(np.sum(margins < 0, -1))      # inf of the levels whose quantile is >= 0
  return np.minimum(below, 1 - above)


def _p_value(margins: np.ndarray, df: float, inflate: float) -> np.ndarray:
  """The two-sided p-value of the interval: the smallest a at which the 1 - a interval excludes 0.

  Where no resample reaches zero, every interval the resamples can give excludes it and the share
  beyond zero is only known to be under one resample; there it is read off a normal fitted to the
  resamples (capped at 1 / B), which for a mean gives back Student's t-test, rather than 0.
  margins (..., B), sorted along the last axis."""
  b = margins.shape[-1]
  share = _share_beyond_zero(margins)
  sd = margins.std(-1)
  fitted = np.divide(np.abs(margins.mean(-1)), sd, out=np.full(sd.shape, np.inf), where=sd > 0)
  # The share as a normal quantile (kept in z, where a share of 1e-300 would round to 0).
  z = np.where(share > 0, -special.ndtri(np.minimum(share, 0.5)), np.maximum(fitted, -special.ndtri(1 / b)))
  return np.minimum(1.0, 2 * special.stdtr(df, -z / inflate))


def _limits(margins: np.ndarray, confidence: float, df: float, inflate: float):
  """The interval's (lower, upper) ends from resampled margins (..., B)."""
  tail = _tail(confidence, df, inflate)
  return np.quantile(margins, [tail, 1 - tail], axis=-1)


def _summary(observed: float, margins: np.ndarray, confidence: float, df: float, inflate: float) -> dict:
  margins = np.sort(np.asarray(margins, np.float64))
  lo, hi = _limits(margins, confidence, df, inflate)
  return {"diff": observed, "ci": [float(lo), float(hi)], "p": float(_p_value(margins, df, inflate))}


def resample_indices(n_units: int, n_resamples: int, seed: int = 0, strata=None) -> np.ndarray:
  """(n_resamples, n_units) unit indices drawn with replacement, the draws every bootstrap here
  makes. With `strata` (one label per unit) each stratum is resampled within itself: position i
  of a resample holds a unit of i's own stratum, so every resample keeps the strata's sizes (for a
  comparison of two groups of different units, e.g. single-fact against multi-hop questions)."""
  rng = np.random.default_rng(seed)
  if strata is None:
    return rng.integers(0, n_units, size=(n_resamples, n_units))
  strata = np.asarray(strata)
  if strata.shape != (n_units,):
    raise ValueError(f"strata needs one label per unit ({n_units}), got shape {strata.shape}")
  idx = np.empty((n_resamples, n_units), dtype=np.int64)
  for label in np.unique(strata):
    members = np.flatnonzero(strata == label)
    idx[:, members] = members[rng.integers(0, members.size, size=(n_resamples, members.size))]
  return idx


def paired_bootstrap(a, b, n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0,
                     statistic=np.mean, method: str = "expanded") -> dict:
  """Paired bootstrap of statistic(a - b) over matched units (seeds, questions): the interval and
  p-value of `bootstrap_claim` for that margin. Returns {"diff", "ci", "p", "n"}."""
  d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
  if d.ndim != 1 or d.size == 0:
    raise ValueError(f"paired_bootstrap needs two equal-length 1-D samples, got {d.shape}")
  if d.size < 2:
    return {"diff": float(statistic(d)), "ci": None, "p": None, "n": 1}
  idx = resample_indices(d.size, n_resamples, seed)
  out = _summary(float(statistic(d)), statistic(d[idx], axis=1), confidence, *_shape(d.size, method))
  return {**out, "n": int(d.size)}


def bootstrap_claim(margin_fn, n_units: int, n_resamples: int = 10_000, seed: int = 0,
                    confidence: float = 0.95, strata=None, method: str = "expanded") -> dict:
  """The interval a claim is graded on: a bootstrap over units (seeds, days, questions) of its
  margin, expanded to Student t's width at small n (`method="percentile"`: the plain percentile
  interval, kept for comparison).

  `margin_fn(idx)` maps unit indices to the claim's margin, positive when the published statement
  holds (`mean(a[idx]) - mean(b[idx])`; `min` over cells for "at every cell"; the peak cell's mean
  minus the best other cell's for "peaks at"). It is called with idx of shape (n_units,) for the
  observed margin and (n_resamples, n_units) for the resamples, so it reduces over the last axis;
  one index set serves every cell, which pairs cells that share seeds. A margin_fn that cannot
  take the batched shape is called once per resample instead. `strata`: resample within groups
  (`resample_indices`); the expansion still counts n_units.

  Returns {"diff": observed margin, "ci": [lo, hi], "p": two-sided p-value, "n": n_units}; ci and
  p are None when n_units < 2. p is consistent with the interval: the 1 - a interval excludes 0
  exactly when p < a, down to what the resamples resolve (`_p_value`).
  """
  observed = float(margin_fn(np.arange(n_units)))
  if n_units < 2:
    return {"diff": observed, "ci": None, "p": None, "n": int(n_units)}
  idx = resample_indices(n_units, n_resamples, seed, strata)
  try:
    margins = np.asarray(margin_fn(idx), dtype=np.float64)
  except (ValueError, TypeError, IndexError):
    margins = None
  if margins is None or margins.shape != (n_resamples,):
    margins = np.array([float(margin_fn(i)) for i in idx])
  return {**_summary(observed, margins, confidence, *_shape(n_units, method)), "n": int(n_units)}


def nested_bootstrap(margin_fn, n_seeds: int, n_units: int, n_resamples: int = 10_000, seed: int = 0,
                     confidence: float = 0.95, block: int = 1_000, method: str = "expanded") -> dict:
  """An interval for a margin that varies with two things: the training seed and the units
  (questions) every seed was scored on. Each resample draws seeds with replacement and, apart,
  units with replacement; the one unit draw serves every drawn seed, so systems scored on the
  same questions stay paired. `margin_fn(seeds, units)` gets index arrays (n_seeds,) and
  (n_units,) for the observed margin, and (B, n_seeds) and (B, n_units) for a block of B
  resamples, reducing over the last axes (`d[s[..., :, None], u[..., None, :]].mean((-2, -1))` for
  the mean of a (seeds, units) array d).

  The interval is expanded as `bootstrap_claim`'s, with Satterthwaite's degrees of freedom for
  the two sources: the margin's spread over resampled seeds alone and over resampled units alone
  weigh n_seeds - 1 and n_units - 1. Seeds that agree leave the units' own interval; seeds that
  disagree widen it toward Student t's at n_seeds.

  Returns {"diff": observed margin, "ci": [lo, hi], "p", "n_seeds", "n": n_units}; ci and p are
  None with fewer than 2 seeds.
  """
  observed = float(margin_fn(np.arange(n_seeds), np.arange(n_units)))
  if n_seeds < 2:
    return {"diff": observed, "ci": None, "p": None, "n_seeds": int(n_seeds), "n": int(n_units)}
  rng = np.random.default_rng(seed)
  seeds = rng.integers(0, n_seeds, size=(n_resamples, n_seeds))
  units = rng.integers(0, n_units, size=(n_resamples, n_units))

  def margins(s, u):
    return np.concatenate([np.asarray(margin_fn(s[i:i + block], u[i:i + block]), dtype=np.float64)
                           for i in range(0, n_resamples, block)])
  both = margins(seeds, units)
  df, inflate = _shape(n_seeds, method)
  if method == "expanded":
    all_seeds = np.broadcast_to(np.arange(n_seeds), seeds.shape)
    all_units = np.broadcast_to(np.arange(n_units), units.shape)
    df, inflate = _two_level(np.var(margins(seeds, all_units)), np.var(margins(all_seeds, units)), n_seeds, n_units)
  return {**_summary(observed, both, confidence, df, inflate), "n_seeds": int(n_seeds), "n": int(n_units)}


def _two_level(var_seeds: float, var_units: float, n_seeds: int, n_units: int) -> tuple[float, float]:
  """(df, inflate) of the nested interval: Satterthwaite's df for the sum of the two variance
  parts, each corrected by n / (n - 1) as one level's expansion is."""
  parts = [(v * n / (n - 1), n - 1) for v, n in ((var_seeds, n_seeds), (var_units, n_units)) if v > 0]
  if not parts:
    return _shape(n_seeds, "expanded")
  total = sum(v for v, _ in parts)
  df = total**2 / sum(v**2 / d for v, d in parts)
  return df, math.sqrt(total / (var_seeds + var_units))


# ----------------------------------------------------------------------------- multiplicity
def holm(pvalues, alpha: float = 0.05) -> np.ndarray:
  """Holm's step-down correction: which hypotheses are rejected with familywise error <= alpha.

  The p-values sorted ascending are compared with alpha / m, alpha / (m - 1), ...; every one
  before the first that exceeds its threshold is rejected. Returns booleans in the input order.
  """
  p = np.asarray(pvalues, dtype=np.float64).ravel()
  if np.isnan(p).any():
    raise ValueError("holm needs a p-value for every hypothesis (count one without a p as p = 1)")
  order = np.argsort(p, kind="stable")
  passed = p[order] <= alpha / (p.size - np.arange(p.size))
  reject = np.zeros(p.size, dtype=bool)
  reject[order] = np.cumprod(passed).astype(bool)
  return reject


# ----------------------------------------------------------------------------- coverage
COVERAGE_METHODS = ("percentile", "bca", "expanded", "t")


def coverages(n: int, methods=COVERAGE_METHODS, sims: int = 2000, n_resamples: int = 1000, seed: int = 0,
              data: str = "normal", confidence: float = 0.95, chunk: int = 250) -> dict:
  """{method: share of `sims` zero-effect samples whose interval covers 0}, NumPy only.

  Each sample is n paired differences with mean zero, `data` "normal" or "skewed" (an
  exponential minus its mean); the margin is their mean, resampled n_resamples times per sample.
  Methods: "expanded" and "percentile" exactly as `bootstrap_claim` computes them, "bca"
  (Efron's bias-corrected and accelerated percentile, the jackknife of the mean giving the
  acceleration) and "t" (Student's formula, for reference). Every method sees the same samples and
  resamples; a fixed seed gives the same shares.
  """
  for m in methods:
    if m not in COVERAGE_METHODS:
      raise ValueError(f"unknown method {m!r}; one of {COVERAGE_METHODS}")
  rng = np.random.default_rng(seed)
  if data == "normal":
    x = rng.normal(size=(sims, n))
  elif data == "skewed":
    x = rng.exponential(size=(sims, n)) - 1.0
  else:
    raise ValueError(f"data must be 'normal' or 'skewed', got {data!r}")
  a = 1 - confidence
  covered = dict.fromkeys(methods, 0)
  for start in range(0, sims, chunk):
    xs = x[start:start + chunk]
    idx = rng.integers(0, n, size=(xs.shape[0], n_resamples, n))
    boot = np.sort(np.take_along_axis(xs[:, None, :], idx, axis=-1).mean(-1), axis=-1)
    obs = xs.mean(-1)
    for m in methods:
      if m in METHODS:
        lo, hi = _limits(boot, confidence, *_shape(n, m))
      elif m == "t":
        half = special.stdtrit(n - 1, 1 - a / 2) * xs.std(-1, ddof=1) / math.sqrt(n)
        lo, hi = obs - half, obs + half
      else:
        lo, hi = _bca(boot, obs, xs, a)
      covered[m] += int(np.sum((lo <= 0) & (hi >= 0)))
  return {m: covered[m] / sims for m in methods}


def coverage(method: str = "expanded", n: int = 8, **kw) -> float:
  """The coverage of one method (`coverages`)."""
  return coverages(n, (method,), **kw)[method]


def _bca(boot, obs, xs, a):
  """BCa limits of the mean for each row: boot (rows, B) sorted, obs (rows,), xs (rows, n)."""
  n, b = xs.shape[-1], boot.shape[-1]
  below = np.mean(boot < obs[:, None], -1) + 0.5 * np.mean(boot == obs[:, None], -1)
  z0 = special.ndtri(np.clip(below, 1 / b, 1 - 1 / b))
  jack = (xs.sum(-1, keepdims=True) - xs) / (n - 1)
  d = jack.mean(-1, keepdims=True) - jack
  den = 6 * (d**2).sum(-1) ** 1.5
  acc = np.divide((d**3).sum(-1), den, out=np.zeros_like(den), where=den > 0)

  def limit(z):
    level = special.ndtr(z0 + (z0 + z) / (1 - acc * (z0 + z)))
    pos = np.clip(level, 0, 1) * (b - 1)
    k = np.minimum(np.floor(pos).astype(int), b - 2)
    lo, hi = (np.take_along_axis(boot, j[:, None], -1)[:, 0] for j in (k, k + 1))
    return lo + (pos - k) * (hi - lo)
  z = special.ndtri(a / 2)
  return limit(z), limit(-z)


def coverage_table(ns=(2, 3, 4, 5, 6, 7, 8, 10, 15, 20, 30), methods=COVERAGE_METHODS, data=("normal", "skewed"),
                   sims: int = 4000, n_resamples: int = 2000, seed: int = 0) -> str:
  """A markdown table of `coverages`: one row per (data, n), one column per method."""
  lines = ["| data | n | " + " | ".join(methods) + " |", "|---|---|" + "---|" * len(methods)]
  for kind in data:
    for n in ns:
      c = coverages(n, methods, sims, n_resamples, seed, kind)
      lines.append(f"| {kind} | {n} | " + " | ".join(f"{c[m]:.3f}" for m in methods) + " |")
  return "\n".join(lines)


if __name__ == "__main__":
  print(coverage_table())
