"""Tests of the developmental learner (developmental-physics.md, issue 6, the learner half).

Compilation and the physics' first scene draw per stage dominate on CPU, so every test shares the
programs the smoke config compiles (`learner.programs` is cached by its dims and config) and the
C backend's Sims. The physics itself is jaxlab.physics (tests/test_physics.py tests it).
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlab import physics
from jaxlab.core import results
from jaxlab.core.config import ConfigError, load
from jaxlab.developmental import batch as batch_lib
from jaxlab.developmental import curriculum, evaluation, experiment, learner, play, world_model
from launch.main import main

ROOT = Path(__file__).resolve().parents[1]
SMOKE = f"{ROOT / 'configs' / 'developmental.py'}:smoke"


@pytest.fixture(scope="module")
def config():
  return load(SMOKE, validate=experiment.validate)


@pytest.fixture(scope="module")
def smoke_dir(tmp_path_factory):
  workdir = tmp_path_factory.mktemp("developmental_smoke")
  assert main(["run", SMOKE, "--workdir", str(workdir)]) == 0
  return workdir


@pytest.fixture(scope="module")
def progs(config, smoke_dir):
  """The smoke run's compiled programs (same dims and learner config: a cache hit)."""
  specs = [physics.make_sim(s, config.play.envs, config=experiment.physics_config(config)).spec
           for s in range(len(physics.STAGES))]
  return learner.programs(batch_lib.Dims.of(specs, len(physics.MATERIALS)), experiment.learner_config(config))


def n_runs(config):
  """The smoke run's runs axis: tests call the programs with the same shapes, so nothing compiles."""
  return len(config.regimes) * config.seeds


def test_smoke_end_to_end(config, smoke_dir):
  for name in ("config.json", "summary.json", "report.md", "runs.npz", "learning_curves.png",
               "curriculum_timeline.png", "probe_aucs.png", "materials.png", "trajectories.png"):
    assert (smoke_dir / name).is_file(), name
  summary = json.loads((smoke_dir / "summary.json").read_text())
  _, table, res = results.load(smoke_dir)
  n_runs = len(config.regimes) * config.seeds
  assert len(table["regime"]) == n_runs
  assert res["eval_stage"].shape == (n_runs, config.play.episodes // config.play.eval_every, len(physics.STAGES))
  assert np.isfinite(res["eval_stage"]).all() and np.isfinite(res["surprise"]).all()
  assert res["probe_auc"].shape == (n_runs, len(config.eval.probes))
  assert ((res["probe_auc"] >= 0) & (res["probe_auc"] <= 1)).all()
  assert summary["figures"]["final/curiosity/drop"]["n"] == config.seeds
  assert all(c["verdict"] in ("holds", "does not hold") for c in summary["claims"])
  # Every regime played exactly the same environment-step budget; the fixed order visits every stage.
  fixed = table["regime"] == list(config.regimes).index("fixed_order")
  assert (np.sort(np.unique(res["stage"][fixed])) == np.arange(len(physics.STAGES))).all()


def test_resume_is_bitwise(smoke_dir, tmp_path):
  """Stopped after one chunk and run again, a run ends exactly where an uninterrupted one does."""
  assert main(["run", SMOKE, "--workdir", str(tmp_path), "--config.stop_after=1"]) == 0
  assert not (tmp_path / "runs.npz").exists()
  assert main(["run", SMOKE, "--workdir", str(tmp_path)]) == 0
  _, _, r1 = results.load(smoke_dir)
  _, _, r2 = results.load(tmp_path)
  for key in r1:
    np.testing.assert_array_equal(r1[key], r2[key], err_msg=key)
  assert (tmp_path / "summary.json").read_bytes() == (smoke_dir / "summary.json").read_bytes()


def test_world_model_error_falls_on_stage_1(config, progs):
  """Online training on drops (stage 1) with random actions lowers the error on held-out drops."""
  pcfg = experiment.physics_config(config)
  n_env, runs = config.play.envs, n_runs(config)
  sim = physics.make_sim(0, n_env, seed=11, config=pcfg)
  rng = np.random.default_rng(0)
  heldout = evaluation.random_episode(physics.make_sim(0, n_env, seed=12, config=pcfg), 13, 8, 0, progs.dims, rng)
  scale = world_model.delta_scale(heldout, progs.dims.stages, progs.cfg.model)
  state = progs.init(jax.random.split(jax.random.key(0), runs), scale)
  before = evaluation.heldout_errors(progs, state, heldout)[0][:, 0]
  for rnd in range(100):
    tr = sim.act(rng.uniform(-1, 1, (n_env, 3)).astype(np.float32))
    b = batch_lib.stack([batch_lib.transition(tr, 0, progs.dims, evaluation.materials(tr.obs, 0))] * runs)
    state, _ = progs.learn(state, b, jax.random.split(jax.random.key(rnd), runs), n_env * (rnd + 1), False,
                           np.ones(runs, bool), 0, 8)
  after = evaluation.heldout_errors(progs, state, heldout)[0][:, 0]
  assert (after < 0.7 * before).all(), (before, after)


def _synthetic(progs, rng, n_runs, n_env, action):
  """Transitions of a made-up stage-2 world: a push moves object 0 by 0.1 action[0] m, and where
  action[1] > 0 the object also jumps to a random height (an unpredictable outcome)."""
  d = progs.dims
  objects = np.zeros((n_runs, n_env, d.objects, 13), np.float32)
  objects[..., 3] = 1.0
  nxt = objects.copy()
  nxt[..., 0, 0] += 0.1 * action[..., 0]
  noisy = action[..., 1] > 0
  nxt[..., 0, 2] += np.where(noisy, rng.normal(0, 0.2, noisy.shape), 0.0)
  shape = (n_runs, n_env)
  return batch_lib.Batch(objects=objects, next=nxt, mask=np.ones(shape + (d.objects,), bool),
                         context=np.zeros(shape + (d.context,), np.float32), hand=np.zeros(shape + (6,), np.float32),
                         action=action.astype(np.float32), stage=np.ones(shape, np.int32),
                         broken=np.zeros(shape + (d.objects,), bool), contact=np.zeros(shape + (d.objects,), bool),
                         valid=np.ones(shape, bool), material=np.zeros(shape + (d.objects,), np.int32))


def test_curiosity_seeks_the_surprising_actions(config, progs):
  """Trained on random actions, the self-model expects surprise where outcomes are unpredictable,
  and the curious policy picks those actions; the random one picks them about half the time."""
  rng = np.random.default_rng(1)
  n_env, runs = config.play.envs, n_runs(config)
  scale = np.ones((progs.dims.stages, 13), np.float32) * 0.05
  state = progs.init(jax.random.split(jax.random.key(1), runs), scale)
  masks = np.ones((progs.dims.stages, progs.dims.action), np.float32)
  for rnd in range(120):
    action = rng.uniform(-1, 1, (runs, n_env, progs.dims.action))
    state, _ = progs.learn(state, _synthetic(progs, rng, runs, n_env, action),
                           jax.random.split(jax.random.key(rnd), runs), n_env * (rnd + 1), False,
                           np.ones(runs, bool), 0, 8)
  probe = _synthetic(progs, rng, runs, n_env, np.zeros((runs, n_env, progs.dims.action)))
  curious = np.arange(runs) % 2 == 0
  picked = [np.asarray(progs.act(state, world_model.obs_of(probe), masks, curious,
                                 jax.random.split(jax.random.key(100 + i), runs))[0]) for i in range(8)]
  share = np.mean([p[:, :, 1] > 0 for p in picked], axis=(0, 2))   # per run
  # With K candidates the best possible share is 1 - 2^-K (0.94 for the smoke config's K = 4).
  assert share[curious].min() > 0.8 and 0.3 < share[~curious].mean() < 0.7, share


def test_curriculum_advances_on_threshold_and_plateau():
  cfg = curriculum.CurriculumConfig(threshold=(0.5, 0.5, 0.5, 0.5), plateau=0.05, min_episodes=2)
  end = jax.jit(curriculum.end_episode, static_argnames="cfg")

  def episodes(c, errors, adaptive, start=0):
    stages = []
    for i, e in enumerate(errors):
      c = end(curriculum.observe(c, jnp.float32(e)), 100 * (start + i + 1), adaptive, start + i, 12, cfg)
      stages.append(int(c.stage))
    return c, stages

  c, _ = episodes(curriculum.init(4), [0.45, 0.3], True)      # under the threshold, still improving
  assert int(c.stage) == 1 and c.mastered_at.tolist() == [200, -1, -1, -1]
  c, stages = episodes(c, [3.0, 2.0, 1.2, 1.0, 0.9] + [0.9] * 20, True, 2)
  moved = stages.index(2)                                      # the error flattened: a plateau
  assert 5 <= moved < 25 and c.mastered_at[1] == 100 * (moved + 3) and float(c.fast[1]) > 0.5
  fixed, _ = episodes(curriculum.init(4), [0.1] * 6, False)    # fixed order: 12 episodes, 3 per stage
  assert int(fixed.stage) == 2 and fixed.mastered_at.tolist()[:2] == [200, 500]
  last, _ = episodes(curriculum.init(4)._replace(stage=jnp.int32(3)), [0.1, 0.1, 0.1], True)
  assert bool(last.review) and int(last.stage) == 1            # review: the stages take turns


def test_padding_and_materials(config):
  """Stage 4 (2 objects) pads to the widest stage with a mask; materials are read from the context."""
  pcfg = experiment.physics_config(config)
  n = config.play.envs
  specs = [physics.make_sim(s, n, seed=3, config=pcfg).spec for s in range(len(physics.STAGES))]
  dims = batch_lib.Dims.of(specs, len(physics.MATERIALS))
  tr = physics.make_sim(3, n, seed=3, config=pcfg).act(np.zeros((n, 3), np.float32))
  mats = evaluation.materials(tr.obs, 3)
  b = batch_lib.transition(tr, 3, dims, mats)
  assert b.objects.shape == (n, dims.objects, 13) and b.mask.tolist() == [[True, True, False]] * n
  assert (b.material[:, 2] == -1).all() and (b.objects[:, 2] == 0).all()
  onehot = tr.obs.context[:, :10 * 2].reshape(n, 2, 10)[..., :len(physics.MATERIALS)]
  assert (onehot[np.arange(n)[:, None], np.arange(2)[None], mats] == 1).all()


def test_auc_and_scale():
  assert evaluation.auc([0.1, 0.2], [0.3, 0.4]) == 1.0
  assert evaluation.auc([0.3, 0.4], [0.1, 0.2]) == 0.0
  assert evaluation.auc([1.0, 2.0], [1.0, 2.0]) == 0.5
  dims = batch_lib.Dims(2, 1, 3, 4, 4)
  b = batch_lib.empty(4, dims)._replace(valid=np.ones(4, bool), mask=np.ones((4, 2), bool))
  nxt = b.objects.copy()
  nxt[..., 0] = 0.3
  scale = world_model.delta_scale(b._replace(next=nxt), 4, world_model.ModelConfig())
  np.testing.assert_allclose(scale[0, :3], np.sqrt(0.3 ** 2 / 3), rtol=1e-6)
  np.testing.assert_allclose(scale[1, 7:10], 1e-2)               # no data: the floor


def test_config_errors_name_the_field():
  with pytest.raises(ConfigError, match="regimes"):
    load(SMOKE, ["--config.regimes=('curiosity', 'greedy')"], validate=experiment.validate)
  with pytest.raises(ConfigError, match="play.eval_every"):
    load(SMOKE, ["--config.play.eval_every=3"], validate=experiment.validate)
  with pytest.raises(ConfigError, match="curriculum.threshold"):
    load(SMOKE, ["--config.curriculum.threshold=(0.1, 0.1)"], validate=experiment.validate)
  with pytest.raises(ConfigError, match="physics.timestep"):
    load(SMOKE, ["--config.physics.timestep=-0.1"], validate=experiment.validate)
