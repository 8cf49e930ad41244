"""Evolution as a library: the strategy registry, evosax by name (both signatures, maximizing),
a strategy from outside the package run by name beside the published ones (bitwise on 1 and 8
devices), compiled programs keyed by the strategy, and the public fitness API against the sweep.

One small sweep (module fixture) serves most tests; its sizes match the smoke variant's, so the
end-to-end run by name reuses its compiled programs.
"""

import json
import re
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxlab.evolution
from jaxlab.core import config as config_lib, mesh
from jaxlab.evolution import controller, strategies
from jaxlab.evolution import genomes as genomes_lib
from jaxlab.evolution.harness_vs_brain import experiment, sweep
from launch import main as launch

SMOKE = "configs/harness_vs_brain.py:smoke"
SIZES = ["--config.ks=(2,)", "--config.brain_widths=(2,)"]
ATOL = 4 * 2.0**-23   # four float32 units at 1


@pytest.fixture(scope="module")
def example(tmp_path_factory):
  """docs/evolution.md's random-search example, as a module of its own on sys.path (`my_search`)."""
  text = open("docs/evolution.md").read()
  code = re.search(r"## Adding a strategy.*?```python\n(.*?)```", text, re.S).group(1)
  folder = tmp_path_factory.mktemp("user_code")
  (folder / "my_search.py").write_text(code)
  sys.path.insert(0, str(folder))
  yield code
  sys.path.remove(str(folder))
  sys.modules.pop("my_search", None)
  strategies.unregister("random_search")


def _load(*overrides):
  return config_lib.load(SMOKE, [*SIZES, *overrides], validate=experiment.validate)


@pytest.fixture(scope="module")
def library(example, tmp_path_factory):
  """Coevolution, the docs' random search (imported by the config), evosax's SimpleGA
  (population-based) and CMA-ES (distribution-based) in one sweep on the 8 forced devices."""
  config = _load("--config.imports=('my_search',)",
                 "--config.regimes=('coevolution', 'random_search', 'evosax:SimpleGA', 'evosax:CMA_ES')")
  # CMA-ES decomposes its covariance with LAPACK, which deadlocks across several CPU devices in
  # this jaxlib: the sweep runs that program on one device and says so.
  with pytest.warns(UserWarning, match="evosax_CMA_ES: runs on one CPU device"):
    table, h, states = experiment.simulate(config, tmp_path_factory.mktemp("lib8"), states=True)
  return config, table, h, states


def test_registry_round_trip():
  def factory(population_size, genome, bonus=0):
    return strategies.PrototypeGA(population_size + bonus)

  strategies.register("probe_ga", factory, params={"n_elite": 3}, myopic=True)
  try:
    assert "probe_ga" in strategies.names()
    r = strategies.resolve("probe_ga", 16, overrides={"proto_rate": 0.5, "myopic": False})
    assert r.strategy == strategies.PrototypeGA(16) and r.genome == genomes_lib.Table() and not r.myopic
    assert int(r.params.n_elite) == 3 and r.params.proto_rate.dtype == np.float32
    assert float(r.params.proto_rate) == np.float32(0.5) and r.population_based
    assert strategies.resolve("probe_ga", 16, overrides={"bonus": 4}).strategy.population_size == 20  # an option
    with pytest.raises(strategies.RegimeError, match="must be an integer in"):
      strategies.resolve("probe_ga", 16, overrides={"n_elite": 16})
    with pytest.raises(strategies.RegimeError, match="evolves the genome kinds"):
      strategies.resolve("probe_ga@mlp", 16)
    with pytest.raises(ValueError, match="already registered"):
      strategies.register("probe_ga", factory)
    strategies.register("probe_ga", factory, params={"n_elite": 1}, replace=True)
    assert int(strategies.resolve("probe_ga", 16).params.n_elite) == 1
    with pytest.raises(ValueError, match="strategy name"):
      strategies.register("evosax:Mine", factory)
  finally:
    strategies.unregister("probe_ga")
  assert "probe_ga" not in strategies.names()
  with pytest.raises(strategies.RegimeError, match="no strategy 'probe_ga'"):
    strategies.resolve("probe_ga", 16)
  assert "evosax:CMA_ES" in strategies.evosax_names()


def test_evosax_adapter_maximizes_and_starts_population_based_algorithms():
  kind = genomes_lib.Brain(4)
  key = jax.random.key(0)
  fitness = jnp.arange(8.0)
  ga = strategies.resolve("evosax:SimpleGA", 8, hidden=4)
  assert ga.population_based                      # init(key, population, fitness, params)
  population = jax.vmap(kind.random)(jax.random.split(key, 8))
  state = ga.strategy.init(key, population, fitness, ga.params)
  # evosax keeps its own minimizing sign inside its state ...
  assert float(state.best_fitness) == -7.0
  children, state = ga.strategy.ask(key, state, ga.params)
  state, metrics = ga.strategy.tell(key, children, fitness, state, ga.params)
  # ... and the adapter's metrics are in jaxlab's: the best F is the largest.
  assert float(metrics["best_fitness_in_generation"]) == 7.0 and float(metrics["best_fitness"]) == 7.0
  es = strategies.resolve("evosax:SNES", 8, hidden=4, overrides={"std_init": 0.5})
  assert not es.population_based and float(es.params.std_init) == 0.5
  state = es.strategy.init(key, kind.mean(), es.params)
  population, state = es.strategy.ask(key, state, es.params)
  _, metrics = es.strategy.tell(key, population, fitness, state, es.params)
  assert float(metrics["best_fitness"]) == 7.0


def test_outside_strategy_and_evosax_run_by_name_in_one_sweep(library):
  config, table, h, _ = library
  assert config.regimes == ("coevolution", "random_search", "evosax:SimpleGA", "evosax:CMA_ES")
  for i, name in enumerate(config.regimes):
    rows = table["regime"] == i
    assert rows.sum() == 2 and np.isfinite(h["elite_fitness"][rows]).all()
    best = h["best_fitness"][rows]
    assert np.all(np.diff(best, axis=1) >= 0)     # selected on true F: never falls
    assert best[:, -1].mean() > best[:, 0].mean(), name  # each finds better genomes than its first
  # Random search draws a fresh population each generation: its elite stays where chance puts it,
  # while its best so far climbs (the reason the report records both).
  rs = table["regime"] == 1
  assert (h["best_fitness"][rs, -1] - h["best_fitness"][rs, 0]).mean() > (
      h["elite_fitness"][rs, -1] - h["elite_fitness"][rs, 0]).mean()


@pytest.mark.float_sensitive
def test_outside_strategy_beside_coevolution_is_bitwise_equal_on_1_and_8_devices(library, tmp_path):
  # The random search of the 8-device sweep (beside coevolution, SimpleGA and CMA-ES), alone on one
  # device: every row's results are the same bits (coevolution's are checked in test_harness_vs_brain).
  config, table, h, _ = library
  one = jax.sharding.Mesh(np.array(jax.devices()[:1]), (mesh.AXIS,))
  alone = _load("--config.imports=('my_search',)", "--config.regimes=('random_search',)")
  t1, h1 = experiment.simulate(alone, tmp_path, mesh_=one)
  rows = table["regime"] == 1
  np.testing.assert_array_equal(t1["seed"], table["seed"][rows])
  for m in sweep.METRICS:
    np.testing.assert_array_equal(h1[m], h[m][rows], err_msg=m)


def test_a_changed_strategy_recompiles(example, library, tmp_path):
  """The compiled programs are keyed by the strategy object, never by its name: re-registering a
  name runs the new strategy (a cache keyed by name would silently rerun the old one)."""
  import my_search
  config, table, h, _ = library

  class Lazy(my_search.RandomSearch):
    """Asks the same genome (the kind's mean) every generation."""
    def ask(self, key, state, params):
      mean = self.genome.mean()
      return jax.tree.map(lambda x: jnp.broadcast_to(x, (self.population_size, *jnp.shape(x))), mean), state

  def run():
    c = _load("--config.regimes=('probe',)")
    return experiment.simulate(c, tmp_path / str(len(list(tmp_path.iterdir()))))[1]

  searched = h["elite_fitness"][table["regime"] == 1]
  try:
    strategies.register("probe", my_search.RandomSearch)
    np.testing.assert_array_equal(run()["elite_fitness"], searched)
    strategies.register("probe", Lazy, replace=True)
    lazy = run()["elite_fitness"]
    assert np.all(lazy == lazy[:, :1]) and not np.array_equal(lazy, searched)
    strategies.register("probe", my_search.RandomSearch, replace=True)
    np.testing.assert_array_equal(run()["elite_fitness"], searched)
  finally:
    strategies.unregister("probe")


def test_the_fitness_api_scores_what_the_sweep_scored(library):
  """Same tasks bit for bit; the same F to a few float32 units of the O(1) task sums F is a
  difference of (the sweep's program adds each task's steps in another vectorized order)."""
  config, table, h, states = library
  # The prototype GA keeps its last generation and that generation's selection fitness (true F).
  idx, state = states["coevolution"]
  for row, (seed, k) in enumerate(zip(table["seed"][idx], table["capacity"][idx])):
    tasks = jaxlab.evolution.tasks(config, int(seed))
    for name, v in tasks.items():
      np.testing.assert_array_equal(v, state["tasks"][name][row], err_msg=name)
    population = jax.tree.map(lambda x: x[row], state["strategy"].population)
    F = np.asarray(jaxlab.evolution.fitness(population, int(seed), config, int(k))["F"])
    np.testing.assert_allclose(F, state["strategy"].fitness[row], rtol=0, atol=ATOL)
    # ... and the recorded elite fitness is the mean of its 8 best.
    np.testing.assert_allclose(np.sort(F)[::-1][:config.elite].mean(), h["elite_fitness"][idx[row], -1], rtol=1e-6)
    # Another seed's tasks score the same genomes differently (what a wrong task key would do).
    other = np.asarray(jaxlab.evolution.fitness(population, int(seed) + 1, config, int(k))["F"])
    assert np.abs(other - F).max() > 1e-3
  # SimpleGA (population-based, MLP genomes) keeps its last population and evosax's -F.
  ga = experiment.regimes(config)[2].strategy.algorithm
  idx, state = states["evosax_SimpleGA"]
  for row, (seed, width) in enumerate(zip(table["seed"][idx], table["capacity"][idx])):
    s = jax.tree.map(lambda x: x[row], state["strategy"])
    F = np.asarray(jaxlab.evolution.mlp_fitness(ga.get_population(s), int(seed), config, int(width))["F"])
    np.testing.assert_allclose(F, -np.asarray(s.fitness), rtol=0, atol=ATOL)
  key = jax.random.fold_in(jax.random.fold_in(jax.random.key(config.seed), 1), 0)
  np.testing.assert_array_equal(jax.random.key_data(jaxlab.evolution.task_key(config, 1)), jax.random.key_data(key))


def test_mlp_fitness_inside_a_harness(library):
  config = library[0]
  # The fixture's MLP shape and population, so the field-kit scorer is the one already compiled.
  params = jax.vmap(genomes_lib.Brain(2).random)(jax.random.split(jax.random.key(2), config.population))
  kit = controller.field_kit()
  same = jaxlab.evolution.mlp_fitness(params, 0, config, 2, *kit)
  np.testing.assert_allclose(same["F"], jaxlab.evolution.mlp_fitness(params, 0, config, 2)["F"], rtol=0, atol=ATOL)
  bare = jnp.zeros(14, bool).at[0].set(True), jnp.zeros(6, bool)
  assert np.all(np.asarray(jaxlab.evolution.mlp_fitness(params, 0, config, 2, *bare)["F"]) != np.asarray(same["F"]))


def test_run_by_name_from_the_command_line(library, tmp_path):
  # The smoke variant beside an evosax algorithm, as a new user types it (programs shared with
  # the fixture: same sizes).
  with pytest.warns(UserWarning, match="one CPU device"):
    assert launch.main(["run", SMOKE, "--workdir", str(tmp_path), *SIZES,
                        "--config.regimes=('coevolution','evosax:CMA_ES')"]) == 0
  summary = json.loads((tmp_path / "summary.json").read_text())
  assert {"coevolution/K=2/best_fitness", "evosax:CMA_ES/K=2/elite_fitness"} <= set(summary["figures"])
  regimes = json.loads((tmp_path / "regimes.json").read_text())
  assert regimes["evosax:CMA_ES"]["strategy"] == "CMA_ES" and regimes["evosax:CMA_ES"]["genome"] == "mlp"
  report = (tmp_path / "report.md").read_text()
  assert "Best-so-far fitness" in report and "| evosax:CMA_ES | CMA_ES | mlp | F |" in report
