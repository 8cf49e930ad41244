"""Evaluation (developmental-physics.md: object permanence, solidity, support, material behaviour,
"Track surprise when predictions fail"; held-out scenes and IntPhys-style probes).

Held-out scenes: for every stage, `heldout_envs` environments reset from scene keys of a stream no
training episode uses, played for one episode with uniform random actions (a policy no regime
uses, so no regime is favoured). They are recorded once, always on MuJoCo's C engine (the
reference), so runs on either backend are scored on the same transitions; the learner's error on
them (learner.heldout, per stage and per material) every `eval_every` episodes is the learning curve.

Violation of expectation: jaxlab.physics.probes gives matched pairs of transitions, a possible and
an impossible one from the same start and action. The world model's surprise should be higher on
the impossible one. Per probe kind we report the AUC, P(surprise(impossible) > surprise(possible))
over all (possible, impossible) pairs with ties counted one half (Mann-Whitney), 0.5 being chance,
and the share of matched pairs where the impossible member is the more surprising.
"""

from __future__ import annotations

import numpy as np

from jaxlab import physics
from jaxlab.developmental import batch as batch_lib
from jaxlab.developmental import keys as keys_lib
from jaxlab.physics import probes

# The stage each probe kind is played in (jaxlab/physics/probes.py: four drops, one stack); the
# world model sees it as its stage input.
PROBE_STAGE = {"fall_through_floor": 0, "hover": 0, "glass_bounces_like_rubber": 0, "offcentre_stack_stays": 2,
               "rubber_shatters": 0}


def random_episode(sim, key, rounds: int, stage: int, dims, rng) -> batch_lib.Batch:
  """One episode of uniform random actions from a reset with `key`, padded and concatenated."""
  obs = sim.reset(key)
  out = []
  for _ in range(rounds):
    tr = sim.act(rng.uniform(-1, 1, (obs.objects.shape[0], sim.spec.action_dim)).astype(np.float32))
    out.append(batch_lib.transition(tr, stage, dims))
    obs = tr.next
  return batch_lib.concat(out)


def scene_set(config, physics_config, dims, stream: int) -> batch_lib.Batch:
  """One random-action episode per stage on the C engine, scenes from the stream's keys."""
  root, rng = keys_lib.root(config.seed), np.random.default_rng([config.seed, stream])
  out = []
  for s in range(len(physics.STAGES)):
    sim = physics.make_sim(s, config.eval.heldout_envs, backend="c", config=physics_config)
    out.append(random_episode(sim, keys_lib.scene_key(root, stream, 0, s, 0), config.play.episode_rounds, s, dims,
                              rng))
    sim.close()
  return batch_lib.concat(out)


def auc(possible, impossible) -> float:
  """P(impossible > possible) + P(tie) / 2 over all pairs."""
  p, q = np.asarray(possible, np.float64), np.asarray(impossible, np.float64)
  greater = (q[:, None] > p[None, :]).mean()
  ties = (q[:, None] == p[None, :]).mean()
  return float(greater + ties / 2)


def errors(population, state, batch: batch_lib.Batch, block: int = 64):
  """(per-object error [runs, rows, N], surprise [runs, rows]) in blocks of `block` rows, the last
  one padded, so every batch size shares one compiled program."""
  n = len(batch.valid)
  padded = batch_lib.concat([batch, batch_lib.empty(-n % block, population.learner.dims)])
  parts = [population.evaluate(state, batch_lib.Batch(*(x[i:i + block] for x in padded)))
           for i in range(0, len(padded.valid), block)]
  return tuple(np.concatenate([p[k] for p in parts], 1)[:, :n] for k in range(2))


def probe_results(population, state, kinds, n: int, seed: int, physics_config) -> dict:
  """Per probe kind: AUC and matched-pair win rate per run, and every surprise (C engine)."""
  n_runs = population.n
  out = {"probe_auc": [], "probe_pair_win": [], "probe_possible": [], "probe_impossible": []}
  shapes = {"probe_auc": (n_runs, 0), "probe_pair_win": (n_runs, 0), "probe_possible": (n_runs, 0, n),
            "probe_impossible": (n_runs, 0, n)}
  dims = population.learner.dims
  for kind in kinds:
    pair = probes.probe_pairs(kind, n, seed, physics_config, backend="c")
    possible, impossible = (errors(population, state, batch_lib.transition(tr, PROBE_STAGE[kind], dims))[1]
                            for tr in pair)
    out["probe_auc"].append([auc(p, q) for p, q in zip(possible, impossible)])
    out["probe_pair_win"].append((impossible > possible).mean(-1))
    out["probe_possible"].append(possible)
    out["probe_impossible"].append(impossible)
  return {k: np.stack(v, 1).astype(np.float32) if v else np.zeros(shapes[k], np.float32)   # runs first
          for k, v in out.items()}
