"""TFDS builder of the synthetic long-document QA set and its pretraining corpus.

Written as array_record, so neither building nor reading needs TensorFlow:

  builder = build(LongDocQAConfig(name="tiny", num_train=8, ...), data_dir)   # or config="default"
  source = builder.as_data_source()["test"]          # random access, NumPy/bytes values
  record = decode_example(source[0])

Configs: "default" (documents of 1k-64k words, random horizon, distractor ratio 0.5, splits
2,000 / 300 / 500 as in the latent-pager note), the context-rot grid "rot_d{ratio}_h{horizon}" (ratio and
horizon in percent), and "pretrain": short windows for the base model, as documents, questions whose
evidence lies inside the window, and chunk-to-key-facts extraction examples. Every example is generated
from its own Generator seeded by (seed, split, index), so a record never depends on build order.

`question_wording="held_out"` renders the validation and test questions with the held-out templates
(`lexicon.HELD_OUT_*_QUESTIONS`) and changes nothing else: the same documents, answers, ids and
unanswerable schedule as the default wording, so a reader can be scored on questions worded unlike
any it trained on. The train split never uses it.

`train_wordings=k` (k > 1) renders each train-split question in one of the first k training wordings
(`lexicon.TRAINING_WORDINGS`), drawn per question, and changes nothing else either. Only the train
split varies: validation and test keep `question_wording`. In the "pretrain" corpus of the base model
it words the questions of each "qa" and "fact_qa" window so (the same windows, questions and answers).
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import tensorflow_datasets as tfds

from jaxlab.data import documents as D
from jaxlab.data import lexicon as lx
from jaxlab.data import world as W

KINDS = ("document", "qa", "extract", "fact_qa")
PRETRAIN_KINDS = KINDS[:3]  # the TFDS `pretrain` corpus


@dataclasses.dataclass
class LongDocQAConfig(tfds.core.BuilderConfig):
  """Knobs of one variant. `horizon=None` draws a horizon per example, uniformly in [0, 1]."""

  corpus: str = "qa"  # "qa" | "pretrain"
  min_tokens: int = 1_000
  max_tokens: int = 64_000
  distractor_ratio: float = 0.5
  horizon: float | None = None
  multi_hop_fraction: float = 0.48  # the note's test set: 260 single fact, 240 multi hop
  chunk_tokens: int = 1024
  chunk_overlap: int = 128  # stored with the data for readers that chunk; evidence rules use chunk_tokens
  window_tokens: int = 256  # pretrain only: words per example window (the most)
  min_window_tokens: int = 0  # pretrain only: the fewest words per window (0: window_tokens)
  questions_per_window: int = 1  # pretrain only: questions asked about each qa / fact_qa window
  num_train: int = 2_000
  num_validation: int = 300
  num_test: int = 500
  seed: int = 0
  unanswerable_fraction: float = 0.0  # share of questions the document cannot answer (gold: abstain_answer)
  abstain_answer: str = "unknown"
  questions_per_document: int = 1  # train split only: more questions on each training document
  question_wording: str = "train"  # "train" | "held_out": the templates of validation and test questions
  train_wordings: int = 1  # train split only: questions drawn from the first k of lexicon.TRAINING_WORDINGS


def _grid_configs() -> list[LongDocQAConfig]:
  return [LongDocQAConfig(name=f"rot_d{int(d * 100):03d}_h{int(h * 100):03d}", distractor_ratio=d, horizon=h,
              description=f"context-rot cell: distractor ratio {d}, horizon {h}")
      for d in (0.0, 0.25, 0.5, 0.75, 1.0) for h in (0.0, 0.25, 0.5, 0.75, 1.0)]


def _wording(cfg: LongDocQAConfig, split: str) -> str:
  """The question wording of `split`: training questions read as the canonical training templates
  (`_train_wording` may word them otherwise)."""
  return "train" if split == "train" else cfg.question_wording


def _train_wording(cfg: LongDocQAConfig, split: str, i: int, k: int) -> str:
  """The wording of question k of document i: on the train split with `train_wordings` > 1, one of
  the first `train_wordings` training wordings, uniformly, from a Generator of its own (so no other
  draw moves); otherwise `_wording`."""
  if split != "train" or cfg.train_wordings == 1:
    return _wording(cfg, split)
  if not 1 <= cfg.train_wordings <= len(lx.TRAINING_WORDINGS):
    raise ValueError(f"train_wordings must lie in [1, {len(lx.TRAINING_WORDINGS)}], got {cfg.train_wordings}")
  rng = np.random.default_rng([cfg.seed, W.SPLITS.index(split), i, 3, k])
  return lx.TRAINING_WORDINGS[int(rng.integers(cfg.train_wordings))]


def _sample_spec(rng: np.random.Generator, cfg: LongDocQAConfig, split: str) -> D.DocSpec:
  task = "multi_hop" if rng.random() < cfg.multi_hop_fraction else "single_fact"
  lo = max(cfg.min_tokens, D.min_tokens_for(task, cfg.chunk_tokens))
  if lo > cfg.max_tokens:
    raise ValueError(f"max_tokens={cfg.max_tokens} is below the {lo} words multi-hop needs "
             f"with chunk_tokens={cfg.chunk_tokens}")
  # Log-uniform lengths: as many 1k-2k documents as 32k-64k ones, so short contexts are not starved.
  n = int(round(np.exp(rng.uniform(np.log(lo), np.log(cfg.max_tokens)))))
  horizon = float(rng.uniform()) if cfg.horizon is None else cfg.horizon
  return D.DocSpec(split=split, num_tokens=n, task_type=task, distractor_ratio=cfg.distractor_ratio,
           horizon=horizon, chunk_tokens=cfg.chunk_tokens, question_wording=_wording(cfg, split))


def _unanswerable(cfg: LongDocQAConfig, j: int) -> bool:
  """Question j of a split is unanswerable on an exact schedule: the first n questions hold
  round(n * fraction) of them, up to rounding."""
  f = cfg.unanswerable_fraction
  return int((j + 1) * f) > int(j * f)


def generate_qa(cfg: LongDocQAConfig, split: str, num: int):
  """Yield QA records of `split` (plain dicts in the published schema plus evidence fields and
  `answerable`): `num` documents, each with one question (`questions_per_document` on train).

  Document i and its own question come from the Generator seeded (seed, split, i), exactly as
  without the abstention and extra-question knobs; an unanswerable question (about an entity or
  relation the document does not contain; gold answer `abstain_answer`, no evidence) replaces a
  question on the schedule of `unanswerable_fraction`, drawn from its own Generator, and extra
  training questions (other stated facts and chains, `documents.question_pool`, with their evidence
  where each hop's fact is stated once: `documents.pool_evidence`) from another. The
  question wording draws nothing, so it changes only the `question` field; a varied training
  wording (`train_wordings`) is drawn per question from a Generator of its own, and the questions
  are chosen in the canonical wording before it words them."""
  per_doc = cfg.questions_per_document if split == "train" else 1
  j = 0
  for i in range(num):
    rng = np.random.default_rng([cfg.seed, W.SPLITS.index(split), i])
    doc = D.make_document(rng, _sample_spec(rng, cfg, split), f"{split}-{i:06d}")
    wordings = [_train_wording(cfg, split, i, k) for k in range(per_doc)]
    own = D.question_text(doc.evidence[0].subject, [f.relation for f in doc.evidence], wordings[0])
    record = {**doc.record, "question": own, "answerable": True}
    questions = [record]
    if per_doc > 1:  # chosen in the canonical wording (the train split's documents are worded so)
      extra = np.random.default_rng([cfg.seed, W.SPLITS.index(split), i, 2])
      keep = [n for n, q in enumerate(D.question_pool(doc)) if q[0] != doc.record["question"]]
      pools = {w: D.question_pool(doc, w) for w in dict.fromkeys(wordings)}
      evidence = D.pool_evidence(doc)
      for k, n in enumerate(extra.permutation(len(keep))[:per_doc - 1]):
        q, a, task = pools[wordings[k + 1]][keep[n]]
        questions.append({**record, "id": f"{record['id']}-{k + 1}", "question": q, "gold_answer": a,
                          "task_type": task, **evidence[keep[n]]})
    for k, r in enumerate(questions):
      if _unanswerable(cfg, j):
        urng = np.random.default_rng([cfg.seed, W.SPLITS.index(split), i, 1, k])
        u = D.unanswerable_question(urng, doc, split, r["task_type"], wordings[k])
        r = {**r, "question": u["question"], "gold_answer": cfg.abstain_answer, "answerable": False, **_NO_EVIDENCE}
      j += 1
      yield r


_NO_EVIDENCE = {"evidence": [], **{f"evidence_{k}": [] for k in ("word_start", "word_end", "char_start", "char_end")}}


def generate_pretrain(cfg: LongDocQAConfig, split: str, num: int, kinds: tuple[str, ...] = PRETRAIN_KINDS):
  """Yield pretraining examples {id, kind, context, question, target}; example i has kind
  `kinds[i % len(kinds)]` (repeat a kind to weight it).

  Windows are whole short documents of `min_window_tokens` to `window_tokens` words, so a question's
  evidence is always inside its window. "qa" asks `questions_per_window` questions about the window
  (its own question first; questions and answers joined by newlines); "fact_qa" asks them about the
  window's key facts instead of its prose; "extract" targets every fact of the window in its fixed
  canonical form, in reading order (the key facts)."""
  if not set(kinds) <= set(KINDS):
    raise ValueError(f"kinds must be a subset of {KINDS}, got {kinds}")
  lo = cfg.min_window_tokens or cfg.window_tokens
  for i in range(num):
    rng = np.random.default_rng([cfg.seed, W.SPLITS.index(split), i])
    kind = kinds[i % len(kinds)]
    words = int(rng.integers(lo, cfg.window_tokens + 1)) if lo < cfg.window_tokens else cfg.window_tokens
    spec = D.DocSpec(split=split, num_tokens=words,
             task_type="multi_hop" if rng.random() < cfg.multi_hop_fraction else "single_fact",
             distractor_ratio=cfg.distractor_ratio, horizon=float(rng.uniform()), chunk_tokens=0)
    doc = D.make_document(rng, spec, f"{split}-{i:06d}")
    facts = " ".join(W.canonical_fact(f) for f in D.stated_facts(doc.passages))
    ex = {"id": doc.record["id"], "kind": kind, "context": doc.record["document"], "question": "", "target": ""}
    if kind in ("qa", "fact_qa"):
      wordings = [_train_wording(cfg, split, i, k) for k in range(cfg.questions_per_window)]
      pairs = D.window_questions(rng, doc, cfg.questions_per_window,
                                 None if set(wordings) == {"train"} else wordings)
      ex.update(question="\n".join(q for q, _ in pairs), target="\n".join(a for _, a in pairs))
      if kind == "fact_qa":
        ex["context"] = facts
    elif kind == "extract":
      ex["target"] = facts
    yield ex


class _QuietCustomConfig(logging.Filter):
  """TFDS warns, with the whole config, for every config outside BUILDER_CONFIGS; an experiment's
  sets are all such configs (made from its own config, named by their hash), so the warning is
  noise in every run's log. Only that message is dropped."""

  def filter(self, record: logging.LogRecord) -> bool:
    return not (record.getMessage().startswith("Using custom data configuration: ")
                and isinstance(record.args, tuple) and record.args and isinstance(record.args[0], LongDocQAConfig))


logging.getLogger("absl").addFilter(_QuietCustomConfig())


class _MadeHere(tfds.core.DatasetInfo):
  """The set's DatasetInfo. The set is made on this machine, never found on TFDS's bucket, where the
  base class looks for an unprepared set's info (nothing, with GCS off as by default) after making a
  temporary folder it never removes: one empty folder per builder."""

  def initialize_from_bucket(self) -> None:
    return None


class LongDocQA(tfds.core.GeneratorBasedBuilder):
  """Synthetic long-document QA (single fact and two-hop) with distractors and a horizon knob."""

  name = "long_doc_qa"
  VERSION = tfds.core.Version("1.2.0")
  RELEASE_NOTES = {"1.0.0": "Procedural world, single-fact and two-hop questions, pretraining corpus.",
                   "1.1.0": "Unanswerable questions and several questions per training document (knobs, off by "
                            "default); the `answerable` field.",
                   "1.2.0": "Extra training questions carry their evidence where each hop's fact is stated once."}
  BUILDER_CONFIGS = [LongDocQAConfig(name="default", description="1k-64k words, random horizon"),
            *_grid_configs(),
            LongDocQAConfig(name="pretrain", corpus="pretrain", description="base-model corpus",
                    num_train=60_000, num_validation=1_500, num_test=1_500)]
  DEFAULT_CONFIG_NAME = "default"

  def __init__(self, **kwargs):
    kwargs.setdefault("file_format", "array_record")  # random access without TensorFlow
    super().__init__(**kwargs)

  def _info(self) -> tfds.core.DatasetInfo:
    text, ints = tfds.features.Text(), tfds.features.Tensor(shape=(None,), dtype=np.int32)
    if self.builder_config.corpus == "pretrain":
      features = {k: text for k in ("id", "kind", "context", "question", "target")}
    else:
      features = {k: text for k in ("id", "document", "question", "gold_answer", "task_type")}
      features.update({f"evidence_{k}": ints for k in ("word_start", "word_end", "char_start", "char_end")})
      features.update(evidence=tfds.features.Sequence(text), answerable=tfds.features.Tensor(shape=(), dtype=np.bool_),
              num_tokens=tfds.features.Tensor(shape=(), dtype=np.int32),
              horizon=tfds.features.Tensor(shape=(), dtype=np.float32),
              distractor_ratio=tfds.features.Tensor(shape=(), dtype=np.float32))
    # `dataset_info_from_configs` with our DatasetInfo class: its description and citation files, if any.
    metadata = self.get_metadata()
    found = {k: getattr(metadata, k) for k in ("description", "citation") if getattr(metadata, k)}
    return _MadeHere(builder=self, features=tfds.features.FeaturesDict(features), **found)

  def _split_generators(self, dl_manager):
    del dl_manager  # generated offline: nothing to download
    cfg = self.builder_config
    return {split: self._generate_examples(split, n)
        for split, n in zip(W.SPLITS, (cfg.num_train, cfg.num_validation, cfg.num_test))}

  def _generate_examples(self, split: str, num: int):
    cfg = self.builder_config
    gen = generate_pretrain if cfg.corpus == "pretrain" else generate_qa
    for ex in gen(cfg, split, num):
      yield ex["id"], ex


def build(config: str | LongDocQAConfig = "default", data_dir: str | None = None) -> LongDocQA:
  """Generate and write the set (a no-op when already built); never touches the network."""
  builder = LongDocQA(config=config, data_dir=data_dir)
  builder.download_and_prepare(download_config=tfds.download.DownloadConfig(try_download_gcs=False))
  return builder


def decode_example(example: dict) -> dict:
  """Bytes to str and arrays to lists, giving back the plain records that `generate_qa` yields."""
  def dec(v):
    if isinstance(v, bytes):
      return v.decode("utf-8")
    if isinstance(v, np.ndarray):
      return [dec(x) for x in v.tolist()] if v.ndim else v.item()
    if isinstance(v, (list, tuple)):
      return [dec(x) for x in v]
    return v.item() if isinstance(v, np.generic) else v
  return {k: dec(v) for k, v in example.items()}
