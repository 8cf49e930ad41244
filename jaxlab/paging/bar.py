"""The headline of a comparison (answer quality first: before abstaining, at matched coverage, AURC;
then hallucination as served; gated F1 last), the bar declared in the config (non-inferiority at
its margins, superiority beside, and the latency part) and the targets report.md states."""

from __future__ import annotations

import numpy as np

from jaxlab.core import report as report_lib
from jaxlab.paging import encoders
from jaxlab.paging.figures import LABELS, coverage_key, diff_text, mean_ci, num

def headline(config, summary, per_question, answerable, resamples, seed) -> dict:
  """Answer quality first (before abstaining; at matched coverage; AURC), then hallucination as
  served, then gated F1 (answer quality and abstention together) last."""
  f, iv, p = summary["figures"], summary["intervals"], config["pager"]
  every = np.ones_like(answerable)
  pick = lambda s, values, sel: mean_ci(np.where(sel, values[s], np.nan), resamples, seed)
  h = {"pager_encoder": p["encoder"],
       "slots_per_chunk": None if encoders.get(p["encoder"]).stored_states else p["slots_per_chunk"],
       "threshold_rule": config["eval"]["threshold_rule"]}
  for s, name in (("latent_pager", "pager"), ("text_buffer", "text_buffer")):
    h[f"{name}_f1_ungated"] = pick(s, per_question["f1_raw"], answerable)
  h["pager_minus_text_buffer_f1_ungated"] = iv.get("all/f1_raw/latent_pager-text_buffer")
  for c in config["eval"]["coverages"]:
    key = coverage_key(c)
    for s, name in (("latent_pager", "pager"), ("text_buffer", "text_buffer")):
      h[f"{name}_{key}"] = f.get(f"coverage/{key}/{s}")
    h[f"pager_minus_text_buffer_{key}"] = iv.get(f"coverage/{key}/latent_pager-text_buffer")
  h["pager_aurc"], h["text_buffer_aurc"] = f.get("aurc/latent_pager/error"), f.get("aurc/text_buffer/error")
  h["pager_minus_text_buffer_aurc"] = iv.get("aurc/error/latent_pager-text_buffer")
  for s, name in (("latent_pager", "pager"), ("text_buffer", "text_buffer")):
    h[f"{name}_hallucination"] = pick(s, per_question["hallucination"], every)
  h["pager_minus_text_buffer_hallucination"] = iv.get("every/hallucination/latent_pager-text_buffer")
  for s, name in (("latent_pager", "pager"), ("text_buffer", "text_buffer")):
    h[f"{name}_f1_gated"] = pick(s, {k: v["f1"] for k, v in per_question["f1"].items()}, answerable)
  h["pager_minus_text_buffer_f1_gated"] = iv.get("all/f1/latent_pager-text_buffer")
  if "held_out/all/latent_pager/f1_raw" in f:   # reported beside: the same questions, reworded
    h["pager_f1_ungated_held_out"] = f["held_out/all/latent_pager/f1_raw"]
    h["text_buffer_f1_ungated_held_out"] = f.get("held_out/all/text_buffer/f1_raw")
    h["pager_minus_text_buffer_f1_ungated_held_out"] = iv.get("held_out/all/f1_raw/latent_pager-text_buffer")
    h["pager_held_out_minus_original_f1_ungated"] = iv.get("held_out/all/f1_raw/latent_pager_held_out-latent_pager")
  return h


def bar_parts(declared: dict) -> list[tuple[str, str, str, float]]:
  """(part, headline key, what it measures, non-inferiority margin) of the declared bar; F1 parts
  are higher-is-better, hallucination lower-is-better."""
  key = coverage_key(declared["coverage"])
  return [("f1_ungated", "pager_minus_text_buffer_f1_ungated", "F1 before abstaining (answerable questions)",
           declared["f1_margin"]),
          (key, f"pager_minus_text_buffer_{key}",
           f"F1 at {declared['coverage']:.0%} coverage (every question, each system's most confident)",
           declared["f1_margin"]),
          ("hallucination", "pager_minus_text_buffer_hallucination",
           "hallucination as served (every question)", declared["hallucination_margin"])]


def bar(h: dict, declared: dict) -> dict:
  """The declared bar's answer parts: non-inferiority (the interval of pager - text buffer stays
  above -margin for F1, below +margin for hallucination) and, reported beside, superiority (the
  interval clears 0). The latency part (>= `declared["speedup"]`x at one question per document)
  is a wall-clock figure: `latency_bar`, in timing.json."""
  out, superior = {}, {}
  for part, key, _, margin in bar_parts(declared):
    iv = h.get(key)
    if not iv or iv.get("ci") is None:
      out[part] = superior[part] = None
      continue
    lo, hi = iv["ci"]
    higher_is_better = part != "hallucination"
    out[part] = bool(lo >= -margin) if higher_is_better else bool(hi <= margin)
    superior[part] = bool(lo > 0) if higher_is_better else bool(hi < 0)
  reworded = h.get(WORDING_KEY)
  if reworded and reworded.get("ci") is not None:
    out["wording"] = bool(reworded["ci"][0] >= -declared["wording_margin"])
  return {**out, "superior": superior}


WORDING_KEY = "pager_held_out_minus_original_f1_ungated"


def latency_bar(ratio: dict | None, speedup: float) -> bool | None:
  return None if not ratio else bool(ratio["mean"] >= speedup)


def declared_text(declared: dict) -> str:
  """The bar as declared in the config, printed before any result."""
  parts = "; ".join(f"{what}: pager - text buffer {'>=' if part != 'hallucination' else '<='} "
                    f"{'-' if part != 'hallucination' else '+'}{margin:g} at the 95% interval's "
                    f"{'lower' if part != 'hallucination' else 'upper'} end"
                    for part, _, what, margin in bar_parts(declared))
  return (f"The bar (non-inferiority; superiority reported beside): {parts}; latency: text buffer / pager "
          f">= {declared['speedup']:g}x at one question per document.")


DETECTION_GOAL = (0.6, 0.5)   # abstain precision (3x the 20% base rate) at abstain recall, for the best system
POINTS_ONLY = "at the goal on point estimates only, an interval reaching below it: not resolved"


def targets(h: dict, b: dict, declared: dict, figures: dict, intervals: dict | None = None) -> list[dict]:
  """The bar's answer parts as targets, and the unanswerable-detection goal (from the summary;
  `latency_target` adds the latency part from timing.json). The goal is met when a system's
  intervals of abstain precision and recall (`intervals`, over the questions) both lie on the
  goal's side; point estimates at the goal with an interval across it are not resolved."""
  out = []
  for part, key, what, margin in bar_parts(declared):
    worse = part == "hallucination"
    out.append(report_lib.target(
        f"{what}: pager non-inferior to the text buffer (margin {margin:g})",
        f"the 95% interval of pager - text buffer {'stays at or below +' if worse else 'stays at or above -'}"
        f"{margin:g}", b[part], "n/a" if not h.get(key) else diff_text({key: h[key]}, key)))
  if "wording" in b:
    margin = declared["wording_margin"]
    out.append(report_lib.target(
        f"held-out wordings cost the pager at most {margin:g} F1",
        f"the 95% interval of the pager's F1 before abstaining on reworded minus original questions stays at or "
        f"above -{margin:g}", b["wording"], diff_text({WORDING_KEY: h[WORDING_KEY]}, WORDING_KEY)))
  out.append(detection_target(figures, intervals or {}))
  return out


def detection_verdict(target: dict) -> str:
  """`detection_target`'s verdict in words: met, not resolved (at the goal on point estimates
  only), or not met."""
  return "met" if target["met"] else "not resolved" if POINTS_ONLY in target["ours"] else "not met"


def detection_target(figures: dict, intervals: dict, where: str = "abstention") -> dict:
  """The goal for detecting missing answers: a system's abstain precision and recall (as served),
  each interval's lower end at or above `DETECTION_GOAL`. `where`: the figures' and intervals'
  prefix (`abstention/<system>`; the seeds study's `over_seeds/abstention/<system>`)."""
  goal = dict(zip(("precision", "recall"), DETECTION_GOAL))
  shown, met, points = [], [], []
  for s in ("latent_pager", "text_buffer"):
    a = figures.get(f"{where}/{s}") or {}
    if not a:
      continue
    iv = {k: intervals.get(f"{where}/{s}/{k}") for k in goal}
    shown.append(f"{LABELS[s]} " + ", ".join(
        f"{k} {num(a.get(k))}" + (f" [{iv[k]['ci'][0]:.3f}, {iv[k]['ci'][1]:.3f}]" if iv[k] and iv[k]["ci"] else "")
        for k in goal))
    if all(iv[k] and iv[k]["ci"] and iv[k]["ci"][0] >= goal[k] for k in goal):
      met.append(s)
    elif all((a.get(k) or 0) >= goal[k] for k in goal):
      points.append(s)
  text = "; ".join(shown) or "n/a"
  if points and not met:
    text += f" ({POINTS_ONLY})"
  return report_lib.target(
      "a system detects missing answers", f"the 95% intervals of abstain precision and recall (as served) stay at "
      f"or above {goal['precision']} and {goal['recall']} for the pager or the text buffer",
      bool(met) if shown else None, text)
