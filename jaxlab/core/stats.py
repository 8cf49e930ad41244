"""Statistics every experiment reports with: mean and sample sd, Wilson interval, paired bootstrap,
and a bootstrap over two levels (training seeds, and the units each seed was scored on).

`wilson` is written with jax.numpy so experiments can also call it inside jitted code; the others
work on host NumPy arrays of finished results. `bootstrap_claim` is the interval every published
claim is graded on (`report.claim`).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np


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


def paired_bootstrap(a, b, n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0,
                     statistic=np.mean) -> dict:
  """Paired bootstrap of statistic(a - b) over matched units (seeds, questions).

  Returns the observed difference, a percentile confidence interval and a two-sided p-value: twice
  the share of resampled differences on the far side of zero (capped at 1).
  """
  d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
  if d.ndim != 1 or d.size == 0:
    raise ValueError(f"paired_bootstrap needs two equal-length 1-D samples, got {d.shape}")
  idx = resample_indices(d.size, n_resamples, seed)
  stats = statistic(d[idx], axis=1)
  tail = (1 - confidence) / 2
  lo, hi = np.quantile(stats, [tail, 1 - tail])
  p = 2 * min(np.mean(stats <= 0), np.mean(stats >= 0))
  return {"diff": float(statistic(d)), "ci": [float(lo), float(hi)], "p": float(min(1.0, p)),
          "n": int(d.size)}


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


def bootstrap_claim(margin_fn, n_units: int, n_resamples: int = 10_000, seed: int = 0,
                    confidence: float = 0.95, strata=None) -> dict:
  """A percentile bootstrap interval for a claim's margin, resampling units (seeds, days, questions).

  `margin_fn(idx)` maps unit indices to the claim's margin, positive when the published statement
  holds (`mean(a[idx]) - mean(b[idx])`; `min` over cells for "at every cell"; the peak cell's mean
  minus the best other cell's for "peaks at"). It is called with idx of shape (n_units,) for the
  observed margin and (n_resamples, n_units) for the resamples, so it reduces over the last axis;
  one index set serves every cell, which pairs cells that share seeds. A margin_fn that cannot
  take the batched shape is called once per resample instead. `strata`: resample within groups
  (`resample_indices`).

  Returns {"diff": observed margin, "ci": [lo, hi] or None when n_units < 2, "n": n_units}.
  """
  observed = float(margin_fn(np.arange(n_units)))
  if n_units < 2:
    return {"diff": observed, "ci": None, "n": int(n_units)}
  idx = resample_indices(n_units, n_resamples, seed, strata)
  try:
    margins = np.asarray(margin_fn(idx), dtype=np.float64)
  except (ValueError, TypeError, IndexError):
    margins = None
  if margins is None or margins.shape != (n_resamples,):
    margins = np.array([float(margin_fn(i)) for i in idx])
  tail = (1 - confidence) / 2
  lo, hi = np.quantile(margins, [tail, 1 - tail])
  return {"diff": observed, "ci": [float(lo), float(hi)], "n": int(n_units)}


def nested_bootstrap(margin_fn, n_seeds: int, n_units: int, n_resamples: int = 10_000, seed: int = 0,
                     confidence: float = 0.95, block: int = 1_000) -> dict:
  """A percentile interval for a margin that varies with two things: the training seed and the
  units (questions) every seed was scored on. Each resample draws seeds with replacement and,
  apart, units with replacement; the one unit draw serves every drawn seed, so systems scored on
  the same questions stay paired. `margin_fn(seeds, units)` gets index arrays (n_seeds,) and
  (n_units,) for the observed margin, and (B, n_seeds) and (B, n_units) for a block of B
  resamples, reducing over the last axes (`d[s[..., :, None], u[..., None, :]].mean((-2, -1))` for
  the mean of a (seeds, units) array d).

  Returns {"diff": observed margin, "ci": [lo, hi] or None with fewer than 2 seeds, "n_seeds",
  "n": n_units}.
  """
  observed = float(margin_fn(np.arange(n_seeds), np.arange(n_units)))
  if n_seeds < 2:
    return {"diff": observed, "ci": None, "n_seeds": int(n_seeds), "n": int(n_units)}
  rng = np.random.default_rng(seed)
  seeds = rng.integers(0, n_seeds, size=(n_resamples, n_seeds))
  units = rng.integers(0, n_units, size=(n_resamples, n_units))
  margins = np.concatenate([np.asarray(margin_fn(seeds[i:i + block], units[i:i + block]), dtype=np.float64)
                            for i in range(0, n_resamples, block)])
  tail = (1 - confidence) / 2
  lo, hi = np.quantile(margins, [tail, 1 - tail])
  return {"diff": observed, "ci": [float(lo), float(hi)], "n_seeds": int(n_seeds), "n": int(n_units)}
