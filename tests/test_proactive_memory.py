"""Tests of the proactive-memory experiment (proactive-memory-value.md).

Compilation dominates on CPU, so every test reuses the programs the smoke run compiles: the sweep,
the learner, and `sim.trace_fn` on batches of three rows (the planted-day replay's shape).
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest

from benchmarks import proactive_memory as bench
from jaxlab.core import receipts, report, results
from jaxlab.core.config import ConfigError, load
from jaxlab.memory.proactive import experiment, grid, records, sim, value
from launch.main import main

ROOT = Path(__file__).resolve().parents[1]
SMOKE = f"{ROOT / 'configs' / 'proactive_memory.py'}:smoke"
BATCHES = 6          # trace batches of 3 rows: 18 runs across policies and random days


@pytest.fixture(scope="module")
def smoke_dir(tmp_path_factory):
  workdir = tmp_path_factory.mktemp("proactive_smoke")
  assert main(["run", SMOKE, "--workdir", str(workdir)]) == 0
  return workdir


@pytest.fixture(scope="module")
def setup(smoke_dir):
  config, table, res = results.load(smoke_dir)
  return config, experiment.constants(config), table, res


@pytest.fixture(scope="module")
def traces(setup):
  """Per-tick traces of held-out rows, three at a time (one compiled shape)."""
  config, k, table, _ = setup
  held = np.nonzero(table["split"] == grid.SPLITS.index("heldout"))[0]
  out = []
  for b in range(BATCHES):
    idx = held[b::BATCHES][:3]
    out.append(jax.device_get(sim.trace_fn(k)({key: table[key][idx] for key in grid.MODEL_INPUTS})))
  return jax.tree.map(lambda *xs: np.concatenate(xs), *out)


def test_smoke_end_to_end(smoke_dir, setup):
  config, _, table, res = setup
  for name in ("config.json", "summary.json", "report.md", "runs.npz", "timeline.png", "policies.png",
               "learning.png"):
    assert (smoke_dir / name).is_file(), name
  summary = json.loads((smoke_dir / "summary.json").read_text())
  n_days = 1 + config.train_days + config.heldout_days
  assert len(table["seed"]) == len(grid.POLICIES) * n_days
  fig = summary["figures"]["heldout/full/spam_per_day"]
  assert set(fig) == {"mean", "sd", "n"} and fig["n"] == config.heldout_days
  assert {c["figure"] for c in summary["comparisons"]} >= {"planted/full/precision", "heldout/no_osc/recall"}
  planted = [c for c in summary["claims"] if "(planted day)" in c["claim"]]
  assert planted and all(c["verdict"].endswith("not resolved at n=1") for c in planted)   # one day
  held = [c for c in summary["claims"] if "(held-out days)" in c["claim"]]
  assert held and all(c["interval"]["n"] > 1 and c["interval"]["ci"] is not None for c in held)
  assert all(c["method"] == report.ROUNDING for c in summary["comparisons"])   # the published table is one day
  assert all(np.isfinite(res[m]).all() for m in ("emits", "reward", "spam_per_day"))


@pytest.mark.float_sensitive
def test_smoke_matches_its_receipt(smoke_dir):
  result = receipts.verify(smoke_dir)
  assert result.ok, result.table()


def test_deterministic(smoke_dir, tmp_path):
  """A second run of the same config gives byte-identical summaries and identical runs."""
  assert main(["run", SMOKE, "--workdir", str(tmp_path)]) == 0
  assert (tmp_path / "summary.json").read_bytes() == (smoke_dir / "summary.json").read_bytes()
  _, t1, r1 = results.load(smoke_dir)
  _, t2, r2 = results.load(tmp_path)
  for key in t1:
    np.testing.assert_array_equal(t1[key], t2[key])
  for key in r1:
    np.testing.assert_array_equal(r1[key], r2[key])


def test_trigger_never_chatters(setup, traces):
  """Between two fires of one memory its value dropped below theta - h (the re-arm) at least once."""
  _, k, _, _ = setup
  repeats = 0
  for run in range(len(traces["pick"])):
    v, pick = traces["v"][run], traces["pick"][run]
    for i in range(records.N_MEMORIES):
      fires = np.nonzero(pick == i)[0]
      for a, b in zip(fires[:-1], fires[1:]):
        repeats += 1
        assert (v[a + 1:b, i] < k.theta - k.hysteresis).any(), (run, i, a, b)
      for f in fires:
        assert v[f, i] >= k.theta
  assert repeats > 10        # memories really do fire again, so the check has teeth


def test_no_emit_in_quiet_hours(setup, traces):
  _, k, _, _ = setup
  t = np.arange(k.ticks) * k.tick_h
  quiet = np.asarray(value.quiet(t, k))
  assert quiet.any() and (~quiet).any()
  assert (traces["pick"][:, quiet] == -1).all()
  assert (traces["pick"][:, ~quiet] >= 0).any()
  # Values do cross theta in quiet hours, so the mute is what keeps the agent silent.
  assert (traces["v"][:, quiet].max(axis=-1) >= k.theta).any()


def test_daily_cap_holds(setup, traces):
  _, k, _, _ = setup
  per_day = (traces["pick"] >= 0).reshape(len(traces["pick"]), -1, int(24 / k.tick_h)).sum(-1)
  assert per_day.max() == k.daily_cap       # the cap binds on some days ...
  assert (per_day <= k.daily_cap).all()     # ... and is never exceeded


def test_value_decays_to_envelope_without_oscillation():
  k = records.Constants()
  daily = np.full(3, 2 * np.pi / 24, np.float32)

  @jax.jit   # one compilation instead of one per eager op
  def probe(t, ts):
    mem, _ = records.draw_day(records.day_key(k, 3), 1.0, k)
    flat = records.with_oscillation(mem, np.zeros(3, np.float32), daily)
    osc = records.with_oscillation(mem, np.full(3, 0.5, np.float32), daily)
    return (mem, value.terms(flat, t, k), value.revival(osc, ts[:, None]) / value.envelope(osc, ts[:, None]),
            value.terms(flat, t + 2000.0, k))

  t = np.float32(50.0)
  mem, terms, ratio, late = jax.device_get(probe(t, np.arange(40.0, 64.0, 0.25, dtype=np.float32)))
  envelope = np.exp(-mem.decay * (t - mem.created))
  np.testing.assert_allclose(terms["D"], envelope, rtol=1e-5)
  rest = terms["U"] + terms["C"] + terms["N"] - terms["F"]
  np.testing.assert_allclose(terms["V"] - rest, mem.importance * envelope, rtol=1e-5, atol=1e-6)
  # With A > 0 the revival swings around that envelope, above and below it.
  assert ratio.max() > 1.4 and ratio.min() < 0.6
  # Long after creation, with no surfacing, only the context boost remains.
  np.testing.assert_allclose(late["V"], late["C"], atol=1e-6)


def test_learning_improves_training_objective(setup):
  config, _, _, res = setup
  curve = res["learn_objective"]
  assert len(curve) == config.learn.steps + 1 and np.isfinite(curve).all()
  assert curve[-1] > curve[0] + 0.5, curve
  assert not np.allclose(res["learn_amplitude"][-1], config.policy.amplitude)


@pytest.mark.float_sensitive
def test_numpy_reference_agrees(setup, traces):
  """An independent NumPy tick loop (the benchmark's baseline) picks what the core picks."""
  _, k, _, _ = setup
  mem, oracle = traces["memories"], traces["oracle"]
  for r in range(len(traces["pick"])):
    ref = bench.numpy_day({f: getattr(mem, f)[r] for f in mem.__dataclass_fields__},
                          {f: getattr(oracle, f)[r] for f in oracle.__dataclass_fields__}, k)
    np.testing.assert_array_equal(ref, traces["pick"][r])


def test_config_errors_name_the_field():
  with pytest.raises(ConfigError, match="policy.amplitude"):
    load(SMOKE, ["--config.policy.amplitude=(0.5, 0.5)"], validate=experiment.validate)
  with pytest.raises(ConfigError, match="model.history"):
    load(SMOKE, ["--config.model.history=4"], validate=experiment.validate)
