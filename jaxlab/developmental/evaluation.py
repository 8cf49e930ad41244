"""Evaluation (developmental-physics.md: object permanence, solidity, support, material behaviour,
"Track surprise when predictions fail"; the issue's held-out scenes and IntPhys-style probes).

Held-out scenes: for every stage, `heldout_envs` environments reset with scene seeds no training
episode uses, played for one episode with uniform random actions (a policy no regime uses, so no
regime is favoured). The transitions are recorded once; the learner's prediction error on them is
measured every `eval_every` episodes, per stage and per material (the mean object error over the
objects of that material).

Violation of expectation: jaxlab.physics.probes gives matched pairs of transitions, a possible and
an impossible one from the same start and action. The world model's surprise should be higher on
the impossible one. Per probe kind we report the AUC, P(surprise(impossible) > surprise(possible))
over all (possible, impossible) pairs with ties counted one half (Mann-Whitney), 0.5 being chance,
and the share of matched pairs where the impossible member is the more surprising.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxlab import physics
from jaxlab.developmental import batch as batch_lib
from jaxlab.physics import probes

# The stage each probe kind is played in (jaxlab/physics/probes.py: three drops, one stack); the
# world model sees it as its stage input.
PROBE_STAGE = {"fall_through_floor": 0, "hover": 0, "glass_bounces_like_rubber": 0, "offcentre_stack_stays": 2}


def materials(observation, stage: int) -> np.ndarray:
  """i32 [envs, objects]: each object's index into physics.MATERIALS, read from the context
  (per object: material one-hot, shape one-hot, size 3; then the goal 3: jaxlab.physics.api)."""
  n, k = observation.objects.shape[:2]
  per_object = (observation.context.shape[1] - 3) // k
  block = np.asarray(observation.context)[:, :k * per_object].reshape(n, k, per_object)
  return block[..., :len(physics.MATERIALS)].argmax(-1).astype(np.int32)


def random_episode(sim, seed: int, rounds: int, stage: int, dims, rng) -> batch_lib.Batch:
  """One episode of uniform random actions from a reset with `seed`, padded and concatenated."""
  obs = sim.reset(seed)
  out = []
  for _ in range(rounds):
    tr = sim.act(rng.uniform(-1, 1, (obs.objects.shape[0], sim.spec.action_dim)).astype(np.float32))
    out.append(batch_lib.transition(tr, stage, dims, materials(tr.obs, stage)))
    obs = tr.next
  return batch_lib.concat(out)


def scene_set(make_sim, stages, rounds: int, dims, seed_of, rng) -> batch_lib.Batch:
  """One random-action episode per stage, from sims `make_sim(stage)` reset with `seed_of(stage)`."""
  return batch_lib.concat([random_episode(make_sim(s), seed_of(s), rounds, s, dims, rng) for s in stages])


def probe_results(progs, state, kinds, n: int, seed: int, physics_config, backend: str) -> dict:
  """Per probe kind: AUC and matched-pair win rate per run, and every surprise."""
  n_runs = len(jax.tree.leaves(state)[0])
  out = {"probe_auc": [], "probe_pair_win": [], "probe_possible": [], "probe_impossible": []}
  shapes = {"probe_auc": (n_runs, 0), "probe_pair_win": (n_runs, 0), "probe_possible": (n_runs, 0, n),
            "probe_impossible": (n_runs, 0, n)}
  for kind in kinds:
    pair = probes.probe_pairs(kind, n, seed, physics_config, backend=backend)
    possible, impossible = (errors(progs, state, batch_lib.transition(
        tr, PROBE_STAGE[kind], progs.dims, materials(tr.obs, PROBE_STAGE[kind])))[1] for tr in pair)
    out["probe_auc"].append([auc(p, q) for p, q in zip(possible, impossible)])
    out["probe_pair_win"].append((impossible > possible).mean(-1))
    out["probe_possible"].append(possible)
    out["probe_impossible"].append(impossible)
  return {k: np.stack(v, 1).astype(np.float32) if v else np.zeros(shapes[k], np.float32)   # runs first
          for k, v in out.items()}


def auc(possible, impossible) -> float:
  """P(impossible > possible) + P(tie) / 2 over all pairs."""
  p, q = np.asarray(possible, np.float64), np.asarray(impossible, np.float64)
  greater = (q[:, None] > p[None, :]).mean()
  ties = (q[:, None] == p[None, :]).mean()
  return float(greater + ties / 2)


def errors(progs, state, batch: batch_lib.Batch, block: int = 64):
  """(per-object error [runs, rows, N], surprise [runs, rows]) in blocks of `block` rows, the
  last one padded, so every batch size shares one compiled program."""
  n = len(batch.valid)
  padded = batch_lib.concat([batch, batch_lib.empty(-n % block, progs.dims)])
  parts = [progs.evaluate(state, jax.tree.map(lambda x: x[i:i + block], padded))
           for i in range(0, len(padded.valid), block)]
  return tuple(np.concatenate([np.asarray(p[k]) for p in parts], 1)[:, :n] for k in range(2))


def heldout_errors(progs, state, heldout: batch_lib.Batch):
  """(error per stage [runs, S], error per stage and material [runs, S, M]; NaN where absent)."""
  per_object, surprise = errors(progs, state, heldout)
  dims = progs.dims
  valid = heldout.valid
  by_stage = np.full((len(surprise), dims.stages), np.nan, np.float32)
  by_material = np.full((len(surprise), dims.stages, dims.materials), np.nan, np.float32)
  for s in range(dims.stages):
    rows = (heldout.stage == s) & valid
    if rows.any():
      by_stage[:, s] = surprise[:, rows].mean(-1)
    for m in range(dims.materials):
      objs = rows[:, None] & heldout.mask & (heldout.material == m)
      if objs.any():
        by_material[:, s, m] = per_object[:, objs].mean(-1)
  return by_stage, by_material
