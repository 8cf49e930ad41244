"""A pure-JAX Cholesky factor and solve for MJX's small dense matrices.

On this CPU build, vmapped dense MJX (batch >= 64) can hang forever at 0% CPU inside the batched
LAPACK Cholesky (potrf) that jax.scipy.linalg.cho_factor calls. `pure_jax()` swaps cho_factor and
cho_solve for the loops below while MJX is traced (they are looked up at trace time), so the
compiled program has no LAPACK call. The loops are O(n^3) in plain XLA ops (fori_loops, so
the program stays small), fine for nv of a few dozen.
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
  """(c, lower) like jax.scipy.linalg.cho_factor, for one matrix a [n, n] (vmap for batches)."""
  n = a.shape[-1]
  rows = jnp.arange(n)

  def column(j, low):
    v = a[:, j] - low @ low[j]                 # column j less the columns already factored
    return low.at[:, j].set(jnp.where(rows >= j, v / jnp.sqrt(v[j]), 0.0))

  low = jax.lax.fori_loop(0, n, column, jnp.zeros_like(a))
  return (low if lower else low.T), lower


def _substitute(tri, b, forward: bool):
  """Solves tri x = b, tri lower (forward) or upper triangular [n, n]; b [n] or [n, m]."""
  n = tri.shape[-1]

  def row(k, x):
    i = k if forward else n - 1 - k
    return x.at[i].set((b[i] - tri[i] @ x) / tri[i, i])

  return jax.lax.fori_loop(0, n, row, jnp.zeros_like(b))


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
  c, lower = c_and_lower
  low = c if lower else c.T
  return _substitute(low.T, _substitute(low, b, True), False)


_native = [False]


@contextlib.contextmanager
def native():
  """Within the block, `pure_jax` keeps jax.scipy's solvers on CPU too: for tracing on this CPU a
  program meant for a GPU or TPU (`jaxlab.core.export`), as that machine would trace it."""
  saved, _native[0] = _native[0], True
  try:
    yield
  finally:
    _native[0] = saved


@contextlib.contextmanager
def pure_jax():
  """Within the block, jax.scipy.linalg.cho_factor / cho_solve are the pure-JAX ones (on CPU only:
  GPUs and TPUs keep their native solvers, and so does a program traced inside `native()`)."""
  if jax.default_backend() != "cpu" or _native[0]:
    yield
    return
  linalg = jax.scipy.linalg
  saved = linalg.cho_factor, linalg.cho_solve
  linalg.cho_factor, linalg.cho_solve = cho_factor, cho_solve
  try:
    yield
  finally:
    linalg.cho_factor, linalg.cho_solve = saved
