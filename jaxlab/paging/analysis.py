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
the same summary byte for byte (its receipt checks that): the latency as served (`served_latency`:
per number of questions per document, each system's seconds and the ratio text buffer / pager,
with bootstrap intervals over the timed documents) and the bar's latency part (the ratio at one
question per document) are written to timing.json beside the seconds they come from, and report.md
shows them.

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
from jaxlab.core.config import from_dict
from jaxlab.paging import data, encoders, metrics, published, selective

SYSTEMS = ("text_buffer", "latent_pager", "full_context")
LABELS = {"text_buffer": "text buffer", "latent_pager": "latent pager", "full_context": "full context"}
TASKS = ("all", "single_fact", "multi_hop")
ANSWER_METRICS = ("f1", "rouge_l", "exact_match", "hallucination", "hallucination_grounded", "answer_words",
                  "contains_gold")
NAMES = {"f1": "F1", "rouge_l": "ROUGE-L", "exact_match": "Exact match", "hallucination": "Hallucination (published)",
         "hallucination_grounded": "Hallucination (grounded, ours)", "answer_words": "Answer words",
         "contains_gold": "Contains gold", "consistency": "Consistency", "f1_raw": "F1 before abstaining"}


HELD_OUT = "held_out.jsonl"   # the test documents with every question in a wording training never used


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


def thresholds(val: list[dict], config: dict, systems=None) -> dict:
  """Per system with a confidence (of `systems`, by default the comparison's): the threshold
  chosen on the validation questions (where it answered) by `eval.threshold_rule`."""
  ev, abstain, out = config["eval"], config["data"]["abstain_answer"], {}
  for s in systems_in(val) if systems is None else systems:
    keep = [r for r in val if r["confidence"].get(s) is not None]
    if keep:
      out[s] = selective.choose([r["answers"][s] for r in keep], [r["confidence"][s] for r in keep],
                                [r["gold_answer"] for r in keep], abstain, ev["threshold_rule"],
                                ev["target_coverage"])
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


def served(main: list[dict], final: dict, abstain: str) -> tuple[dict, dict]:
  """Each system's answers as served, by kind: ({system: {"answerable"|"unanswerable": {category:
  count}}}, {system: per-question hallucination, NaN where it did not answer})."""
  errors, halluc = {}, {}
  for s, answers in final.items():
    counts = {k: dict.fromkeys(metrics.CATEGORIES, 0) for k in ("answerable", "unanswerable")}
    h = np.full(len(main), np.nan)
    for i, (a, r) in enumerate(zip(answers, main)):
      if a is None:
        continue
      ok = bool(r.get("answerable", True))
      kind = metrics.category(a, r["gold_answer"], r["document"], abstain, ok)
      counts["answerable" if ok else "unanswerable"][kind] += 1
      h[i] = float(metrics.hallucinated(kind, ok))
    errors[s], halluc[s] = counts, h
  return errors, halluc


def coverage_key(c: float) -> str:
  return f"f1_at_{round(100 * c)}"


def raw_f1(rows: list[dict], systems) -> dict:
  """{system: F1 of its raw answer per row} (NaN where it did not answer)."""
  return {s: np.array([np.nan if r["answers"][s] is None else metrics.token_f1(r["answers"][s], r["gold_answer"])
                       for r in rows]) for s in systems}


def held_out_figures(config: dict, main: list[dict], held: list[dict], boots: int, seed: int) -> tuple[dict, dict]:
  """(figures, intervals) of the test questions reworded in held-out wordings (`held`, the same
  questions in the same order): each system's F1 before abstaining on answerable questions, per
  task; pager - text buffer; and each system's held-out minus its own original F1, paired."""
  if [r["id"] for r in held] != [r["id"] for r in main]:
    raise ValueError("the held-out wordings' questions are not the test questions in the same order")
  systems = systems_in(held)
  ok = np.array([r.get("answerable", True) for r in main])
  task = np.array([r["task_type"] for r in main])
  before, after = raw_f1(main, systems), raw_f1(held, systems)
  figures, intervals = {}, {}
  for t in TASKS:
    sel = ok & ((task == t) | (t == "all"))
    if not sel.any():
      continue
    for s in systems:
      figures[f"held_out/{t}/{s}/f1_raw"] = describe(after[s][sel & ~np.isnan(after[s])])
      b = _interval(np.where(sel, after[s], np.nan), before[s], boots, seed)
      if b:
        intervals[f"held_out/{t}/f1_raw/{s}_held_out-{s}"] = b
    for other in systems:
      if other != "latent_pager":
        b = _interval(np.where(sel, after["latent_pager"], np.nan), after[other], boots, seed)
        if b:
          intervals[f"held_out/{t}/f1_raw/latent_pager-{other}"] = b
  return figures, intervals


def summarize(config: dict, rows: list[dict], val: list[dict], history: list[dict], timing: dict,
              held: list[dict] | None = None) -> dict:
  """Every figure, interval, claim and the headline of one comparison; `held`: the test set's
  answers in held-out wordings (held_out.jsonl), reported beside."""
  ev, abstain = config["eval"], config["data"]["abstain_answer"]
  boots, seed = ev["bootstrap"], config["seed"]
  main = [r for r in rows if not r["probe"]]
  systems = systems_in(rows)
  chosen = thresholds(val, config)
  answerable = np.array([r.get("answerable", True) for r in main])
  task = np.array([r["task_type"] for r in main])
  final = {s: final_answers(main, s, chosen, abstain) for s in systems}
  sc = {s: scores(main, final[s], abstain) for s in systems}
  raw = raw_f1(main, systems)
  others = [s for s in systems if s != "latent_pager"]
  figures, intervals = {}, {}
  for t in TASKS:
    sel = answerable & ((task == t) | (t == "all"))
    for s in systems:
      for m in ANSWER_METRICS:
        figures[f"{t}/{s}/{m}"] = describe(sc[s][m][sel & ~np.isnan(sc[s][m])])
      figures[f"{t}/{s}/f1_raw"] = describe(raw[s][sel & ~np.isnan(raw[s])])
    for other in others:
      if not sel.any():
        continue
      for m in ANSWER_METRICS:
        b = _interval(np.where(sel, sc["latent_pager"][m], np.nan), sc[other][m], boots, seed)
        if b:
          intervals[f"{t}/{m}/latent_pager-{other}"] = b
      b = _interval(np.where(sel, raw["latent_pager"], np.nan), raw[other], boots, seed)
      if b:
        intervals[f"{t}/f1_raw/latent_pager-{other}"] = b
  # Over every question, as served: what each answer is, hallucination (new and grounded), abstentions.
  errors, halluc = served(main, final, abstain)
  for s in systems:
    figures[f"every/{s}/hallucination"] = describe(halluc[s][~np.isnan(halluc[s])])
    figures[f"every/{s}/hallucination_grounded"] = describe(sc[s]["hallucination_grounded"][~np.isnan(sc[s]["f1"])])
    said = [a for a, r in zip(final[s], main) if a is not None]
    ok = [r.get("answerable", True) for a, r in zip(final[s], main) if a is not None]
    figures[f"abstention/{s}"] = selective.abstention_scores(said, ok, abstain)
  for other in others:
    intervals[f"every/hallucination/latent_pager-{other}"] = _interval(halluc["latent_pager"], halluc[other], boots, seed)
    intervals[f"every/hallucination_grounded/latent_pager-{other}"] = _interval(
        sc["latent_pager"]["hallucination_grounded"], sc[other]["hallucination_grounded"], boots, seed)
  # Ranking by confidence over every question (raw answers): risk-coverage, AURC, F1 at matched
  # coverage, unanswerable detection.
  curves = {}
  for s in systems:
    idx = [i for i, r in enumerate(main) if r["confidence"].get(s) is not None]
    if not idx:
      continue
    conf = np.array([main[i]["confidence"][s] for i in idx])
    loss = np.array([1.0 - metrics.token_f1(main[i]["answers"][s], main[i]["gold_answer"]) for i in idx])
    hal = np.array([0.0 if main[i]["answers"][s] == abstain else
                    metrics.hallucination_grounded(main[i]["answers"][s], main[i]["document"]) for i in idx])
    curves[s] = {"ids": idx, "confidence": conf, "error": loss, "hallucination": hal, "answerable": answerable[idx]}
    for kind, l in (("error", loss), ("hallucination", hal)):
      out = bootstrap_claim(lambda i, l=l: selective.aurc(conf, l, i), len(idx), boots, seed)
      figures[f"aurc/{s}/{kind}"] = {"mean": out["diff"], "ci": out["ci"], "n": out["n"]}
    for c in ev["coverages"]:
      figures[f"coverage/{coverage_key(c)}/{s}"] = {"mean": float(selective.f1_at_coverage(conf, 1 - loss, c)),
                                                    "sd": None, "n": len(idx)}
    out = bootstrap_claim(lambda i: selective.auroc(conf, answerable[idx], i), len(idx), boots, seed)
    figures[f"unanswerable/{s}/auroc"] = {"mean": out["diff"], "ci": out["ci"], "n": out["n"]}
  for other in others:
    if other not in curves or "latent_pager" not in curves:
      continue
    common = sorted(set(curves["latent_pager"]["ids"]) & set(curves[other]["ids"]))
    pick = lambda s, key: curves[s][key][np.searchsorted(curves[s]["ids"], common)]
    (ca, cb) = pick("latent_pager", "confidence"), pick(other, "confidence")
    for kind in ("error", "hallucination"):
      la, lb = pick("latent_pager", kind), pick(other, kind)
      intervals[f"aurc/{kind}/latent_pager-{other}"] = bootstrap_claim(
          lambda i: selective.aurc(ca, la, i) - selective.aurc(cb, lb, i), len(common), boots, seed)
    ua, ub = 1 - pick("latent_pager", "error"), 1 - pick(other, "error")
    for c in ev["coverages"]:
      intervals[f"coverage/{coverage_key(c)}/latent_pager-{other}"] = bootstrap_claim(
          lambda i, c=c: selective.f1_at_coverage(ca, ua, c, i) - selective.f1_at_coverage(cb, ub, c, i),
          len(common), boots, seed)
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
  summary = {"experiment": config["experiment"], "variant": config.get("variant"),
             "test_world": data.test_world(from_dict(config)), "figures": figures,
             "intervals": intervals, "thresholds": chosen, "errors": errors, "comparisons": comparisons,
             "training": history,
             "risk_coverage": {s: {k: selective.risk_coverage(c["confidence"], c[k])
                                   for k in ("error", "hallucination")} for s, c in curves.items()}}
  if held:
    more = held_out_figures(config, main, [r for r in held if not r["probe"]], boots, seed)
    figures.update(more[0])
    intervals.update(more[1])
  summary["claims"] = claims(summary, main, sc, boots, seed)
  summary["headline"] = headline(config, summary, {"f1_raw": raw, "hallucination": halluc, "f1": sc},
                                 answerable, boots, seed)
  summary["bar"] = bar(summary["headline"], config["bar"])
  summary["targets"] = targets(summary["headline"], summary["bar"], config["bar"], summary["figures"])
  return summary


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
        row[s] = {f: _mean_ci(wall[f], resamples, seed) for f in SERVED_FIGURES}
        row[s]["cpu_end_to_end"] = None if cpu is None else _mean_ci(cpu["end_to_end"], resamples, seed)
    row["ratio"] = latency_ratio(timing, resamples, seed, q=q)
    row["cpu_ratio"] = latency_ratio(timing, resamples, seed, "cpu_s", q)
    out[str(q)] = row
  return out


def headline(config, summary, per_question, answerable, resamples, seed) -> dict:
  """Answer quality first (before abstaining; at matched coverage; AURC), then hallucination as
  served, then gated F1 (answer quality and abstention together) last."""
  f, iv, p = summary["figures"], summary["intervals"], config["pager"]
  every = np.ones_like(answerable)
  pick = lambda s, values, sel: _mean_ci(np.where(sel, values[s], np.nan), resamples, seed)
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


def targets(h: dict, b: dict, declared: dict, figures: dict) -> list[dict]:
  """The bar's answer parts as targets, and the unanswerable-detection goal (from the summary;
  `latency_target` adds the latency part from timing.json)."""
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
  precision, recall = DETECTION_GOAL
  ab = {s: figures.get(f"abstention/{s}") or {} for s in ("latent_pager", "text_buffer")}
  met = [s for s, a in ab.items() if (a.get("precision") or 0) >= precision and (a.get("recall") or 0) >= recall]
  shown = "; ".join(f"{LABELS[s]} precision {_num(a.get('precision'))}, recall {_num(a.get('recall'))}"
                    for s, a in ab.items() if a)
  out.append(report_lib.target(
      "a system detects missing answers", f"abstain precision >= {precision} at recall >= {recall} (as served) for "
      "the pager or the text buffer", bool(met) if ab["latent_pager"] else None, shown or "n/a"))
  return out


def _num(x, digits=3):
  return "n/a" if x is None else f"{x:.{digits}f}"


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
