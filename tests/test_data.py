"""The synthetic long-document QA set: determinism, knobs, evidence, TFDS, JSONL, question wordings
(held out, and varied in training)."""

import collections
import hashlib
import json
import logging
import re
import tempfile

import numpy as np
import pytest

from jaxlab.core.config import repo_path
from jaxlab.data import documents as D
from jaxlab.data import jsonl
from jaxlab.data import lexicon as lx
from jaxlab.data import long_doc_qa as L
from jaxlab.data import world as W
from jaxlab.lm.tokenizer import load_tokenizer

TINY = L.LongDocQAConfig(name="tiny", min_tokens=300, max_tokens=2_000, chunk_tokens=256, chunk_overlap=32,
             num_train=5, num_validation=2, num_test=3)


def doc(seed, **spec):
  return D.make_document(np.random.default_rng(seed), D.DocSpec(**spec), f"t{seed}")


def test_same_seed_same_records_and_new_seed_new_records():
  a, b = list(L.generate_qa(TINY, "train", 4)), list(L.generate_qa(TINY, "train", 4))
  assert a == b
  other = L.LongDocQAConfig(**{**TINY.__dict__, "seed": 1})
  assert [r["document"] for r in L.generate_qa(other, "train", 4)] != [r["document"] for r in a]


def test_multi_hop_evidence_lies_in_different_chunks():
  for seed in range(20):
    r = doc(seed, num_tokens=1_500, task_type="multi_hop", chunk_tokens=256, horizon=seed / 19).record
    spans = list(zip(r["evidence_word_start"], r["evidence_word_end"]))
    assert len(spans) == 2
    for c0, c1 in D.chunk_spans(r["num_tokens"], 256, overlap=64):
      assert not all(s < c1 and e > c0 for s, e in spans), (seed, spans, (c0, c1))


def test_horizon_moves_the_evidence():
  for h in (0.05, 0.5, 0.95):
    for seed in range(5):
      r = doc(seed, num_tokens=4_000, horizon=h).record
      from_end = (r["num_tokens"] - r["evidence_word_start"][0]) / r["num_tokens"]
      assert abs(from_end - h) < 0.05, (h, seed, from_end)


def test_distractor_ratio_sets_the_distractor_share():
  shares = []
  for ratio in (0.0, 0.3, 0.7, 1.0):
    words = {"distractor": 0, "filler": 0, "evidence": 0}
    for seed in range(4):
      for p in doc(seed, num_tokens=6_000, distractor_ratio=ratio).passages:
        for s in p:
          words[s.kind] += len(s.text.split())
    shares.append(words["distractor"] / (words["distractor"] + words["filler"]))
  assert shares[0] == 0.0 and shares[-1] == 1.0
  assert abs(shares[1] - 0.3) < 0.1 and abs(shares[2] - 0.7) < 0.1, shares


def test_gold_answer_is_stated_by_the_evidence_and_nowhere_else():
  for seed in range(30):
    task = "multi_hop" if seed % 2 else "single_fact"
    d = doc(seed, num_tokens=2_000, task_type=task, chunk_tokens=512)
    r = d.record
    assert r["gold_answer"] in r["evidence"][-1] and 1 <= len(r["gold_answer"].split()) <= 4
    for ev, s, e in zip(r["evidence"], r["evidence_char_start"], r["evidence_char_end"]):
      assert r["document"][s:e] == ev
    by_text = {s.text: s.fact for p in d.passages for s in p if s.kind == "evidence"}
    facts = [by_text[ev] for ev in r["evidence"]]  # hop order
    if task == "multi_hop":  # the bridge entity links the two hops
      assert facts[0].object == facts[1].subject and facts[0].object in r["evidence"][0]
    keys = {(f.subject, f.relation) for f in facts}
    assert not [s for p in d.passages for s in p if s.kind != "evidence" and s.fact
          and (s.fact.subject, s.fact.relation) in keys]


def test_documents_span_the_requested_lengths():
  cfg = L.LongDocQAConfig(name="len", min_tokens=1_000, max_tokens=16_000, chunk_tokens=256)
  lengths = []
  for r in L.generate_qa(cfg, "validation", 24):
    assert r["num_tokens"] == len(r["document"].split())
    lengths.append(r["num_tokens"])
  assert 1_000 <= min(lengths) < 2_500 and 8_000 < max(lengths) <= 16_000 + 200, lengths
  assert 64_000 <= doc(0, num_tokens=64_000).record["num_tokens"] <= 64_200


def test_splits_use_disjoint_entities():
  pools = {s: set(sum(W.name_pools(s).values(), [])) for s in W.SPLITS}
  assert not pools["train"] & pools["test"] and not pools["train"] & pools["validation"]
  for r in L.generate_qa(TINY, "test", 3):
    assert any(n in r["question"] for n in pools["test"]) and not any(n in r["question"] for n in pools["train"])


def test_pretrain_corpus_keeps_evidence_inside_the_window():
  cfg = L.LongDocQAConfig(name="pt", corpus="pretrain", window_tokens=200)
  examples = list(L.generate_pretrain(cfg, "train", 12))
  assert [e["kind"] for e in examples[:3]] == list(L.PRETRAIN_KINDS)
  for e in examples:
    assert 200 <= len(e["context"].split()) <= 320
    if e["kind"] == "qa":
      assert e["target"] and e["target"] in e["context"]
    if e["kind"] == "extract":  # every extracted fact names an entity of the window
      for fact in e["target"].split(". "):
        assert " ".join(fact.split()[:2]) in e["context"]


def test_tfds_builds_a_tiny_config_and_reads_it_back(tmp_path, caplog, monkeypatch):
  temp = tmp_path / "temp"
  temp.mkdir()
  monkeypatch.setattr(tempfile, "tempdir", str(temp))
  with caplog.at_level(logging.INFO):
    builder = L.build(TINY, str(tmp_path / "data"))
  assert not [r for r in caplog.records if "custom data configuration" in r.getMessage()]   # TFDS's note, dropped
  assert not list(temp.iterdir())   # no temporary folder left behind
  source = builder.as_data_source()
  assert {k: len(v) for k, v in source.items()} == {"train": 5, "validation": 2, "test": 3}
  # TFDS shuffles records by key on write, so compare in id order.
  read = sorted((L.decode_example(source["test"][i]) for i in range(3)), key=lambda r: r["id"])
  assert read == list(L.generate_qa(TINY, "test", 3))
  assert list(tmp_path.rglob("*.array_record*"))


def test_jsonl_round_trip_and_malformed_line(tmp_path):
  path = tmp_path / "set.jsonl"
  records = list(L.generate_qa(TINY, "test", 3))
  jsonl.write_jsonl(records, path)
  assert jsonl.read_jsonl(path) == records
  lines = path.read_text().splitlines()
  for bad in ("{not json", '{"id": "x"}', lines[0].replace('"single_fact"', '"essay"').replace(
      '"multi_hop"', '"essay"')):
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(lines[1:] + [bad]) + "\n")
    with pytest.raises(ValueError, match=f"{broken}:3"):
      jsonl.read_jsonl(broken)


# ----------------------------------------------------------------------------- question wordings
def _forms(wordings):
  """(wording, relations, template) of `wordings`, two-hop forms first: a single-fact form such as
  "Which country is {s} in?" also matches a two-hop question."""
  tables = [(w, *lx.QUESTION_WORDINGS[w]) for w in wordings]
  return ([(w, r, t) for w, _, multi in tables for r, t in multi.items()]
          + [(w, (r,), t) for w, single, _ in tables for r, t in single.items()])


def _match(question, wordings):
  """(wording, subject, relations) of a question worded by one of `wordings`."""
  for wording, relations, template in _forms(wordings):
    m = re.fullmatch(re.escape(template).replace(re.escape("{s}"), "(?P<s>.+)"), question)
    if m:
      return wording, m.group("s"), relations
  raise AssertionError(f"unparsed question {question!r}")


def _parse(question, wording):
  """(subject, relations) of a question in `wording`."""
  return _match(question, (wording,))[1:]


def test_wordings_are_distinct_parseable_and_in_the_base_model_vocabulary():
  tokenizer = load_tokenizer(repo_path("models/lm_base"))
  unk = tokenizer.token_to_id("<unk>")
  assert lx.TRAINING_WORDINGS[0] == "train" and "held_out" not in lx.TRAINING_WORDINGS
  assert set(lx.TRAINING_WORDINGS) | {"held_out"} == set(lx.QUESTION_WORDINGS)
  for single, multi in lx.QUESTION_WORDINGS.values():
    assert list(single) == list(lx.SINGLE_QUESTIONS) and list(multi) == list(lx.MULTI_QUESTIONS)
  # Every key has a different template in every table, and no held-out template is a training one.
  for key in [*lx.SINGLE_QUESTIONS, *lx.MULTI_QUESTIONS]:
    table = 0 if isinstance(key, str) else 1
    templates = [tables[table][key] for tables in lx.QUESTION_WORDINGS.values()]
    assert len(set(templates)) == len(templates), (key, templates)
  training = {t for w in lx.TRAINING_WORDINGS for _, _, t in _forms((w,))}
  held_out = [t for _, _, t in _forms(("held_out",))]
  assert len(set(held_out)) == len(held_out) and not set(held_out) & training
  names = [pool[0] for pool in W.name_pools("test").values()]
  for wording, relations, template in _forms(lx.QUESTION_WORDINGS):
    # Each literal piece as the tokenizer splits it (case and punctuation kept), then whole questions:
    # the hand-written and held-out wordings only (composed ones bring their words with their corpus).
    for text in ([*template.split("{s}"), *(template.format(s=n) for n in names)]
                 if wording not in lx.COMPOSED_WORDINGS else []):
      encoding = tokenizer.encode(text)
      assert unk not in encoding.ids, (template, [t for t, i in zip(encoding.tokens, encoding.ids) if i == unk])
    # A question reads as its own relation or chain in its own table, whatever tables it is parsed with.
    for n in names:
      for tables in (lx.QUESTION_WORDINGS, lx.TRAINING_WORDINGS if wording != "held_out" else ("held_out",)):
        assert _match(template.format(s=n), tables) == (wording, n, relations), (template, n)


def test_composed_wordings_nest_phrases_and_keep_the_held_out_ones_out():
  assert lx.TRAINING_WORDINGS[:len(lx.HAND_WRITTEN_WORDINGS)] == lx.HAND_WRITTEN_WORDINGS
  assert lx.TRAINING_WORDINGS[len(lx.HAND_WRITTEN_WORDINGS):] == tuple(lx.COMPOSED_WORDINGS)
  assert len(lx.COMPOSED_WORDINGS) == lx.COMPOSED_COUNT
  for key, held_out in [*lx.HELD_OUT_SINGLE_QUESTIONS.items(), *lx.HELD_OUT_MULTI_QUESTIONS.items()]:
    table = 0 if isinstance(key, str) else 1
    relations = (key,) if isinstance(key, str) else key
    for single_multi in lx.COMPOSED_WORDINGS.values():
      template = single_multi[table][key]
      # A frame around the second relation's phrase, which ends in the first's, which ends in {s}.
      np = next(template[len(head):len(template) - len(tail)] for f in lx.COMPOSED_FRAMES
                for head, tail in [f.split("{np}")] if template.startswith(head) and template.endswith(tail))
      for r in reversed(relations):
        phrase = next(p for p in lx.COMPOSED_PHRASES[r] if re.fullmatch(
            re.escape(p).replace(re.escape("{x}"), ".+"), np))
        assert not all(piece.strip() in held_out for piece in phrase.split("{x}") if piece.strip()), (key, phrase)
        head, tail = phrase.split("{x}")
        np = np[len(head):len(np) - len(tail)]
      assert np == "{s}", template


def test_held_out_wording_changes_only_the_validation_and_test_questions():
  cfg = L.LongDocQAConfig(name="w", min_tokens=200, max_tokens=480, chunk_tokens=80, multi_hop_fraction=0.5,
                          unanswerable_fraction=0.3, questions_per_document=3)
  held = L.LongDocQAConfig(**{**cfg.__dict__, "question_wording": "held_out"})
  assert list(L.generate_qa(held, "train", 6)) == list(L.generate_qa(cfg, "train", 6))
  seen = set()
  for split in ("validation", "test"):
    for a, b in zip(L.generate_qa(cfg, split, 16), L.generate_qa(held, split, 16), strict=True):
      assert {k: v for k, v in a.items() if k != "question"} == {k: v for k, v in b.items() if k != "question"}
      assert a["question"] != b["question"]
      assert _parse(a["question"], "train") == _parse(b["question"], "held_out")
      seen.add((a["task_type"], a["answerable"]))
  assert seen == {(t, u) for t in D.TASK_TYPES for u in (True, False)}, seen
  with pytest.raises(ValueError, match="question_wording"):
    list(L.generate_qa(L.LongDocQAConfig(**{**cfg.__dict__, "question_wording": "other"}), "test", 1))


def _without_question(records):
  return [{k: v for k, v in r.items() if k != "question"} for r in records]


def test_training_wordings_are_drawn_per_training_question_and_change_nothing_else():
  cfg = L.LongDocQAConfig(name="w", min_tokens=200, max_tokens=480, chunk_tokens=80, multi_hop_fraction=0.5,
                          unanswerable_fraction=0.3, questions_per_document=3)
  varied = {k: L.LongDocQAConfig(**{**cfg.__dict__, "train_wordings": k}) for k in (2, 3, len(lx.TRAINING_WORDINGS))}
  train = list(L.generate_qa(cfg, "train", 16))
  for k, vcfg in varied.items():
    records = list(L.generate_qa(vcfg, "train", 16))
    assert _without_question(records) == _without_question(train)
    used, seen = collections.Counter(), set()
    for a, b in zip(train, records, strict=True):
      wording, *asked = _match(b["question"], lx.TRAINING_WORDINGS)
      assert tuple(asked) == _parse(a["question"], "train")
      used[wording] += 1
      seen.add((a["task_type"], a["answerable"]))
    if k <= 3:
      assert set(used) == set(lx.TRAINING_WORDINGS[:k]) and min(used.values()) >= 6, used
    else:   # 48 questions over fifteen wordings
      assert set(used) <= set(lx.TRAINING_WORDINGS) and len(used) >= 12, used
    assert seen == {(t, u) for t in D.TASK_TYPES for u in (True, False)}, seen
    for split in ("validation", "test"):   # never worded by the training variants
      assert list(L.generate_qa(vcfg, split, 8)) == list(L.generate_qa(cfg, split, 8))
      held = L.LongDocQAConfig(**{**vcfg.__dict__, "question_wording": "held_out"})
      assert all(_match(r["question"], ("held_out",)) for r in L.generate_qa(held, split, 8))
  # The base model's corpus: the same windows, questions and answers, each question worded anew.
  pretrain = L.LongDocQAConfig(name="pt", corpus="pretrain", window_tokens=200, questions_per_window=3)
  canonical = list(L.generate_pretrain(pretrain, "train", 12))
  varied = list(L.generate_pretrain(L.LongDocQAConfig(**{**pretrain.__dict__, "train_wordings": 3}), "train", 12))
  assert _without_question(varied) == _without_question(canonical)
  used = collections.Counter()
  for a, b in zip(canonical, varied, strict=True):
    pairs = list(zip(a["question"].split("\n"), b["question"].split("\n"), strict=True))
    assert len(pairs) == (3 if a["kind"] in ("qa", "fact_qa") else 1)
    for q, w in pairs:
      if q:
        wording, *asked = _match(w, lx.TRAINING_WORDINGS)
        assert tuple(asked) == _parse(q, "train")
        used[wording] += 1
  assert set(used) == set(lx.TRAINING_WORDINGS[:3]) and min(used.values()) >= 4, used
  assert (list(L.generate_pretrain(L.LongDocQAConfig(**{**pretrain.__dict__, "train_wordings": 3}), "test", 4))
          == list(L.generate_pretrain(pretrain, "test", 4)))
  with pytest.raises(ValueError, match="train_wordings"):
    list(L.generate_qa(L.LongDocQAConfig(**{**cfg.__dict__, "train_wordings": len(lx.TRAINING_WORDINGS) + 1}),
                       "train", 1))


def test_question_pool_is_aligned_across_wordings():
  for seed in range(6):
    d = doc(seed, num_tokens=600, task_type="multi_hop" if seed % 2 else "single_fact", chunk_tokens=80)
    pools = {w: D.question_pool(d, w) for w in lx.QUESTION_WORDINGS}
    canonical = [_parse(q, "train") + (a, t) for q, a, t in pools["train"]]
    for wording, pool in pools.items():
      assert [_parse(q, wording) + (a, t) for q, a, t in pool] == canonical


def test_one_training_wording_keeps_the_records_of_every_split():
  # The hash of these records (extra and unanswerable questions, the held-out wording) and of the
  # pretraining corpus before training wordings existed; extra questions' evidence, recorded since,
  # is left out (their fields were empty then).
  cfg = L.LongDocQAConfig(name="w", min_tokens=200, max_tokens=480, chunk_tokens=80, multi_hop_fraction=0.5,
                          unanswerable_fraction=0.3, questions_per_document=3)
  held = L.LongDocQAConfig(**{**cfg.__dict__, "question_wording": "held_out"})
  for c, expected in ((cfg, "9c5864e39c373ec1d2a83b0d546446f150baa1a7ce77647496ea150aa308fe0d"),
                      (held, "93874e813fb22fbbfd774663e697b39639da7a7a4750402bb435ab290dcd59bc")):
    h = hashlib.sha256()
    for split in ("train", "validation", "test"):
      for r in L.generate_qa(c, split, 8):
        r = {**r, **(L._NO_EVIDENCE if "-" in r["id"][len(split) + 1:] else {})}   # an extra question
        h.update(json.dumps(r, sort_keys=True).encode())
    assert h.hexdigest() == expected
  h = hashlib.sha256()
  for e in L.generate_pretrain(L.LongDocQAConfig(name="pt", corpus="pretrain", window_tokens=200,
                                                 questions_per_window=3), "train", 9):
    h.update(json.dumps(e, sort_keys=True).encode())
  assert h.hexdigest() == "35548ce510f3db3f887b32043d45b02511e3bffb240002d33e8c2d35e769c831"
