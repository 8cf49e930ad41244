"""Hidden gems (swarm-hidden-gems.md): the scores' known values and errors, the model's
invariants, the jitted model against the NumPy reference, and the smoke variant end to end
(8 forced devices, by conftest) against one device.

Compilation dominates: the smoke run is compiled once (module fixture) and the model checks read
its runs.npz; the other model tests jit only the small per-world functions.
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from benchmarks import hidden_gems as reference
from jaxlab.core import config as config_lib
from jaxlab.core import mesh, receipts, report, results
from jaxlab.swarm import hidden_gems
from jaxlab.swarm.hidden_gems import experiment, gems, model, published
from launch import main as launch

CONFIG = "configs/hidden_gems.py"


# --- the scores ------------------------------------------------------------------------------

def test_q_known_values():
  q = np.asarray(gems.q([1, 14, 0, 0], [1, 20, 0, 5]))
  assert q[0] == pytest.approx(0.207, abs=5e-4)       # a single five-star
  assert q[1] == pytest.approx(0.481, abs=5e-4)       # n = 20 at rate 0.7
  assert q[2] == 0.0 and q[3] == 0.0                  # no ratings; five negatives
  assert q[1] > q[0]                                  # the five-star does not win
  assert np.all(np.asarray(gems.q(np.zeros(2000), np.arange(1, 2001))) == 0)   # exactly, not a few ulps


def test_q_has_no_shrinkage_toward_the_global_mean():
  alone = float(gems.q(1, 1))
  among_bad = float(gems.q([1, 0, 0], [1, 200, 200])[0])
  assert alone == among_bad


def test_m_any_channel_forces_one_and_zero_only_when_all_zero():
  assert float(gems.m(0)) == 0.0
  for kwargs in (dict(mentions=40), dict(mentions=10_000), dict(mentions=0, listed=1),
                 dict(mentions=0, chain=1), dict(mentions=0, citing=1.0), dict(mentions=3, citing=1.0)):
    assert float(gems.m(**kwargs)) == pytest.approx(1.0), kwargs
  for kwargs in (dict(mentions=1), dict(mentions=0, citing=0.05), dict(mentions=39)):
    assert 0.0 < float(gems.m(**kwargs)) < 1.0, kwargs
  assert float(gems.m(40, n0=100)) < 1.0                 # N0 sets the saturation


def test_c_two_cohorts_and_one():
  c = np.asarray(gems.c([3, 2, 0], [4, 2, 0], [1, 0, 5], [4, 2, 5]))
  assert c[0] == pytest.approx(0.5) and c[1] == pytest.approx(0.0)
  assert c[2] == 1.0                                     # one cohort has no ratings of it
  np.testing.assert_array_equal(gems.c([3, 2], [4, 2]), [1.0, 1.0])


def test_g_in_unit_interval_and_zero_for_famous():
  rng = np.random.default_rng(0)
  q, c, m = rng.uniform(size=(3, 1000))
  g = np.asarray(gems.g(q, c, m))
  assert g.min() >= 0 and g.max() <= 1
  m[::2] = 1.0
  assert np.all(np.asarray(gems.g(q, c, m))[::2] == 0)
  # A famous, excellent item: high q, and g = 0.
  q_fe = gems.q(90, 100)
  assert float(q_fe) > 0.8
  assert float(gems.g(q_fe, gems.c(45, 50, 45, 50), gems.m(500))) == 0.0


def test_delta_zero_when_social_worlds_are_independent_copies():
  rng = np.random.default_rng(1)
  splits = rng.dirichlet(np.ones(20), size=4)
  assert float(gems.delta(splits, splits)) == 0.0                       # copies of the splits
  assert float(gems.delta(np.repeat(splits[:1], 4, 0), splits)) == 0.0   # worlds agree exactly
  herd = np.eye(20)[:4]                                                  # each world crowns its own leader
  assert float(gems.delta(herd, splits)) > 0.3
  assert float(gems.unpredictability(herd)) == pytest.approx(1.0)


@pytest.mark.parametrize("call, message", [
    (lambda: gems.q(-1, 3), "positives must be a non-negative"),
    (lambda: gems.q([1, 4], [2, 3]), r"positives\[1\] = 4 exceeds n\[1\] = 3"),
    (lambda: gems.q(1, -2), "n must be a non-negative"),
    (lambda: gems.m(-1), "mentions must be a non-negative"),
    (lambda: gems.m(5, n0=0), "n0"),
    (lambda: gems.m(5, n0=-3.0), "n0"),
    (lambda: gems.m(5, citing=1.5), "citing must lie in"),
    (lambda: gems.c(1, 1, 3, 2), "positives2 must not exceed n2"),
    (lambda: gems.c(1, 1, 1), "give both"),
    (lambda: gems.delta(np.ones((1, 3)) / 3, np.ones((2, 3)) / 3), r"social_shares must be \(worlds >= 2"),
    (lambda: gems.delta(np.ones((2, 3)) / 3, np.ones((2, 4)) / 4), "same candidates"),
    (lambda: gems.g(1.2, 1, 0), "q must lie in"),
    (lambda: gems.q(np.nan, 1), "finite"),
])
def test_bad_input_gives_a_clear_error(call, message):
  with pytest.raises(gems.ScoreInputError, match=message) as info:
    call()
  assert isinstance(info.value, ValueError)


def test_package_exports_the_score_api():
  assert hidden_gems.q is gems.q and hidden_gems.delta is gems.delta


# --- the model -------------------------------------------------------------------------------

def test_precision_counts_ties_as_expected_random_break():
  score = jnp.array([0.9, 0.5, 0.5, 0.5, 0.5, 0.1])
  target = jnp.array([False, True, True, False, False, True])
  # One slot left for four tied items, two of them targets: 1/2 expected hit out of top 2.
  assert float(model.precision_at(score, target, 2)) == pytest.approx(0.25)
  assert float(model.precision_at(score, target, 1)) == 0.0


def _raters(evidence, k):
  key = jax.random.key(3)
  return dict(evidence=evidence, visit=jax.random.uniform(key, (k.raters,)),
              eps=jax.random.normal(jax.random.fold_in(key, 1), (k.raters,)),
              order=jnp.arange(k.n_candidates)[::-1], split=jnp.arange(k.raters) % k.worlds)


def test_without_copiers_social_worlds_are_the_independent_world():
  # The independent world is one vectorized draw, the social ones a scan: with every rater
  # holding evidence (nobody copies) and no position effect, both code paths must agree exactly.
  k = model.Constants(raters=40, position_decay=0.0)
  independent_world = jax.jit(model.independent_world, static_argnames="k")
  social_world = jax.jit(model.social_world, static_argnames="k")
  latent = jnp.linspace(-1.0, 1.0, k.n_candidates)
  raters = _raters(jnp.ones(k.raters, bool), k)
  pos, n, _, visits = independent_world(latent, 0.3, raters, k=k)
  for given in (visits, None):                                # the unsorted list, then the sorted one
    pos_s, n_s = social_world(latent, 0.3, raters, k=k, visits=given)
    np.testing.assert_array_equal(pos_s, pos)
    np.testing.assert_array_equal(n_s, n)
  # With copiers, the tally world piles positive votes on one leader.
  raters = _raters(jnp.arange(k.raters) % 2 == 0, k)
  pos, n, split, visits = independent_world(latent, 0.3, raters, k=k)
  pos_t, n_t = social_world(latent, 0.3, raters, k=k, visits=visits)
  assert pos_t.max() > pos.max() and n_t.sum() > n.sum()
  np.testing.assert_array_equal(split.sum(0), pos)          # the U0 splits partition the cohort


def test_in_the_unsorted_list_each_raters_visit_is_drawn_as_in_the_independent_world():
  # The tally condition reuses the independent condition's visits: drawn one rater at a time from
  # the seed's list order (what a scan step would draw), they are the same candidates.
  k = model.Constants(raters=60)
  raters = _raters(jnp.ones(k.raters, bool), k)
  _, _, _, visits = jax.jit(model.independent_world, static_argnames="k")(jnp.zeros(k.n_candidates), 0.3, raters, k=k)
  one = jax.jit(lambda u: model._visit(u, raters["order"], k))
  assert np.array([int(one(u)) for u in raters["visit"]]).tolist() == np.asarray(visits).tolist()
  assert len(set(np.asarray(visits).tolist())) > 5


def test_split_seats_are_the_stable_sorts_quarters_ties_included():
  rng = np.random.default_rng(5)
  seats = jax.jit(model.split_seats, static_argnums=1)
  for u in (rng.uniform(size=600), rng.integers(0, 40, 600) / 40.0, np.full(600, 0.5)):   # ties, all tied
    u = jnp.asarray(u, jnp.float32)
    stable = np.zeros(600, np.int32)
    stable[np.argsort(np.asarray(u), kind="stable")] = np.arange(600) // 150
    np.testing.assert_array_equal(seats(u, 150), stable)


def test_overtake_keeps_the_sorted_rank():
  rng = np.random.default_rng(2)
  K = 8
  order = jnp.asarray(rng.permutation(K))
  pos, rank = jnp.zeros(K), order                             # no votes: the list is the seed's order
  step = jax.jit(model.overtake)
  for cand, positive in zip(rng.integers(0, K, 60), rng.uniform(size=60) < 0.7):
    rank = step(rank, pos, order, int(cand), bool(positive))
    pos = pos.at[cand].add(float(positive))
    np.testing.assert_array_equal(rank, model.sorted_rank(pos, order))
  assert sorted(np.asarray(rank).tolist()) == list(range(K))


# --- the experiment --------------------------------------------------------------------------

def test_config_variants_validate_and_bad_fields_are_named():
  for variant in ("smoke", "repro"):
    cfg = config_lib.load(f"{CONFIG}:{variant}", validate=experiment.validate)
    assert cfg.experiment == "hidden_gems"
  assert config_lib.load(f"{CONFIG}:repro").seeds == 24
  for override, field in (("--config.model.worlds=3", "model.worlds"), ("--config.model.n0=0", "model.n0"),
                          ("--config.main_rho=0.5", "main_rho")):
    with pytest.raises(config_lib.ConfigError, match=field):
      config_lib.load(f"{CONFIG}:smoke", [override], validate=experiment.validate)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
  workdir = tmp_path_factory.mktemp("hidden_gems_smoke")
  assert launch.main(["run", CONFIG + ":smoke", "--workdir", str(workdir)]) == 0
  return workdir


def test_smoke_end_to_end_writes_the_report(smoke):
  summary = json.loads((smoke / "summary.json").read_text())
  assert summary["experiment"] == "hidden_gems" and summary["variant"] == "smoke"
  assert all(set(f) == {"mean", "sd", "n"} for f in summary["figures"].values())
  assert len(summary["comparisons"]) == len(published.FIGURES)
  assert {report.verdict_kind(c["verdict"]) for c in summary["claims"]} <= set(report.CLAIM_VERDICTS)
  assert len({c["published"]["mean"] for c in summary["comparisons"]}) == len(summary["comparisons"])  # no copies
  frozen = [c for c in summary["claims"] if c["claim"].startswith("Frozen g")]
  assert frozen[0]["verdict"] == "by construction" and not frozen[0]["counted"]
  for name in ("report.md", "config.json", "runs.npz", "precision.png", "delta.png", "correlation.png"):
    assert (smoke / name).is_file(), name
  before = (smoke / "summary.json").read_bytes()
  assert launch.main(["report", str(smoke)]) == 0
  assert (smoke / "summary.json").read_bytes() == before


@pytest.mark.float_sensitive
def test_smoke_matches_its_receipt(smoke):
  result = receipts.verify(smoke)
  assert result.ok, result.table()


def test_smoke_invariants(smoke):
  config, table, res = results.load(smoke)
  p = res["precision"]                                       # (runs, conditions, rankings)
  for r in ("q", "g"):                                       # frozen before the broadcast
    i = model.RANKINGS.index(r)
    np.testing.assert_array_equal(p[:, 0, i], p[:, 1, i])
    np.testing.assert_array_equal(p[:, 0, i], p[:, 2, i])
  assert np.all((p >= 0) & (p <= 1))
  assert np.all(res["delta"] >= 0)
  at = lambda rho: np.isclose(table["rho"], rho)
  # Copying the leader makes worlds diverge far beyond random splits of the sealed cohort.
  assert res["delta"][at(0.0), 1].mean() > res["delta"][at(0.0), 0].mean() + 0.1
  # rho = 1: every rater of a seed shares one draw, the crowd is one voter.
  np.testing.assert_allclose(res["condorcet_gain"][at(1.0)], 0.0, atol=1e-6)
  np.testing.assert_allclose(res["consensus"][at(1.0)], 1.0, atol=1e-6)
  assert res["condorcet_gain"][at(0.0)].mean() > 0.05
  famous = [model.QUADRANTS.index(q) for q in ("famous_excellent", "famous_mediocre")]
  assert np.all(res["g"][:, famous] == 0) and np.all(res["m"][:, famous] == 1)
  assert np.all(res["pairs_g"] <= config.model.per_quadrant ** 2)


def test_rerun_resumes_and_matches(smoke):
  before = np.load(smoke / "runs.npz")["results/delta"]
  assert launch.main(["run", CONFIG + ":smoke", "--workdir", str(smoke)]) == 0
  np.testing.assert_array_equal(np.load(smoke / "runs.npz")["results/delta"], before)


@pytest.mark.float_sensitive
def test_sharded_equals_unsharded(smoke):
  config, table, eight = results.load(smoke)
  rows = {k: table[k] for k in ("seed", "rho")}
  one_device = jax.sharding.Mesh(np.array(jax.devices()[:1]), (mesh.AXIS,))
  single = mesh.map_runs(model.batch_fn(experiment.constants(config)), rows, one_device, config.block)
  assert jax.device_count() > 1
  for name in eight:
    np.testing.assert_array_equal(single[name], eight[name], err_msg=name)


@pytest.mark.float_sensitive
def test_jax_model_equals_numpy_reference(smoke):
  config, table, ours = results.load(smoke)
  k = experiment.constants(config)
  rows = {key: table[key] for key in ("seed", "rho")}
  uniforms = jax.device_get(jax.jit(jax.vmap(lambda r: model.draw_uniforms(model.run_key(r, k), k)))(rows))
  for i in range(len(rows["seed"])):
    ref = reference.numpy_run({name: x[i] for name, x in uniforms.items()}, float(rows["rho"][i]), k)
    assert set(ref) == set(ours)
    for name in ref:
      np.testing.assert_allclose(ours[name][i], ref[name], rtol=1e-5, atol=1e-5, err_msg=f"run {i}: {name}")
