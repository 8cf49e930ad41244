"""Developmental physics (developmental-physics.md): a world model learns intuitive physics by
playing in four stages of MuJoCo scenes; curiosity (by expected surprise, or by learning progress)
versus random play versus fixed-order stages.

  jaxlab run configs/developmental.py:smoke --workdir checkpoints/developmental_smoke
  jaxlab run configs/developmental.py:smoke --workdir DIR --config.backend=mjx   # the fused MJX program
  jaxlab run configs/developmental.py:cpu --workdir checkpoints/developmental     # the default (= repro)
  jaxlab run configs/developmental.py:gpu --workdir checkpoints/developmental_gpu # one accelerator, MJX
  jaxlab run configs/developmental.py:scores_quarter --workdir DIR   # six curiosity scores, noise on 1/4

Every regime and seed plays the same environment-step budget (play.episodes x play.episode_rounds x
play.envs); the run checkpoints after every play.episodes_per_chunk episodes and a restarted
command resumes. docs/developmental.md says why each number is what it is.
"""

import dataclasses

import ml_collections

from jaxlab.core.config import select
from jaxlab.physics.config import PhysicsConfig


def cpu():
  c = ml_collections.ConfigDict()
  c.experiment = "developmental"
  c.seed = 0                       # root key; seed index i uses fold_in(root, i)
  c.seeds = 10                     # seeds per regime (paired across regimes)
  c.regimes = ("curiosity", "progress", "random", "fixed_order")
  c.backend = "c"                  # MuJoCo's C engine (CPU); "mjx" for accelerators
  c.stop_after = 0                 # chunks to play in this call (a job's time limit); 0: all
  c.play = ml_collections.ConfigDict(dict(
      envs=64,                     # environments per run
      episode_rounds=8,            # interactions per episode (scenes reset between episodes)
      episodes=32,                 # per run: 32 x 8 x 64 = 16,384 environment steps
      episodes_per_chunk=8,        # checkpoint interval (a multiple of eval_every)
      eval_every=2))               # held-out evaluation interval (episodes)
  c.learner = ml_collections.ConfigDict(dict(replay_size=8192, replay_batch=128, updates_per_round=2))
  c.model = ml_collections.ConfigDict(dict(
      kind="relational",                       # an interaction network; "mlp": one flat MLP
      hidden=128, depth=2, edge_hidden=64,     # per-object MLP (the flat MLP when kind="mlp"), per-pair MLP
      surprise_hidden=128,
      input_scale=(1.0, 1.0, 2.0, 10.0),       # m, quaternion, m/s, rad/s
      delta_floor=(1e-3, 1e-3, 1e-2, 1e-1),    # smallest unit of a state change, same groups
      event_weight=1.0, learning_rate=1e-3, clip_norm=1.0))
  c.curiosity = ml_collections.ConfigDict(dict(
      candidates=16, temperature=0.0,
      bins=3, alp_fast=0.2, alp_slow=0.04))   # learning progress: bins per action dim, EMA rates
  c.curriculum = ml_collections.ConfigDict(dict(
      threshold=(0.1, 0.1, 0.1, 0.1),   # held-out units: 1 ~ predicting "nothing changes"
      plateau=0.05, fast=0.5, slow=0.25, min_episodes=3))
  c.eval = ml_collections.ConfigDict(dict(
      heldout_envs=32, probe_pairs=32, bootstrap=2000,
      probes=("fall_through_floor", "hover", "glass_bounces_like_rubber", "offcentre_stack_stays")))
  c.render = ml_collections.ConfigDict(dict(episodes=1, rounds=4))   # GIFs per stage, interactions each
  c.physics = ml_collections.ConfigDict(
      {k: v for k, v in dataclasses.asdict(PhysicsConfig()).items()})
  return c


def smoke():
  c = cpu()
  c.seeds = 2
  c.play.envs = 8
  c.play.episode_rounds = 2
  c.play.episodes = 8
  c.play.episodes_per_chunk = 4
  c.play.eval_every = 2
  c.learner.replay_size = 256
  c.learner.replay_batch = 16
  c.learner.updates_per_round = 1
  c.model.hidden = 64
  c.model.depth = 2
  c.model.edge_hidden = 32
  c.model.surprise_hidden = 32
  c.curiosity.candidates = 4
  c.curriculum.min_episodes = 1
  c.eval.heldout_envs = 8
  c.eval.probe_pairs = 8
  # The glass probe draws scenes from a glass-only physics config: one more scene-draw compilation
  # (about 10 s), so smoke leaves it to the cpu variant.
  c.eval.probes = ("fall_through_floor", "hover", "offcentre_stack_stays")
  c.eval.bootstrap = 200
  c.render.rounds = 1
  return c


def gpu():
  """One accelerator, MJX: 128x the cpu variant's interactions per run (not yet run on one)."""
  c = cpu()
  c.backend = "mjx"
  c.play.envs = 4096
  c.play.episodes = 64               # per run: 64 x 8 x 4,096 = 2,097,152 environment steps
  c.play.episodes_per_chunk = 8
  c.play.eval_every = 4
  c.learner.replay_size = 131072
  c.learner.replay_batch = 2048
  c.learner.updates_per_round = 4
  c.model.hidden = 512
  c.model.depth = 3
  c.model.edge_hidden = 256
  c.curiosity.candidates = 32
  c.eval.heldout_envs = 256
  c.eval.probe_pairs = 512
  return c


def scores():
  """cpu with every registered curiosity score, stage-balanced replay and the curriculum's held-out signal,
  and a distractor section (share 0 here; `scores_quarter` and `scores_half` give it a quarter and half
  of the action space), on root seed 2: a world no choice was made on (docs/developmental.md)."""
  c = cpu()
  c.seed = 2                         # 1: validation, where replay and signal were chosen; 0: scored before them
  c.regimes = ("curiosity", "progress", "random", "fixed_order", "disagreement", "gamma_progress")
  # Both chosen on validation (root seed 1, docs/developmental.md) over "ring" and "play"
  c.learner.replay = "stage"         # an equal part of the buffer per stage; "ring": the latest transitions
  c.curriculum.signal = "heldout"    # every stage's error on monitor transitions (curriculum.py); "play"
  c.curiosity.update(dict(ensemble=4, bootstrap=0.5, gamma=0.95))
  c.distractor = ml_collections.ConfigDict(dict(share=0.0, noise=1.0))   # share of the action space; std in units
  c.eval.probes = c.eval.probes + ("rubber_shatters",)   # a fifth probe, on a material no other probe uses
  return c


def scores_quarter():
  """scores with the distractor on a quarter of the action space."""
  c = scores()
  c.distractor.share = 0.25
  return c


def scores_half():
  """scores with the distractor on half of the action space."""
  c = scores()
  c.distractor.share = 0.5
  return c


def scores_smoke():
  """scores at the smoke variant's size, with stage-balanced replay, the held-out curriculum signal and a
  distractor on a quarter of the actions."""
  c = scores()
  small = smoke()
  for section in ("play", "model", "curriculum", "eval", "render"):
    c[section] = small[section]
  c.seed, c.seeds = small.seed, small.seeds
  c.curriculum.signal = "heldout"    # the smoke curriculum section replaced cpu's
  c.learner.update(dict(replay_size=256, replay_batch=16, updates_per_round=1, replay="stage"))
  c.curiosity.update(dict(candidates=4, ensemble=2))
  c.distractor.share = 0.25
  c.eval.probes = small.eval.probes + ("rubber_shatters",)
  return c


def get_config(arg=""):
  return select(arg, {"cpu": cpu, "repro": cpu, "smoke": smoke, "gpu": gpu, "scores": scores,
                      "scores_quarter": scores_quarter, "scores_half": scores_half, "scores_smoke": scores_smoke})
