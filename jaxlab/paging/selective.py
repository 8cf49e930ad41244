"""Abstention: thresholds chosen on validation, gated answers, risk-coverage curves and AURC
(latent-pager.md, "The experiment I would run next").

Every system answers each question and gives a confidence: the pager its sufficiency head's
probability that the pages hold the answer, a text-reading system (text buffer, full context) the
log-probability of its own greedy answer. Gating replaces the answer by the abstain string when
the confidence is below a threshold. The threshold is chosen on validation only, the same way for
every system: the candidate (every distinct validation confidence, and "never abstain") with the
highest mean utility over all validation questions, where a question's utility is token F1 against
its gold answer (an unanswerable question's gold answer is the abstain string, so abstaining on it
scores 1 and answering it scores 0); ties keep the lowest threshold (abstain least).

Risk-coverage: questions sorted by confidence (most confident first); at coverage c the system
answers the top c share and the risk is the mean loss over those answered. AURC is the mean of
the risk over every coverage step 1/n, 2/n, ..., 1 (the area under the step curve). Loss: 1 - F1
("error") and the grounded hallucination measure ("hallucination").
"""

from __future__ import annotations

import numpy as np

from jaxlab.paging import metrics


def utility(answers: list[str], golds: list[str]) -> np.ndarray:
  return np.array([metrics.token_f1(a, g) for a, g in zip(answers, golds)])


def gate(answers: list[str], confidence, threshold: float, abstain: str) -> list[str]:
  return [a if c >= threshold else abstain for a, c in zip(answers, np.asarray(confidence))]


def choose_threshold(answers: list[str], confidence, golds: list[str], abstain: str) -> dict:
  """The threshold with the best mean validation utility; {"threshold", "utility", "abstain_rate"}."""
  conf = np.asarray(confidence, np.float64)
  answered = utility(answers, golds)
  abstained = utility([abstain] * len(golds), golds)
  order = np.argsort(conf, kind="stable")
  # Threshold t_k = conf[order[k]] abstains on the k least confident questions.
  gains = np.concatenate([[0.0], np.cumsum(abstained[order] - answered[order])])
  candidates = np.concatenate([conf[order], [np.inf]])
  # A threshold between two equal confidences cannot split them: only the last k of a tie run is reachable.
  reachable = np.concatenate([[True], conf[order][1:] != conf[order][:-1], [True]])
  total = answered.sum() + np.where(reachable, gains, -np.inf)
  k = int(np.argmax(total))  # the first maximum: the fewest abstentions
  threshold = float(-np.inf) if k == 0 else float(candidates[k])
  return {"threshold": threshold, "utility": float(total[k] / len(golds)), "abstain_rate": k / len(golds)}


def risk_coverage(confidence, loss) -> dict:
  """{"coverage", "risk"} step curve (most confident first) and its "aurc"."""
  conf, loss = np.asarray(confidence, np.float64), np.asarray(loss, np.float64)
  order = np.argsort(-conf, kind="stable")
  n = np.arange(1, len(loss) + 1)
  risk = np.cumsum(loss[order]) / n
  return {"coverage": (n / len(loss)).tolist(), "risk": risk.tolist(), "aurc": float(risk.mean())}


def abstention_scores(answers: list[str], answerable, abstain: str) -> dict:
  """Abstain precision (share of abstentions that were on unanswerable questions) and recall
  (share of unanswerable questions abstained on), with their counts."""
  said = np.array([metrics.normalize(a) == metrics.normalize(abstain) for a in answers], bool)
  unans = ~np.asarray(answerable, bool)
  hit = int(np.sum(said & unans))
  return {"abstained": int(said.sum()), "unanswerable": int(unans.sum()), "correct_abstentions": hit,
          "precision": hit / said.sum() if said.sum() else None, "recall": hit / unans.sum() if unans.sum() else None}
