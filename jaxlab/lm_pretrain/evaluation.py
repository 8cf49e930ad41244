"""In-window exact match of the small base model, and its report.

Held-out questions come from `long_doc_qa.generate_qa` on documents of `eval.window_tokens` words
(entities of the validation or test split, never seen in training): greedy answers after
`data.prompt`, normalized as SQuAD does. Validation is measured during training (model
choice); the test split once, at the end. Both splits are also asked in the held-out wording
(`lexicon.HELD_OUT_*_QUESTIONS`: the same documents and answers, templates no training question
uses), which is what a reworded question costs.

  python -m jaxlab.lm_pretrain models/lm_base   # a finished model folder, every split and wording
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from jaxlab.core import report as report_lib, stats
from jaxlab.data import long_doc_qa
from jaxlab.data.squad import normalize
from jaxlab.lm import tokenizer as tok_lib
from jaxlab.lm.generate import generate
from jaxlab.lm_pretrain.data import EOS, PAD, prompt
from jaxlab.lm.qwen3 import Qwen3

TASK_TYPES = ("single_fact", "multi_hop")


# (split, question wording) of the final evaluation; eval_file names each one's results.
EVALS = (("validation", "train"), ("test", "train"), ("validation", "held_out"), ("test", "held_out"))


def eval_file(split: str, wording: str) -> str:
  return f"eval_{split}.json" if wording == "train" else f"eval_{split}_{wording}.json"


def eval_questions(config, split: str, num: int, wording: str = "train") -> list[dict]:
  """`num` held-out documents of `split`, as long as eval.window_tokens words, one question each,
  worded by `wording`'s templates (the documents and answers are the same in every wording)."""
  w = config.eval.window_tokens
  cfg = long_doc_qa.LongDocQAConfig(name="lm_pretrain_eval", seed=config.seed,
                                    distractor_ratio=config.data.distractor_ratio,
                                    min_tokens=w, max_tokens=w, chunk_tokens=0, question_wording=wording)
  return list(long_doc_qa.generate_qa(cfg, split, num))


def evaluate(model: Qwen3, tokenizer: Tokenizer, records: list[dict], batch_size: int,
             max_new_tokens: int) -> list[dict]:
  """Greedy answers to each record's question about its document, with normalized exact match."""
  ids, mask = tok_lib.encode_batch(tokenizer, [prompt(r["document"], r["question"]) for r in records], PAD)
  # One width and one batch size for every call, so generation compiles once.
  width = -(-ids.shape[1] // 32) * 32
  ids = np.pad(ids, ((0, 0), (width - ids.shape[1], 0)), constant_values=PAD)
  mask = np.pad(mask, ((0, 0), (width - mask.shape[1], 0)))
  answers = []
  for s in range(0, len(records), batch_size):
    rows = np.arange(s, s + batch_size) % len(records)
    out = generate(model, ids[rows], mask[rows], max_new_tokens=max_new_tokens, eos_id=EOS, pad_id=PAD)
    answers += tok_lib.decode_batch(tokenizer, np.asarray(out), EOS)
  return [{"id": r["id"], "task_type": r["task_type"], "question": r["question"], "gold": r["gold_answer"],
           "prediction": a, "correct": normalize(a) == normalize(r["gold_answer"])}
          for r, a in zip(records, answers)]


def evaluate_all(model: Qwen3, tokenizer: Tokenizer, config) -> dict[tuple[str, str], list[dict]]:
  """`evaluate` on every (split, wording) of EVALS: `eval.num_questions` questions each."""
  e = config.eval
  return {(split, wording): evaluate(model, tokenizer, eval_questions(config, split, e.num_questions, wording),
                                     e.batch_size, e.max_new_tokens)
          for split, wording in EVALS}


def stat(values) -> dict:
  v = np.asarray(values, float)
  if len(v) == 0:
    return {"mean": None, "sd": None, "n": 0}
  return {"mean": float(v.mean()), "sd": float(v.std(ddof=1)) if len(v) > 1 else None, "n": int(len(v))}


def exact_match(results: list[dict]) -> dict:
  return {t: stat([r["correct"] for r in results if r["task_type"] == t]) for t in TASK_TYPES}


TARGET = 0.8


def target_claim(figures: dict) -> dict:
  """The recipe's target, judged where choices were made (validation): single-fact exact match of
  at least 80%, on the Wilson interval of the share of questions answered exactly."""
  val, test = figures["exact_match_single_fact_validation"], figures["exact_match_single_fact_test"]
  k, n = round(val["mean"] * val["n"]), val["n"]
  lo, hi = (float(x) for x in stats.wilson(k, n))
  interval = {"diff": val["mean"] - TARGET, "ci": [lo - TARGET, hi - TARGET], "n": n}
  return report_lib.claim(
      "in-window exact match on held-out validation single-fact questions is at least 80% "
      "(margin: exact match - 0.8, Wilson interval over questions)",
      f"recipe target: >= {TARGET:.0%}", f"validation {report_lib.fmt(val, 3)}; test, scored once: "
      f"{report_lib.fmt(test, 3)}", interval)


def report(workdir) -> Path:
  """summary.json and report.md from config.json, train_log.jsonl and eval_{validation,test}.json."""
  workdir = Path(workdir)
  config = json.loads((workdir / "config.json").read_text())
  log = [json.loads(line) for line in (workdir / "train_log.jsonl").read_text().splitlines()]
  em = {split + ("" if wording == "train" else f"_{wording}"): exact_match(json.loads(path.read_text()))
        for split, wording in EVALS if (path := workdir / eval_file(split, wording)).exists()}
  train_rows = [row for row in log if "loss" in row]
  final = [row["loss"] for row in train_rows if row["step"] > config["steps"] - max(config["log_every"] * 5, 1)]
  figures = {f"exact_match_{t}_{split}": em[split][t] for split in em for t in TASK_TYPES}
  figures["final_train_loss"] = stat(final)
  rates = [row["tokens_per_s"] for row in train_rows if row["tokens_per_s"] > 0]
  figures["tokens_per_s_median"] = stat([np.median(rates)] if rates else [])
  report_lib.write_json(workdir / "summary.json", {
      "experiment": config["experiment"], "variant": config.get("variant"), "figures": figures,
      "comparisons": [], "claims": [target_claim(figures)]})
  m, d = config["model"], config["data"]
  stages = "; ".join(f"{share:g} of the steps at seq_len {t}, windows of {lo}-{hi} words"
                     for share, t, lo, hi in d["stages"])
  recipe = (f"{m['num_hidden_layers']} layers, d={m['hidden_size']}, {m['num_attention_heads']} heads "
            f"({m['num_key_value_heads']} kv), word-level vocabulary; curriculum: {stages}; batch "
            f"{config['batch_size']}, {config['steps']} steps, learning rate {config['optim']['learning_rate']}; "
            f"kinds cycle {', '.join(d['kinds'])}, {d['questions_per_window']} questions per window, "
            f"context loss weight {d['context_loss_weight']}.")
  if rates:
    recipe += f" Training ran at about {np.median(rates):,.0f} tokens/s (median of the logged steps)."
  evals = [[row["step"]] + [report_lib.fmt(row["eval"][t], 3) for t in TASK_TYPES] for row in log if "eval" in row]
  results = json.loads((workdir / "eval_test.json").read_text())
  examples = [[r["task_type"], r["question"], r["gold"], r["prediction"], "yes" if r["correct"] else "no"]
              for r in results[:8]]
  return report_lib.write_report(workdir, f"lm_pretrain ({config.get('variant')})", [
      ("Recipe", recipe),
      ("Figures", f"In-window exact match on held-out questions about documents of "
                  f"{config['eval']['window_tokens']} words (normalized as SQuAD; sd is over questions; "
                  f"`_held_out`: the same questions in templates no training question uses; training "
                  f"questions in {config['data'].get('train_wordings', 1)} wording(s)):\n\n"
                  + report_lib.markdown_table(["figure", "value"],
                                              [[k, report_lib.fmt(v, 3)] for k, v in figures.items()])),
      ("During training", "Validation exact match:\n\n"
                          + report_lib.markdown_table(["step", "single fact", "multi-hop"], evals)),
      ("Examples (test)", report_lib.markdown_table(["type", "question", "gold", "prediction", "correct"],
                                                    examples)),
      ("Export", "`hf/` holds config.json, model.safetensors (fp32) and tokenizer.json; "
                 "`jaxlab.lm.checkpoint_io.load(workdir / 'hf')` loads it."),
  ])
