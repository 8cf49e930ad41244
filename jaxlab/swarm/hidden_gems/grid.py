"""The runs table of a hidden-gems config: one row per (voter correlation, seed).

The three conditions are not rows: they run inside each row on the same world and rater streams,
because q, c and g must be frozen from that row's independent cohort before any tally is shown.
A seed's key does not depend on rho, so every correlation level sees the same worlds.
"""

from __future__ import annotations

import numpy as np

MODEL_INPUTS = ("seed", "rho")


def build(config) -> dict[str, np.ndarray]:
  rho_index, seed = np.meshgrid(np.arange(len(config.rhos)), np.arange(config.seeds), indexing="ij")
  return {"seed": seed.ravel().astype(np.int32), "rho_index": rho_index.ravel().astype(np.int32),
          "rho": np.asarray(config.rhos, np.float32)[rho_index.ravel()]}


def model_inputs(table) -> dict[str, np.ndarray]:
  return {key: table[key] for key in MODEL_INPUTS}
