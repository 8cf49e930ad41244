"""The experiments' own targets in their receipts, and single measurements shown, not graded: on
hand-made summaries, in seconds."""

import json

import numpy as np
import pytest

from jaxlab.core import report
from jaxlab.developmental import analysis as dev
from jaxlab.paging import bar as pager, claims as pager_claims, reporting as pager_report
from jaxlab.paging import seeds, selective


def test_target_rows_and_section():
  rows = [report.target("a", "a >= 1", np.bool_(True), "1.2"), report.target("b", "b >= 1", False, "0.5"),
          report.target("c", "c >= 1", None, "n/a")]
  assert rows[0] == {"target": "a", "text": "a >= 1", "ours": "1.2", "met": True}
  assert type(rows[0]["met"]) is bool and json.loads(json.dumps(rows)) == rows
  heading, text = report.targets_section(rows, "A note.")
  assert heading == "Targets"
  assert text.startswith("1 of 3 targets met (1 cannot be judged in this run). A note.")
  assert "| a | a >= 1 | 1.2 | met |" in text and "| b | b >= 1 | 0.5 | not met |" in text
  assert "| c | c >= 1 | n/a | n/a |" in text
  assert report.targets_section(rows[:2])[1].startswith("1 of 2 targets met.\n\n")


# ----------------------------------------------------------------------------- developmental
def _auc(*means):
  return {k: {"mean": m, "ci": [m - 0.01, min(1.0, m + 0.01)], "n": 10}
          for k, m in zip(("floor", "hover", "glass", "stack"), means)}


def _steps(steps, budget=16_384, reached=1.0):
  return {"steps": steps, "ci": [steps, None], "n": 10, "reached": reached, "budget": budget}


def _headline(regimes, budget=16_384):
  return {"random_final_error": 0.44, "budget": budget, "regimes": regimes}


def test_developmental_targets_from_the_headline():
  head = _headline({
      "curiosity": {"probe_auc": _auc(1.0, 1.0, 0.87, 0.71), "steps_to_random_final": _steps(None, reached=0.01)},
      "progress": {"probe_auc": _auc(1.0, 1.0, 0.91, 0.68), "steps_to_random_final": _steps(8_192.0)},
      "random": {"probe_auc": _auc(1.0, 1.0, 0.96, 0.57), "steps_to_random_final": _steps(16_384.0)},
  })
  auc, fast = dev.targets(head)
  assert auc["met"] is False and fast["met"] is False        # 8,192 steps is half the budget, not a quarter
  assert "curiosity: 2 of 4 probes (lowest: stack 0.71)" in auc["ours"]
  assert "not curious, for reference: random: 3 of 4 probes" in auc["ours"]
  assert "curiosity: not within the budget (1% of resamples reach it)" in fast["ours"]
  assert "progress: 8,192 steps (0.50 of the budget)" in fast["ours"] and "4,096 of 16,384" in fast["text"]
  # One curious regime meeting each target is enough; the quarter is inclusive.
  head["regimes"]["progress"] = {"probe_auc": _auc(1.0, 0.99, 0.95, 0.97), "steps_to_random_final": _steps(4_096.0)}
  auc, fast = dev.targets(head)
  assert auc["met"] is True and fast["met"] is True
  # A non-curious regime meeting them does not count.
  head = _headline({"curiosity": {"probe_auc": _auc(1.0, 0.5, 0.5, 0.5), "steps_to_random_final": _steps(None)},
                    "random": {"probe_auc": _auc(1.0, 1.0, 1.0, 1.0), "steps_to_random_final": _steps(1.0)}})
  assert [t["met"] for t in dev.targets(head)] == [False, False]


def test_developmental_targets_that_cannot_be_judged():
  # No random regime: nothing sets the error to reach.
  head = _headline({"curiosity": {"probe_auc": _auc(1.0, 1.0, 1.0), "steps_to_random_final": None}})
  auc, fast = dev.targets(head)
  assert auc["met"] is True and "3 of 3 probes" in auc["ours"]      # every probe that ran
  assert fast["met"] is None and fast["ours"] == "no random regime ran"
  # No curious regime: neither target is about this run.
  head = _headline({"random": {"probe_auc": _auc(1.0, 1.0), "steps_to_random_final": _steps(16_384.0)}})
  assert [t["met"] for t in dev.targets(head)] == [None, None]
  text = report.targets_section(dev.targets(head))[1]
  assert text.startswith("0 of 2 targets met (2 cannot be judged in this run).")


# ----------------------------------------------------------------------------- latent pager
def _interval(diff, lo, hi, n=400):
  return {"diff": diff, "ci": [lo, hi], "n": n, "p": 0.5}


DECLARED = {"f1_margin": 0.02, "coverage": 0.8, "hallucination_margin": 0.01, "speedup": 2.55}


def _pager_headline(f1, hal, at80=None):
  return {"pager_minus_text_buffer_f1_ungated": f1, "pager_minus_text_buffer_f1_at_80": f1 if at80 is None else at80,
          "pager_minus_text_buffer_hallucination": hal}


def test_pager_targets_are_the_declared_non_inferiority_margins():
  # F1 within the margin below 0 and hallucination within the margin above 0: non-inferior, not superior.
  h = _pager_headline(_interval(-0.001, -0.019, 0.045), _interval(0.002, -0.010, 0.009, 500))
  b = pager.bar(h, DECLARED)
  rows = pager.targets(h, b, DECLARED, {})
  assert [r["met"] for r in rows[:3]] == [True, True, True] == [b["f1_ungated"], b["f1_at_80"], b["hallucination"]]
  assert b["superior"] == {"f1_ungated": False, "f1_at_80": False, "hallucination": False}
  assert rows[0]["ours"] == "-0.0010 [-0.0190, +0.0450]" and "at or above -0.02" in rows[0]["text"]
  assert "at or below +0.01" in rows[2]["text"]
  # A zero margin used to pass whenever the interval reached 0; the declared margin does not move with it.
  h = _pager_headline(_interval(-0.011, -0.068, 0.045), _interval(0.010, -0.010, 0.030, 500))
  assert [r["met"] for r in pager.targets(h, pager.bar(h, DECLARED), DECLARED, {})[:3]] == [False, False, False]
  h = _pager_headline(_interval(0.05, 0.01, 0.09), _interval(-0.02, -0.03, -0.01, 500))
  assert pager.bar(h, DECLARED)["superior"] == {"f1_ungated": True, "f1_at_80": True, "hallucination": True}
  h = _pager_headline(None, None)
  rows = pager.targets(h, pager.bar(h, DECLARED), DECLARED, {})
  assert [r["met"] for r in rows] == [None, None, None, None] and rows[0]["ours"] == "n/a"
  assert "-0.02" in pager.declared_text(DECLARED) and "2.55x" in pager.declared_text(DECLARED)


def test_pager_detection_goal_needs_both_intervals_on_its_side():
  h = _pager_headline(None, None)
  text_buffer = {"precision": 0.25, "recall": 0.9}
  fig = lambda p, r: {"abstention/latent_pager": {"precision": p, "recall": r}, "abstention/text_buffer": text_buffer}
  iv = lambda p, r: {"abstention/latent_pager/precision": _interval(p[0], *p[1:]),
                     "abstention/latent_pager/recall": _interval(r[0], *r[1:]),
                     "abstention/text_buffer/precision": _interval(0.25, 0.2, 0.3),
                     "abstention/text_buffer/recall": _interval(0.9, 0.85, 0.95)}
  goal = lambda p, r: pager.targets(h, pager.bar(h, DECLARED), DECLARED, fig(p[0], r[0]), iv(p, r))[-1]
  assert goal((0.7, 0.6, 0.8), (0.6, 0.5, 0.7))["met"] is True
  assert goal((0.62, 0.59, 0.65), (0.7, 0.65, 0.75))["met"] is False        # precision's interval reaches below 0.6
  assert "not resolved" in goal((0.62, 0.59, 0.65), (0.7, 0.65, 0.75))["ours"]
  assert goal((0.59, 0.55, 0.63), (0.9, 0.85, 0.95))["met"] is False
  assert "not resolved" not in goal((0.59, 0.55, 0.63), (0.9, 0.85, 0.95))["ours"]
  assert goal((0.9, 0.85, 0.95), (0.49, 0.45, 0.53))["met"] is False
  assert "0.620 [0.590, 0.650]" in goal((0.62, 0.59, 0.65), (0.7, 0.65, 0.75))["ours"]
  verdicts = [pager.detection_verdict(goal(p, r)) for p, r in (((0.7, 0.6, 0.8), (0.6, 0.5, 0.7)),
              ((0.62, 0.59, 0.65), (0.7, 0.65, 0.75)), ((0.59, 0.55, 0.63), (0.9, 0.85, 0.95)))]
  assert verdicts == ["met", "not resolved", "not met"]
  # Without intervals (no abstention to resample) the goal is not met, whatever the point estimates.
  assert pager.targets(h, pager.bar(h, DECLARED), DECLARED, fig(0.9, 0.9))[-1]["met"] is False


def test_abstention_ratios_are_precision_and_recall_over_the_drawn_questions():
  said = np.array([1, 1, 0, 1, 0, 0], bool)
  unans = np.array([1, 0, 1, 1, 0, 0], bool)
  r = selective.abstention_ratios(said, unans)
  every = np.arange(6)
  assert r["precision"](every) == pytest.approx(2 / 3) and r["recall"](every) == pytest.approx(2 / 3)
  assert r["precision"](np.array([0, 0, 1])) == pytest.approx(2 / 3)
  assert r["precision"](np.array([[2, 4], [0, 3]])).tolist() == [0.0, 1.0]   # a resample without abstentions: 0
  # Over seeds: (seeds, questions) flags, seeds and questions drawn together and pooled.
  two = selective.abstention_ratios(np.stack([said, ~said]), unans)
  assert two["recall"](np.arange(2), every) == pytest.approx(3 / 6)
  assert two["precision"](np.array([[1, 1]]), np.array([[2, 5]])).tolist() == [0.5]


def test_pager_latency_target_is_in_the_report_only():
  ratio = {"mean": 2.61, "ci": [2.5, 2.7], "n": 50}
  row = pager_report.latency_target(ratio, 2.55)
  assert row["met"] is True and row["ours"] == "2.61 [2.50, 2.70]x (timing.json)"
  assert pager_report.latency_target({**ratio, "mean": 2.4}, 2.55)["met"] is False
  assert pager_report.latency_target(None, 2.55)["met"] is None
  h = _pager_headline(_interval(-0.001, -0.019, 0.045), _interval(0.002, -0.010, 0.009, 500))
  summary = {"targets": pager.targets(h, pager.bar(h, DECLARED), DECLARED, {})[:3]}
  heading, text = pager_report.targets_section(summary, {"latency_ratio": ratio}, 2.55)
  assert heading == "Targets" and text.startswith("4 of 4 targets met.")
  assert "lower latency" in text and "timing.json" in text and len(summary["targets"]) == 3
  assert "latency" not in json.dumps(summary)             # summary.json holds no wall-clock figure
  assert pager_report.targets_section(summary, {}, 2.55)[1].startswith("3 of 4 targets met (1 cannot be judged")


def test_seed_study_targets_are_the_bar_over_seeds():
  units = 10
  rng = np.random.default_rng(0)
  text_f1 = np.linspace(0.2, 0.7, units)
  h = _pager_headline(_interval(0.0, -0.1, 0.1), _interval(0.0, -0.1, 0.1))
  runs = {s: {"ids": list(range(units)), "answerable": np.arange(units) < 8, "text_answers": ["x"] * units,
              "f1": {"text_buffer": text_f1, "latent_pager": text_f1 + 0.01 * s},
              "hallucination": {"text_buffer": np.zeros(units), "latent_pager": np.zeros(units)},
              "confidence": {"text_buffer": rng.random(units), "latent_pager": rng.random(units)},
              "abstained": {"text_buffer": np.arange(units) % 2 == 0, "latent_pager": np.arange(units) >= 8 - s},
              "history": [{"step": 0, "val_f1": 0.3}],
              "summary": {"headline": h, "bar": pager.bar(h, DECLARED)}}
          for s in (0, 1)}
  config = {"experiment": "latent_pager", "variant": "seeds", "seed": 0, "eval": {"bootstrap": 200}, "bar": DECLARED}
  summary = seeds.summarize(config, runs)
  over = summary["bar"]["over_seeds"]
  assert [t["met"] for t in summary["targets"]] == [over["f1_ungated"], over["f1_at_80"], over["hallucination"]]
  assert summary["intervals"]["over_seeds/f1_ungated/latent_pager-text_buffer"]["diff"] > 0
  # Detection over seeds: abstentions pooled over both seeds (seed 0: the 2 unanswerable questions;
  # seed 1: those and one answerable), judged on the nested intervals, outside the bar's targets.
  iv = summary["intervals"]
  assert iv["over_seeds/abstention/latent_pager/precision"]["diff"] == pytest.approx(4 / 5)
  assert iv["over_seeds/abstention/latent_pager/recall"]["diff"] == 1.0
  assert iv["over_seeds/abstention/text_buffer/precision"]["diff"] == pytest.approx(1 / 5)
  assert summary["detection"]["target"] == "a system detects missing answers"
  assert summary["detection"]["met"] is (iv["over_seeds/abstention/latent_pager/precision"]["ci"][0] >= 0.6)
  assert "latent pager precision 0.800 [" in summary["detection"]["ours"]
  assert "latency" not in json.dumps(summary)


def _claims_inputs(peak=True):
  f = {f"all/{s}/{m}": {"mean": v, "sd": None, "n": 2} for s, v in (("latent_pager", 0.4), ("text_buffer", 0.5))
       for m in ("f1", "rouge_l", "hallucination", "answer_words")}
  if peak:
    f.update({"all/latent_pager/peak_memory_gb": {"mean": 0.21, "sd": None, "n": 1},
              "all/text_buffer/peak_memory_gb": {"mean": 0.12, "sd": None, "n": 1}})
  summary = {"figures": f, "intervals": {}, "training": [{"step": 0, "val_f1": 0.2, "val_loss": 2.0},
                                                         {"step": 100, "val_f1": 0.3, "val_loss": 2.1}]}
  main = [{"task_type": "single_fact", "answerable": True}, {"task_type": "multi_hop", "answerable": True}]
  sc = {s: {"f1": np.array([0.4, 0.5])} for s in ("latent_pager", "text_buffer")}
  return summary, main, sc


def test_peak_memory_is_shown_as_one_measurement_not_graded():
  summary, main, sc = _claims_inputs()
  rows = pager_claims.claims(summary, main, sc, 100, 0)
  assert not any("memory" in r["claim"] for r in rows)
  # No claim is graded on an interval made from one measurement.
  for r in rows:
    iv = r["interval"]
    assert iv is None or iv["ci"] is None or iv["n"] > 1, r["claim"]
  note = pager_report.memory_note(summary["figures"])
  assert note.startswith("Not graded") and "1.82 GB vs 1.02 GB" in note and "0.2100 GB vs 0.1200 GB" in note
  assert "one measurement per system" in note and "no interval" in note
  assert pager_report.memory_note(_claims_inputs(peak=False)[0]["figures"]) == ""
