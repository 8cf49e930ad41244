"""Benchmarks: each batched NumPy baseline computes the jitted model's figures on the same inputs
(JAX-drawn worlds, uniforms, days and tasks), its own NumPy draws follow the model's distributions,
the fair comparison's workers really run on the cores they are given, and the suite's `tiny` size
runs end to end (the accelerator suite's code paths, on CPU)."""

import json
import subprocess
import sys

import jax
import numpy as np
import pytest

from benchmarks import common, suite
from benchmarks import harness_vs_brain as hvb_bench
from benchmarks import harness_vs_brain_numpy as hvb
from benchmarks import hidden_gems_numpy as gems_np
from benchmarks import org_forms_numpy as org_np
from benchmarks import proactive_memory_numpy as memory_np
from jaxlab.core import config as config_lib
import jaxlab.evolution
from jaxlab.evolution import controller, evaluation, strategies
from jaxlab.evolution import genomes as genomes_lib
from jaxlab.evolution.harness_vs_brain import experiment as hvb_experiment, sweep
from jaxlab.memory.proactive import experiment as memory_experiment, grid as memory_grid, records, sim
from jaxlab.swarm.hidden_gems import experiment as gems_experiment, model as gems_model
from jaxlab.swarm.org_forms import experiment as org_experiment, grid as org_grid, model as org_model


# --- org forms -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def org():
  """JAX-drawn worlds of every structure, promotion rule and load kind (40 seeds each) and the
  jitted figures of the first seed of each."""
  config = config_lib.load("configs/org_forms.py:smoke", validate=org_experiment.validate)
  table = org_grid.build(config)
  picks = []
  for study, key, values in (("main", "structure", range(3)), ("promotion", "promotion", range(4)),
                             ("graicunas", "load", [org_model.GRAICUNAS])):
    for v in values:
      picks.append(np.nonzero((table["study"] == org_grid.STUDIES.index(study)) & (table[key] == v))[0][0])
  rows = {key: np.repeat(v[np.array(picks)], 40, axis=0) for key, v in org_grid.model_inputs(table).items()}
  rows["seed"] = np.arange(len(rows["seed"]), dtype=np.int32)
  k = org_experiment.constants(config)
  worlds = jax.device_get(jax.jit(jax.vmap(lambda r: org_model.draw_world(org_model.run_key(r, k), r, k)))(rows))
  first = np.arange(0, len(rows["seed"]), 40)
  at = lambda tree: {key: v[first] for key, v in tree.items()}
  figures = jax.jit(jax.vmap(lambda w, r: org_model.simulate(w, r, k)))(at(worlds), at(rows))
  return k, rows, worlds, at, jax.device_get(figures)


@pytest.mark.float_sensitive
def test_org_forms_batched_numpy_equals_the_jitted_model(org):
  k, rows, worlds, at, ours = org
  theirs = org_np.simulate_batch(at(worlds), at(rows), k)
  for name in org_model.METRICS:
    np.testing.assert_allclose(theirs[name], ours[name], rtol=1e-5, atol=1e-5, err_msg=name)


def test_org_forms_numpy_worlds_follow_the_model_distribution(org):
  k, rows, ours, _, _ = org
  theirs = org_np.draw_worlds(np.random.default_rng(0), rows, k)
  for key in ours:
    assert ours[key].shape == theirs[key].shape, key
  np.testing.assert_array_equal(theirs["role"], ours["role"])
  spec = ours["role"] == org_model.SPECIALIST
  stats = lambda w: np.array([w["traits"].mean(), w["specialty"][spec].max(-1).mean(),
                              w["specialty"][~spec].max(-1).mean(), (w["tasks"].max(-1) == 0.5).mean(),
                              (w["block"] == 0).mean()])
  np.testing.assert_allclose(stats(theirs), stats(ours), rtol=0.05)
  # And the sweep's figures agree in distribution: mean cumulative output within 4 standard errors.
  a = org_np.simulate_batch(theirs, rows, k)["cum_output"]
  b = org_np.simulate_batch(ours, rows, k)["cum_output"]
  assert abs(a.mean() - b.mean()) < 4 * np.sqrt(a.var() / len(a) + b.var() / len(b))


# --- hidden gems -----------------------------------------------------------------------------

@pytest.mark.float_sensitive
def test_hidden_gems_batched_numpy_equals_the_jitted_model():
  k = gems_experiment.constants(config_lib.load("configs/hidden_gems.py:smoke", validate=gems_experiment.validate))
  rows = {"seed": np.arange(12, dtype=np.int32), "rho": np.tile(np.array([0.0, 0.4, 1.0], np.float32), 4)}
  ours = jax.device_get(jax.jit(gems_model.batch_fn(k))(rows))
  u = jax.device_get(jax.jit(jax.vmap(lambda r: gems_model.draw_uniforms(gems_model.run_key(r, k), k)))(rows))
  theirs = gems_np.simulate_batch(u, rows["rho"], k)
  assert set(theirs) == set(ours)
  for name in ours:
    assert theirs[name].shape == ours[name].shape, name
    np.testing.assert_allclose(theirs[name], ours[name], rtol=1e-5, atol=1e-5, err_msg=name)
  mine = gems_np.draw_uniforms(np.random.default_rng(0), 3, k)
  assert all(mine[n].shape == (3,) + u[n].shape[1:] and 0 < mine[n].min() and mine[n].max() < 1 for n in u)


# --- proactive memory ------------------------------------------------------------------------

@pytest.mark.float_sensitive
def test_proactive_memory_batched_numpy_equals_the_jitted_model():
  config = config_lib.load("configs/proactive_memory.py:smoke", validate=memory_experiment.validate)
  k = memory_experiment.constants(config)
  omega = memory_grid.omega_of(config.policy.period_h)
  a, w = memory_grid.policy_params(config, config.policy.amplitude, omega)["full"]
  n = 24
  rows = {"seed": np.arange(n, dtype=np.int32), "scale": np.ones(n, np.float32),
          "amplitude": np.tile(a, (n, 1)), "omega": np.tile(w, (n, 1))}
  traces = jax.device_get(sim.trace_fn(k)(rows))
  mem = {f: getattr(traces["memories"], f) for f in traces["memories"].__dataclass_fields__}
  oracle = {f: getattr(traces["oracle"], f) for f in traces["oracle"].__dataclass_fields__}
  picks, metrics = memory_np.simulate_batch(mem, oracle, k)
  np.testing.assert_array_equal(picks, traces["pick"])
  for name in sim.METRICS:
    np.testing.assert_allclose(metrics[name], traces[f"m_{name}"], rtol=1e-6, equal_nan=True, err_msg=name)
  # The batched day drawer, fed the uniforms `records.draw_day` draws, lays out the same days.
  u = jax.device_get(jax.vmap(lambda s: jax.random.uniform(
      records.day_key(k, s), (records.N_MEMORIES, 3 + records.N_WINDOWS)))(rows["seed"]))
  mem2, oracle2 = memory_np.draw_days(u, rows["scale"], rows["amplitude"], rows["omega"], k)
  for f in mem:
    np.testing.assert_allclose(mem2[f], mem[f], rtol=1e-6, err_msg=f)
  for f in oracle:
    np.testing.assert_array_equal(oracle2[f], oracle[f], err_msg=f)


# --- harness versus brain --------------------------------------------------------------------

class JaxDraws:
  """The random numbers the jitted sweep draws, for each row: its tasks' uniforms, the initial
  genomes' and each generation's (keys as in evaluation.py: fold_in(seed key, 0 / 1 / 2 + t))."""

  def __init__(self, rows, k):
    self.keys = jax.vmap(lambda s: evaluation.seed_key(k.root_seed, s))(rows["seed"])
    self.k = k
    n = k.population
    self._tasks = jax.jit(jax.vmap(lambda key: jax.random.uniform(
        jax.random.fold_in(key, 0), (hvb.task_uniforms(k.world),))))
    self._genomes = jax.jit(jax.vmap(lambda key: jax.vmap(lambda g: jax.random.uniform(g, (hvb.GENOME_UNIFORMS,)))(
        jax.random.split(jax.random.split(jax.random.fold_in(key, 1))[0], n))))
    self._generation = jax.jit(jax.vmap(lambda key, t: jax.random.uniform(
        jax.random.split(jax.random.fold_in(key, 2 + t))[0], (n, 1 + strategies.N_UNIFORM)), (0, None)))

  def tasks(self):
    return np.asarray(self._tasks(self.keys))

  def genomes(self):
    return np.asarray(self._genomes(self.keys))

  def generation(self, t):
    return np.asarray(self._generation(self.keys, t))


@pytest.fixture(scope="module")
def evolution():
  config = config_lib.load("configs/harness_vs_brain.py:smoke", [f"--config.regimes={strategies.PUBLISHED}"],
                           validate=hvb_experiment.validate)
  ks = np.asarray(config.ks, np.int32)
  rows = hvb_bench.rows("tiny", 0, 5 * len(ks))                    # 5 regimes x 4 K, seed 0
  k = hvb_experiment.constants(config)
  return config, k, rows, JaxDraws(rows, k)


@pytest.mark.float_sensitive
def test_harness_vs_brain_batched_fitness_equals_the_jitted_model(evolution):
  config, k, rows, draws = evolution
  tasks = hvb.draw_tasks(draws.tasks(), k.world)
  jax_tasks = jax.tree.map(lambda *x: np.stack(x), *[jaxlab.evolution.tasks(config, int(s)) for s in rows["seed"]])
  for key in tasks:
    np.testing.assert_array_equal(tasks[key], jax_tasks[key], err_msg=key)
  # Random genomes with every slot count, sensor and tool mask: the fitness, its myopic twin and
  # the myopic tool values an individual is scored with.
  keys = jax.random.split(jax.random.key(7), len(rows["seed"]) * k.population)
  population = jax.vmap(controller.random_genome)(keys)
  population = jax.tree.map(lambda x: np.asarray(x).reshape(len(rows["seed"]), k.population, *x.shape[1:]),
                            population)
  table = genomes_lib.Table()
  ours = jax.jit(jax.vmap(jax.vmap(lambda g, n, t: table.evaluate(g, n, t, (), k.world), (0, None, None))))(
      population, rows["n_slots"], jax_tasks)
  ours["tool_value"] = ours["genome"].tool_value
  theirs = hvb.evaluate(dict(protos=population.protos, tools=population.tools, tool_mask=population.tool_mask,
                             sensor_mask=population.sensor_mask), rows["n_slots"], tasks, k.world)
  for name in ("F", "F_myopic", "deceptive", "tool_value"):
    np.testing.assert_allclose(theirs[name], np.asarray(ours[name]), rtol=0, atol=1e-6, err_msg=name)


@pytest.mark.float_sensitive
def test_harness_vs_brain_batched_ga_follows_the_jitted_sweep(evolution):
  """Fed the sweep's own random numbers, the NumPy GA retraces its first generations (after a few,
  last-bit differences in the Gaussian steps can reorder near-equal fitnesses and the runs part)."""
  config, k, rows, draws = evolution
  generations = 3
  program, inputs = hvb_bench.jax_inputs(config, rows)
  ours = jax.device_get(jax.jit(sweep.batch_run(program, generations))(inputs))
  regimes = hvb_bench.regime_settings(config)
  theirs = hvb.evolve(rows, hvb.params_of(regimes, rows["regime"]), draws, generations, config.elite, k.world)
  for name in hvb.METRICS:
    np.testing.assert_allclose(theirs[name], ours[name], rtol=0, atol=1e-5, err_msg=name)


# --- the harness and the suite ---------------------------------------------------------------

def test_ratio_line_and_parsed_figures():
  line = common.ratio_line("org forms", dict(ratio_1core=5.04, ratio_all=0.8, ratio_loop=41.0))
  assert line.startswith("org forms: jax/numpy-batched = 5.0x (1 core), 0.8x (all cores); jax/numpy-loop = 41.0x")
  assert "does not beat batched NumPy on all cores" in line
  figures = suite.parse_figures("stage 1 drop   c    256 envs:       29,630 env-steps/s  (setup + compile 1.2 s)\n"
                                "MFU   : 41.5% of 989 TFLOP/s bf16 peak\nno figures here")
  assert figures == {"stage 1 drop c 256 envs": [29630.0, 1.2], "MFU": [41.5, 989.0]}


def test_workers_run_on_the_cores_they_are_given():
  """A 1-core worker cannot use more than one core's CPU time (taskset and XLA's thread flags)."""
  m = common.measure("benchmarks.proactive_memory", "jax", "tiny", 64, cores=1, repeats=2)
  assert m["devices"] == 1 and m["platform"] == "cpu" and m["seconds"] > 0 and m["compile_s"] >= 0
  assert m["cores_used"] <= 1.05, m


def test_suite_tiny_runs_every_family(tmp_path):
  out = tmp_path / "tiny.json"
  done = subprocess.run([sys.executable, "benchmarks/suite.py", "--size", "tiny", "--out", str(out)],
                        capture_output=True, text=True)
  assert done.returncode == 0, done.stderr[-3000:]
  result = json.loads(out.read_text())
  families = result["families"]
  for module in suite.FAMILIES:
    name = __import__(module, fromlist=["NAME"]).NAME
    fam = families[name]
    assert fam["rate"] > 0 and fam["compile_s"] >= 0 and fam["devices"] >= 1 and fam["platform"] == "cpu", fam
  for script in suite.SCRIPTS:
    assert "skipped" in families[script] or families[script]["lines"], families[script]
  assert result["machine"]["cores"] >= 1 and "load_end" in result["machine"]
  assert "partial" not in result   # the finished suite's JSON replaces the one saved after each item


def test_suite_stops_a_program_past_its_time_and_keeps_what_it_measured():
  """One family that never finishes on a device must not cost the figures of the others: each is
  stopped at the time limit, recorded as such, and the figures so far are saved after each."""
  saves = []
  out = suite.device_suite("tiny", log=lambda line: None, timeout=0.01, saved=lambda o: saves.append(dict(o)))
  names = [__import__(m, fromlist=["NAME"]).NAME for m in suite.FAMILIES]
  for name in names:
    assert out[name]["timed_out"] == 0.01 and "rate" not in out[name], out[name]
  for script in suite.SCRIPTS:
    assert "timed_out" in out[script] or "skipped" in out[script], out[script]
  assert len(saves) == len(names) + len(suite.SCRIPTS) and list(saves[0]) == names[:1]


def test_phases_times_lowering_compiling_and_calls_at_any_block():
  from benchmarks import phases
  lines = []
  for block in (0, 16):
    out = phases.phases("hidden_gems", "tiny", runs=40, block=block, log=lines.append)
    assert set(out) == {"lower", "compile", "call0", "call1", "temp_bytes"}
    assert all(out[k] > 0 for k in out)
  assert sum("compile  hidden_gems 40 runs, block 16" in line for line in lines) == 1
