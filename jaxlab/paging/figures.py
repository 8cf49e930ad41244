"""The names and small helpers every summary of a latent-pager run shares (summary.json's figures,
the headline and the bar, the claims, latency as served, the reports): the systems and their
labels, the task and metric names, the held-out wordings' file, a run's JSONL rows, the paired
interval and the mean with its interval that figures are made of, the key of F1 at a coverage, and
a figure's text."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from jaxlab.core.stats import bootstrap_claim, paired_bootstrap

SYSTEMS = ("text_buffer", "latent_pager", "full_context")
LABELS = {"text_buffer": "text buffer", "latent_pager": "latent pager", "full_context": "full context"}
TASKS = ("all", "single_fact", "multi_hop")
ANSWER_METRICS = ("f1", "rouge_l", "exact_match", "hallucination", "hallucination_grounded", "answer_words",
                  "contains_gold")
NAMES = {"f1": "F1", "rouge_l": "ROUGE-L", "exact_match": "Exact match", "hallucination": "Hallucination (published)",
         "hallucination_grounded": "Hallucination (grounded, ours)", "answer_words": "Answer words",
         "contains_gold": "Contains gold", "consistency": "Consistency", "f1_raw": "F1 before abstaining"}


HELD_OUT = "held_out.jsonl"   # the test documents with every question in a wording training never used


def read_rows(path: Path) -> list[dict]:
  return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def read_run(workdir: Path) -> tuple[dict, list[dict], list[dict]]:
  """A finished run's config, test answers and validation answers."""
  return (json.loads((workdir / "config.json").read_text()), read_rows(workdir / "predictions.jsonl"),
          read_rows(workdir / "validation.jsonl"))


def interval(a, b, resamples: int, seed: int) -> dict | None:
  """Paired bootstrap of mean(a - b) over the units where both exist, as a claim interval."""
  ok = ~(np.isnan(a) | np.isnan(b))
  if ok.sum() == 0:
    return None
  out = paired_bootstrap(a[ok], b[ok], resamples, seed=seed)
  return {"diff": out["diff"], "ci": out["ci"] if ok.sum() > 1 else None, "n": out["n"], "p": out["p"]}


def mean_ci(x, resamples: int, seed: int) -> dict | None:
  x = x[~np.isnan(x)]
  if not len(x):
    return None
  out = bootstrap_claim(lambda idx: x[idx].mean(axis=-1), len(x), resamples, seed)
  return {"mean": out["diff"], "ci": out["ci"], "n": out["n"]}


def coverage_key(c: float) -> str:
  return f"f1_at_{round(100 * c)}"


def num(x, digits=3):
  return "n/a" if x is None else f"{x:.{digits}f}"


def cell(figures, key, digits=4):
  stat = figures.get(key)
  return "n/a" if not stat or stat.get("mean") is None else f"{stat['mean']:.{digits}f}"


def diff_text(intervals, key, digits=4):
  b = intervals.get(key)
  if not b:
    return "n/a"
  ci = "" if b.get("ci") is None else f" [{b['ci'][0]:+.{digits}f}, {b['ci'][1]:+.{digits}f}]"
  return f"{b['diff']:+.{digits}f}{ci}"


def ci_text(stat, digits=4):
  if not stat:
    return "n/a"
  ci = "" if stat.get("ci") is None else f" [{stat['ci'][0]:.{digits}f}, {stat['ci'][1]:.{digits}f}]"
  return f"{stat['mean']:.{digits}f}{ci}"
