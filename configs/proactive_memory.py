"""Proactive memory value (proactive-memory-value.md): when should an agent speak first?

  jaxlab run configs/proactive_memory.py:smoke --workdir checkpoints/proactive_memory_smoke  # seconds
  jaxlab run configs/proactive_memory.py:repro --workdir checkpoints/proactive_memory        # the spec's table + spread
  jaxlab run configs/proactive_memory.py:repro --workdir DIR --config.heldout_days=8192      # overrides

`repro` learns oscillation amplitude and period per tag class on `train_days` random days, then
runs three policies (hand-set oscillation, the A = 0 ablation, learned) on the planted day, the
training days and `heldout_days` held-out days as one sharded, chunked sweep, and reports the
planted day beside the published table. `smoke` is the same design with a few days and steps.
The planted memories live in jaxlab/memory/proactive/records.py; docs/proactive_memory.md says
why each number is what it is.
"""

import ml_collections

from jaxlab.core.config import select


def repro():
  c = ml_collections.ConfigDict()
  c.experiment = "proactive_memory"
  c.seed = 0                     # root PRNG key; day keys are fold_in(root, day seed)
  c.train_days = 512             # random days the learner sees
  c.heldout_days = 4096          # random days nobody trains on
  c.chunk_size = 4096            # runs per checkpointed chunk
  c.bootstrap = 10_000           # paired-bootstrap resamples for the claims
  c.model = ml_collections.ConfigDict(dict(
      horizon_h=72.0, tick_h=0.25,                      # the spec's 72-hour day at 0.25 h ticks
      theta=0.6, hysteresis=0.15,                       # Schmitt trigger
      quiet_start=22.0, quiet_len=9.0, quiet_raise=1e3, # quiet 22:00-07:00 mutes everything
      daily_cap=5,                                      # the spec's five messages a day
      urgency=0.5, urgency_window_h=24.0, urgency_fade_h=2.0,
      context=0.25, novelty=0.3, novelty_h=1.0, fatigue=0.4, fatigue_h=6.0, history=16,
      jitter_h=2.0, importance_jitter=0.25, decay_jitter=0.3, window_drop=0.2,
      dismiss_cost=0.5))                                # objective: accepts - 0.5 x dismissals
  # Hand-set oscillation per tag class (commitment, plan, trivia): a daily revival of half size.
  c.policy = ml_collections.ConfigDict(dict(amplitude=(0.5, 0.5, 0.5), period_h=(24.0, 24.0, 24.0)))
  c.learn = ml_collections.ConfigDict(dict(
      steps=200, learning_rate=0.05, clip_norm=1.0, temperature=0.05, cap_temperature=0.1))
  return c


def smoke():
  c = repro()
  c.train_days = 8
  c.heldout_days = 16
  c.chunk_size = 32
  c.bootstrap = 1000
  c.learn.steps = 20
  return c


def get_config(arg=""):
  return select(arg, {"repro": repro, "smoke": smoke})
