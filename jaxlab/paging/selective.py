"""Abstention: thresholds chosen on validation, gated answers, risk-coverage curves and AURC
(latent-pager.md, "The experiment I would run next").

Every system answers each question and gives a confidence: the pager its sufficiency head's
probability that the pages hold the answer, a text-reading system (text buffer, full context) the
log-probability of its own greedy answer. Gating replaces the answer by the abstain string when
the confidence is below a threshold. The threshold is chosen on validation only, the same way for
every system, by one of three rules (`eval.threshold_rule`); an answer whose confidence is -inf (the
system declined it, `generation.served_confidence`) is never served and ranks below every other:

- "coverage": the threshold that answers the `eval.target_coverage` share of validation questions
  (the most confident ones; a tie at the cut is answered whole). It cannot abstain on most
  questions by accident, and every system answers about the same share.
- "utility": the candidate (every distinct validation confidence, and "never abstain") with the
  highest mean utility over all validation questions, where a question's utility is token F1
  against its gold answer (an unanswerable question's gold answer is the abstain string, so
  abstaining on it scores 1 and answering it scores 0); ties keep the lowest threshold (abstain
  least). It may abstain on most questions when a system's answers are weak.
- "recall": the highest threshold (the fewest abstentions, least confident first) whose
  abstentions hold at least the `eval.target_recall` share of the unanswerable validation
  questions: an operating point for detecting missing answers, set by how many of them to catch.

F1 at coverage c (`f1_at_coverage`): each system answers its own c most confident share of the
test questions and the figure is the mean utility over those answered, 1 - the risk at coverage c
of the curve below; two systems compared at the same c answer the same number of questions.
Unanswerable detection (`auroc`): how well a confidence ranks answerable above unanswerable
questions (0.5: chance).

Risk-coverage: questions sorted by confidence (most confident first); at coverage c the system
answers the top c share and the risk is the mean loss over those answered. AURC is the mean of
the risk over every coverage step 1/n, 2/n, ..., 1 (the area under the step curve). Loss: 1 - F1
("error") and the grounded hallucination measure ("hallucination").
"""

from __future__ import annotations

import numpy as np
import scipy.stats

from jaxlab.paging import metrics


def utility(answers: list[str], golds: list[str]) -> np.ndarray:
  return np.array([metrics.token_f1(a, g) for a, g in zip(answers, golds)])


def serves(confidence, threshold: float) -> np.ndarray:
  """Which answers a threshold serves: those at or above it, never one whose confidence is -inf
  (a system that declined to answer, `generation.served_confidence`)."""
  conf = np.asarray(confidence, np.float64)
  return (conf >= threshold) & (conf > -np.inf)


def gate(answers: list[str], confidence, threshold: float, abstain: str) -> list[str]:
  return [a if ok else abstain for a, ok in zip(answers, serves(confidence, threshold))]


def _cuts(conf: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """(order, candidates, reachable): the questions least confident first, and for k = 0..n the
  threshold candidates[k] that abstains on the first k of them and whether a threshold can: one
  between two equal confidences cannot split them (only the last k of a tie run is reachable), and
  none serves a declined answer (-inf), so k starts at their count."""
  order = np.argsort(conf, kind="stable")
  candidates = np.concatenate([conf[order], [np.inf]])
  reachable = np.concatenate([[True], conf[order][1:] != conf[order][:-1], [True]])
  reachable[:int(np.sum(conf == -np.inf))] = False
  return order, candidates, reachable


def _threshold(candidates: np.ndarray, k: int) -> float:
  return float(-np.inf) if k == 0 else float(candidates[k])


def choose_threshold(answers: list[str], confidence, golds: list[str], abstain: str) -> dict:
  """The threshold with the best mean validation utility; {"threshold", "utility", "abstain_rate"}."""
  conf = np.asarray(confidence, np.float64)
  answered = utility(answers, golds)
  abstained = utility([abstain] * len(golds), golds)
  order, candidates, reachable = _cuts(conf)
  gains = np.concatenate([[0.0], np.cumsum(abstained[order] - answered[order])])
  total = answered.sum() + np.where(reachable, gains, -np.inf)
  k = int(np.argmax(total))  # the first maximum: the fewest abstentions
  return {"threshold": _threshold(candidates, k), "utility": float(total[k] / len(golds)), "abstain_rate": k / len(golds)}


def threshold_at_recall(confidence, unanswerable, recall: float) -> dict:
  """The highest threshold whose abstentions (least confident first) hold at least the `recall`
  share of the unanswerable questions; {"threshold", "coverage", "abstain_rate", "recall"}."""
  conf, unans = np.asarray(confidence, np.float64), np.asarray(unanswerable, bool)
  if not unans.any():
    raise ValueError("the threshold rule 'recall' needs unanswerable validation questions, and there are none")
  order, candidates, reachable = _cuts(conf)
  caught = np.concatenate([[0], np.cumsum(unans[order])])
  k = int(np.argmax(reachable & (caught >= answered(recall, int(unans.sum())))))  # k = n always qualifies
  served = serves(conf, _threshold(candidates, k))
  return {"threshold": _threshold(candidates, k), "coverage": float(np.mean(served)),
          "abstain_rate": float(np.mean(~served)), "recall": float(np.sum(unans & ~served) / unans.sum())}


RULES = ("coverage", "utility", "recall")


def answered(coverage: float, n: int) -> int:
  """How many of n questions a `coverage` share answers: at least that share (0.7 of 10 is 7, not
  the 8 that 0.7 * 10 = 7.000000000000001 would round up to)."""
  return int(np.ceil(round(coverage * n, 9)))


def threshold_at_coverage(confidence, coverage: float) -> dict:
  """The threshold that answers the `coverage` share of questions, most confident first (at least
  that share: questions tied with the last one answered are answered too)."""
  conf = np.sort(np.asarray(confidence, np.float64))[::-1]
  k = answered(coverage, len(conf))
  threshold = float(-np.inf) if k >= len(conf) else float(conf[max(k, 1) - 1])
  served = serves(conf, threshold)
  return {"threshold": threshold, "coverage": float(np.mean(served)), "abstain_rate": float(np.mean(~served))}


def choose(answers: list[str], confidence, golds: list[str], abstain: str, rule: str, coverage: float,
           unanswerable=None, recall: float | None = None) -> dict:
  """The threshold of `rule` on validation, with its validation utility, coverage and rule
  (`unanswerable`, per question, and `recall` for the rule "recall")."""
  if rule in ("coverage", "recall"):
    out = (threshold_at_coverage(confidence, coverage) if rule == "coverage"
           else threshold_at_recall(confidence, unanswerable, recall))
    said = gate(answers, confidence, out["threshold"], abstain)
    return {**out, "utility": float(utility(said, golds).mean()), "rule": rule}
  if rule == "utility":
    out = choose_threshold(answers, confidence, golds, abstain)
    return {**out, "coverage": 1.0 - out["abstain_rate"], "rule": rule}
  raise ValueError(f"threshold rule must be one of {RULES}, got {rule!r}")


def sort_keys(confidence) -> np.ndarray:
  """Keys whose stable sort (ascending) is the stable sort of the confidences, most confident
  first: each one's rank from the top, equal confidences sharing one. They fit 16-bit integers
  for up to 65,536 distinct confidences, which numpy sorts by radix, about 9x faster than floats;
  the order, ties included, is the same, so every figure is too."""
  conf = np.asarray(confidence, np.float64)
  _, rank = np.unique(-conf.ravel(), return_inverse=True)
  return rank.reshape(conf.shape).astype(np.uint16 if rank.size == 0 or rank.max() < 2**16 else np.int64)


def f1_at_coverage(confidence, util, coverage: float, idx=None) -> np.ndarray:
  """Mean utility over the `coverage` most confident share of the questions (ties broken by
  order); `idx` (..., n) resamples the questions first, giving one figure per resample."""
  keys, util = sort_keys(confidence), np.asarray(util, np.float64)
  idx = np.arange(len(keys)) if idx is None else np.asarray(idx)
  return top_share_mean(keys[idx], util[idx], coverage)


def top_share_mean(keys: np.ndarray, util: np.ndarray, coverage: float) -> np.ndarray:
  """`f1_at_coverage` over the last axis of already gathered (..., n) arrays: `keys` from
  `sort_keys`."""
  k = max(answered(coverage, keys.shape[-1]), 1)
  order = np.argsort(keys, axis=-1, kind="stable")[..., :k]
  return np.take_along_axis(util, order, axis=-1).mean(axis=-1)


def auroc(confidence, positive, idx=None) -> np.ndarray:
  """The probability that a positive question's confidence exceeds a negative one's (ties count
  half), per resample of `idx` (..., n); NaN where a resample lacks either kind."""
  conf, pos = np.asarray(confidence, np.float64), np.asarray(positive, bool)
  idx = np.arange(len(conf)) if idx is None else np.asarray(idx)
  c, p = conf[idx], pos[idx]
  ranks = scipy.stats.rankdata(c, axis=-1)           # average ranks: ties count half
  n_pos, n_neg = p.sum(-1), (~p).sum(-1)
  u = np.where(p, ranks, 0.0).sum(-1) - n_pos * (n_pos + 1) / 2
  with np.errstate(invalid="ignore", divide="ignore"):
    return np.where((n_pos > 0) & (n_neg > 0), u / (n_pos * n_neg), np.nan)


def _risk(keys: np.ndarray, loss: np.ndarray) -> np.ndarray:
  """The risk curve over the last axis of gathered (..., n) arrays, `keys` from `sort_keys`: the
  mean loss of the k most confident answers, for k = 1..n."""
  order = np.argsort(keys, axis=-1, kind="stable")
  return np.cumsum(np.take_along_axis(loss, order, axis=-1), axis=-1) / np.arange(1, keys.shape[-1] + 1)


def risk_coverage(confidence, loss) -> dict:
  """{"coverage", "risk"} step curve (most confident first) and its "aurc"."""
  risk = _risk(sort_keys(confidence), np.asarray(loss, np.float64))
  n = np.arange(1, len(risk) + 1)
  return {"coverage": (n / len(risk)).tolist(), "risk": risk.tolist(), "aurc": float(risk.mean())}


def aurc(confidence, loss, idx=None) -> np.ndarray:
  """`risk_coverage`'s AURC, per resample of `idx` (..., n)."""
  keys, loss = sort_keys(confidence), np.asarray(loss, np.float64)
  idx = np.arange(len(keys)) if idx is None else np.asarray(idx)
  return _risk(keys[idx], loss[idx]).mean(axis=-1)


def abstained(answers: list[str], abstain: str) -> np.ndarray:
  """Per answer, whether it is the abstain string."""
  return np.array([metrics.normalize(a) == metrics.normalize(abstain) for a in answers], bool)


def abstention_ratios(said: np.ndarray, unanswerable: np.ndarray) -> dict:
  """{"precision", "recall"}: margin functions of `stats.bootstrap_claim` (question indices ->
  the share of abstentions on unanswerable questions, the share of unanswerable questions
  abstained on; 0 where a resample has none to divide by); with a leading seeds axis (said:
  (seeds, questions)) of `stats.nested_bootstrap`, pooled over the drawn seeds."""
  said = np.asarray(said, np.float64)
  unans = np.broadcast_to(np.asarray(unanswerable, np.float64), said.shape)
  hit = said * unans

  def ratio(num, den):
    if num.ndim == 1:
      take = lambda a, i: a[i].sum(axis=-1)
    else:
      take = lambda a, si, ui: a[si[..., :, None], ui[..., None, :]].sum(axis=(-2, -1))

    def margin(*idx):
      n, d = take(num, *idx), take(den, *idx)
      return np.where(d > 0, n / np.maximum(d, 1), 0.0)
    return margin
  return {"precision": ratio(hit, said), "recall": ratio(hit, unans)}


def abstention_scores(said: np.ndarray, answerable) -> dict:
  """Abstain precision (share of abstentions that were on unanswerable questions) and recall
  (share of unanswerable questions abstained on), with their counts; `said` is `abstained`'s flags."""
  said = np.asarray(said, bool)
  unans = ~np.asarray(answerable, bool)
  hit = int(np.sum(said & unans))
  return {"abstained": int(said.sum()), "unanswerable": int(unans.sum()), "correct_abstentions": hit,
          "precision": hit / said.sum() if said.sum() else None, "recall": hit / unans.sum() if unans.sum() else None}
