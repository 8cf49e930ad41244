"""Org forms: invariants on small shapes, the jitted model against the NumPy reference, and the
smoke variant end to end (1 device, 8 devices, 2 processes, and a run that is really killed)."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

from benchmarks import org_forms_numpy as reference
from jaxlab.core import codegen, config as config_lib, mesh, receipts, report
from jaxlab.swarm.org_forms import experiment, grid, model
from launch import main as launch

SMOKE = "configs/org_forms.py:smoke"


@pytest.fixture(scope="module")
def config():
  return config_lib.load(SMOKE, validate=experiment.validate)


@pytest.fixture(scope="module")
def table(config):
  return grid.build(config)


@pytest.fixture(scope="module")
def sample(config, table):
  """A few runs of every structure, promotion rule and load, with their worlds and histories."""
  picks = []
  for study, key, values in (("main", "structure", range(3)), ("promotion", "promotion", range(4)),
                             ("graicunas", "load", [model.GRAICUNAS])):
    for v in values:
      picks += list(np.nonzero((table["study"] == grid.STUDIES.index(study)) & (table[key] == v))[0][:2])
  rows = {k: v[np.array(picks)] for k, v in grid.model_inputs(table).items()}
  k = experiment.constants(config)
  worlds = jax.jit(jax.vmap(lambda r: model.draw_world(model.run_key(r, k), r, k)))(rows)
  hist = jax.jit(jax.vmap(lambda w, r: model.history(w, r, k)))(worlds, rows)
  return k, rows, jax.tree.map(np.asarray, worlds), jax.tree.map(np.asarray, hist)


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
  workdir = tmp_path_factory.mktemp("org_forms_smoke")
  assert launch.main(["run", SMOKE, "--workdir", str(workdir)]) == 0
  return workdir


def test_role_counts_sum_to_n_and_match_the_spec(config):
  for c in config.grid.coord_shares:
    for s in config.grid.spec_shares:
      for k in config.grid.comm_shares:
        assert grid.role_counts(c, s, k, 48).sum() == 48
  np.testing.assert_array_equal(grid.role_counts(0.5, 0.75, 0.1, 48), [14, 5, 24, 5])
  np.testing.assert_array_equal(grid.role_counts(0.25, 0.75, 0.0, 48), [27, 9, 12, 0])


def test_graicunas_counts():
  n = np.array([4.0, 5.0, 6.0])
  np.testing.assert_array_equal(model.pair_load(n, model.GRAICUNAS), [44, 100, 222])
  np.testing.assert_array_equal(model.pair_load(n, model.BROOKS), [6, 10, 15])


def test_coordination_factor():
  f = np.asarray(model.coordination_factor(np.array([0.0, 5.0, 5.0, 5.0]), np.array([0.0, 0.0, 2.0, 9.0]), 1.0))
  assert f[0] == 1.0 and f[3] == 1.0          # no load; skill beyond the load adds nothing
  assert 0 < f[1] < f[2] < 1                  # a smaller gap loses less
  np.testing.assert_allclose(f[1], np.exp(-5 / 6), rtol=1e-6)


def test_history_invariants(sample):
  k, _, _, h = sample
  assert np.all(h["revenue"][:, k.shock:] == 0) and np.all(h["discovery"][:, :k.shock] == 0)
  assert np.all((h["iota"] >= 0) & (h["iota"] <= 1)) and np.all((h["u"] >= 0) & (h["u"] <= 1))
  assert np.all(h["y"] > 0) and np.all(np.isfinite(h["y_net"]))


@pytest.mark.float_sensitive
def test_jax_model_equals_numpy_reference(sample):
  k, rows, worlds, hist = sample
  ours = jax.vmap(lambda h: model.figures(h, k))(hist)
  for i in range(len(rows["seed"])):
    ref = reference.simulate(jax.tree.map(lambda x: x[i], worlds), {n: v[i] for n, v in rows.items()}, k)
    for name in model.METRICS:
      np.testing.assert_allclose(ours[name][i], ref[name], rtol=2e-5, atol=2e-6, err_msg=f"run {i}: {name}")


def test_promotion_moves_four_makers_into_coordination(sample):
  k, rows, worlds, _ = sample
  for i in np.nonzero(np.isin(rows["promotion"], [model.PETER, model.MATCH]))[0]:
    row = {n: v[i] for n, v in rows.items()}
    traits, role = model.promote(worlds["traits"][i], worlds["role"][i], np.zeros(k.n_agents), row, k)
    moved = np.asarray(role) != worlds["role"][i]
    assert moved.sum() == k.promote_n and np.all(np.asarray(role)[moved] == model.COORDINATOR)
    assert np.all(np.asarray(traits)[moved, 0] == 0)   # depth zeroed


def test_same_seed_same_results_and_seeds_differ(config, table):
  rows = {k: v[:16] for k, v in grid.model_inputs(table).items()}
  fn = model.batch_fn(experiment.constants(config))
  a, b = mesh.map_runs(fn, rows, block=config.block), mesh.map_runs(fn, rows, block=config.block)
  for name in model.METRICS:
    np.testing.assert_array_equal(a[name], b[name])
  assert len(set(np.round(a["cum_revenue"], 4))) > 1


def test_smoke_end_to_end(smoke_run, table):
  summary = json.loads((smoke_run / "summary.json").read_text())
  assert {"figures", "comparisons", "claims"} <= set(summary)
  fig = summary["figures"]["main/modules/coord=0.5/spec=0.5/comm=0.1/cum_revenue"]
  assert set(fig) == {"mean", "sd", "n"} and fig["n"] == 2
  kinds = {report.verdict_kind(c["verdict"]) for c in summary["claims"]}
  assert kinds <= set(report.CLAIM_VERDICTS) and "by construction" in kinds
  for c in summary["claims"]:   # two seeds are too few to grade: every claim carries its interval, none is counted
    assert not c["counted"] and (c["interval"] is None or c["interval"]["n"] == 2)
    assert report.verdict_kind(c["verdict"]) in (report.TOO_FEW, "by construction")
  for name in ("report.md", "config.json", "runs.npz", "structures.png", "revenue_heatmap.png", "promotion.png"):
    assert (smoke_run / name).is_file(), name
  with np.load(smoke_run / "runs.npz") as data:
    assert data["results/cum_revenue"].shape == (len(table["seed"]),)
  before = (smoke_run / "summary.json").read_bytes()
  assert launch.main(["report", str(smoke_run)]) == 0
  assert (smoke_run / "summary.json").read_bytes() == before


@pytest.mark.float_sensitive
def test_smoke_matches_its_receipt(smoke_run):
  result = receipts.verify(smoke_run)
  assert result.ok, result.table()


def test_shares_the_report_cannot_read_are_a_config_error():
  with pytest.raises(config_lib.ConfigError, match=r"slice\.spec_share: must be one of grid\.spec_shares \(0\.75,\)"):
    config_lib.load(SMOKE, ["--config.grid.coord_shares=(0.7,)", "--config.grid.spec_shares=(0.75,)"],
                    validate=experiment.validate)
  with pytest.raises(config_lib.ConfigError, match=r"promotion\.cells: the cell .* leaves 3 makers"):
    config_lib.load(SMOKE, ["--config.promotion.cells=((0.9, 0.5, 0.04), (0.125, 0.5, 0.1))"],
                    validate=experiment.validate)


@pytest.mark.float_sensitive
def test_sharded_equals_unsharded(smoke_run, config, table):
  rows = {k: v[: config.chunk_size] for k, v in grid.model_inputs(table).items()}
  one_device = jax.sharding.Mesh(np.array(jax.devices()[:1]), (mesh.AXIS,))
  single = mesh.map_runs(model.batch_fn(experiment.constants(config)), rows, one_device, config.block)
  with np.load(smoke_run / "runs.npz") as data:
    for name in model.METRICS:
      np.testing.assert_array_equal(single[name], data[f"results/{name}"][: config.chunk_size], err_msg=name)


def _jaxlab(args, devices, **kw):
  # Compiled as this process compiles (the same flags), on `devices` devices.
  env = dict(os.environ, XLA_FLAGS=codegen.for_process(devices), PYTHONUNBUFFERED="1")
  return subprocess.Popen([sys.executable, "-m", "launch.main", *args], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, **kw)


def _free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def test_two_processes_equal_one(smoke_run, tmp_path):
  workdir, port = tmp_path / "two", _free_port()
  procs = [_jaxlab(["run", SMOKE, "--workdir", str(workdir), "--distributed", "--coordinator",
                    f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", str(i)], devices=4)
           for i in range(2)]
  outs = [p.communicate(timeout=400)[0] for p in procs]
  assert all(p.returncode == 0 for p in procs), outs
  assert (workdir / "summary.json").read_bytes() == (smoke_run / "summary.json").read_bytes()


def test_killed_run_on_one_device_resumes_to_the_same_summary(smoke_run, tmp_path):
  """Also the one-device run of the whole experiment: its summary equals the 8-device one."""
  workdir = tmp_path / "killed"
  args = ["run", SMOKE, "--workdir", str(workdir)]
  proc = _jaxlab(args, devices=1, start_new_session=True)
  progress = workdir / "progress.jsonl"
  deadline = time.time() + 300
  while time.time() < deadline and proc.poll() is None:
    if progress.is_file() and progress.read_text().count("\n") >= 1:
      os.killpg(proc.pid, signal.SIGKILL)
      break
    time.sleep(0.05)
  proc.wait()
  assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
  assert not (workdir / "summary.json").exists()
  done = progress.read_text().count("\n")
  resumed = _jaxlab(args, devices=1)
  out = resumed.communicate(timeout=400)[0]
  assert resumed.returncode == 0, out
  lines = [json.loads(line) for line in progress.read_text().splitlines()]
  assert done < lines[-1]["of"], "the kill came after the last chunk"
  assert [line["chunk"] for line in lines] == list(range(1, lines[-1]["of"] + 1)), "resumed, not restarted"
  assert (workdir / "summary.json").read_bytes() == (smoke_run / "summary.json").read_bytes()
