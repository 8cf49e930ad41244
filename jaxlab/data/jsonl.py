"""Local JSONL files in the published long-document QA schema.

One JSON object per line with string fields id, document, question, gold_answer and task_type
("single_fact" | "multi_hop"); extra fields (evidence positions, ...) are kept as they are. A bad
line raises ValueError naming `file:line`, so a hand-made or converted set fails where it is wrong.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from jaxlab.data.documents import TASK_TYPES

REQUIRED = ("id", "document", "question", "gold_answer", "task_type")


def _check(record, where: str, seen: set) -> dict:
  if not isinstance(record, dict):
    raise ValueError(f"{where}: expected a JSON object, got {type(record).__name__}")
  for key in REQUIRED:
    if key not in record:
      raise ValueError(f"{where}: missing field {key!r}")
    if not isinstance(record[key], str):
      raise ValueError(f"{where}: field {key!r} must be a string, got {type(record[key]).__name__}")
  if record["task_type"] not in TASK_TYPES:
    raise ValueError(f"{where}: task_type must be one of {TASK_TYPES}, got {record['task_type']!r}")
  if record["id"] in seen:
    raise ValueError(f"{where}: duplicate id {record['id']!r}")
  seen.add(record["id"])
  return record


def read_jsonl(path: str | Path) -> list[dict]:
  """All records of `path`; blank lines are skipped."""
  records, seen = [], set()
  with open(path, encoding="utf-8") as f:
    for lineno, line in enumerate(f, start=1):
      if not line.strip():
        continue
      where = f"{path}:{lineno}"
      try:
        record = json.loads(line)
      except json.JSONDecodeError as e:
        raise ValueError(f"{where}: invalid JSON ({e.msg})") from None
      records.append(_check(record, where, seen))
  return records


def write_jsonl(records: Iterable[dict], path: str | Path) -> None:
  """Write records (e.g. from `long_doc_qa.generate_qa`) one per line, for tools outside jaxlab."""
  with open(path, "w", encoding="utf-8") as f:
    for record in records:
      f.write(json.dumps(record, ensure_ascii=False) + "\n")
