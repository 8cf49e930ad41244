"""The runs table of a harness-vs-brain config: regimes x K x seeds, one row per evolutionary run."""

from __future__ import annotations

import itertools

import numpy as np

from jaxlab.evolution.harness_vs_brain import sweep

MODEL_INPUTS = ("regime", "n_slots", "seed")


def build(config) -> dict[str, np.ndarray]:
  regimes = [sweep.REGIMES.index(r) for r in config.regime_names]
  rows = list(itertools.product(regimes, config.ks, range(config.seeds)))
  return {name: np.array([r[i] for r in rows], np.int32) for i, name in enumerate(MODEL_INPUTS)}


def model_inputs(table) -> dict[str, np.ndarray]:
  return {key: table[key] for key in MODEL_INPUTS}
