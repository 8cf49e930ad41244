"""The pager's frontier (selection on validation only, test scored once per chosen point), the icae
encoder with its LoRA adapters, and the `qwen3_1p7b` code path on a tiny random Qwen3 folder with
Qwen3's special tokens (written here; no transformers, no download)."""

import json

import jax
import numpy as np
import pytest
from flax import nnx

from jaxlab.core import config as config_lib
from jaxlab.paging import experiment, frontier, model as model_lib, pager as pager_lib, pipeline, train
from jaxlab.paging.spec import PagerSpec, TrainSpec
from tests.test_latent_pager import _lm_params, _load, tiny_lm_folder


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
  return tiny_lm_folder(tmp_path_factory.mktemp("lm"))


def test_frontier_selects_on_validation_before_reading_test(tiny_lm, tmp_path):
  workdir = tmp_path / "frontier"
  # The published pooled arm and two slots points, without and with an aggregator: the pooled path
  # end to end, each point's own pretrained encoder, and a choice to make.
  config = _load("smoke", tiny_lm, workdir, "--config.mode=frontier", "--config.pager.init=",
                 "--config.frontier.encoders=('pooled','slots')", "--config.frontier.slots_per_chunk=(2,)",
                 "--config.frontier.depths=(0,1)")
  events = []
  real_select, real_answer = frontier.select, pipeline.answer_split

  def select(results):
    events.append(("select", sorted(results)))
    return real_select(results)

  def answer_split(setup, config, trained, records, *args, **kw):
    events.append(("answer", {r["id"] for r in records}, kw.get("systems")))
    return real_answer(setup, config, trained, records, *args, **kw)

  with pytest.MonkeyPatch.context() as mp:
    mp.setattr(frontier, "select", select)
    mp.setattr(pipeline, "answer_split", answer_split)
    experiment.run(config, workdir)
  test_ids = {json.loads(line)["id"] for line in (workdir / "predictions.jsonl").read_text().splitlines()}
  at = [i for i, e in enumerate(events) if e[0] == "select"]
  assert len(at) == 1
  before = [e for e in events[:at[0]] if e[0] == "answer"]
  assert before and all(e[1].isdisjoint(test_ids) for e in before)  # validation only, before choosing
  assert any(e[0] == "answer" and e[1] & test_ids for e in events[at[0]:])
  assert events[at[0]][1] == ["pooled", "slots-m2-L12-d0", "slots-m2-L12-d1"]
  summary = json.loads((workdir / "summary.json").read_text())
  assert summary["selection"]["best"] in summary["selection"]["chosen"].values()
  # Every chosen point abstains at a threshold of its own, chosen on validation, as the text buffer does.
  assert set(summary["selection"]["chosen"].values()) | {"text_buffer"} <= set(summary["thresholds"])
  assert set(summary["reconstruction"]) == {"slots-m2-L12-d0", "slots-m2-L12-d1"}
  for image in ("frontier_f1_vs_compression.png", "frontier_f1_vs_latency.png", "frontier_hallucination_vs_latency.png",
                "frontier_reconstruction.png"):
    assert (workdir / image).is_file()
  text = (workdir / "summary.json").read_bytes()
  experiment.report(workdir)
  assert (workdir / "summary.json").read_bytes() == text


def test_frontier_points_sweep_each_encoder_at_its_own_counts():
  c = config_lib.load("configs/latent_pager.py:frontier")
  names = [pt["name"] for pt in frontier.points(c)]
  assert names == ["pooled"] + [f"slots-m{m}-L1234-d0" for m in (1, 2, 4, 8, 16)] + [
      "slots-m16-L24-d0", "slots-m16-L1234-d1"] + [f"pointer-m{m}-L1234-d0" for m in (4, 8, 16)] + [
      f"icae-m{m}-L1234-d0" for m in (4, 16)]


def test_icae_adapters_train_apart_from_the_frozen_lm(tiny_lm, tmp_path):
  """The icae encoder and a decoder bridge hold LoRA adapters of their own: a training step moves
  them and leaves every LM array bitwise unchanged, and the answering LM without the bridge is
  the plain frozen LM."""
  from jaxlab.lm import checkpoint_io

  lm = checkpoint_io.load(tiny_lm)
  config = config_lib.load("configs/latent_pager.py:smoke", [
      "--config.pager.encoder=icae", "--config.pager.lora_rank=2", "--config.pager.decoder_lora_rank=2"])
  model = pager_lib.build(PagerSpec.of(config), lm)
  lora = nnx.state(model, nnx.LoRAParam)
  assert {p[0] for p, _ in nnx.to_flat_state(lora)} == {"encoder", "bridge"}
  graphdef, params = nnx.split(model)
  lm_graphdef, lm_state = nnx.split(lm)
  before = _lm_params(lm)
  texts = [[([5, 6], [7, 1], True)], [([5], [9, 1], False)]]
  inputs = pager_lib.chunk_inputs([[[5, 6, 7, 8], [9, 10]], [[11, 12, 13]]], 3, 48, 0)
  batch = pager_lib.make_batch(inputs, texts, 8, 0, 1)
  tx, _ = train.optimizer(TrainSpec.of(config), 10)
  opt_state = tx.init(params)
  new, _, loss, gnorm = train.train_step(params, opt_state, lm_state, batch, jax.random.key(0, impl="rbg"),
                                         graphdef=graphdef, lm_graphdef=lm_graphdef, tx=tx, suff_weight=0.5)
  assert np.isfinite(float(loss)) and float(gnorm) > 0
  moved = [not np.array_equal(a, b) for a, b in zip(jax.tree.leaves(nnx.state(nnx.merge(graphdef, params),
                                                                              nnx.LoRAParam)),
                                                     jax.tree.leaves(nnx.state(nnx.merge(graphdef, new),
                                                                               nnx.LoRAParam)))]
  assert any(moved)
  for a, b in zip(before, _lm_params(lm)):
    np.testing.assert_array_equal(a, b)
  # The text buffer's LM has no adapters: the pager's bridge never leaks into it.
  assert getattr(lm.model.layers.self_attn, "lora", None) is None


def test_pooled_arm_initialises_as_the_published_pager():
  """The reproduction arm: the same PageCompressor and PageAggregator, drawn from the same seed
  in the same order as before the other encoders existed, so its results do not move."""
  from jaxlab.paging.modules import Pager

  config = config_lib.load("configs/latent_pager.py:repro")
  model = model_lib.PagerModel(PagerSpec.of(config), 128, 1.0)
  p = config.pager
  old = Pager(4, 128, compressor_hidden=p.compressor_hidden, d_page=p.d_page, num_soft_tokens=p.num_soft_tokens,
              depth=p.depth, heads=p.heads, ffn=p.ffn, dropout_rate=p.dropout, rngs=nnx.Rngs(config.seed))
  for a, b in zip(jax.tree.leaves(nnx.state(model.pooled)), jax.tree.leaves(nnx.state(old))):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  assert set(nnx.state(model)) == {"pooled"}  # no sufficiency head, null page or markers in the arm
  soft = model.soft_tokens(None, {"states": np.ones((2, 3, 4, 128), np.float32), "page_mask": np.ones((2, 3), bool)})
  assert soft.shape == (2, 16, 128)


def test_qwen3_1p7b_code_path_on_a_tiny_qwen3(tmp_path):
  """`qwen3_1p7b`'s pipeline (its prompts, EOS and pad tokens, chunking by its settings scaled
  down) end to end on a tiny random Qwen3 whose tokenizer has Qwen3's special tokens."""
  folder = tiny_lm_folder(tmp_path / "qwen3", specials=("<|endoftext|>", "<|im_end|>", "<unk>"))
  workdir = tmp_path / "run"
  config = _load("qwen3_1p7b", folder, workdir, "--config.model.dtype=float32", "--config.model.context_tokens=512",
                 "--config.data.min_tokens=60", "--config.data.max_tokens=300", "--config.data.chunk_words=40",
                 "--config.data.num_train=16", "--config.data.num_validation=8", "--config.data.num_test=8",
                 "--config.data.tfds_dir=", "--config.data.questions_per_document=2",
                 "--config.pages.chunk_tokens=48", "--config.pages.chunk_overlap=8",
                 "--config.pages.hidden_layers=(1,2)",
                 "--config.pages.max_pages=6", "--config.pages.batch_size=16", "--config.pager.slots_per_chunk=2",
                 "--config.pager.heads=2", "--config.pager.ffn=32", "--config.sufficiency.hidden=16",
                 "--config.train.steps=2", "--config.train.batch_size=8", "--config.train.eval_every=2",
                 "--config.generation.max_new_tokens=4", "--config.text_buffer.extract_max_tokens=4",
                 "--config.text_buffer.max_context_tokens=64", "--config.eval.batch_size=4",
                 "--config.eval.latency_questions=2", "--config.eval.bootstrap=100")
  assert config.prompts.extract.startswith("Extract all key information")
  compiled = train.train_step._cache_size()
  experiment.run(config, workdir)
  # The pager's params keep their places on the FSDP mesh, so its steps share one compiled program.
  assert train.train_step._cache_size() == compiled + 1
  rows = [json.loads(line) for line in (workdir / "predictions.jsonl").read_text().splitlines()]
  assert len([r for r in rows if not r["probe"]]) == 8
  assert json.loads((workdir / "summary.json").read_text())["headline"]["pager_encoder"] == "pointer"
