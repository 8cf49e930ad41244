"""The harness-versus-brain world (evolution-harness-vs-brain.md): niches, tools, sensors, tasks.

Six niches (three common, three rare), each a one-hot feature vector over six features, so each
of the six sensors reports exactly one niche's marker; an empty patch has no markers. The catalog
of 14 tools below is our design (the spec names the roles, not the numbers; docs/harness_vs_brain.md
explains each row). Tasks are drawn per seed as a fixed sequence of steps; a step's score is the
spec's expected score p x scale - fee, so fitness is deterministic given a genome and a seed.

Fitness follows the spec exactly: F = S - 0.32 C - 0.10 P, with the myopic twin computed from
common steps only.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

N_NICHES, N_FEATURES, N_TOOLS = 6, 6, 14
COMMON, RARE = (0, 1, 2), (3, 4, 5)
EMPTY = N_NICHES                                   # niche index of an empty patch
FEATURES = np.vstack([np.eye(N_NICHES, N_FEATURES), np.zeros((1, N_FEATURES))]).astype(np.float32)

BARE, GENERALIST, BAIT, KEY = 0, 1, 8, 9
SPECIALISTS = (2, 3, 4, 5, 6, 7)                   # one per niche, in niche order
JUNK = (10, 11, 12, 13)
TOOL_NAMES = ("bare hands", "generalist", "spec C0", "spec C1", "spec C2", "spec R0", "spec R1",
              "spec R2", "bait", "key", "junk 0", "junk 1", "junk 2", "junk 3")
# The complete field kit: every tool that is not junk (model-first freezes it; the MLP uses it).
FIELD_KIT = (GENERALIST, *SPECIALISTS, BAIT, KEY)


def _catalog():
  """cap (tool x niche), failure rate nu, install cost c, use fee: the table in the docs."""
  cap = np.zeros((N_TOOLS, N_NICHES), np.float32)
  cap[BARE] = 0.35                                 # works a little everywhere, never fails
  cap[GENERALIST] = 0.70                           # decent everywhere, costly
  for niche, tool in enumerate(SPECIALISTS):
    cap[tool] = 0.20
    cap[tool, niche] = 0.95                        # excellent on its own niche only
  cap[BAIT, list(COMMON)] = 0.85                   # one tool that covers every common niche ...
  cap[BAIT, list(RARE)] = 0.05                     # ... and is worse than bare hands on rare ones
  cap[KEY, list(COMMON)] = 0.10                    # useless on the common slice ...
  cap[KEY, list(RARE)] = 0.95                      # ... one tool for every rare niche
  cap[list(JUNK)] = 0.15
  nu = np.array([0.0, 0.10] + [0.05] * 6 + [0.02, 0.15] + [0.40] * 4, np.float32)
  cost = np.array([0.0, 0.12] + [0.06] * 6 + [0.04, 0.08] + [0.05] * 4, np.float32)
  fee = np.array([0.0] + [0.02] * 13, np.float32)
  return cap, nu, cost, fee


CAP, NU, COST, FEE = _catalog()


@dataclasses.dataclass(frozen=True)
class Constants:
  """World and fitness settings fixed across a sweep (hashable: it keys compiled programs)."""
  cost_weight: float = 0.32          # the spec's weight on C
  spam_weight: float = 0.10          # the spec's weight on P
  sensor_cost: float = 0.02          # c_s
  tax_rate: float = 0.35             # the spec's 0.35 on clip(0.22 - nu, 0, 0.20)
  empty_bare: float = 0.42           # empty patch, bare hands
  empty_tool: float = 0.10           # empty patch, any other tool
  forage_steps: int = 24
  forage_empty: float = 0.25         # share of empty patches when foraging
  forage_rare: float = 0.15          # share of rare patches when foraging
  forage_seen: float = 0.70          # partial sensing: each feature is observed with this chance
  bandit_steps: int = 24
  bandit_rare: float = 0.20
  delayed_common: int = 10           # the spec's 10 common steps ...
  delayed_rare: int = 2              # ... then 2 rare jackpot steps ...
  jackpot: float = 5.0               # ... at reward scale 5


def n_steps(k: Constants) -> int:
  return k.forage_steps + k.bandit_steps + k.delayed_common + k.delayed_rare


def draw_tasks(key, k: Constants) -> dict:
  """One seed's three tasks as a flat step sequence: niche, observed-feature mask, reward scale,
  task id (0 foraging, 1 bandit, 2 delayed) and whether the step is on the common slice."""
  f, b, d = k.forage_steps, k.bandit_steps, k.delayed_common + k.delayed_rare
  # One uniform draw, sliced: each PRNG call costs seconds of CPU compile time.
  u = jax.random.uniform(key, (2 * f + 2 * b + d + f * N_FEATURES,))
  kind, pick_f, u = u[:f], u[f:2 * f], u[2 * f:]
  rare_b, pick_b, u = u[:b], u[b:2 * b], u[2 * b:]
  pick_d, seen_u = u[:d], u[d:].reshape(f, N_FEATURES)
  three = lambda v: jnp.minimum(jnp.floor(v * 3).astype(jnp.int32), 2)   # one of three niches
  forage = jnp.where(kind < k.forage_empty, EMPTY,
                     jnp.where(kind < k.forage_empty + k.forage_rare, 3 + three(pick_f), three(pick_f)))
  bandit = jnp.where(rare_b < k.bandit_rare, 3 + three(pick_b), three(pick_b))
  delayed = three(pick_d) + jnp.where(jnp.arange(d) < k.delayed_common, 0, 3)
  niche = jnp.concatenate([forage, bandit, delayed]).astype(jnp.int32)
  seen = jnp.concatenate([seen_u < k.forage_seen,
                          jnp.ones((n_steps(k) - f, N_FEATURES), bool)])
  task = jnp.concatenate([jnp.zeros(f), jnp.ones(b), jnp.full(k.delayed_common + k.delayed_rare, 2)])
  scale = jnp.concatenate([jnp.ones(f + b + k.delayed_common), jnp.full(k.delayed_rare, k.jackpot)])
  # The common slice: common niches and empty patches (the delayed task's jackpots are rare).
  is_common = (niche < len(COMMON)) | (niche == EMPTY)
  return dict(niche=niche, seen=seen, scale=scale.astype(jnp.float32), task=task.astype(jnp.int32),
              common=is_common)


def step_scores(tool, niche, scale, k: Constants):
  """The spec's step score: p = cap(tool, niche)(1 - nu) times the reward scale, minus the fee;
  on an empty patch bare hands score 0.42 and any other tool 0.10."""
  p = jnp.asarray(CAP)[tool, jnp.minimum(niche, N_NICHES - 1)] * (1 - jnp.asarray(NU)[tool])
  empty = jnp.where(tool == BARE, k.empty_bare, k.empty_tool)
  return jnp.where(niche == EMPTY, empty, p) * scale - jnp.asarray(FEE)[tool]


def harness_cost(tool_mask, sensor_mask, k: Constants):
  """C = sum_j c_j 1[j in H] + 0.35 sum_{j in H} clip(0.22 - nu_j, 0, 0.20) + c_s n_sensors.

  READING: the tax sums over installed tools (over the whole catalog it would be a constant);
  bare hands are the body, not a tool, so never count as installed."""
  on = tool_mask.at[BARE].set(False).astype(jnp.float32)
  tax = jnp.clip(0.22 - jnp.asarray(NU), 0.0, 0.20)
  return on @ jnp.asarray(COST) + k.tax_rate * (on @ tax) + k.sensor_cost * sensor_mask.sum()


def spam_penalty(tool_mask, sensor_mask):
  """P = 0.10 max(0, n_tools - 8) + 0.04 max(0, n_sensors - n_features)."""
  n_tools = tool_mask.at[BARE].set(False).sum()
  return 0.10 * jnp.maximum(0, n_tools - 8) + 0.04 * jnp.maximum(0, sensor_mask.sum() - N_FEATURES)


def task_means(scores, tasks, where):
  """Mean step score of each task over the steps in `where`; S is their mean over the 3 tasks."""
  onehot = (tasks["task"][None, :] == jnp.arange(3)[:, None]) & where[None, :]
  return (onehot * scores[None, :]).sum(1) / jnp.maximum(onehot.sum(1), 1)


def score_table(tasks, k: Constants):
  """Every tool's step score at every step, (N_TOOLS, steps): it depends on the tasks only, so
  under a vmap over a population it is computed once per seed, not once per individual."""
  return step_scores(jnp.arange(N_TOOLS)[:, None], tasks["niche"][None, :], tasks["scale"][None, :], k)


def select_tool(table, tools_used):
  """table[tools_used[s], s] for every step s, as a chain of selects (exact: it copies the
  entry; XLA CPU vectorizes it, where a per-individual gather runs as a scalar loop)."""
  out = table[0]
  for j in range(1, N_TOOLS):
    out = jnp.where(tools_used == j, table[j], out)
  return out


def fitness(tools_used, tool_mask, sensor_mask, tasks, k: Constants) -> dict:
  """True F, its myopic twin (common steps only) and the parts, for the tools used per step."""
  scores = select_tool(score_table(tasks, k), tools_used)
  per_task = task_means(scores, tasks, jnp.ones_like(tasks["common"]))
  myopic_task = task_means(scores, tasks, tasks["common"])
  c, p = harness_cost(tool_mask, sensor_mask, k), spam_penalty(tool_mask, sensor_mask)
  penalty = k.cost_weight * c + k.spam_weight * p
  return dict(F=per_task.mean() - penalty, F_myopic=myopic_task.mean() - penalty, S=per_task.mean(),
              C=c, P=p, deceptive=per_task[2], scores=scores)


def myopic_tool_value(tools_used, tool_mask, scores, tasks, k: Constants):
  """What a myopic brain believes each installed tool is worth: its gain over bare hands on the
  common slice (as it enters the myopic S) minus its share of the weighted harness cost. A tool
  unused on common steps is worth only minus its cost: dead weight. Uninstalled tools: +inf."""
  bare = step_scores(jnp.zeros_like(tasks["niche"]), tasks["niche"], tasks["scale"], k)  # per seed
  gain = scores - bare
  # Weight of each common step in the myopic S: 1 / (3 x common steps of its task).
  onehot = (tasks["task"][None, :] == jnp.arange(3)[:, None]) & tasks["common"][None, :]
  weight = (onehot / jnp.maximum(onehot.sum(1, keepdims=True), 1)).sum(0) / 3
  gw = gain * weight
  # Each tool's sum over the steps it is used at, tool by tool: elementwise selects and a sum
  # along the steps, which XLA CPU vectorizes (a (tools, steps) one-hot product did not).
  value = jnp.stack([jnp.where(tools_used == j, gw, 0.0).sum() for j in range(N_TOOLS)])
  own_cost = jnp.asarray(COST) + k.tax_rate * jnp.clip(0.22 - jnp.asarray(NU), 0.0, 0.20)
  value = value - k.cost_weight * own_cost
  installed = tool_mask.at[BARE].set(False)
  return jnp.where(installed, value, jnp.inf)
