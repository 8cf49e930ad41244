"""The hidden-gem scores of swarm-hidden-gems.md ("The functions"), vectorized over candidates.

  q      Wilson lower bound on the independent positive rate (z = 1.96; q = 0 when n = 0; no
         shrinkage toward a global mean)
  m      mainstreamness 1 - (1 - v)(1 - l)(1 - h)(1 - kappa), v = min(1, log(1+N) / log(1+N0))
  c      consensus 1 - |p1 - p2| across two sealed cohorts (1 with one cohort)
  delta  social-copying gap max(0, U - U0)
  g      gem score q c (1 - m)

Each function checks its inputs on the host and raises `ScoreInputError` (a ValueError) naming
the argument and the first bad entry. Checking needs concrete values, so inside `jax.jit` (as
the simulation does) call with `check=False`: the same jax.numpy code runs without the checks.

  >>> from jaxlab.swarm.hidden_gems import gems
  >>> q = gems.q(positives=[1, 14], n=[1, 20])            # [0.207, 0.481]
  >>> m = gems.m(mentions=[3, 500], listed=[0, 1])
  >>> g = gems.g(q, gems.c([1, 7], [1, 10], [0, 7], [0, 10]), m)
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxlab.core import stats

Z = 1.96     # declared in the spec, not estimated
N0 = 40.0    # mention threshold: N0 mentions make an item fully known


class ScoreInputError(ValueError):
  """A score was given counts or fractions it cannot mean (negative, above n, N0 <= 0, ...)."""


def _where(mask) -> str:
  if np.ndim(mask) == 0:
    return ""
  idx = np.argwhere(mask)[0]
  return "[" + ", ".join(str(int(i)) for i in idx) + "]"


def _host(name, x):
  a = np.asarray(x, dtype=np.float64)
  _check(name, a, ~np.isfinite(a), "must be finite")
  return a


def _check(name, a, bad, what):
  if np.any(bad):
    value = np.atleast_1d(a)[np.atleast_1d(bad)][0]
    raise ScoreInputError(f"{name}{_where(bad)} = {value:g}: {name} {what}")


def _counts(pos_name, positives, n_name, n):
  p, t = _host(pos_name, positives), _host(n_name, n)
  _check(pos_name, p, p < 0, "must be a non-negative count")
  _check(n_name, t, t < 0, "must be a non-negative count")
  try:
    p, t = np.broadcast_arrays(p, t)
  except ValueError:
    raise ScoreInputError(f"{pos_name} {p.shape} and {n_name} {t.shape} do not broadcast") from None
  if np.any(p > t):
    where = _where(p > t)
    raise ScoreInputError(f"{pos_name}{where} = {p[p > t][0]:g} exceeds {n_name}{where} = {t[p > t][0]:g}: "
                          f"{pos_name} must not exceed {n_name} (more positive ratings than ratings)")


def _fraction(name, x):
  a = _host(name, x)
  _check(name, a, (a < 0) | (a > 1), "must lie in [0, 1]")


def q(positives, n, z: float = Z, check: bool = True):
  """Quality: Wilson lower bound on positives / n; 0 where n = 0. q(1, 1) = 0.207."""
  if check:
    _counts("positives", positives, "n", n)
    if not z > 0:
      raise ScoreInputError(f"z must be positive, got {z}")
  return stats.wilson(positives, n, z)[0]


def m(mentions, listed=0.0, chain=0.0, citing=0.0, n0: float = N0, check: bool = True):
  """Mainstreamness in [0, 1]: any one fame channel at 1 forces m = 1; m = 0 only if all are 0.

  mentions: N, how often the item was already mentioned; listed: on a best-of list or canon
  (0/1); chain: a chain or formula built to please everyone (0/1); citing: the fraction of
  mentions that cite a list, an earlier post or a star average instead of a visit.
  """
  if check:
    if not (np.isfinite(n0) and n0 > 0):
      raise ScoreInputError(f"n0 (the mention threshold N0) must be positive, got {n0}")
    a = _host("mentions", mentions)
    _check("mentions", a, a < 0, "must be a non-negative count")
    for name, x in (("listed", listed), ("chain", chain), ("citing", citing)):
      _fraction(name, x)
  n = jnp.asarray(mentions, jnp.float32)
  v = jnp.minimum(1.0, jnp.log1p(n) / jnp.log1p(jnp.float32(n0)))
  keep = (1 - v) * (1 - jnp.asarray(listed, jnp.float32)) * (1 - jnp.asarray(chain, jnp.float32))
  return 1 - keep * (1 - jnp.asarray(citing, jnp.float32))


def c(positives1, n1, positives2=None, n2=None, check: bool = True):
  """Consensus 1 - |p1 - p2| of two sealed cohorts.

  c = 1 with one cohort (no second pair given) and, per candidate, where either cohort has no
  ratings: that candidate has only one cohort, and q carries the uncertainty.
  """
  if (positives2 is None) != (n2 is None):
    raise ScoreInputError("give both positives2 and n2 for a second cohort, or neither")
  if check:
    _counts("positives1", positives1, "n1", n1)
    if positives2 is not None:
      _counts("positives2", positives2, "n2", n2)
  if positives2 is None:
    return jnp.ones(jnp.shape(jnp.asarray(n1)), jnp.float32)
  p1, t1 = jnp.asarray(positives1, jnp.float32), jnp.asarray(n1, jnp.float32)
  p2, t2 = jnp.asarray(positives2, jnp.float32), jnp.asarray(n2, jnp.float32)
  gap = jnp.abs(p1 / jnp.maximum(t1, 1) - p2 / jnp.maximum(t2, 1))
  return jnp.where((t1 > 0) & (t2 > 0), 1 - gap, 1.0)


def _shares(name, x):
  a = _host(name, x)
  if a.ndim != 2 or a.shape[0] < 2:
    raise ScoreInputError(f"{name} must be (worlds >= 2, candidates) choice shares, got shape {a.shape}")
  _check(name, a, (a < 0) | (a > 1), "must lie in [0, 1]")
  return a


def unpredictability(shares, check: bool = True):
  """U: mean over pairs of worlds of the total-variation distance between their choice shares.

  shares: (worlds, candidates), each row a world's choice shares. Total variation is half the
  summed absolute share difference, i.e. candidates x (MusicLab's per-candidate mean absolute
  difference) / 2, so U lies in [0, 1] whatever the number of candidates (docs/hidden_gems.md).
  """
  if check:
    _shares("shares", shares)
  s = jnp.asarray(shares, jnp.float32)
  w = s.shape[0]
  tv = 0.5 * jnp.abs(s[:, None, :] - s[None, :, :]).sum(-1)
  return tv.sum() / (w * (w - 1))


def delta(social_shares, independent_shares, check: bool = True):
  """Social-copying gap max(0, U - U0): U over the social worlds, U0 over random splits of the
  independent cohort (both (worlds, candidates) choice shares)."""
  if check:
    s, i = _shares("social_shares", social_shares), _shares("independent_shares", independent_shares)
    if s.shape[1] != i.shape[1]:
      raise ScoreInputError(f"social_shares {s.shape} and independent_shares {i.shape} must cover the "
                            "same candidates")
  u = unpredictability(social_shares, check=False)
  u0 = unpredictability(independent_shares, check=False)
  return jnp.maximum(0.0, u - u0)


def g(q_score, c_score, m_score, check: bool = True):
  """Gem score q c (1 - m) in [0, 1]: a label for 'good and not popular', not a utility."""
  if check:
    for name, x in (("q", q_score), ("c", c_score), ("m", m_score)):
      _fraction(name, x)
  return jnp.asarray(q_score, jnp.float32) * jnp.asarray(c_score, jnp.float32) * (
      1 - jnp.asarray(m_score, jnp.float32))
