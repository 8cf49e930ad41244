"""summary.json of a latent-pager comparison (latent-pager.md; abstention and sufficiency): every
figure and paired interval here, the headline, the bar and the targets from `bar.py`, the claims
from `claims.py`; `reporting.py` writes report.md from it, `plots.py` the plots.

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
from jaxlab.core.config import from_dict
from jaxlab.core.stats import bootstrap_claim, describe
from jaxlab.paging import bar as bar_lib, claims as claims_lib, data, metrics, published, selective
from jaxlab.paging.figures import ANSWER_METRICS, SYSTEMS, TASKS, coverage_key, interval, read_run


def load(workdir: Path):
  config, rows, val = read_run(workdir)
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
                                ev["target_coverage"], [not r.get("answerable", True) for r in keep],
                                ev.get("target_recall"))
  return out


def final_answers(rows, system: str, chosen: dict, abstain: str) -> list:
  """The gated answers of `system` (its raw answers when it has no threshold)."""
  answers = [r["answers"][system] for r in rows]
  if system not in chosen:
    return answers
  conf = [np.nan if a is None else r["confidence"][system] for a, r in zip(answers, rows)]
  served = selective.serves(conf, chosen[system]["threshold"])
  return [a if a is None else (a if ok else abstain) for a, ok in zip(answers, served)]


def scores(rows, answers: list, abstain: str) -> dict:
  """{metric: array over rows} (NaN where the system did not answer). An abstention states
  nothing, so neither hallucination measure counts it."""
  out = {m: np.full(len(rows), np.nan) for m in ANSWER_METRICS}
  for i, (r, a) in enumerate(zip(rows, answers)):
    if a is not None:
      for m, v in metrics.per_answer(a, r["gold_answer"], r["document"]).items():
        out[m][i] = 0.0 if m.startswith("hallucination") and a == abstain else v
  return out


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
      b = interval(np.where(sel, after[s], np.nan), before[s], boots, seed)
      if b:
        intervals[f"held_out/{t}/f1_raw/{s}_held_out-{s}"] = b
    for other in systems:
      if other != "latent_pager":
        b = interval(np.where(sel, after["latent_pager"], np.nan), after[other], boots, seed)
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
        b = interval(np.where(sel, sc["latent_pager"][m], np.nan), sc[other][m], boots, seed)
        if b:
          intervals[f"{t}/{m}/latent_pager-{other}"] = b
      b = interval(np.where(sel, raw["latent_pager"], np.nan), raw[other], boots, seed)
      if b:
        intervals[f"{t}/f1_raw/latent_pager-{other}"] = b
  # Over every question, as served: what each answer is, hallucination (new and grounded), abstentions.
  errors, halluc = served(main, final, abstain)
  for s in systems:
    figures[f"every/{s}/hallucination"] = describe(halluc[s][~np.isnan(halluc[s])])
    figures[f"every/{s}/hallucination_grounded"] = describe(sc[s]["hallucination_grounded"][~np.isnan(sc[s]["f1"])])
    said = [a for a, r in zip(final[s], main) if a is not None]
    ok = [r.get("answerable", True) for a, r in zip(final[s], main) if a is not None]
    flags = selective.abstained(said, abstain)
    figures[f"abstention/{s}"] = selective.abstention_scores(flags, ok)
    if figures[f"abstention/{s}"]["abstained"]:   # the detection goal is graded on these intervals
      ratios = selective.abstention_ratios(flags, ~np.asarray(ok, bool))
      for k, fn in ratios.items():
        intervals[f"abstention/{s}/{k}"] = bootstrap_claim(fn, len(said), boots, seed)
  for other in others:
    intervals[f"every/hallucination/latent_pager-{other}"] = interval(
        halluc["latent_pager"], halluc[other], boots, seed)
    intervals[f"every/hallucination_grounded/latent_pager-{other}"] = interval(
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
    intervals["all/consistency/latent_pager-text_buffer"] = interval(cons["latent_pager"], cons["text_buffer"], boots,
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
             "test_world": data.test_world(data.DataSpec.of(from_dict(config))), "figures": figures,
             "intervals": intervals, "thresholds": chosen, "errors": errors, "comparisons": comparisons,
             "training": history,
             "risk_coverage": {s: {k: selective.risk_coverage(c["confidence"], c[k])
                                   for k in ("error", "hallucination")} for s, c in curves.items()}}
  if held:
    more = held_out_figures(config, main, [r for r in held if not r["probe"]], boots, seed)
    figures.update(more[0])
    intervals.update(more[1])
  summary["claims"] = claims_lib.claims(summary, main, sc, boots, seed)
  summary["headline"] = bar_lib.headline(config, summary, {"f1_raw": raw, "hallucination": halluc, "f1": sc},
                                 answerable, boots, seed)
  summary["bar"] = bar_lib.bar(summary["headline"], config["bar"])
  summary["targets"] = bar_lib.targets(summary["headline"], summary["bar"], config["bar"], summary["figures"],
                                       summary["intervals"])
  return summary


