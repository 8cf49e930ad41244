"""SQuAD's answer scoring (Rajpurkar et al. 2016, the official `evaluate-v1.1.py`): the answer
normalization, exact match and token F1. The base model's in-window exact match and the latent
pager's metrics both score with these.
"""

from __future__ import annotations

import collections
import re
import string


_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize(text: str) -> str:
  """SQuAD's answer normalization: lower case, no punctuation, no articles, single spaces."""
  text = text.lower().translate(_PUNCTUATION)   # the official script's character filter, in C
  return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def exact_match(prediction: str, gold: str) -> float:
  return float(normalize(prediction) == normalize(gold))


def token_f1(prediction: str, gold: str) -> float:
  """F1 over normalized tokens; an empty gold answer matches only an empty prediction."""
  pred, ref = normalize(prediction).split(), normalize(gold).split()
  if not ref:
    return float(not pred)
  common = sum((collections.Counter(pred) & collections.Counter(ref)).values())
  if common == 0:
    return 0.0
  precision, recall = common / len(pred), common / len(ref)
  return 2 * precision * recall / (precision + recall)
