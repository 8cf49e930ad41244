"""Hidden gems and the wisdom of crowds (swarm-hidden-gems.md): planted quadrants, three tally
conditions, rankings by raw rate, Wilson q and gem score g, and a voter-correlation curve.

  jaxlab run configs/hidden_gems.py:smoke --workdir checkpoints/hidden_gems_smoke   # seconds
  jaxlab run configs/hidden_gems.py:repro --workdir checkpoints/hidden_gems         # the published run
  jaxlab run configs/hidden_gems.py:repro --workdir DIR --config.model.raters=300   # overrides

`repro` is the spec's run (24 seeds, N0 = 40, top 5) at independent raters (rho = 0), plus the
same seeds at five more voter correlations for the curve. The simulation constants are our
choices, not the original script's (which is not public); docs/hidden_gems.md says why each.
"""

import ml_collections

from jaxlab.core.config import select


def repro():
  c = ml_collections.ConfigDict()
  c.experiment = "hidden_gems"
  c.seed = 0                     # root PRNG key; run keys are fold_in(root, seed index)
  c.seeds = 24
  c.chunk_size = 64              # runs per checkpointed chunk
  c.block = 32                   # runs each device vectorizes at once (0: all of its runs; for GPUs)
  c.rhos = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)   # voter correlation (shared evidence) levels
  c.main_rho = 0.0               # the published figures: raters with independent evidence
  c.model = ml_collections.ConfigDict(dict(
      per_quadrant=5,            # 4 x 5 candidates: 600 OM-FE pairs over 24 seeds, top 5 = #gems
      worlds=4,                  # parallel worlds per condition; halves = the two sealed cohorts
      raters=150,                # raters per world (the same budget in every condition)
      evidence_share=0.5,        # raters with private evidence; the rest copy or abstain
      famous_exposure=4.0,       # how much likelier a famous candidate is to be visited
      position_decay=0.5,        # visit weight (1 + list position)^-decay
      good_rate=(0.7, 0.9),      # true positive rate of good candidates, uniform in this range
      mediocre_rate=(0.3, 0.5),
      famous_mentions=100.0,     # Poisson mean of mentions N (famous: far above N0; obscure: below)
      obscure_mentions=5.0,
      famous_listed=0.5,         # on a best-of list
      famous_chain=0.2,          # a chain or formula
      famous_citing=0.5,         # share of mentions citing a list or tally, not a visit
      obscure_citing=0.1,
      n0=40.0,                   # mention threshold N0 (declared in the spec)
      z=1.96,                    # Wilson z (declared in the spec)
      top=5))
  return c


def smoke():
  c = repro()
  c.seeds = 3
  c.rhos = (0.0, 1.0)
  c.chunk_size = 8
  c.block = 8
  c.model.raters = 60
  return c


def get_config(arg=""):
  return select(arg, {"repro": repro, "smoke": smoke})
