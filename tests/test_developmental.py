"""Tests of the developmental learner (developmental-physics.md): the C host loop and the fused MJX
program, curiosity, learning progress, the curriculum, evaluation, resumption.

Compilation dominates on CPU, so the tests share what the smoke config compiles (`learner.learner`
is cached by its dims and config) and test the fused program's mechanics (bitwise across device
counts, resumption, the same learner step as the host loop) with a world that replays recorded C
transitions; the MJX physics inside it is compiled by the end-to-end `--config.backend=mjx` smoke
run in tests/test_developmental_mjx.py (a file of its own, so the suite's workers share its minutes
of compilation out with the rest). The physics itself is tests/test_physics.py's.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlab import physics
from jaxlab.core import mesh as mesh_lib
from jaxlab.core import checkpoint, receipts, results
from jaxlab.core.config import ConfigError, load
from jaxlab.developmental import batch as batch_lib
from jaxlab.developmental import curiosity, curriculum, evaluation, experiment, fused, learner, play, world_model
from jaxlab.developmental import keys as keys_lib
from jaxlab.developmental.population import Population
from launch.main import main
from synthetic_worlds import noisy_push

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
def pieces(config):
  """The smoke run's learner and a population of its size (same shapes: compiled once)."""
  pcfg = experiment.physics_config(config)
  dims, action_dims = experiment.dims_of(pcfg)
  lrn = learner.learner(dims, experiment.learner_config(config), action_dims)
  table = experiment.runs_table(config)
  return pcfg, lrn, Population(lrn, len(table["seed"])), table


def test_smoke_end_to_end(config, smoke_dir):
  for name in ("config.json", "summary.json", "report.md", "runs.npz", "learning_curves.png", "timing.json",
               "curriculum_timeline.png", "probe_aucs.png", "materials.png", "trajectories.png", "train_log.jsonl"):
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
  head = summary["headline"]["regimes"]
  assert set(head) == set(config.regimes)
  for row in head.values():
    assert row["final_error"]["n"] == config.seeds and len(row["final_error"]["ci"]) == 2
    assert set(row["probe_auc"]) == set(config.eval.probes) and "steps_to_random_final" in row
  assert all(c["interval"] is not None or c["verdict"] == "by construction" for c in summary["claims"])
  assert "seconds" not in (smoke_dir / "summary.json").read_text()
  # Every regime played exactly the same budget; the fixed order visits every stage.
  fixed = table["regime"] == list(config.regimes).index("fixed_order")
  assert (np.sort(np.unique(res["stage"][fixed])) == np.arange(len(physics.STAGES))).all()


@pytest.mark.float_sensitive
def test_smoke_matches_its_receipt(smoke_dir):
  # The tests' 8 forced devices lay the learners out otherwise than the receipt's one device, which
  # moves last bits: within seed error here; bitwise on one device in tests/test_verify.py.
  result = receipts.verify(smoke_dir, match="seed")
  assert result.ok, result.table()
  assert {t["target"] for t in json.loads((smoke_dir / "summary.json").read_text())["targets"]}
  assert "## Targets" in (smoke_dir / "report.md").read_text()


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
  assert main(["run", SMOKE, "--workdir", str(tmp_path), "--config.seed=5"]) == 2     # another run's workdir


# -- the fused program, on recorded transitions ------------------------------------------------


class Replay:
  """A world for the fused program that replays a run's recorded padded transitions, round by
  round (row["replay"]: Batch [rounds, envs, ...]); it ignores the actions."""

  def __init__(self, rounds: int):
    self.rounds, self.traced = rounds, 0

  def init(self, row):
    return row["replay"], row["first"] * self.rounds

  def reset(self, envs, stage, key):
    return envs

  def observe(self, envs, stage):
    data, t = envs
    return world_model.obs_of(jax.tree.map(lambda x: x[t], data))

  def step(self, envs, stage, action):
    self.traced += 1             # Python runs here only while the chunk program is traced
    data, t = envs
    return (data, t + 1), jax.tree.map(lambda x: x[t], data)


@pytest.fixture(scope="module")
def recorded(config, pieces):
  """Two chunks of the C host loop (every regime, the smoke sizes), with every round's actions and
  padded transitions recorded, and its state after each chunk."""
  pcfg, lrn, pop, table = pieces
  flags = experiment.flags_of(config, table)
  cal = evaluation.scene_set(config, pcfg, lrn.dims, keys_lib.CALIBRATION)
  heldout = evaluation.scene_set(config, pcfg, lrn.dims, keys_lib.HELDOUT)
  scale = world_model.delta_scale(cal, lrn.dims.stages, lrn.cfg.model)
  driver = play.Driver(config, pop, flags, table["seed"], pcfg, heldout)
  batches, actions = [], []
  step, act = driver.game.step, pop.act
  driver.game.step = lambda stages, a: batches.append(step(stages, a)) or batches[-1]
  pop.act = lambda *args: actions.append(act(*args)) or actions[-1]
  init_keys = keys_lib.round_keys(keys_lib.root(config.seed), table["seed"], 0, keys_lib.INIT)
  state = driver.init(init_keys, scale)
  per_chunk = config.play.episodes_per_chunk
  states, logs = [driver.host(state)], []
  for c in range(2):
    state, chunk = driver.play(state, c * per_chunk, per_chunk)
    states.append(driver.host(state))
    logs.append(chunk)
  pop.act = act
  driver.close()
  replay = batch_lib.Batch(*(np.stack(x, 1) for x in zip(*batches)))       # [runs, rounds, envs, ...]
  return {"states": states, "logs": logs, "replay": replay, "actions": np.stack([a for a, _ in actions], 1),
          "flags": flags, "heldout": heldout}


def _fused(config, pieces, recorded, mesh=None, monitor=None):
  _, lrn, _, table = pieces
  p = config.play
  return fused.Fused(lrn, Replay(p.episode_rounds), recorded["heldout"], seed=config.seed, envs=p.envs,
                     rounds=p.episode_rounds, episodes_per_chunk=p.episodes_per_chunk, eval_every=p.eval_every,
                     n_episodes=p.episodes, mesh=mesh, monitor=monitor)


def _rows(config, pieces, recorded, state, first):
  rows = fused.rows_of(state, recorded["flags"], pieces[3]["seed"], first)
  return {**rows, "replay": recorded["replay"]}


def test_fused_program_drives_the_same_learner_step_as_the_host_loop(config, pieces, recorded):
  """Given the transitions the C host loop saw, the fused program's learner (one run at a time)
  ends where the host loop's (vmapped over the population) does: same curriculum, same logs and
  parameters to float rounding. The chunk is traced once (the shape query and the call share it)."""
  prog = _fused(config, pieces, recorded)
  out = prog.play(_rows(config, pieces, recorded, recorded["states"][0], 0))
  assert prog.world.traced == 1
  host, fused_state = recorded["states"][1], out["state"]
  for a, b in zip(jax.tree.leaves(host.curr), jax.tree.leaves(fused_state.curr)):
    if np.issubdtype(a.dtype, np.floating):
      np.testing.assert_allclose(a, b, rtol=2e-4)
    else:
      np.testing.assert_array_equal(a, b)            # stages, mastery steps, episode counts
  np.testing.assert_array_equal(recorded["logs"][0]["stage"], out["logs"]["stage"])
  for a, b in zip(jax.tree.leaves(host.params), jax.tree.leaves(fused_state.params)):
    assert np.linalg.norm(a - b) <= 1e-4 * np.linalg.norm(a)      # vmapped vs one run: float reordering
  for k in ("surprise", "loss_world", "eval_stage"):
    np.testing.assert_allclose(recorded["logs"][0][k], out["logs"][k], rtol=2e-4, err_msg=k)


def test_fused_program_is_the_same_on_1_and_8_devices_and_resumes_bitwise(config, pieces, recorded, tmp_path):
  assert jax.device_count() == 8
  one = jax.make_mesh((1,), (mesh_lib.AXIS,), devices=jax.devices()[:1])
  whole = _fused(config, pieces, recorded).play(_rows(config, pieces, recorded, recorded["states"][0], 0))
  single = _fused(config, pieces, recorded, one).play(_rows(config, pieces, recorded, recorded["states"][0], 0))
  for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(single)):
    np.testing.assert_array_equal(a, b)
  # the second chunk from the first one's state after a checkpoint round trip = straight through
  prog = _fused(config, pieces, recorded)
  second = prog.play(_rows(config, pieces, recorded, whole["state"], config.play.episodes_per_chunk))
  with checkpoint.Checkpoints(tmp_path / "checkpoints", "fused") as ckpt:
    ckpt.save(0, whole["state"], done=config.play.episodes_per_chunk)
    restored, meta = ckpt.restore(whole["state"])
  again = prog.play(_rows(config, pieces, recorded, restored, meta["done"]))
  for a, b in zip(jax.tree.leaves(second), jax.tree.leaves(again)):
    np.testing.assert_array_equal(a, b)


@pytest.mark.float_sensitive
def test_fused_program_folds_the_monitor_into_every_stage_after_each_block(config, pieces, recorded):
  """With monitor transitions (here the held-out set stands in for them) the fused program folds
  every stage's error into the curriculum after each block, as the host loop's `Population.monitor`
  does: every stage is measured, played or not, and the block before the first fold plays as
  without a monitor."""
  rows = _rows(config, pieces, recorded, recorded["states"][0], 0)
  watched = _fused(config, pieces, recorded, monitor=recorded["heldout"]).play(rows)
  plain = _fused(config, pieces, recorded).play(rows)
  assert (watched["state"].curr.slow > 0).all() and not (plain["state"].curr.slow > 0).all()
  first = config.play.eval_every * config.play.episode_rounds           # the rounds of the first block
  np.testing.assert_array_equal(watched["logs"]["surprise"][:, :first], plain["logs"]["surprise"][:, :first])
  _, lrn, pop, _ = pieces
  host = pop.host(pop.monitor(pop.rows(recorded["states"][0]), jax.tree.map(jnp.asarray, recorded["heldout"])))
  np.testing.assert_allclose(host.curr.slow, jax.vmap(lrn.monitor, in_axes=(0, None))(
      recorded["states"][0], recorded["heldout"]).curr.slow, rtol=2e-4)


# -- learner pieces --------------------------------------------------------------------------------


def test_world_model_error_falls_on_drops(config, pieces):
  """Online training on drops with random actions lowers the error on held-out drops."""
  pcfg, lrn, pop, _ = pieces
  n_env = config.play.envs
  sim = physics.make_sim(0, n_env, seed=11, config=pcfg)
  rng = np.random.default_rng(0)
  heldout = evaluation.random_episode(physics.make_sim(0, n_env, seed=12, config=pcfg), 13, 8, 0, lrn.dims, rng)
  scale = world_model.delta_scale(heldout, lrn.dims.stages, lrn.cfg.model)
  state = pop.init(jax.random.split(jax.random.key(0), pop.n), scale)
  flags = pop.rows(curiosity.Flags(*(np.zeros(pop.n, bool),) * 3))
  before = pop.heldout(state, heldout)[0][:, 0]
  for rnd in range(100):
    tr = sim.act(rng.uniform(-1, 1, (n_env, 3)).astype(np.float32))
    b = batch_lib.stack([batch_lib.transition(tr, 0, lrn.dims)] * pop.n)
    state, _ = pop.learn(state, b, jax.random.split(jax.random.key(rnd), pop.n), learner.clock(rnd, 8, n_env, 8), flags)
  after = pop.heldout(state, heldout)[0][:, 0]
  assert (after < 0.7 * before).all(), (before, after)


def test_surprise_seeks_the_unpredictable_and_progress_does_not(config, pieces):
  """Trained on random actions in a world where one action half gives unpredictable outcomes,
  the surprise policy picks that half; learning progress, whose error there is flat, does not
  prefer it over the learnable half; random play picks it half the time."""
  _, lrn, pop, _ = pieces
  rng = np.random.default_rng(1)
  n_env, runs, d = config.play.envs, pop.n, lrn.dims
  scale = np.ones((d.stages, 13), np.float32) * 0.05
  state = pop.init(jax.random.split(jax.random.key(1), runs), scale)
  kind = np.arange(runs) % 3                              # 0 surprise, 1 progress, 2 random
  flags = pop.rows(curiosity.Flags(kind < 2, np.ones(runs, bool), kind == 1))
  for rnd in range(120):
    action = rng.uniform(-1, 1, (runs, n_env, d.action))
    state, _ = pop.learn(state, noisy_push(d, rng, runs, n_env, action), jax.random.split(jax.random.key(rnd), runs),
                         learner.clock(rnd, 8, n_env, 8), flags)
  probe = noisy_push(d, rng, runs, n_env, np.zeros((runs, n_env, d.action)))
  picked = [pop.act(state, world_model.obs_of(probe), jax.random.split(jax.random.key(100 + i), runs), flags)[0]
            for i in range(8)]
  share = np.mean([p[:, :, 1] > 0 for p in picked], axis=(0, 2))   # per run
  # With K candidates the best possible share is 1 - 2^-K (0.94 for the smoke config's K = 4).
  assert share[kind == 0].min() > 0.8, share
  assert share[kind == 1].max() < 0.7 and 0.3 < share[kind == 2].mean() < 0.7, share


def test_learning_progress_scores_falling_error_over_flat_noise():
  cfg = curiosity.CuriosityConfig(bins=2)
  p = curiosity.init_progress(4, 1, cfg)
  rng = np.random.default_rng(0)
  update = jax.jit(curiosity.update_progress, static_argnames="cfg")
  assert (curiosity.alp(p) == curiosity.UNVISITED).all()
  for t in range(30):
    surprise = np.concatenate([np.full(8, 2.0 * 0.93 ** t), 3.0 + rng.normal(0, 0.3, 8)])   # bin 0 learnable
    p = update(p, 1, jnp.asarray(np.repeat([0, 1], 8)), jnp.asarray(surprise, jnp.float32), jnp.ones(16, bool), cfg)
  lp = np.asarray(curiosity.alp(p))
  assert lp[1, 0] > 2 * lp[1, 1] and (lp[0] == curiosity.UNVISITED).all(), lp
  assert int(curiosity.bin_of(jnp.array([[-1.0, 1.0]]), 3)[0]) == 0 + 2 * 3


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


def test_the_heldout_signal_sees_every_stage_and_reviews_the_one_forgotten():
  """With `signal = "heldout"` the averages move for every stage at each monitor evaluation, a
  stage is not mastered before it is measured, and review plays the stage whose held-out error
  moves most (a forgotten one, rising), not the next in turn."""
  cfg = curriculum.CurriculumConfig(threshold=(0.7,) * 4, plateau=0.05, min_episodes=1, signal="heldout")
  end = jax.jit(curriculum.end_episode, static_argnames="cfg")
  watch = jax.jit(curriculum.observe_stages, static_argnames="cfg")
  c = end(curriculum.observe(curriculum.init(4), jnp.float32(0.1)), 100, True, 0, 40, cfg)
  assert int(c.stage) == 0 and c.mastered_at.tolist() == [-1] * 4            # nothing measured yet
  c = watch(c, jnp.array([1.0, 2.0, np.nan, 4.0], jnp.float32), cfg)
  assert c.fast.tolist() == c.slow.tolist() == [1.0, 2.0, 0.0, 4.0]           # first errors start both; NaN: kept
  c = watch(c, jnp.array([0.2, 2.0, 3.0, 4.0], jnp.float32), cfg)
  assert np.allclose(c.fast, [0.6, 2.0, 3.0, 4.0]) and np.allclose(c.slow, [0.8, 2.0, 3.0, 4.0])
  c = end(curriculum.observe(c, jnp.float32(9.0)), 200, True, 1, 40, cfg)     # the episode's own error is not read
  assert int(c.stage) == 1 and c.mastered_at.tolist() == [200, -1, -1, -1]
  reviewing = c._replace(review=jnp.bool_(True), stage=jnp.int32(3), fast=jnp.full(4, 0.3), slow=jnp.full(4, 0.3))
  forgot = watch(reviewing, jnp.array([0.3, 0.3, 1.5, 0.3], jnp.float32), cfg)   # stage 2's error rises again
  assert int(end(forgot, 300, True, 2, 40, cfg).stage) == 2
  play = dataclasses.replace(cfg, signal="play")
  assert int(end(forgot, 300, True, 2, 40, play).stage) == 0                  # the play signal: the next in turn


def test_padding_and_materials(config, pieces):
  """Stage 4 (2 objects) pads to the widest stage with a mask; materials are read from the context."""
  pcfg, lrn, _, _ = pieces
  n, dims = config.play.envs, lrn.dims
  tr = physics.make_sim(3, n, seed=3, config=pcfg).act(np.zeros((n, 3), np.float32))
  b = batch_lib.transition(tr, 3, dims)
  assert b.objects.shape == (n, dims.objects, 13) and b.mask.tolist() == [[True, True, False]] * n
  assert (b.material[:, 2] == -1).all() and (b.objects[:, 2] == 0).all()
  onehot = tr.obs.context[:, :10 * 2].reshape(n, 2, 10)[..., :len(physics.MATERIALS)]
  assert (onehot[np.arange(n)[:, None], np.arange(2)[None], b.material[:, :2]] == 1).all()
  padded = batch_lib.transition(tr, 3, dims, jnp)                # the fused program pads with jax.numpy
  for x, y in zip(b, padded):
    np.testing.assert_array_equal(x, y)


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
  with pytest.raises(ConfigError, match="play.episodes_per_chunk"):
    load(SMOKE, ["--config.play.eval_every=3"], validate=experiment.validate)
  with pytest.raises(ConfigError, match="play.episodes"):
    load(SMOKE, ["--config.play.episodes=10"], validate=experiment.validate)
  with pytest.raises(ConfigError, match="curriculum.threshold"):
    load(SMOKE, ["--config.curriculum.threshold=(0.1, 0.1)"], validate=experiment.validate)
  with pytest.raises(ConfigError, match="curiosity.alp_slow"):
    load(SMOKE, ["--config.curiosity.alp_slow=0.0"], validate=experiment.validate)
  with pytest.raises(ConfigError, match="physics.timestep"):
    load(SMOKE, ["--config.physics.timestep=-0.1"], validate=experiment.validate)
  with pytest.raises(ConfigError, match="physics.mass_scale"):
    load(SMOKE, ["--config.physics.mass_scale=(1.0, 1e999)"], validate=experiment.validate)
