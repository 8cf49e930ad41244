"""Hidden gems: the jitted, vmapped, sharded sweep against the NumPy loop a researcher would write.

  python benchmarks/hidden_gems.py                # CPU: 2,048 runs (seeds x 6 correlations); NumPy on 48
  python benchmarks/hidden_gems.py --size gpu     # 262,144 runs for an accelerator

A run is one seed at one voter correlation with the `repro` constants: a world of 20 candidates and
three conditions of 4 worlds x 150 raters. Both sides use the same uniforms (drawn by the JAX core).
`numpy_run` is the straightforward implementation: one run, one world, one condition at a time,
with a Python loop over raters and the same loop for every condition. JAX runs all runs as one
program sharded over every device (on a CPU, one device per core). The script prints runs per
second of each and the ratio; compilation is timed apart and not counted. `numpy_run` is also an
independent rewrite of model.py. The script, and tests/test_hidden_gems.py, check that the two
give the same figures.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import common  # noqa: E402

SIZES = {"cpu": dict(jax_runs=2048, numpy_runs=48), "gpu": dict(jax_runs=262_144, numpy_runs=48)}
RHOS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
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


def main():
  args = common.start(__doc__, SIZES)
  import jax

  from jaxlab.core import config as config_lib, mesh
  from jaxlab.swarm.hidden_gems import experiment, model

  size = SIZES[args.size]
  k = experiment.constants(config_lib.load("configs/hidden_gems.py:repro", validate=experiment.validate))
  n = size["jax_runs"]
  rows = {"seed": np.arange(n, dtype=np.int32), "rho": np.asarray(RHOS, np.float32)[np.arange(n) % len(RHOS)]}
  m = mesh.make_mesh()
  print(f"devices: {m.size} x {jax.devices()[0].platform}; {n} runs, rho cycling over {RHOS}")
  out, compile_s, jax_s = common.timed_twice(lambda: mesh.map_runs(model.batch_fn(k), rows, m,
                                                                   common.block_for_platform()))

  few = {key: v[: size["numpy_runs"]] for key, v in rows.items()}
  uniforms = jax.device_get(jax.jit(jax.vmap(lambda r: model.draw_uniforms(model.run_key(r, k), k)))(few))
  t0 = time.perf_counter()
  ref = [numpy_run({name: x[i] for name, x in uniforms.items()}, float(few["rho"][i]), k)
         for i in range(size["numpy_runs"])]
  numpy_s = time.perf_counter() - t0

  common.report("runs", n, jax_s, compile_s, size["numpy_runs"], numpy_s)
  worst = max(float(np.max(np.abs(np.asarray([r[name] for r in ref]) - out[name][: len(ref)])))
              for name in ref[0])
  print(f"check : largest |numpy - jax| over every figure of the {len(ref)} shared runs: {worst:.2e}; "
        f"mean gem precision of g (independent) over the JAX runs {float(np.mean(out['precision'][:, 0, 2])):.3f}")


if __name__ == "__main__":
  main()
