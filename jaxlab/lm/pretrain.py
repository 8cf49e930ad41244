"""Pretraining a small Qwen3-architecture base model from scratch (issue 7, "A small base model").

The corpus is the `pretrain` corpus of `jaxlab.data.long_doc_qa`, generated in memory with
`generate_pretrain` (no TFDS files): short windows as plain documents, in-window questions with
their answers, and chunk-to-key-facts extraction. Each example becomes one training sequence,
right-truncated to `data.seq_len` and padded (the loss skips padding). A word-level tokenizer
(`tokenizers` WordLevel, whitespace pre-tokenizer, specials <pad> <eos> <unk>) is trained on the
training windows; every lexicon word appears in every split, so held-out entities are new
combinations of known words, not unknown tokens.

Training is data parallel: batch rows are sharded over the mesh axis, params and optimizer state
are replicated, and one jitted step (AdamW, linear warmup then cosine decay, global-norm clipping)
updates them. A non-finite loss or gradient norm stops the run with an error before anything is
checkpointed. Every `checkpoint_every` steps the state goes to `workdir/checkpoints` with Orbax,
and a run started again on the same workdir resumes from it, bit-identically, since the batch of
step s depends only on (seed, s).

Restore order: the fingerprint (a workdir holds one training run), then `step`, then params and
optimizer state, unflattened into the structure of a freshly built state.

The trained model is exported as a Hugging Face folder (config.json, fp32 model.safetensors,
tokenizer.json) that `jaxlab.lm.checkpoint_io.load` reads like any Qwen3 checkpoint, and measured
by in-window exact match: greedy answers to held-out (test-split) questions, single fact and
multi-hop, normalized as SQuAD does.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import string
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp
from flax import nnx
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
from safetensors.numpy import save_file
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from tqdm.auto import tqdm

from jaxlab.core import checkpoint, mesh as mesh_lib, report as report_lib
from jaxlab.core.config import require, require_int, to_dict
from jaxlab.data import long_doc_qa
from jaxlab.lm import checkpoint_io, tokenizer as tok_lib
from jaxlab.lm.generate import generate
from jaxlab.lm.qwen3 import Qwen3, Qwen3Config

SPECIALS = ("<pad>", "<eos>", "<unk>")
PAD, EOS = 0, 1


# ----------------------------------------------------------------------------- config
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
  require_int(config, "data.num_train", 1)
  require_int(config, "data.window_tokens", 8)
  require_int(config, "data.seq_len", 16)
  require(config, "data.distractor_ratio", lambda v: 0 <= v <= 1, "in [0, 1]")
  require(config, "data.kinds", lambda v: len(v) > 0 and set(v) <= set(long_doc_qa.PRETRAIN_KINDS),
          f"a non-empty subset of {long_doc_qa.PRETRAIN_KINDS}")
  for field in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "head_dim"):
    require_int(config, f"model.{field}", 1)
  require(config, "model.num_attention_heads",
          lambda v: v % config.model.num_key_value_heads == 0, "a multiple of model.num_key_value_heads")
  require_int(config, "eval.num_questions", 0)
  require_int(config, "eval.batch_size", 1)
  require_int(config, "eval.max_new_tokens", 1)


def fingerprint(config) -> str:
  """What fixes the trained weights; stop_after, logging and evaluation settings do not."""
  c = to_dict(config)
  return checkpoint.fingerprint({k: c[k] for k in ("seed", "steps", "batch_size", "optim", "data", "model")})


# ----------------------------------------------------------------------------- data
def train_text(ex: dict) -> str:
  """One pretraining example as text; QA uses the same layout that `prompt` asks with."""
  if ex["kind"] == "qa":
    return f"{prompt(ex['context'], ex['question'])} {ex['target']}"
  if ex["kind"] == "extract":
    return f"{ex['context']}\n\nKey facts: {ex['target']}"
  return ex["context"]


def prompt(document: str, question: str) -> str:
  return f"{document}\n\nQuestion: {question}\nAnswer:"


def _data_config(config, corpus: str, **kw) -> long_doc_qa.LongDocQAConfig:
  return long_doc_qa.LongDocQAConfig(name=f"lm_pretrain_{corpus}", corpus=corpus, seed=config.seed,
                                     distractor_ratio=config.data.distractor_ratio, **kw)


def corpus_texts(config) -> list[str]:
  cfg = _data_config(config, "pretrain", window_tokens=config.data.window_tokens)
  # generate_pretrain cycles through the kinds; ask for enough examples that the wanted ones
  # number num_train.
  need = -(-config.data.num_train * len(long_doc_qa.PRETRAIN_KINDS) // len(config.data.kinds))
  texts = [train_text(ex) for ex in long_doc_qa.generate_pretrain(cfg, "train", need)
           if ex["kind"] in config.data.kinds]
  return texts[:config.data.num_train]


def train_tokenizer(texts: list[str]) -> Tokenizer:
  """Word-level: the generated world has about a thousand words, so each is one token."""
  tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
  tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
  tokenizer.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=list(SPECIALS)))
  assert [tokenizer.token_to_id(s) for s in SPECIALS] == [0, 1, 2]
  return tokenizer


def encode_corpus(tokenizer: Tokenizer, texts: list[str], seq_len: int) -> np.ndarray:
  """(N, seq_len) int32: each text + <eos>, right-truncated and right-padded with <pad>."""
  out = np.full((len(texts), seq_len), PAD, np.int32)
  for i, enc in enumerate(tokenizer.encode_batch(texts)):
    row = (enc.ids + [EOS])[:seq_len]
    out[i, :len(row)] = row
  return out


def prepare(config, workdir: Path) -> tuple[Tokenizer, np.ndarray]:
  """Tokenizer and encoded corpus, cached in the workdir so a resumed run skips generation."""
  key = checkpoint.fingerprint({"seed": config.seed, "data": to_dict(config.data)})
  tok_path, data_path = workdir / "tokenizer.json", workdir / "corpus.npz"
  if tok_path.is_file() and data_path.is_file():
    cached = np.load(data_path)
    if str(cached["key"]) == key:
      return Tokenizer.from_file(str(tok_path)), cached["ids"]
  texts = corpus_texts(config)
  tokenizer = train_tokenizer(texts)
  ids = encode_corpus(tokenizer, texts, config.data.seq_len)
  if jax.process_index() == 0:
    tokenizer.save(str(tok_path))
    np.savez(data_path, ids=ids, key=np.array(key))
  return tokenizer, ids


def batch_rows(n: int, batch_size: int, seed: int, step: int) -> np.ndarray:
  """Row indices of step `step`: a fresh permutation per epoch, a function of (seed, step) only."""
  per_epoch = n // batch_size
  if per_epoch == 0:
    raise ValueError(f"data.num_train={n} is smaller than batch_size={batch_size}")
  epoch, i = divmod(step, per_epoch)
  order = np.random.default_rng([seed, epoch]).permutation(n)
  return order[i * batch_size:(i + 1) * batch_size]


# ----------------------------------------------------------------------------- model
def hf_config(config, vocab_size: int) -> dict:
  """The Hugging Face `config.json` of the model (also what builds it here)."""
  m = config.model
  return {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": vocab_size,
          "hidden_size": m.hidden_size, "intermediate_size": m.intermediate_size,
          "num_hidden_layers": m.num_hidden_layers, "num_attention_heads": m.num_attention_heads,
          "num_key_value_heads": m.num_key_value_heads, "head_dim": m.head_dim,
          "rms_norm_eps": 1e-6, "rope_theta": float(m.rope_theta), "tie_word_embeddings": m.tie_word_embeddings,
          "attention_bias": False, "hidden_act": "silu", "use_sliding_window": False,
          "max_position_embeddings": config.data.seq_len * 2, "initializer_range": config.optim.init_std,
          "bos_token_id": EOS, "eos_token_id": EOS, "pad_token_id": PAD, "torch_dtype": "float32"}


def init_model(config, vocab_size: int) -> Qwen3:
  """The model with every matrix drawn N(0, init_std), as Hugging Face initializes Qwen3.

  NNX's default embedding init has unit scale, which makes the tied output logits start large."""
  model = Qwen3(Qwen3Config.from_hf(hf_config(config, vocab_size)), rngs=nnx.Rngs(config.seed))
  key = jax.random.key(config.seed)
  flat = []
  for i, (path, var) in enumerate(nnx.to_flat_state(nnx.state(model, nnx.Param))):
    if var[...].ndim == 2:
      var = var.replace(config.optim.init_std * jax.random.normal(jax.random.fold_in(key, i), var[...].shape))
    flat.append((path, var))
  nnx.update(model, nnx.from_flat_state(flat))
  return model


def optimizer(config) -> optax.GradientTransformation:
  o = config.optim
  return _optimizer(o.learning_rate, o.warmup_steps, config.steps, o.weight_decay, o.clip_norm)


@functools.lru_cache(maxsize=None)
def _optimizer(lr, warmup, steps, weight_decay, clip_norm):
  # Cached: the jitted step takes the optimizer as a static argument, so an equal config must give
  # the same object, or every run (and every resume) would compile again.
  schedule = optax.warmup_cosine_decay_schedule(0.0, lr, max(warmup, 1), max(steps, warmup + 1),
                                                end_value=lr * 0.1)
  return optax.chain(optax.clip_by_global_norm(clip_norm),
                     optax.adamw(schedule, b1=0.9, b2=0.95, weight_decay=weight_decay))


def loss_fn(graphdef, params, ids):
  """Mean next-token cross-entropy over real target tokens (padding is id 0 and never a target)."""
  mask = ids != PAD
  logits, _ = nnx.merge(graphdef, params)(ids, mask)
  ce = optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1].astype(jnp.float32), ids[:, 1:])
  weight = mask[:, 1:].astype(jnp.float32)
  return jnp.sum(ce * weight) / jnp.maximum(jnp.sum(weight), 1.0)


@functools.partial(jax.jit, static_argnames=("graphdef", "tx"), donate_argnames=("params", "opt_state"))
def train_step(graphdef, tx, params, opt_state, ids):
  loss, grads = jax.value_and_grad(functools.partial(loss_fn, graphdef))(params, ids)
  updates, opt_state = tx.update(grads, opt_state, params)
  return optax.apply_updates(params, updates), opt_state, {"loss": loss, "grad_norm": optax.tree.norm(grads)}


def auto_mesh():
  # Auto axes, as checkpoint_io uses: with Explicit axes every input would have to carry the mesh.
  mesh = mesh_lib.make_mesh()
  return mesh.update(axis_types=(AxisType.Auto,) * len(mesh.axis_names))


# ----------------------------------------------------------------------------- training
@dataclasses.dataclass
class Trained:
  model: Qwen3
  tokenizer: Tokenizer
  start_step: int   # where this call began: > 0 when it resumed from a checkpoint
  step: int         # where it ended (config.steps, or earlier with stop_after)
  losses: list[float]


def _encode(text: str) -> np.ndarray:
  return np.frombuffer(text.encode(), dtype=np.uint8).copy()


def train(config, workdir) -> Trained:
  """Trains, or resumes training in, `workdir`; returns the model at the last step run."""
  workdir = Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  mesh = auto_mesh()
  if config.batch_size % mesh.size:
    raise ValueError(f"batch_size={config.batch_size} must be a multiple of the {mesh.size} devices "
                     "(batch rows are sharded over them)")
  tokenizer, corpus = prepare(config, workdir)

  # Model and optimizer state, replicated on every device.
  replicated = NamedSharding(mesh, P())
  graphdef, params = nnx.split(init_model(config, tokenizer.get_vocab_size()), nnx.Param)
  params = jax.device_put(params, replicated)
  tx = optimizer(config)
  opt_state = jax.device_put(tx.init(params), replicated)

  # Resume. Orbax gives back dicts of NumPy leaves; the fresh state fixes the tree structure.
  key = fingerprint(config)
  mgr = checkpoint.manager(workdir / "checkpoints")
  start = 0
  if mgr.latest_step() is not None:
    saved = mgr.restore(mgr.latest_step(), args=ocp.args.StandardRestore())
    saved_key = bytes(np.asarray(saved["key"])).decode()
    if saved_key != key:
      raise RuntimeError(f"{workdir} holds checkpoints of another training run ({saved_key} != {key}); "
                         "use a new --workdir or delete its checkpoints/ folder")
    start = int(saved["step"])
    restore = lambda tree, leaves: jax.device_put(
        jax.tree.unflatten(jax.tree.structure(tree), [np.asarray(leaves[str(i)]) for i in range(len(leaves))]),
        replicated)
    params, opt_state = restore(params, saved["params"]), restore(opt_state, saved["opt_state"])

  def save(step):
    flat = lambda tree: {str(i): np.asarray(x) for i, x in enumerate(jax.tree.leaves(jax.device_get(tree)))}
    mgr.save(step, args=ocp.args.StandardSave({"key": _encode(key), "step": np.int64(step),
                                               "params": flat(params), "opt_state": flat(opt_state)}))
    mgr.wait_until_finished()

  end = config.steps if not config.stop_after else min(config.steps, start + config.stop_after)
  lead = jax.process_index() == 0
  log = (workdir / "train_log.jsonl").open("a") if lead else None
  bar = tqdm(total=config.steps, initial=start, desc="pretrain", unit="step", disable=not lead)
  losses, tokens, t0 = [], 0, time.perf_counter()
  for step in range(start, end):
    ids = corpus[batch_rows(len(corpus), config.batch_size, config.seed, step)]
    params, opt_state, metrics = train_step(graphdef, tx, params, opt_state,
                                            mesh_lib.shard_rows(ids, mesh))
    loss, grad_norm = float(metrics["loss"]), float(metrics["grad_norm"])
    if not (math.isfinite(loss) and math.isfinite(grad_norm)):
      raise FloatingPointError(
          f"training diverged at step {step + 1}: loss={loss}, gradient norm={grad_norm}; nothing after "
          f"step {mgr.latest_step() or 0} was saved. Lower optim.learning_rate or raise optim.warmup_steps.")
    losses.append(loss)
    # Tokens per second counts real tokens only, and starts after the first (compiling) step.
    if step == start:
      t0 = time.perf_counter()
    else:
      tokens += int(np.count_nonzero(ids))
    rate = tokens / max(time.perf_counter() - t0, 1e-9)
    bar.update(1)
    bar.set_postfix(loss=f"{loss:.3f}", tok_s=f"{rate:,.0f}")
    if log and ((step + 1) % config.log_every == 0 or step + 1 == end):
      log.write(json.dumps({"step": step + 1, "loss": loss, "grad_norm": grad_norm,
                            "tokens_per_s": round(rate, 1)}) + "\n")
      log.flush()
    if (step + 1) % config.checkpoint_every == 0 or step + 1 == end:
      save(step + 1)
  bar.close()
  if log:
    log.close()
  mgr.close()
  return Trained(nnx.merge(graphdef, params), tokenizer, start, max(end, start), losses)


# ----------------------------------------------------------------------------- export
def export(model: Qwen3, tokenizer: Tokenizer, config, folder) -> Path:
  """A Hugging Face folder: config.json, fp32 model.safetensors (torch's (out, in) layout), tokenizer.json."""
  folder = Path(folder)
  folder.mkdir(parents=True, exist_ok=True)
  tensors = {}
  for path, var in nnx.to_flat_state(nnx.state(model, nnx.Param)):
    # The same name mapping the loader uses, so the two cannot drift apart.
    name, transposed = checkpoint_io.hf_name(path)
    value = np.asarray(jax.device_get(var[...]), np.float32)
    tensors[name] = np.ascontiguousarray(value.T if transposed else value)
  save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
  (folder / "config.json").write_text(json.dumps(hf_config(config, model.cfg.vocab_size), indent=1) + "\n")
  tokenizer.save(str(folder / "tokenizer.json"))
  return folder


# ----------------------------------------------------------------------------- evaluation
def normalize(text: str) -> str:
  """SQuAD's answer normalization: lower case, no punctuation, no articles, single spaces."""
  text = "".join(c for c in text.lower() if c not in string.punctuation)
  return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def eval_questions(config) -> list[dict]:
  """Held-out (test split) documents as long as the training windows, each with one question."""
  w = config.data.window_tokens
  cfg = _data_config(config, "qa", min_tokens=w, max_tokens=w, chunk_tokens=0)
  return list(long_doc_qa.generate_qa(cfg, "test", config.eval.num_questions))


def evaluate(model: Qwen3, tokenizer: Tokenizer, records: list[dict], batch_size: int,
             max_new_tokens: int) -> list[dict]:
  """Greedy answers to each record's question about its document, with normalized exact match."""
  prompts = [prompt(r["document"], r["question"]) for r in records]
  ids, mask = tok_lib.encode_batch(tokenizer, prompts, PAD)
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


# ----------------------------------------------------------------------------- experiment
def run(config, workdir) -> Path:
  workdir = Path(workdir)
  trained = train(config, workdir)
  if trained.step < config.steps:
    print(f"stopped at step {trained.step} of {config.steps} (stop_after); run again to resume")
    return workdir
  if jax.process_index() == 0:
    export(trained.model, trained.tokenizer, config, workdir / "hf")
  results = evaluate(trained.model, trained.tokenizer, eval_questions(config), config.eval.batch_size,
                     config.eval.max_new_tokens)
  if jax.process_index() == 0:
    report_lib.write_json(workdir / "eval.json", results)
    return report(workdir)
  return workdir / "report.md"


def _stat(values) -> dict:
  v = np.asarray(values, float)
  if len(v) == 0:
    return {"mean": None, "sd": None, "n": 0}
  return {"mean": float(v.mean()), "sd": float(v.std(ddof=1)) if len(v) > 1 else None, "n": int(len(v))}


def report(workdir) -> Path:
  """summary.json and report.md from config.json, train_log.jsonl and eval.json."""
  workdir = Path(workdir)
  config = json.loads((workdir / "config.json").read_text())
  results = json.loads((workdir / "eval.json").read_text())
  log = [json.loads(line) for line in (workdir / "train_log.jsonl").read_text().splitlines()]
  em = {t: _stat([r["correct"] for r in results if r["task_type"] == t]) for t in ("single_fact", "multi_hop")}
  final = [row["loss"] for row in log if row["step"] > config["steps"] - max(config["log_every"] * 5, 1)]
  figures = {"exact_match_single_fact": em["single_fact"], "exact_match_multi_hop": em["multi_hop"],
             "final_train_loss": _stat(final)}
  report_lib.write_json(workdir / "summary.json", {
      "experiment": config["experiment"], "variant": config.get("variant"), "figures": figures,
      "comparisons": [], "claims": [report_lib.claim(
          "in-window exact match on held-out single-fact questions is at least 80%", "issue 7 target: >= 80%",
          report_lib.fmt(em["single_fact"], 3), bool(em["single_fact"]["mean"] is not None
                                                      and em["single_fact"]["mean"] >= 0.8))]})
  rates = [row["tokens_per_s"] for row in log if row["tokens_per_s"] > 0]
  m = config["model"]
  recipe = (f"{m['num_hidden_layers']} layers, d={m['hidden_size']}, {m['num_attention_heads']} heads "
            f"({m['num_key_value_heads']} kv), word-level vocabulary, windows of {config['data']['window_tokens']} "
            f"words in sequences of {config['data']['seq_len']} tokens, batch {config['batch_size']}, "
            f"{config['steps']} steps, kinds {', '.join(config['data']['kinds'])}.")
  rows = [[name, report_lib.fmt(stat, 3)] for name, stat in figures.items()]
  examples = [[r["task_type"], r["question"], r["gold"], r["prediction"], "yes" if r["correct"] else "no"]
              for r in results[:8]]
  return report_lib.write_report(workdir, f"lm_pretrain ({config.get('variant')})", [
      ("Recipe", recipe + (f" Training ran at about {np.median(rates):,.0f} tokens/s (median of the logged "
                           "steps)." if rates else "")),
      ("Figures", "In-window exact match on held-out test-split questions (normalized as SQuAD; sd is over "
                  "questions):\n\n" + report_lib.markdown_table(["figure", "value"], rows)),
      ("Examples", report_lib.markdown_table(["type", "question", "gold", "prediction", "correct"], examples)),
      ("Export", "`hf/` holds config.json, model.safetensors (fp32) and tokenizer.json; "
                 "`jaxlab.lm.checkpoint_io.load(workdir / 'hf')` loads it."),
  ])
