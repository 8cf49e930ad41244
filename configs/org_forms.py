"""Organization forms (swarm-org-forms.md): 48 agents, four roles, three structures, promotion.

  jaxlab run configs/org_forms.py:smoke --workdir checkpoints/org_forms_smoke   # seconds
  jaxlab run configs/org_forms.py:repro --workdir checkpoints/org_forms         # the published run
  jaxlab run configs/org_forms.py:repro --workdir DIR --config.seeds=10         # overrides

`repro` runs everything the spec's Results section reports: the main grid (3 structures x 5
coordinator x 3 specialist x 2 communicator shares x 30 seeds), the promotion cells (4 rules x 2
cells x 30 seeds at beta1 = -1), the alpha x gamma sweep and the beta1 sweep (10 seeds) and the
Graicunas sensitivity (10 seeds). `smoke` is the same design with 2 seeds.
"""

import ml_collections

from jaxlab.core.config import select


def repro():
  c = ml_collections.ConfigDict()
  c.experiment = "org_forms"
  c.seed = 0                     # root PRNG key; run keys are fold_in(root, seed index)
  c.seeds = 30                   # main grid and promotion cells
  c.sweep_seeds = 10             # alpha x gamma, beta1 and Graicunas
  c.chunk_size = 1024            # runs per checkpointed chunk
  c.block = 32                   # runs each device vectorizes at once (0: all of its runs; for GPUs)
  c.alpha = 1.0                  # coordination-gap weight (free design choice)
  c.gamma = -0.14                # loafing exponent (free design choice)
  c.model = ml_collections.ConfigDict(dict(
      n_agents=48, n_domains=8, periods=200, shock=100, n_blocks=6, sigma=0.5,
      specialist_main=20.0, specialist_other=0.4, task_sparse_prob=0.5, task_concentration=1.0,
      load_even=0.2, load_odd=0.8, cross_weight=0.05, eta_c=2.0, eta_k=2.0,
      p2_base=0.05, p2_gain=0.2, p1_base=0.02, p1_gain=0.5, iota0=0.5,
      promote_t=80, promote_n=4, beta0=0.0, beta2=1.0, prize=0.15, prize_window=10))
  c.grid = ml_collections.ConfigDict(dict(
      structures=("flat", "modules", "isolated"),
      coord_shares=(0.0, 0.0625, 0.125, 0.25, 0.5),
      spec_shares=(0.25, 0.5, 0.75),
      comm_shares=(0.0, 0.1)))
  c.promotion = ml_collections.ConfigDict(dict(
      cells=((0.5, 0.75, 0.1), (0.125, 0.5, 0.1)),   # (coord, spec, comm): the published winner, reference
      cell_names=("winner", "reference"),
      rules=("none", "peter", "match", "tournament"),
      beta1=-1.0))
  c.alpha_gamma = ml_collections.ConfigDict(dict(
      alphas=(0.5, 1.0, 2.0), gammas=(0.0, -0.14, -0.5), spec_share=0.5, comm_share=0.1))
  c.beta1_sweep = ml_collections.ConfigDict(dict(
      beta1s=(-1.0, 0.0, 1.0), cell=(0.5, 0.75, 0.1), rules=("none", "peter", "match", "tournament")))
  c.graicunas = ml_collections.ConfigDict(dict(spec_share=0.5, comm_share=0.1))
  # The slice the spec plots and quotes most: modules at these shares.
  c.slice = ml_collections.ConfigDict(dict(spec_share=0.5, comm_share=0.1))
  return c


def smoke():
  c = repro()
  c.seeds = 2
  c.sweep_seeds = 2
  c.chunk_size = 64             # 5 chunks: exercises checkpoint and resume
  c.block = 8
  return c


def get_config(arg=""):
  return select(arg, {"repro": repro, "smoke": smoke})
