"""Declining questions about names a document never mentions.

A question names what it asks about; a reader whose document never mentions that name has nothing
to answer from. `unknown_names` finds such questions by text alone, before any system reads: the
names are runs of capitalised words after the question's first word (which is capitalised as the
start of a sentence), and a name counts as mentioned when it occurs in the document's text. Every
system answers the same questions, so the check is applied to all of them alike
(`eval.decline_unknown_names`): where it fires, the system declines (`selective`: confidence -inf,
never served), and its answer in words still counts toward F1 before abstaining.
"""

from __future__ import annotations

import re

import numpy as np

NAME = re.compile(r"[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")


def names(question: str) -> list[str]:
  """The runs of capitalised words in `question` after its first word."""
  parts = question.split(maxsplit=1)
  return NAME.findall(parts[1]) if len(parts) > 1 else []


def unknown_names(records: list[dict]) -> np.ndarray:
  """One flag per record: its question names something its document never mentions."""
  return np.array([any(n not in r["document"] for n in names(r["question"])) for r in records], bool)


def decline(answered: dict, unknown: np.ndarray) -> dict:
  """`answered` ({system: {"answers", "confidence"}}) with every system's confidence -inf where
  `unknown`; a system without confidences (it never abstains) is left as it is, and so is a
  question a system did not answer (confidence None: the full context where it does not fit)."""
  out = {}
  for system, a in answered.items():
    conf = a["confidence"]
    if conf is not None:
      conf = [c if c is None else -np.inf if u else c for c, u in zip(conf, unknown)]
    out[system] = {**a, "confidence": conf}
  return out
