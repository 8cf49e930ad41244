"""Latent pager (issue 8): modules, metrics, the JSONL importer, and one end-to-end smoke run on a
tiny random Qwen3 exported like the base model (no transformers or torch).

The module-scoped `run` fixture runs `configs/latent_pager.py:smoke` in-process once, with spies
on the training entry (the LM's params before and after) and on the one generation entry (the
settings each system answered with); the other tests read what it recorded.
"""

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from jaxlab.core import config as config_lib
from jaxlab.data import jsonl, long_doc_qa
from jaxlab.lm import pretrain
from jaxlab.paging import data, experiment, generation, metrics, pages, train
from jaxlab.paging.modules import PageAggregator, PageCompressor, Pager


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


# ----------------------------------------------------------------------------- end to end
@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
  """A 2-layer random Qwen3 with a word-level tokenizer, exported like the base model."""
  # A wide init, so the random LM can express peaked distributions for the pager to steer.
  cfg = config_lib.load("configs/lm_pretrain.py:smoke", ["--config.optim.init_std=0.5"])
  tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
  tok.pre_tokenizer = pre_tokenizers.Whitespace()
  docs = long_doc_qa.LongDocQAConfig(name="tiny", min_tokens=120, max_tokens=300, chunk_tokens=40)
  texts = [r["document"] + " " + r["question"] for r in long_doc_qa.generate_qa(docs, "train", 30)]
  tok.train_from_iterator(texts + ["Question: Answer: Key facts:"],
                          trainers.WordLevelTrainer(special_tokens=["<pad>", "<eos>", "<unk>"]))
  return pretrain.export(pretrain.init_model(cfg, tok.get_vocab_size()), tok, cfg, tmp_path_factory.mktemp("lm"))


@pytest.fixture(scope="module")
def run(tiny_lm, tmp_path_factory):
  workdir = tmp_path_factory.mktemp("run")
  config = config_lib.load("configs/latent_pager.py:smoke", [f"--config.model.path={tiny_lm}",
                                                              f"--config.pages.store_dir={workdir / 'store'}"],
                           experiment.validate)
  (workdir / "config.json").write_text(json.dumps(config.to_dict()))  # as `jaxlab run` does
  seen = {"generate": [], "lm": []}
  real_fit, real_tokens = train.fit, generation.generate_tokens

  def fit(config, workdir, lm, *args, **kw):
    copy = lambda: [np.array(x) for x in jax.tree.leaves(nnx.state(lm))]
    seen["lm"].append(copy())
    out = real_fit(config, workdir, lm, *args, **kw)
    seen["lm"].append(copy())
    seen["history"] = out[2]
    return out

  def tokens(lm, ids, mask, settings, prefix_embeds=None):
    seen["generate"].append((settings, prefix_embeds is not None))
    return real_tokens(lm, ids, mask, settings, prefix_embeds)

  with pytest.MonkeyPatch.context() as mp:
    mp.setattr(train, "fit", fit)
    mp.setattr(generation, "generate_tokens", tokens)
    experiment.run(config, workdir)
  return config, workdir, seen


def test_lm_params_bitwise_unchanged_by_training(run):
  _, _, seen = run
  before, after = seen["lm"]
  assert len(before) == len(after) > 0
  for a, b in zip(before, after):
    np.testing.assert_array_equal(a, b)


def test_training_lowers_the_loss(run):
  history = run[2]["history"]
  assert len(history) == 3
  assert history[-1]["train_loss"] < history[0]["train_loss"] - 0.05
  assert all(np.isfinite(h["val_loss"]) and 0 <= h["val_f1"] <= 1 for h in history)


def test_both_systems_answer_with_the_same_settings(run):
  config, _, seen = run
  eos, pad = 1, 0  # <eos>, <pad> of the pretraining tokenizer
  shared = generation.settings_from(config, eos, pad)
  pager = {s for s, prefix in seen["generate"] if prefix}
  text = {s for s, prefix in seen["generate"] if not prefix}
  assert pager == {shared}
  # The text buffer makes two kinds of call: chunk extraction and the answer, which is the pager's.
  extract = generation.Settings(config.text_buffer.extract_max_tokens, config.text_buffer.extract_repetition_penalty,
                                eos, pad, True)
  assert shared.repetition_penalty == 1.3 != extract.repetition_penalty
  assert text == {shared, extract}


def test_report_and_page_store_reuse(run, tiny_lm):
  config, workdir, _ = run
  summary = json.loads((workdir / "summary.json").read_text())
  for system in ("latent_pager", "text_buffer"):
    for metric in ("f1", "rouge_l", "hallucination", "hallucination_grounded", "answer_words"):
      assert summary["figures"][f"all/{system}/{metric}"]["n"] == config.data.num_test
    assert summary["figures"][f"all/{system}/consistency"]["n"] > 0
    assert summary["figures"][f"all/{system}/peak_memory_gb"]["mean"] > 0
  assert "all/f1" in summary["bootstrap"] and "single_fact/f1" in summary["bootstrap"]
  text = (workdir / "summary.json").read_bytes()
  experiment.report(workdir)  # `jaxlab report` rebuilds the same summary
  assert (workdir / "summary.json").read_bytes() == text
  assert (workdir / "training_curve.png").is_file() and "0.0257" in (workdir / "report.md").read_text()
  rows = [json.loads(line) for line in (workdir / "predictions.jsonl").read_text().splitlines()]
  # Pages were stored once per document: a new store on the same folder computes nothing.
  from jaxlab.lm import checkpoint_io, tokenizer as tok_lib
  store = pages.PageStore(config.pages.store_dir, checkpoint_io.load(tiny_lm), tok_lib.load_tokenizer(tiny_lm),
                          pages.settings_from(config), pages.model_fingerprint(tiny_lm), 0)
  got = store.get([r["document"] for r in rows[:3]])
  assert store.computed == 0 and all(g.shape[1:] == (2, 32) for g in got)
