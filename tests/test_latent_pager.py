"""Latent pager: modules and encoders, metrics, abstention, the JSONL importer, config errors, and
one end-to-end run on a tiny random Qwen3 exported like the base model (no transformers or torch):
the pointer encoder pretrained (`pretrain`), then the comparison (`smoke`) started from it.

The module-scoped fixtures run both in-process once, with spies on the training entries (the LM's
params before and after), on the one generation entry (the settings each system answered with)
and on the threshold choice (which questions it saw); the tests read what they recorded.
"""

import dataclasses
import functools
import json
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from jaxlab.core import config as config_lib
from jaxlab.data import jsonl, long_doc_qa
from jaxlab.lm import checkpoint_io
from jaxlab.lm_pretrain import train as lm_pretrain
from jaxlab.lm.generate import Scored
from jaxlab.paging import (analysis, data, evaluation, experiment, generation, metrics, model as model_lib,
                           pager as pager_lib, pages, pairs, pipeline, pretrain, retrieval, selective, train)
from jaxlab.paging.encoders import SlotEncoder
from jaxlab.paging.modules import PageAggregator, PageCompressor, Pager
from jaxlab.paging.spec import PagerSpec


# ----------------------------------------------------------------------------- modules
def test_compressor_shapes_and_published_layout():
  comp = PageCompressor(4 * 8, 32, 16, rngs=nnx.Rngs(0))
  out = nnx.jit(lambda m, x: m(x))(comp, jnp.ones((2, 3, 4, 8)))
  assert out.shape == (2, 3, 16)
  # Ends in a LayerNorm: zero mean, unit variance per page.
  np.testing.assert_allclose(np.asarray(out.mean(-1)), 0.0, atol=1e-5)
  assert comp.fc1.kernel.shape == (32, 32) and comp.fc2.kernel.shape == (32, 16)


def test_aggregator_shapes_and_padding_mask():
  module = PageAggregator(16, 24, num_queries=5, depth=2, heads=4, ffn=48, rate=0.1, rngs=nnx.Rngs(0))
  agg = nnx.jit(lambda m, p, mask, key=None: m(p, mask, key))
  agg = functools.partial(agg, module)
  pages_ = jax.random.normal(jax.random.key(1), (2, 6, 16))
  mask = jnp.array([[True] * 6, [True, True, True, False, False, False]])
  out = agg(pages_, mask)
  assert out.shape == (2, 5, 24) and module.queries.shape == (5, 24)
  # Padded pages are never attended to: changing them changes nothing; a real page does.
  changed = pages_.at[1, 3:].set(100.0)
  np.testing.assert_array_equal(np.asarray(agg(changed, mask)), np.asarray(out))
  assert not np.allclose(np.asarray(agg(pages_.at[1, 0].set(5.0), mask))[1], np.asarray(out)[1])
  # Dropout only with a key, and deterministic for a given key.
  k = jax.random.key(3, impl="rbg")  # as training draws dropout keys
  assert not np.allclose(np.asarray(agg(pages_, mask, k)), np.asarray(out))
  np.testing.assert_array_equal(np.asarray(agg(pages_, mask, k)), np.asarray(agg(pages_, mask, k)))


def test_pager_end_to_end_shapes():
  pager = Pager(3, 24, compressor_hidden=32, d_page=16, num_soft_tokens=4, depth=1, heads=4, ffn=48,
                dropout_rate=0.0, rngs=nnx.Rngs(0))
  out = nnx.jit(lambda m, x, mask: m(x, mask))(pager, jnp.ones((2, 5, 3, 24)), jnp.ones((2, 5), bool))
  assert out.shape == (2, 4, 24)


def test_pooling_last_token_and_mean():
  states = jnp.arange(2 * 4 * 1, dtype=jnp.float32).reshape(2, 4, 1)
  mask = jnp.array([[True, True, True, False], [True, True, True, True]])
  np.testing.assert_array_equal(np.asarray(pages.pool(states, mask, "last_token"))[:, 0], [2.0, 7.0])
  np.testing.assert_allclose(np.asarray(pages.pool(states, mask, "mean"))[:, 0], [1.0, 5.5])


def test_chunks_overlap():
  s = pages.PageSettings((1,), "last_token", chunk_tokens=4, chunk_overlap=1, batch_size=2)
  assert pages.chunk_ids(list(range(10)), s) == [[0, 1, 2, 3], [3, 4, 5, 6], [6, 7, 8, 9]]


def test_slot_encoder_shapes_and_token_mask():
  enc = SlotEncoder(2, 24, chunk_tokens=6, slots=3, depth=1, heads=4, ffn=48, rate=0.0, embed_rms=0.7,
                    rngs=nnx.Rngs(0))
  call = nnx.jit(lambda m, s, mask: m(s, mask))
  states = jax.random.normal(jax.random.key(1), (2, 4, 6, 2, 24))  # (B, P, C, L, D)
  mask = jnp.ones((2, 4, 6), bool).at[1, :, 4:].set(False)
  out = call(enc, states, mask)
  assert out.shape == (2, 4, 3, 24)
  # Every slot enters the LM at the embeddings' RMS.
  np.testing.assert_allclose(np.sqrt(np.mean(np.asarray(out) ** 2, -1)), 0.7, rtol=1e-3)
  # A padded token changes nothing; a real one does.
  np.testing.assert_array_equal(np.asarray(call(enc, states.at[1, :, 5].set(9.0), mask)), np.asarray(out))
  assert not np.allclose(np.asarray(call(enc, states.at[1, 0, 0].set(9.0), mask))[1, 0], np.asarray(out)[1, 0])


def test_pointer_pages_mix_the_chunks_own_word_embeddings():
  enc = SlotEncoder(2, 24, chunk_tokens=6, slots=3, depth=1, heads=4, ffn=48, rate=0.0, embed_rms=0.7,
                    pointer=True, rngs=nnx.Rngs(0))
  call = nnx.jit(lambda m, s, mask, e: m(s, mask, None, e))
  states = jax.random.normal(jax.random.key(1), (2, 4, 6, 2, 24))
  embeds = jax.random.normal(jax.random.key(2), (2, 4, 6, 24))
  mask = jnp.ones((2, 4, 6), bool).at[1, :, 4:].set(False)
  out = np.asarray(call(enc, states, mask, embeds))
  assert out.shape == (2, 4, 3, 24)
  # The gate starts at 0: a chunk whose real words all share one embedding gives exactly that word.
  word = jax.random.normal(jax.random.key(3), (24,))
  same = jnp.where(mask[..., None], word, embeds)
  np.testing.assert_allclose(np.asarray(call(enc, states, mask, same))[1], np.broadcast_to(word, (4, 3, 24)),
                             rtol=1e-5, atol=1e-6)
  # A padded token's embedding and states change nothing; a real word does.
  np.testing.assert_array_equal(np.asarray(call(enc, states.at[1, :, 5].set(9.0), mask, embeds.at[1, :, 5].set(9.0))),
                                out)
  assert not np.allclose(np.asarray(call(enc, states, mask, embeds.at[1, 0, 0].set(9.0)))[1, 0], out[1, 0])
  # With the gate open, the latent part adds to the words.
  enc.gate[...] = jnp.asarray(1.0)
  assert not np.allclose(np.asarray(call(enc, states, mask, embeds)), out)


def _slots_config(**pager):
  c = config_lib.load("configs/latent_pager.py:smoke")
  c.pager.update({"decoder_lora_rank": 0, **pager})   # these models are built without an LM
  c.pages.hidden_layers = (1,)
  return c


def test_direct_soft_tokens_right_align_real_pages_after_null_pages():
  c = _slots_config(slots_per_chunk=2, depth=0)
  m = model_lib.PagerModel(PagerSpec.of(c), 8, 1.0)
  pages_ = jax.random.normal(jax.random.key(0), (2, 3, 2, 8))
  page_mask = jnp.array([[True, True, True], [True, False, False]])
  soft = np.asarray(m.soft_from_pages(pages_, page_mask))
  assert soft.shape == (2, 6, 8)
  np.testing.assert_array_equal(soft[0], np.asarray(pages_[0]).reshape(6, 8))
  # One real page: it sits last, just before the question; the two padded positions hold the null page.
  np.testing.assert_array_equal(soft[1, 4:], np.asarray(pages_[1, 0]))
  np.testing.assert_array_equal(soft[1, :4], np.tile(np.asarray(m.null[...]), (2, 1)))
  # Whatever a padded page holds, the soft tokens are the same.
  np.testing.assert_array_equal(np.asarray(m.soft_from_pages(pages_.at[1, 1:].set(5.0), page_mask)), soft)


def test_page_padding_comes_from_train_and_validation_and_answering_widens_it(monkeypatch, tmp_path):
  """`pages.max_pages = 0`: training pads to its own splits' longest document, never the test's;
  answering pads to its records' longest too (an aggregator reads any number of pages)."""
  words = lambda n: " ".join(["w"] * n)   # a document of n words: n chunks below
  store = types.SimpleNamespace(chunks=lambda d: [[0]] * len(d.split()))
  setup = types.SimpleNamespace(store=store, tokenizer=None, eos=0, pad=0, lm=None, settings=None, mesh=None,
                                abstain=None, documents=lambda *a, **k: None)
  config = config_lib.load("configs/latent_pager.py:repro", [])
  assert config.pages.max_pages == 0
  splits = {s: [{"document": words(n), "question": "q"}] for s, n in (("train", 3), ("validation", 5), ("test", 9))}
  asked = {}
  split = lambda records, *a: types.SimpleNamespace(records=records, docs=None)
  monkeypatch.setattr(train.Split, "of", staticmethod(split))
  monkeypatch.setattr(pager_lib, "question_width", lambda *a: 1)

  def fit(*args, max_pages, **kwargs):   # what training is asked for; nothing trains
    asked["max_pages"] = max_pages
    return None, None, []

  monkeypatch.setattr(train, "fit", fit)
  trained = pipeline.train_pager(setup, config, tmp_path, splits)
  assert asked["max_pages"] == trained["max_pages"] == 5
  assert pipeline.fit_to(setup, config, trained, splits["test"])["max_pages"] == 9
  assert pipeline.fit_to(setup, config, trained, splits["train"])["max_pages"] == 5   # never narrower
  config.pages.max_pages = 4   # a set padding cuts every document to it, in training and answering alike
  assert pipeline.fit_to(setup, config, trained, splits["test"]) is trained


def test_aggregated_soft_tokens_have_the_configured_count():
  c = _slots_config(slots_per_chunk=2, depth=1, num_soft_tokens=5)
  m = model_lib.PagerModel(PagerSpec.of(c), 8, 1.0)
  soft = m.soft_from_pages(jnp.ones((2, 3, 2, 8)), jnp.array([[True] * 3, [True, False, False]]))
  assert soft.shape == (2, 5, 8) and not hasattr(m, "null")


def test_packed_rows_mark_targets_and_probes():
  texts = [[([5, 6], [7, 1], True), ([8], [2, 1], False)], [([5], [9, 9, 1], True), ([4, 4, 4, 4], [3, 1], True)]]
  b = train.pager_lib.make_batch({}, texts, width=6, pad_id=0, num_questions=2)
  # A later question that does not fit whole is dropped (row 0's second would need 7 tokens).
  np.testing.assert_array_equal(b["ids"][0], [5, 6, 7, 1, 0, 0])
  np.testing.assert_array_equal(b["probe_valid"], [[True, False], [True, False]])
  np.testing.assert_array_equal(b["target"][0], [False, False, True, True, False, False])
  np.testing.assert_array_equal(b["probe"][:, 0], [1, 0])  # the last prompt token: where the answer starts
  np.testing.assert_array_equal(b["answerable"][:, 0], [True, True])


# ----------------------------------------------------------------------------- metrics
def test_published_normalization_and_scores():
  assert metrics.normalize("The  Quick, brown fox!") == "quick brown fox"
  assert metrics.normalize("An apple a day") == "apple day"
  assert metrics.exact_match("the Alder Falls.", "Alder Falls") == 1.0
  assert metrics.token_f1("Alder Falls in Valdoria", "Alder Falls") == pytest.approx(2 * 0.5 * 1 / 1.5)
  assert metrics.token_f1("", "") == 1.0 and metrics.token_f1("x", "") == 0.0
  assert metrics.rouge_l("Alder Falls", "Alder Falls") == pytest.approx(1.0)
  assert metrics.rouge_l("falls of alder", "Alder Falls") == pytest.approx(0.4)


def test_hallucination_published_and_grounded():
  doc = "Mara Okafor was born in Alder Falls. Alder Falls lies in Valdoria."
  # Two claims of 3+ words: one grounded in the document, one not; a 2-word piece is no claim.
  pred = "Mara was born in Alder Falls. She sailed to the moon yesterday. Mostly yes"
  assert metrics.hallucination(pred, doc, "Alder Falls") == pytest.approx(0.5)
  assert metrics.hallucination("Ghost Town", doc, "Alder Falls") == 0.0
  # Words of the gold answer count as support in the published heuristic only.
  assert metrics.hallucination("Quorvia Estmark Belastan", doc, "Quorvia Estmark Belastan") == 0.0
  assert metrics.hallucination_grounded("Quorvia Estmark Belastan", doc) == 1.0
  # The stricter variant counts short answers too.
  assert metrics.hallucination_grounded("Ghost Town", doc) == 1.0
  assert metrics.hallucination_grounded("Alder Falls", doc) == 0.0


def test_length_and_consistency():
  assert metrics.answer_words("a b  c") == 3
  assert metrics.contains_gold("It was the Alder Falls, surely", "alder falls") == 1.0
  assert metrics.contains_gold("Alder", "Alder Falls") == 0.0
  recs = [{"document": "d", "gold_answer": "X"}, {"document": "d", "gold_answer": "x."},
          {"document": "d", "gold_answer": "Y"}, {"document": "e", "gold_answer": "X"}]
  pairs = metrics.consistency_pairs(recs)
  assert pairs == [(0, 1)]
  assert metrics.consistency(["Falls", "the falls", "q", "Falls"], pairs) == [1.0]


def test_truncate_repeated_sentence():
  text = "The answer is Napoleon. The answer is Napoleon. The answer is Napoleon"
  assert generation.truncate_repeats(text) == "The answer is Napoleon"
  assert generation.truncate_repeats("Yes. Yes. No") == "Yes. Yes. No"  # short sentences never count


def test_probe_is_the_second_hop():
  cfg = long_doc_qa.LongDocQAConfig(name="t", min_tokens=300, max_tokens=400, chunk_tokens=60,
                                    multi_hop_fraction=1.0)
  for record in long_doc_qa.generate_qa(cfg, "test", 4):
    p = data.probe(record)
    assert p["gold_answer"] == record["gold_answer"] and p["document"] == record["document"]
    subject = p["question"].split(" ", 2)[2]
    assert any(w in record["evidence"][0] for w in subject.rstrip("?").split()[-2:])


# ----------------------------------------------------------------------------- abstention
def test_threshold_maximizes_validation_utility_and_breaks_ties_low():
  golds = ["a", "b", "unknown", "unknown"]
  answers = ["a", "x", "y", "z"]
  conf = [0.9, 0.2, 0.1, 0.3]
  got = selective.choose_threshold(answers, conf, golds, "unknown")
  # Abstaining below 0.9 keeps the right answer and turns both unanswerable questions into hits.
  assert got["threshold"] == 0.9 and got["utility"] == pytest.approx(3 / 4) and got["abstain_rate"] == 0.75
  never = selective.choose_threshold(["a", "b"], [0.5, 0.5], ["a", "b"], "unknown")
  assert never["threshold"] == -np.inf and never["utility"] == 1.0
  # Tied confidences cannot be split by a threshold.
  tie = selective.choose_threshold(["a", "x"], [0.5, 0.5], ["a", "unknown"], "unknown")
  assert tie["utility"] == 0.5


def test_risk_coverage_and_aurc():
  rc = selective.risk_coverage([0.9, 0.1, 0.5], [0.0, 1.0, 1.0])
  np.testing.assert_allclose(rc["risk"], [0.0, 0.5, 2 / 3])
  assert rc["aurc"] == pytest.approx((0 + 0.5 + 2 / 3) / 3)
  a = selective.abstention_scores(selective.abstained(["unknown", "x", "unknown"], "unknown"), [False, False, True])
  assert a["precision"] == 0.5 and a["recall"] == 0.5


def test_coverage_rule_answers_its_share_and_ties_together():
  conf = np.arange(10) / 10
  got = selective.choose(["a"] * 10, conf, ["a"] * 10, "unknown", "coverage", 0.8)
  assert got["threshold"] == pytest.approx(0.2) and got["coverage"] == 0.8 and got["rule"] == "coverage"
  assert selective.threshold_at_coverage(conf, 1.0)["threshold"] == -np.inf
  tied = selective.threshold_at_coverage([0.5, 0.5, 0.5, 0.1], 0.5)   # a tie at the cut is answered whole
  assert tied["coverage"] == 0.75
  # The utility rule may abstain on most questions; the coverage rule cannot.
  golds, answers = ["unknown", "unknown", "unknown", "a"], ["x", "y", "z", "a"]
  assert selective.choose(answers, [0.1, 0.2, 0.3, 0.9], golds, "unknown", "utility", 0.8)["coverage"] == 0.25
  assert selective.choose(answers, [0.1, 0.2, 0.3, 0.9], golds, "unknown", "coverage", 0.75)["coverage"] == 0.75
  assert selective.answered(0.7, 10) == 7 and selective.answered(0.8, 4) == 4


def test_recall_rule_abstains_on_the_fewest_questions_that_catch_its_share_of_unanswerable_ones():
  rng = np.random.default_rng(1)
  for _ in range(200):
    n = int(rng.integers(2, 30))
    conf = rng.integers(0, 6, n).astype(float)       # ties
    conf[rng.random(n) < 0.2] = -np.inf              # declined answers: never served
    unans = rng.random(n) < 0.3
    unans[rng.integers(n)] = True
    recall = float(rng.choice([0.1, 0.5, 0.6, 1.0]))
    got = selective.threshold_at_recall(conf, unans, recall)
    said = ~selective.serves(conf, got["threshold"])
    assert (unans & said).sum() >= np.ceil(recall * unans.sum() - 1e-9) and got["recall"] == (unans & said).sum() / unans.sum()
    assert said[conf == -np.inf].all() and got["abstain_rate"] == said.mean()
    # No higher threshold a confidence can set catches enough: this one abstains least.
    higher = [t for t in np.unique(np.append(conf[conf > -np.inf], np.inf)) if t < got["threshold"]]
    assert all((unans & ~selective.serves(conf, t)).sum() < np.ceil(recall * unans.sum() - 1e-9) for t in higher)
  chosen = selective.choose(["a", "x", "y", "z"], [0.9, 0.2, 0.1, -np.inf], ["a", "b", "unknown", "unknown"], "unknown",
                            "recall", 0.8, unanswerable=[False, False, True, True], recall=1.0)
  assert chosen["threshold"] == 0.2 and chosen["coverage"] == 0.5 and chosen["rule"] == "recall"
  assert chosen["utility"] == pytest.approx(3 / 4)
  with pytest.raises(ValueError, match="needs unanswerable validation questions"):
    selective.threshold_at_recall([0.1, 0.2], [False, False], 0.5)


def test_f1_at_coverage_aurc_and_auroc_agree_with_their_definitions():
  rng = np.random.default_rng(0)
  conf, util = rng.integers(0, 5, 40).astype(float), rng.random(40)   # ties in confidence
  rc = selective.risk_coverage(conf, 1 - util)
  for c in (0.5, 0.8, 1.0):
    k = selective.answered(c, 40)
    assert selective.f1_at_coverage(conf, util, c) == pytest.approx(1 - rc["risk"][k - 1])
  assert selective.aurc(conf, 1 - util) == rc["aurc"]   # one curve, one order: the same bits
  idx = rng.integers(0, 40, (7, 40))   # batched resamples agree with one at a time
  np.testing.assert_allclose(selective.f1_at_coverage(conf, util, 0.8, idx),
                             [selective.f1_at_coverage(conf[i], util[i], 0.8) for i in idx])
  np.testing.assert_allclose(selective.aurc(conf, 1 - util, idx), [selective.aurc(conf[i], 1 - util[i]) for i in idx])
  pos = rng.random(40) < 0.7
  pairs = [(a > b) + 0.5 * (a == b) for a in conf[pos] for b in conf[~pos]]
  assert selective.auroc(conf, pos) == pytest.approx(np.mean(pairs))
  np.testing.assert_allclose(selective.auroc(conf, pos, idx), [selective.auroc(conf[i], pos[i]) for i in idx])
  assert selective.auroc([0.9, 0.8, 0.1], [True, True, False]) == 1.0
  assert selective.auroc([0.5, 0.5, 0.5], [True, True, False]) == 0.5
  assert np.isnan(selective.auroc([1, 2], [True, True]))


def test_sort_keys_order_as_the_confidences_do_ties_and_infinities_included():
  rng = np.random.default_rng(1)
  conf = np.concatenate([rng.integers(0, 6, 50) / 4, [-np.inf, np.inf, -0.0, 0.0, np.nan, np.nan]])
  rng.shuffle(conf)
  idx = rng.integers(0, len(conf), (9, len(conf)))
  keys = selective.sort_keys(conf)
  assert keys.dtype == np.uint16
  np.testing.assert_array_equal(np.argsort(keys[idx], axis=-1, kind="stable"),
                                np.argsort(-conf[idx], axis=-1, kind="stable"))
  many = rng.permutation(70_000).astype(float)   # more distinct confidences than 16 bits hold
  assert selective.sort_keys(many).dtype == np.int64
  np.testing.assert_array_equal(np.argsort(selective.sort_keys(many), kind="stable"), np.argsort(-many, kind="stable"))


def test_answer_categories_and_hallucination():
  doc = "Mara Okafor was born in Alder Falls. Corvin Systems is headquartered in Birch Ridge."
  kind = lambda a, gold="Alder Falls", ok=True: metrics.category(a, gold, doc, "unknown", ok)
  assert kind("Alder Falls") == "correct" and kind("Falls") == "correct"         # F1 2/3
  assert kind("Birch Ridge") == "wrong_from_document" and kind("Cedar Hollow") == "invented"
  assert kind("unknown") == "abstained" and kind("the") == "malformed" and kind("") == "malformed"
  assert kind("Alder Falls", gold="unknown", ok=False) == "wrong_from_document"   # never correct when unanswerable
  assert not metrics.hallucinated("correct", True) and metrics.hallucinated("wrong_from_document", True)
  assert metrics.hallucinated("malformed", False) and not metrics.hallucinated("abstained", False)
  assert not metrics.hallucinated("malformed", True)


def _answer_tokenizer():
  tok = Tokenizer(models.WordLevel({"<pad>": 0, "<eos>": 1, "<unk>": 2, "Answer": 3, ":": 4}, unk_token="<unk>"))
  tok.pre_tokenizer = pre_tokenizers.Whitespace()
  return tok


def test_abstain_answer_is_recognised_by_its_ids():
  tok = _answer_tokenizer()
  ab = generation.abstain_from(tok, "unknown")
  assert ab.ids == (2,)  # no such word: the LM says it with <unk>
  settings = generation.Settings(4, 1.0, 1, 0, False)
  assert generation.decode(tok, np.array([[2, 1, 0, 0], [3, 1, 0, 0]]), settings, ab) == ["unknown", "Answer"]


def test_begin_suppress_names_eos_padding_and_the_abstain_answers_first_token():
  ab = generation.abstain_from(_answer_tokenizer(), "unknown")
  config = config_lib.load("configs/latent_pager.py:cpu_answers", [], experiment.validate)
  assert tuple(config.generation.begin_suppress) == ("eos", "pad", "abstain")
  assert generation.settings_from(config, 1, 0, ab).begin_suppress == (0, 1, 2)
  assert generation.settings_from(config_lib.load("configs/latent_pager.py:cpu", []), 1, 0, ab).begin_suppress == ()
  with pytest.raises(config_lib.ConfigError, match=r"config\.generation\.begin_suppress: .*'eos', 'pad', 'abstain'"):
    config_lib.load("configs/latent_pager.py:cpu_answers", ["--config.generation.begin_suppress=('eos', 'bos')"],
                    experiment.validate)


def test_a_declined_answer_is_never_served_and_ranks_last():
  """`generation.decline`: where the LM would have begun with a declining id, the confidence is
  -inf; no threshold serves it (each rule counts it as an abstention) and it ranks below every
  answer, while the answer in words is kept for F1 before abstaining."""
  ab = generation.abstain_from(_answer_tokenizer(), "unknown")
  declines = "--config.generation.decline=('eos', 'pad', 'abstain')"
  config = config_lib.load("configs/latent_pager.py:cpu_answers", [declines], experiment.validate)
  settings = generation.settings_from(config, 1, 0, ab)
  assert settings.decline == (0, 1, 2) and settings.begin_suppress == (0, 1, 2)
  assert generation.settings_from(config_lib.load("configs/latent_pager.py:cpu_answers", []), 1, 0, ab).decline == ()
  with pytest.raises(config_lib.ConfigError, match=r"config\.generation\.decline: .*\('eos', 'pad', 'abstain'\)"):
    config_lib.load("configs/latent_pager.py:cpu_answers", ["--config.generation.decline=('bos',)"],
                    experiment.validate)
  with pytest.raises(ValueError, match="decline .* names what generation.begin_suppress"):
    generation.settings_from(config_lib.load("configs/latent_pager.py:cpu_answers",
                                             [declines, "--config.generation.begin_suppress=('eos',)"]), 1, 0, ab)
  got = Scored(tokens=np.array([[5, 1], [6, 1], [7, 1]]), logprob=np.array([-1.0, -2.0, -3.0], np.float32),
               last_state=np.zeros((3, 4)), first=np.array([5, 2, 1]))
  conf = generation.served_confidence(got.logprob, got, settings)
  assert conf.dtype == np.float32 and conf.tolist() == [-1.0, -np.inf, -np.inf]
  undeclined = dataclasses.replace(settings, decline=())
  assert generation.served_confidence(got.logprob, got, undeclined).tolist() == [-1, -2, -3]
  # No threshold serves it, whatever the rule; among the rest the rules act as before.
  assert selective.gate(["a", "b", "c"], conf, -np.inf, "unknown") == ["a", "unknown", "unknown"]
  golds, answers = ["a", "b", "unknown", "c"], ["a", "b", "x", "y"]
  conf = [0.9, -np.inf, 0.2, 0.5]
  best = selective.choose_threshold(answers, conf, golds, "unknown")
  assert best["threshold"] == 0.5 and best["abstain_rate"] == 0.5 and best["utility"] == pytest.approx(0.5)
  assert selective.choose_threshold(["a", "b"], [-np.inf, 0.5], ["a", "b"], "unknown")["utility"] == 0.5
  everything = selective.choose(answers, conf, golds, "unknown", "coverage", 1.0)
  assert everything["threshold"] == -np.inf and everything["coverage"] == 0.75
  assert selective.f1_at_coverage(conf, [1.0, 1.0, 0.0, 0.0], 0.75) == pytest.approx(1 / 3)
  rows = [{"answers": {"text_buffer": a}, "confidence": {"text_buffer": c}} for a, c in zip(answers, conf)]
  final = analysis.final_answers(rows, "text_buffer", {"text_buffer": everything}, "unknown")
  assert final == ["a", "unknown", "x", "y"]


# ----------------------------------------------------------------------------- JSONL importer
def test_jsonl_errors_name_file_and_line(tmp_path):
  good = {"id": "a", "document": "d", "question": "q", "gold_answer": "g", "task_type": "single_fact"}
  cases = {"not json": "invalid JSON", json.dumps({**good, "task_type": "other"}): "task_type must be",
           json.dumps({k: v for k, v in good.items() if k != "question"}): "missing field 'question'",
           json.dumps({**good, "gold_answer": 3}): "'gold_answer' must be a string",
           json.dumps(good): "duplicate id 'a'"}
  for i, (line, message) in enumerate(cases.items()):
    path = tmp_path / f"f{i}.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + line + "\n")
    with pytest.raises(ValueError, match=rf"{path}:3: .*{message}"):
      jsonl.read_jsonl(path)


def test_config_errors_name_the_field():
  with pytest.raises(config_lib.ConfigError, match=r"config\.pages\.chunk_overlap"):
    config_lib.load("configs/latent_pager.py:smoke", ["--config.pages.chunk_overlap=48"], experiment.validate)
  with pytest.raises(config_lib.ConfigError, match=r"config\.prompts\.pager"):
    config_lib.load("configs/latent_pager.py:smoke", ["--config.prompts.pager=Answer:"], experiment.validate)
  with pytest.raises(config_lib.ConfigError, match=r"config\.eval\.threshold_rule: is 'recall', and this config has no eval\.target_recall"):
    config_lib.load("configs/latent_pager.py:smoke", ["--config.eval.threshold_rule=recall"], experiment.validate)
  with pytest.raises(config_lib.ConfigError, match=r"config\.eval\.target_recall: must be in \(0, 1\]"):
    config_lib.load("configs/latent_pager.py:cpu_detect", ["--config.eval.target_recall=1.5"], experiment.validate)




# ----------------------------------------------------------------------------- end to end
def tiny_lm_folder(folder, specials=("<pad>", "<eos>", "<unk>")):
  """A 2-layer random Qwen3 with a word-level tokenizer over the synthetic world, exported like
  the base model. A wide init, so the random LM can express peaked distributions for the pager."""
  cfg = config_lib.load("configs/lm_pretrain.py:smoke", ["--config.optim.init_std=0.5"])
  tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
  tok.pre_tokenizer = pre_tokenizers.Whitespace()
  docs = long_doc_qa.LongDocQAConfig(name="tiny", min_tokens=120, max_tokens=300, chunk_tokens=40)
  texts = [r["document"] + " " + r["question"] for r in long_doc_qa.generate_qa(docs, "train", 30)]
  tok.train_from_iterator(texts + ["Question: Answer: Key facts:"],
                          trainers.WordLevelTrainer(special_tokens=list(specials)))
  return lm_pretrain.export(lm_pretrain.init_model(cfg, tok.get_vocab_size()), tok, cfg, folder)


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
  return tiny_lm_folder(tmp_path_factory.mktemp("lm"))


def _load(variant, tiny_lm, workdir, *extra):
  config = config_lib.load(f"configs/latent_pager.py:{variant}", [
      f"--config.model.path={tiny_lm}", f"--config.pages.store_dir={workdir / 'store'}", *extra], experiment.validate)
  workdir.mkdir(parents=True, exist_ok=True)
  (workdir / "config.json").write_text(json.dumps({**config.to_dict(), "variant": variant}))  # as `jaxlab run` does
  return config


def _lm_params(lm):
  return [np.array(x) for x in jax.tree.leaves(nnx.state(lm))]


@pytest.fixture(scope="module")
def run(tiny_lm, tmp_path_factory):
  """`pretrain` (smoke-sized) then `smoke` started from its exported encoder, with spies."""
  root = tmp_path_factory.mktemp("run")
  seen = {"generate": [], "lm": {}, "thresholds": []}
  real = {"fit": train.fit, "pretrain": pretrain.run, "generate": generation.Generator.__call__,
          "choose": selective.choose}

  def spy(name):
    def wrapped(config, workdir, lm, *args, **kw):
      before = _lm_params(lm)
      out = real[name](config, workdir, lm, *args, **kw)
      seen["lm"][name] = (before, _lm_params(lm))
      seen[name] = out
      return out
    return wrapped

  def generate(self, ids, mask, prefix_embeds=None):
    seen["generate"].append((self.settings, prefix_embeds is not None))
    return real["generate"](self, ids, mask, prefix_embeds)

  def choose(answers, confidence, golds, *args, **kw):
    seen["thresholds"].append(list(golds))
    return real["choose"](answers, confidence, golds, *args, **kw)

  pre_dir = root / "pretrain"
  with pytest.MonkeyPatch.context() as mp:
    mp.setattr(train, "fit", spy("fit"))
    mp.setattr(pretrain, "run", spy("pretrain"))
    mp.setattr(generation.Generator, "__call__", generate)
    mp.setattr(selective, "choose", choose)
    # The encoder is pretrained without the decoder bridge and `smoke` adds one, as `pretrain` and `cpu` do.
    pre = _load("smoke", tiny_lm, pre_dir, "--config.mode=pretrain", "--config.pager.init=",
                "--config.pager.decoder_lora_rank=0", "--config.pretrain.steps=12", "--config.pretrain.eval_every=6")
    experiment.run(pre, pre_dir)
    workdir = root / "compare"
    config = _load("smoke", tiny_lm, workdir, f"--config.pager.init={pre_dir / 'encoder'}")
    experiment.run(config, workdir)
  return config, workdir, seen, pre_dir


def test_pretraining_on_documents_cut_to_their_evidence_continues_an_exported_encoder(run, tiny_lm, tmp_path):
  """`pretrain.chunks = "evidence"`: each row's document keeps `pages.max_pages` of its chunks in
  document order, every chunk holding its questions' evidence among them, the same cut for the same
  seed; the run starts from `pager.init` and logs that encoder's held-out figures as step 0."""
  pre_dir = run[3]
  extra = ("--config.mode=pretrain", f"--config.pager.init={pre_dir / 'encoder'}", "--config.pager.decoder_lora_rank=0",
           "--config.data.min_tokens=300", "--config.data.max_tokens=600", "--config.pages.max_pages=4",
           "--config.train.questions_per_row=2", "--config.pretrain.steps=1", "--config.pretrain.eval_every=1")
  workdir = tmp_path / "long"
  config = _load("smoke", tiny_lm, workdir, *extra)
  with config.unlocked():
    config.pretrain.chunks = "evidence"   # a field of `pretrain_long_16x` only
  (workdir / "config.json").write_text(json.dumps({**config.to_dict(), "variant": "smoke"}))
  setup = pipeline.Setup(config, workdir)
  recs = pretrain.with_evidence(pretrain.records(config, "train", 6))
  assert any(r["answerable"] for r in recs) and all(r["evidence_char_start"] for r in recs if r["answerable"])

  def cut(seed):
    made = train.Split.of(recs, lambda d: pager_lib.Documents(config.pager.encoder, setup.store, d), setup.tokenizer,
                          config.prompts.pager, setup.eos, 2, config.data.abstain_answer)
    return pretrain.cut_to_evidence(made, recs, 2, 4, setup.tokenizer, setup.store.settings, seed)

  first, again = cut(0), cut(0)
  assert first.docs.items == again.docs.items
  for row, kept in zip(train.question_rows(recs, 2), first.docs.items):
    whole = setup.store.chunks(row[0]["document"])
    assert len(whole) > 4 and len(kept) == 4
    at = [whole.index(c) for c in kept]
    assert at == sorted(at)   # document order
    offsets = setup.tokenizer.encode(row[0]["document"]).offsets
    for r in row:
      held = retrieval.evidence_chunks(offsets, r, config.pages.chunk_tokens, config.pages.chunk_overlap)
      assert set(held) <= set(at)
  experiment.run(config, workdir)
  log = [json.loads(line) for line in (workdir / "pretrain_log.jsonl").read_text().splitlines()]
  assert [r["step"] for r in log] == [0, 1] and log[0]["loss"] is None and log[1]["loss"] is not None
  report = (workdir / "report.md").read_text()
  assert f"Started from `{pre_dir / 'encoder'}`" in report and "cut to 4 of its chunks" in report
  assert (workdir / "encoder" / "encoder.safetensors").is_file()


def test_lm_params_bitwise_unchanged_by_every_training(run):
  seen = run[2]
  assert set(seen["lm"]) == {"fit", "pretrain"}
  for before, after in seen["lm"].values():
    assert len(before) == len(after) > 0
    for a, b in zip(before, after):
      np.testing.assert_array_equal(a, b)


def test_autoencoding_loss_falls_and_the_encoder_ships(run, tiny_lm):
  config, _, seen, pre_dir = run
  history = seen["pretrain"]["history"]
  assert seen["pretrain"]["finished"] and history[-1]["step"] == 12
  log = [json.loads(line) for line in (pre_dir / "pretrain_log.jsonl").read_text().splitlines()]
  assert log[-1]["val_ae_ce"] < log[0]["val_ae_ce"] and log[-1]["loss"] < log[0]["loss"]
  assert (pre_dir / "report.md").is_file() and "exact-chunk" in (pre_dir / "report.md").read_text()
  # The export holds only the encoder's parts, and a mismatched pager shape is refused.
  state = pretrain.load(pre_dir / "encoder", config)
  assert state and all(path[0] in pretrain.PRETRAINED for path in state)
  other = config_lib.load("configs/latent_pager.py:smoke", [f"--config.model.path={tiny_lm}",
                                                              "--config.pager.slots_per_chunk=3"])
  with pytest.raises(ValueError, match="slots_per_chunk"):
    pretrain.load(pre_dir / "encoder", other)
  with pytest.raises(ValueError, match="another LM"):
    pretrain.load(pre_dir / "encoder", config_lib.load("configs/latent_pager.py:smoke"))
  # `smoke` has a decoder bridge and starts from this encoder, made without one: the bridge's LoRA B
  # starts at zero, so the bridged LM answers as the frozen one (to the rounding of another program).
  assert config.pager.decoder_lora_rank > 0 and not any(path[0] == "bridge" for path in state)
  lm = checkpoint_io.load(tiny_lm)
  model = pager_lib.build(PagerSpec.of(config), lm)
  b = [v.get_value() for path, v in nnx.to_flat_state(nnx.state(model.bridge)) if path[-1] == "lora_b"]
  assert b and all(not np.any(np.asarray(x)) for x in b)
  ids = jnp.arange(1, 13, dtype=jnp.int32).reshape(2, 6)
  mask = jnp.ones_like(ids, bool)
  np.testing.assert_allclose(model.decoder(lm)(ids, mask)[0], lm(ids, mask)[0], rtol=0, atol=1e-4)


def test_qa_training_lowers_the_loss_from_the_pretrained_encoder(run):
  history = run[2]["fit"][2]
  # Step 0 scores the pretrained encoder as it ships, so fine-tuning must beat it to be kept.
  assert [h["step"] for h in history] == [0, 2, 4, 6] and history[0]["train_loss"] is None
  assert history[-1]["train_loss"] < history[1]["train_loss"]
  assert all(np.isfinite(h["val_loss"]) and 0 <= h["val_f1"] <= 1 for h in history)


def test_every_system_answers_with_the_same_settings(run):
  config, _, seen, _ = run
  eos, pad = 1, 0  # <eos>, <pad> of the tokenizer
  shared = generation.settings_from(config, eos, pad)
  pager = {s for s, prefix in seen["generate"] if prefix}
  text = {s for s, prefix in seen["generate"] if not prefix}
  # Beside the answers, the latency timing's time-to-first-token calls: the same settings, one new token.
  first_token = dataclasses.replace(shared, max_new_tokens=1)
  assert pager == {shared, first_token}
  # The text buffer makes two kinds of call: chunk extraction and the answer, which is the pager's
  # (and the full context's).
  extract = generation.Settings(config.text_buffer.extract_max_tokens, config.text_buffer.extract_repetition_penalty,
                                eos, pad, True)
  assert shared.repetition_penalty == 1.3 != extract.repetition_penalty
  assert text == {shared, extract, first_token}


def test_pager_confidences_are_the_head_the_answer_and_their_sum(run):
  config, workdir, _, _ = run
  assert config.eval.pager_confidence == "head+answer"   # inherited from `cpu`
  setup = pipeline.Setup(config, workdir)
  splits = data.load(data.DataSpec.of(config), workdir)
  trained = pipeline.train_pager(setup, config, workdir, splits)   # finished: restores the kept checkpoint
  val = splits["validation"][:4]
  docs = setup.documents(config, [r["document"] for r in val])
  got = {}
  for kind in pager_lib.CONFIDENCES:
    got[kind] = pager_lib.answer(setup.lm, setup.tokenizer, trained["graphdef"], trained["params"], docs,
                                 list(range(len(val))), [r["question"] for r in val], config.prompts.pager,
                                 max_pages=trained["max_pages"], width=trained["q_width"], settings=setup.settings,
                                 batch_size=3, abstain=setup.abstain, confidence=kind)
  answers = {k: a for k, (a, _) in got.items()}
  assert answers["head"] == answers["answer"] == answers["head+answer"]
  head, logp, both = (np.asarray(got[k][1]) for k in pager_lib.CONFIDENCES)
  assert np.all((head > 0) & (head < 1)) and np.all(logp <= 0)
  np.testing.assert_allclose(both, np.log(head) + logp, rtol=1e-5, atol=1e-5)
  with pytest.raises(config_lib.ConfigError, match=r"config\.eval\.pager_confidence"):
    config_lib.load("configs/latent_pager.py:smoke", ["--config.sufficiency.enabled=False"], experiment.validate)


def test_training_evaluates_on_the_first_eval_questions_of_validation(tiny_lm, tmp_path, monkeypatch):
  """`train.eval_questions`: fine-tuning evaluates on the first that many validation questions (the
  thresholds and every system's validation answers still read them all)."""
  config = _load("smoke", tiny_lm, tmp_path)
  with config.unlocked():
    config.train.eval_questions = 3
  splits = data.load(data.DataSpec.of(config), tmp_path)
  seen = {}

  class Seen(Exception):
    pass

  def fit(config, workdir, lm, tokenizer, tr, va, **kw):
    seen.update(train=[r["id"] for r in tr.records], validation=[r["id"] for r in va.records])
    raise Seen

  monkeypatch.setattr(train, "fit", fit)
  with pytest.raises(Seen):
    pipeline.train_pager(pipeline.Setup(config, tmp_path), config, tmp_path, splits)
  every = [r["id"] for r in splits["validation"]]
  assert seen["validation"] == every[:3] and len(every) > 3 and seen["train"]
  with pytest.raises(config_lib.ConfigError, match=r"config\.train\.eval_questions"):
    with config.unlocked():
      config.train.eval_questions = -1
    experiment.validate(config)


def test_thresholds_are_chosen_on_validation_only(run):
  config, workdir, seen, _ = run
  val = [json.loads(line) for line in (workdir / "validation.jsonl").read_text().splitlines()]
  test = [json.loads(line) for line in (workdir / "predictions.jsonl").read_text().splitlines()]
  per_system = {s: [r["gold_answer"] for r in val if r["confidence"][s] is not None] for s in val[0]["confidence"]}
  assert len(seen["thresholds"]) >= 2
  for golds in seen["thresholds"]:
    # Each choice saw exactly one system's validation questions, never a test question.
    assert golds in per_system.values()
  assert {r["id"] for r in val}.isdisjoint(r["id"] for r in test)
  summary = json.loads((workdir / "summary.json").read_text())
  assert set(summary["thresholds"]) >= {"latent_pager", "text_buffer"}


def test_report_headline_and_rebuild(run):
  config, workdir, _, _ = run
  summary = json.loads((workdir / "summary.json").read_text())
  h = summary["headline"]
  # The report shows answer quality before abstention first and gated F1 last.
  shown = (workdir / "report.md").read_text()
  assert shown.index("| pager_f1_ungated |") < shown.index("| pager_f1_at_80 |") < shown.index("| pager_aurc |") \
      < shown.index("| pager_hallucination |") < shown.index("| pager_f1_gated |")
  assert "The bar (non-inferiority; superiority reported beside)" in shown
  for key in ("pager_f1_at_50", "pager_f1_at_80", "pager_f1_at_100", "pager_minus_text_buffer_f1_at_80",
              "pager_aurc", "text_buffer_aurc", "pager_minus_text_buffer_aurc", "pager_hallucination",
              "pager_minus_text_buffer_hallucination"):
    assert key in h
  assert h["pager_encoder"] == "pointer" and h["pager_f1_ungated"]["ci"] is not None and h["pager_aurc"]["ci"]
  th = summary["thresholds"]["text_buffer"]
  assert th["rule"] == "coverage" and th["coverage"] >= config.eval.target_coverage
  errors = summary["errors"]["latent_pager"]
  main = [json.loads(line) for line in (workdir / "predictions.jsonl").read_text().splitlines()]
  main = [r for r in main if not r["probe"]]
  assert sum(errors["answerable"].values()) + sum(errors["unanswerable"].values()) == len(main)
  assert errors["unanswerable"]["correct"] == 0
  assert 0 <= summary["figures"]["unanswerable/latent_pager/auroc"]["mean"] <= 1
  # The wall-clock ratio and the bar's latency part live beside the latencies, not in summary.json.
  timed = json.loads((workdir / "timing.json").read_text())
  assert "latency_ratio" not in h
  assert set(summary["bar"]) == {"f1_ungated", "f1_at_80", "hallucination", "wording", "superior"}
  # The test world is its own, named; the held-out wordings are the same questions reworded.
  assert summary["test_world"]["seed"] == config.data.test_seed != config.seed
  held = [json.loads(line) for line in (workdir / "held_out.jsonl").read_text().splitlines()]
  assert [r["id"] for r in held] == [r["id"] for r in main] + [r["id"] for r in held[len(main):]]
  assert all(a["question"] != b["question"] and a["gold_answer"] == b["gold_answer"] for a, b in zip(held, main))
  assert "held_out/all/latent_pager/f1_raw" in summary["figures"] and "## Held-out wordings" in shown
  assert timed["latency_ratio"]["n"] == config.eval.latency_questions and isinstance(timed["latency_bar"], bool)
  assert timed["latent_pager"]["ids"] == timed["text_buffer"]["ids"] and timed["cpu_ratio"]["n"] > 0
  # The bar's ratio is the end to end at one question per document.
  assert timed["latency_ratio"] == timed["served"]["1"]["ratio"]
  assert timed["cpu_ratio"] == timed["served"]["1"]["cpu_ratio"]
  assert "## Latency as served" in shown and "### Q = 4 questions per document" in shown
  rows = [json.loads(line) for line in (workdir / "predictions.jsonl").read_text().splitlines()]
  assert sum(not r["answerable"] for r in rows) > 0 and any(r["answers"]["full_context"] for r in rows)
  assert summary["figures"]["abstention/latent_pager"]["unanswerable"] > 0
  assert set(summary["risk_coverage"]) == {"latent_pager", "text_buffer", "full_context"}
  text = (workdir / "summary.json").read_bytes()
  experiment.report(workdir)  # `jaxlab report` rebuilds the same summary
  assert (workdir / "summary.json").read_bytes() == text
  assert (workdir / "risk_coverage.png").is_file() and "0.0257" in (workdir / "report.md").read_text()


def test_latency_as_served_ingests_each_document_once_per_repeat_and_answers_every_q(run):
  config, workdir, _, _ = run
  timed = json.loads((workdir / "timing.json").read_text())
  qs, repeats, docs = tuple(config.eval.questions_per_document_timed), config.eval.latency_repeats, \
      config.eval.latency_questions
  assert tuple(timed["questions_per_document"]) == qs == (1, 4) and timed["repeats"] == repeats
  test = [json.loads(line) for line in (workdir / "predictions.jsonl").read_text().splitlines()]
  first = [r for r in test if not r["probe"]][:docs]
  assert timed["latent_pager"]["ids"] == [r["id"] for r in first] and len({r["document"] for r in first}) == docs
  for s in ("latent_pager", "text_buffer"):
    for clock in ("wall_s", "cpu_s"):
      t = timed[s][clock]
      # One ingestion and one first-token call per document per repeat, max(Q) answers after them.
      assert np.shape(t["ingest"]) == np.shape(t["first_token"]) == (repeats, docs)
      assert np.shape(t["answer"]) == (repeats, docs, max(qs))
      assert min(np.min(t["ingest"]), np.min(t["answer"]), np.min(t["first_token"])) >= 0
    assert timed[s]["peak_bytes"] > 0
  for q in qs:
    row = timed["served"][str(q)]
    assert row["ratio"]["n"] == docs and row["ratio"]["ci"] is not None and row["cpu_ratio"]["ci"] is not None
    for s in ("latent_pager", "text_buffer"):
      fig = row[s]
      assert set(fig) == {"ingest", "question", "ttft", "end_to_end", "cpu_end_to_end"}
      assert all(f["n"] == docs and f["ci"] is not None for f in fig.values())
      # End to end per question is the ingestion spread over q answers, so it falls with q.
      wall = timed[s]["wall_s"]
      e2e = np.mean((np.asarray(wall["ingest"]) + np.sum(np.asarray(wall["answer"])[..., :q], -1)) / q)
      np.testing.assert_allclose(fig["end_to_end"]["mean"], e2e, rtol=1e-9)
      np.testing.assert_allclose(fig["ttft"]["mean"], np.mean(np.add(wall["ingest"], wall["first_token"])), rtol=1e-9)
  assert timed["served"]["1"]["latent_pager"]["ingest"] == timed["served"]["4"]["latent_pager"]["ingest"]
  assert "served" not in json.loads((workdir / "summary.json").read_text())


def test_context_rot_grid_reads_the_trained_pager(run, tiny_lm, tmp_path):
  _, workdir, _, _ = run
  rot_dir = tmp_path / "rot"
  config = _load("smoke", tiny_lm, rot_dir, "--config.mode=rot", f"--config.rot.pager_workdir={workdir}")
  experiment.run(config, rot_dir)
  summary = json.loads((rot_dir / "summary.json").read_text())
  assert set(summary["cells"]) == {"latent_pager", "text_buffer", "full_context"}
  assert len(summary["cells"]["latent_pager"]) == 4 and (rot_dir / "context_rot.png").is_file()


def test_seeds_train_apart_on_the_same_data_and_are_graded_over_seeds(run, tiny_lm, tmp_path):
  _, compare_dir, _, pre_dir = run
  workdir = tmp_path / "seeds"
  config = _load("smoke", tiny_lm, workdir, "--config.mode=seeds", f"--config.pager.init={pre_dir / 'encoder'}")
  assert tuple(config.seeds.train_seeds) == (0, 1) and config.train.seed == -1
  experiment.run(config, workdir)
  preds = {s: [json.loads(line) for line in (workdir / "seeds" / f"seed_{s}" / "predictions.jsonl").read_text()
               .splitlines()] for s in (0, 1)}
  assert json.loads((workdir / "seeds" / "seed_1" / "config.json").read_text())["train"]["seed"] == 1
  # The default training seed is the run's seed: seed 0 of the study is the `smoke` run itself.
  ours = [json.loads(line) for line in (compare_dir / "predictions.jsonl").read_text().splitlines()]
  assert [r["answers"] for r in preds[0]] == [r["answers"] for r in ours]
  assert [r["confidence"] for r in preds[0]] == [r["confidence"] for r in ours]
  # Another seed trains another pager on the same questions; the text buffer does not change.
  assert [r["id"] for r in preds[1]] == [r["id"] for r in preds[0]]
  assert [r["answers"]["text_buffer"] for r in preds[1]] == [r["answers"]["text_buffer"] for r in preds[0]]
  history = {s: json.loads((workdir / "seeds" / f"seed_{s}" / "history.json").read_text()) for s in (0, 1)}
  assert history[0][0] == history[1][0]                       # both start from the same pretrained pager
  assert [h["val_loss"] for h in history[0][1:]] != [h["val_loss"] for h in history[1][1:]]
  summary = json.loads((workdir / "summary.json").read_text())
  for part in ("f1_ungated", "f1_at_80", "hallucination"):
    over = summary["intervals"][f"over_seeds/{part}/latent_pager-text_buffer"]
    assert over["n_seeds"] == 2 and over["ci"] is not None
  assert set(summary["bar"]["per_seed"]) == {"0", "1"}
  assert set(summary["bar"]["over_seeds"]) == {"f1_ungated", "f1_at_80", "hallucination", "superior"}
  # `jaxlab seeds` over the study's runs grades them as the study does.
  graded = pairs.seed_runs([workdir / "seeds" / f"seed_{s}" for s in (0, 1)], "latent_pager", "text_buffer")
  assert graded["reference_shared_by_seeds"]
  for part, key in (("f1_ungated", "f1_raw"), ("f1_at_80", "coverage/f1_at_80"), ("hallucination", "hallucination")):
    assert graded["differences_over_seeds"][key] == summary["intervals"][f"over_seeds/{part}/latent_pager-text_buffer"]
  timed = json.loads((workdir / "timing.json").read_text())
  assert timed["over_seeds"]["latency_ratio"]["n_seeds"] == 2 and "latency_ratio" not in json.dumps(summary)
  before = (workdir / "summary.json").read_bytes()
  experiment.report(workdir)
  assert (workdir / "summary.json").read_bytes() == before and "over seeds" in (workdir / "report.md").read_text()
  assert not {"True", "False"} & set((workdir / "report.md").read_text().replace("|", " ").split())   # verdicts in words
  # `jaxlab eval` on the study scores each seed's run on a data folder and grades them over seeds:
  # on the study's own test split, the study's summary byte for byte.
  spec = data.DataSpec.of(config)
  folder = data.export_jsonl(data.load(spec, workdir, splits=("test",)), tmp_path / "data",
                             held_out=data.load_held_out(spec, workdir))
  out = tmp_path / "scored"
  assert evaluation.evaluate(workdir, folder, out) == out / "report.md"
  assert (out / "summary.json").read_bytes() == before
  assert json.loads((out / "config.json").read_text())["data"]["jsonl_dir"] == str(folder.absolute())
  for s in (0, 1):
    assert (out / "seeds" / f"seed_{s}" / "predictions.jsonl").read_bytes() == \
        (workdir / "seeds" / f"seed_{s}" / "predictions.jsonl").read_bytes()
