"""Answer metrics of the latent-pager comparison (latent-pager.md; README "Facts from the published
latent-pager code", metrics).

- `normalize`: the published SQuAD-style normalization, in its order: lower case, the articles
  a/an/the removed, punctuation removed, whitespace collapsed.
- `exact_match`, `token_f1`: on normalized tokens (an empty gold answer matches only an empty
  prediction, as published); `rouge_l`: the `rouge-score` package's ROUGE-L F-measure with
  stemming, gold first.
- `hallucination`: the published heuristic, reproduced exactly: claims are the pieces of the answer
  split on runs of . ! ? that have 3+ whitespace words; a claim is hallucinated when under 50% of
  its distinct normalized tokens are in the document's and under 50% in the gold answer's; the rate
  is hallucinated claims over claims (0 when there are none). An answer of one or two words is
  therefore never a claim, whatever it says.
- `hallucination_grounded`: our stricter variant: every piece with a content word is a claim (no
  3-word floor), the gold answer gives no credit, function words (`STOPWORDS`) are ignored, and a
  claim is grounded only when at least 80% of its distinct content tokens occur in the document.
- `answer_words`, `contains_gold`: length in whitespace words, and whether the normalized gold
  answer occurs inside the normalized prediction (token-F1 rewards short answers: a length effect).
- `category`: what an answer is, as served: "abstained" (the abstain string), "malformed" (no
  content word: empty, or function words only), "correct" (token F1 >= `CORRECT_F1` against the
  gold answer), "wrong_from_document" (not correct, yet grounded: what it names is in the
  document, e.g. another entity of it) or "invented" (not grounded). `hallucinated`: a
  wrong-from-document or invented answer to an answerable question, or any answer other than
  abstaining to an unanswerable one (naming something the document does not say is the answer).
- `consistency_pairs`: questions on the same document with the same normalized gold answer (in
  the synthetic set, a multi-hop question and its second hop asked directly) should get the same
  answer; each such pair scores 1 when the two normalized predictions agree.
"""

from __future__ import annotations

import collections
import functools
import itertools
import re

from rouge_score import rouge_scorer

from jaxlab.data.squad import exact_match, normalize, token_f1  # SQuAD's, as the base model is scored

STOPWORDS = frozenset("""a an the is are was were be been being am of in on at to for from by with
and or but not no it its this that these those there here as he she they them his her their i you
we our your my me us do does did has have had will would can could should may might must so than
then what which who whom whose where when why how answer question""".split())

_SCORER = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def rouge_l(prediction: str, gold: str) -> float:
  return _SCORER.score(gold, prediction)["rougeL"].fmeasure


def _pieces(text: str) -> list[str]:
  return [p.strip() for p in re.split(r"[.!?]+", text) if p.strip()]


@functools.lru_cache(maxsize=4096)
def _words(document: str) -> frozenset:
  """A document's normalized words, kept: every system's every answer to its questions reads them."""
  return frozenset(normalize(document).split())


def hallucination(prediction: str, document: str, gold: str) -> float:
  claims = [p for p in _pieces(prediction) if len(p.split()) >= 3]
  if not claims:
    return 0.0
  source, ref = _words(document), set(normalize(gold).split())
  bad = 0
  for claim in claims:
    tokens = set(normalize(claim).split())
    if tokens and len(tokens & source) / len(tokens) < 0.5 and len(tokens & ref) / len(tokens) < 0.5:
      bad += 1
  return bad / len(claims)


def hallucination_grounded(prediction: str, document: str, threshold: float = 0.8) -> float:
  source = _words(document)
  claims = [t for t in (set(normalize(p).split()) - STOPWORDS for p in _pieces(prediction)) if t]
  if not claims:
    return 0.0
  return sum(len(t & source) / len(t) < threshold for t in claims) / len(claims)


def answer_words(prediction: str) -> int:
  return len(prediction.split())


def contains_gold(prediction: str, gold: str) -> float:
  g = normalize(gold)
  return float(bool(g) and f" {g} " in f" {normalize(prediction)} ")


def per_answer(prediction: str, gold: str, document: str) -> dict:
  """Every per-answer metric of one prediction."""
  return {"exact_match": exact_match(prediction, gold), "f1": token_f1(prediction, gold),
          "rouge_l": rouge_l(prediction, gold), "hallucination": hallucination(prediction, document, gold),
          "hallucination_grounded": hallucination_grounded(prediction, document),
          "answer_words": float(answer_words(prediction)), "contains_gold": contains_gold(prediction, gold)}


CATEGORIES = ("correct", "wrong_from_document", "invented", "abstained", "malformed")
CORRECT_F1 = 0.5   # token F1 at which a short answer counts as correct (1 of 2 words right)


def category(prediction: str, gold: str, document: str, abstain: str, answerable: bool = True) -> str:
  """One of `CATEGORIES` (an unanswerable question's answers are never "correct")."""
  if normalize(prediction) == normalize(abstain):
    return "abstained"
  if not set(normalize(prediction).split()) - STOPWORDS:
    return "malformed"
  if answerable and token_f1(prediction, gold) >= CORRECT_F1:
    return "correct"
  return "invented" if hallucination_grounded(prediction, document) > 0 else "wrong_from_document"


def hallucinated(category_: str, answerable: bool) -> bool:
  if answerable:
    return category_ in ("wrong_from_document", "invented")
  return category_ != "abstained"


def consistency_pairs(records: list[dict]) -> list[tuple[int, int]]:
  """Index pairs of records with the same document and the same normalized gold answer."""
  groups = collections.defaultdict(list)
  for i, r in enumerate(records):
    groups[(r["document"], normalize(r["gold_answer"]))].append(i)
  return [pair for idx in groups.values() for pair in itertools.combinations(idx, 2)]


def consistency(predictions: list[str], pairs: list[tuple[int, int]]) -> list[float]:
  """1.0 per pair whose two normalized predictions agree."""
  return [float(normalize(predictions[i]) == normalize(predictions[j])) for i, j in pairs]
