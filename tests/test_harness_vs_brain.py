"""Harness versus brain: the fitness formula on hand-computed genomes, the controller's rules,
selection on a small config, results pinned to the recorded values, determinism, sharded equals
unsharded, and smoke end to end."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlab.core import config as config_lib, mesh, receipts, report, train
from jaxlab.evolution import controller, world
from jaxlab.evolution.harness_vs_brain import experiment, sweep
from launch import main as launch

SMOKE = "configs/harness_vs_brain.py:smoke"
K = world.Constants()


@pytest.fixture(scope="module")
def tasks():
  return jax.jit(lambda key: world.draw_tasks(key, K))(jax.random.key(3))


def _genome(tools=(world.BARE,), protos=None, installed=(), sensors=()):
  slots = np.zeros(controller.KMAX, np.int32)
  slots[:len(tools)] = tools
  return controller.Genome(
      protos=jnp.asarray(np.zeros((controller.KMAX, world.N_FEATURES), np.float32) if protos is None else protos),
      tools=jnp.asarray(slots),
      tool_mask=jnp.zeros(world.N_TOOLS, bool).at[jnp.array((world.BARE, *installed), jnp.int32)].set(True),
      sensor_mask=jnp.zeros(world.N_FEATURES, bool).at[jnp.array(sensors, jnp.int32)].set(True))


def test_fitness_formula_on_hand_computed_genomes(tasks):
  # Bare hands only, no sensors: C = 0, P = 0; every niche step scores 0.35, empty steps 0.42.
  bare = _genome()
  used = controller.table_tools(bare, 1, tasks)
  fit = world.fitness(used, bare.tool_mask, bare.sensor_mask, tasks, K)
  niche, scale, task = map(np.asarray, (tasks["niche"], tasks["scale"], tasks["task"]))
  step = np.where(niche == world.EMPTY, 0.42, 0.35) * scale
  s = np.mean([step[task == t].mean() for t in range(3)])
  assert float(fit["C"]) == 0 and float(fit["P"]) == 0
  np.testing.assert_allclose(float(fit["F"]), s, rtol=1e-6)
  # Generalist (c=0.12, nu=0.10) and key (c=0.08, nu=0.15) installed, 2 sensors, K=1 on the generalist.
  g = _genome(tools=(world.GENERALIST,), installed=(world.GENERALIST, world.KEY), sensors=(0, 1))
  fit = world.fitness(controller.table_tools(g, 1, tasks), g.tool_mask, g.sensor_mask, tasks, K)
  c = 0.12 + 0.08 + 0.35 * (0.12 + 0.07) + 0.02 * 2
  step = np.where(niche == world.EMPTY, 0.10, 0.70 * 0.90) * scale - 0.02
  s = np.mean([step[task == t].mean() for t in range(3)])
  np.testing.assert_allclose(float(fit["C"]), c, rtol=1e-6)
  np.testing.assert_allclose(float(fit["F"]), s - 0.32 * c, rtol=1e-5)
  common = np.asarray(tasks["common"])
  myopic = np.mean([step[(task == t) & common].mean() for t in range(3)])
  np.testing.assert_allclose(float(fit["F_myopic"]), myopic - 0.32 * c, rtol=1e-5)
  # Spam: 13 tools (5 past a full kit of 8) and 6 sensors: P = 0.10 x 5.
  full = _genome(installed=range(1, world.N_TOOLS), sensors=range(6))
  np.testing.assert_allclose(float(world.spam_penalty(full.tool_mask, full.sensor_mask)), 0.5, rtol=1e-6)


def test_an_uninstalled_tool_falls_back_to_bare_hands(tasks):
  off = _genome(tools=(world.KEY,))
  assert np.all(np.asarray(controller.table_tools(off, 1, tasks)) == world.BARE)
  on = _genome(tools=(world.KEY,), installed=(world.KEY,))
  assert np.all(np.asarray(controller.table_tools(on, 1, tasks)) == world.KEY)


def test_a_switched_off_sensor_gives_no_information():
  # Slot 0 prototypes niche 0, slot 1 niche 1. With sensors 0 and 1 on, each niche gets its slot;
  # with sensor 1 off the niche-1 patch looks like any patch without feature 0.
  protos = np.zeros((controller.KMAX, world.N_FEATURES), np.float32)
  protos[0, 0], protos[1, 1] = 1.0, 1.0
  steps = {"niche": jnp.array([0, 1]), "seen": jnp.ones((2, world.N_FEATURES), bool)}
  both = _genome(tools=(world.SPECIALISTS[0], world.SPECIALISTS[1]), protos=protos,
                 installed=world.SPECIALISTS[:2], sensors=(0, 1))
  assert list(np.asarray(controller.table_tools(both, 2, steps))) == [world.SPECIALISTS[0], world.SPECIALISTS[1]]
  blind = both.replace(sensor_mask=both.sensor_mask.at[1].set(False))
  info = controller.sensed(blind.sensor_mask, steps["seen"])
  obs = jnp.asarray(world.FEATURES)[steps["niche"]] * info
  assert not np.any(np.asarray(obs)[:, 1])               # nothing of feature 1 gets through
  flipped = blind.replace(protos=blind.protos.at[:, 1].set(0.37))
  np.testing.assert_array_equal(controller.table_tools(blind, 2, steps), controller.table_tools(flipped, 2, steps))


def test_one_slot_always_picks_one_action(tasks):
  g = controller.random_genome(jax.random.key(1), tool_p=1.0, sensor_p=1.0)
  used = np.asarray(controller.table_tools(g, 1, tasks))
  assert len(set(used.tolist())) == 1 and used[0] == int(g.tools[0])
  assert len(set(np.asarray(controller.table_tools(g, 8, tasks)).tolist())) > 1


@pytest.fixture(scope="module")
def config():
  # The smoke variant on fewer K: the same shapes, so the programs compile once for every test.
  return config_lib.load(SMOKE, ["--config.ks=(1, 8)", "--config.brain_widths=(1, 8)"], validate=experiment.validate)


@pytest.fixture(scope="module")
def sweep_8(config, tmp_path_factory):
  """The small sweep on the 8 forced CPU devices."""
  return experiment.simulate(config, tmp_path_factory.mktemp("hvb8"))


def test_selection_improves_elite_fitness_over_10_generations(config, sweep_8):
  table, h = sweep_8
  for regime in ("coevolution", "harness_first"):
    rows = table["regime"] == config.regimes.index(regime)
    first, last = h["elite_fitness"][rows, 0], h["elite_fitness"][rows, -1]
    assert last.mean() > first.mean() + 0.05              # selection really improves the elite
  myopic = table["regime"] == config.regimes.index("brain_directed")
  assert np.all(h["elite_myopic"][myopic, -1] > h["elite_myopic"][myopic, 0])  # it climbs its own score


# Final-generation values of rows 0, 5, 9, 14, 17, 22 (one per regime) and the float64 sum of each
# metric over every row and generation, recorded from the sweep before strategies became a
# registry. Any change to the key streams, the GA or the evaluation moves them; the tolerance
# only allows last-bit differences of another CPU kind (on one machine the runs are bitwise equal).
PINNED = {
    "elite_fitness": (85.12861248850822, [0.30015233159065247, 0.5590122938156128, 0.5746322870254517,
                                          0.4627142548561096, 0.5464922189712524, 0.35375818610191345]),
    "elite_myopic": (67.68011019704863, [0.15279120206832886, 0.4116511642932892, 0.42727118730545044,
                                         0.5239033699035645, 0.3991311490535736, 0.2392565906047821]),
    "deceptive": (197.73970502614975, [1.03000009059906, 1.03000009059906, 1.03000009059906, 0.7409896850585938,
                                       1.03000009059906, 1.0979323387145996]),
    "key_retention": (119.875, [1.0, 0.125, 0.0, 0.0, 0.0, 1.0]),
    "elite_tools": (1411.25, [9.0, 3.5, 4.25, 4.375, 3.75, 9.0]),
    "turnover": (31.273917317390442, [0.0, 0.0, 0.0, 0.19999998807907104, 0.6000000238418579, 0.0]),
}


def test_results_are_pinned_to_the_recorded_run(sweep_8):
  _, h = sweep_8
  for m, (total, finals) in PINNED.items():
    np.testing.assert_allclose(float(np.asarray(h[m], np.float64).sum()), total, rtol=1e-6, err_msg=m)
    np.testing.assert_allclose(h[m][[0, 5, 9, 14, 17, 22], -1], finals, rtol=1e-6, err_msg=m)


@pytest.mark.float_sensitive
def test_best_so_far_tracks_the_champion(config, sweep_8):
  table, h = sweep_8
  true_f = table["regime"] != config.regimes.index("brain_directed")
  best = h["best_fitness"][true_f]
  # Selected on true F, the best so far never falls and is never below the generation's elite mean
  # (the champion is one of the elite); it starts as generation 0's best.
  assert np.all(np.diff(best, axis=1) >= 0)
  assert np.all(best >= h["elite_fitness"][true_f])
  # Selected on the myopic twin, the champion is the myopic best: its true F can fall.
  assert np.isfinite(h["best_fitness"][~true_f]).all()


@pytest.mark.float_sensitive
def test_determinism_and_sharded_equals_unsharded(config, sweep_8, tmp_path):
  one = jax.sharding.Mesh(np.array(jax.devices()[:1]), (mesh.AXIS,))
  table, h = experiment.simulate(config, tmp_path / "one", mesh_=one)
  again = experiment.simulate(config, tmp_path / "again")[1]
  for m in sweep.METRICS:
    np.testing.assert_array_equal(again[m], sweep_8[1][m])   # determinism: bit for bit
    # One device against eight: bit for bit too (each row kind is its own program; when every
    # row also ran the MLP beside its table, XLA compiled the 1- and 8-device programs'
    # fitness sums differently and the last bit moved from generation 0).
    np.testing.assert_array_equal(h[m], sweep_8[1][m])


def test_resume_from_a_generation_chunk_is_bitwise_identical(config, sweep_8, tmp_path):
  with pytest.raises(train.Stopped):
    experiment.simulate(config, tmp_path, stop_after=1)
  _, h = experiment.simulate(config, tmp_path)
  for m in sweep.METRICS:
    np.testing.assert_array_equal(h[m], sweep_8[1][m])


@pytest.mark.float_sensitive
def test_smoke_end_to_end(tmp_path):
  assert launch.main(["run", SMOKE, "--workdir", str(tmp_path)]) == 0
  summary = json.loads((tmp_path / "summary.json").read_text())
  fig = summary["figures"]["coevolution/K=8/elite_fitness"]
  assert set(fig) == {"mean", "sd", "n"} and fig["n"] == 2
  assert summary["comparisons"] and summary["claims"]
  assert {report.verdict_kind(c["verdict"]) for c in summary["claims"]} <= set(report.CLAIM_VERDICTS)
  assert all(c["interval"]["n"] == 2 for c in summary["claims"])      # graded over the seeds
  for name in ("report.md", "regimes.json", "fitness_vs_k.png", "fitness_vs_width.png", "turnover.png", "runs.npz"):
    assert (tmp_path / name).is_file()
  before = (tmp_path / "summary.json").read_bytes()
  assert launch.main(["report", str(tmp_path)]) == 0
  assert (tmp_path / "summary.json").read_bytes() == before
  result = receipts.verify(tmp_path)
  assert result.ok, result.table()


def test_config_errors_name_the_field():
  with pytest.raises(config_lib.ConfigError, match="ks"):
    config_lib.load(SMOKE, ["--config.ks=(1, 9)"], validate=experiment.validate)
  with pytest.raises(config_lib.ConfigError, match="strategy_params.conservative.harness_rate: must be a probability"):
    config_lib.load(SMOKE, ['--config.strategy_params={"conservative": {"harness_rate": 1.5}}'],
                    validate=experiment.validate)
  with pytest.raises(config_lib.ConfigError, match="regimes: .*no strategy 'coevolutoin'"):
    config_lib.load(SMOKE, ["--config.regimes=('coevolutoin',)"], validate=experiment.validate)
  with pytest.raises(config_lib.ConfigError, match="evolves the genome kinds .*not .table."):
    config_lib.load(SMOKE, ["--config.regimes=('evosax:CMA_ES@table',)"], validate=experiment.validate)
  with pytest.raises(config_lib.ConfigError, match="strategy_params.evosax:Open_ES.stdd: not a hyperparameter"):
    config_lib.load(SMOKE, ["--config.regimes=('evosax:Open_ES',)", '--config.strategy_params={"evosax:Open_ES": '
                            '{"stdd": 0.1}}'], validate=experiment.validate)
  with pytest.raises(config_lib.ConfigError, match="imports: cannot import"):
    config_lib.load(SMOKE, ["--config.imports=('no_such_module_here',)"], validate=experiment.validate)


def test_the_study_variants_validate():
  for variant in ("gpu", "evosax", "widths"):
    config = config_lib.load(f"configs/harness_vs_brain.py:{variant}", validate=experiment.validate)
    assert len(experiment.regimes(config)) == len(config.regimes)
