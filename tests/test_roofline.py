"""The roofline command at `--size tiny`, in this process: every family has its work, times and fractions,
the machine's bandwidth and FLOP rate are measured, and loop bodies are costed once per trip."""

import importlib
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from benchmarks import roofline, suite


@pytest.fixture(scope="module")
def result(tmp_path_factory):
  path = tmp_path_factory.mktemp("roofline") / "roofline.json"
  roofline.main(["--size", "tiny", "--in-process", "--repeats", "1", "--json", str(path)])
  return json.loads(path.read_text())


def test_every_family_has_its_work_and_fractions(result):
  [setting] = result["settings"]
  assert [r["family"] for r in setting["families"]] == [importlib.import_module(m).NAME for m in suite.FAMILIES]
  for r in setting["families"]:
    assert r["flops"] > 0 and r["bytes"] > 0 and r["transcendentals"] >= 0, r["family"]
    assert r["uncounted_loops"] == 0, r["family"]
    assert r["bound"] in ("compute", "memory")
    # Bytes are charged DRAM bandwidth although much stays in cache, so a fraction may pass 1, not by 100x.
    assert 0 < r["jax_fraction"] <= 100 and 0 < r["numpy_fraction"] <= 100, r
    assert r["max_speedup"] > 0 and r["five_x_possible"] == (r["max_speedup"] >= 5)
    assert r["roofline_s"] >= r["compute_s"] > 0
    assert r["flops"] > r["xla_flops_loops_once"] / r["devices"] > 0   # one device's loops, run more than once
    assert r["runs"] <= r["computed"] < r["runs"] + r["devices"] * 32   # whole blocks of at most 32 rows


def test_the_machine_figures_are_measured(result):
  [setting] = result["settings"]
  m = setting["machine"]
  assert m["numpy_triad"]["gb_s"] > 0 and m["jax_triad"]["gb_s"] > 0 and m["peak_gflop_s"] > 0
  assert m["bandwidth_gb_s"] == max(m["numpy_triad"]["gb_s"], m["jax_triad"]["gb_s"])


def test_the_table_has_a_row_per_family(result):
  table = roofline.markdown(result)
  for r in result["settings"][0]["families"]:
    assert f"| {r['family']} (" in table


def test_loop_bodies_are_costed_once_per_trip():
  # 10 outer x 20 inner trips of 2 FLOPs on 1,000 elements, inside a loop whose count is an argument.
  def inner(c):
    return jax.lax.scan(lambda c, _: (c * 2 + 1, None), c, None, length=20)[0]

  def program(x, count):
    outer = lambda i, c: jax.lax.scan(lambda c, _: (inner(c), None), c, None, length=10)[0]
    return jax.lax.fori_loop(0, count[0], outer, x)

  compiled = jax.jit(program).lower(jnp.ones(1000, jnp.float32), np.array([3], np.int32)).compile()
  cost = roofline.loop_weighted_cost(compiled, unknown_trips=3)
  assert cost["uncounted_loops"] == 0
  assert 3 * 10 * 20 * 2000 <= cost["flops"] < 1.01 * 3 * 10 * 20 * 2000
  assert cost["bytes accessed"] >= 3 * 10 * 20 * 2 * 4000          # each trip reads and writes the carry
  once = roofline.xla_cost(compiled)                                 # XLA's own figure: each body once
  assert once["flops"] < 2 * 2000 + 100


def test_an_inner_loop_without_a_trip_count_is_costed_at_the_bound_given():
  # A solver-like inner loop whose count is data: counted once by default, `inner_trips` times when given.
  def program(x, count):
    inner = lambda c: jax.lax.fori_loop(0, count[1], lambda i, c: c * 2 + 1, c)
    return jax.lax.fori_loop(0, count[0], lambda i, c: inner(c), x)

  compiled = jax.jit(program).lower(jnp.ones(1000, jnp.float32), np.array([3, 7], np.int32)).compile()
  once = roofline.loop_weighted_cost(compiled, unknown_trips=3)
  bounded = roofline.loop_weighted_cost(compiled, unknown_trips=3, inner_trips=7)
  assert once["uncounted_loops"] == bounded["uncounted_loops"] == 1
  assert 3 * 2000 <= once["flops"] < 1.01 * 3 * 2000 + 100
  assert 3 * 7 * 2000 <= bounded["flops"] < 1.01 * 3 * 7 * 2000 + 100
