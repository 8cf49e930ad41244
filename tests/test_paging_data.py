"""Data for the pager: unanswerable questions (checked against the world each document is drawn
from), extra training questions per document, the generator's existing outputs unchanged, the test
world (`data.test_seed`), the held-out wording of the test split and varied training wordings
(`data.train_wordings`)."""

import hashlib
import json
import re

import ml_collections
import numpy as np
import pytest

from jaxlab.core import config as config_lib
from jaxlab.data import documents as D
from jaxlab.data import lexicon as lx
from jaxlab.data import long_doc_qa as L
from jaxlab.data import world as W
from jaxlab.paging import data, experiment

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


def test_extra_training_questions_carry_evidence_where_each_fact_is_stated_once():
  labelled = 0
  for r in L.generate_qa(CFG, "train", 12):
    if not r["answerable"] or r["id"].count("-") < 2:
      continue
    doc = _document(CFG, "train", int(r["id"].split("-")[1]))
    statements = {}
    for sent, _ in D.sentence_spans(doc.passages):
      if sent.fact is not None:
        statements.setdefault((sent.fact.subject, sent.fact.relation), []).append(sent.text)
    subject, relations = _parse(r["question"])
    hops, obj = [], subject
    for rel in relations:
      hops.append(statements[(obj, rel)])
      obj = next(f.object for f in D.stated_facts(doc.passages) if (f.subject, f.relation) == (obj, rel))
    if all(len(h) == 1 for h in hops):
      labelled += 1
      assert r["evidence"] == [h[0] for h in hops]
      for text, a, b, w0, w1 in zip(r["evidence"], r["evidence_char_start"], r["evidence_char_end"],
                                    r["evidence_word_start"], r["evidence_word_end"]):
        assert r["document"][a:b] == text and r["document"].split()[w0:w1] == text.split()
    else:
      assert r["evidence"] == [] and r["evidence_char_start"] == []
  assert labelled >= 10


# ----------------------------------------------------------------------------- test world, held-out wording
def _spec(**data_fields):
  """The data a run reads (its seed and `data` block, without the fields added since), at a tiny size."""
  d = dict(jsonl_dir="", tfds_dir="", min_tokens=60, max_tokens=300, chunk_words=40, distractor_ratio=0.5,
           horizon=-1.0, num_train=3, num_validation=2, num_test=8, unanswerable_fraction=0.25,
           abstain_answer="unknown", questions_per_document=2)
  return data.DataSpec.of(ml_collections.ConfigDict(dict(seed=0, data={**d, **data_fields})))


def _without_probes(records):
  return [r for r in records if not r.get("probe")]


def test_default_test_seed_keeps_the_data_and_its_builder_name(tmp_path):
  # The builder name of this config before `test_seed` existed: built data and receipts keep theirs.
  name = "latent_pager_e9f064f188ff9b51"
  for config in (_spec(), _spec(test_seed=-1), _spec(test_seed=0)):
    assert data.synthetic_config(config).name == data.test_config(config).name == name
    assert data.test_world(config) == {"seed": 0, "builder": name}
  splits = data.load(_spec(test_seed=-1), tmp_path)
  cfg = data.synthetic_config(_spec())
  assert splits["train"] == list(L.generate_qa(cfg, "train", 3))
  assert _without_probes(splits["test"]) == list(L.generate_qa(cfg, "test", 8))
  assert [p["id"] for p in splits["test"] if p.get("probe")]   # probes still follow the test split
  assert [p.name for p in (tmp_path / "tfds" / "long_doc_qa").glob("latent_pager_*")] == [name]


def test_test_seed_draws_the_test_split_from_its_own_world(tmp_path):
  base = data.load(_spec(), tmp_path)
  config = _spec(test_seed=5)
  splits = data.load(config, tmp_path)
  assert splits["train"] == base["train"] and splits["validation"] == base["validation"]
  test_cfg = data.test_config(config)
  assert test_cfg.seed == 5 and (test_cfg.num_train, test_cfg.num_validation) == (1, 1)
  assert _without_probes(splits["test"]) == list(L.generate_qa(test_cfg, "test", 8))
  assert not {r["document"] for r in splits["test"]} & {r["document"] for r in base["test"]}
  world = data.test_world(config)
  assert world == {"seed": 5, "builder": test_cfg.name} and world["builder"] != data.synthetic_config(config).name
  with pytest.raises(config_lib.ConfigError, match=r"config\.data\.test_seed"):
    config_lib.load("configs/latent_pager.py:smoke", ["--config.data.test_seed=-2"], experiment.validate)


@pytest.mark.parametrize("test_seed", [-1, 5])
def test_held_out_test_split_differs_only_in_its_questions(tmp_path, test_seed):
  config = _spec(test_seed=test_seed, num_test=12)
  test, held = data.load(config, tmp_path, splits=("test",))["test"], data.load_held_out(config, tmp_path)
  same = ("id", "document", "gold_answer", "task_type", "answerable", "evidence", "probe")
  assert [{k: r.get(k) for k in same} for r in held] == [{k: r.get(k) for k in same} for r in test]
  assert all(a["question"] != b["question"] for a, b in zip(test, held))
  assert any(not r["answerable"] for r in held) and any(r.get("probe") for r in held)
  for r in held:   # every question (probes too) reads as a held-out template
    assert any(re.fullmatch(re.escape(t).replace(re.escape("{s}"), ".+"), r["question"])
               for t in [*lx.HELD_OUT_SINGLE_QUESTIONS.values(), *lx.HELD_OUT_MULTI_QUESTIONS.values()]), r["question"]


# ----------------------------------------------------------------------------- training wordings
def test_training_wordings_reword_only_the_train_split(tmp_path):
  name = "latent_pager_e9f064f188ff9b51"   # the builder of `_spec()` before `train_wordings` existed
  assert data.synthetic_config(_spec(train_wordings=1)).name == name
  one = _spec(num_train=8, questions_per_document=3)
  three = _spec(num_train=8, questions_per_document=3, train_wordings=3)
  cfg = data.synthetic_config(three)
  assert cfg.train_wordings == 3 and cfg.name != data.synthetic_config(one).name
  a, b = data.load(one, tmp_path), data.load(three, tmp_path)
  assert a["validation"] == b["validation"] and a["test"] == b["test"]
  assert ([{k: v for k, v in r.items() if k != "question"} for r in a["train"]]
          == [{k: v for k, v in r.items() if k != "question"} for r in b["train"]])
  assert any(x["question"] != y["question"] for x, y in zip(a["train"], b["train"]))
  for wording in ("train", "held_out"):   # a test world of its own is one builder whatever the training wordings
    assert (data.test_config(_spec(test_seed=5, train_wordings=3), wording).name
            == data.test_config(_spec(test_seed=5), wording).name)
  for bad in (0, len(lx.TRAINING_WORDINGS) + 1):
    with pytest.raises(config_lib.ConfigError, match=r"config\.data\.train_wordings"):
      config_lib.load("configs/latent_pager.py:smoke", [f"--config.data.train_wordings={bad}"], experiment.validate)
  assert config_lib.load("configs/latent_pager.py:repro").data.train_wordings == 1
  assert config_lib.load("configs/latent_pager.py:cpu").data.train_wordings == len(lx.HAND_WRITTEN_WORDINGS)


def test_a_base_model_that_never_read_the_composed_wordings_refuses_them():
  from jaxlab.lm.tokenizer import load_tokenizer
  from jaxlab.paging import pipeline
  tokenizer = load_tokenizer("models/lm_base")
  config = config_lib.load("configs/latent_pager.py:cpu")
  pipeline.check_wordings(tokenizer, config)   # the hand-written ones: its own vocabulary
  config.data.train_wordings = len(lx.TRAINING_WORDINGS)
  with pytest.raises(config_lib.ConfigError, match=r"config\.data\.train_wordings: wording 'composed_"):
    pipeline.check_wordings(tokenizer, config)
