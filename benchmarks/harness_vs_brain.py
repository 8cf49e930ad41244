"""Benchmark for evolution-harness-vs-brain.md: the jitted, sharded sweep against straightforward
NumPy (loops over generations and individuals), on the same budget, one run each.

  python benchmarks/harness_vs_brain.py              # the recorded run's budget (repro), 2-core CPU
  python benchmarks/harness_vs_brain.py --size gpu   # population 65,536 per seed (JAX only)

NumPy runs the five table regimes (the MLP regime needs an evosax strategy; NumPy has none), so
the JAX side runs the same five, and only them (the MLP is its own row kind, see sweep.py). Like
for like, neither side checkpoints inside the timed call: the JAX side times
`experiment.evolve` (init and every generation as one jitted program, no Orbax); the
checkpointed `experiment.simulate` (an Orbax save per chunk) is timed too and printed beside it.
Both sides draw the same tasks per seed; the NumPy GA follows strategies.py with NumPy random
streams, so its numbers agree in distribution, not digit for digit. Compilation is timed
separately (the first call compiles; the best of two warm calls is reported).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time

import jax
import numpy as np

from jaxlab.core import config as config_lib
from jaxlab.evolution import controller, strategies, world
from jaxlab.evolution.harness_vs_brain import experiment, grid

W = world.Constants()


def np_tools(g, n_slots, tasks):
  info = g["sensor_mask"][None, :] & tasks["seen"]
  obs = world.FEATURES[tasks["niche"]] * info
  d = (info[:, None, :] * (obs[:, None, :] - g["protos"][None]) ** 2).sum(-1)
  d[:, n_slots:] = np.inf
  tool = g["tools"][np.argmin(d, axis=1)]
  return np.where(g["tool_mask"][tool], tool, world.BARE)


def np_evaluate(g, n_slots, tasks):
  used = np_tools(g, n_slots, tasks)
  niche, scale = tasks["niche"], tasks["scale"]
  p = world.CAP[used, np.minimum(niche, 5)] * (1 - world.NU[used])
  empty = np.where(used == world.BARE, W.empty_bare, W.empty_tool)
  scores = np.where(niche == world.EMPTY, empty, p) * scale - world.FEE[used]
  on = g["tool_mask"].copy()
  on[world.BARE] = False
  tax = np.clip(0.22 - world.NU, 0, 0.2)
  c = on @ world.COST + W.tax_rate * (on @ tax) + W.sensor_cost * g["sensor_mask"].sum()
  pen = W.cost_weight * c + W.spam_weight * 0.10 * max(0, on.sum() - 8)
  task, common = tasks["task"], tasks["common"]
  s = np.mean([scores[task == t].mean() for t in range(3)])
  sm = np.mean([scores[(task == t) & common].mean() for t in range(3)])
  bare = np.where(niche == world.EMPTY, W.empty_bare, world.CAP[0, np.minimum(niche, 5)]) * scale
  weight = np.zeros(len(niche))
  for t in range(3):
    m = (task == t) & common
    weight[m] = 1 / (3 * m.sum())
  value = np.array([((used == j) * (scores - bare) * weight).sum() for j in range(world.N_TOOLS)])
  value -= W.cost_weight * (world.COST + W.tax_rate * tax)
  value[~on] = np.inf
  return s - pen, sm - pen, value, g["tool_mask"]


def np_mutate(rng, g, value, p):
  g = {k: v.copy() for k, v in g.items()}
  if p["evolve_controller"]:
    move = rng.random(controller.KMAX) < p["proto_rate"]
    g["protos"] = np.clip(g["protos"] + move[:, None] * p["proto_sigma"] * rng.normal(size=g["protos"].shape), 0, 1)
    redraw = rng.random(controller.KMAX) < p["tool_rate"]
    g["tools"] = np.where(redraw, rng.integers(1, world.N_TOOLS, controller.KMAX), g["tools"])
  if p["evolve_harness"] and not p["directed"]:
    g["tool_mask"] ^= rng.random(world.N_TOOLS) < p["harness_rate"]
  g["tool_mask"][world.BARE] = True
  if p["directed"] and rng.random() < p["edit_rate"]:
    worst = int(np.argmin(value))
    if np.isfinite(value[worst]) and value[worst] < 0:
      g["tool_mask"][worst] = False
    elif (~g["tool_mask"]).any():
      g["tool_mask"][rng.choice(np.nonzero(~g["tool_mask"])[0])] = True
  if p["evolve_harness"]:
    g["sensor_mask"] ^= rng.random(world.N_FEATURES) < p["harness_rate"]
  return g


def np_run(p, n_slots, tasks, rng, population, generations, elite):
  pop = []
  for i in range(population):
    u = rng.random(controller.KMAX * world.N_FEATURES + controller.KMAX + world.N_TOOLS + world.N_FEATURES)
    pop.append({"protos": u[:48].reshape(8, 6), "tools": rng.integers(1, world.N_TOOLS, 8),
                "tool_mask": np.r_[True, rng.random(13) < 0.5], "sensor_mask": rng.random(6) < 0.5})
  kit = np.zeros(world.N_TOOLS, bool)
  kit[[world.BARE, *world.FIELD_KIT]] = True
  for g in pop:
    if not p["evolve_harness"]:
      g["tool_mask"], g["sensor_mask"] = kit.copy(), np.ones(6, bool)
    if not p["evolve_controller"]:
      g["protos"], g["tools"] = pop[0]["protos"].copy(), pop[0]["tools"].copy()
  history = []
  for gen in range(generations):                      # loops over generations ...
    if gen:
      order = np.argsort(-sel, kind="stable")
      nxt = []
      for i in range(population):                     # ... and individuals
        if i < p["n_elite"]:
          nxt.append(pop[order[i]])
        else:
          j = order[rng.integers(p["n_parents"])]
          nxt.append(np_mutate(rng, pop[j], values[j], p))
      pop = nxt
    evals = [np_evaluate(g, n_slots, tasks) for g in pop]
    F = np.array([e[0] for e in evals])
    sel = np.array([e[1] if p["myopic"] else e[0] for e in evals])
    values = [e[2] for e in evals]
    history.append(F[np.argsort(-sel, kind="stable")[:elite]].mean())
  return history


def numpy_sweep(config):
  table = grid.build(config)
  regimes = {r: config.regimes[r].to_dict() for r in strategies.REGIMES}
  draw = jax.jit(lambda s: world.draw_tasks(jax.random.fold_in(jax.random.key(config.seed), s), W))
  tasks = {s: jax.tree.map(np.asarray, draw(s)) for s in range(config.seeds)}
  rng = np.random.default_rng(config.seed)
  t0 = time.perf_counter()
  finals = [np_run(regimes[strategies.REGIMES[r]], k, tasks[s], rng, config.population, config.generations,
                   config.elite)[-1] for r, k, s in zip(table["regime"], table["n_slots"], table["seed"])]
  return time.perf_counter() - t0, np.array(finals), table


def jax_sweep(config):
  times = []
  for _ in range(3):                                  # the first run compiles
    t0 = time.perf_counter()
    table, h = experiment.evolve(config)
    times.append(time.perf_counter() - t0)
  return (times[0], min(times[1:])), h["elite_fitness"][:, -1], table


def jax_checkpointed(config):
  times = []
  for _ in range(2):                                  # the first run compiles
    workdir = tempfile.mkdtemp()
    t0 = time.perf_counter()
    experiment.simulate(config, workdir)
    times.append(time.perf_counter() - t0)
    shutil.rmtree(workdir)
  return times[1]


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--size", choices=("cpu", "gpu"), default="cpu")
  args = parser.parse_args()
  variant = "repro" if args.size == "cpu" else "gpu"
  overrides = [f"--config.regime_names={strategies.REGIMES}"]
  config = config_lib.load(f"configs/harness_vs_brain.py:{variant}", overrides, validate=experiment.validate)
  runs = len(grid.build(config)["seed"])
  print(f"budget: {runs} runs x {config.generations} generations x population {config.population} "
        f"on {jax.device_count()} {jax.devices()[0].platform} device(s)")
  (cold, warm), jf, table = jax_sweep(config)
  print(f"jax: {warm:.2f} s per sweep after compilation ({cold:.2f} s the first time, compiling)")
  if args.size == "gpu":
    return
  print(f"jax, checkpointed (Orbax save every {config.chunk} generations, not in the ratio): "
        f"{jax_checkpointed(config):.2f} s")
  t_np, nf, _ = numpy_sweep(config)
  print(f"numpy: {t_np:.2f} s")
  print(f"speed-up: {t_np / warm:.1f}x")
  for r, name in enumerate(strategies.REGIMES):
    m = table["regime"] == r
    print(f"  final elite fitness, {name:15s} jax {jf[m].mean():.3f}  numpy {nf[m].mean():.3f}")


if __name__ == "__main__":
  main()
