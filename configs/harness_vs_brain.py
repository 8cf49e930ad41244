"""Harness versus brain (evolution-harness-vs-brain.md): does the harness evolve first, or the brain?

  jaxlab run configs/harness_vs_brain.py:smoke --workdir checkpoints/harness_vs_brain_smoke  # seconds
  jaxlab run configs/harness_vs_brain.py:repro --workdir checkpoints/harness_vs_brain        # the recorded run
  jaxlab run configs/harness_vs_brain.py:gpu --workdir DIR                                   # population 65,536

`repro` is the spec's recorded run: 5 regimes (plus the MLP-and-evosax regime) x K in {1, 2, 4,
8} x 8 seeds x 48 generations x population 32, one jitted program scanned over generations in
checkpointed chunks. `smoke` is the same design with 2 seeds, 10 generations, population 16.
The tool catalog and every free choice are in docs/harness_vs_brain.md.
"""

import ml_collections

from jaxlab.core.config import select


def _regime(**kw):
  # Shared GA settings; each regime changes only what the spec says it changes.
  base = dict(n_elite=2, n_parents=8, proto_rate=0.3, proto_sigma=0.2, tool_rate=0.15,
              harness_rate=0.06, edit_rate=0.5, evolve_controller=True, evolve_harness=True,
              directed=False, myopic=False)
  return ml_collections.ConfigDict({**base, **kw})


def repro():
  c = ml_collections.ConfigDict()
  c.experiment = "harness_vs_brain"
  c.seed = 0                     # root PRNG key; run keys are fold_in(root, seed index)
  c.seeds = 8
  c.generations = 48
  c.population = 32
  c.elite = 8                    # the spec's elite: the top 8 by selection fitness
  c.ks = (1, 2, 4, 8)
  c.regime_names = ("model_first", "harness_first", "coevolution", "brain_directed", "conservative",
                    "mlp_evosax")
  c.chunk = 12                   # generations per checkpointed chunk
  c.block = 8                    # runs each device vectorizes at once (0: all of its runs; GPUs)
  c.regimes = ml_collections.ConfigDict(dict(
      model_first=_regime(evolve_harness=False, harness_rate=0.0),
      harness_first=_regime(evolve_controller=False),
      coevolution=_regime(),
      brain_directed=_regime(directed=True, myopic=True),
      conservative=_regime(harness_rate=0.02, n_elite=6)))
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


def get_config(arg=""):
  return select(arg, {"repro": repro, "smoke": smoke, "gpu": gpu})
