"""Harness versus brain (evolution-harness-vs-brain.md) in NumPy, twice: one individual at a time,
and batched.

`np_run` and its helpers are the straightforward implementation: loops over generations and over
individuals, one genome (a dict) evaluated at a time. It is the per-run reference column of
`benchmarks/harness_vs_brain.py`.

`evolve` is what a good NumPy programmer would write for the sweep: every run x individual on
leading axes (runs, population), float32 like the jitted core, the same tool choice, fitness,
myopic tool values and GA (`strategies.PrototypeGA`, `_mutate`) as `jaxlab.evolution`, and a
Python loop only over the generations, which are sequential. Its random numbers come from a
`draws` object: `NumpyDraws` for the benchmark, or the uniforms the jitted sweep draws (the tests),
in which case it reproduces the sweep's per-generation metrics.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from jaxlab.evolution import controller, strategies, world

W = world.Constants()
F32 = np.float32
KMAX, NF, NT = controller.KMAX, world.N_FEATURES, world.N_TOOLS
GENOME_UNIFORMS = KMAX * NF + KMAX + NT + NF            # what `controller.random_genome` draws
METRICS = ("elite_fitness", "elite_myopic", "deceptive", "key_retention", "elite_tools", "turnover")


# ---------------------------------------------------------------------------------------------
# One individual at a time.

def np_tools(g, n_slots, tasks):
  info = g["sensor_mask"][None, :] & tasks["seen"]
  obs = world.FEATURES[tasks["niche"]] * info
  d = (info[:, None, :] * (obs[:, None, :] - g["protos"][None]) ** 2).sum(-1)
  d[:, n_slots:] = np.inf
  tool = g["tools"][np.argmin(d, axis=1)]
  return np.where(g["tool_mask"][tool], tool, world.BARE)


def np_evaluate(g, n_slots, tasks, w=W):
  used = np_tools(g, n_slots, tasks)
  niche, scale = tasks["niche"], tasks["scale"]
  p = world.CAP[used, np.minimum(niche, 5)] * (1 - world.NU[used])
  empty = np.where(used == world.BARE, w.empty_bare, w.empty_tool)
  scores = np.where(niche == world.EMPTY, empty, p) * scale - world.FEE[used]
  on = g["tool_mask"].copy()
  on[world.BARE] = False
  tax = np.clip(0.22 - world.NU, 0, 0.2)
  c = on @ world.COST + w.tax_rate * (on @ tax) + w.sensor_cost * g["sensor_mask"].sum()
  pen = w.cost_weight * c + w.spam_weight * 0.10 * max(0, on.sum() - 8)
  task, common = tasks["task"], tasks["common"]
  s = np.mean([scores[task == t].mean() for t in range(3)])
  sm = np.mean([scores[(task == t) & common].mean() for t in range(3)])
  bare = np.where(niche == world.EMPTY, w.empty_bare, world.CAP[0, np.minimum(niche, 5)]) * scale
  weight = np.zeros(len(niche))
  for t in range(3):
    m = (task == t) & common
    weight[m] = 1 / (3 * m.sum())
  value = np.array([((used == j) * (scores - bare) * weight).sum() for j in range(NT)])
  value -= w.cost_weight * (world.COST + w.tax_rate * tax)
  value[~on] = np.inf
  return s - pen, sm - pen, value, g["tool_mask"]


def np_mutate(rng, g, value, p):
  g = {k: v.copy() for k, v in g.items()}
  if p["evolve_controller"]:
    move = rng.random(KMAX) < p["proto_rate"]
    g["protos"] = np.clip(g["protos"] + move[:, None] * p["proto_sigma"] * rng.normal(size=g["protos"].shape), 0, 1)
    redraw = rng.random(KMAX) < p["tool_rate"]
    g["tools"] = np.where(redraw, rng.integers(1, NT, KMAX), g["tools"])
  if p["evolve_harness"] and not p["directed"]:
    g["tool_mask"] ^= rng.random(NT) < p["harness_rate"]
  g["tool_mask"][world.BARE] = True
  if p["directed"] and rng.random() < p["edit_rate"]:
    worst = int(np.argmin(value))
    if np.isfinite(value[worst]) and value[worst] < 0:
      g["tool_mask"][worst] = False
    elif (~g["tool_mask"]).any():
      g["tool_mask"][rng.choice(np.nonzero(~g["tool_mask"])[0])] = True
  if p["evolve_harness"]:
    g["sensor_mask"] ^= rng.random(NF) < p["harness_rate"]
  return g


def np_run(p, n_slots, tasks, rng, population, generations, elite):
  """One evolutionary run; returns the elite's mean true fitness per generation."""
  pop = []
  for _ in range(population):
    pop.append({"protos": rng.random((KMAX, NF)), "tools": rng.integers(1, NT, KMAX),
                "tool_mask": np.r_[True, rng.random(NT - 1) < 0.5], "sensor_mask": rng.random(NF) < 0.5})
  kit = np.zeros(NT, bool)
  kit[[world.BARE, *world.FIELD_KIT]] = True
  for g in pop:
    if not p["evolve_harness"]:
      g["tool_mask"], g["sensor_mask"] = kit.copy(), np.ones(NF, bool)
    if not p["evolve_controller"]:
      g["protos"], g["tools"] = pop[0]["protos"].copy(), pop[0]["tools"].copy()
  history, sel, values = [], None, None              # sel, values: the last generation's evaluation
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


# ---------------------------------------------------------------------------------------------
# Batched: runs (r) x population (p) on leading axes.

def draw_tasks(u, w=W) -> dict:
  """`world.draw_tasks` for a batch of seeds from its uniforms u (r, 2f + 2b + d + 6f)."""
  f, b, d = w.forage_steps, w.bandit_steps, w.delayed_common + w.delayed_rare
  r = len(u)
  kind, pick_f, rest = u[:, :f], u[:, f:2 * f], u[:, 2 * f:]
  rare_b, pick_b, rest = rest[:, :b], rest[:, b:2 * b], rest[:, 2 * b:]
  pick_d, seen_u = rest[:, :d], rest[:, d:].reshape(r, f, NF)
  three = lambda v: np.minimum(np.floor(v * 3).astype(np.int32), 2)
  forage = np.where(kind < F32(w.forage_empty), world.EMPTY,
                    np.where(kind < F32(w.forage_empty + w.forage_rare), 3 + three(pick_f), three(pick_f)))
  bandit = np.where(rare_b < F32(w.bandit_rare), 3 + three(pick_b), three(pick_b))
  delayed = three(pick_d) + np.where(np.arange(d) < w.delayed_common, 0, 3)
  niche = np.concatenate([forage, bandit, delayed], axis=1).astype(np.int32)
  steps = world.n_steps(w)
  seen = np.concatenate([seen_u < F32(w.forage_seen), np.ones((r, steps - f, NF), bool)], axis=1)
  task = np.concatenate([np.zeros(f), np.ones(b), np.full(d, 2)]).astype(np.int32)
  scale = np.concatenate([np.ones(f + b + w.delayed_common), np.full(w.delayed_rare, w.jackpot)]).astype(F32)
  common = (niche < len(world.COMMON)) | (niche == world.EMPTY)
  return dict(niche=niche, seen=seen, scale=np.broadcast_to(scale, (r, steps)),
              task=np.broadcast_to(task, (r, steps)), common=common)


def task_uniforms(w=W) -> int:
  return 2 * w.forage_steps + 2 * w.bandit_steps + w.delayed_common + w.delayed_rare + w.forage_steps * NF


def _step_scores(tool, niche, scale, w):
  p = world.CAP[tool, np.minimum(niche, world.N_NICHES - 1)] * (1 - world.NU[tool])
  empty = np.where(tool == world.BARE, F32(w.empty_bare), F32(w.empty_tool))
  return np.where(niche == world.EMPTY, empty, p) * scale - world.FEE[tool]


def _task_means(scores, task, where):
  """Mean score per task (last axis: steps) over the steps in `where`: (..., 3)."""
  hot = (task[..., None, :] == np.arange(3)[:, None]) & where[..., None, :]            # (r, 3, s)
  return (hot[:, None] * scores[:, :, None, :]).sum(-1) / np.maximum(hot.sum(-1), 1)[:, None]


def evaluate(genomes: dict, n_slots, tasks: dict, w=W) -> dict:
  """F, F_myopic, deceptive and the myopic tool values of every individual (r, p) on its run's tasks."""
  r, p = genomes["tools"].shape[:2]
  info = genomes["sensor_mask"][:, :, None, :] & tasks["seen"][:, None]               # (r, p, s, f)
  obs = world.FEATURES[tasks["niche"]][:, None] * info
  # Squared distance to each slot's prototype on the sensed features, feature by feature: a sum
  # over a 6-long last axis is NumPy's slowest reduction, and this keeps the jitted model's order.
  protos = genomes["protos"][:, :, None]                                                 # (r, p, 1, K, f)
  d = info[..., 0, None] * (obs[..., 0, None] - protos[..., 0]) ** 2                     # (r, p, s, K)
  for f in range(1, NF):
    d += info[..., f, None] * (obs[..., f, None] - protos[..., f]) ** 2
  d = np.where(np.arange(KMAX) < np.reshape(n_slots, (-1, 1, 1, 1)), d, np.inf)
  slot_tools = np.where(np.take_along_axis(genomes["tool_mask"], genomes["tools"], 2), genomes["tools"], world.BARE)
  used = np.take_along_axis(slot_tools, np.argmin(d, axis=-1), 2)                      # (r, p, s)
  table = _step_scores(np.arange(NT)[None, :, None], tasks["niche"][:, None], tasks["scale"][:, None], w)  # (r, t, s)
  scores = np.take_along_axis(table[:, None], used[:, :, None], 2)[:, :, 0]            # (r, p, s)
  per_task = _task_means(scores, tasks["task"], np.ones_like(tasks["common"]))
  myopic_task = _task_means(scores, tasks["task"], tasks["common"])
  on = genomes["tool_mask"].copy()
  on[..., world.BARE] = False
  tax = np.clip(F32(0.22) - world.NU, F32(0), F32(0.2))
  cost = on @ world.COST + F32(w.tax_rate) * (on @ tax) + F32(w.sensor_cost) * genomes["sensor_mask"].sum(-1)
  spam = F32(0.1) * np.maximum(0, on.sum(-1) - 8) + F32(0.04) * np.maximum(0, genomes["sensor_mask"].sum(-1) - NF)
  penalty = F32(w.cost_weight) * cost + F32(w.spam_weight) * spam
  bare = _step_scores(np.zeros_like(tasks["niche"]), tasks["niche"], tasks["scale"], w)   # (r, s)
  hot = (tasks["task"][:, None, :] == np.arange(3)[:, None]) & tasks["common"][:, None, :]
  weight = (hot / np.maximum(hot.sum(-1, keepdims=True), 1)).sum(1).astype(F32) / F32(3)
  gw = (scores - bare[:, None]) * weight[:, None]
  cell = (np.arange(r * p).reshape(r, p, 1) * NT + used).ravel()
  value = np.bincount(cell, gw.ravel(), r * p * NT).astype(F32).reshape(r, p, NT)
  value = value - F32(w.cost_weight) * (world.COST + F32(w.tax_rate) * tax)
  return dict(F=per_task.mean(-1) - penalty, F_myopic=myopic_task.mean(-1) - penalty, deceptive=per_task[..., 2],
              tool_value=np.where(on, value, np.inf).astype(F32))


def params_of(regimes: dict, regime) -> dict:
  """Per-run GA parameters (r,) from a {regime name: {field: value}} table (the GA's params and
  `myopic`) and regime indices into `strategies.PUBLISHED`."""
  fields = list(regimes[strategies.PUBLISHED[0]])
  table = {f: np.asarray([regimes[name][f] for name in strategies.PUBLISHED]) for f in fields}
  return {f: v[regime].astype(F32) if v.dtype.kind == "f" else v[regime] for f, v in table.items()}


def initial_population(u, params) -> dict:
  """`controller.random_genome` per individual from its uniforms u (r, p, GENOME_UNIFORMS), then
  the regime's freezes (the field kit; individual 0's controller for everyone)."""
  r, p = u.shape[:2]
  sizes = np.cumsum([KMAX * NF, KMAX, NT])
  protos, tools, tools_on, sensors_on = np.split(u, sizes, axis=2)
  tool_mask = tools_on < F32(0.5)
  tool_mask[..., world.BARE] = True
  kit = np.zeros(NT, bool)
  kit[[world.BARE, *world.FIELD_KIT]] = True
  ctrl, harness = params["evolve_controller"][:, None, None], params["evolve_harness"][:, None, None]
  protos, tools = protos.reshape(r, p, KMAX, NF), _uniform_int(tools, 1, NT)
  return dict(protos=np.where(ctrl[..., None], protos, protos[:, :1]), tools=np.where(ctrl, tools, tools[:, :1]),
              tool_mask=np.where(harness, tool_mask, kit), sensor_mask=np.where(harness, sensors_on < F32(0.5), True))


def _uniform_int(u, low, high):
  return np.minimum(low + np.floor(u * F32(high - low)).astype(np.int32), high - 1)


def _mutate(u, g: dict, value, params) -> dict:
  """`strategies.prototype_ga._mutate` for every child (r, p) at once."""
  sizes = np.cumsum([KMAX, KMAX * NF, KMAX, KMAX, NT, NF, 1])
  u_move, u_step, u_redraw, u_tool, u_flip, u_sensor, u_edit, u_new = np.split(u, sizes, axis=2)
  P = {f: v[:, None] for f, v in params.items()}
  r, p = u.shape[:2]
  move = (u_move < P["proto_rate"][..., None]) & P["evolve_controller"][..., None]
  step = ndtri(np.clip(u_step, F32(1e-7), F32(1 - 1e-7))).astype(F32).reshape(r, p, KMAX, NF)
  protos = np.clip(g["protos"] + (move * P["proto_sigma"][..., None])[..., None] * step, F32(0), F32(1))
  redraw = (u_redraw < P["tool_rate"][..., None]) & P["evolve_controller"][..., None]
  tools = np.where(redraw, _uniform_int(u_tool, 1, NT), g["tools"])
  blind = P["evolve_harness"] & ~P["directed"]
  tool_mask = g["tool_mask"] ^ ((u_flip < P["harness_rate"][..., None]) & blind[..., None])
  tool_mask[..., world.BARE] = True
  worst = np.argmin(value, axis=2)[..., None]
  worst_value = np.take_along_axis(value, worst, 2)[..., 0]
  absent = ~tool_mask
  absent[..., world.BARE] = False
  new = np.argmax(np.where(absent, u_new, F32(-1)), axis=2)[..., None]
  edit = P["directed"] & (u_edit[..., 0] < P["edit_rate"])
  drop = edit & np.isfinite(worst_value) & (worst_value < 0)
  add = edit & ~drop & absent.any(2)
  np.put_along_axis(tool_mask, worst, np.where(drop[..., None], False, np.take_along_axis(tool_mask, worst, 2)), 2)
  np.put_along_axis(tool_mask, new, np.where(add[..., None], True, np.take_along_axis(tool_mask, new, 2)), 2)
  sensor_mask = g["sensor_mask"] ^ ((u_sensor < P["harness_rate"][..., None]) & P["evolve_harness"][..., None])
  return dict(protos=protos, tools=tools, tool_mask=tool_mask, sensor_mask=sensor_mask)


def _ask(u, population, fitness, tool_value, generation, params) -> dict:
  """`PrototypeGA.ask` for every run: elites copied, the rest mutated children of parents drawn
  uniformly from the top n_parents of the last generation (the first ask returns the population)."""
  r, n = fitness.shape
  order = np.argsort(-fitness, axis=1, kind="stable")
  n_parents = params["n_parents"][:, None]
  rank = np.minimum(np.floor(u[..., 0] * n_parents.astype(F32)).astype(np.int32), n_parents - 1)
  idx = np.arange(n)[None]
  elite = idx < params["n_elite"][:, None]
  first = generation == 0
  parent = idx.repeat(r, 0) if first else np.take_along_axis(order, np.where(elite, idx, rank), 1)
  take = lambda x: np.take_along_axis(x, parent.reshape(r, n, *(1,) * (x.ndim - 2)), 1)
  parents = {key: take(x) for key, x in population.items()}
  children = _mutate(u[..., 1:], parents, take(tool_value), params)
  keep = elite | first
  return {key: np.where(keep.reshape(r, n, *(1,) * (x.ndim - 2)), x, children[key]) for key, x in parents.items()}


def _elite_metrics(ev, selection, tool_mask, previous, t, elite: int):
  r = len(selection)
  order = np.argsort(-selection, axis=1, kind="stable")
  top = order[:, :elite]
  tools = tool_mask.copy()
  tools[..., world.BARE] = False
  champion = tools[np.arange(r), order[:, 0]]
  union = (champion | previous).sum(1)
  jaccard = np.where(union > 0, 1 - (champion & previous).sum(1) / np.maximum(union, 1), 0.0)
  at = lambda x: np.take_along_axis(x, top, 1)
  elite_tools = np.take_along_axis(tools, top[..., None], 1)
  return champion, dict(elite_fitness=at(ev["F"]).mean(1), elite_myopic=at(ev["F_myopic"]).mean(1),
                        deceptive=at(ev["deceptive"]).mean(1), key_retention=elite_tools[..., world.KEY].mean(1),
                        elite_tools=elite_tools.sum(2).mean(1), turnover=jaccard if t else np.zeros(r))


class NumpyDraws:
  """The sweep's random numbers from NumPy's generator (what a NumPy user would write)."""

  def __init__(self, seed, runs: int, population: int, w=W):
    self.rng, self.runs, self.population, self.w = np.random.default_rng(seed), runs, population, w

  def tasks(self):
    return self.rng.random((self.runs, task_uniforms(self.w)), F32)

  def genomes(self):
    return self.rng.random((self.runs, self.population, GENOME_UNIFORMS), F32)

  def generation(self, t):
    return self.rng.random((self.runs, self.population, 1 + strategies.N_UNIFORM), F32)


def evolve(rows: dict, params: dict, draws, generations: int, elite: int, w=W) -> dict:
  """Every run's per-generation metrics (`METRICS`, each (runs, generations)): init, then per
  generation ask, evaluate, tell and the elite's metrics, as the jitted sweep does."""
  tasks = draw_tasks(draws.tasks(), w)
  population = initial_population(draws.genomes(), params)
  r, n = population["tools"].shape[:2]
  fitness, tool_value = np.zeros((r, n), F32), np.zeros((r, n, NT), F32)
  champion = np.zeros((r, NT), bool)
  history = {name: np.zeros((r, generations), F32) for name in METRICS}
  for t in range(generations):
    population = _ask(draws.generation(t), population, fitness, tool_value, t, params)
    ev = evaluate(population, rows["n_slots"], tasks, w)
    fitness = np.where(params["myopic"][:, None], ev["F_myopic"], ev["F"])
    tool_value = ev["tool_value"]
    champion, out = _elite_metrics(ev, fitness, population["tool_mask"], champion, t, elite)
    for name in METRICS:
      history[name][:, t] = out[name]
  return history
