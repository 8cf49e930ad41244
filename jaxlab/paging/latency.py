"""Latency as served, from a run's timing.json (`timing.served`): per timed document each system's
ingestion, time per question, time to first token and end to end at Q questions per document, their
means with bootstrap intervals over the documents, and the ratio text buffer / pager (at Q = 1, the
bar's latency part)."""

from __future__ import annotations

import numpy as np

from jaxlab.core.stats import bootstrap_claim
from jaxlab.paging.figures import mean_ci

SERVED_FIGURES = ("ingest", "question", "ttft", "end_to_end")


def served_per_document(timing: dict, system: str, q: int, clock: str = "wall_s") -> dict | None:
  """One system's latency as served at q questions per document (`timing.served`), per timed
  document, its mean over the repeats: {"ingest": the document work, "question": the mean of its
  first q answers, "ttft": ingestion + the one-token answer, "end_to_end": (ingestion + the first
  q answers) / q} in seconds (wall, or CPU with clock="cpu_s"); None where timing.json holds no
  such measurement."""
  t = timing.get(system, {}).get(clock)
  if not isinstance(t, dict) or q not in timing.get("questions_per_document", ()):
    return None
  ingest, answers, first = (np.asarray(t[p], np.float64) for p in ("ingest", "answer", "first_token"))
  a = answers[..., :q]
  return {"ingest": ingest.mean(0), "question": a.mean(-1).mean(0), "ttft": (ingest + first).mean(0),
          "end_to_end": ((ingest + a.sum(-1)) / q).mean(0)}


def latency_ratio(timing: dict, resamples: int, seed: int, clock: str = "wall_s", q: int = 1) -> dict | None:
  """Text buffer over pager mean end-to-end seconds per question at q questions per document (wall,
  or CPU with clock="cpu_s"), with a bootstrap interval over the timed documents (a resampled
  document brings both systems' figures). At q = 1, the bar's latency part."""
  a, b = (served_per_document(timing, s, q, clock) for s in ("text_buffer", "latent_pager"))
  if a is None or b is None:
    return None
  a, b = a["end_to_end"], b["end_to_end"]
  out = bootstrap_claim(lambda idx: a[idx].mean(axis=-1) / b[idx].mean(axis=-1), len(a), resamples, seed)
  return {"mean": out["diff"], "ci": out["ci"], "n": out["n"]}


def served_latency(timing: dict, resamples: int, seed: int) -> dict:
  """{str(q): {system: {figure: {"mean", "ci", "n"}}, "ratio", "cpu_ratio"}} for every q of the
  timed workload ({} for a timing.json without one): each figure of `served_per_document` (and
  "cpu_end_to_end", the end to end in CPU seconds) as its mean over the timed documents with a
  bootstrap interval over them; the ratios as `latency_ratio`."""
  out = {}
  for q in timing.get("questions_per_document", ()):
    row = {}
    for s in ("latent_pager", "text_buffer"):
      wall, cpu = served_per_document(timing, s, q), served_per_document(timing, s, q, "cpu_s")
      if wall is not None:
        row[s] = {f: mean_ci(wall[f], resamples, seed) for f in SERVED_FIGURES}
        row[s]["cpu_end_to_end"] = None if cpu is None else mean_ci(cpu["end_to_end"], resamples, seed)
    row["ratio"] = latency_ratio(timing, resamples, seed, q=q)
    row["cpu_ratio"] = latency_ratio(timing, resamples, seed, "cpu_s", q)
    out[str(q)] = row
  return out
