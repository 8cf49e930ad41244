"""Pretraining the small base model: learning, resume from Orbax, NaN stop, the Hugging Face
export, and `jaxlab run configs/lm_pretrain.py:smoke` end to end. One short training is shared."""

import json

import jax
import numpy as np
import pytest
from flax import nnx

from jaxlab.core import config as config_lib
from jaxlab.lm import checkpoint_io, pretrain
from jaxlab.lm.qwen3 import forward
from jaxlab.lm.tokenizer import load_tokenizer
from launch import main as launch

SMOKE = "configs/lm_pretrain.py:smoke"


def smoke(*overrides):
  return config_lib.load(SMOKE, list(overrides), validate=pretrain.validate)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
  return pretrain.train(smoke(), tmp_path_factory.mktemp("full"))


def test_loss_falls(trained):
  assert trained.start_step == 0 and trained.step == 40 and len(trained.losses) == 40
  # ln(vocab) at the start; a word-level model learns the filler prose within a few steps.
  assert np.mean(trained.losses[-5:]) < np.mean(trained.losses[:5]) - 1.0


def test_resume_from_checkpoint_is_bit_identical(trained, tmp_path):
  first = pretrain.train(smoke("--config.stop_after=25"), tmp_path)
  assert first.step == 25
  # A checkpoint every 20 steps and at the stop: the second call starts where the first ended.
  second = pretrain.train(smoke(), tmp_path)
  assert second.start_step == 25 and second.step == 40
  np.testing.assert_array_equal(second.losses, trained.losses[25:])
  for a, b in zip(jax.tree.leaves(nnx.state(second.model, nnx.Param)), jax.tree.leaves(nnx.state(trained.model, nnx.Param))):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_another_config_in_the_same_workdir_is_refused(tmp_path):
  pretrain.train(smoke("--config.stop_after=1", "--config.checkpoint_every=1"), tmp_path)
  with pytest.raises(RuntimeError, match="checkpoints of another training run"):
    pretrain.train(smoke("--config.optim.learning_rate=0.5"), tmp_path)


def test_divergence_stops_with_a_clear_error(tmp_path):
  with pytest.raises(FloatingPointError, match=r"training diverged at step \d+.*learning_rate"):
    pretrain.train(smoke("--config.optim.learning_rate=1e30", "--config.optim.warmup_steps=0"), tmp_path)
  assert not (tmp_path / "checkpoints").exists() or not any((tmp_path / "checkpoints").iterdir())


def test_export_loads_back_with_the_same_logits(trained, tmp_path):
  folder = pretrain.export(trained.model, trained.tokenizer, smoke(), tmp_path / "hf")
  hf = json.loads((folder / "config.json").read_text())
  assert hf["model_type"] == "qwen3" and hf["architectures"] == ["Qwen3ForCausalLM"]
  loaded = checkpoint_io.load(folder)
  tokenizer = load_tokenizer(folder)
  ids = np.array([tokenizer.encode("Stonegate Grove lies in Ostrelia . Question :").ids], np.int32)
  mask = np.ones_like(ids, bool)
  want, _ = forward(trained.model, ids, mask)
  got, _ = forward(loaded, ids, mask)
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-5)


def test_normalize_is_squad_style():
  assert pretrain.normalize("The  Stonegate Grove.") == pretrain.normalize("stonegate grove")
  assert pretrain.normalize("1856") != pretrain.normalize("1857")


def test_jaxlab_run_smoke_end_to_end(tmp_path):
  workdir = tmp_path / "run"
  assert launch.main(["run", SMOKE, "--workdir", str(workdir)]) == 0
  summary = json.loads((workdir / "summary.json").read_text())
  em = summary["figures"]["exact_match_single_fact"]
  assert summary["experiment"] == "lm_pretrain" and 0 <= em["mean"] <= 1
  n = em["n"] + summary["figures"]["exact_match_multi_hop"]["n"]
  assert n == smoke().eval.num_questions
  assert (workdir / "report.md").is_file() and checkpoint_io.load(workdir / "hf").cfg.vocab_size > 100
  (workdir / "summary.json").unlink()
  assert launch.main(["report", str(workdir)]) == 0
  assert json.loads((workdir / "summary.json").read_text()) == summary
