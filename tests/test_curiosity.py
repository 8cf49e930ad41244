"""The registered curiosity scores, stage-balanced replay and the distractor (developmental-physics.md;
docs/developmental.md, Regimes), on the smoke config's shapes: a file of its own, so its compilation
(a learner with an ensemble and an old model) runs beside test_developmental.py's."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from jaxlab.developmental import curiosity, distractor, experiment, learner, world_model
from jaxlab.developmental.population import Population
from synthetic_worlds import noisy_push
from test_developmental import config  # noqa: F401  (the smoke config fixture, shared)

@pytest.fixture(scope="module")
def smoke_learner(config):
  dims, action_dims = experiment.dims_of(experiment.physics_config(config))
  return learner.learner(dims, experiment.learner_config(config), action_dims)


ALL_REGIMES = ("curiosity", "progress", "random", "fixed_order", "disagreement", "gamma_progress")


@pytest.fixture(scope="module")
def every_score(config, smoke_learner):
  """A population of one run per registered regime, with stage-balanced replay, on the smoke shapes."""
  lrn = smoke_learner
  cfg = dataclasses.replace(lrn.cfg, scores=curiosity.scores_of(ALL_REGIMES), replay="stage",
                            curiosity=dataclasses.replace(lrn.cfg.curiosity, ensemble=3, gamma=0.9))
  action_dims = tuple(int(a.sum()) for a in lrn.action_mask)
  big = learner.learner(lrn.dims, cfg, action_dims)
  scores = cfg.scores
  flags = curiosity.Flags(*map(np.array, zip(*(curiosity.flags(r, scores) for r in ALL_REGIMES))))
  return big, Population(big, len(ALL_REGIMES)), flags


def test_the_registered_scores_and_regimes(every_score):
  big, _, flags = every_score
  assert big.cfg.scores == ("surprise", "progress", "disagreement", "gamma_progress")
  assert curiosity.scores_of(("curiosity", "progress", "random", "fixed_order")) == ("surprise", "progress")
  assert flags.curious.tolist() == [True, True, False, True, True, True]
  assert flags.adaptive.tolist() == [True, True, True, False, True, True]
  assert flags.score.tolist() == [0, 1, 0, 0, 2, 3]
  with pytest.raises(ValueError, match="already registered"):
    curiosity.register_regime("random", None)
  with pytest.raises(ValueError, match="unknown score"):
    curiosity.register_regime("mine", "no_such_score")
  curiosity.register_score("mine", lambda c: -c.actions[..., 0], "leftmost")
  try:
    curiosity.register_regime("mine", "mine")
    assert curiosity.scores_of(("mine", "random")) == ("mine",)
    assert curiosity.flags("mine", ("mine",)) == (True, True, 0)
  finally:
    curiosity.REGIMES.pop("mine")
    curiosity.SCORES.pop("mine")


def test_every_score_in_a_noisy_world(config, every_score):
  """The noisy world of the surprise test, one run per regime: every run takes the best candidate by its
  own score; gamma-progress, like learning progress, does not seek the unpredictable half, whose error
  is flat; the ensemble's members disagree."""
  big, pop, flags = every_score
  rng = np.random.default_rng(1)
  n_env, runs, d = config.play.envs, pop.n, big.dims
  state = pop.init(jax.random.split(jax.random.key(1), runs), np.ones((d.stages, 13), np.float32) * 0.05)
  rows = pop.rows(flags)
  for rnd in range(120):
    action = rng.uniform(-1, 1, (runs, n_env, d.action))
    state, _ = pop.learn(state, noisy_push(d, rng, runs, n_env, action), jax.random.split(jax.random.key(rnd), runs),
                         learner.clock(rnd, 8, n_env, 8), rows)
  probe = noisy_push(d, rng, runs, n_env, np.zeros((runs, n_env, d.action)))
  picks = [pop.act(state, world_model.obs_of(probe), jax.random.split(jax.random.key(100 + i), runs), rows)
           for i in range(8)]
  share = np.mean([p[0][:, :, 1] > 0 for p in picks], axis=(0, 2))
  assert share[0] > 0.8 and share[1] < 0.7 and share[5] < 0.7, share
  host = pop.host(state)
  gp = host.extra["gamma_progress"]
  assert (gp.visits[:, 1] > 0).all() and np.isfinite(gp.fast).all()
  assert all(np.isfinite(p[1]).all() for p in picks) and (np.stack([p[1] for p in picks])[:, 4] > 0).all()
  members = host.extra["ensemble"][0]
  assert not np.allclose(*(jax.tree.leaves(members)[0][:, :2].swapaxes(0, 1)))


def test_stage_balanced_replay_keeps_each_stage_apart_and_draws_them_equally(config, every_score):
  big, _, _ = every_score
  rng = np.random.default_rng(2)
  d, n_env = big.dims, config.play.envs
  part = big.cfg.replay_size // d.stages
  state = big.init(jax.random.key(0), np.ones((d.stages, 13), np.float32))
  insert = jax.jit(big._insert)
  one = lambda stage: jax.tree.map(lambda x: x[0], noisy_push(d, rng, 1, n_env, rng.uniform(-1, 1, (1, n_env, d.action))
                                                              ))._replace(stage=np.full(n_env, stage, np.int32))
  for i in range(part // n_env + 2):       # stage 0 fills its part and wraps around
    replay, filled, extra = insert(state, one(0))
    state = state._replace(replay=replay, extra=extra, replay_n=state.replay_n + n_env)
  replay, filled, extra = insert(state, one(2))
  assert np.asarray(extra["replay_count"]).tolist() == [part + 2 * n_env, 0, n_env, 0]
  assert np.asarray(filled).tolist() == [part, 0, n_env, 0]
  stages = np.asarray(replay.stage)
  assert (stages[2 * part:2 * part + n_env] == 2).all() and (stages[:part] == 0).all()
  assert not replay.valid[part:2 * part].any()
  rows = np.asarray(jax.jit(big._replay_rows)(jax.random.key(3), filled))
  assert set(np.unique(rows // part)) == {0, 2} and 0.3 < np.mean(rows // part == 2) < 0.7
  assert (rows[rows // part == 2] < 2 * part + n_env).all()


def test_the_distractor_randomizes_outcomes_only_in_its_share_of_the_actions(smoke_learner):
  lrn = smoke_learner
  d, n = lrn.dims, 4000
  rng = np.random.default_rng(3)
  batch = jax.tree.map(lambda x: x[0], noisy_push(d, rng, 1, n, rng.uniform(-1, 1, (1, n, d.action))))
  batch = batch._replace(mask=batch.mask & (np.arange(d.objects) < 2))        # two real objects
  scale = np.full((d.stages, 13), 0.5, np.float32)
  cfg = distractor.DistractorConfig(share=0.25, noise=2.0)
  noisy, hit = jax.jit(distractor.apply, static_argnames="cfg")(batch, jax.random.key(0), scale, cfg)
  hit, moved = np.asarray(hit), np.asarray(noisy.next) - batch.next
  assert abs(hit.mean() - 0.25) < 0.03 and (hit == (batch.action[:, 0] > 0.5)).all()
  assert (moved[~hit] == 0).all() and (moved[:, 2:] == 0).all() and (moved[..., [3, 4, 5, 6, 10, 11, 12]] == 0).all()
  assert abs(moved[hit][:, :2][..., [0, 1, 2, 7, 8, 9]].std() - 1.0) < 0.05     # noise 2 x unit 0.5
  assert distractor.region(np.array([[0.49, 0.0], [0.51, 0.0]]), 0.25).tolist() == [False, True]
