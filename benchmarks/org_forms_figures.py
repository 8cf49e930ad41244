"""One organization-forms run's figures from its per-period series, in NumPy alone (no JAX): shared by
the one-run NumPy reference (org_forms_numpy.simulate) and the Mesa model (org_forms_mesa), whose
batch runner's worker processes import no JAX."""

from __future__ import annotations

import numpy as np

HISTORY = ("y", "revenue", "discovery", "u", "iota", "y_net", "effort", "loss")
METRICS = ("cum_revenue", "cum_discovery", "cum_revenue_high", "cum_discovery_high",
           "cum_output", "cum_output_net", "mean_effort", "mean_coord_loss", "idle_mean",
           "idle_median", "agree_pre", "agree_post", "post_revenue", "post_discovery",
           "post_output", "post_coord_loss")


def figures(history: dict, k) -> dict:
  """A run's figures (METRICS) from its per-period series (HISTORY, each of length k.periods)."""
  h = {name: np.asarray(history[name], float) for name in HISTORY}
  t = np.arange(k.periods)
  high, pre, post = t % 2 == 1, t < k.shock, t >= k.promote_t
  return dict(
      cum_revenue=h["revenue"].sum(), cum_discovery=h["discovery"].sum(),
      cum_revenue_high=h["revenue"][high].sum(), cum_discovery_high=h["discovery"][high].sum(),
      cum_output=h["y"].sum(), cum_output_net=h["y_net"].sum(),
      mean_effort=h["effort"].mean(), mean_coord_loss=h["loss"].mean(),
      idle_mean=h["iota"].mean(), idle_median=np.median(h["iota"]),
      agree_pre=h["u"][pre].mean(), agree_post=h["u"][~pre].mean(),
      post_revenue=h["revenue"][post].sum(), post_discovery=h["discovery"][post].sum(),
      post_output=h["y"][post].mean(), post_coord_loss=h["loss"][post].mean())
