"""The latent-pager arms with equal adaptation: mean-pooled pages (`mean`), the text buffer with a
LoRA bridge of its own (`text_buffer.lora_rank`), the pager without its bridge (`cpu_no_bridge`).

The mean pages against a hand computation; each variant is `cpu` with its one change; then two
`smoke` comparisons on the tiny random Qwen3 of test_latent_pager.py, with spies on the text
bridge's training (the LM's params before and after) and on generation (whether the generating
LM carries LoRA adapters): the `mean` pager beside a text buffer with a rank-2 bridge, and the
pointer pager without a bridge beside the frozen text buffer.
"""

import dataclasses
import json
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxlab.core import config as config_lib
from jaxlab.paging import arms, data, experiment, generation, pipeline, text_bridge, text_buffer, train
from jaxlab.paging.encoders import MeanEncoder
from jaxlab.paging.spec import TrainSpec
from tests.test_latent_pager import _lm_params, _load, tiny_lm  # noqa: F401 (tiny_lm is a fixture)


def test_mean_pages_are_the_window_means_of_the_states_projected():
  enc = MeanEncoder(2, 8, slots=3, embed_rms=0.7, rngs=nnx.Rngs(0))
  states = jax.random.normal(jax.random.key(1), (4, 7, 2, 8))   # (chunks, C, L, D)
  lengths = [7, 5, 2, 0]   # the last chunk is padding only (a padded page)
  mask = jnp.asarray(np.arange(7)[None] < np.array(lengths)[:, None])
  out = np.asarray(enc(states, mask))
  assert out.shape == (4, 3, 8)
  # Windows [j n / 3, (j + 1) n / 3); a chunk of 2 tokens gives its first token to two windows.
  windows = {7: [[0, 1], [2, 3], [4, 5, 6]], 5: [[0], [1, 2], [3, 4]], 2: [[0], [0], [1]]}
  x = np.asarray(states).reshape(4, 7, 16)   # each token's layers side by side
  kernel, bias = np.asarray(enc.proj.kernel[...]), np.asarray(enc.proj.bias[...])
  for i, n in enumerate(lengths[:3]):
    page = np.stack([x[i, w].mean(0) for w in windows[n]]) @ kernel + bias
    page = page / np.sqrt(np.mean(page ** 2, -1, keepdims=True) + 1e-6) * 0.7
    np.testing.assert_allclose(out[i], page, rtol=1e-5, atol=1e-6)
  assert np.all(np.isfinite(out[3]))
  # Padding changes nothing; a real token changes its own window's page only.
  np.testing.assert_array_equal(np.asarray(enc(states.at[1, 5:].set(9.0), mask)), out)
  moved = np.asarray(enc(states.at[0, 3].set(9.0), mask))[0]
  assert np.array_equal(moved[[0, 2]], out[0, [0, 2]]) and not np.allclose(moved[1], out[0, 1])


def test_each_arm_is_cpu_with_its_one_change():
  cpu = config_lib.load("configs/latent_pager.py:cpu", [], experiment.validate)
  arms = {"cpu_mean": {"pager.encoder": "mean", "pager.init": ""},
          "cpu_mean_pretrained": {"pager.encoder": "mean", "pager.init": "models/latent_pager_mean"},
          "cpu_text_bridge": {"text_buffer.lora_rank": 8},
          "cpu_no_bridge": {"pager.decoder_lora_rank": 0}}
  for variant, change in arms.items():
    arm = config_lib.load(f"configs/latent_pager.py:{variant}", [], experiment.validate)
    assert config_lib.differences(cpu, arm) == sorted([*change, "variant"]), variant
    assert {f: config_lib.get(arm, f) for f in change} == change
  assert cpu.text_buffer.lora_rank == 0 and cpu.pager.decoder_lora_rank == 8
  # The bridge's own schedule replaces the pager's for the bridge alone, and names a bad field.
  slow = config_lib.load("configs/latent_pager.py:cpu_text_bridge_slow", [], experiment.validate)
  bridge = config_lib.load("configs/latent_pager.py:cpu_text_bridge", [], experiment.validate)
  assert config_lib.differences(bridge, slow) == ["text_buffer.train.epochs", "text_buffer.train.learning_rate",
                                                  "text_buffer.train.warmup_steps", "variant"]
  own, pagers = text_bridge.schedule(slow), TrainSpec.of(slow)
  assert (own.epochs, own.learning_rate, own.warmup_steps) == (1, 3e-4, 20)
  slower = dataclasses.replace(own, epochs=2, learning_rate=1e-3, warmup_steps=30)
  assert slower == pagers == text_bridge.schedule(bridge)
  with slow.unlocked():
    slow.text_buffer.train.batch_size = 4
  with pytest.raises(config_lib.ConfigError, match=r"text_buffer\.train\.batch_size"):
    experiment.validate(slow)
  with pytest.raises(config_lib.ConfigError, match=r"config\.text_buffer\.lora_rank"):
    config_lib.load("configs/latent_pager.py:smoke", ["--config.text_buffer.lora_rank=-1"], experiment.validate)


def test_every_arm_of_the_study_is_the_variant_that_declared_it():
  study = config_lib.load("configs/latent_pager.py:arms", [], experiment.validate)
  declared = {("latent_pager", "bridge"): "cpu", ("latent_pager", "no_bridge"): "cpu_no_bridge",
              ("latent_pager", "mean"): "cpu_mean", ("latent_pager", "mean_pretrained"): "cpu_mean_pretrained",
              ("text_buffer", "frozen"): "cpu", ("text_buffer", "bridge"): "cpu_text_bridge",
              ("text_buffer", "bridge_slow"): "cpu_text_bridge_slow"}
  assert {("latent_pager", a) for a in study.arms.pager} | {("text_buffer", a) for a in study.arms.text_buffer} \
      == set(declared)
  for spec in arms.runs(study).values():
    variant = config_lib.load(f"configs/latent_pager.py:{declared[spec['system'], spec['arm']]}", [],
                              experiment.validate)
    run = arms.arm_config(study, spec["changes"])
    experiment.validate(run)
    assert run.mode == "compare" and config_lib.differences(variant, run) == ["arms.pager", "arms.text_buffer",
                                                                               "variant"], spec
  assert "train" not in study.text_buffer   # added only to the run that asks for it


def _has_lora(generator) -> bool:
  return any("lora" in map(str, path) for path, _ in nnx.to_flat_state(generator.state))


def _compare(tiny_lm, workdir, *extra):
  """A `smoke` comparison with spies: {"config", "workdir", "generate": [(settings, prefix?, LoRA?)],
  "lm": (params before, after) of the text bridge's training, "bridge": what it returned}."""
  seen = {"generate": []}
  real = {"fit": text_bridge.fit, "generate": generation.Generator.__call__}

  def fit(setup, *args, **kw):
    before = _lm_params(setup.lm)
    seen["bridge"] = real["fit"](setup, *args, **kw)
    seen["lm"] = (before, _lm_params(setup.lm))
    return seen["bridge"]

  def generate(self, ids, mask, prefix_embeds=None):
    seen["generate"].append((self.settings, prefix_embeds is not None, _has_lora(self)))
    return real["generate"](self, ids, mask, prefix_embeds)

  with pytest.MonkeyPatch.context() as mp:
    mp.setattr(text_bridge, "fit", fit)
    mp.setattr(generation.Generator, "__call__", generate)
    config = _load("smoke", tiny_lm, workdir, *extra)
    experiment.run(config, workdir)
  return {"config": config, "workdir": workdir, **seen}


@pytest.fixture(scope="module")
def bridged(tiny_lm, tmp_path_factory):
  """The `mean` pager (with the smoke's pager bridge, as `cpu_mean`) beside a text buffer with a
  rank-2 bridge of its own."""
  return _compare(tiny_lm, tmp_path_factory.mktemp("arms") / "bridged", "--config.pager.encoder=mean",
                  "--config.pager.init=", "--config.text_buffer.lora_rank=2")


@pytest.fixture(scope="module")
def frozen(tiny_lm, tmp_path_factory):
  """`cpu_no_bridge` at smoke size: the pager without a bridge, beside the frozen text buffer."""
  return _compare(tiny_lm, tmp_path_factory.mktemp("arms") / "frozen", "--config.pager.decoder_lora_rank=0")


def _rows(workdir, name="predictions.jsonl"):
  return [json.loads(line) for line in (workdir / name).read_text().splitlines()]


def test_mean_pager_compares_end_to_end(bridged):
  workdir = bridged["workdir"]
  summary = json.loads((workdir / "summary.json").read_text())
  assert summary["headline"]["pager_encoder"] == "mean" and summary["headline"]["slots_per_chunk"] == 2
  history = json.loads((workdir / "history.json").read_text())
  # Nothing pretrained, so no step 0 to keep: the first evaluation follows training.
  assert [h["step"] for h in history] == [2, 4, 6] and all(np.isfinite(h["val_loss"]) for h in history)
  assert all(r["answers"]["latent_pager"] is not None for r in _rows(workdir))


def test_text_bridge_trains_on_the_rows_and_leaves_the_lm_unchanged(bridged):
  config, workdir = bridged["config"], bridged["workdir"]
  before, after = bridged["lm"]
  assert len(before) == len(after) > 0
  for a, b in zip(before, after):
    np.testing.assert_array_equal(a, b)
  adapters, history = bridged["bridge"]
  assert json.loads((workdir / "text_bridge" / "history.json").read_text()) == history
  # The frozen text buffer is step 0; then the pager's cadence over the same rows and steps.
  assert [h["step"] for h in history] == [0, 2, 4, 6] and history[0]["train_loss"] is None
  assert history[-1]["train_loss"] < history[1]["train_loss"]
  assert all(0 <= h["val_f1"] <= 1 and np.isfinite(h["val_loss"]) for h in history)
  assert history[-1]["val_loss"] != history[0]["val_loss"]
  # The bridge kept is the best step's by validation F1 (ties to the earlier): B is zero at step 0 only.
  best = max(history, key=lambda h: train.selection(h["val_f1"], h["step"]))
  b = [v.get_value() for path, v in nnx.to_flat_state(nnx.state(adapters)) if path[-1] == "lora_b"]
  assert b and any(np.any(np.asarray(x)) for x in b) == (best["step"] > 0)
  # The text buffer answers through the bridge; its notes and the full context use the frozen LM.
  eos, pad = 1, 0   # <eos>, <pad> of the tokenizer
  shared = generation.settings_from(config, eos, pad)
  extract = generation.Settings(config.text_buffer.extract_max_tokens, config.text_buffer.extract_repetition_penalty,
                                eos, pad, True)
  assert {lora for s, prefix, lora in bridged["generate"] if not prefix and s == shared} == {True, False}
  assert {lora for s, prefix, lora in bridged["generate"] if s == extract} == {False}


def test_text_bridge_notes_are_the_text_buffers_and_a_rerun_extracts_nothing(bridged, monkeypatch):
  config, workdir = bridged["config"], bridged["workdir"]
  setup = pipeline.Setup(config, workdir)
  splits = data.load(data.DataSpec.of(config), workdir)
  stored = json.loads((workdir / "text_bridge" / text_bridge.NOTES).read_text())["notes"]
  assert len(stored) == len({r["document"] for r in splits["train"] + splits["validation"]})
  # Exactly the notes the text buffer makes for those documents at test time.
  val_docs = list(dict.fromkeys(r["document"] for r in splits["validation"]))
  fresh = setup.text_buffer(splits["validation"]).buffer_ids(val_docs)
  names = [text_bridge.hashlib.sha256(d.encode()).hexdigest()[:24] for d in val_docs]
  assert [stored[n] for n in names] == fresh
  # A finished run, run again or read back, extracts nothing and gives the same bridge.
  calls = []
  real = text_buffer.generate_rows
  monkeypatch.setattr(text_buffer, "generate_rows", lambda *a, **kw: calls.append(1) or real(*a, **kw))
  again, history = text_bridge.fit(setup, config, workdir, splits)
  restored, _ = text_bridge.fit(setup, config, workdir, splits, restore_only=True)
  assert calls == [] and history == bridged["bridge"][1]
  for a, b, c in zip(*(jax.tree.leaves(nnx.state(m)) for m in (bridged["bridge"][0], again, restored))):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(c))
  # A bridge whose B is not zero changes what the text buffer says (at least how sure it is).
  graphdef, state = nnx.split(again)
  moved = nnx.merge(graphdef, jax.tree.map(lambda x: x + 0.5, state))
  tb = setup.text_buffer(splits["validation"])
  assert not np.allclose(tb.answer(splits["validation"])[1], tb.with_bridge(moved).answer(splits["validation"])[1])


def test_without_bridges_every_answer_is_the_frozen_lms(frozen, bridged):
  config, workdir = frozen["config"], frozen["workdir"]
  assert "bridge" not in frozen and not (workdir / "text_bridge").exists()   # rank 0 trains nothing
  # No generation call of this run carries an adapter: not the pager's, not the text buffer's.
  assert {lora for *_, lora in frozen["generate"]} == {False}
  assert {prefix for _, prefix, _ in frozen["generate"]} == {True, False}
  # The text buffer's answers are the frozen LM's from its notes, as before the bridge existed.
  setup = pipeline.Setup(config, workdir)
  test = data.load(data.DataSpec.of(config), workdir)["test"]
  tb = setup.text_buffer(test)
  assert tb.bridge is None and tb.bridged is tb.answerer
  rows = [text_buffer.wrap(setup.tokenizer, config.prompts.answer, "context", b, question=r["question"])
          for b, r in zip(tb.buffer_ids([r["document"] for r in test]), test)]
  answers, conf = text_buffer.generate_rows(generation.Generator(setup.lm, setup.settings), setup.tokenizer, rows,
                                            tb.answer_batch_size, tb.answer_width, "answer", setup.abstain, True)
  main = _rows(workdir)
  assert [r["answers"]["text_buffer"] for r in main] == answers
  assert [r["confidence"]["text_buffer"] for r in main] == conf.tolist()
  # The full context is the frozen LM's in both runs (the same test questions).
  assert [r["answers"]["full_context"] for r in main] == [r["answers"]["full_context"]
                                                          for r in _rows(bridged["workdir"])]


def _val(system, f1s, conf):
  gold = ["a b", "c", "unknown"]
  answers = [["a b", "x", "unknown"][i] if f else "zz" for i, f in enumerate(f1s)]
  return [{"id": str(i), "gold_answer": g, "answers": {system: a}, "confidence": {system: c}}
          for i, (g, a, c) in enumerate(zip(gold, answers, conf))]


def test_each_systems_arm_is_chosen_on_validation_by_f1_at_the_bars_coverage():
  config = {"arms": {"pager": ("bridge", "mean"), "text_buffer": ("frozen", "bridge")}, "bar": {"coverage": 2 / 3}}
  assert arms.arms_of(config) == {"latent_pager": {"bridge": "pager_bridge", "mean": "pager_mean"},
                                  "text_buffer": {"frozen": "pager_bridge", "bridge": "text_buffer_bridge"}}
  # Right answers ranked first win at 2/3 coverage, whatever the confidence of the wrong one.
  both = [{**a, "answers": {**a["answers"], **b["answers"]}, "confidence": {**a["confidence"], **b["confidence"]}}
          for a, b in zip(_val("latent_pager", [1, 0, 0], [0.9, 0.1, 0.5]),
                          _val("text_buffer", [1, 1, 1], [0.1, 0.2, 0.9]))]
  loaded = {"pager_bridge": (None, None, both, None, None),
            "pager_mean": (None, None, _val("latent_pager", [1, 0, 1], [0.9, 0.1, 0.8]), None, None),
            "text_buffer_bridge": (None, None, _val("text_buffer", [0, 0, 1], [0.9, 0.1, 0.8]), None, None)}
  chosen = arms.choose(config, loaded)
  assert chosen["latent_pager"]["chosen"] == "mean" and chosen["latent_pager"]["scores"]["mean"] == 1.0
  assert chosen["text_buffer"]["chosen"] == "frozen" and chosen["text_buffer"]["scores"]["bridge"] == 0.5
  tie = {**loaded, "pager_mean": loaded["pager_bridge"]}
  assert arms.choose(config, tie)["latent_pager"]["chosen"] == "bridge"   # a tie keeps the earlier arm


def test_arms_study_pairs_the_chosen_arms_on_the_test_questions(frozen, tiny_lm, tmp_path):
  workdir = tmp_path / "study"
  shutil.copytree(frozen["workdir"], workdir / "arms" / "pager_no_bridge")   # a finished arm is not rerun
  config = _load("smoke", tiny_lm, workdir, "--config.mode=arms")
  assert tuple(config.arms.pager) == ("no_bridge",) and config.arms.text_buffer_rank == 2
  experiment.run(config, workdir)
  assert json.loads((workdir / "arms" / "text_buffer_bridge" / "config.json").read_text())["text_buffer"][
      "lora_rank"] == 2
  summary = json.loads((workdir / "summary.json").read_text())
  picked = summary["arms"]
  assert picked["latent_pager"]["run"] == "pager_no_bridge"
  assert picked["text_buffer"]["run"] == arms.arms_of(config.to_dict())["text_buffer"][picked["text_buffer"]["chosen"]]
  # The pairing keeps each system's own answers: its headline figures are its own run's.
  for system, prefix in (("latent_pager", "pager"), ("text_buffer", "text_buffer")):
    own = json.loads((workdir / "arms" / picked[system]["run"] / "summary.json").read_text())["headline"]
    assert summary["headline"][f"{prefix}_f1_ungated"] == own[f"{prefix}_f1_ungated"]
  assert "## Arms" in (workdir / "report.md").read_text()
  before = (workdir / "summary.json").read_bytes()
  experiment.report(workdir)
  assert (workdir / "summary.json").read_bytes() == before
