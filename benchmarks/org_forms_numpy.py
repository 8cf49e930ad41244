"""The org-forms model (swarm-org-forms.md) in NumPy, twice: one run at a time, and batched.

`draw_world` / `simulate` are the model as a researcher would first write it: one run, a loop
over periods, explicit beliefs and blocks, float64. It is the per-run reference column of
`benchmarks/org_forms.py`.

`draw_worlds` / `simulate_batch` are what a good NumPy programmer would write to sweep it: every
run on a leading axis, float32 like the jitted model, the same algebra as `model.py` (the
organization recomputed only at promotion, beliefs as decay x specialty + a common mixture), and
a Python loop only over the periods, which are sequential. The tests feed both the worlds JAX
draws and check that they compute the jitted model's figures.
"""

from __future__ import annotations

import numpy as np

from benchmarks.org_forms_figures import HISTORY, figures
from jaxlab.swarm.org_forms.model import (COMMUNICATOR, COORDINATOR, GRAICUNAS, MATCH, MODULES,
                                          PETER, PROTOTYPES, SPECIALIST, TOURNAMENT, Constants)


def sigmoid(x):
  return 1 / (1 + np.exp(-x))


def draw_world(rng: np.random.Generator, counts, structure: int, k: Constants) -> dict:
  n, K, T = k.n_agents, k.n_domains, k.periods
  role = np.repeat(np.arange(4), counts)
  traits = sigmoid(PROTOTYPES[role] + k.sigma * rng.standard_normal((n, 5)))
  specialty = np.empty((n, K))
  for i in range(n):
    if role[i] == SPECIALIST:
      alpha = np.full(K, k.specialist_other)
      alpha[rng.integers(K)] = k.specialist_main
    else:
      alpha = np.ones(K)
    specialty[i] = rng.dirichlet(alpha)
  block = np.zeros(n, int) if structure == 0 else rng.permutation(n) // (n // k.n_blocks)
  tasks = np.empty((T, K))
  for t in range(T):
    if rng.random() < k.task_sparse_prob:
      tasks[t] = 0
      tasks[t, rng.choice(K, 2, replace=False)] = 0.5
    else:
      tasks[t] = rng.dirichlet(np.full(K, k.task_concentration))
  perm = rng.permutation(K)
  tasks[k.shock:] = tasks[k.shock:, perm]
  return dict(traits=traits, role=role, specialty=specialty, block=block, tasks=tasks)


def simulate(world: dict, row: dict, k: Constants) -> dict:
  n, K, T, NB = k.n_agents, k.n_domains, k.periods, k.n_blocks
  traits, role = world["traits"].astype(np.float64).copy(), world["role"].copy()
  s, block, tasks = world["specialty"].astype(np.float64), world["block"], world["tasks"].astype(np.float64)
  alpha, gamma = float(row["alpha"]), float(row["gamma"])
  H = -np.sum(s * np.log(np.maximum(s, 1e-30)), axis=1) / np.log(K)
  code = np.full(K, 1.0 / K)
  belief = s.copy()
  m_hist = np.zeros((T, n))
  h = {name: np.zeros(T) for name in HISTORY}
  cross_load = k.cross_weight * NB * (NB - 1) / 2
  for t in range(T):
    d, b, c, kk, a = traits.T
    if t == k.promote_t:
      maker = role <= 1
      if row["promotion"] in (PETER, MATCH):
        score = d if row["promotion"] == PETER else b
        candidates = [i for i in np.argsort(-score, kind="stable") if maker[i]][:k.promote_n]
        for i in candidates:
          c[i] = sigmoid(k.beta0 + row["beta1"] * d[i] + k.beta2 * b[i])
          d[i] = 0.0
          role[i] = COORDINATOR
      elif row["promotion"] == TOURNAMENT:
        window = m_hist[t - k.prize_window:t].mean(axis=0)
        makers = [i for i in np.argsort(-window, kind="stable") if maker[i]]
        for i in makers[: len(makers) // 4]:
          a[i] = sigmoid(np.log(a[i] / (1 - a[i])) + k.prize)
    z = 1.0 if t >= k.shock else 0.0
    lam = k.load_even if t % 2 == 0 else k.load_odd
    q = tasks[t]
    m = a * d * (s @ q) if z else a * b * (1 - H)
    m_hist[t] = m
    maker = role <= 1
    y_sum, surpluses, s_cs, n_cs = 0.0, [], [], []
    effort_of, loss_sum = np.zeros(NB), 0.0
    for j in range(NB):
      members = block == j
      size = members.sum()
      if size == 0:
        surpluses.append(0.0), s_cs.append(0.0), n_cs.append(0)
        continue
      coords = members & (role == COORDINATOR)
      comms = members & (role == COMMUNICATOR)
      S_C = c[coords].sum()
      P = m[members].sum()
      if row["load"] == GRAICUNAS:
        L = lam * size * (2.0 ** (size - 1) + size - 1)
      else:
        L = lam * size * (size - 1) / 2
      factor = np.exp(-alpha * max(0.0, L - S_C) / (L + 1)) if L > 0 else 1.0
      k_bar = kk[comms].mean() if comms.any() else 0.0
      rho = sigmoid(2 * S_C / size + 2 * k_bar)
      e = rho + (1 - rho) * size ** gamma
      effort_of[j] = e
      y_sum += P * e * factor
      h["effort"][t] += e * size / n
      loss_sum += (1 - factor) * size / n
      surpluses.append(max(0.0, S_C - L)), s_cs.append(S_C), n_cs.append(coords.sum())
    S_cross = sum(surpluses)
    f_cross = np.exp(-alpha * max(0.0, cross_load - S_cross) / (cross_load + 1)) if row["structure"] == MODULES else 1.0
    y = f_cross * y_sum
    u = np.mean(np.argmax(belief[maker], axis=1) == np.argmax(code)) if maker.any() else 0.0
    used = min(S_cross, cross_load) if row["structure"] == MODULES else 0.0
    idle_c = 0.0
    for sur, S_C, n_c in zip(surpluses, s_cs, n_cs):
      if sur > 0:
        idle_c += sur * (1 - used / S_cross) / S_C * n_c
    em = effort_of[block] * m
    idle_m = np.sum(em[maker] < np.median(em[maker]) / 2) if maker.any() else 0
    iota = (idle_c + idle_m) / n
    better = maker & (s @ q > code @ q)
    p2 = k.p2_base + k.p2_gain * (a[better].mean() if better.any() else 0.0)
    w = m * maker
    vote = w @ s / max(w.sum(), 1e-30)
    code = (1 - p2) * code + p2 * vote
    code /= code.sum()
    comms = role == COMMUNICATOR
    p1 = k.p1_base + k.p1_gain * (kk[comms].mean() if comms.any() else 0.0)
    belief[maker] = (1 - p1) * belief[maker] + p1 * code
    h["y"][t], h["u"][t], h["iota"][t], h["loss"][t] = y, u, iota, loss_sum
    h["revenue"][t], h["discovery"][t] = y * (1 - z) * u, y * z * (1 - u)
    h["y_net"][t] = y * (1 - max(0.0, iota - k.iota0))
  return figures(h, k)


# ---------------------------------------------------------------------------------------------
# Batched: every run on a leading axis (r), float32, a loop over periods only.

F32 = np.float32


def _sigmoid32(x):
  return (1 / (1 + np.exp(-x))).astype(F32)


def _onehot(i, n):
  return (i[..., None] == np.arange(n)).astype(F32)


def _vecmat(x, m):
  """x (r, a) times m (r, a, b) per run -> (r, b)."""
  return np.matmul(x[:, None, :], m)[:, 0]


def roles_of(counts, n_agents: int):
  """Agent i's role per run from the role counts (specialists first, then generalists, ...)."""
  return (np.arange(n_agents)[None, :, None] >= np.cumsum(counts, axis=1)[:, None, :]).sum(-1)


def draw_worlds(rng: np.random.Generator, rows: dict, k: Constants) -> dict:
  """The runs' random worlds with NumPy's generator, distributed as `model.draw_world`'s."""
  r, n, K, T = len(rows["seed"]), k.n_agents, k.n_domains, k.periods
  role = roles_of(rows["counts"], n)
  traits = _sigmoid32(PROTOTYPES[role] + F32(k.sigma) * rng.standard_normal((r, n, 5), F32))
  main = _onehot(rng.integers(0, K, (r, n)), K)
  alpha = np.where((role == SPECIALIST)[..., None],
                   k.specialist_other + (k.specialist_main - k.specialist_other) * main, 1.0)
  g = rng.standard_gamma(alpha).astype(F32)
  specialty = g / g.sum(-1, keepdims=True)
  position = np.argsort(rng.random((r, n)), axis=1)
  block = np.where((rows["structure"] == 0)[:, None], 0, position // (n // k.n_blocks))
  first = rng.integers(0, K, (r, T))
  second = (first + rng.integers(1, K, (r, T))) % K
  g = rng.standard_gamma(k.task_concentration, (r, T, K)).astype(F32)
  tasks = np.where((rng.random((r, T)) < k.task_sparse_prob)[..., None],
                   (_onehot(first, K) + _onehot(second, K)) / 2, g / g.sum(-1, keepdims=True))
  perm = np.argsort(rng.random((r, K)), axis=1)
  tasks[:, k.shock:] = np.take_along_axis(tasks[:, k.shock:], perm[:, None, :], axis=2)
  return dict(traits=traits, role=role, specialty=specialty, block=block, tasks=tasks)


def _top_batch(mask, score, count):
  """Per run, the `count` highest-scoring agents within `mask` (ties: lower index first)."""
  order = np.argsort(np.where(mask, -score, np.inf), axis=1, kind="stable")
  rank = np.argsort(order, axis=1)
  return mask & (rank < np.reshape(count, (-1, 1)))


def _promote_batch(traits, role, m_window, rows, k: Constants):
  d, b, c, kk, a = np.moveaxis(traits, -1, 0)
  maker = role <= 1
  rule = rows["promotion"][:, None]
  moved = _top_batch(maker, np.where(rule == PETER, d, b), k.promote_n) & ((rule == PETER) | (rule == MATCH))
  new_c = _sigmoid32(F32(k.beta0) + rows["beta1"][:, None] * d + F32(k.beta2) * b)
  winners = _top_batch(maker, m_window, maker.sum(1) // 4) & (rule == TOURNAMENT)
  a = np.where(winners, _sigmoid32(np.log(a) - np.log1p(-a) + F32(k.prize)), a)
  traits = np.stack([np.where(moved, F32(0), d), b, np.where(moved, new_c, c), kk, a], axis=-1)
  return traits, np.where(moved, COORDINATOR, role)


def _organization_batch(traits, role, block, rows, k: Constants) -> dict:
  """Per run, what stays fixed between promotions (see `model._organization`)."""
  d, b, c, kk, a = np.moveaxis(traits, -1, 0)
  n, NB = k.n_agents, k.n_blocks
  blocks = _onehot(block, NB)                                       # (r, n, NB)
  size = blocks.sum(1)
  is_c, is_k = (role == COORDINATOR).astype(F32), (role == COMMUNICATOR).astype(F32)
  s_c, n_c, n_k = _vecmat(c * is_c, blocks), _vecmat(is_c, blocks), _vecmat(is_k, blocks)
  k_bar = np.where(n_k > 0, _vecmat(kk * is_k, blocks) / np.maximum(n_k, 1), F32(0))
  rho = _sigmoid32(F32(k.eta_c) * s_c / np.maximum(size, 1) + F32(k.eta_k) * k_bar)
  gamma, alpha = rows["gamma"][:, None], rows["alpha"][:, None, None]
  effort = np.where(size > 0, rho + (1 - rho) * np.maximum(size, 1) ** gamma, F32(0))
  cross_load = F32(k.cross_weight * NB * (NB - 1) / 2)
  cross = (rows["structure"] == MODULES)[:, None]
  pairs = np.where((rows["load"] == GRAICUNAS)[:, None], size * (F32(2) ** (size - 1) + size - 1),
                   size * (size - 1) / 2)
  load = np.array([k.load_even, k.load_odd], F32)[None, :, None] * pairs[:, None, :]    # (r, 2, NB)
  s_c2 = s_c[:, None, :]
  factor = np.where(load > 0, np.exp(-alpha * np.maximum(F32(0), load - s_c2) / (load + 1)), F32(1))
  surplus = np.maximum(F32(0), s_c2 - load)
  s_cross = surplus.sum(-1)                                         # (r, 2)
  f_cross = np.where(cross, np.exp(-alpha[:, :, 0] * np.maximum(F32(0), cross_load - s_cross) / (cross_load + 1)),
                     F32(1))
  used = np.where(cross, np.minimum(s_cross, cross_load), F32(0))
  kept = np.where(s_cross > 0, 1 - used / np.maximum(s_cross, F32(1e-30)), F32(1))
  idle_c = np.where(s_c2 > load, surplus * kept[..., None] / np.maximum(s_c2, F32(1e-30)) * n_c[:, None, :],
                    F32(0)).sum(-1)
  loss = (size[:, None, :] * (1 - factor)).sum(-1) / F32(n)
  n_comm = is_k.sum(1)
  mean_k = np.where(n_comm > 0, (kk * is_k).sum(1) / np.maximum(n_comm, 1), F32(0))
  return dict(blocks=blocks, effort=effort, agent_effort=(blocks @ effort[..., None])[..., 0],
              mean_effort=(size * effort).sum(1) / F32(n), factor=factor, f_cross=f_cross, idle_c=idle_c,
              loss=loss, maker=role <= 1, p1=F32(k.p1_base) + F32(k.p1_gain) * mean_k)


def _masked_median_batch(x, mask):
  """Per run, the median of x[mask] (0 where the mask is empty)."""
  xs = np.sort(np.where(mask, x, np.inf), axis=1)
  n = mask.sum(1)
  lo = np.take_along_axis(xs, np.maximum((n - 1) // 2, 0)[:, None], 1)[:, 0]
  hi = np.take_along_axis(xs, np.minimum(n // 2, x.shape[1] - 1)[:, None], 1)[:, 0]
  return np.where(n > 0, (lo + hi) / 2, F32(0))


def simulate_batch(world: dict, rows: dict, k: Constants) -> dict:
  """Every run's figures (`model.METRICS`, each (r,)) from their worlds and runs-table rows."""
  n, K, T = k.n_agents, k.n_domains, k.periods
  s = world["specialty"].astype(F32)
  tasks = world["tasks"].astype(F32)
  rows = {name: np.asarray(v, F32 if name in ("alpha", "gamma", "beta1") else None) for name, v in rows.items()}
  r = len(s)
  fit = np.matmul(tasks, np.swapaxes(s, 1, 2))                      # (r, T, n): s_i . q_t
  one_minus_h = 1 + (s * np.log(np.maximum(s, F32(1e-30)))).sum(-1) / F32(np.log(K))
  code = np.full((r, K), 1 / K, F32)
  decay, common = np.ones(r, F32), np.zeros((r, K), F32)
  m_window = np.zeros((r, n), F32)
  h = {name: np.zeros((T, r), F32) for name in ("y", "revenue", "discovery", "u", "iota", "y_net", "effort", "loss")}
  traits, role = world["traits"].astype(F32), world["role"]
  for t in range(T):
    if t == 0 or t == k.promote_t:
      if t == k.promote_t:
        traits, role = _promote_batch(traits, role, m_window, rows, k)
      d, b, c, kk, a = np.moveaxis(traits, -1, 0)
      org = _organization_batch(traits, role, world["block"], rows, k)
      maker = org["maker"]
      n_makers = maker.sum(1)
      makers_f = maker.astype(F32)
    lev = t % 2
    shocked = t >= k.shock
    m = a * d * fit[:, t] if shocked else a * b * one_minus_h
    y = org["f_cross"][:, lev] * (_vecmat(m, org["blocks"]) * org["effort"] * org["factor"][:, lev]).sum(1)
    believed = np.argmax(decay[:, None, None] * s + common[:, None, :], axis=2)
    agree = maker & (believed == np.argmax(code, axis=1)[:, None])
    u = np.where(n_makers > 0, agree.sum(1) / np.maximum(n_makers, 1), 0).astype(F32)
    em = org["agent_effort"] * m
    idle_m = (maker & (em < _masked_median_batch(em, maker)[:, None] / 2)).sum(1)
    iota = (org["idle_c"][:, lev] + idle_m) / F32(n)
    q = tasks[:, t]
    better = maker & (fit[:, t] > (code * q).sum(1)[:, None])
    n_better = better.sum(1)
    mean_a = np.where(n_better > 0, (a * better).sum(1) / np.maximum(n_better, 1), F32(0))
    p2 = F32(k.p2_base) + F32(k.p2_gain) * mean_a
    weights = m * makers_f
    vote = _vecmat(weights, s) / np.maximum(weights.sum(1), F32(1e-30))[:, None]
    code = (1 - p2)[:, None] * code + p2[:, None] * vote
    code = code / code.sum(1, keepdims=True)
    p1 = org["p1"]
    decay, common = (1 - p1) * decay, (1 - p1)[:, None] * common + p1[:, None] * code
    if k.promote_t - k.prize_window <= t < k.promote_t:
      m_window = m_window + m
    z = F32(shocked)
    h["y"][t], h["u"][t], h["iota"][t] = y, u, iota
    h["revenue"][t], h["discovery"][t] = y * (1 - z) * u, y * z * (1 - u)
    h["y_net"][t] = y * (1 - np.maximum(F32(0), iota - F32(k.iota0)))
    h["effort"][t], h["loss"][t] = org["mean_effort"], org["loss"][:, lev]
  t = np.arange(T)
  pre, post, high = t < k.shock, t >= k.promote_t, t % 2 == 1
  return dict(
      cum_revenue=h["revenue"].sum(0), cum_discovery=h["discovery"].sum(0),
      cum_revenue_high=h["revenue"][high].sum(0), cum_discovery_high=h["discovery"][high].sum(0),
      cum_output=h["y"].sum(0), cum_output_net=h["y_net"].sum(0),
      mean_effort=h["effort"].mean(0), mean_coord_loss=h["loss"].mean(0),
      idle_mean=h["iota"].mean(0), idle_median=np.median(h["iota"], axis=0),
      agree_pre=h["u"][pre].mean(0), agree_post=h["u"][~pre].mean(0),
      post_revenue=h["revenue"][post].sum(0), post_discovery=h["discovery"][post].sum(0),
      post_output=h["y"][post].mean(0), post_coord_loss=h["loss"][post].mean(0))
