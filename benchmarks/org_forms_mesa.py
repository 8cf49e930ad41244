"""The org-forms model (swarm-org-forms.md) in Mesa 3, as an agent-based modeller writes it.

One `Member` agent per person, each holding its own traits, specialty, belief and output; one
`OrgForms` model whose `step` is one period: promotion at t = promote_t, a task, everyone makes,
blocks turn makers' output into the organization's, agreement and idle are measured, the code
follows the better-matching makers and makers' beliefs follow the code. The model keeps each
period's series (HISTORY); when the last period ends it turns them into the jitted model's per-run
figures (METRICS), which are its `mesa.DataCollector`'s model reporters, so `mesa.batch_run`
returns one row per run. Same rules, parameters and figures as `jaxlab/swarm/org_forms/model.py`
(and `org_forms_numpy.simulate`, its one-run reference), in float64, with Mesa's own random
streams: the two agree in distribution, not run for run.

`run_models` computes a list of runs one model at a time; `batch` sweeps a parameter grid with
`mesa.batch_run` over 1 or several processes. This module imports no JAX, so batch_run's spawned
workers start with Mesa and NumPy alone.
"""

from __future__ import annotations

import dataclasses
import math
import types

import mesa
import numpy as np

from benchmarks.org_forms_figures import HISTORY, METRICS, figures

ROLES = ("specialist", "generalist", "coordinator", "communicator")
MAKERS = ("specialist", "generalist")
def sigmoid(x: float) -> float:
  return 1 / (1 + math.exp(-x))


def constants(k, prototypes) -> types.SimpleNamespace:
  """The model's fixed parameters as one plain value: a jaxlab `model.Constants` and the role
  prototypes, without JAX types (batch_run's worker processes unpickle it)."""
  return types.SimpleNamespace(**dataclasses.asdict(k), prototypes=np.asarray(prototypes, float).tolist())


def role_counts(coord_share: float, spec_share: float, comm_share: float, n: int) -> list[int]:
  """Largest-remainder split of n over ROLES; ties in the remainder go to the earlier role."""
  makers = 1.0 - coord_share - comm_share
  exact = [spec_share * makers * n, (1 - spec_share) * makers * n, coord_share * n, comm_share * n]
  counts = [math.floor(x + 1e-9) for x in exact]
  order = sorted(range(4), key=lambda i: -round(exact[i] - counts[i], 9))
  for i in order[:n - sum(counts)]:
    counts[i] += 1
  return counts


class Member(mesa.Agent):
  """A person: role, traits d, b, c, k, a (depth, breadth, coordination, communication, ability),
  a specialty over the task domains, a belief about them, a block, and this period's output m."""

  def __init__(self, model: OrgForms, role: str, block: int):
    super().__init__(model)
    k, rng = model.k, model.rng
    self.role, self.block = role, block
    logits = np.asarray(k.prototypes[ROLES.index(role)]) + k.sigma * rng.standard_normal(5)
    self.d, self.b, self.c, self.k, self.a = (1 / (1 + np.exp(-logits))).tolist()
    if role == "specialist":
      concentration = np.full(k.n_domains, k.specialist_other)
      concentration[rng.integers(k.n_domains)] = k.specialist_main
    else:
      concentration = np.ones(k.n_domains)
    self.specialty = rng.dirichlet(concentration)
    self.one_minus_h = 1 + float(self.specialty @ np.log(np.maximum(self.specialty, 1e-30))) / math.log(k.n_domains)
    self.belief = self.specialty.copy()
    self.m = self.fit = self.m_window = 0.0
    self.effort = 1.0                       # the block's effort, set by the model when it organizes

  @property
  def maker(self) -> bool:
    return self.role in MAKERS

  def make(self, task: np.ndarray, shocked: bool, in_window: bool) -> None:
    """This period's output: breadth-driven before the shock, depth times task fit after it."""
    self.fit = float(self.specialty @ task)
    self.m = self.a * self.d * self.fit if shocked else self.a * self.b * self.one_minus_h
    if in_window:
      self.m_window += self.m

  def agrees(self, top: int) -> bool:
    return int(np.argmax(self.belief)) == top

  def learn(self, code: np.ndarray, p1: float) -> None:
    self.belief = (1 - p1) * self.belief + p1 * code

  def promote(self, beta0: float, beta1: float, beta2: float) -> None:
    """Becomes a coordinator whose skill comes from depth and breadth; depth is given up."""
    self.c = sigmoid(beta0 + beta1 * self.d + beta2 * self.b)
    self.d = 0.0
    self.role = "coordinator"

  def win_prize(self, prize: float) -> None:
    self.a = sigmoid(math.log(self.a / (1 - self.a)) + prize)


class Block:
  """A block's fixed numbers between promotions: its members, effort, and per load level (even,
  odd period) its coordination factor, surplus coordinator skill, and the skill and count behind them."""

  def __init__(self, members: mesa.agent.AgentSet, model: OrgForms):
    k = model.k
    self.members = members
    size = len(members)
    coordinators = members.select(lambda p: p.role == "coordinator")
    communicators = members.select(lambda p: p.role == "communicator")
    self.skill, self.coordinators = coordinators.agg("c", sum), len(coordinators)
    k_bar = communicators.agg("k", np.mean) if len(communicators) else 0.0
    rho = sigmoid(k.eta_c * self.skill / size + k.eta_k * k_bar)
    self.effort = rho + (1 - rho) * size ** model.gamma
    pairs = size * (2.0 ** (size - 1) + size - 1) if model.load == "graicunas" else size * (size - 1) / 2
    self.load = [lam * pairs for lam in (k.load_even, k.load_odd)]
    self.factor = [coordination_factor(load, self.skill, model.alpha) for load in self.load]
    self.surplus = [max(0.0, self.skill - load) for load in self.load]
    members.set("effort", self.effort)


def coordination_factor(load: float, skill: float, alpha: float) -> float:
  """exp(-alpha g / (L + 1)) with gap g = max(0, L - skill); exactly 1 when L = 0."""
  return math.exp(-alpha * max(0.0, load - skill) / (load + 1)) if load > 0 else 1.0


class OrgForms(mesa.Model):
  """One organization of n_agents people over `periods` steps (one step is one period)."""

  def __init__(self, *, constants: types.SimpleNamespace, structure="modules", coord_share=0.125, spec_share=0.5,
               comm_share=0.1, promotion="none", load="brooks", alpha=1.0, gamma=-0.14, beta1=-1.0, seed=0):
    k = constants
    super().__init__(rng=[k.root_seed, seed])
    self.k, self.structure, self.promotion, self.load = k, structure, promotion, load
    self.alpha, self.gamma, self.beta1 = alpha, gamma, beta1
    n = k.n_agents
    seats = self.rng.permutation(n)
    block = [0] * n if structure == "flat" else (seats // (n // k.n_blocks)).tolist()
    counts = role_counts(coord_share, spec_share, comm_share, n)
    roles = [role for role, count in zip(ROLES, counts) for _ in range(count)]
    for role, b in zip(roles, block):
      Member(self, role, b)
    self.relabel = self.rng.permutation(k.n_domains)        # the shock's relabelling of domains
    self.code = np.full(k.n_domains, 1 / k.n_domains)
    self.organize()
    self.history = {name: [] for name in HISTORY}
    self.figures = {}                                       # METRICS, once the last period has run
    self.datacollector = mesa.DataCollector(
        model_reporters={name: (lambda model, name=name: model.figures.get(name)) for name in METRICS})

  def organize(self) -> None:
    """Blocks, makers and the communicators' pull: fixed until roles or traits change."""
    k = self.k
    self.blocks = [Block(members, self) for _, members in sorted(self.agents.groupby("block"))]
    self.makers = self.agents.select(lambda p: p.maker)
    communicators = self.agents.select(lambda p: p.role == "communicator")
    self.p1 = k.p1_base + k.p1_gain * (communicators.agg("k", np.mean) if len(communicators) else 0.0)
    self.mean_effort = sum(len(b.members) * b.effort for b in self.blocks) / k.n_agents
    self.coord_loss = [sum(len(b.members) * (1 - b.factor[lev]) for b in self.blocks) / k.n_agents for lev in (0, 1)]
    # The cross-block term: surplus skill after within-block demand offsets a fixed load on modules.
    cross_load = k.cross_weight * k.n_blocks * (k.n_blocks - 1) / 2
    self.f_cross, self.idle_coordinators = [], []
    for lev in (0, 1):
      s_cross = sum(b.surplus[lev] for b in self.blocks)
      cross = self.structure == "modules"
      self.f_cross.append(coordination_factor(cross_load, s_cross, self.alpha) if cross else 1.0)
      kept = 1 - min(s_cross, cross_load) / s_cross if cross and s_cross > 0 else 1.0
      self.idle_coordinators.append(sum(b.surplus[lev] * kept / b.skill * b.coordinators
                                        for b in self.blocks if b.skill > b.load[lev]))

  def draw_task(self, t: int) -> np.ndarray:
    """Half the tasks split evenly over two distinct domains, the rest Dirichlet; relabelled from the shock."""
    k = self.k
    if self.rng.random() < k.task_sparse_prob:
      task = np.zeros(k.n_domains)
      task[self.rng.choice(k.n_domains, 2, replace=False)] = 0.5
    else:
      task = self.rng.dirichlet(np.full(k.n_domains, k.task_concentration))
    return task[self.relabel] if t >= k.shock else task

  def promote(self) -> None:
    """Peter (depth) or Match (breadth) makes promote_n makers coordinators; Tournament gives the top
    quartile of makers by output over the last prize_window periods a raise in ability."""
    k = self.k
    if self.promotion in ("peter", "match"):
      score = "d" if self.promotion == "peter" else "b"
      self.makers.sort(score).select(at_most=k.promote_n).do("promote", k.beta0, self.beta1, k.beta2)
    elif self.promotion == "tournament":
      self.makers.sort("m_window").select(at_most=len(self.makers) // 4).do("win_prize", k.prize)

  def step(self) -> None:
    k, t = self.k, self.steps - 1
    if t == k.promote_t:
      self.promote()
      self.organize()
    task, shocked, level = self.draw_task(t), t >= k.shock, t % 2
    self.agents.do("make", task, shocked, k.promote_t - k.prize_window <= t < k.promote_t)
    y = self.f_cross[level] * sum(b.members.agg("m", sum) * b.effort * b.factor[level] for b in self.blocks)
    # Agreement is measured before the code and beliefs move.
    makers = self.makers
    u = sum(makers.map("agrees", int(np.argmax(self.code)))) / len(makers) if len(makers) else 0.0
    made = [p.effort * p.m for p in makers]
    half_median = np.median(made) / 2 if made else 0.0
    idle_makers = sum(x < half_median for x in made)
    iota = (self.idle_coordinators[level] + idle_makers) / k.n_agents
    # The code follows the makers who fit the task better than it does; makers' beliefs follow the code.
    code_fit = float(self.code @ task)
    better = makers.select(lambda p: p.fit > code_fit)
    p2 = k.p2_base + k.p2_gain * (better.agg("a", np.mean) if len(better) else 0.0)
    weight = makers.agg("m", sum)
    vote = sum((p.m * p.specialty for p in makers), np.zeros(k.n_domains)) / max(weight, 1e-30)
    code = (1 - p2) * self.code + p2 * vote
    self.code = code / code.sum()
    makers.do("learn", self.code, self.p1)
    z = float(shocked)
    period = dict(y=y, revenue=y * (1 - z) * u, discovery=y * z * (1 - u), u=u, iota=iota,
                  y_net=y * (1 - max(0.0, iota - k.iota0)), effort=self.mean_effort,
                  loss=self.coord_loss[level])
    for name, value in period.items():
      self.history[name].append(value)
    if self.steps == k.periods:
      self.figures = figures(self.history, k)
      self.running = False
    self.datacollector.collect(self)


def runs_from_table(table: dict) -> list[dict]:
  """OrgForms keyword arguments of each row of a jaxlab org-forms runs table (`grid.build`)."""
  from jaxlab.swarm.org_forms import model
  names = dict(structure=model.STRUCTURES, promotion=model.PROMOTIONS, load=model.LOADS)
  runs = []
  for i in range(len(table["seed"])):
    run = {key: names[key][int(table[key][i])] for key in names}
    run.update({key: float(table[key][i]) for key in ("coord_share", "spec_share", "comm_share", "alpha", "gamma",
                                                       "beta1")})
    runs.append(dict(run, seed=int(table["seed"][i])))
  return runs


def run_models(runs: list[dict], k) -> dict[str, np.ndarray]:
  """Each run (OrgForms keyword arguments, seed included) to its end, one at a time; every figure
  as an array over the runs."""
  out = {name: np.zeros(len(runs)) for name in METRICS}
  for i, run in enumerate(runs):
    model = OrgForms(**run, constants=k)
    model.run_model()
    for name, value in model.figures.items():
      out[name][i] = value
  return out


def batch(parameters: dict, k, processes: int | None = 1) -> list[dict]:
  """`mesa.batch_run` over the product of `parameters` (OrgForms keyword arguments: a value or a
  list of values each, `seed` included) on `processes` processes; one dict per run: its parameters
  and figures."""
  rows = mesa.batch_run(OrgForms, {**parameters, "constants": k}, number_processes=processes, iterations=1,
                        data_collection_period=-1, max_steps=k.periods, display_progress=False)
  keep = set(parameters) | set(METRICS)
  return [{key: v for key, v in row.items() if key in keep} for row in sorted(rows, key=lambda row: row["RunId"])]
