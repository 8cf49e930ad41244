"""What the pager's model is and how it is fine-tuned, as typed values read from a run's config
once: `PagerSpec.of(config)` is all the model, its encoders and their registry see (frozen and
hashable: it can key a compiled program; a registered encoder builds itself from these fields);
`TrainSpec.of(config)` is all the QA fine-tuning loop and its optimizer see."""

from __future__ import annotations

import dataclasses


def training_seed(config) -> int:
  """The pager's training seed: `train.seed`, or the run's `seed` when it is -1 (the default: one
  seed then fixes the data and the training)."""
  s = config.train.get("seed", -1)
  return config.seed if s < 0 else s


@dataclasses.dataclass(frozen=True)
class PagerSpec:
  encoder: str                    # a registered page encoder (`encoders.get`)
  hidden_layers: tuple[int, ...]  # the LM layers whose states the pages read
  chunk_tokens: int               # tokens per chunk (the encoders' position table)
  slots_per_chunk: int            # pages per chunk (every encoder but `pooled`)
  encoder_depth: int              # decoder layers of a slot encoder
  lora_rank: int                  # an encoder's own LoRA adapters on the frozen LM (`icae`)
  decoder_lora_rank: int          # the answering LM's bridge: 0 = none
  compressor_hidden: int          # `pooled`: the published compressor's width
  d_page: int                     # `pooled`: the page width
  num_soft_tokens: int            # the aggregator's queries (`depth` > 0, or `pooled`)
  depth: int                      # aggregator layers over the pages; 0 = every page is a soft token
  heads: int
  ffn: int
  dropout: float
  sufficiency: bool               # the sufficiency head
  sufficiency_hidden: int
  seed: int                       # initialises the fresh parts (`training_seed`)
  tree_fanout: int = 0            # pages of pages (`tree.PageTree`): children per node; 0 = no tree
  tree_depth: int = 0             # the tree's levels above the chunks
  given_pages: bool = False       # the chunks' pages arrive made (a frozen encoder's): no encoder is built

  @classmethod
  def of(cls, config) -> PagerSpec:
    p = config.pager
    return cls(encoder=p.encoder, hidden_layers=tuple(config.pages.hidden_layers),
               chunk_tokens=config.pages.chunk_tokens, slots_per_chunk=p.slots_per_chunk,
               encoder_depth=p.encoder_depth, lora_rank=p.lora_rank, decoder_lora_rank=p.decoder_lora_rank,
               compressor_hidden=p.compressor_hidden, d_page=p.d_page, num_soft_tokens=p.num_soft_tokens,
               depth=p.depth, heads=p.heads, ffn=p.ffn, dropout=p.dropout,
               sufficiency=bool(config.sufficiency.enabled), sufficiency_hidden=config.sufficiency.hidden,
               seed=training_seed(config), tree_fanout=p.get("tree_fanout", 0), tree_depth=p.get("tree_depth", 0),
               given_pages=p.get("given_pages", False))


KEEP = ("val_f1", "last")   # the best validation F1 (ties: the earlier step), or the last step


def keep_rule(train) -> str:
  """`train.keep` of a config's `train` section (a ConfigDict or its dict), "val_f1" where unset."""
  return train.get("keep", "val_f1")


def kept(history: list[dict], keep: str = "val_f1") -> dict:
  """The evaluation record of the state a run answers with under `keep` (`KEEP`)."""
  if keep == "last":
    return max(history, key=lambda r: r["step"])
  return max(history, key=lambda r: (r["val_f1"], -r["step"]))


@dataclasses.dataclass(frozen=True)
class TrainSpec:
  """The QA fine-tuning's settings (`train.*`), shared by the pager and the text buffer's bridge."""
  epochs: int
  steps: int                      # > 0 replaces epochs x the rows per epoch
  batch_size: int                 # rows per step
  questions_per_row: int
  eval_every: int                 # 0: after each epoch
  learning_rate: float
  warmup_steps: int
  weight_decay: float
  clip_norm: float
  seed: int                       # row order and dropout (`training_seed`)
  keep: str = "val_f1"            # the state a run answers with (`KEEP`)

  @classmethod
  def of(cls, config) -> TrainSpec:
    t = config.train
    return cls(epochs=t.epochs, steps=t.steps, batch_size=t.batch_size, questions_per_row=t.questions_per_row,
               eval_every=t.eval_every, learning_rate=t.learning_rate, warmup_steps=t.warmup_steps,
               weight_decay=t.weight_decay, clip_norm=t.clip_norm, seed=training_seed(config),
               keep=keep_rule(t))
