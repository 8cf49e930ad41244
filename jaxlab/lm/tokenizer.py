"""The tokenizer of a Hugging Face checkpoint folder (`tokenizer.json`), through `tokenizers`,
with the left-padded batches that `jaxlab.lm.generate` takes."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from tokenizers import Tokenizer


def load_tokenizer(folder: str | Path) -> Tokenizer:
  path = Path(folder) / "tokenizer.json"
  if not path.is_file():
    raise ValueError(f"{path}: no such file")
  return Tokenizer.from_file(str(path))


def encode_batch(tokenizer: Tokenizer, texts: list[str], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
  """Token ids (B, T) int32, left padded with `pad_id`, and the (B, T) bool mask of real tokens.

  Left padding puts every row's last real token at the end, where generation continues."""
  rows = [enc.ids for enc in tokenizer.encode_batch(texts)]
  width = max(map(len, rows))
  ids = np.full((len(rows), width), pad_id, np.int32)
  mask = np.zeros((len(rows), width), bool)
  for i, row in enumerate(rows):
    if row:
      ids[i, -len(row):], mask[i, -len(row):] = row, True
  return ids, mask


def decode_batch(tokenizer: Tokenizer, tokens: np.ndarray, eos_id: int | Sequence[int]) -> list[str]:
  """Generated tokens (B, N) -> text, each row cut before its first EOS (one id or several)."""
  eos = {eos_id} if isinstance(eos_id, int) else set(eos_id)
  out = []
  for row in np.asarray(tokens).tolist():
    end = next((i for i, t in enumerate(row) if t in eos), len(row))
    out.append(tokenizer.decode(row[:end]))
  return out
