"""The hidden-gem swarm (swarm-hidden-gems.md) in NumPy, twice: one run at a time, and batched.

`numpy_run` is the straightforward implementation: one run, one world, one condition at a time,
a Python loop over raters, the same loop for every condition. It is the per-run reference column
of `benchmarks/hidden_gems.py` and an independent rewrite of `model.py`.

`simulate_batch` is what a good NumPy programmer would write to sweep it: every run on a leading
axis, float32 like the jitted model, the independent condition as one vectorized draw (no rater
depends on another there), and a Python loop only over the raters of the two social conditions,
who arrive one at a time, with every run x condition x world advancing together (the tally
condition's unsorted list reuses the independent condition's visits, as the jitted model does). Both take the
uniforms of `model.draw_uniforms` (the tests feed them JAX's; the benchmark draws them with
NumPy's generator, `draw_uniforms`), so they compute the jitted model's figures on the same inputs.
"""

from __future__ import annotations

import statistics

import numpy as np
from scipy.special import ndtri

from jaxlab.swarm.hidden_gems import model

GEM, FAMOUS_EXCELLENT, OBSCURE_MEDIOCRE, FAMOUS_MEDIOCRE = range(4)   # the quadrants, 5 candidates each
INDEPENDENT, TALLY, SORTED = range(3)
PHI_INV = np.vectorize(statistics.NormalDist().inv_cdf)


def poisson_draw(mean, u):
  """Inverse-CDF Poisson draw, one uniform per draw."""
  out = np.zeros(len(mean), np.int64)
  for i, (lam, x) in enumerate(zip(mean, u)):
    j, p = 0, np.exp(-lam)
    cdf = p
    while cdf < x and j < 10 * lam + 100:
      j += 1
      p *= lam / j
      cdf += p
    out[i] = j
  return out


def wilson_lower(pos, n, z):
  safe = np.maximum(n, 1)
  p = pos / safe
  lo = (p + z * z / (2 * safe) - z * np.sqrt(p * (1 - p) / safe + z * z / (4 * safe**2))) / (1 + z * z / safe)
  return np.where(pos > 0, np.clip(lo, 0, 1), 0.0)          # exactly 0 without positives (n = 0 too)


def unpredictability(pos):
  shares = pos / np.maximum(pos.sum(1, keepdims=True), 1)
  w = len(shares)
  return sum(0.5 * np.abs(shares[i] - shares[j]).sum() for i in range(w) for j in range(w) if i != j) / (w * (w - 1))


def precision_at(score, target, top):
  kth = np.sort(score)[-top]
  above, tied = score > kth, score == kth
  return ((above & target).sum() + (top - above.sum()) * (tied & target).sum() / tied.sum()) / top


def spearman(x, y):
  rank = lambda v: np.array([(v < a).sum() + ((v == a).sum() - 1) / 2 for a in v])
  rx, ry = rank(x) - (len(x) - 1) / 2, rank(y) - (len(y) - 1) / 2
  den = np.sqrt((rx**2).sum() * (ry**2).sum())
  return (rx * ry).sum() / den if den > 0 else 0.0


def numpy_run(u: dict, rho: float, k) -> dict:
  """One run from its uniforms (model.draw_uniforms): the world, three conditions, the figures."""
  quad = np.repeat(np.arange(4), k.per_quadrant)
  good, famous = quad <= FAMOUS_EXCELLENT, quad % 2 == 1
  K, W, B = len(quad), k.worlds, k.raters
  lo = np.where(good, k.good_rate[0], k.mediocre_rate[0])
  rate = lo + (np.where(good, k.good_rate[1], k.mediocre_rate[1]) - lo) * u["rate"]
  mean = np.where(famous, k.famous_mentions, k.obscure_mentions)
  cite = np.where(famous, k.famous_citing, k.obscure_citing)
  citing, firsthand = poisson_draw(mean * cite, u["citing"]), poisson_draw(mean * (1 - cite), u["firsthand"])
  mentions = citing + firsthand
  listed = u["listed"] < np.where(famous, k.famous_listed, 0.0)
  chain = u["chain"] < np.where(famous, k.famous_chain, 0.0)
  v = np.minimum(1, np.log1p(mentions) / np.log1p(k.n0))
  m = 1 - (1 - v) * (1 - listed) * (1 - chain) * (1 - citing / np.maximum(mentions, 1))
  latent = PHI_INV(rate) + np.sqrt(rho) * PHI_INV(u["z"])
  exposure = np.where(famous, k.famous_exposure, 1.0)
  split_of = np.empty(W * B, np.int64)
  split_of[np.argsort(u["split"])] = np.arange(W * B) // B          # U0: random splits of the cohort

  pos, n, split = np.zeros((3, W, K)), np.zeros((3, W, K)), np.zeros((W, K))
  for w in range(W):
    order = np.argsort(u["order"][w])                                # each candidate's list position
    eps = PHI_INV(u["eps"][w])
    for cond in range(3):
      for r in range(B):
        tally = pos[cond, w]
        rank = order.copy()
        if cond == SORTED:
          rank[np.lexsort((order, -tally))] = np.arange(K)
        if u["evidence"][w, r] < k.evidence_share:
          weights = exposure * (1.0 + rank) ** -k.position_decay
          cand = int(np.sum(np.cumsum(weights) < u["visit"][w, r] * weights.sum()))
          positive = latent[cand] + np.sqrt(1 - rho) * eps[r] > 0
        elif cond != INDEPENDENT and tally.max() > 0:
          cand, positive = int(np.argmax(tally - rank / K)), True     # copy the leader
        else:
          continue                                                    # no evidence, nothing to copy
        pos[cond, w, cand] += positive
        n[cond, w, cand] += 1
        if cond == INDEPENDENT:
          split[split_of[w * B + r], cand] += positive

  h = W // 2
  raw, q, g = [], [], []
  for cond in range(3):
    P, N = pos[cond].sum(0), n[cond].sum(0)
    n1, n2 = n[cond, :h].sum(0), n[cond, h:].sum(0)
    p1, p2 = pos[cond, :h].sum(0) / np.maximum(n1, 1), pos[cond, h:].sum(0) / np.maximum(n2, 1)
    c = np.where((n1 > 0) & (n2 > 0), 1 - np.abs(p1 - p2), 1.0)
    raw.append(P / np.maximum(N, 1))
    q.append(wilson_lower(P, N, k.z))
    g.append(q[-1] * c * (1 - m))
    if cond == INDEPENDENT:
      consensus = c[(n1 > 0) & (n2 > 0)].mean() if np.any((n1 > 0) & (n2 > 0)) else 0.0
  gem = quad == GEM
  precision = np.array([[precision_at(raw[i], gem, k.top), precision_at(q[0], gem, k.top),
                         precision_at(g[0], gem, k.top), precision_at(q[i], gem, k.top),
                         precision_at(g[i], gem, k.top)] for i in range(3)])
  u_cond = np.array([unpredictability(pos[i]) for i in range(3)])
  u0 = unpredictability(split)
  winner = np.argmax(pos - np.stack([np.argsort(o) for o in u["order"]])[None] / K, axis=-1)
  agree = np.array([np.mean([winner[i, a] == winner[i, b] for a in range(W) for b in range(W) if a != b])
                    for i in range(3)])
  om, fe = np.flatnonzero(quad == OBSCURE_MEDIOCRE), np.flatnonzero(quad == FAMOUS_EXCELLENT)
  pairs = lambda x: sum(x[i] > x[j] for i in om for j in fe)
  P, N = pos[0].sum(0), n[0].sum(0)
  p_hat, rated = P / np.maximum(N, 1), N > 0
  single = np.where(good, p_hat, 1 - p_hat)
  majority = np.where(p_hat == 0.5, 0.5, (p_hat > 0.5) == good)
  obscure = ~famous
  by_quad = lambda x: np.array([x[quad == i].mean() for i in range(4)])
  return dict(precision=precision, u=u_cond, u0=u0, delta=np.maximum(0, u_cond - u0), winner_agreement=agree,
              winner_good=good[winner].mean(-1), pairs_g=pairs(g[0]), pairs_q=pairs(q[0]),
              spearman_raw=spearman(raw[0][obscure], rate[obscure]), spearman_q=spearman(q[0][obscure], rate[obscure]),
              single_accuracy=single[rated].mean(), majority_accuracy=majority[rated].mean(),
              condorcet_gain=(majority - single)[rated].mean(), consensus=consensus,
              ratings=by_quad(N), q=by_quad(q[0]), g=by_quad(g[0]), m=by_quad(m))


# ---------------------------------------------------------------------------------------------
# Batched: every run on a leading axis (r), float32.

F32 = np.float32


def draw_uniforms(rng: np.random.Generator, runs: int, k) -> dict:
  """`model.draw_uniforms`' named blocks for `runs` runs, from NumPy's generator, in [1e-7, 1)."""
  K, W, B = k.n_candidates, k.worlds, k.raters
  shapes = dict(rate=(K,), z=(K,), listed=(K,), chain=(K,), citing=(K,), firsthand=(K,),
                order=(W, K), evidence=(W, B), eps=(W, B), visit=(W, B), split=(W * B,))
  return {name: rng.random((runs, *s), F32) * F32(1 - 1e-7) + F32(1e-7) for name, s in shapes.items()}


def _poisson(mean, u):
  """Inverse-CDF Poisson draws per candidate from the model's host tables (u: (r, K))."""
  cdf = model.poisson_cdf(mean).astype(F32)
  return np.stack([np.searchsorted(cdf[j], u[:, j] * cdf[j, -1], side="left") for j in range(len(mean))], axis=1)


def _visits(weights, u):
  """Index drawn from each row's unnormalized weights (last axis) by the uniforms u."""
  cum = np.cumsum(weights, axis=-1)
  return (cum[..., None, :] < (u[..., None] * cum[..., None, -1:])).sum(-1)


def _wilson_lower(pos, n, z):
  safe = np.maximum(n, F32(1))
  p = pos / safe
  z2 = F32(z * z)
  denom = 1 + z2 / safe
  centre = (p + z2 / (2 * safe)) / denom
  half = F32(z) * np.sqrt(p * (1 - p) / safe + z2 / (4 * safe**2)) / denom
  return np.where((n > 0) & (pos > 0), np.clip(centre - half, 0, 1), F32(0))


def _precision_at(score, target, top):
  """model.precision_at over the last axis, every leading axis batched."""
  count = (score[..., None, :] >= score[..., :, None]).sum(-1)
  kth = np.where(count >= top, score, -np.inf).max(-1, keepdims=True)
  above, tied = score > kth, score == kth
  slots = top - above.sum(-1)
  return ((above & target).sum(-1) + slots * (tied & target).sum(-1) / tied.sum(-1)) / top


def _unpredictability(pos):
  shares = pos / np.maximum(pos.sum(-1, keepdims=True), F32(1))
  w = shares.shape[-2]
  tv = F32(0.5) * np.abs(shares[..., :, None, :] - shares[..., None, :, :]).sum(-1)
  return tv.sum((-2, -1)) / F32(w * (w - 1))


def _spearman(x, y):
  def ranks(v):
    less = (v[..., None, :] < v[..., :, None]).sum(-1)
    equal = (v[..., None, :] == v[..., :, None]).sum(-1)
    return (less + (equal - 1) / F32(2)).astype(F32) - F32((v.shape[-1] - 1) / 2)
  rx, ry = ranks(x), ranks(y)
  den = np.sqrt((rx**2).sum(-1) * (ry**2).sum(-1))
  return np.where(den > 0, (rx * ry).sum(-1) / np.maximum(den, F32(1e-12)), F32(0))


def _bincount(index, weights, shape):
  return np.bincount(index.ravel(), weights.ravel().astype(F32), int(np.prod(shape))).astype(F32).reshape(shape)


def simulate_batch(u: dict, rho, k) -> dict:
  """Every run's figures (the keys and shapes of `model.simulate`, runs first) from its uniforms."""
  quad = model.quadrant_of(k)
  good, famous = model.GOOD[quad], model.FAMOUS[quad]
  K, W, B, R = k.n_candidates, k.worlds, k.raters, len(u["rate"])
  rho = np.asarray(rho, F32)
  # The world.
  lo = np.where(good, k.good_rate[0], k.mediocre_rate[0]).astype(F32)
  rate = lo + (np.where(good, k.good_rate[1], k.mediocre_rate[1]).astype(F32) - lo) * u["rate"]
  mean = np.where(famous, k.famous_mentions, k.obscure_mentions)
  cite = np.where(famous, k.famous_citing, k.obscure_citing)
  citing, firsthand = _poisson(mean * cite, u["citing"]), _poisson(mean * (1 - cite), u["firsthand"])
  mentions = citing + firsthand
  listed = u["listed"] < np.where(famous, k.famous_listed, 0.0).astype(F32)
  chain = u["chain"] < np.where(famous, k.famous_chain, 0.0).astype(F32)
  v = np.minimum(F32(1), np.log1p(mentions.astype(F32)) / np.log1p(F32(k.n0)))
  share = citing.astype(F32) / np.maximum(mentions, 1).astype(F32)
  m = 1 - (1 - v) * (1 - listed.astype(F32)) * (1 - chain.astype(F32)) * (1 - share)
  latent = ndtri(rate) + np.sqrt(rho)[:, None] * ndtri(u["z"])            # (R, K)
  noise = np.sqrt(1 - rho)
  # The raters, shared by the three conditions.
  evidence = u["evidence"] < F32(k.evidence_share)                        # (R, W, B)
  eps = ndtri(u["eps"])
  order = np.argsort(u["order"], axis=-1, kind="stable")                  # (R, W, K)
  seat = np.empty((R, W * B), np.int64)
  np.put_along_axis(seat, np.argsort(u["split"], axis=1, kind="stable"), np.arange(W * B) // B, axis=1)
  exposure = np.where(famous, k.famous_exposure, 1.0).astype(F32)
  by_rank = (F32(1) + np.arange(K, dtype=F32)) ** F32(-k.position_decay)   # list-position weight

  # Independent: no rater depends on another, so every rater of every world is one draw.
  visit = _visits(exposure * by_rank[order], u["visit"])                  # (R, W, B)
  positive = evidence & (np.take_along_axis(latent[:, None, :], visit, 2) + noise[:, None, None] * eps > 0)
  cell = (np.arange(R * W).reshape(R, W, 1) * K + visit)
  pos0, n0 = _bincount(cell, positive, (R, W, K)), _bincount(cell, evidence, (R, W, K))
  split = _bincount((np.arange(R)[:, None] * W + seat).reshape(R, W, B) * K + visit, positive, (R, W, K))

  # Tally and sorted: raters arrive one at a time; rows = run x condition x world, flattened.
  A = R * 2 * W
  sort = np.broadcast_to(np.array([False, True])[None, :, None], (R, 2, W)).reshape(A)
  rowwise = lambda x: np.broadcast_to(x[:, None], (R, 2) + x.shape[1:]).reshape(A, *x.shape[2:])
  order_a, ev_a, eps_a, vis_a = rowwise(order), rowwise(evidence), rowwise(eps), rowwise(u["visit"])
  # In the unsorted list where a rater looks does not depend on the tally: the tally rows keep the
  # independent condition's visits, and only the sorted rows draw theirs at each step.
  seen_a, sorted_rows = rowwise(visit), np.flatnonzero(sort)
  latent_a = np.broadcast_to(latent[:, None, None, :], (R, 2, W, K)).reshape(A, K)
  noise_a = np.broadcast_to(noise[:, None, None], (R, 2, W)).reshape(A)
  tiebreak = (K - 1 - order_a).astype(F32)
  pos, n = np.zeros((A, K), F32), np.zeros((A, K), F32)
  ranked = order_a.copy()
  rows = np.arange(A)
  for b in range(B):
    ev = ev_a[:, b]
    rank = np.where(sort[:, None], ranked, order_a)
    seen = seen_a[:, b].copy()
    seen[sorted_rows] = _visits(exposure * by_rank[rank[sorted_rows]], vis_a[sorted_rows, b:b + 1])[:, 0]
    vote = latent_a[rows, seen] + noise_a * eps_a[:, b] > 0
    leader = np.argmax(pos - rank.astype(F32) / F32(K), axis=1)
    copy = ~ev & (pos.max(1) > 0)
    cand = np.where(ev, seen, leader)
    up = np.where(ev, vote, copy)
    key = pos * F32(K) + tiebreak                                          # votes, then list order
    old = key[rows, cand][:, None]
    passed = up[:, None] & (key > old) & (key < old + K)
    ranked = ranked + passed
    ranked[rows, cand] -= passed.sum(1)
    pos[rows, cand] += up
    n[rows, cand] += ev | copy
  pos = np.concatenate([pos0[:, None], pos.reshape(R, 2, W, K)], axis=1)   # (R, 3, W, K)
  n = np.concatenate([n0[:, None], n.reshape(R, 2, W, K)], axis=1)

  # Scores per condition; q, c, g frozen from the independent cohort.
  h = W // 2
  P, N = pos.sum(2), n.sum(2)                                             # (R, 3, K)
  q = _wilson_lower(P, N, k.z)
  t1, t2 = n[:, :, :h].sum(2), n[:, :, h:].sum(2)
  gap = np.abs(pos[:, :, :h].sum(2) / np.maximum(t1, F32(1)) - pos[:, :, h:].sum(2) / np.maximum(t2, F32(1)))
  c = np.where((t1 > 0) & (t2 > 0), 1 - gap, F32(1))
  g = q * c * (1 - m[:, None, :])
  raw = P / np.maximum(N, F32(1))
  gem = quad == GEM
  prec = lambda x: _precision_at(x, gem, k.top)
  precision = np.stack([prec(raw), np.repeat(prec(q[:, :1]), 3, 1), np.repeat(prec(g[:, :1]), 3, 1),
                        prec(q), prec(g)], axis=2)
  u_cond, u0 = _unpredictability(pos), _unpredictability(split)
  winner = np.argmax(pos - order[:, None].astype(F32) / F32(K), axis=-1)  # (R, 3, W)
  same = (winner[..., :, None] == winner[..., None, :]).sum((-2, -1)) - W
  om, fe = quad == OBSCURE_MEDIOCRE, quad == FAMOUS_EXCELLENT
  pairs = lambda x: ((x[:, :, None] > x[:, None, :]) & om[:, None] & fe[None, :]).sum((1, 2))
  q0, g0, P0, N0, raw0, c0 = q[:, 0], g[:, 0], P[:, 0], N[:, 0], raw[:, 0], c[:, 0]
  rated = N0 > 0
  p_hat = P0 / np.maximum(N0, F32(1))
  single = np.where(good, p_hat, 1 - p_hat)
  majority = np.where(p_hat == 0.5, F32(0.5), ((p_hat > 0.5) == good).astype(F32))
  mean_rated = lambda x: (x * rated).sum(1) / np.maximum(rated.sum(1), 1)
  both = (t1[:, 0] > 0) & (t2[:, 0] > 0)
  obscure = ~famous
  by_quad = lambda x: np.stack([x[:, quad == i].mean(1) for i in range(4)], axis=1)
  return dict(
      precision=precision, u=u_cond, u0=u0, delta=np.maximum(F32(0), u_cond - u0[:, None]),
      winner_agreement=same / F32(W * (W - 1)), winner_good=good[winner].mean(-1),
      pairs_g=pairs(g0), pairs_q=pairs(q0),
      spearman_raw=_spearman(raw0[:, obscure], rate[:, obscure]),
      spearman_q=_spearman(q0[:, obscure], rate[:, obscure]),
      single_accuracy=mean_rated(single), majority_accuracy=mean_rated(majority),
      condorcet_gain=mean_rated(majority - single), consensus=(c0 * both).sum(1) / np.maximum(both.sum(1), 1),
      ratings=by_quad(N0), q=by_quad(q0), g=by_quad(g0), m=by_quad(m))
