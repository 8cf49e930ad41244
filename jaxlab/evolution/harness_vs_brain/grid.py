"""The runs table of a harness-vs-brain config: regimes x capacities x seeds, one row per run.

A regime's capacities are the slot counts `ks` for the prototype table and the MLP widths
`brain_widths` for the other genome kinds. `regime` indexes `config.regimes`, `genome` the kinds
in `genomes.KINDS` order.
"""

from __future__ import annotations

import numpy as np

from jaxlab.evolution import genomes

COLUMNS = ("regime", "capacity", "seed", "genome")


def capacities(config, genome_name: str) -> tuple[int, ...]:
  return tuple(config.ks) if genome_name == "table" else tuple(config.brain_widths)


def build(config, regimes) -> dict[str, np.ndarray]:
  """`regimes`: the resolved regimes (strategies.Regime), in config order."""
  kinds = list(genomes.KINDS)
  rows = [(i, c, s, kinds.index(r.genome.name)) for i, r in enumerate(regimes)
          for c in capacities(config, r.genome.name) for s in range(config.seeds)]
  return {name: np.array([r[i] for r in rows], np.int32) for i, name in enumerate(COLUMNS)}
