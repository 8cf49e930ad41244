"""Pretraining the small base model: learning, resume from Orbax, NaN stop, the Hugging Face
export, and `jaxlab run configs/lm_pretrain.py:smoke` end to end. One short training is shared."""

import json
import random
import re
import string

import jax
import numpy as np
import pytest
from flax import nnx

from jaxlab.core import checkpoint, config as config_lib, report as report_lib, train as train_lib
from jaxlab.data import lexicon, long_doc_qa, squad
from jaxlab.lm import checkpoint_io
from jaxlab.lm_pretrain import data as pretrain_data, experiment, train as pretrain
from jaxlab.lm_pretrain import __main__ as score
from jaxlab.lm.qwen3 import forward
from jaxlab.lm.generate import generate
from jaxlab.lm.tokenizer import encode_batch, load_tokenizer
from launch import main as launch

SMOKE = "configs/lm_pretrain.py:smoke"


def smoke(*overrides):
  return config_lib.load(SMOKE, list(overrides), validate=experiment.validate)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
  return pretrain.train(smoke(), tmp_path_factory.mktemp("full"))


def test_loss_falls(trained):
  assert trained.start_step == 0 and trained.step == 40 and len(trained.losses) == 40
  # ln(vocab) at the start; a word-level model learns the filler prose within a few steps.
  assert np.mean(trained.losses[-5:]) < np.mean(trained.losses[:5]) - 1.0


def test_resume_from_checkpoint_is_bit_identical(trained, tmp_path):
  with pytest.raises(train_lib.Stopped, match="stopped at step 25 of 40") as stop:
    pretrain.train(smoke("--config.stop_after=25"), tmp_path)
  first = stop.value.result
  assert first.step == 25
  # A checkpoint every 20 steps and at the stop: the second call starts where the first ended.
  second = pretrain.train(smoke(), tmp_path)
  assert second.start_step == 25 and second.step == 40
  np.testing.assert_array_equal(second.losses, trained.losses[25:])
  params = lambda m: jax.tree.leaves(nnx.state(m, nnx.Param))
  for a, b in zip(params(second.model), params(trained.model)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_another_config_in_the_same_workdir_is_refused(tmp_path):
  with pytest.raises(train_lib.Stopped):
    pretrain.train(smoke("--config.stop_after=1", "--config.checkpoint_every=1"), tmp_path)
  with pytest.raises(checkpoint.CheckpointMismatch, match="checkpoints of another run"):
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


def test_shipped_base_model_loads_and_answers_as_when_it_was_trained():
  """models/lm_base was trained and exported before the layers were scanned and sharded: its
  safetensors file is the interface. Its answers (and EOS, from its config.json) are pinned."""
  folder = "models/lm_base"
  model, tokenizer = checkpoint_io.load(folder), load_tokenizer(folder)
  context = "Mara Okafor lives in Alder Falls . Helix Labs was founded in 1977 ."
  texts = [pretrain_data.prompt(context, q) for q in ["Where does Mara Okafor live?", "When was Helix Labs founded?"]]
  ids, mask = encode_batch(tokenizer, texts, pretrain_data.PAD)
  out = generate(model, ids, mask, max_new_tokens=8, pad_id=pretrain_data.PAD)
  np.testing.assert_array_equal(out, [[399, 91, 1, 0, 0, 0, 0, 0], [332, 102, 1, 0, 0, 0, 0, 0]])
  logits, _ = forward(model, ids, mask)
  np.testing.assert_allclose(np.asarray(logits)[:, -1, :3], [[-0.26201314, 4.4305158, -0.25653595],
                                                            [-4.1019406, 1.6297494, -4.0986776]], atol=1e-4)


def test_rows_flag_answers_and_keep_whole_pairs():
  ex = {"kind": "qa", "context": "Mara Okafor lives in Alder Falls .", "question": "Where does Mara Okafor live?\nQ2?",
        "target": "Alder Falls\nX"}
  tokenizer = pretrain_data.train_tokenizer([t for g in pretrain_data.segments(ex) for t, _ in g])
  ids, flags = pretrain_data.encode_rows(tokenizer, [ex], 24)
  # The head of the row tokenizes exactly as the prompt the model is asked with.
  head = tokenizer.encode(pretrain_data.prompt(ex["context"], "Where does Mara Okafor live?")).ids
  np.testing.assert_array_equal(ids[0, :len(head)], head)
  assert tokenizer.decode(ids[0][flags[0]].tolist(), skip_special_tokens=False) == "Alder Falls <eos>"
  # The second pair ("Question : Q2 ? Answer : X <eos>") does not fit in 24: it is dropped whole.
  assert len(head) + 3 + 8 > 24 and not ids[0, len(head) + 3:].any()


def test_the_eos_marker_is_the_eos_token_and_never_words_of_the_vocabulary(tmp_path):
  # A token no row holds is never trained as an input or a target, so a model meeting unfamiliar
  # inputs may emit it: "<eos>" in a segment marks the EOS token and is not read as "<", "eos", ">".
  tokenizer, rows = pretrain.prepare(smoke(), tmp_path)
  assert [tokenizer.token_to_id(w) for w in ("<", "eos", ">")] == [None] * 3
  ids = np.concatenate([ids.ravel() for ids, _ in rows])
  flags = np.concatenate([flags.ravel() for _, flags in rows])
  assert (ids[flags] == tokenizer.token_to_id("<eos>")).any()
  # The words no row holds are the few whose only occurrences were in pairs a row had no room for.
  seen = set(ids.tolist())
  unseen = [i for i in range(tokenizer.get_vocab_size()) if i not in seen]
  assert tokenizer.token_to_id("<unk>") in unseen and len(unseen) < 0.01 * tokenizer.get_vocab_size()


def test_window_questions_are_answered_inside_their_window():
  cfg = long_doc_qa.LongDocQAConfig(name="pt", corpus="pretrain", min_window_tokens=16, window_tokens=64,
                                    questions_per_window=4)
  examples = list(long_doc_qa.generate_pretrain(cfg, "train", 12, ("qa", "fact_qa", "extract")))
  assert [e["kind"] for e in examples[:4]] == ["qa", "fact_qa", "extract", "qa"]
  for e in examples:
    if e["kind"] != "fact_qa":  # a window overshoots its length by at most one passage
      assert 16 <= len(e["context"].split()) <= 64 + 60
    if e["kind"] != "extract":
      questions, answers = e["question"].split("\n"), e["target"].split("\n")
      assert 1 <= len(questions) == len(answers) <= 4 and len(set(questions)) == len(questions)
      assert all(a in e["context"] for a in answers)  # every hop of a chain is stated in the window


def test_normalize_is_squad_style():
  assert squad.normalize("The  Stonegate Grove.") == squad.normalize("stonegate grove")
  assert squad.normalize("1856") != squad.normalize("1857")


def test_normalize_is_the_official_scripts_on_any_text():
  """`normalize_answer` of SQuAD's evaluate-v1.1.py, transcribed, against ours on random text."""
  def official(s):
    def remove_articles(text):
      return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
      return " ".join(text.split())

    def remove_punc(text):
      exclude = set(string.punctuation)
      return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))

  rng = random.Random(0)
  alphabet = string.printable + "ÄéßİΣς\u212a—–“”’…　"
  for _ in range(5000):
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
    assert squad.normalize(text) == official(text), repr(text)


def test_jaxlab_run_smoke_end_to_end(tmp_path, capsys):
  workdir = tmp_path / "run"
  assert launch.main(["run", SMOKE, "--workdir", str(workdir), "--config.eval.every=20",
                      f"--config.data.train_wordings={len(lexicon.TRAINING_WORDINGS)}"]) == 0
  summary = json.loads((workdir / "summary.json").read_text())
  for split in ("validation", "test", "validation_held_out", "test_held_out"):
    em = summary["figures"][f"exact_match_single_fact_{split}"]
    assert 0 <= em["mean"] <= 1
    assert em["n"] + summary["figures"][f"exact_match_multi_hop_{split}"]["n"] == smoke().eval.num_questions
  # The held-out wording asks the same questions about the same documents in other templates.
  same, held = (json.loads((workdir / f"eval_test{s}.json").read_text()) for s in ("", "_held_out"))
  assert [(r["id"], r["gold"]) for r in same] == [(r["id"], r["gold"]) for r in held]
  assert all(a["question"] != b["question"] for a, b in zip(same, held))
  # A finished model folder is scored the same from the command line.
  capsys.readouterr()
  score.main([str(workdir / "hf"), "--variant", "smoke"])
  printed = capsys.readouterr().out.splitlines()
  f = summary["figures"]["exact_match_single_fact_test_held_out"]
  assert len(printed) == 4 and f"single_fact {report_lib.fmt(f, 3)}" in printed[3], printed
  assert summary["experiment"] == "lm_pretrain"
  log = [json.loads(line) for line in (workdir / "train_log.jsonl").read_text().splitlines()]
  assert [row["step"] for row in log if "eval" in row] == [20, 40]  # validation during training
  assert (workdir / "report.md").is_file() and checkpoint_io.load(workdir / "hf").cfg.vocab_size > 100
  (workdir / "summary.json").unlink()
  assert launch.main(["report", str(workdir)]) == 0
  assert json.loads((workdir / "summary.json").read_text()) == summary
