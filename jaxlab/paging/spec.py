"""What the pager's model is, as one typed value: `PagerSpec.of(config)` reads it from a run's
config once, and the model, its encoders and their registry see only this (frozen and hashable:
it can key a compiled program). A registered encoder builds itself from these fields."""

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

  @classmethod
  def of(cls, config) -> PagerSpec:
    p = config.pager
    return cls(encoder=p.encoder, hidden_layers=tuple(config.pages.hidden_layers),
               chunk_tokens=config.pages.chunk_tokens, slots_per_chunk=p.slots_per_chunk,
               encoder_depth=p.encoder_depth, lora_rank=p.lora_rank, decoder_lora_rank=p.decoder_lora_rank,
               compressor_hidden=p.compressor_hidden, d_page=p.d_page, num_soft_tokens=p.num_soft_tokens,
               depth=p.depth, heads=p.heads, ffn=p.ffn, dropout=p.dropout,
               sufficiency=bool(config.sufficiency.enabled), sufficiency_hidden=config.sufficiency.hidden,
               seed=training_seed(config))
