"""summary.json of a latent-pager comparison (latent-pager.md; abstention and sufficiency, the
headline, the bar, the claims); `reporting.py` writes report.md from it, `plots.py` the plots.

Systems: the latent pager, the text buffer and, where the document fits the LM's window, the
full-context reference. Each answered every validation and test question and gave a confidence
(the pager's sufficiency head; the text systems' answer log-probability). Thresholds are chosen on
validation (`selective.choose_threshold`); below its threshold a system abstains. Figures:

- answer metrics (F1, ROUGE-L, exact match, both hallucination measures, length, containment) on
  the answerable questions, per task type, with the gated answers (as the system would answer);
  the raw answers' F1 beside;
- abstain precision and recall on the unanswerable questions; the grounded hallucination rate over
  all questions (an abstention states nothing);
- risk-coverage curves and AURC (loss 1 - F1 against the gold answer, the abstain string for an
  unanswerable question; and grounded hallucination) for every system with a confidence;
- consistency on the probe pairs.

Differences are latent pager minus the other system, paired over the same questions, with 95%
bootstrap intervals (`eval.bootstrap` resamples); against the full context only on the questions
whose document fits. Claims are graded by `core.report.claim` on those intervals.

Wall-clock timings stay out of summary.json, so two runs of one config on one machine kind write
the same summary byte for byte (its receipt checks that): the latency ratio (text buffer / pager,
with its bootstrap interval) and the bar's latency part are written to timing.json beside the
per-question latencies they come from, and report.md shows them in the headline.

The bar's parts are the experiment's targets: summary.json "targets" holds the two answer parts,
report.md's targets section adds the latency part from timing.json. Peak memory is one measurement
per system (XLA's account of the compiled programs), shown beside the published figures and not
graded.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from jaxlab.core import report as report_lib
from jaxlab.core.stats import bootstrap_claim, describe, paired_bootstrap
from jaxlab.paging import encoders, metrics, published, selective

SYSTEMS = ("text_buffer", "latent_pager", "full_context")
LABELS = {"text_buffer": "text buffer", "latent_pager": "latent pager", "full_context": "full context"}
TASKS = ("all", "single_fact", "multi_hop")
ANSWER_METRICS = ("f1", "rouge_l", "exact_match", "hallucination", "hallucination_grounded", "answer_words",
                  "contains_gold")
NAMES = {"f1": "F1", "rouge_l": "ROUGE-L", "exact_match": "Exact match", "hallucination": "Hallucination (published)",
         "hallucination_grounded": "Hallucination (grounded, ours)", "answer_words": "Answer words",
         "contains_gold": "Contains gold", "consistency": "Consistency", "f1_raw": "F1 before abstaining"}


def _rows(path: Path) -> list[dict]:
  return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def load(workdir: Path):
  config = json.loads((workdir / "config.json").read_text())
  rows = _rows(workdir / "predictions.jsonl")
  val = _rows(workdir / "validation.jsonl")
  history = json.loads((workdir / "history.json").read_text())
  timing = json.loads((workdir / "timing.json").read_text())
  return config, rows, val, history, timing


def systems_in(rows) -> list[str]:
  return [s for s in SYSTEMS if s in rows[0]["answers"]]


def thresholds(val: list[dict], abstain: str, systems=None) -> dict:
  """Per system with a confidence (of `systems`, by default the comparison's): the threshold
  chosen on the validation questions (where it answered)."""
  out = {}
  for s in systems_in(val) if systems is None else systems:
    keep = [r for r in val if r["confidence"].get(s) is not None]
    if keep:
      out[s] = selective.choose_threshold([r["answers"][s] for r in keep], [r["confidence"][s] for r in keep],
                                          [r["gold_answer"] for r in keep], abstain)
  return out


def final_answers(rows, system: str, chosen: dict, abstain: str) -> list:
  """The gated answers of `system` (its raw answers when it has no threshold)."""
  answers = [r["answers"][system] for r in rows]
  if system not in chosen:
    return answers
  conf = [r["confidence"][system] for r in rows]
  return [a if a is None else (a if c >= chosen[system]["threshold"] else abstain) for a, c in zip(answers, conf)]


def scores(rows, answers: list, abstain: str) -> dict:
  """{metric: array over rows} (NaN where the system did not answer). An abstention states
  nothing, so neither hallucination measure counts it."""
  out = {m: np.full(len(rows), np.nan) for m in ANSWER_METRICS}
  for i, (r, a) in enumerate(zip(rows, answers)):
    if a is not None:
      for m, v in metrics.per_answer(a, r["gold_answer"], r["document"]).items():
        out[m][i] = 0.0 if m.startswith("hallucination") and a == abstain else v
  return out


def _interval(a, b, resamples: int, seed: int) -> dict | None:
  """Paired bootstrap of mean(a - b) over the units where both exist, as a claim interval."""
  ok = ~(np.isnan(a) | np.isnan(b))
  if ok.sum() == 0:
    return None
  out = paired_bootstrap(a[ok], b[ok], resamples, seed=seed)
  return {"diff": out["diff"], "ci": out["ci"] if ok.sum() > 1 else None, "n": out["n"], "p": out["p"]}


def _mean_ci(x, resamples: int, seed: int) -> dict | None:
  x = x[~np.isnan(x)]
  if not len(x):
    return None
  out = bootstrap_claim(lambda idx: x[idx].mean(axis=-1), len(x), resamples, seed)
  return {"mean": out["diff"], "ci": out["ci"], "n": out["n"]}


def summarize(config: dict, rows: list[dict], val: list[dict], history: list[dict], timing: dict) -> dict:
  ev, abstain = config["eval"], config["data"]["abstain_answer"]
  boots, seed = ev["bootstrap"], config["seed"]
  main = [r for r in rows if not r["probe"]]
  systems = systems_in(rows)
  chosen = thresholds(val, abstain)
  answerable = np.array([r.get("answerable", True) for r in main])
  task = np.array([r["task_type"] for r in main])
  final = {s: final_answers(main, s, chosen, abstain) for s in systems}
  sc = {s: scores(main, final[s], abstain) for s in systems}
  raw_f1 = {s: np.array([np.nan if r["answers"][s] is None else metrics.token_f1(r["answers"][s], r["gold_answer"])
                         for r in main]) for s in systems}
  figures, intervals = {}, {}
  for t in TASKS:
    sel = answerable & ((task == t) | (t == "all"))
    for s in systems:
      for m in ANSWER_METRICS:
        figures[f"{t}/{s}/{m}"] = describe(sc[s][m][sel & ~np.isnan(sc[s][m])])
      figures[f"{t}/{s}/f1_raw"] = describe(raw_f1[s][sel & ~np.isnan(raw_f1[s])])
    for m in ANSWER_METRICS:
      for other in systems:
        if other != "latent_pager" and sel.any():
          b = _interval(np.where(sel, sc["latent_pager"][m], np.nan), sc[other][m], boots, seed)
          if b:
            intervals[f"{t}/{m}/latent_pager-{other}"] = b
  # Over every question: grounded hallucination (an abstention states nothing) and abstentions.
  for s in systems:
    figures[f"every/{s}/hallucination_grounded"] = describe(sc[s]["hallucination_grounded"][~np.isnan(sc[s]["f1"])])
    said = [a for a, r in zip(final[s], main) if a is not None]
    ok = [r.get("answerable", True) for a, r in zip(final[s], main) if a is not None]
    figures[f"abstention/{s}"] = selective.abstention_scores(said, ok, abstain)
  for other in systems:
    if other != "latent_pager":
      intervals[f"every/hallucination_grounded/latent_pager-{other}"] = _interval(
          sc["latent_pager"]["hallucination_grounded"], sc[other]["hallucination_grounded"], boots, seed)
  # Risk-coverage over every question (raw answers, each system's confidence).
  curves = {}
  gold = [r["gold_answer"] for r in main]
  for s in systems:
    idx = [i for i, r in enumerate(main) if r["confidence"].get(s) is not None]
    if not idx:
      continue
    conf = np.array([main[i]["confidence"][s] for i in idx])
    loss = np.array([1.0 - metrics.token_f1(main[i]["answers"][s], gold[i]) for i in idx])
    halluc = np.array([0.0 if main[i]["answers"][s] == abstain else
                       metrics.hallucination_grounded(main[i]["answers"][s], main[i]["document"]) for i in idx])
    curves[s] = {"ids": idx, "confidence": conf, "error": loss, "hallucination": halluc}
    for kind, l in (("error", loss), ("hallucination", halluc)):
      rc = selective.risk_coverage(conf, l)
      figures[f"aurc/{s}/{kind}"] = {"mean": rc["aurc"], "sd": None, "n": len(idx)}
  for other in curves:
    if other != "latent_pager" and "latent_pager" in curves:
      common = sorted(set(curves["latent_pager"]["ids"]) & set(curves[other]["ids"]))
      for kind in ("error", "hallucination"):
        pick = lambda s: (np.array([curves[s]["confidence"][curves[s]["ids"].index(i)] for i in common]),
                          np.array([curves[s][kind][curves[s]["ids"].index(i)] for i in common]))
        (ca, la), (cb, lb) = pick("latent_pager"), pick(other)
        aurc = lambda c, l, idx: selective.risk_coverage(c[idx], l[idx])["aurc"]
        intervals[f"aurc/{kind}/latent_pager-{other}"] = bootstrap_claim(
            lambda idx: aurc(ca, la, idx) - aurc(cb, lb, idx), len(common), min(boots, 2_000), seed)
  # Consistency over probe pairs (raw answers).
  pairs = metrics.consistency_pairs(rows)
  cons = {s: np.array(metrics.consistency([r["answers"][s] or "" for r in rows], pairs)) for s in systems
          if s != "full_context"}
  for s, v in cons.items():
    figures[f"all/{s}/consistency"] = describe(v)
  if pairs and len(cons) > 1:
    intervals["all/consistency/latent_pager-text_buffer"] = _interval(cons["latent_pager"], cons["text_buffer"], boots,
                                                                      seed)
  for s in ("text_buffer", "latent_pager"):
    if "peak_bytes" in timing.get(s, {}):
      figures[f"all/{s}/peak_memory_gb"] = {"mean": timing[s]["peak_bytes"] / 1e9, "sd": None, "n": 1}
  comparisons = []
  for (t, m), (text, pager) in published.FIGURES.items():
    for s, value in zip(("text_buffer", "latent_pager"), (text, pager)):
      ours = figures.get(f"{t}/{s}/{m}")
      if ours and ours["mean"] is not None and ours["n"] > 1:   # one measurement is shown, not graded
        comparisons.append(report_lib.compare(f"{t}/{s}/{m}", (value, None), ours))
  summary = {"experiment": config["experiment"], "variant": config.get("variant"), "figures": figures,
             "intervals": intervals, "thresholds": chosen, "comparisons": comparisons, "training": history,
             "risk_coverage": {s: {k: selective.risk_coverage(c["confidence"], c[k])
                                   for k in ("error", "hallucination")} for s, c in curves.items()}}
  summary["claims"] = claims(summary, main, sc, boots, seed)
  summary["headline"] = headline(config, summary, sc, answerable, boots, seed)
  summary["bar"] = bar(summary["headline"])
  summary["targets"] = targets(summary["headline"], summary["bar"])
  return summary


def latency_ratio(timing: dict, resamples: int, seed: int, key: str = "latency_s") -> dict | None:
  """Text-buffer over pager mean seconds (wall, or CPU with key="cpu_s") on the timed questions,
  with a paired bootstrap interval."""
  if key not in timing.get("latent_pager", {}) or key not in timing.get("text_buffer", {}):
    return None
  a, b = np.array(timing["text_buffer"][key]), np.array(timing["latent_pager"][key])
  out = bootstrap_claim(lambda idx: a[idx].mean(axis=-1) / b[idx].mean(axis=-1), len(a), resamples, seed)
  return {"mean": out["diff"], "ci": out["ci"], "n": out["n"]}


def headline(config, summary, sc, answerable, resamples, seed) -> dict:
  f, iv, p = summary["figures"], summary["intervals"], config["pager"]
  pick = lambda s, m, sel: _mean_ci(np.where(sel, sc[s][m], np.nan), resamples, seed)
  every = np.ones_like(answerable)
  return {
      "pager_encoder": p["encoder"],
      "slots_per_chunk": None if encoders.get(p["encoder"]).stored_states else p["slots_per_chunk"],
      "pager_f1": pick("latent_pager", "f1", answerable),
      "text_buffer_f1": pick("text_buffer", "f1", answerable),
      "pager_minus_text_buffer_f1": iv.get("all/f1/latent_pager-text_buffer"),
      "pager_grounded_hallucination": pick("latent_pager", "hallucination_grounded", every),
      "text_buffer_grounded_hallucination": pick("text_buffer", "hallucination_grounded", every),
      "pager_minus_text_buffer_grounded_hallucination": iv.get("every/hallucination_grounded/latent_pager-text_buffer"),
      "pager_aurc": _aurc(f, iv, "latent_pager"),
      "text_buffer_aurc": _aurc(f, iv, "text_buffer"),
      "pager_minus_text_buffer_aurc": iv.get("aurc/error/latent_pager-text_buffer"),
  }


def _aurc(figures, intervals, system):
  stat = figures.get(f"aurc/{system}/error")
  return None if stat is None else {"mean": stat["mean"], "n": stat["n"], "loss": "1 - F1"}


BAR_SPEEDUP = 2.55  # the published latency ratio


def bar(h: dict) -> dict:
  """The bar's answer parts: F1 not worse (the interval of pager - text reaches 0 or above) and no
  more invention (the interval of the hallucination difference reaches 0 or below). Its third
  part, >= 2.55x lower latency, is a wall-clock figure: `latency_bar`, in timing.json."""
  f1, hal = h["pager_minus_text_buffer_f1"], h["pager_minus_text_buffer_grounded_hallucination"]
  return {"f1": None if not f1 else bool(f1["ci"][1] >= 0),
          "hallucination": None if not hal else bool(hal["ci"][0] <= 0)}


def latency_bar(ratio: dict | None) -> bool | None:
  return None if not ratio else bool(ratio["mean"] >= BAR_SPEEDUP)


def targets(h: dict, b: dict) -> list[dict]:
  """The bar's answer parts as targets (from the summary's own intervals; `latency_target` is the
  third part, from timing.json)."""
  ours = lambda key: "n/a" if not h.get(key) else diff_text({key: h[key]}, key)
  return [
      report_lib.target("F1 not below the text buffer's",
                        "the 95% interval of pager - text buffer F1 (answerable questions) reaches 0 or above",
                        b["f1"], ours("pager_minus_text_buffer_f1")),
      report_lib.target("no more invention than the text buffer",
                        "the 95% interval of pager - text buffer grounded hallucination (every question) reaches 0 "
                        "or below", b["hallucination"], ours("pager_minus_text_buffer_grounded_hallucination"))]


def claims(summary, main, sc, resamples: int, seed: int) -> list[dict]:
  f, iv = summary["figures"], summary["intervals"]
  m = lambda key: f[key]["mean"]
  ours = lambda metric: f"pager {m(f'all/latent_pager/{metric}'):.4f} vs text {m(f'all/text_buffer/{metric}'):.4f}"
  history = summary["training"]
  best_f1 = max(history, key=lambda h: (h["val_f1"], -h["step"]))
  best_loss = min(history, key=lambda h: h["val_loss"])
  flip = lambda i: None if i is None else {**i, "diff": -i["diff"], "ci": None if i["ci"] is None else
                                           [-i["ci"][1], -i["ci"][0]]}
  out = [
      report_lib.claim("The latent pager has a higher F1 than the text buffer", "+0.0075, p < 0.001",
                       ours("f1"), iv.get("all/f1/latent_pager-text_buffer")),
      report_lib.claim("The latent pager has a higher ROUGE-L", "+0.0083, p < 0.001",
                       ours("rouge_l"), iv.get("all/rouge_l/latent_pager-text_buffer")),
      report_lib.claim("The latent pager hallucinates more (published heuristic)", "+0.288, p < 0.001",
                       ours("hallucination"),
                       iv.get("all/hallucination/latent_pager-text_buffer")),
      report_lib.claim("The text buffer's answers are longer (a token-F1 precision effect)",
                       " vs ".join(published.FIGURES[("all", "answer_words")]) + " words",
                       f"{m('all/text_buffer/answer_words'):.1f} vs {m('all/latent_pager/answer_words'):.1f} words",
                       flip(iv.get("all/answer_words/latent_pager-text_buffer"))),
      report_lib.claim("Best checkpoint by validation F1 differs from best by validation loss", "epoch 2 vs epoch 3",
                       f"step {best_f1['step']} vs step {best_loss['step']}"),
  ]
  task = np.array([r["task_type"] for r in main])
  ok = np.array([r.get("answerable", True) for r in main])
  gain = sc["latent_pager"]["f1"] - sc["text_buffer"]["f1"]
  single, multi = np.flatnonzero(ok & (task == "single_fact")), np.flatnonzero(ok & (task == "multi_hop"))
  if len(single) > 1 and len(multi) > 1:
    gs, gm = gain[single], gain[multi]
    units = np.concatenate([gs, gm])
    is_single = np.arange(units.size) < gs.size        # each group resampled within itself
    def margin(idx):
      s, mh = units[idx[..., is_single]].mean(-1), units[idx[..., ~is_single]].mean(-1)
      return np.minimum(s, s - mh)
    interval = bootstrap_claim(margin, units.size, resamples, seed, strata=is_single)
    out.append(report_lib.claim("The pager gains F1 on single fact, and more than on multi hop", "+0.0108 vs +0.0040",
                                f"{gs.mean():+.4f} vs {gm.mean():+.4f}", interval))
  return out


# ----------------------------------------------------------------------------- text
def _cell(figures, key, digits=4):
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
