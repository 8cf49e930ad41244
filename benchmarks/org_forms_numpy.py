"""The org-forms model as a researcher would first write it: NumPy, one run at a time, a loop over
periods, explicit beliefs and blocks. It is the baseline `benchmarks/org_forms.py` times, and the
tests feed it the worlds JAX draws to check that the jitted model computes the same figures.
"""

from __future__ import annotations

import numpy as np

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
  h = {name: np.zeros(T) for name in ("y", "revenue", "discovery", "u", "iota", "y_net", "effort", "loss")}
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
  t = np.arange(T)
  pre, post, high = t < k.shock, t >= k.promote_t, t % 2 == 1
  return dict(
      cum_revenue=h["revenue"].sum(), cum_discovery=h["discovery"].sum(),
      cum_revenue_high=h["revenue"][high].sum(), cum_discovery_high=h["discovery"][high].sum(),
      cum_output=h["y"].sum(), cum_output_net=h["y_net"].sum(),
      mean_effort=h["effort"].mean(), mean_coord_loss=h["loss"].mean(),
      idle_mean=h["iota"].mean(), idle_median=np.median(h["iota"]),
      agree_pre=h["u"][pre].mean(), agree_post=h["u"][~pre].mean(),
      post_revenue=h["revenue"][post].sum(), post_discovery=h["discovery"][post].sum(),
      post_output=h["y"][post].mean(), post_coord_loss=h["loss"][post].mean())
