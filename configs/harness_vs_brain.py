"""Harness versus brain (evolution-harness-vs-brain.md): does the harness evolve first, or the brain?

  jaxlab run configs/harness_vs_brain.py:smoke --workdir checkpoints/harness_vs_brain_smoke  # seconds
  jaxlab run configs/harness_vs_brain.py:repro --workdir checkpoints/harness_vs_brain        # the recorded run
  jaxlab run configs/harness_vs_brain.py:gpu --workdir DIR                                   # population 65,536
  jaxlab run configs/harness_vs_brain.py:evosax --workdir DIR      # evosax algorithms on the MLP brain, width 8
  jaxlab run configs/harness_vs_brain.py:widths --workdir DIR      # the MLP's capacity crossing, widths 1..32
  jaxlab run configs/harness_vs_brain.py:smoke --workdir DIR \
      --config.regimes='("coevolution","evosax:CMA_ES")'         # any registered strategy, by name

`repro` is the spec's recorded run: the 5 published regimes (plus the MLP brain evolved by evosax's
SNES) x K in {1, 2, 4, 8} x 8 seeds x 48 generations x population 32, one jitted program per
strategy scanned over generations in checkpointed chunks. `smoke` is the same design with 2
seeds, 10 generations, population 16. Regimes are names in the strategy registry
(jaxlab/evolution/strategies/): the published five, `mlp_evosax`, `evosax:ALGORITHM` for any
evosax algorithm, anything a module in `imports` registers; `NAME@GENOME` picks the genome kind
(table, mlp, mlp_harness, harness). `strategy_params` overrides hyperparameters per regime:
  --config.strategy_params='{"evosax:Open_ES": {"learning_rate": 0.05, "optimizer": "adam", "std": 0.1}}'
The tool catalog and every free choice are in docs/harness_vs_brain.md; the library in docs/evolution.md.
"""

import ml_collections

from jaxlab.core.config import select
from jaxlab.evolution.strategies import PUBLISHED


def repro():
  c = ml_collections.ConfigDict()
  c.experiment = "harness_vs_brain"
  c.seed = 0                     # root PRNG key; run keys are fold_in(root, seed index)
  c.seeds = 8
  c.generations = 48
  c.population = 32
  c.elite = 8                    # the spec's elite: the top 8 by selection fitness
  c.ks = (1, 2, 4, 8)            # slots of the prototype-table brain
  c.brain_widths = (1, 2, 4, 8)  # live hidden units of the MLP brain (the genomes other than the table)
  c.regimes = PUBLISHED + ("mlp_evosax",)
  # {regime: {field: value}} over the registered hyperparameters (the GA settings of the published
  # regimes are in strategies/prototype_ga.py, where they are registered; evosax's defaults are evosax's).
  c.strategy_params = ml_collections.ConfigDict()
  c.imports = ()                 # modules that register more strategies, imported before validation
  c.chunk = 12                   # generations per checkpointed chunk
  c.block = 8                    # runs each device vectorizes at once (0: all of its runs; GPUs)
  c.world = ml_collections.ConfigDict(dict(
      cost_weight=0.32, spam_weight=0.10, sensor_cost=0.02, tax_rate=0.35, empty_bare=0.42,
      empty_tool=0.10, forage_steps=24, forage_empty=0.25, forage_rare=0.15, forage_seen=0.70,
      bandit_steps=24, bandit_rare=0.20, delayed_common=10, delayed_rare=2, jackpot=5.0))
  return c


def smoke():
  c = repro()
  c.seeds = 2
  c.generations = 10
  c.population = 16
  c.chunk = 4                    # three chunks, the last one partial: exercises resume
  return c


def gpu():
  c = repro()
  c.population = 65_536
  c.block = 4                    # 4 runs x 65,536 individuals per device step fit in GPU memory
  return c


def evosax():
  """evosax algorithms by name on one cell: the MLP brain of width 8 on the field kit (with its
  defaults; Open_ES's defaults, SGD at 1e-3 and std 1, are overridden by strategy_params)."""
  c = repro()
  c.ks = (8,)
  c.brain_widths = (8,)
  c.regimes = ("mlp_evosax", "evosax:CMA_ES", "evosax:Open_ES", "evosax:SimpleGA")
  c.strategy_params = ml_collections.ConfigDict({
      "evosax:Open_ES": dict(learning_rate=0.05, optimizer="adam", std=0.1)})
  return c


def widths():
  """The published question with a neural brain: the MLP alone on the field kit, the harness
  alone around a frozen random MLP, and both jointly, all by SNES, over widths 1..32."""
  c = repro()
  c.brain_widths = (1, 2, 4, 8, 16, 32)
  c.regimes = ("evosax:SNES@mlp", "evosax:SNES@harness", "evosax:SNES@mlp_harness")
  return c


def get_config(arg=""):
  return select(arg, {"repro": repro, "smoke": smoke, "gpu": gpu, "evosax": evosax, "widths": widths})
