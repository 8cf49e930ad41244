"""The Mesa 3 org-forms model (benchmarks/org_forms_mesa.py) against the jitted one: on a slice of
the experiment's cells every figure agrees in distribution; its role split and batch runner agree
with the runs table and its direct runs; the org-forms benchmark's last line carries both ratios."""

import jax
import numpy as np
import pytest

from benchmarks import org_forms as bench
from benchmarks import org_forms_mesa as om
from jaxlab.core import config as config_lib
from jaxlab.swarm.org_forms import experiment, grid, model

SEEDS = 40
# (study, promotion, structure, (coord, spec, comm)): flat with idle coordinators and no communicators;
# modules with communicators under Peter at the reference cell; the tournament at the published winner.
CELLS = (("main", "none", "flat", (0.25, 0.75, 0.0)),
         ("promotion", "peter", "modules", (0.125, 0.5, 0.1)),
         ("promotion", "tournament", "modules", (0.5, 0.75, 0.1)))


@pytest.fixture(scope="module")
def setup():
  config = config_lib.load("configs/org_forms.py:repro", [f"--config.seeds={SEEDS}"], experiment.validate)
  table = grid.build(config)
  return config, table, experiment.constants(config)


def _rows(table, study, promotion, structure, shares):
  pick = ((table["study"] == grid.STUDIES.index(study)) & (table["promotion"] == model.PROMOTIONS.index(promotion))
          & (table["structure"] == model.STRUCTURES.index(structure)))
  for key, share in zip(("coord_share", "spec_share", "comm_share"), shares):
    pick &= np.isclose(table[key], share)
  assert pick.sum() == SEEDS
  return {key: v[pick] for key, v in table.items()}


def test_mesa_figures_agree_in_distribution_with_the_jitted_model(setup):
  """Every figure's mean over 40 Mesa seeds is within 4 standard errors of the difference of means
  of its mean over 40 jitted seeds (plus float32 rounding, for figures with almost no spread)."""
  _, table, k = setup
  mesa_k = om.constants(k, model.PROTOTYPES)
  batch = jax.jit(model.batch_fn(k))
  failures = []
  for cell in CELLS:
    rows = _rows(table, *cell)
    ours = jax.device_get(batch(grid.model_inputs(rows)))
    theirs = om.run_models(om.runs_from_table(rows), mesa_k)
    for name in model.METRICS:
      a, b = np.asarray(ours[name], np.float64), theirs[name]
      se = np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
      gap = abs(a.mean() - b.mean())
      if gap > 4 * se + 1e-5 * (1 + abs(a.mean())):
        failures.append(f"{cell} {name}: jax {a.mean():.5g} ± {a.std(ddof=1):.3g}, mesa {b.mean():.5g} ± "
                        f"{b.std(ddof=1):.3g}, gap {gap:.3g} = {gap / max(se, 1e-30):.1f} SE")
  assert not failures, "\n".join(failures)


def test_mesa_role_split_and_figures_are_the_jitted_model_s(setup):
  config, table, _ = setup
  assert om.METRICS == model.METRICS
  for i in np.unique(table["cell"] + 1000 * table["study"], return_index=True)[1]:
    shares = (table["coord_share"][i], table["spec_share"][i], table["comm_share"][i])
    assert om.role_counts(*map(float, shares), config.model.n_agents) == table["counts"][i].tolist()


def test_mesa_batch_runner_computes_the_direct_runs_figures(setup):
  """mesa.batch_run on 1 and on 2 processes gives each run the figures of running it directly."""
  _, _, k = setup
  mesa_k = om.constants(k, model.PROTOTYPES)
  grid_ = dict(structure=["flat", "isolated"], coord_share=0.0625, spec_share=0.25, comm_share=0.1, seed=[3])
  direct = om.run_models([dict(grid_, structure=s, seed=3) for s in grid_["structure"]], mesa_k)
  for processes in (1, 2):
    runs = sorted(om.batch(grid_, mesa_k, processes), key=lambda r: r["structure"])
    assert [r["structure"] for r in runs] == ["flat", "isolated"]
    for name in om.METRICS:
      np.testing.assert_array_equal([r[name] for r in runs], direct[name], err_msg=name)


def test_benchmark_last_line_has_both_ratios():
  r = dict(ratio_1core=5.04, ratio_all=3.2, ratio_loop=41.0)
  line = bench.ratio_line(r, dict(ratio_1core=812.3, ratio_all=640.0, runs=180))
  assert line.startswith("org forms: jax/numpy-batched = 5.0x (1 core), 3.2x (all cores); jax/numpy-loop = 41.0x")
  assert "jax/mesa = 812.3x (1 core), 640.0x (all cores)" in line and "runs per second" in line
  assert bench.ratio_line(r, None).endswith("jax/mesa: not measured (mesa is not installed)")


def test_mesa_scaling_batches_grow_over_the_main_grid():
  sizes = [bench.mesa_runs(bench.mesa_grid(axes, seeds)) for axes, seeds in bench.MESA_CURVE]
  assert sizes == [3, 15, 45, 90, 180, 360]
  assert bench.mesa_grid(3, 2) == bench.mesa_parameters("cpu")


def test_the_scaling_plot_draws_every_curve_it_is_given(tmp_path):
  from benchmarks import common
  point = lambda n, rate: dict(runs=n, seconds=n / rate, rate=rate, compile_s=None)
  curve = dict(jax=[dict(point(64, 900.0), compile_s=1.5)], numpy=[point(64, 500.0)],
               mesa_1core=[point(3, 10.0), point(15, 15.0)], mesa_all=[point(3, 5.0), point(15, 20.0)])
  labels = common.plot_scaling(dict(family="org forms", unit="runs", curve=curve), tmp_path / "curve.png")
  assert labels == ["JAX, 1 core", "batched NumPy, 1 core", "Mesa batch_run, 1 process",
                    "Mesa batch_run, 1 process per core"]
  assert (tmp_path / "curve.png").is_file()
