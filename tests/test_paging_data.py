"""Data for the pager: unanswerable questions (checked against the world each document is drawn
from), extra training questions per document, and the generator's existing outputs unchanged."""

import hashlib
import json
import re

import numpy as np

from jaxlab.data import documents as D
from jaxlab.data import lexicon as lx
from jaxlab.data import long_doc_qa as L
from jaxlab.data import world as W

CFG = L.LongDocQAConfig(name="u", min_tokens=200, max_tokens=480, chunk_tokens=80, unanswerable_fraction=0.2,
                        questions_per_document=4)


def _document(cfg, split, i):
  """The Document behind record i, regenerated exactly as `generate_qa` draws it."""
  rng = np.random.default_rng([cfg.seed, W.SPLITS.index(split), i])
  return D.make_document(rng, L._sample_spec(rng, cfg, split), f"{split}-{i:06d}")


def _parse(question):
  """(subject, relations) of a generated question (two-hop forms first: "In which country is {s}?"
  would also match a two-hop question)."""
  forms = list(lx.MULTI_QUESTIONS.items()) + [((r,), t) for r, t in lx.SINGLE_QUESTIONS.items()]
  for relations, template in forms:
    m = re.fullmatch(re.escape(template).replace(re.escape("{s}"), "(?P<s>.+)"), question)
    if m:
      return m.group("s"), relations
  raise AssertionError(f"unparsed question {question!r}")


def test_existing_records_unchanged_for_the_same_seed():
  # The hash of these records before the abstention knobs existed (without the new `answerable` field).
  h = hashlib.sha256()
  cfg = L.LongDocQAConfig(name="a", min_tokens=200, max_tokens=480, chunk_tokens=80)
  for split in ("train", "test"):
    for r in L.generate_qa(cfg, split, 6):
      assert r.pop("answerable") is True
      h.update(json.dumps(r, sort_keys=True).encode())
  assert h.hexdigest() == "2601f89e05b859bec40538a19e6b4542e6647aa4f09f5feac07d1600189982ea"


def test_unanswerable_questions_have_no_answer_in_the_document():
  kinds = {"absent_entity": 0, "absent_relation": 0}
  for split in ("train", "test"):
    records = list(L.generate_qa(CFG, split, 40))
    per_doc = CFG.questions_per_document if split == "train" else 1
    assert len(records) == 40 * per_doc
    unanswerable = [r for r in records if not r["answerable"]]
    assert len(unanswerable) == round(0.2 * len(records))
    for r in unanswerable:
      i = int(r["id"].split("-")[1])
      doc = _document(CFG, split, i)
      assert doc.record["document"] == r["document"] and r["gold_answer"] == "unknown" and not r["evidence"]
      stated = {(f.subject, f.relation): f for f in D.stated_facts(doc.passages)}
      subject, relations = _parse(r["question"])
      assert r["task_type"] == ("single_fact" if len(relations) == 1 else "multi_hop")
      if subject not in r["document"]:
        kinds["absent_entity"] += 1
        assert subject in W.name_pools(split)["person"] + W.name_pools(split)["org"] + W.name_pools(split)["place"]
        continue
      kinds["absent_relation"] += 1
      first = stated.get((subject, relations[0]))
      # The chain the question asks for breaks inside this document: no stated fact answers it.
      assert first is None or (len(relations) == 2 and (first.object, relations[1]) not in stated), r["question"]
  assert min(kinds.values()) > 0, kinds


def test_extra_training_questions_are_answered_by_their_document():
  for r in L.generate_qa(CFG, "train", 10):
    if r["answerable"]:
      subject, relations = _parse(r["question"])
      doc = _document(CFG, "train", int(r["id"].split("-")[1]))
      stated = {(f.subject, f.relation): f for f in D.stated_facts(doc.passages)}
      obj = subject
      for rel in relations:
        obj = stated[(obj, rel)].object
      assert obj == r["gold_answer"]
