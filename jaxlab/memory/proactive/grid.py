"""The runs table of a proactive-memory config: policies x days, one row per run.

Policies: `full` (hand-set oscillation), `no_osc` (the spec's ablation, A_i = 0), `learned`
(amplitude and frequency per tag class fitted on the training days). Days: the planted day
(split `planted`, jitter scale 0), the training days the learner saw (`train`) and held-out days
(`heldout`), all named by seed so every policy meets the same days and comparisons pair up.
A policy is nothing but its per-class amplitude and omega columns, so the jitted model reads
`MODEL_INPUTS` alone.
"""

from __future__ import annotations

import numpy as np

POLICIES = ("full", "no_osc", "learned")
SPLITS = ("planted", "train", "heldout")
MODEL_INPUTS = ("seed", "scale", "amplitude", "omega")


def omega_of(period_h) -> np.ndarray:
  return (2 * np.pi / np.asarray(period_h, np.float64)).astype(np.float32)


def policy_params(config, learned_amplitude, learned_omega) -> dict:
  """Per-class (amplitude, omega) of each policy."""
  hand_a = np.asarray(config.policy.amplitude, np.float32)
  hand_w = omega_of(config.policy.period_h)
  return {"full": (hand_a, hand_w), "no_osc": (np.zeros_like(hand_a), hand_w),
          "learned": (np.asarray(learned_amplitude, np.float32), np.asarray(learned_omega, np.float32))}


def seeds_of(config) -> dict:
  """Seeds of each split: training days first, held-out days after, never overlapping.

  The planted day has scale 0, so its seed's key is drawn but has no effect.
  """
  train = np.arange(config.train_days)
  return {"planted": np.array([0]), "train": train,
          "heldout": config.train_days + np.arange(config.heldout_days)}


def build(config, learned_amplitude, learned_omega) -> dict[str, np.ndarray]:
  params = policy_params(config, learned_amplitude, learned_omega)
  seeds = seeds_of(config)
  cols = {key: [] for key in ("policy", "split", "seed", "scale", "amplitude", "omega")}
  for p, name in enumerate(POLICIES):
    a, w = params[name]
    for s, split in enumerate(SPLITS):
      n = len(seeds[split])
      cols["policy"].append(np.full(n, p))
      cols["split"].append(np.full(n, s))
      cols["seed"].append(seeds[split])
      cols["scale"].append(np.full(n, 0.0 if split == "planted" else 1.0))
      cols["amplitude"].append(np.tile(a, (n, 1)))
      cols["omega"].append(np.tile(w, (n, 1)))
  table = {key: np.concatenate(v) for key, v in cols.items()}
  ints = ("policy", "split", "seed")
  return {key: v.astype(np.int32 if key in ints else np.float32) for key, v in table.items()}


def model_inputs(table) -> dict[str, np.ndarray]:
  return {key: table[key] for key in MODEL_INPUTS}
