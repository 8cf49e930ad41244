"""The base-model pretraining experiment (`configs/lm_pretrain.py`): validate the config, train
(`train.py`), export the model as a Hugging Face folder, measure exact match on the validation and
test questions, in the training wording and in the held-out one, and write the report
(`evaluation.py`)."""

from __future__ import annotations

from pathlib import Path

import jax

from jaxlab.core import mesh as mesh_lib, report as report_lib
from jaxlab.core.config import require, require_int
from jaxlab.data import lexicon, long_doc_qa
from jaxlab.lm import qwen3
from jaxlab.lm_pretrain import evaluation
from jaxlab.lm_pretrain.evaluation import report
from jaxlab.lm_pretrain.train import export, train

__all__ = ["report", "run", "validate"]


# ----------------------------------------------------------------------------- config
def _stage_ok(stage) -> bool:
  share, seq_len, lo, hi = stage
  return share > 0 and int(seq_len) == seq_len >= 16 and int(lo) == lo and int(hi) == hi and 8 <= lo <= hi


def validate(config) -> None:
  require_int(config, "seed", 0)
  require_int(config, "steps", 1)
  require_int(config, "batch_size", 1)
  require_int(config, "checkpoint_every", 1)
  require_int(config, "log_every", 1)
  require_int(config, "stop_after", 0, "0: no limit")
  require(config, "optim.learning_rate", lambda v: v > 0, "a positive number")
  require_int(config, "optim.warmup_steps", 0)
  require(config, "optim.weight_decay", lambda v: v >= 0, "a number >= 0")
  require(config, "optim.clip_norm", lambda v: v > 0, "a positive number")
  require(config, "optim.init_std", lambda v: v > 0, "a positive number")
  require(config, "optim.qk_norm_init", lambda v: v > 0, "a positive number")
  require_int(config, "data.num_train", 1)
  require(config, "data.stages", lambda v: len(v) > 0 and all(len(s) == 4 and _stage_ok(s) for s in v),
          "a non-empty list of (share > 0, seq_len >= 16, fewest words >= 8, most words >= fewest)")
  require_int(config, "data.questions_per_window", 1)
  require(config, "data.train_wordings", lambda v: int(v) == v and 1 <= v <= len(lexicon.TRAINING_WORDINGS),
          f"an integer in [1, {len(lexicon.TRAINING_WORDINGS)}] (the first k of lexicon.TRAINING_WORDINGS)")
  require(config, "data.context_loss_weight", lambda v: 0 <= v <= 1, "in [0, 1]")
  require(config, "data.distractor_ratio", lambda v: 0 <= v <= 1, "in [0, 1]")
  require(config, "data.kinds", lambda v: len(v) > 0 and set(v) <= set(long_doc_qa.KINDS),
          f"a non-empty list of kinds from {long_doc_qa.KINDS} (repeat one to weight it)")
  for field in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "head_dim"):
    require_int(config, f"model.{field}", 1)
  require(config, "model.num_attention_heads",
          lambda v: v % config.model.num_key_value_heads == 0, "a multiple of model.num_key_value_heads")
  require(config, "model.remat", lambda v: v in qwen3.REMAT_POLICIES, f"one of {sorted(qwen3.REMAT_POLICIES)}")
  require(config, "mesh", lambda v: set(v) == set(mesh_lib.TRAINING_AXES) and all(
      int(x) == x and (x >= 1 or x == -1) for x in v.values()) and list(v.values()).count(-1) <= 1,
          "a block {data, fsdp, tensor} of sizes >= 1, at most one of them -1 (the devices left)")
  require_int(config, "eval.window_tokens", 8)
  require_int(config, "eval.num_questions", 0)
  require_int(config, "eval.num_during", 0)
  require_int(config, "eval.every", 0, "0: no evaluation during training")
  require_int(config, "eval.batch_size", 1)
  require_int(config, "eval.max_new_tokens", 1)


def run(config, workdir) -> Path:
  workdir = Path(workdir)
  trained = train(config, workdir)   # train.Stopped when this call ends early; the same command resumes
  export(trained.model, trained.tokenizer, config, workdir / "hf")
  for (split, wording), results in evaluation.evaluate_all(trained.model, trained.tokenizer, config).items():
    if jax.process_index() == 0:
      report_lib.write_json(workdir / evaluation.eval_file(split, wording), results)
  return report(workdir) if jax.process_index() == 0 else workdir / "report.md"
