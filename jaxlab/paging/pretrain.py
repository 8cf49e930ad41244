"""Pretraining a page encoder on unlimited generated text (ICAE's autoencoding
and language-modelling objectives, plus question answering).

Documents come from the synthetic world generator: the QA set's length distribution and
distractor ratio, entities of the train split, and a seed stream of their own
(`pretrain.seed`), so no QA split's document is among them. Each is cut into the pager's chunks.
Per step, a batch of documents is encoded into pages, and for each document one chunk j >= 1 is
drawn (the only chunk of a one-chunk document):

- (a) autoencoding: the frozen LM reads [pages of chunk j | AE] and must regenerate chunk j;
- (b) continuation: the frozen LM reads [pages of chunks 0..j-1 | LM] and must continue with
  chunk j (the pages right-aligned, null pages before them, as the pager answers).

- (c) question answering (`qa_weight`, 0 for the ICAE recipe): the document's generated
  questions (`data.questions_per_document`, `data.unanswerable_fraction` of them unanswerable)
  after all its pages, as the pager answers (`pager.qa_ce`), with the sufficiency head's BCE.

With `pretrain.chunks = "evidence"` (documents far longer than the window, as the `paged` reader
of long documents reads the chunks a scorer picks), each row's document is cut to `pages.max_pages`
of its chunks, in document order: every chunk that holds one of the row's questions' evidence, the
rest drawn at random; answerable questions without recorded evidence are left out (their fact may
be cut away). `pager.init` names an exported encoder to continue from.

The loss is `ae_weight` x (a) + `continuation_weight` x (b) (the cross-entropy of chunk j's
tokens) + `qa_weight` x (c). Held-out documents (validation-split entities) measure reconstruction token accuracy and
the exact-chunk rate (every token right under teacher forcing, which is exactly when greedy
decoding regenerates the chunk), and the continuation cross-entropy. The trained encoder (its
parameters, the task markers and the null page) is exported to a folder (`export`) that `:cpu`
starts its QA fine-tuning from.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from jaxlab.core import checkpoint, mesh as mesh_lib, train as train_lib
from jaxlab.core.config import repo_path, to_dict
from jaxlab.data import long_doc_qa
from jaxlab.paging import encoders, pager as pager_lib, pages, retrieval
from jaxlab.paging.spec import PagerSpec
from jaxlab.paging.train import Placement, Split, adamw, load_into, question_rows  # shared with QA fine-tuning

# The parts of a PagerModel that pretraining trains and exports.
PRETRAINED = ("encoder", "marks", "null", "aggregator", "sufficiency", "bridge")


def document_config(config, split: str) -> long_doc_qa.LongDocQAConfig:
  d, p = config.data, config.pretrain
  return long_doc_qa.LongDocQAConfig(
      name="pager_pretrain", min_tokens=d.min_tokens, max_tokens=d.max_tokens, distractor_ratio=d.distractor_ratio,
      chunk_tokens=d.chunk_words, seed=p.seed + (0 if split == "train" else 1),
      unanswerable_fraction=d.unanswerable_fraction, abstain_answer=d.abstain_answer,
      questions_per_document=d.questions_per_document)


def records(config, split: str, num: int) -> list[dict]:
  """Questions on `num` pretraining documents (train: `data.questions_per_document` each) or
  held-out documents (validation entities, one question each)."""
  return list(long_doc_qa.generate_qa(document_config(config, split), split, num))


def with_evidence(recs: list[dict]) -> list[dict]:
  """The questions whose pages can hold their answer once a document is cut to some of its chunks:
  the unanswerable ones and the answerable ones with recorded evidence."""
  return [r for r in recs if not r.get("answerable", True) or r.get("evidence_char_start")]


def cut_to_evidence(split: Split, recs: list[dict], per_row: int, keep: int, tokenizer, settings, seed: int) -> Split:
  """`split` (made from `recs`, `per_row` questions a row) with each row's document cut to `keep` of
  its chunks, in document order: those holding the row's questions' evidence, the rest drawn at
  random (a generator per row, so the cut depends on (seed, row) only)."""
  items = []
  for i, (row, chunks) in enumerate(zip(question_rows(recs, per_row), split.docs.items)):
    offsets = tokenizer.encode(row[0]["document"]).offsets
    held = sorted({c for r in row for c in retrieval.evidence_chunks(offsets, r, settings.chunk_tokens,
                                                                     settings.chunk_overlap)})[:keep]
    rest = np.array([j for j in range(len(chunks)) if j not in held], np.int64)
    fill = np.random.default_rng([seed, i]).choice(rest, min(keep - len(held), len(rest)), replace=False)
    items.append([chunks[j] for j in sorted(held + fill.tolist())])
  split.docs.items = items
  return split


def chunk_targets(batch: dict, pick) -> tuple:
  """Chunk `pick[b]` of each document: ids (B, C) and mask (B, C)."""
  rows = jnp.arange(batch["chunk_ids"].shape[0])
  return batch["chunk_ids"][rows, pick], batch["chunk_mask"][rows, pick]


def _decode_ce(lm, soft, mark, ids, mask):
  """The frozen LM on [soft | mark | chunk]: per-token CE and argmax hits on the chunk's tokens."""
  b, k = soft.shape[:2]
  embeds = jnp.concatenate([soft.astype(lm.dtype), jnp.broadcast_to(mark.astype(lm.dtype), (b, 1, mark.shape[-1])),
                            lm.embed(ids)], axis=1)
  full = jnp.concatenate([jnp.ones((b, k + 1), bool), mask], axis=1)
  logits, _ = lm(inputs_embeds=embeds, attention_mask=full)
  logits = logits[:, k:-1].astype(jnp.float32)  # position k + i predicts chunk token i
  return optax.softmax_cross_entropy_with_integer_labels(logits, ids), jnp.argmax(logits, -1) == ids


def objectives(params, graphdef, lm_graphdef, lm_state, batch, key, reference: bool = False):
  """Per document: (AE CE sum, continuation CE sum, token count, AE hits, AE exact, QA CE sum, QA
  target count) and the sufficiency logits; with `reference` also the CE sum and hits of the
  frozen LM given no pages at all ([LM] mark only)."""
  model = nnx.merge(graphdef, params)
  lm = nnx.merge(lm_graphdef, jax.lax.stop_gradient(lm_state))
  k1, k2, k3 = (None,) * 3 if key is None else jax.random.split(key, 3)
  pages, page_mask = model.pages(lm, batch, k1)
  rows = jnp.arange(pages.shape[0])
  pick = batch["pick"]
  ids, mask = chunk_targets(batch, pick)
  w = mask.astype(jnp.float32)
  decoder = model.decoder(lm)
  ae_ce, hits = _decode_ce(decoder, pages[rows, pick], model.marks[0], ids, mask)
  before = page_mask & (jnp.arange(page_mask.shape[1])[None] < pick[:, None])
  lm_ce, _ = _decode_ce(decoder, model.soft_from_pages(pages, before, k2), model.marks[1], ids, mask)
  qa_sums, qa_counts, suff = pager_lib.qa_ce(model, lm, model.soft_from_pages(pages, page_mask, k3), batch)
  out = (jnp.sum(ae_ce * w, 1), jnp.sum(lm_ce * w, 1), jnp.sum(w, 1), jnp.sum(hits * w, 1),
         jnp.all(hits | ~mask, axis=1).astype(jnp.float32), qa_sums, qa_counts)
  if reference:
    none_ce, none_hits = _decode_ce(lm, pages[:, 0, :0], model.marks[1], ids, mask)
    out += (jnp.sum(none_ce * w, 1), jnp.sum(none_hits * w, 1))
  return out, suff


def loss_fn(params, graphdef, lm_graphdef, lm_state, batch, key, ae_weight, lm_weight, qa_weight, suff_weight):
  (ae, cont, n, hits, _, qa_sums, qa_counts), suff = objectives(params, graphdef, lm_graphdef, lm_state, batch, key)
  tokens = jnp.maximum(jnp.sum(n), 1.0)
  # Terms with weight 0 are left out (not multiplied by 0), so XLA drops their decoder passes.
  loss = 0.0
  if ae_weight:
    loss = loss + ae_weight * jnp.sum(ae) / tokens
  if lm_weight:
    loss = loss + lm_weight * jnp.sum(cont) / tokens
  if qa_weight:
    loss = loss + qa_weight * pager_lib.qa_loss(qa_sums, qa_counts, suff, batch, suff_weight)
  return loss, (jnp.sum(hits) / tokens if ae_weight else jnp.zeros(()))


@functools.partial(jax.jit, static_argnames=("graphdef", "lm_graphdef", "tx", "weights", "placement"),
                   donate_argnames=("params", "opt_state"))
def train_step(params, opt_state, lm_state, batch, key, *, graphdef, lm_graphdef, tx, weights, placement):
  """One AdamW step; the new state stays where `placement` put the old one (as `train.train_step`)."""
  (loss, acc), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, graphdef, lm_graphdef, lm_state, batch,
                                                                  key, *weights)
  updates, opt_state = tx.update(grads, opt_state, params)
  params, opt_state = placement.keep(optax.apply_updates(params, updates), opt_state)
  return params, opt_state, loss, acc, optax.tree.norm(grads)


@functools.partial(jax.jit, static_argnames=("graphdef", "lm_graphdef"))
def eval_step(params, graphdef, lm_graphdef, lm_state, batch):
  return objectives(params, graphdef, lm_graphdef, lm_state, batch, None, reference=True)[0]


def picks(docs: pager_lib.Documents, rows, max_pages: int, rng: np.random.Generator) -> np.ndarray:
  """One chunk per document: j >= 1 uniformly, or 0 for a one-chunk document."""
  n = np.array([min(docs.num_pages(i), max_pages) for i in rows])
  return np.where(n > 1, rng.integers(1, np.maximum(n, 2)), 0).astype(np.int32)


def make_batch(split, rows, max_pages: int, width: int, pad_id: int, per_row: int, rng) -> dict:
  return {**split.batch(rows, max_pages, width, pad_id, per_row), "pick": picks(split.docs, rows, max_pages, rng)}


def evaluate(params, graphdef, lm, split, max_pages: int, width: int, pad_id: int, batch_size: int, seed: int,
             mesh) -> dict:
  """Reconstruction token accuracy, exact-chunk rate and CEs over held-out documents (one chunk
  each), beside the frozen LM's CE and token accuracy on the same chunks with no pages (the part
  of a chunk that its own words and the world's templates already predict), and the QA CE."""
  lm_graphdef, lm_state = nnx.split(lm)
  rng = np.random.default_rng([seed, 1])
  sums = np.zeros(9)
  count, n = 0, len(split.texts)
  for s in range(0, n, batch_size):
    rows = [(s + i) % n for i in range(batch_size)]
    real = np.arange(batch_size) < min(batch_size, n - s)
    batch = make_batch(split, rows, max_pages, width, pad_id, 1, rng)
    out = jax.device_get(eval_step(params, graphdef, lm_graphdef, lm_state, mesh_lib.shard_batch(batch, mesh)))
    sums += [float(np.sum(o[real])) for o in out]
    count += int(real.sum())
  ae, cont, tokens, hits, exact, qa, qa_tokens, none_ce, none_hits = sums
  return {"ae_ce": ae / tokens, "continuation_ce": cont / tokens, "token_accuracy": hits / tokens,
          "exact_chunk_rate": exact / count, "no_pages_ce": none_ce / tokens,
          "no_pages_token_accuracy": none_hits / tokens, "qa_ce": qa / max(qa_tokens, 1.0), "chunks": count}


FINGERPRINT_FIELDS = ("seed", "model", "data", "pages", "pager", "sufficiency", "prompts", "pretrain")


def run(config, workdir: Path, lm, tokenizer, store, eos_id: int, mesh) -> dict:
  """Pretrains (or resumes) the encoder; exports it to WORKDIR/encoder; returns the final evaluation."""
  p = config.pretrain
  if p.batch_size % mesh.size:
    raise ValueError(f"pretrain.batch_size={p.batch_size} must be a multiple of the {mesh.size} devices")
  max_pages = config.pages.max_pages or 8
  per_row = config.train.questions_per_row
  docs_for = lambda documents: pager_lib.Documents(config.pager.encoder, store, documents)
  evidence = p.get("chunks", "first") == "evidence"

  def split(recs, n, seed):
    recs = with_evidence(recs) if evidence else recs
    made = Split.of(recs, docs_for, tokenizer, config.prompts.pager, eos_id, n, config.data.abstain_answer)
    return cut_to_evidence(made, recs, n, max_pages, tokenizer, store.settings, seed) if evidence else made

  train_docs = split(records(config, "train", p.documents), per_row, p.seed)
  held_out = split(records(config, "validation", p.eval_documents), 1, p.seed + 1)
  width = max(train_docs.width(per_row), held_out.width(1))
  lm_graphdef, lm_state = nnx.split(lm)
  graphdef, params = nnx.split(pager_lib.build(PagerSpec.of(config), lm))
  if config.pager.init:
    params = load_into(params, load(repo_path(config.pager.init), config))
  placement = Placement.of(params, mesh)
  tx, schedule = adamw(p.learning_rate, p.warmup_steps, p.steps, p.weight_decay, p.clip_norm)
  fingerprint = checkpoint.fingerprint({k: to_dict(config)[k] for k in FINGERPRINT_FIELDS})
  root = jax.random.key(p.seed, impl="rbg")
  suff = float(config.sufficiency.loss_weight) if config.sufficiency.enabled else 0.0
  weights = (float(p.ae_weight), float(p.continuation_weight), float(p.qa_weight), suff)

  def step(state, s):
    # The batch of step s depends on (seed, s) only, so a resumed run repeats it.
    rng = np.random.default_rng([p.seed, s])
    rows = rng.integers(0, len(train_docs.texts), p.batch_size)
    batch = make_batch(train_docs, rows, max_pages, width, store.pad_id, per_row, rng)
    params, opt_state, loss, acc, gnorm = train_step(
        state["params"], state["opt_state"], lm_state, mesh_lib.shard_batch(batch, mesh),
        jax.random.fold_in(root, s), graphdef=graphdef, lm_graphdef=lm_graphdef, tx=tx, weights=weights,
        placement=placement)
    return {"params": params, "opt_state": opt_state}, {"loss": loss, "acc": acc, "grad_norm": gnorm}

  def held_out_record(state, done, window):
    mean = lambda key: float(np.mean([w[key] for w in window])) if window else None  # step 0: none yet
    return {"step": done, "loss": mean("loss"), "token_accuracy_train": mean("acc"),
            "lr": float(schedule(max(done - 1, 0))),
            **{f"val_{k}": v for k, v in evaluate(state["params"], graphdef, lm, held_out, max_pages, width,
                                                   store.pad_id, p.batch_size, p.seed, mesh).items()}}

  loop = train_lib.Loop(step, p.steps, held_out_record, eval_every=p.eval_every, name="pretrain",
                        log_name="pretrain_log", folder="pretrain_checkpoints", shown=("loss", "acc"),
                        eval_at_start=bool(config.pager.init))
  params, opt_state = placement.put(params, tx.init(params))
  state = {"params": params, "opt_state": opt_state}
  result = train_lib.fit(loop, state, workdir, fingerprint)
  if jax.process_index() == 0:
    export(nnx.merge(graphdef, result.state["params"]), config, Path(workdir) / "encoder", result.history)
  return {"history": result.history, "finished": True}


def pretrained_state(model) -> dict:
  """{path: array} of the pretrained parts of a PagerModel."""
  flat = nnx.to_flat_state(nnx.state(model, nnx.Param))
  return {path: np.asarray(v.get_value()) for path, v in flat if path[0] in PRETRAINED}


def export(model, config, folder: Path, history: list[dict]) -> Path:
  """The encoder as a folder: `encoder.safetensors` (names are the parameter paths; metadata: a
  hash of the LM's files it was trained on), the exact config (`config.json`) and the
  pretraining log (`history.json`)."""
  folder.mkdir(parents=True, exist_ok=True)
  tensors = {"/".join(map(str, path)): np.ascontiguousarray(v) for path, v in pretrained_state(model).items()}
  save_file(tensors, str(folder / "encoder.safetensors"),
            metadata={"lm_fingerprint": pages.model_fingerprint(repo_path(config.model.path))})
  (folder / "config.json").write_text(json.dumps(to_dict(config), indent=1, sort_keys=True) + "\n")
  (folder / "history.json").write_text(json.dumps(history, indent=1) + "\n")
  return folder


# What fixes any encoder's meaning beyond its parameter shapes (which `train.load_into` checks);
# each encoder adds its own (`encoders.Kind.fields`).
COMMON_FIELDS = ("pager.encoder", "pager.depth", "pager.decoder_lora_rank")
# An encoder made without a bridge may start a pager with one: LoRA's B starts at zero, so the
# bridged LM answers exactly as the frozen one did at the start of fine-tuning.
GROWS_FROM_ZERO = ("pager.decoder_lora_rank",)


def load(folder, config) -> dict:
  """{path: array} of an exported encoder, after checking it was built for this pager's shape."""
  folder = Path(folder)
  path = folder / "encoder.safetensors"
  if not path.is_file():
    raise FileNotFoundError(f"{path}: no exported encoder (run configs/latent_pager.py:pretrain first)")
  with safe_open(str(path), framework="numpy") as f:
    lm_key = (f.metadata() or {}).get("lm_fingerprint")
  if lm_key != pages.model_fingerprint(repo_path(config.model.path)):
    raise ValueError(f"{folder}: the encoder was trained on another LM than {config.model.path}")
  made, ours = json.loads((folder / "config.json").read_text()), to_dict(config)
  for field in COMMON_FIELDS + encoders.get(config.pager.encoder).fields:
    section, name = field.split(".")
    a, b = ours[section].get(name), made[section].get(name)
    if isinstance(a, (list, tuple)):
      a, b = list(a), list(b or [])
    if a != b and not (field in GROWS_FROM_ZERO and not b):
      raise ValueError(f"{folder}: encoder made with {field}={b!r}, this config has {a!r}")
  return {tuple(int(p) if p.isdigit() else p for p in name.split("/")): value
          for name, value in load_file(str(path)).items()}
