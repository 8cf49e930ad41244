"""The organization-forms model of `swarm-org-forms.md`, one run, as a pure JAX function.

A run is one row of the runs table (a cell and a seed): role counts, structure, alpha, gamma,
beta1, promotion rule and load kind. `draw_world` makes the seed's random world (traits,
specialties, module membership, the task stream); `simulate` scans the T periods and returns the
run's scalar figures. `batch_fn(constants)` is the vmapped program that `jaxlab.core.mesh` shards.

Readings of the spec that its equations leave open are marked READING and listed in
docs/org_forms.md.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxlab.core import random

SPECIALIST, GENERALIST, COORDINATOR, COMMUNICATOR = range(4)
ROLES = ("specialist", "generalist", "coordinator", "communicator")
FLAT, MODULES, ISOLATED = range(3)
STRUCTURES = ("flat", "modules", "isolated")
NO_PROMOTION, PETER, MATCH, TOURNAMENT = range(4)
PROMOTIONS = ("none", "peter", "match", "tournament")
BROOKS, GRAICUNAS = range(2)
LOADS = ("brooks", "graicunas")

# Logit prototypes (d, b, c, k, a) per role, in ROLES order.
PROTOTYPES = np.array([[2.0, -1.0, -1.0, 0.0, 0.0],
                       [0.0, 2.0, -0.5, 0.5, 0.0],
                       [-0.5, 0.0, 2.0, 0.5, 0.0],
                       [-1.0, 0.5, 0.0, 2.0, 0.0]], np.float32)

# The per-run figures `simulate` returns, in order.
METRICS = ("cum_revenue", "cum_discovery", "cum_revenue_high", "cum_discovery_high",
           "cum_output", "cum_output_net", "mean_effort", "mean_coord_loss", "idle_mean",
           "idle_median", "agree_pre", "agree_post", "post_revenue", "post_discovery",
           "post_output", "post_coord_loss")


@dataclasses.dataclass(frozen=True)
class Constants:
  """Everything fixed across the runs of one sweep (hashable: it keys the compiled program)."""
  root_seed: int = 0
  n_agents: int = 48
  n_domains: int = 8
  periods: int = 200
  shock: int = 100
  n_blocks: int = 6
  sigma: float = 0.5
  specialist_main: float = 20.0
  specialist_other: float = 0.4
  task_sparse_prob: float = 0.5
  task_concentration: float = 1.0
  load_even: float = 0.2
  load_odd: float = 0.8
  cross_weight: float = 0.05
  eta_c: float = 2.0
  eta_k: float = 2.0
  p2_base: float = 0.05
  p2_gain: float = 0.2
  p1_base: float = 0.02
  p1_gain: float = 0.5
  iota0: float = 0.5
  promote_t: int = 80
  promote_n: int = 4
  beta0: float = 0.0
  beta2: float = 1.0
  prize: float = 0.15
  prize_window: int = 10


def roles_from_counts(counts, n_agents: int):
  """Agent i's role: agents are laid out specialists first, then generalists, and so on."""
  return jnp.searchsorted(jnp.cumsum(counts), jnp.arange(n_agents), side="right")


def pair_load(n, kind):
  """Relationships to coordinate in a team of n: Brooks n(n-1)/2 or Graicunas n(2^(n-1)+n-1)."""
  brooks = n * (n - 1) / 2
  graicunas = n * (2.0 ** (n - 1) + n - 1)
  return jnp.where(kind == GRAICUNAS, graicunas, brooks)


def coordination_factor(load, skill, alpha):
  """exp(-alpha g / (L + 1)) with gap g = max(0, L - skill); exactly 1 when L = 0."""
  gap = jnp.maximum(0.0, load - skill)
  return jnp.where(load > 0, jnp.exp(-alpha * gap / (load + 1)), 1.0)


def draw_world(key, row, k: Constants):
  """The seed's random world: traits, specialties, modules and the task stream."""
  n, K, T = k.n_agents, k.n_domains, k.periods
  keys = jax.random.split(key, 8)
  role = roles_from_counts(row["counts"], n)
  noise = k.sigma * jax.random.normal(keys[0], (n, 5))
  traits = jax.nn.sigmoid(jnp.asarray(PROTOTYPES)[role] + noise)
  main = jax.random.randint(keys[1], (n,), 0, K)
  specialist_alpha = k.specialist_other + (k.specialist_main - k.specialist_other) * jax.nn.one_hot(main, K)
  alpha = jnp.where((role == SPECIALIST)[:, None], specialist_alpha, 1.0)
  specialty = random.dirichlet(keys[2], alpha)
  # READING: modules are a seed-specific random split of the 48 agents into 6 blocks of 8.
  position = jax.random.permutation(keys[3], n)                     # agent i's seat
  block = jnp.where(row["structure"] == FLAT, 0, position // (n // k.n_blocks))
  # READING: a sparse task puts mass 1/2 on each of two distinct random domains; a dense one is
  # Dirichlet(task_concentration); from the shock on, the seed's permutation relabels domains.
  sparse = jax.random.bernoulli(keys[4], k.task_sparse_prob, (T,))
  first = jax.random.randint(keys[5], (T,), 0, K)
  second = (first + jax.random.randint(jax.random.fold_in(keys[5], 1), (T,), 1, K)) % K
  two = jax.nn.one_hot(first, K) + jax.nn.one_hot(second, K)
  dense = random.dirichlet(keys[6], np.full((K,), k.task_concentration), (T,))
  tasks = jnp.where(sparse[:, None], two / 2.0, dense)
  moved = tasks[:, jax.random.permutation(keys[7], K)]
  tasks = jnp.where((jnp.arange(T) >= k.shock)[:, None], moved, tasks)
  return dict(traits=traits, role=role, specialty=specialty, block=block, tasks=tasks)


def _top(mask, score, count):
  """Boolean mask of the `count` highest-scoring agents within `mask` (ties: lower index first)."""
  rank = jnp.argsort(jnp.argsort(-jnp.where(mask, score, -jnp.inf), stable=True), stable=True)
  return mask & (rank < count)


def _masked_median(x, mask):
  """Median of x[mask] with static shapes: ranks by pairwise comparison (XLA's CPU sort is slow)."""
  x = jnp.where(mask, x, jnp.inf)
  i = jnp.arange(x.shape[0])
  before = (x[None, :] < x[:, None]) | ((x[None, :] == x[:, None]) & (i[None, :] < i[:, None]))
  rank = before.sum(axis=1)
  n = mask.sum()
  pick = (rank == (n - 1) // 2).astype(x.dtype) + (rank == n // 2).astype(x.dtype)
  return jnp.sum(jnp.where(pick > 0, x, 0.0) * pick) / 2


def promote(traits, role, m_window, row, k: Constants):
  """Promotion at t = promote_t: Peter (depth), Match (breadth), Tournament (prize), or none."""
  d, b, c, kk, a = traits.T
  maker = role <= GENERALIST
  rule = row["promotion"]
  moved = _top(maker, jnp.where(rule == PETER, d, b), k.promote_n)
  moved &= (rule == PETER) | (rule == MATCH)
  new_c = jax.nn.sigmoid(k.beta0 + row["beta1"] * d + k.beta2 * b)
  # READING: the top quartile is the floor(n_makers / 4) makers with the highest mean m.
  winners = _top(maker, m_window, maker.sum() // 4) & (rule == TOURNAMENT)
  a = jnp.where(winners, jax.nn.sigmoid(jnp.log(a) - jnp.log1p(-a) + k.prize), a)
  traits = jnp.stack([jnp.where(moved, 0.0, d), b, jnp.where(moved, new_c, c), kk, a], axis=1)
  return traits, jnp.where(moved, COORDINATOR, role)


def _organization(traits, role, world, row, k: Constants):
  """What stays fixed between promotions: block sums, effort, and per-load-level gaps and idle."""
  d, b, c, kk, a = traits.T
  NB = k.n_blocks
  blocks = jax.nn.one_hot(world["block"], NB)                       # (n, NB)
  size = blocks.sum(0)
  is_c = (role == COORDINATOR).astype(jnp.float32)
  is_k = (role == COMMUNICATOR).astype(jnp.float32)
  s_c, n_c, n_k = (c * is_c) @ blocks, is_c @ blocks, is_k @ blocks
  k_bar = jnp.where(n_k > 0, (kk * is_k) @ blocks / jnp.maximum(n_k, 1), 0.0)
  rho = jax.nn.sigmoid(k.eta_c * s_c / jnp.maximum(size, 1) + k.eta_k * k_bar)
  effort = jnp.where(size > 0, rho + (1 - rho) * jnp.maximum(size, 1) ** row["gamma"], 0.0)
  cross_load = k.cross_weight * NB * (NB - 1) / 2
  cross = row["structure"] == MODULES

  def at_load(lam):
    load = lam * pair_load(size, row["load"])
    factor = coordination_factor(load, s_c, row["alpha"])
    surplus = jnp.maximum(0.0, s_c - load)
    s_cross = surplus.sum()
    f_cross = jnp.where(cross, coordination_factor(cross_load, s_cross, row["alpha"]), 1.0)
    # Coordinator idle mass: surplus skill not spent covering the cross-block load.
    used = jnp.where(cross, jnp.minimum(s_cross, cross_load), 0.0)
    kept = jnp.where(s_cross > 0, 1 - used / jnp.maximum(s_cross, 1e-30), 1.0)
    idle_c = jnp.sum(jnp.where(s_c > load, surplus * kept / jnp.maximum(s_c, 1e-30) * n_c, 0.0))
    return dict(factor=factor, f_cross=f_cross, idle_c=idle_c, loss=size @ (1 - factor) / k.n_agents)

  levels = jax.vmap(at_load)(jnp.array([k.load_even, k.load_odd]))   # period t uses levels[t % 2]
  n_comm = is_k.sum()
  mean_k = jnp.where(n_comm > 0, (kk * is_k).sum() / jnp.maximum(n_comm, 1), 0.0)
  return dict(blocks=blocks, effort=effort, agent_effort=blocks @ effort,
              mean_effort=size @ effort / k.n_agents, levels=levels,
              maker=role <= GENERALIST, p1=k.p1_base + k.p1_gain * mean_k)


def _periods(traits, role, carry, xs, world, row, k: Constants):
  """Scans the periods in xs with traits and roles fixed; returns the carry and per-period outputs."""
  s = world["specialty"]
  one_minus_h = 1.0 + jnp.sum(s * jnp.log(jnp.maximum(s, 1e-30)), axis=1) / jnp.log(k.n_domains)
  d, b, c, kk, a = traits.T
  org = _organization(traits, role, world, row, k)
  maker, p1 = org["maker"], org["p1"]
  n_makers = maker.sum()

  def period(carry, x):
    t, q, fit = x                                                   # fit[i] = s_i . q_t
    code, decay, common, m_window = carry
    level = jax.tree.map(lambda v: v[t % 2], org["levels"])
    z = (t >= k.shock).astype(jnp.float32)
    # Everyone makes (READING: P sums m over all members, makers or not).
    m = jnp.where(t >= k.shock, a * d * fit, a * b * one_minus_h)
    y = level["f_cross"] * jnp.sum((m @ org["blocks"]) * org["effort"] * level["factor"])
    # Agreement, measured before the update. Every maker's belief takes the same step, so
    # belief_i = decay * s_i + common exactly (decay = (1 - p1)^t, common = the code mixture);
    # agents promoted out of the maker pool stop mattering, so no (n, K) state is carried.
    agree = maker & (jnp.argmax(decay * s + common, axis=1) == jnp.argmax(code))
    u = jnp.where(n_makers > 0, agree.sum() / jnp.maximum(n_makers, 1), 0.0)
    em = org["agent_effort"] * m
    idle_m = jnp.sum(maker & (em < _masked_median(em, maker) / 2))
    iota = (level["idle_c"] + idle_m) / k.n_agents
    # The code follows makers who fit the task better than it does; communicators pull beliefs.
    better = maker & (fit > code @ q)
    mean_a = jnp.where(better.any(), jnp.sum(a * better) / jnp.maximum(better.sum(), 1), 0.0)
    p2 = k.p2_base + k.p2_gain * mean_a
    weights = m * maker
    vote = weights @ s / jnp.maximum(weights.sum(), 1e-30)
    code = (1 - p2) * code + p2 * vote
    code = code / code.sum()
    decay, common = (1 - p1) * decay, (1 - p1) * common + p1 * code
    in_window = (t >= k.promote_t - k.prize_window) & (t < k.promote_t)
    m_window = m_window + jnp.where(in_window, m, 0.0)
    out = dict(y=y, revenue=y * (1 - z) * u, discovery=y * z * (1 - u), u=u, iota=iota,
               y_net=y * (1 - jnp.maximum(0.0, iota - k.iota0)),
               effort=org["mean_effort"], loss=level["loss"])
    return (code, decay, common, m_window), out

  return jax.lax.scan(period, carry, xs)


def history(world, row, k: Constants):
  """Runs the periods of one run, promotion between the two phases; returns per-period arrays."""
  s, tasks, T, P = world["specialty"], world["tasks"], k.periods, k.promote_t
  xs = (jnp.arange(T), tasks, tasks @ s.T)
  before = jax.tree.map(lambda x: x[:P], xs)
  after = jax.tree.map(lambda x: x[P:], xs)
  carry = (jnp.full((k.n_domains,), 1.0 / k.n_domains), jnp.float32(1.0),
           jnp.zeros(k.n_domains), jnp.zeros(k.n_agents))
  traits, role = world["traits"], world["role"]
  carry, h1 = _periods(traits, role, carry, before, world, row, k)
  traits, role = promote(traits, role, carry[3], row, k)
  _, h2 = _periods(traits, role, carry, after, world, row, k)
  return jax.tree.map(lambda a, b: jnp.concatenate([a, b]), h1, h2)


def figures(h, k: Constants):
  """The run's scalar figures (METRICS) from its per-period history."""
  t = jnp.arange(k.periods)
  high, pre, post = t % 2 == 1, t < k.shock, t >= k.promote_t
  mean_where = lambda x, w: jnp.sum(x * w) / jnp.sum(w)
  figures = dict(
      cum_revenue=h["revenue"].sum(), cum_discovery=h["discovery"].sum(),
      cum_revenue_high=jnp.sum(h["revenue"] * high), cum_discovery_high=jnp.sum(h["discovery"] * high),
      cum_output=h["y"].sum(), cum_output_net=h["y_net"].sum(),
      mean_effort=h["effort"].mean(), mean_coord_loss=h["loss"].mean(),
      idle_mean=h["iota"].mean(), idle_median=jnp.median(h["iota"]),
      agree_pre=mean_where(h["u"], pre), agree_post=mean_where(h["u"], ~pre),
      post_revenue=jnp.sum(h["revenue"] * post), post_discovery=jnp.sum(h["discovery"] * post),
      post_output=mean_where(h["y"], post), post_coord_loss=mean_where(h["loss"], post))
  return {name: figures[name] for name in METRICS}


def simulate(world, row, k: Constants):
  return figures(history(world, row, k), k)


def run_key(row, k: Constants):
  """Run keys depend on the seed index alone: cells share worlds seed by seed (paired designs)."""
  return jax.random.fold_in(jax.random.key(k.root_seed), row["seed"])


def run_one(row, k: Constants):
  return simulate(draw_world(run_key(row, k), row, k), row, k)


@functools.lru_cache(maxsize=None)
def batch_fn(k: Constants):
  """The batched program over a block of runs: what `core.mesh.map_runs` shards."""
  return jax.vmap(functools.partial(run_one, k=k))
